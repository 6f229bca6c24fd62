"""Helpers shared by the benchmarks: the problem grid, budgets, mechanisms.

Only the public API is used (``pb.load_dataset``, ``pb.get_mechanism``, the mechanism
lifecycle), so the suite runs against whatever plugins are installed: a mechanism, LP backend or data
set that is unavailable makes its benchmarks skip (``NotImplementedError`` in setup).

Real data (census, movielens) is read from ``$PRIVBENCH_DATA_DIR`` only, never
downloaded; without it those cases skip.
"""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

import privbench as pb
from privbench._plumbing.clock import cpu_seconds

#: SPPM is run with a fixed iteration budget, so a tracked gap measures what a fixed
#: amount of work certifies (and CI stays fast)
SPPM_ITERATIONS = 30
#: the benchmark budget Δ, as a fraction of the distortion of the best constant mapping
#: (at which zero leakage is reachable); makes one Δ meaningful on every data set
BUDGET_FRACTION = 0.25
#: a solve-time sample repeats the solve until it spans this many CPU seconds ...
SAMPLE_SECONDS = 0.2
#: ... and at least this many solves: one solve of SPPM on ``glop`` varies by +-20 % within
#: a process (its worker's CPU time too), so a sample of one solve carries that noise
MIN_SOLVES_PER_SAMPLE = 3
#: samples per measuring process; the fastest is its figure (see ``seconds_per_solve``)
SAMPLES = 3
#: rounds of fresh measuring processes for the solve-time benchmarks; each round gives
#: every case one figure, and asv gets them all as samples (see ``measure_rounds``).
#: ``PRIVBENCH_BENCH_PROCESSES`` overrides it; 0 measures in the benchmark's own process
def _rounds_from_env(name: str = "PRIVBENCH_BENCH_PROCESSES", default: int = 12) -> int:
    text = os.environ.get(name, str(default))
    if not text.strip().isdigit():
        raise ValueError(f"{name} must be a whole number >= 0 (rounds of measuring "
                         f"processes; 0 = measure in the benchmark's process); got {text!r}")
    return int(text)


PROCESSES = _rounds_from_env()
#: a fresh interpreter's measurement may take this long (seconds) before it counts as failed
PROCESS_TIMEOUT = 600
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


def seconds_per_solve(mech: pb.Mechanism, case: Case) -> float:
    """CPU seconds per ``mech.run`` (prepared and warmed up in setup): the fastest of
    SAMPLES samples, each repeating the solve until it spans SAMPLE_SECONDS and at least
    MIN_SOLVES_PER_SAMPLE solves; GC off, as timeit. CPU time of the process (all threads)
    and of the helper processes that solved for it (``privbench._plumbing.clock``: the
    OR-Tools worker), not wall time, which on this shared VM drifts by +-30% between two
    runs of identical code. The minimum of several samples is what ``timeit``
    recommends: noise only adds time.
    """
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(SAMPLES):
            count, start = 0, cpu_seconds()
            while True:
                mech.run(case.problem, case.delta)
                count += 1
                elapsed = cpu_seconds() - start
                if elapsed >= SAMPLE_SECONDS and count >= MIN_SOLVES_PER_SAMPLE:
                    break
            best = min(best, elapsed / count)
    finally:
        if enabled:
            gc.enable()
    return best


def asv_samples(figures: list[float]) -> dict[str, Any]:
    """``figures`` (seconds per solve, one per measuring round) as the result of a
    ``track_*`` benchmark that asv reads like a ``time_*`` one.

    asv parses a benchmark result ``{"samples": [...], "number": n}`` as timing samples
    (``asv.runner._run_benchmark_single_param``): it reports their median and keeps their
    spread (``asv.results``: interquartile range, 99 % confidence interval of the median),
    and ``asv continuous``/``compare`` call a change significant only when the medians
    differ by more than ``--factor`` *and* the two sets of samples differ (Mann-Whitney U,
    p < 0.002). A single number has no spread, so asv would compare it by the factor alone.
    """
    return {"samples": [float(x) for x in figures], "number": 1}


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


#: runs in a fresh interpreter: imports this package from its folder (not from sys.path,
#: which need not hold it), measures the cases given as JSON and prints their figures as
#: JSON (per case: seconds, null when it skips, {"error": ...} when it fails)
_CHILD = """
import importlib.util, json, os, sys
init = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "benchmarks", init, submodule_search_locations=[os.path.dirname(init)])
package = importlib.util.module_from_spec(spec)
sys.modules["benchmarks"] = package
spec.loader.exec_module(package)
from benchmarks._common import measure_many
print(json.dumps(measure_many([tuple(key) for key in json.loads(sys.argv[2])])))
"""

#: the solve-time grid (bench_solve.Solve, bench_lp.SPPMBackends)
SOLVE_MECHANISMS = ["expmec", "optimal", "sppm-highs", "sppm-dual"]
SOLVE_DATASETS = ["synthetic-m4", "synthetic-m6", "synthetic-m8", "census", "movielens"]
#: SPPM's LP backends (glop and pdlp solve in an OR-Tools worker process, whose CPU time
#: the worker reports with every reply: see ``privbench._plumbing.clock``)
LP_BACKENDS = ["mckp", "highs", "scipy", "cvxpy", "glop", "pdlp"]
LP_DATASETS = ["synthetic-m6", "census"]
#: the cache key under which ``TimedOnDataset.setup_cache`` stores the measured seconds
SOLVE_SECONDS = "__solve_seconds__"

Key = tuple[str, str]


def timed_grid() -> list[Key]:
    """Every (mechanism label, dataset label) the solve-time benchmarks report."""
    grid = [(m, d) for m in SOLVE_MECHANISMS for d in SOLVE_DATASETS]
    grid += [(f"sppm-{b}", d) for b in LP_BACKENDS for d in LP_DATASETS]
    return list(dict.fromkeys(grid))


def measure_here(mech_label: str, dataset_label: str,
                 cases: dict[str, Case] | None = None) -> float:
    """Load (or take from ``cases``), create, prepare and warm up as ``setup`` does, then
    ``seconds_per_solve``."""
    cases = {} if cases is None else cases
    if dataset_label not in cases:
        cases[dataset_label] = load_case(dataset_label)
    case = require(cases, dataset_label)
    mech = mechanism(mech_label)
    skip_unsuitable(mech, case)
    prepare(mech, case)
    return seconds_per_solve(mech, case)


def measure_many(keys: list[Key]) -> list[float | None | dict[str, str]]:
    """``measure_here`` for each case in turn (a fresh process's work in one round)."""
    cases: dict[str, Case] = {}
    figures: list[float | None | dict[str, str]] = []
    for mech_label, dataset_label in keys:
        try:
            figures.append(measure_here(mech_label, dataset_label, cases))
        except NotImplementedError:
            figures.append(None)
        except Exception as exc:  # noqa: BLE001 - reported for this case, the rest go on
            figures.append({"error": f"{type(exc).__name__}: {exc}"})
        gc.collect()
    return figures


def _failure(key: Key, text: str) -> str:
    return f"measuring {key[0]} on {key[1]} in a fresh process failed:\n{text[-2000:]}"


def measure_fresh(keys: list[Key]) -> dict[Key, float | str | None]:
    """``measure_many`` in one fresh interpreter: per case its seconds, None when it
    skips, a string saying why it failed. A crash of the interpreter fails every case."""
    init = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
    env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    try:
        out = subprocess.run([sys.executable, "-c", _CHILD, init, json.dumps(keys)],
                             capture_output=True, text=True, check=False, env=env,
                             timeout=PROCESS_TIMEOUT + 60 * len(keys))
    except subprocess.TimeoutExpired as exc:
        return {key: _failure(key, f"timed out after {exc.timeout:g} s") for key in keys}
    try:
        figures = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        figures = None
    if out.returncode != 0 or not isinstance(figures, list) or len(figures) != len(keys):
        return {key: _failure(key, out.stderr) for key in keys}
    return {key: (None if value is None else _failure(key, value["error"])
                  if isinstance(value, dict) else float(value))
            for key, value in zip(keys, figures, strict=True)}


def measure_rounds(grid: list[Key], rounds: int) -> dict[Key, list[float] | str | None]:
    """Every case of ``grid``, ``rounds`` times over: each round is one fresh process that
    measures every case once, in a shuffled order; per case its figures, one per round
    (None: it skips; a string: why it failed).

    Why: on this shared 2-core VM the figure of one measurement moves far more than the
    samples inside it (sppm on scipy, synthetic m = 6: 216 to 346 ms over eight fresh
    processes), in windows of slowness (seen: about 30 s, all 40 % slower). ``asv
    continuous --quick`` runs each benchmark once per commit, so a window that falls on
    one commit's run would read as a change of its code. Rounds spread each case's
    measurements over the whole measurement, and asv gets every round's figure as a
    sample (``asv_samples``), so a difference must stand out of that spread to count;
    one process per round (not per case) pays the interpreter start and imports once,
    so more rounds fit in the same time.
    """
    figures: dict[Key, list[float]] = {key: [] for key in grid}
    errors: dict[Key, str] = {}
    skipped: set[Key] = set()
    order = random.Random(0)
    for _ in range(rounds):
        todo = [key for key in grid if key not in errors and key not in skipped]
        if not todo:
            break
        order.shuffle(todo)  # no case always runs right after the same one
        for key, value in measure_fresh(todo).items():
            if value is None:
                skipped.add(key)
            elif isinstance(value, str):
                errors[key] = value
            else:
                figures[key].append(value)
    return {key: (errors[key] if key in errors else None if key in skipped
                  else figures[key]) for key in grid}


class TimedOnDataset(MechanismOnDataset):
    """A ``MechanismOnDataset`` whose ``setup_cache`` also measures the solve-time grid in
    rounds of fresh processes (``measure_rounds``), once per environment; the
    ``track_solve_seconds`` benchmarks hand asv their case's figures as samples.

    Why not asv's own ``time_*``: ``asv continuous --quick`` takes one sample of one call
    in one process per commit, and on this shared 2-core VM that moved by 10-25 % between
    processes of identical code, which the default factor 1.1 reports as a change.
    """

    timeout = 3600  # setup_cache measures the whole grid

    def setup_cache(self) -> dict[str, Any]:
        cache: dict[str, Any] = load_cases(list(DATASETS))
        if PROCESSES:
            cache[SOLVE_SECONDS] = measure_rounds(timed_grid(), PROCESSES)
        return cache

    def solve_seconds(self, cache: dict[str, Any], mech_label: str,
                      dataset: str) -> dict[str, Any]:
        """This case's seconds per solve as asv samples: one per round of fresh processes,
        or SAMPLES in-process ones when PROCESSES is 0."""
        if not PROCESSES:
            return asv_samples([seconds_per_solve(self.mech, self.case)
                                for _ in range(SAMPLES)])
        value = cache[SOLVE_SECONDS].get((mech_label, dataset))
        if value is None:
            raise RuntimeError(f"{mech_label} on {dataset} was not measured (it skipped in "
                               "the measuring process, but not here)")
        if isinstance(value, str):
            raise RuntimeError(value)
        return asv_samples(value)
