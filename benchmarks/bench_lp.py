"""SPPM on each LP backend: solve time and the certified optimality gap.

SPPM runs a fixed number of Frank-Wolfe iterations (``SPPM_ITERATIONS``) so that the
gap measures what a fixed amount of work certifies on each backend.
"""

from __future__ import annotations

from ._common import PROCESSES, TIMERS, Case, MechanismOnDataset, seconds_per_solve, seconds_per_solve_fresh

#: backends that solve in this process (timed in CPU time, see bench_solve.Solve.timer)
LP_BACKENDS = ["mckp", "highs", "scipy", "cvxpy"]
#: OR-Tools backends solve in a worker process: wall time
WORKER_LP_BACKENDS = ["glop", "pdlp"]


class SPPMBackends(MechanismOnDataset):
    """Solve time per LP backend, and the gap it certifies."""

    params = (LP_BACKENDS, ["synthetic-m6", "census"])
    param_names = ["lp_backend", "dataset"]
    timeout = 600

    prepared = True
    timer = "process_time"

    def setup(self, cases: dict[str, Case], lp_backend: str, dataset: str) -> None:
        super().setup(cases, f"sppm-{lp_backend}", dataset)

    def track_solve_seconds(self, cases: dict[str, Case], lp_backend: str, dataset: str) -> float:
        """Seconds per SPPM solve at the benchmark budget, the fastest of several samples
        in each of several fresh processes (see ``_common.seconds_per_solve_fresh``); smaller
        is better."""
        if PROCESSES:
            return seconds_per_solve_fresh(f"sppm-{lp_backend}", dataset, self.timer)
        return seconds_per_solve(self.mech, self.case, TIMERS[self.timer])

    track_solve_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_gap_bits(self, cases: dict[str, Case], lp_backend: str, dataset: str) -> float:
        """Certified gap f(X) - f* in bits (from the result's ``gap_bits``) after the fixed
        iteration budget. Larger is worse: a weaker certificate of optimality. A result
        without a gap fails the benchmark, since the certificate is part of the contract."""
        result = self.mech.run(self.case.problem, self.case.delta)
        gap = result.stats.get("gap_bits")
        if gap is None:
            raise RuntimeError(f"sppm[lp_backend={lp_backend}] returned no gap_bits")
        return float(gap)

    track_gap_bits.unit = "bits"  # type: ignore[attr-defined]


class SPPMWorkerBackends(SPPMBackends):
    """The same for the OR-Tools backends, in wall time: their solver runs in a worker
    process whose CPU time this process does not see."""

    params = (WORKER_LP_BACKENDS, ["synthetic-m6", "census"])
    timer = "perf_counter"
