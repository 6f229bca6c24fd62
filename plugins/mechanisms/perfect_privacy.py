"""``perfect_privacy``: the mapping of least E[d] whose release B̂ is independent of A, an LP.

Perfect privacy, I(A; B̂) = 0, holds exactly when W(b̂|a) = Σ_j p(b_j|a) X[b̂, j] is the
same for every private value a; the least-distortion such mapping is the LP

    minimise E[d]   subject to   W(b̂|a) = W(b̂|a_0) for every a != a_0 and b̂,
                                 columns of X on the simplex

(Rassouli and Gündüz, "Optimal utility-privacy trade-off with total variation distance as
a privacy measure", IEEE TIFS 2020, and "On perfect privacy", IEEE JSAIT 2021, characterise
the perfectly private mappings as this polytope; with E[d] as the utility the optimum is
an LP). Δ is unused. It never costs more than ``constant`` (a constant output is feasible)
and costs the same when B determines A one-to-one; it costs less when the rows p(·|a)
leave a direction that moves mass between outputs without moving any W(·|a) apart. Stats: ``dependence_max``, max_{a, b̂}
|W(b̂|a) - p(b̂)| of the returned mapping (0 up to the solver's tolerance).

The rows of the last output are left out: Σ_b̂ W(b̂|a) = 1 for every a already follows
from the simplex rows, and handing HiGHS those dependent equalities costs its presolve a
dependency search that took 31 of 33 s on census top 300 (2 s without them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import privbench as pb

from ._lp_colgen import Problem, SparseLP, private_lp
from ._lp_mapping import LPMappingMechanism, MappingLP
from ._pp_flow import flow_seed_applies


class PerfectPrivacy(LPMappingMechanism):
    """Least E[d] with B̂ independent of A (LP; Δ unused).

    :param max_n: the largest alphabet n it solves (the LP has n² variables); a larger problem
        is skipped; default: the solver's own (``colgen`` 5,000, or 10,000 where the
        min-cost-flow seed applies: two private values and OR-Tools; ``full`` 1,000).
    """

    name = "perfect_privacy"
    citation = ('Rassouli and Gündüz, Optimal utility-privacy trade-off with total variation distance'
                ' as a privacy measure, IEEE TIFS 2020')
    description = "least E[d] with B̂ independent of A (Rassouli & Gündüz), an LP; Δ unused"
    delta_role = "unused"
    respects_budget = False

    def promises(self, delta: float) -> dict[str, float]:
        """B̂ independent of A: I(A; B̂) = 0 (checked by the runner)."""
        return {"mi_bits": 0.0}
    lp_kind = "the perfect-privacy LP"

    #: colgen: random Hamming n = 4,096 in 22 s; census with every profile (n = 9,261) not
    #: done in 23 minutes from the nearest outputs (docs/studies/catalogue-scaling.md)
    default_max_n = {"colgen": 5000, "full": 1000}
    #: colgen's default when the min-cost-flow first master applies (|A| = 2, OR-Tools
    #: installed): census with every profile (n = 9,261) is done in minutes
    seeded_max_n = 10000

    def __init__(self, lp_backend: str = "highs", max_n: int | None = None,
                 solver: str = "colgen", tol: float = 1e-6) -> None:
        self.lp_backend = lp_backend
        self.set_solver(solver, tol, max_n)
        self.max_n_given = max_n is not None

    def skip(self, problem: pb.PrivacyProblem) -> tuple[bool, str | None]:
        """The default ``max_n`` is ``seeded_max_n`` where the flow seed applies (two private
        values of positive probability and OR-Tools), else ``default_max_n``."""
        if self.max_n_given or self.solver != "colgen" or not flow_seed_applies(problem):
            return super().skip(problem)
        saved, self.max_n = self.max_n, max(self.max_n, self.seeded_max_n)
        try:
            return super().skip(problem)
        finally:
            self.max_n = saved

    def build(self, lp: MappingLP, delta: float) -> None:
        lp.minimise_distortion()
        cond = lp.cond
        if cond.shape[0] > 1:
            rows = lp.per_output(cond[1:] - cond[0])
            implied = np.arange(rows.shape[0]) % lp.n == lp.n - 1
            lp.add_rows(rows[~implied], 0.0, 0.0)

    def sparse_lp(self, data: Problem, delta: float) -> SparseLP:
        """W(b̂|a) = W(b̂|a_0) for every output (all of them: the master keeps its rows)."""
        return private_lp(data)

    def measures(self, problem: pb.PrivacyProblem, lp: MappingLP, X: np.ndarray
                 ) -> dict[str, Any]:
        W = lp.channel(X)
        return {"dependence_max": float(np.abs(W - lp.output_marginal(X)[None, :]).max())}


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [PerfectPrivacy]
