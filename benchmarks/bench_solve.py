"""Solve time and peak memory of the built-in mechanisms at the benchmark budget.

Δ = BUDGET_FRACTION x (distortion of the best constant mapping), see ``_common``; the
synthetic sizes m = 4, 6, 8 (n = 16, 64, 256) show how solve time scales with n.
"""

from __future__ import annotations

from typing import Any

from ._common import SOLVE_DATASETS, SOLVE_MECHANISMS, TimedOnDataset


class Solve(TimedOnDataset):
    """``track_solve_seconds`` / ``peakmem_solve``: ``mechanism.run(problem, Δ)`` after an
    untimed prepare and warm-up run; smaller is better."""

    params = (SOLVE_MECHANISMS, SOLVE_DATASETS)
    param_names = ["mechanism", "dataset"]

    prepared = True

    def track_solve_seconds(self, cases: dict[str, Any], mech: str,
                            dataset: str) -> dict[str, Any]:
        """CPU seconds per solve, one figure per round of fresh measuring processes
        (each the fastest of a few samples), handed to asv as samples: it reports their
        median and compares their spread (``_common.measure_rounds``, ``asv_samples``)."""
        return self.solve_seconds(cases, mech, dataset)

    track_solve_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def peakmem_solve(self, cases: dict[str, Any], mech: str, dataset: str) -> Any:
        """Peak resident memory of the process around one solve (bytes)."""
        return self.mech.run(self.case.problem, self.case.delta)
