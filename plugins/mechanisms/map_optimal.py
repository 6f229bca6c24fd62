"""``map_optimal``: the mapping that minimises the MAP adversary's success with E[d] <= Δ.

The Bayes vulnerability of the released B̂ is V(A|B̂) = Σ_b̂ max_a p(a, b̂), the probability
that the maximum-a-posteriori guess of A from B̂ is right (Alvim, Chatzikokolakis, McIver,
Morgan, Palamidessi, Smith, "The Science of Quantitative Information Flow", Springer 2020,
ch. 5; its log ratio to max_a p(a) is the min-entropy leakage). With
p(a, b̂) = Σ_j p(a, b_j) X[b̂, j] the least-vulnerability mapping is the LP

    minimise Σ_b̂ t_b̂   subject to   t_b̂ >= p(a, b̂) for every a and b̂,
                                     columns of X on the simplex,  E[d] <= Δ,

solved by column generation with a proven bound (``solver="colgen"``, default, max_n
10,000) or whole through an LP backend plugin (``solver="full"``, ``lp_backend``, n² + n
variables, max_n 400). Ties between equally vulnerable mappings are not broken.
Stats: ``map_vulnerability`` (= the MAP adversary's accuracy) and
``min_entropy_leakage_bits`` = log2(V / max_a p(a)) of the returned mapping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._lp_colgen import Family, Problem, SparseLP
from ._lp_mapping import LPMappingMechanism, MappingLP
from .maxleak_optimal import max_rows


class MapOptimal(LPMappingMechanism):
    """Least Bayes vulnerability Σ_b̂ max_a p(a, b̂) subject to E[d] <= Δ (LP)."""

    name = "map_optimal"
    citation = 'Alvim et al., The Science of Quantitative Information Flow, Springer 2020 (Bayes vulnerability)'
    description = "least MAP-adversary success Σ max_a p(a, b̂) with E[d] <= Δ (QIF), an LP"
    lp_kind = "the Bayes-vulnerability LP"

    def __init__(self, lp_backend: str = "highs", max_n: int | None = None,
                 solver: str = "colgen", tol: float = 1e-6) -> None:
        self.lp_backend = lp_backend
        self.set_solver(solver, tol, max_n)

    def build(self, lp: MappingLP, delta: float) -> None:
        max_rows(lp, lp.joint)
        lp.add_budget(delta)

    def sparse_lp(self, data: Problem, delta: float) -> SparseLP:
        """t_i >= p(a, b̂_i); V >= max_a p(a) (the blind guess) bounds it below."""
        return SparseLP([Family(data.joint, -np.inf, 0.0, epigraph=True)], "epigraph", delta,
                        floor=float(data.joint.sum(axis=1).max()), private_floor=True)

    def measures(self, problem: pb.PrivacyProblem, lp: MappingLP, X: np.ndarray
                 ) -> dict[str, Any]:
        joint_out = np.asarray(sp.csc_array(X)[:, lp.live] @ lp.joint.T)  # (n, |A|)
        return {"map_vulnerability": float(joint_out.max(axis=1).sum()),
                "min_entropy_leakage_bits": pb.metrics.min_entropy_leakage(problem, X)}


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [MapOptimal]
