"""Privacy and distortion tracking: leakage at a fixed budget, distortion for a target.

Both are oriented for asv, which reads smaller as better: more leakage at the same
budget, or more distortion needed for the same leakage, is a larger number.
"""

from __future__ import annotations

from ._common import TARGET_FRACTION, MechanismOnDataset, distortion_for_target, leakage_bits


class LeakageAtBudget(MechanismOnDataset):
    """I(A; B̂) in bits at the fixed benchmark budget Δ."""

    params = (["identity", "expmec", "optimal", "sppm-highs"],
              ["synthetic-m6", "synthetic-m8", "census", "movielens"])
    param_names = ["mechanism", "dataset"]
    timeout = 600

    def track_mi_bits(self, cases: dict, mech: str, dataset: str) -> float:
        """Leakage I(A; B̂) in bits of the mapping found at Δ. Larger is worse: the
        mechanism leaks more about the private attribute for the same distortion."""
        return leakage_bits(self.mech, self.case.problem, self.case.delta)

    track_mi_bits.unit = "bits"  # type: ignore[attr-defined]


class DistortionForTarget(MechanismOnDataset):
    """Distortion needed to bring the leakage down to TARGET_FRACTION x I(A;B)."""

    params = (["expmec", "optimal", "sppm-highs"], ["synthetic-m6", "census", "movielens"])
    param_names = ["mechanism", "dataset"]
    timeout = 900

    def track_distortion_for_target(self, cases: dict, mech: str,
                                    dataset: str) -> float:
        """E[d(B, B̂)] of the mapping at the smallest budget (bisection on Δ) whose leakage
        is at most TARGET_FRACTION x I(A;B), in the data set's distortion units. Larger
        is worse: the mechanism gives up more utility for the same privacy."""
        target = TARGET_FRACTION * self.case.problem.prior_mi_bits
        return distortion_for_target(self.mech, self.case, target)

    track_distortion_for_target.unit = "distortion"  # type: ignore[attr-defined]
