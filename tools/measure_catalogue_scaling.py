"""How large an alphabet each catalogue LP mechanism solves within a time limit.

    PRIVBENCH_DATA_DIR=../shared/data python tools/measure_catalogue_scaling.py \
        [--limit 60] [--only perfect_privacy ...] [--solver full|colgen]

``--solver full`` (default) measures the whole LP, the solver this table was first made
with; ``privbench benchmark catalogue`` measures column generation against its targets.

For each LP mechanism and each instance (synthetic m = 4..8, census top 100/300, random
Hamming problems of growing n) one solve runs in a fresh process, with ``max_n`` lifted;
``seconds`` is the mechanism's timed ``run`` as the runner times it (for the LP
mechanisms: LP build, backend solve, read-back; ``prepare`` and the data set's loading
untimed). The random series of a mechanism stops at its first solve beyond the limit.
SPPM (its defaults) is timed once per instance right before its LP solves, as the
interleaved baseline the ratio refers to. Budgets: Δ = 0.3 x the E[d] of the ``constant`` mapping for
``maxleak_optimal`` and ``map_optimal``; ε = 0.5 nats for ``lip_optimal`` (both notions).
Prints one markdown table row per solve.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

RUNS = (("maxleak_optimal", {}), ("map_optimal", {}), ("lip_optimal", {"notion": "lip"}),
        ("lip_optimal", {"notion": "ldp"}), ("perfect_privacy", {}))
FIXED = [("synthetic", {"m": m}) for m in (4, 5, 6, 7, 8)] + \
        [("census", {"top_k": 100}), ("census", {"top_k": 300})]
GROWING = [("random", {"n": n, "distortion": "hamming", "bits": 12, "seed": 1})
           for n in (200, 400, 600, 800, 1000, 1400, 2000)]


def budget(name: str, problem: Any) -> float:
    """The Δ (or ε) a scaling solve uses; see the module docstring."""
    import privbench as pb

    if name == "lip_optimal":
        return 0.5
    if name == "perfect_privacy":
        return 0.0
    return 0.3 * pb.get_mechanism("constant").solve(problem, 0.0).stats["expected_distortion"]


def one(mechanism: str, params: dict, dataset: str, dparams: dict, solver: str = "full") -> dict:
    """One timed solve in this process (the child's job)."""
    import privbench as pb

    problem = pb.load_dataset(dataset, **dparams)
    delta = budget(mechanism, problem)
    mech = pb.get_mechanism(mechanism, **params) if mechanism == "sppm" else \
        pb.get_mechanism(mechanism, max_n=10**6, solver=solver, **params)
    if mech.skip(problem)[0]:
        raise SystemExit(f"{mechanism} skips {problem.name}")
    mech.prepare(problem, pb.RunContext(seed=0))  # untimed, as in the runner
    started = time.perf_counter()
    result = mech.run(problem, delta)
    seconds = time.perf_counter() - started
    stats = result.stats
    return {"n": problem.n, "seconds": seconds, "delta": delta, "rows": stats.get("lp_rows"),
            "nnz": stats.get("lp_nnz")}


def child(mechanism: str, params: dict, dataset: str, dparams: dict, limit: float,
          solver: str = "full") -> dict:
    """Run :func:`one` in a fresh process; ``None`` seconds when it passes 2 x limit."""
    payload = json.dumps([mechanism, params, dataset, dparams, solver])
    try:
        out = subprocess.run([sys.executable, __file__, "--one", payload], capture_output=True,
                             text=True, timeout=2 * limit + 60, check=True)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "error": f"killed after {2 * limit + 60:.0f} s"}
    except subprocess.CalledProcessError as exc:
        return {"seconds": None, "error": exc.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def label(dataset: str, dparams: dict) -> str:
    if dataset == "synthetic":
        return f"synthetic m={dparams['m']}"
    if dataset == "census":
        return f"census top {dparams['top_k']}"
    return f"random hamming n={dparams['n']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per solve")
    parser.add_argument("--only", action="append", default=None, metavar="MECHANISM",
                        help="measure only this mechanism (repeatable)")
    parser.add_argument("--solver", default="full", choices=["full", "colgen"],
                        help="the LP mechanisms' solver (default full: the whole LP)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*json.loads(args.one))))
        return
    print("| instance | n | mechanism | seconds | sppm seconds | ratio | LP rows | LP nnz |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    alive = [k for k, (name, _) in enumerate(RUNS) if not args.only or name in args.only]
    for dataset, dparams in FIXED + GROWING:
        if not alive:
            break
        base = child("sppm", {}, dataset, dparams, args.limit)
        sppm = f"{base['seconds']:.2f}" if base.get("seconds") else "-"
        for k in list(alive):
            mechanism, params = RUNS[k]
            name = mechanism + (f" ({params['notion']})" if params else "")
            got = child(mechanism, params, dataset, dparams, args.limit, args.solver)
            secs = got.get("seconds")
            shown = f"{secs:.2f}" if secs is not None else got.get("error", "?")
            ratio = f"{secs / base['seconds']:.2g}" if secs and base.get("seconds") else "-"
            print(f"| {label(dataset, dparams)} | {got.get('n', '-')} | {name} | {shown} | "
                  f"{sppm} | {ratio} | {got.get('rows', '-')} | {got.get('nnz', '-')} |",
                  flush=True)
            if (dataset, dparams) in GROWING and (secs is None or secs > args.limit):
                alive.remove(k)  # the random series grows: stop at its first miss

if __name__ == "__main__":
    main()
