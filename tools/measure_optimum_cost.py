"""What the default ``optimum`` metric costs per run (README, "How far from optimal").

    PRIVBENCH_DATA_DIR=../shared/data python tools/measure_optimum_cost.py

For each instance: one mapping (expmec, or 30 SPPM steps where expmec's dense mapping
is too large), then the metric's own certificate from an empty cache, timed.
"""

from __future__ import annotations

import time

import privbench as pb
from privbench.plugins.metrics import _optimum_cache as optimum_cache
from privbench.plugins.metrics.optimum import OptimumGap

CASES = (
    ("movielens", {}, 0.3, "expmec"),
    ("census", {"top_k": 2000}, 0.3, "expmec"),
    ("random", {"n": 4000, "distortion": "hamming", "bits": 12}, 0.5, "expmec"),
    ("synthetic", {"m": 12}, 8.0, "expmec"),
    ("census", {"top_k": "all"}, 0.3, "sppm"),
)


def main() -> None:
    for name, params, delta, mechanism in CASES:
        problem = pb.load_dataset(name, **params)
        options = {"iterations": 30} if mechanism == "sppm" else {}
        result = pb.get_mechanism(mechanism, **options).solve(problem, delta=delta)
        optimum_cache._MEMORY.clear()
        started = time.perf_counter()
        out = OptimumGap(max_n=None).compute(problem, result, delta=delta)
        seconds = time.perf_counter() - started
        print(f"{problem.name:45s} n = {problem.n:5d}  {seconds:6.2f} s  band "
              f"{out['optimum_upper_bits'] - out['optimum_lower_bits']:.2g} bits  "
              f"{mechanism} excess >= {out['excess_mi_bits_min']:.3g} bits", flush=True)


if __name__ == "__main__":
    main()
