"""Issue 38's round seven: the tail decoders repaired in closed form before exact pricing.

Each argument is one solve: ``<F>:<variant>[:key=value...]`` (Δ = F d_const, census
``top_k=all``; needs ``PRIVBENCH_DATA_DIR``), ``variant`` one of

* ``P``: the peer as the code is (``mode=dual coarse_start=False``);
* ``R``: the tail decoders (outputs with mass below ``T``, default 1e-12) repaired before
  every exact pricing of the dual rounds;
* ``D``: as ``R``, and an extra exact pricing before each repair to print the bound before it.

Other ``key=value`` pairs are integer sppm settings (``warmup=30``) or, in capitals,
dual_mode's constants (``COARSE_EXIT=0.3``). Prints the wall time,
the certificate, where the rounds' time went, and each round's (pairs, s, gap).
"""

from __future__ import annotations

import math
import sys
import time
from collections import defaultdict

import numba
import numpy as np

import privbench as pb
import privbench.plugins.mechanisms._sppm.dual_mode as dm
import privbench.plugins.mechanisms._sppm.solve as solve_mod
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays
from privbench.protocol.feasibility import row_budget_costs

#: an input counts as violated when it beats its minimum by more than this (nats per unit
#: of input mass, as the rounds' own test)
VIOLATION = 1e-12
#: the repaired logit steps this far past the boundary (logit units), into the allowed side
#: (but not past the peak, which may be the box's end)
MARGIN = 1e-9
#: bisection steps for a boundary (the bracket is at most 60 logits wide: 2^-48 of it)
BISECT = 48


@numba.njit(inline="always")
def _g(s0, theta, lp0, lp1):  # pragma: no cover - compiled
    """g(θ) = s0 log(σ(θ) / p0) + (1 - s0) log(σ(-θ) / p1), as the rounds compute it."""
    top = max(theta, 0.0)
    lse = top + math.log(math.exp(theta - top) + math.exp(-top))
    return s0 * (theta - lse - lp0) + (1.0 - s0) * (-lse - lp1)


@numba.njit
def _boundary(s0, thr, t, peak, lp0, lp1):  # pragma: no cover - compiled
    """The allowed end nearest t of {θ : g(θ) >= thr}, between t (not allowed) and the peak
    (g's maximiser, clipped to the box); NaN when even the peak is not allowed."""
    if _g(s0, peak, lp0, lp1) < thr:
        return np.nan
    bad, good = t, peak
    for _ in range(BISECT):
        mid = 0.5 * (bad + good)
        if _g(s0, mid, lp0, lp1) >= thr:
            good = mid
        else:
            bad = mid
    return good


@numba.njit(nogil=True)
def _violators(i, t, S0, m, codes, nu, lp0, lp1, bound):  # pragma: no cover - compiled
    """(up, down, count): over the inputs j that output i at logit t violates, the largest
    allowed lower end (those that want θ larger) and the smallest allowed upper end."""
    n, k = codes.shape
    up = -np.inf
    down = np.inf
    count = 0
    top = max(t, 0.0)
    lse = top + math.log(math.exp(t - top) + math.exp(-top))
    l0 = t - lse - lp0
    l1 = -lse - lp1
    r0 = math.exp(t - lse)
    for j in range(n):
        mj = m[j]
        if not mj < np.inf:
            continue
        d = 0
        for a in range(k):
            if codes[i, a] != codes[j, a]:
                d += 1
        s0 = S0[j]
        c = nu * d + s0 * l0 + (1.0 - s0) * l1
        if c < mj - VIOLATION:
            count += 1
            thr = mj - nu * d
            if s0 > r0:
                peak = min(math.log(s0) - math.log1p(-s0), bound) if s0 < 1.0 else bound
                up = max(up, min(_boundary(s0, thr, t, peak, lp0, lp1) + MARGIN, peak))
            else:
                peak = max(math.log(s0) - math.log1p(-s0), -bound) if s0 > 0.0 else -bound
                down = min(down, max(_boundary(s0, thr, t, peak, lp0, lp1) - MARGIN, peak))
    return up, down, count


@numba.njit(nogil=True)
def _repair(theta, tail, S0, m, codes, nu, lp0, lp1, bound, out, status):  # pragma: no cover
    """For each tail output: status 0 allowed as is, 1 moved to an allowed logit (out),
    2 no allowed logit (out keeps θ). NaN boundaries (an input allows nothing) are empty."""
    for q in range(tail.size):
        i = tail[q]
        t = theta[i]
        out[i] = t
        up, down, count = _violators(i, t, S0, m, codes, nu, lp0, lp1, bound)
        if count == 0:
            status[i] = 0
            continue
        if (up > -np.inf and down < np.inf) or math.isnan(up) or math.isnan(down):
            status[i] = 2
            continue
        t2 = up if up > -np.inf else down
        if abs(t2) > bound:
            status[i] = 2
            continue
        if _violators(i, t2, S0, m, codes, nu, lp0, lp1, bound)[2] == 0:
            out[i] = t2
            status[i] = 1
        else:
            status[i] = 2


@numba.njit
def _masked_minima(LT, ST, rows, d, starts, nu, keep):  # pragma: no cover - compiled
    """Per input, min over its pairs whose output is kept of Σ_a S[j,a] L[i,a] + ν d (inf
    when none is kept)."""
    out = np.full(starts.size - 1, np.inf)
    for j in range(starts.size - 1):
        for t in range(starts[j], starts[j + 1]):
            i = rows[t]
            if keep[i]:
                c = nu * d[t]
                for a in range(LT.shape[1]):
                    c += ST[j, a] * LT[i, a]
                out[j] = min(out[j], c)
    return out


def repair_tail(theta: np.ndarray, tail: np.ndarray, S: np.ndarray, log_p: np.ndarray,
                codes: np.ndarray, rows: np.ndarray, cols_starts: np.ndarray, d: np.ndarray,
                nu: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """(repaired logits, status per output: -1 not tail, 0 allowed, 1 moved, 2 empty).

    ``theta``: the (1, n) free logits; ``tail``: bool per output (no mass); ``S`` (2, n)
    the posteriors per input; ``log_p`` the 2 log priors; ``codes`` (n, k) the Hamming
    profiles; (rows, starts, d) the pairs V sorted by input with their distortions.
    Why: raises the exact bound at (θ, ν) without touching a mass-carrying decoder.
    """
    n = theta.shape[1]
    t = np.ascontiguousarray(theta[0], dtype=np.float64)
    lp0, lp1 = float(log_p[0]), float(log_p[1])
    full = np.vstack([t, np.zeros(n)])
    top = np.maximum(t, 0.0)
    lse = top + np.log(np.exp(t - top) + np.exp(-top))
    LT = np.ascontiguousarray((full - lse).T - np.array([lp0, lp1]))
    keep = ~np.asarray(tail, dtype=bool)
    m = _masked_minima(LT, np.ascontiguousarray(S.T), rows, d, cols_starts, float(nu), keep)
    out = t.copy()
    status = np.full(n, -1, dtype=np.int64)
    _repair(t, np.flatnonzero(tail).astype(np.int64), np.ascontiguousarray(S[0]), m,
            np.ascontiguousarray(codes), float(nu), lp0, lp1, float(bound), out, status)
    return out[None, :], status


CONF: dict = {"variant": "P", "T": 1e-12}
_FULL_L = dm.RestrictedDual.full_L
CLOCK: dict[str, float] = defaultdict(float)
NOTES: list[str] = []


def _timed(owner, name, key):  # noqa: ANN001, ANN202
    fn = getattr(owner, name)

    def wrapped(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            CLOCK[key] += time.perf_counter() - t
    setattr(owner, name, wrapped)


def _codes(problem):  # noqa: ANN001, ANN202
    pts = np.asarray(problem.distortion.points)
    return np.stack([np.unique(pts[:, t], return_inverse=True)[1].reshape(-1)
                     for t in range(pts.shape[1])], axis=1).astype(np.uint8)


def _exact_lb(dual, theta, nu, mass=None):  # noqa: ANN001, ANN202
    from privbench.plugins.mechanisms._sppm.hamming_pricing import HammingPricer
    pr = CONF.setdefault("pricer", HammingPricer(np.asarray(dual.problem.distortion.points)))
    p = dual.problem
    bi, v = pr.price(_FULL_L(dual, theta), p.joint, p.p_b, -nu, np.zeros(p.n, bool))
    if mass is not None:  # where the deficit to V's minima sits, by the argmin's mass
        vmin = dual.minima(dual.L_of(theta), nu)
        deficit = np.maximum(vmin - v, 0.0) / np.log(2)
        q = mass[bi]
        edges = [0, 1e-12, 1e-9, 1e-7, 1e-5, 1.0]
        parts = [f"[{lo:.0e},{hi:.0e}) {deficit[(q >= lo) & (q < hi)].sum():.4f}/"
                 f"{int(((q >= lo) & (q < hi) & (deficit > 0)).sum())}"
                 for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
        NOTES.append("   deficit (bits / inputs) by argmin output mass: " + " ".join(parts))
    return (float(v.sum()) - nu * dual.delta) / np.log(2)


def _repair_in_place(dual, theta):  # noqa: ANN001, ANN202
    """Variants R / D: repair the tail of θ (in place: the rounds price, scan and go on from
    it) at the ν and τ the last ascent ended with."""
    nu, tau, p = CONF["nu"], CONF["tau"], dual.problem
    t0 = time.perf_counter()
    x, _ = dual.soft_mapping(theta, nu, tau)
    mass = np.bincount(dual.rows, weights=dual.p_b[dual.cols] * x, minlength=p.n)
    tail = mass < CONF["T"]
    codes = CONF.setdefault("codes", _codes(p))
    before = _exact_lb(dual, theta, nu) if CONF["variant"] == "D" else np.nan
    t1 = time.perf_counter()
    new, status = repair_tail(theta, tail, dual.S, dual.log_p[:, 0], codes, dual.rows,
                              dual.starts, dual.d, nu, dm.LOGIT_BOUND)
    dt = time.perf_counter() - t1
    CLOCK["repair"] += dt
    theta[...] = new
    after = _exact_lb(dual, theta, nu, mass) if CONF["variant"] == "D" else np.nan
    counts = np.bincount(status + 1, minlength=4)
    NOTES.append(f"repair: tail {int(tail.sum())} ok {counts[1]} moved {counts[2]} empty "
                 f"{counts[3]} repair {dt:.3f}s (all {time.perf_counter() - t0:.3f}s) "
                 f"LB {before:.5f} -> {after:.5f}")


def _patch() -> None:
    """Time the rounds' parts, note each ascent's (τ, evaluations, seconds, |W|, |V|), and
    repair the tail when the rounds take L for exact pricing (``full_L``, called there only)."""
    ascend = dm._ascend

    def wrapped(dual, par, tau, box, shape):  # noqa: ANN001, ANN202
        t = time.perf_counter()
        out = ascend(dual, par, tau, box, shape)
        dt = time.perf_counter() - t
        CLOCK["ascent"] += dt
        CONF.update(nu=math.exp(out[0][-1]), tau=tau)
        NOTES.append(f"ascent tau {tau:.0e}: {out[1]} evaluations, {dt:.2f} s, "
                     f"W {dual.sel.size} of V {dual.rows.size}")
        return out

    def full_l(dual, theta):  # noqa: ANN001, ANN202
        if CONF["variant"] in ("R", "D"):
            _repair_in_place(dual, theta)
        return _FULL_L(dual, theta)

    dm._ascend = wrapped
    dm.RestrictedDual.full_L = full_l
    for name in ("primal", "minima", "violators", "add"):
        _timed(dm.RestrictedDual, name, name)


def main() -> None:
    _patch()
    backend = pb.get_lp_backend("mckp")
    small = _own_arrays(pb.load_dataset("synthetic", m=6))  # compile outside the timed solves
    solve_mod.solve_sppm(small, 0.25, backend, SPPMSettings(mode="dual", iterations=20, warmup=5))
    one = np.zeros(1, dtype=np.int64)  # compile the repair's kernels outside the timings
    repair_tail(np.zeros((1, 1)), np.ones(1, bool), np.full((2, 1), 0.5), np.log([0.5, 0.5]),
                np.zeros((1, 1), np.uint8), one, np.array([0, 1]), np.zeros(1), 1.0, 30.0)
    problem = _own_arrays(pb.load_dataset("census", top_k="all"))
    d_const = float(row_budget_costs(problem).min())
    for arg in sys.argv[1:]:
        f, variant, *rest = arg.split(":")
        kw = {"mode": "dual", "coarse_start": False}
        pairs = [r.split("=") for r in rest]
        consts = {k: v for k, v in pairs if k.isupper() and k != "T"}
        for k, v in consts.items():  # dual_mode's constants, e.g. COARSE_EXIT=0.2
            CONF.setdefault("saved", {}).setdefault(k, getattr(dm, k))
            setattr(dm, k, type(getattr(dm, k))(float(v)))
        for k, v in CONF.get("saved", {}).items():
            if k not in consts:
                setattr(dm, k, v)
        kw.update((k, float(v) if k == "T" else int(v)) for k, v in pairs if k not in consts)
        CONF.update(variant=variant, T=kw.pop("T", 1e-12))
        CLOCK.clear()
        NOTES.clear()
        t = time.perf_counter()
        s = solve_mod.solve_sppm(problem, float(f) * d_const, backend, SPPMSettings(**kw)).stats
        timers = {k[5:-2]: round(v, 2) for k, v in s.items() if k.startswith("time_")}
        rounds = [(r["pairs"], round(r["time_s"], 2), round(r["gap_bits"], 4))
                  for r in s.get("polish") or []]
        print(f"{arg}: {time.perf_counter() - t:.2f} s, converged {s['converged']}, gap "
              f"{s['gap_bits']:.2e} bits, I {s['objective_bits']:.5f}, {timers}, "
              f"rounds' parts {({k: round(v, 2) for k, v in CLOCK.items()})}, rounds {rounds}",
              flush=True)
        for note in NOTES:
            print("   ", note, flush=True)


if __name__ == "__main__":
    main()
