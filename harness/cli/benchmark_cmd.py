"""``privbench benchmark sppm``: SPPM on the paper's synthetic data, per LP backend.

For each m (n = 2^m symbols) and Δ = 2^(m-8) it runs SPPM with every requested LP
backend and prints wall time, Frank-Wolfe iterations, the certified gap, I(A; B̂),
the peak memory rise and where the time went (pricing / LP / line search), then the
time ratio of each backend to the first one. Runs are sequential in this process, so
times are comparable; the OR-Tools backends solve in their own worker process.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..api import get_mechanism, load_dataset
from ..metrics import mutual_information
from ..resources import ResourceMeter


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("benchmark", help="time SPPM on the synthetic data set per LP backend",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("target", choices=["sppm"], help="what to benchmark")
    p.add_argument("--m", type=int, action="append", default=None,
                   help="alphabet exponent, n = 2^m (repeatable; default 8 10 12)")
    p.add_argument("--lp-backend", action="append", default=None,
                   help="LP backend (repeatable; default highs scipy)")
    p.add_argument("--tol", type=float, default=1e-3, help="certified gap target in bits")
    p.add_argument("--iterations", type=int, default=1000, help="Frank-Wolfe iteration cap")
    p.add_argument("--variant", default="pairwise", help="classic or pairwise (default)")
    p.add_argument("--neighbours", type=int, default=128, help="pricing neighbour lists size")
    p.add_argument("--json", action="store_true", help="one JSON object per run")
    p.set_defaults(func=run)


def warm_up(backend: str) -> None:
    """Import the backend's solver (and start any worker) outside the timed runs."""
    get_mechanism("sppm", lp_backend=backend, iterations=2).solve(
        load_dataset("synthetic", m=3), 0.5)


def bench_one(m: int, backend: str, args: argparse.Namespace) -> dict[str, Any]:
    problem = load_dataset("synthetic", m=m)
    delta = 2.0 ** (m - 8)
    mech = get_mechanism("sppm", lp_backend=backend, tol=args.tol, iterations=args.iterations,
                         variant=args.variant, neighbours=args.neighbours)
    with ResourceMeter() as meter:
        res = mech.solve(problem, delta)
    s = res.stats
    return {
        "m": m, "n": problem.n, "delta": delta, "lp_backend": backend,
        "time_s": meter.runtime_s, "iterations": s["iterations"], "gap_bits": s["gap_bits"],
        "mi_bits": mutual_information(problem, res.mapping), "peak_mem_mb": meter.peak_mem_mb,
        "columns": s["columns"], "lp_solves": s["lp_solves"],
        "time_pricing_s": s["time_pricing_s"], "time_lp_s": s["time_lp_s"],
        "time_linesearch_s": s["time_linesearch_s"], "converged": s["converged"],
    }


def run(args: argparse.Namespace) -> int:
    ms = args.m or [8, 10, 12]
    backends = args.lp_backend or ["highs", "scipy"]
    rows: list[dict[str, Any]] = []
    head = (f"{'m':>3} {'n':>6} {'delta':>6} {'backend':>8} {'time_s':>8} {'iters':>6} "
            f"{'gap_bits':>9} {'mi_bits':>8} {'peak_MB':>8} {'|V|':>7} {'pricing':>8} "
            f"{'lp':>7} {'lsearch':>7}")
    for backend in backends:
        warm_up(backend)
    if not args.json:
        print(head)
    for m in ms:
        for backend in backends:
            r = bench_one(m, backend, args)
            rows.append(r)
            if args.json:
                print(json.dumps(r), flush=True)
            else:
                print(f"{r['m']:>3} {r['n']:>6} {r['delta']:>6g} {backend:>8} {r['time_s']:>8.2f} "
                      f"{r['iterations']:>6} {r['gap_bits']:>9.2e} {r['mi_bits']:>8.5f} "
                      f"{r['peak_mem_mb']:>8.1f} {r['columns']:>7} {r['time_pricing_s']:>8.2f} "
                      f"{r['time_lp_s']:>7.2f} {r['time_linesearch_s']:>7.2f}", flush=True)
    if len(backends) > 1:
        ref = backends[0]
        for m in ms:
            base = next(r for r in rows if r["m"] == m and r["lp_backend"] == ref)
            for r in rows:
                if r["m"] == m and r["lp_backend"] != ref:
                    line = {"m": m, "ratio": f"{r['lp_backend']}/{ref}",
                            "time_ratio": r["time_s"] / base["time_s"],
                            "lp_time_ratio": r["time_lp_s"] / max(base["time_lp_s"], 1e-12)}
                    if args.json:
                        print(json.dumps(line))
                    else:
                        print(f"m={m}: {line['ratio']} total time x{line['time_ratio']:.2f}, "
                              f"LP time x{line['lp_time_ratio']:.2f}", file=sys.stdout)
    return 0
