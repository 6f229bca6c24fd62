"""Exact metrics of mapping mechanisms: leakage, distortion, supports, local-DP ε.

The prior leakage I(A; B) needs only the problem; the rest need a mapping. The runner
measures runtime and peak memory itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench import metrics as M
from privbench.protocol.metric import (
    DISTORTION_OUTPUT,
    LEAKAGE_OUTPUT,
    NNZ_OUTPUT,
    PRIOR_LEAKAGE_OUTPUT,
    SUPPORT_MAX_OUTPUT,
)


class PriorLeakage(pb.Metric):
    name = "prior_leakage"
    description = "I(A; B) in bits, the leakage without any mechanism"
    needs = frozenset({"problem"})
    outputs = (PRIOR_LEAKAGE_OUTPUT,)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {"prior_mi_bits": problem.prior_mi_bits}


class Leakage(pb.Metric):
    name = "leakage"
    description = "exact I(A; B̂) in bits"
    needs = frozenset({"mapping"})
    outputs = (LEAKAGE_OUTPUT,)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {"mi_bits": M.mutual_information(problem, result.mapping)}


class ExpectedDistortion(pb.Metric):
    name = "distortion"
    citation = ('Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 '
                '(E[d(B, B̂)] <= Δ in problem (1))')
    description = "exact E[d(B, B̂)]"
    needs = frozenset({"mapping"})
    outputs = (DISTORTION_OUTPUT,)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {"distortion": M.expected_distortion(problem, result.mapping)}


class Support(pb.Metric):
    name = "support"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 (sparse mappings)'
    description = "support sizes of p(b̂ | b): nnz, max, mean, histogram"
    needs = frozenset({"mapping"})
    outputs = (NNZ_OUTPUT,
               pb.Output("support_hist", "none", "neutral", "{support size: columns with it}"),
               SUPPORT_MAX_OUTPUT,
               pb.Output("support_mean", "count", "neutral", "mean support of a column"))

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        sizes = M.support_sizes(result.mapping)
        counts = np.bincount(sizes)
        return {
            "nnz": int(sizes.sum()),
            "support_max": int(sizes.max()) if sizes.size else 0,
            "support_mean": float(sizes.mean()) if sizes.size else 0.0,
            "support_hist": {int(k): int(c) for k, c in enumerate(counts) if c},
        }


class LocalDP(pb.Metric):
    name = "local_dp"
    description = ("local-DP ε of the mapping with respect to the public B: max over outputs of "
                   "ln(max_b X / min_b X), in nats (ε with respect to A: privacy_notions)")
    needs = frozenset({"mapping"})
    outputs = (pb.Output("ldp_epsilon_public", "nats", "lower",
                         "local-DP ε with respect to the public data B: max over b̂, b, b' of "
                         "ln X[b̂|b] / X[b̂|b'] (inf when some output is impossible for some b)",
                         "Kasiviswanathan et al., SIAM J. Comput. 2011; Duchi, Jordan, Wainwright, "
                         "FOCS 2013", label="LDP ε (public B)"),)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {"ldp_epsilon_public": ldp_epsilon_public(result.mapping)}


def ldp_epsilon_public(mapping: Any) -> float:
    """max over outputs b̂ that occur of ln(max_b X[b̂, b] / min_b X[b̂, b]), sparse.

    An output some input reaches and another cannot gives inf; outputs no input reaches
    are ignored.
    """
    X = sp.csr_array(mapping)
    X.eliminate_zeros()
    n = X.shape[1]
    counts = np.diff(X.indptr)
    if ((counts > 0) & (counts < n)).any():
        return math.inf
    starts = X.indptr[:-1][counts > 0]
    if starts.size == 0:
        return 0.0
    top, low = np.maximum.reduceat(X.data, starts), np.minimum.reduceat(X.data, starts)
    return float(np.max(np.log(top / low)))


class LPCertificate(pb.Metric):
    """The LP mechanisms' certificate (``lp_objective``, ``lp_bound``, ``lp_gap`` under
    ``metrics``: docs/mechanisms.md), declared so reports read it.

    The catalogue's LP mechanisms (``maxleak_optimal``, ``map_optimal``, ``lip_optimal``,
    ``perfect_privacy``) compute these values during the solve; this metric copies them from
    the result's stats for any run that has them, so they carry a unit and a direction.
    """

    name = "lp_certificate"
    citation = 'Boyd and Vandenberghe, Convex Optimization, 2004 (LP duality gap)'
    description = "the LP value, a proven lower bound and their relative gap (LP mechanisms)"
    needs = frozenset({"mapping"})
    outputs = (pb.Output("lp_objective", "none", "neutral",
                         "the LP's objective at the returned point, in the LP's own unit "
                         "(Σ max_a W for maxleak_optimal, probability for map_optimal, "
                         "E[d] for lip_optimal and perfect_privacy)"),
               pb.Output("lp_bound", "none", "neutral",
                         "a proven lower bound on the LP's optimum (column generation's "
                         "Lagrangian bound), same unit as lp_objective"),
               pb.Output("lp_gap", "none", "neutral",
                         "(lp_objective - lp_bound) / max(|lp_objective|, |lp_bound|, 1e-9)"))

    def applies(self, problem, result) -> bool:
        """Only for runs whose mechanism reports an LP objective."""
        return super().applies(problem, result) and "lp_objective" in (result.stats or {})

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {out.name: float(result.stats[out.name]) for out in self.outputs
                if out.name in result.stats}


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [PriorLeakage, Leakage, ExpectedDistortion, Support, LocalDP, LPCertificate]
