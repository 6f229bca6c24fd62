"""SPPM on census with every profile, Hamming pricing with and without the level lists.

    PRIVBENCH_DATA_DIR=... python tools/measure_hamming_levels.py 1e-4/1e-3/0.01/0.1 [MODE]

Times sppm (``MODE``, default ``auto``; e.g. ``dual`` for the benchmark's dual peer, which
also runs with ``coarse_start=False``) at each budget (Δ / d_const, ``/``-separated) with
the pricer's level lists off (``hamming_pricing.LEVELS = -1``: the branch and bound alone,
as before the lists) and on (the default), alternating, ``REPS`` times (environment,
default 2), after one untimed solve that compiles the kernels. Prints the wall time, the
mode, the iterations, the certified gap and the pricing timer
(docs/studies/sppm-frontier.md, 'Hamming pricing over level lists').
"""

from __future__ import annotations

import os
import sys
import time

import privbench as pb
import privbench.plugins.mechanisms._sppm.hamming_pricing as hp
import privbench.plugins.mechanisms._sppm.solve as solve_mod
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays
from privbench.protocol.feasibility import row_budget_costs

DEFAULT_LEVELS = hp.LEVELS


def main() -> None:
    problem = _own_arrays(pb.load_dataset("census", top_k="all"))
    d_const = float(row_budget_costs(problem).min())
    backend = pb.get_lp_backend("mckp")
    budgets = [float(f) for f in sys.argv[1].split("/")]
    mode = sys.argv[2] if len(sys.argv) > 2 else "auto"
    settings = SPPMSettings(mode=mode, coarse_start=mode == "auto")
    solve_mod.solve_sppm(problem, 0.01 * d_const, backend, settings.replace(iterations=5,
                                                                            warmup=5))
    for _ in range(int(os.environ.get("REPS", 2))):
        for f in budgets:
            for levels in (-1, DEFAULT_LEVELS):
                hp.LEVELS = levels
                t = time.perf_counter()
                s = solve_mod.solve_sppm(problem, f * d_const, backend, settings).stats
                wall = time.perf_counter() - t
                print(f"F={f} levels={levels}: {wall:.2f} s, mode {s['mode']}, "
                      f"{s.get('iterations')} iterations, converged {s['converged']}, gap "
                      f"{s['gap_bits']:.2e} bits, I {s['objective_bits']:.6f}, pricing "
                      f"{s.get('time_pricing_s', 0.0):.2f} s", flush=True)


if __name__ == "__main__":
    main()
