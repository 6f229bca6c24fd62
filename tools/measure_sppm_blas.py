"""SPPM with and without the one-BLAS-thread limit, interleaved in one process.

Each argument is one solve: ``<problem><b|n>``, where the problem is a synthetic
exponent m (``12n``: synthetic m = 12, Δ = 2^(m-8)) or ``census:<top_k>`` (census,
Δ = 0.5, dual mode; needs ``PRIVBENCH_DATA_DIR``), and ``b`` runs the code before the
change (``one_blas_thread`` replaced by a null context: BLAS keeps its threads), ``n``
the code as it is. Prints wall and CPU seconds, the load average, iterations, the gap
and the solver's own timers for each solve (``docs/studies/sppm-scaling.md``).

    python tools/measure_sppm_blas.py 12b 12n 12b 12n 14n 14b
    PRIVBENCH_DATA_DIR=/work/shared/data python tools/measure_sppm_blas.py census:alln census:allb
"""

from __future__ import annotations

import contextlib
import sys
import time

import privbench as pb
import privbench.plugins.mechanisms._sppm.solve as solve_mod
from privbench._plumbing.blas import one_blas_thread
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays


def problem_of(spec: str) -> tuple[pb.PrivacyProblem, float, dict]:
    """The problem, Δ and sppm options of one argument's problem part."""
    if spec.startswith("census:"):
        top_k = spec.split(":", 1)[1]
        problem = pb.load_dataset("census", top_k=top_k if top_k == "all" else int(top_k))
        return problem, 0.5, SPPMSettings(mode="dual")
    m = int(spec)
    return pb.load_dataset("synthetic", m=m), 2.0 ** (m - 8), SPPMSettings()


def main() -> None:
    backend = pb.get_lp_backend("mckp")
    warmed: set[str] = set()
    for arg in sys.argv[1:]:
        spec, which = arg[:-1], arg[-1]
        problem, delta, options = problem_of(spec)
        if options.mode not in warmed:  # compile the kernels outside the timed solves
            small = pb.load_dataset("synthetic", m=6)
            solve_mod.solve_sppm(_own_arrays(small), 0.25, backend, options.replace(iterations=20))
            warmed.add(options.mode)
        solve_mod.one_blas_thread = one_blas_thread if which == "n" else contextlib.nullcontext
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        cpu, wall = time.process_time(), time.perf_counter()
        s = solve_mod.solve_sppm(_own_arrays(problem), delta, backend, options).stats
        print(f"{spec} {'after' if which == 'n' else 'before'} n={problem.n} "
              f"wall={time.perf_counter() - wall:.2f} cpu={time.process_time() - cpu:.2f} "
              f"load={load} iters={s['iterations']} gap={s['gap_bits']:.3e} "
              f"pricing={s['time_pricing_s']:.2f} lp={s['time_lp_s']:.2f} "
              f"ls={s['time_linesearch_s']:.2f} polish={s['time_polish_s']:.2f}", flush=True)


if __name__ == "__main__":
    main()
