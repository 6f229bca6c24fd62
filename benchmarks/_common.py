"""Helpers shared by the benchmarks: the problem grid, budgets, mechanisms.

Only the public API is used (``pb.load_dataset``, ``pb.get_mechanism``, the mechanism
lifecycle), so the suite runs against whatever plugins are installed: a mechanism, LP backend or data
set that is unavailable makes its benchmarks skip (``NotImplementedError`` in setup).

Real data (census, movielens) is read from ``$PRIVBENCH_DATA_DIR`` only, never
downloaded; without it those cases skip.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import privbench as pb

#: SPPM is run with a fixed iteration budget, so a tracked gap measures what a fixed
#: amount of work certifies (and CI stays fast)
SPPM_ITERATIONS = 30
#: the benchmark budget Δ, as a fraction of the distortion of the best constant mapping
#: (at which zero leakage is reachable); makes one Δ meaningful on every data set
BUDGET_FRACTION = 0.25
#: a solve-time sample repeats the solve until it spans this many seconds of its timer
SAMPLE_SECONDS = 0.2
#: samples per solve-time benchmark; the fastest is reported (see ``seconds_per_solve``)
SAMPLES = 5
#: leakage target for the "distortion needed" benchmarks, as a fraction of I(A;B)
TARGET_FRACTION = 0.5
#: bisection steps on Δ for the "distortion needed" benchmarks
BISECTION_STEPS = 7
DATA_ENV = "PRIVBENCH_DATA_DIR"
#: largest alphabet a mechanism is benchmarked on: ``optimal`` (a generic convex solver,
#: the reference) takes tens of seconds at n = 256 and would dominate the suite
MAX_N = {"optimal": 64}

#: label -> (mechanism, params); labels are asv parameter values
MECHANISMS: dict[str, tuple[str, dict[str, Any]]] = {
    "identity": ("identity", {}),
    "expmec": ("expmec", {}),
    "optimal": ("optimal", {}),
    # one pricing thread: idle worker threads spin, and their CPU time would be noise
    **{f"sppm-{lp}": ("sppm", {"lp_backend": lp, "iterations": SPPM_ITERATIONS, "threads": 1})
       for lp in ("mckp", "highs", "scipy", "glop", "pdlp", "cvxpy")},
    # SPPM's dual mode to a certified 1e-3 bits (the census/MovieLens path)
    "sppm-dual": ("sppm", {"mode": "dual", "tol": 1e-3, "threads": 1}),
}
#: label -> (dataset, params, needs real data)
DATASETS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "synthetic-m4": ("synthetic", {"m": 4}, False),
    "synthetic-m6": ("synthetic", {"m": 6}, False),
    "synthetic-m8": ("synthetic", {"m": 8}, False),
    "census": ("census", {"top_k": 300}, True),
    "movielens": ("movielens", {"variant": "100k", "top_genres": 6}, True),
}


@dataclass
class Case:
    """A loaded problem and its benchmark budget; ``reason`` says why it is missing."""

    problem: pb.PrivacyProblem | None
    delta: float = 0.0
    delta_zero: float = 0.0
    reason: str = ""


def zero_leakage_distortion(problem: pb.PrivacyProblem) -> float:
    """E[d] of the best constant mapping (every b to one b̂): I(A;B̂) = 0 is reachable there."""
    D = problem.distortion.to_dense(force=True)
    return float(np.min(D @ problem.p_b))


def load_case(label: str) -> Case:
    """Load one data set of the grid; never raises (a missing one becomes a reason)."""
    name, params, real = DATASETS[label]
    if real:
        folder = os.environ.get(DATA_ENV)
        if not folder or not os.path.isdir(folder):
            return Case(None, reason=f"{label}: set {DATA_ENV} to a folder with the data")
        params = {**params, "data_dir": folder, "download": False}
    try:
        problem = pb.load_dataset(name, **params)
    except Exception as exc:  # noqa: BLE001 - missing plugin or files: skip, do not fail
        return Case(None, reason=f"{label}: {type(exc).__name__}: {exc}")
    delta_zero = zero_leakage_distortion(problem)
    return Case(problem, BUDGET_FRACTION * delta_zero, delta_zero)


def load_cases(labels: list[str]) -> dict[str, Case]:
    return {label: load_case(label) for label in labels}


def require(cases: dict[str, Case], label: str) -> Case:
    case = cases[label]
    if case.problem is None:
        raise NotImplementedError(case.reason)
    return case


def mechanism(label: str) -> pb.Mechanism:
    """Create a mechanism of the grid, or skip when it (or its LP backend) is unavailable."""
    name, params = MECHANISMS[label]
    try:
        if "lp_backend" in params:
            pb.get_lp_backend(params["lp_backend"])
        return pb.get_mechanism(name, **params)
    except pb.PluginError as exc:
        raise NotImplementedError(str(exc)) from None


def skip_unsuitable(mech: pb.Mechanism, case: Case) -> None:
    limit = MAX_N.get(mech.name)
    if limit is not None and case.problem.n > limit:
        raise NotImplementedError(f"{mech.name} is benchmarked up to n = {limit} "
                                  f"(this problem: n = {case.problem.n})")
    skip, reason = mech.skip(case.problem)
    if skip:
        raise NotImplementedError(reason or "mechanism skips this problem")


def prepare(mech: pb.Mechanism, case: Case) -> None:
    """The runner's untimed step, in ``setup``: prepare (indexes, pricers, JIT warm-up),
    so ``time_*``/``peakmem_*`` measure ``mech.run`` alone, as ``privbench run`` does.

    Then one untimed ``run`` (benchopt's warm-up): first-touch allocations and lazy
    imports inside third-party solvers land there, not in the single sample that
    ``asv continuous --quick`` takes.
    """
    mech.prepare(case.problem, pb.RunContext(seed=0))
    mech.run(case.problem, case.delta)


def leakage_bits(mech: pb.Mechanism, problem: pb.PrivacyProblem, delta: float) -> float:
    result = mech.solve(problem, delta)
    return float(pb.metrics.mutual_information(problem, result.mapping))


def distortion_for_target(mech: pb.Mechanism, case: Case, target_bits: float,
                          steps: int = BISECTION_STEPS) -> float:
    """E[d] of the mapping at the smallest budget (bisection on Δ) with I(A;B̂) <= target.

    The upper end Δ = ``delta_zero`` reaches zero leakage for an optimal mechanism; a
    mechanism that misses the target even there reports that distortion times two, so
    the number stays finite and a worse mechanism still reads larger.
    """
    problem = case.problem
    lo, hi = 0.0, case.delta_zero
    best = mech.solve(problem, hi)
    if pb.metrics.mutual_information(problem, best.mapping) > target_bits:
        return 2.0 * case.delta_zero
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        result = mech.solve(problem, mid)
        if pb.metrics.mutual_information(problem, result.mapping) <= target_bits:
            hi, best = mid, result
        else:
            lo = mid
    return float(pb.metrics.expected_distortion(problem, best.mapping))


def seconds_per_solve(mech: pb.Mechanism, case: Case, timer: Callable[[], float]) -> float:
    """Seconds per ``mech.run`` (prepared and warmed up in setup): the fastest of SAMPLES
    samples, each repeating the solve until it spans SAMPLE_SECONDS; GC off, as timeit.

    Why not asv's own ``time_*``: ``asv continuous --quick`` takes one sample of one call,
    and on this shared 2-core VM one sample of identical code moved by 10-25% between
    processes (transient stalls), which the default 1.1 factor reports as a change. The
    minimum of several samples is what ``timeit`` recommends: noise only adds time.
    """
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(SAMPLES):
            count, start = 0, timer()
            while True:
                mech.run(case.problem, case.delta)
                count += 1
                elapsed = timer() - start
                if elapsed >= SAMPLE_SECONDS:
                    break
            best = min(best, elapsed / count)
    finally:
        if enabled:
            gc.enable()
    return best


class MechanismOnDataset:
    """Base of the benchmark classes whose parameters are (mechanism label, dataset label).

    ``setup_cache`` loads every data set of the grid once (asv shares one cache between
    the classes that inherit it, so it cannot depend on a class's own parameters);
    ``setup`` creates the mechanism and skips unsuitable pairs; with ``prepared`` it
    also runs the untimed ``prepare``.
    """

    prepared = False

    def setup_cache(self) -> dict[str, Case]:
        return load_cases(list(DATASETS))

    def setup(self, cases: dict[str, Case], mech: str, dataset: str) -> None:
        self.case = require(cases, dataset)
        self.mech = mechanism(mech)
        skip_unsuitable(self.mech, self.case)
        if self.prepared:
            prepare(self.mech, self.case)
