"""SPPM on each LP backend: solve time and the certified optimality gap.

SPPM runs a fixed number of Frank-Wolfe iterations (``SPPM_ITERATIONS``) so that the
gap measures what a fixed amount of work certifies on each backend.
"""

from __future__ import annotations

from typing import Any

from ._common import LP_BACKENDS, LP_DATASETS, TimedOnDataset


class SPPMBackends(TimedOnDataset):
    """Solve time per LP backend, and the gap it certifies."""

    params = (LP_BACKENDS, LP_DATASETS)
    param_names = ["lp_backend", "dataset"]

    prepared = True

    def setup(self, cases: dict[str, Any], lp_backend: str, dataset: str) -> None:
        super().setup(cases, f"sppm-{lp_backend}", dataset)

    def track_solve_seconds(self, cases: dict[str, Any], lp_backend: str,
                            dataset: str) -> dict[str, Any]:
        """CPU seconds per SPPM solve at the benchmark budget (the OR-Tools worker's
        included), one figure per round of fresh measuring processes, handed to asv as
        samples (``_common.measure_rounds``, ``asv_samples``); smaller is better."""
        return self.solve_seconds(cases, f"sppm-{lp_backend}", dataset)

    track_solve_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_gap_bits(self, cases: dict[str, Any], lp_backend: str, dataset: str) -> float:
        """Certified gap f(X) - f* in bits (from the result's ``gap_bits``) after the fixed
        iteration budget. Larger is worse: a weaker certificate of optimality. A result
        without a gap fails the benchmark, since the certificate is part of the contract."""
        result = self.mech.run(self.case.problem, self.case.delta)
        gap = result.stats.get("gap_bits")
        if gap is None:
            raise RuntimeError(f"sppm[lp_backend={lp_backend}] returned no gap_bits")
        return float(gap)

    track_gap_bits.unit = "bits"  # type: ignore[attr-defined]

