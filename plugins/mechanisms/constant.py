"""``constant``: release one fixed output b̂* whatever b is (the perfect-privacy baseline).

b̂* = argmin_i Σ_j p(b_j) d(b̂_i, b_j), so the mapping X[b̂*, :] = 1 has I(A; B̂) = 0 at the
least expected distortion a constant output can have. Any constant output is perfectly
private; the least-cost one bounds from above what the optimal perfectly private mapping
(``perfect_privacy``, Rassouli and Gündüz, "Optimal utility-privacy trade-off with total
variation distance as a privacy measure", IEEE TIFS 2020) pays, and the two coincide when
B determines A one-to-one. With ``identity`` it is the simple baseline pair (no leakage at
most distortion, no distortion at full leakage). Δ is unused; ties go to the lowest index.
The row sums of D·p are computed in blocks (squared l2 in O(n k)), so any n runs.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench.protocol.feasibility import row_budget_costs


class Constant(pb.MappingMechanism):
    """X[b̂*, j] = 1 for every j, b̂* the output of least expected distortion."""

    name = "constant"
    citation = ('Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 '
                '(baseline); Hay et al., DPBench, SIGMOD 2016 (baselines in every comparison)')
    baseline = True  # every sweep adds it (baselines = true)
    description = "one fixed output of least expected distortion for every b (I = 0; Δ unused)"
    delta_role = "unused"
    respects_budget = False

    def promises(self, delta: float) -> dict[str, float]:
        """A constant output is independent of A: I(A; B̂) = 0 (checked by the runner)."""
        return {"mi_bits": 0.0}

    def __init__(self) -> None:
        pass

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        costs = row_budget_costs(problem)
        best = int(costs.argmin())
        exact = float(row_budget_costs(problem, rows=np.array([best]))[0])
        n = problem.n
        X = sp.csc_array((np.ones(n), (np.full(n, best), np.arange(n))), shape=(n, n))
        return self.result(X, output=best, expected_distortion=exact)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Constant]
