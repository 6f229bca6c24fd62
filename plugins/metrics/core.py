"""Exact metrics of mapping mechanisms: leakage, distortion, supports, local-DP ε.

The prior leakage I(A; B) needs only the problem; the rest need a mapping. The runner
measures runtime and peak memory itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench import metrics as M


class PriorLeakage(pb.Metric):
    name = "prior_leakage"
    description = "I(A; B) in bits, the leakage without any mechanism"
    needs = frozenset({"problem"})
    outputs = (pb.Output("prior_mi_bits", "bits", "lower", "I(A; B), the leakage with no mechanism",
                         "Shannon 1948"),)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {"prior_mi_bits": problem.prior_mi_bits}


class Leakage(pb.Metric):
    name = "leakage"
    description = "exact I(A; B̂) in bits"
    needs = frozenset({"mapping"})
    outputs = (pb.Output("mi_bits", "bits", "lower", "mutual information I(A; B̂)",
                         "Salamatian et al., SPPM, GlobalSIP 2013"),)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {"mi_bits": M.mutual_information(problem, result.mapping)}


class ExpectedDistortion(pb.Metric):
    name = "distortion"
    description = "exact E[d(B, B̂)]"
    needs = frozenset({"mapping"})
    outputs = (pb.Output("distortion", "distortion", "neutral", "expected distortion E[d(B, B̂)]"),)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        return {"distortion": M.expected_distortion(problem, result.mapping)}


class Support(pb.Metric):
    name = "support"
    description = "support sizes of p(b̂ | b): nnz, max, mean, histogram"
    needs = frozenset({"mapping"})
    outputs = (pb.Output("nnz", "count", "neutral", "non-zeros of the mapping"),
               pb.Output("support_max", "count", "neutral", "largest support of a column"),
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
    description = "local-DP ε = max over outputs of log(max_b X / min_b X), in nats"
    needs = frozenset({"mapping"})

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        X = sp.csr_array(result.mapping)
        n = problem.n
        if X.nnz < n * n:  # some output impossible for some input: ε = ∞ (stored as null)
            return {"ldp_epsilon": None}
        dense = X.toarray()
        eps = float(np.max(np.log(dense.max(axis=1) / dense.min(axis=1))))
        return {"ldp_epsilon": eps}


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [PriorLeakage, Leakage, ExpectedDistortion, Support, LocalDP]
