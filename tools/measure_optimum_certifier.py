"""The ``optimum`` metric's solve against the shootout's certified solvers, instance by instance.

    PRIVBENCH_DATA_DIR=../shared/data python tools/measure_optimum_certifier.py [ROUNDS]

For each instance and budget Δ: the seconds the metric takes to certify I*(Δ) to 1e-3 bits
when it must solve (an empty cache and a mapping far from optimal, so no shortcut applies;
:meth:`OptimumGap.certify`), and the seconds each certified solver of the solver shootout
(README, specs/solvers.toml) takes to its own certified 1e-3 bits (``solve``: prepare,
warmed once beforehand, plus run; ``inf``: it stopped short of 1e-3 bits; a dash: not run,
the dense solvers only up to ``DENSE_MAX_N``). Interleaved: each round times the metric and every
solver in turn; the medians over ROUNDS (default 3) are printed, with metric / fastest.
"""

from __future__ import annotations

import statistics
import sys
import time

import privbench as pb
from privbench.plugins.metrics import _optimum_cache as optimum_cache
from privbench.plugins.metrics.optimum import OptimumGap, choose_certifier
from privbench.protocol.plugin import format_label

#: (data set, parameters, budgets); the shootout's instances that run in seconds
INSTANCES = (
    ("synthetic", {"m": 6}, (0.1, 0.3)),
    ("synthetic", {"m": 8}, (0.1, 0.3)),
    ("synthetic", {"m": 10}, (0.1, 0.3)),
    ("synthetic", {"m": 12}, (0.1, 0.3)),
    ("politics_tv_surrogate", {"seed": 0, "ratings": "binary", "shows": "top5"}, (0.1, 0.3)),
    ("census", {"top_k": 100}, (0.1, 0.3)),
    ("census", {"top_k": 300}, (0.1, 0.3)),
    ("movielens", {"variant": "100k", "top_genres": 6}, (0.1, 0.3)),
    ("random", {"n": 1000, "n_private": 2, "distortion": "hamming", "seed": 1}, (0.1, 0.3)),
)
#: the shootout's certified solvers (dense ones capped as in specs/solvers.toml)
SOLVERS = (("sppm", {}), ("sppm", {"mode": "dual"}), ("mirror_descent", {"max_seconds": 60}),
           ("smoothed_dual", {"max_seconds": 60}))
#: the dense solvers run only up to this n: above it the shootout measured them 3x to 100x
#: slower than SPPM (README, "Solver shootout"), and each takes up to a minute per solve
DENSE_MAX_N = 500
TOL = 1e-3


def _metric_seconds(problem: pb.PrivacyProblem, delta: float) -> float:
    optimum_cache._MEMORY.clear()
    started = time.perf_counter()
    lower, upper, _source, _ = OptimumGap(max_n=None).certify(problem, delta, problem.prior_mi_bits)
    seconds = time.perf_counter() - started
    return seconds if upper - lower <= TOL else float("inf")


def _solver_seconds(problem: pb.PrivacyProblem, delta: float, name: str, params: dict) -> float:
    mech = pb.get_mechanism(name, **params)
    if mech.skip(problem)[0] or (name != "sppm" and problem.n > DENSE_MAX_N):
        return float("nan")
    started = time.perf_counter()
    res = mech.solve(problem, delta=delta)
    seconds = time.perf_counter() - started
    return seconds if res.stats["gap_bits"] <= TOL else float("inf")


def main(rounds: int = 3) -> None:
    labels = [format_label(n, p) for n, p in SOLVERS]
    print("| instance | n | Δ | metric (certifier) | " + " | ".join(labels) + " | metric / fastest |")
    print("|---" * (5 + len(labels)) + "|")
    for name, params, deltas in INSTANCES:
        try:
            problem = pb.load_dataset(name, **params)
        except pb.PrivbenchError as exc:
            print(f"| {name} | - | - | skipped: {exc} |")
            continue
        for delta in deltas:
            for solver, options in SOLVERS:  # compile and warm every solver once, untimed
                _solver_seconds(problem, delta, solver, options)
            _metric_seconds(problem, delta)
            times: list[list[float]] = [[] for _ in range(1 + len(SOLVERS))]
            for _ in range(rounds):
                times[0].append(_metric_seconds(problem, delta))
                for k, (solver, options) in enumerate(SOLVERS, start=1):
                    times[k].append(_solver_seconds(problem, delta, solver, options))
            med = [statistics.median(t) for t in times]
            fastest = min(t for t in med[1:] if t == t)
            certifier = format_label(*choose_certifier(problem, TOL))
            cells = " | ".join("–" if t != t else f"{t:.3g}" for t in med[1:])
            print(f"| {problem.name} | {problem.n} | {delta:g} | {med[0]:.3g} ({certifier}) | "
                  f"{cells} | {med[0] / fastest:.2f} |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
