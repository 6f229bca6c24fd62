"""Solve time and peak memory of the built-in mechanisms at the benchmark budget.

Δ = BUDGET_FRACTION x (distortion of the best constant mapping), see ``_common``; the
synthetic sizes m = 4, 6, 8 (n = 16, 64, 256) show how solve time scales with n.
"""

from __future__ import annotations

import time
from typing import Any

from ._common import SOLVES_PER_SAMPLE, Case, MechanismOnDataset


class Solve(MechanismOnDataset):
    """``time_solve`` / ``peakmem_solve``: one ``mechanism.run(problem, Δ)`` after an
    untimed prepare; smaller is better."""

    params = (["expmec", "optimal", "sppm-highs", "sppm-dual"],
              ["synthetic-m4", "synthetic-m6", "synthetic-m8", "census", "movielens"])
    param_names = ["mechanism", "dataset"]
    timeout = 600

    prepared = True
    #: CPU time of the process (all its threads), not wall time: on a shared 2-core VM wall
    #: time drifts by +-30% between two runs of identical code, CPU time far less. (The LP
    #: benchmarks keep wall time: OR-Tools solves in a worker process.)
    timer = staticmethod(time.process_time)

    def time_solve(self, cases: dict[str, Case], mech: str, dataset: str) -> None:
        """Seconds for SOLVES_PER_SAMPLE solves (``run``; prepared in setup): one sample
        spans several solves, so a transient stall on a shared machine (``asv continuous
        --quick`` takes one sample) moves it far less than it moves a 0.1 s solve."""
        for _ in range(SOLVES_PER_SAMPLE):
            self.mech.run(self.case.problem, self.case.delta)

    def peakmem_solve(self, cases: dict[str, Case], mech: str, dataset: str) -> Any:
        """Peak resident memory of the process around one solve (bytes)."""
        return self.mech.run(self.case.problem, self.case.delta)
