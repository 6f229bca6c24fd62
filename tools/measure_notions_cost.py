"""What the default metrics other than ``optimum`` cost per run, against the solve time
(docs/privacy-notions.md, "Cost"; issue 27 item 4: at most 25 % of the solve or 1 s).

    PRIVBENCH_DATA_DIR=../shared/data python tools/measure_notions_cost.py

For each instance: prepare (untimed) and run (timed, like the runner's ``runtime_s``) one
mechanism, then every default metric that applies, ``ROUNDS`` times interleaved (one call
of each metric per round), reporting the median per metric.
"""

from __future__ import annotations

import statistics
import time

import privbench as pb
from privbench.protocol.context import RunContext

CASES = (
    ("synthetic", {"m": 6}, 16.0, "sppm", {"mode": "optimal", "tol": 1e-4, "iterations": 1000}),
    ("synthetic", {"m": 6}, 16.0, "expmec", {}),
    ("census", {"top_k": 300}, 0.3, "sppm", {"mode": "optimal", "tol": 1e-4}),
    ("census", {"top_k": 300}, 0.3, "expmec", {}),
    ("synthetic", {"m": 12}, 16.0, "sppm", {"tol": 1e-3, "iterations": 100000}),
    ("synthetic", {"m": 12}, 16.0, "expmec", {}),
)
ROUNDS = 5
#: the metric issue 27 measures apart (its cost is a certified solve of its own)
EXCLUDED = ("optimum", "optimum_large")


def time_metrics(problem: pb.PrivacyProblem, result: pb.MechanismResult,
                 delta: float) -> dict[str, float]:
    """Median seconds per default metric that applies (optimum excluded)."""
    metrics = {name: cls() for name, cls in pb.get_host().metrics().items()
               if cls.default and name not in EXCLUDED}
    metrics = {name: m for name, m in metrics.items() if m.applies(problem, result)}
    times: dict[str, list[float]] = {name: [] for name in metrics}
    for _ in range(ROUNDS):
        for name, metric in metrics.items():
            t0 = time.perf_counter()
            metric.compute(problem, result, delta=delta, seed=0)
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(v) for name, v in times.items()}


def main() -> None:
    for name, params, delta, mechanism, options in CASES:
        problem = pb.load_dataset(name, **params)
        mech = pb.get_mechanism(mechanism, **options)
        mech.prepare(problem, RunContext(seed=0))
        t0 = time.perf_counter()
        result = mech.run(problem, delta)
        solve = time.perf_counter() - t0
        med = time_metrics(problem, result, delta)
        total = sum(med.values())
        print(f"{problem.name} {mechanism} Δ={delta:g} n={problem.n} nnz={result.mapping.nnz}: "
              f"solve {solve:.3f} s; privacy_notions {med['privacy_notions'] * 1e3:.2f} ms "
              f"({100 * med['privacy_notions'] / solve:.2f} % of the solve); all default metrics but "
              f"optimum {total:.3f} s ({100 * total / solve:.1f} %), bound {max(0.25 * solve, 1.0):.2f} s",
              flush=True)
        print("    " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in sorted(med.items(), key=lambda x: -x[1])),
              flush=True)


if __name__ == "__main__":
    main()
