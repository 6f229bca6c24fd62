"""SPPM on census with every profile, the clustered start's coarse level: time per variant.

    PRIVBENCH_DATA_DIR=... python tools/measure_sppm_coarse_level.py 0.3/0.4/0.5/0.6 \
        "cwu=100,share=0.5" ""

The first argument is the budgets (Δ / d_const, ``/``-separated); each further argument a
variant, ``cwu=N`` (the coarse level's Frank-Wolfe warm-up steps, default
``profile_clusters.COARSE_WARMUP``) and ``share=F`` (``profile_clusters.TOL_SHARE``),
comma-separated; ``""`` is the code as it is. Runs every (budget, variant) ``REPS`` times
(environment, default 3), alternating, after one untimed solve that compiles the kernels;
prints sppm's wall time, the certified gap, the coarse level's seconds and K, and any
fallback (docs/studies/sppm-frontier.md, 'The clustered start's coarse level').
"""

from __future__ import annotations

import os
import sys
import time

import privbench as pb
import privbench.plugins.mechanisms._sppm.profile_clusters as pc
import privbench.plugins.mechanisms._sppm.solve as solve_mod
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays
from privbench.protocol.feasibility import row_budget_costs

DEFAULTS = (pc.TOL_SHARE, pc.COARSE_WARMUP)


def set_variant(spec: str) -> None:
    """Set the coarse level's share and warm-up for ``spec`` (``""``: the defaults)."""
    kw = dict(item.split("=") for item in spec.split(",") if item)
    pc.TOL_SHARE = float(kw.get("share", DEFAULTS[0]))
    pc.COARSE_WARMUP = int(kw.get("cwu", DEFAULTS[1]))


def main() -> None:
    problem = _own_arrays(pb.load_dataset("census", top_k="all"))
    d_const = float(row_budget_costs(problem).min())
    backend = pb.get_lp_backend("mckp")
    budgets = [float(f) for f in sys.argv[1].split("/")]
    variants = sys.argv[2:] or [""]
    solve_mod.solve_sppm(problem, 0.6 * d_const, backend, SPPMSettings())  # compile
    for _ in range(int(os.environ.get("REPS", 3))):
        for f in budgets:
            for spec in variants:
                set_variant(spec)
                t = time.perf_counter()
                s = solve_mod.solve_sppm(problem, f * d_const, backend, SPPMSettings()).stats
                wall = time.perf_counter() - t
                level = (s.get("coarse_levels") or [{}])[0]
                print(f"F={f} [{spec}] {wall:.2f}s gap {s['gap_bits']:.2e} "
                      f"coarse {level.get('seconds', 0.0):.2f}s K {level.get('n')} "
                      f"fallback {s.get('auto_fallback')}", flush=True)


if __name__ == "__main__":
    main()
