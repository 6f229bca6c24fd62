"""``maxleak_optimal``: the mapping of least maximal leakage with E[d] <= Δ, an LP.

Maximal leakage (Issa, Wagner, Kamath, "An operational approach to information leakage",
IEEE T-IT 2020) of a channel W(b̂|a) = Σ_j p(b_j|a) X[b̂, j] is
L(A→B̂) = log Σ_b̂ max_{a: p(a)>0} W(b̂|a); the optimal privacy-utility mapping under it
(Saeidian, Cervia, Oechtering, Skoglund, "Optimal maximal leakage-distortion tradeoff",
ITW 2021) solves the LP

    minimise Σ_b̂ t_b̂   subject to   t_b̂ >= W(b̂|a) for every a and b̂,
                                     columns of X on the simplex,  E[d] <= Δ,

and L = log2 of the optimum, in bits. The LP has n² + n variables and |A|·n + n + 1 rows
(``privbench.plugins.mechanisms._lp_mapping``). ``solver="colgen"`` (default) solves it by
column generation with a proven bound (``_lp_colgen``, max_n 10,000); ``solver="full"``
builds it whole for an LP backend plugin (``lp_backend``: highs, scipy or cvxpy; max_n 400).
Among equally leaky mappings the solver returns any one (the LP does not break ties).
Stats: ``maxleak_bits`` of the returned mapping, ``lp_objective`` = Σ t.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._lp_colgen import Family, Problem, SparseLP
from ._lp_mapping import LPMappingMechanism, MappingLP


def max_rows(lp: MappingLP, coef: np.ndarray) -> None:
    """Variables t_i (objective Σ t) with rows Σ_j coef[a, j] X[i, j] - t_i <= 0 for all a, i."""
    first = lp.add_vars(lp.n, cost=1.0)
    k = coef.shape[0]
    minus_t = -sp.kron(np.ones((k, 1)), sp.identity(lp.n, format="csr"), format="csr")
    lp.add_rows(lp.with_vars(lp.per_output(coef), first, minus_t), -np.inf, 0.0)


class MaxLeakOptimal(LPMappingMechanism):
    """Least maximal leakage L(A→B̂) subject to E[d] <= Δ (LP, n <= ``max_n``)."""

    name = "maxleak_optimal"
    citation = 'Issa, Wagner, Kamath, An operational approach to information leakage, IEEE T-IT 2020'
    description = "least maximal leakage with E[d] <= Δ (Issa et al. 2020), an LP"
    lp_kind = "the maximal-leakage LP"

    def __init__(self, lp_backend: str = "highs", max_n: int | None = None,
                 solver: str = "colgen", tol: float = 1e-6) -> None:
        self.lp_backend = lp_backend
        self.set_solver(solver, tol, max_n)

    def build(self, lp: MappingLP, delta: float) -> None:
        max_rows(lp, lp.cond)
        lp.add_budget(delta)

    def sparse_lp(self, data: Problem, delta: float) -> SparseLP:
        """t_i >= W(i|a) = Σ_j p(b_j|a) X[i, j]; Σ_i max_a W(i|a) >= 1 bounds it below."""
        return SparseLP([Family(data.cond, -np.inf, 0.0, epigraph=True)], "epigraph", delta,
                        floor=1.0, private_floor=True)

    def measures(self, problem: pb.PrivacyProblem, lp: MappingLP, X: np.ndarray
                 ) -> dict[str, Any]:
        return {"maxleak_bits": pb.metrics.maximal_leakage(problem, X)}


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [MaxLeakOptimal]


@pb.hookimpl
def privbench_register_commands(cli) -> None:
    """``privbench benchmark catalogue`` (imported only when the command line is built)."""
    from privbench.plugins.mechanisms._catalogue_benchmark import add_parser

    add_parser(cli)
