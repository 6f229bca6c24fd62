"""What the OR-Tools worker pool saves a timed solve, measured in one process.

SPPM on ``glop`` (synthetic m = 6, 30 iterations, the asv budget) after an untimed
prepare and warm-up; solves alternate between the pool (the worker is reused) and a
new worker per ``start`` (``MAX_IDLE_WORKERS = 0``: what every solve paid before the
pool). Prints the median wall and CPU time (this process plus the worker, from
``privbench._plumbing.clock``) of each, and their ratio.

    python tools/measure_ortools_pool.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import privbench as pb
from privbench._plumbing.clock import cpu_seconds
from privbench.plugins.lp import ortools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    problem = pb.load_dataset("synthetic", m=6)
    delta = 0.25 * float(np.min(problem.distortion.to_dense() @ problem.p_b))
    mech = pb.get_mechanism("sppm", lp_backend="glop", iterations=30, threads=1)
    mech.prepare(problem, pb.RunContext(seed=0))
    mech.run(problem, delta)
    samples: dict[str, list[tuple[float, float]]] = {"pool": [], "new worker": []}
    for _ in range(args.rounds):
        for mode, idle in (("pool", 2), ("new worker", 0)):
            ortools.MAX_IDLE_WORKERS = idle
            if idle:
                mech.run(problem, delta)  # leaves a worker in the pool
            wall, cpu = time.perf_counter(), cpu_seconds()
            mech.run(problem, delta)
            samples[mode].append((time.perf_counter() - wall, cpu_seconds() - cpu))
    medians = {mode: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for mode, v in samples.items()}
    for mode, (wall, cpu) in medians.items():
        print(f"{mode:>10}: wall {wall * 1e3:7.1f} ms, CPU {cpu * 1e3:7.1f} ms (median of "
              f"{args.rounds})")
    print(f"new worker / pool: {medians['new worker'][0] / medians['pool'][0]:.2f}x wall")


if __name__ == "__main__":
    main()
