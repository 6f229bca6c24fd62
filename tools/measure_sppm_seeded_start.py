"""Issue 38, tried: the dual mode on census with every profile from a start that mixes every
pure output, instead of the identity.

At the optimum no used output is pure (a pure output leaks log 1 / p(a) per unit of mass,
and a little mass of the other value lowers that at an infinite rate), while the identity's
posterior is pure at the ~7,900 profiles that only one income reaches. The start here sends,
for each pure output, ``--eps`` of the mass of its ``--k`` nearest inputs (Hamming; the
heaviest first among equals) that carry the other value into it (scaled down so that every
input keeps half its mass and the start spends at most half of Δ), then runs sppm's dual
mode (``coarse_start=False``) with ``--warmup`` Frank-Wolfe steps. ``--nu`` replaces the
ν the dual rounds start from (e.g. the optimum's, to rule ν out); ``--eps 0`` is the peer's
own start (the identity). Each ``--variant eps,k,warmup`` is one solve, run in turn
``--repeat`` times; the dual rounds' log is printed with ``--verbose``:

    PRIVBENCH_DATA_DIR=/work/shared/data python tools/measure_sppm_seeded_start.py \\
        --relative-delta 0.01 --variant 0,2,100 --variant 1e-3,2,50 --repeat 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

import privbench as pb
import privbench.plugins.mechanisms._sppm.modes as modes
from privbench.protocol.context import RunContext
from privbench.protocol.feasibility import constant_distortion

_DUAL_ROUNDS = modes.dual_rounds


def seeded_start(problem: pb.PrivacyProblem, delta: float, eps: float, k: int) -> sp.csc_array:
    """The identity with ``eps`` of each pure output's k nearest other-value inputs sent in."""
    n = problem.n
    P = np.asarray(problem.joint, dtype=float)
    p = P.sum(axis=0)
    post = P[1] / p
    pts = np.asarray(problem.distortion.points)
    rows, cols = [], []
    if eps > 0:
        for i in np.flatnonzero((post == 0) | (post == 1)):
            other = np.flatnonzero(P[0 if post[i] == 1 else 1] > 0)
            d = (pts[other] != pts[i]).sum(axis=1)
            heavy = P[0 if post[i] == 1 else 1][other]
            for j in other[np.lexsort((-heavy, d))[:k]]:
                rows.append(i)
                cols.append(j)
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    vals = np.full(rows.size, eps)
    if rows.size:
        moved = np.bincount(cols, weights=vals, minlength=n)
        cost = float((vals * p[cols] * (pts[rows] != pts[cols]).sum(axis=1)).sum())
        vals *= min(1.0, 0.5 / moved.max(), 0.5 * delta / max(cost, 1e-300))
    X = sp.csc_array((vals, (rows, cols)), shape=(n, n))
    return sp.csc_array(X + sp.diags(1.0 - np.asarray(X.sum(axis=0)).ravel()))


def solve(problem: pb.PrivacyProblem, delta: float, eps: float, k: int, warmup: int,
          nu: float | None, verbose: bool) -> tuple[float, dict]:
    """One dual-mode solve from the seeded start; (seconds, stats)."""
    t0 = [0.0]

    def rounds(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        args = list(args)
        if nu is not None and args[2].size > 1000:  # not prepare's small warm-up solve
            args[5] = nu
        if verbose and args[2].size > 1000:
            print(f"    rounds from {args[2].size} pairs at {time.perf_counter() - t0[0]:.2f} s, "
                  f"nu {args[5]:.4g}", flush=True)
        return _DUAL_ROUNDS(*args, **kwargs)

    modes.dual_rounds = rounds
    try:
        mech = pb.get_mechanism("sppm", mode="dual", coarse_start=False, warmup=warmup,
                                x0=seeded_start(problem, delta, eps, k))
        mech.prepare(problem, RunContext(seed=0))
        t0[0] = time.perf_counter()
        result = mech.run(problem, delta)
        seconds = time.perf_counter() - t0[0]
    finally:
        modes.dual_rounds = _DUAL_ROUNDS
    if verbose:
        for entry in result.stats.get("polish") or []:
            print("     ", {key: entry[key] for key in ("pairs", "gap_bits", "evaluations",
                                                       "time_s") if key in entry}, flush=True)
    return seconds, result.stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--relative-delta", type=float, required=True)
    ap.add_argument("--variant", action="append", required=True, metavar="EPS,K,WARMUP")
    ap.add_argument("--nu", type=float, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    problem = pb.load_dataset("census", top_k="all")
    delta = args.relative_delta * constant_distortion(problem)
    for _ in range(args.repeat):
        for variant in args.variant:
            eps, k, warmup = variant.split(",")
            seconds, stats = solve(problem, delta, float(eps), int(k), int(warmup), args.nu,
                                   args.verbose)
            print(f"F {args.relative_delta} eps {eps} k {k} warmup {warmup}: {seconds:.2f} s, "
                  f"converged {stats.get('converged')}, gap {stats.get('gap_bits'):.2e} bits, "
                  f"columns {stats.get('columns')}", flush=True)


if __name__ == "__main__":
    main()
