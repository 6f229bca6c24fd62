"""Issue 38's round eight: the dual mode's L-BFGS ascents, their conditioning and memory.

Each argument is one solve: ``<F>:<variant>[:key=value...]`` (Δ = F d_const) on census
``top_k=all`` (needs ``PRIVBENCH_DATA_DIR``), or ``m<M>/<F>:<variant>`` on synthetic m = M;
``variant`` one of

* ``P``: the ascent before round eight (10 curvature pairs at every temperature:
  ``LBFGS_MEMORY=10``);
* ``N``: the ascent as the code is (``dual_mode.LBFGS_MEMORY`` pairs at the coarse
  temperatures);
* ``D``: as ``P``, preconditioned by the Hessian's diagonal h at each L-BFGS call's start
  (a change of variables θ = z / sqrt(h), which is L-BFGS with the initial inverse
  Hessian γ diag(1 / h)); h below ``FLOOR`` (default 1e-8) of its largest entry is floored.

All run ``sppm`` as ``auto`` does (``mode=auto``) unless ``mode=dual`` / ``coarse_start=0``
(or other integer sppm settings) are given; in capitals, dual_mode's constants
(``LBFGS_MEMORY=30``). Prints the wall time, the certificate, where the rounds' time
went, each round's (pairs, evaluations, s, gap) and each ascent's (τ, evaluations, s, |W|)
with the spread of the curvature h over the outputs (its 1 / 50 / 99 / 100 % quantiles over
the max) at the ascent's start and end point.
"""

from __future__ import annotations

import math
import sys
import time
from collections import defaultdict

import numpy as np

import privbench as pb
import privbench.plugins.mechanisms._sppm.dual_mode as dm
import privbench.plugins.mechanisms._sppm.solve as solve_mod
from privbench.plugins.mechanisms._sppm import lbfgs
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays
from privbench.protocol.feasibility import row_budget_costs

CLOCK: dict[str, float] = defaultdict(float)
NOTES: list[str] = []
CONF: dict = {"spread": True, "variant": "N", "FLOOR": 1e-8}
_ASCEND = dm._ascend
_MINIMIZE = lbfgs.minimize


def curvature(dual: dm.RestrictedDual, par: np.ndarray, tau: float) -> np.ndarray:
    """The diagonal of the smoothed dual's negative Hessian in (θ, log ν) over W at ``par``.

    Why: in θ_ai it is q_i r_a(1 - r_a) + (1/τ) Σ_j p_j w_ij (1 - w_ij) (S_ja - r_a)² (the
    log-softmax's curvature and the soft-min's variance of ∂c_ij/∂θ_ai = S_ja - r_a), which
    scales with the soft mass q_i of output i; in log ν (ν² / τ) Σ_j p_j Var_w(d) (the
    term ν (E[d] - Δ) left out). ``tests/test_sppm_round8_tool.py`` checks its θ part against
    finite differences.
    """
    n, k = dual.problem.n, dual.live.size
    nu = math.exp(par[-1])
    LT, rT = np.empty((n, k)), np.empty((n, k))
    dm._decoder(par, dual.log_p_flat, LT, rT)
    dual._pass(LT, nu, tau)  # fills dual.w on W
    w, rows, cols = dual.w, dual.w_rows, dual.w_cols
    pw = dual.p_b[cols] * w
    q = np.bincount(rows, weights=pw, minlength=n)
    h = np.empty(par.size)
    for a in range(k - 1):
        r = rT[:, a]
        dev = dual.ST[cols, a] - r[rows]
        soft = np.bincount(rows, weights=pw * (1.0 - w) * dev * dev, minlength=n)
        h[a * n:(a + 1) * n] = q * r * (1.0 - r) + soft / tau
    wd = np.bincount(cols, weights=w * dual.w_d, minlength=n)
    wdd = np.bincount(cols, weights=w * dual.w_d * dual.w_d, minlength=n)
    h[-1] = nu * nu / tau * float(dual.p_b @ np.maximum(wdd - wd * wd, 0.0))
    return h


def _preconditioned(fun, x0, lo, hi, memory=None, **kw):  # noqa: ANN001, ANN003, ANN202
    """Variant D: L-BFGS on z = sqrt(h) x (h from ``CONF['dual']`` at x0), mapped back."""
    h = curvature(CONF["dual"], x0, CONF["tau"])
    h = np.maximum(h, CONF["FLOOR"] * h.max())
    scale = 1.0 / np.sqrt(h)  # x = scale z

    def fz(z):  # noqa: ANN001, ANN202
        f, g = fun(z * scale)
        return f, g * scale

    res = _MINIMIZE(fz, x0 / scale, lo / scale, hi / scale, memory, **kw)
    res.x = res.x * scale
    return res


def _spread(dual, par, tau):  # noqa: ANN001, ANN202
    """h's quantiles over the outputs W reaches (h > 0), relative to the max."""
    h = curvature(dual, par, tau)[:-1]
    h = h[h > 0]
    top = h.max()
    q = np.quantile(h, [0.01, 0.5, 0.99]) / top
    return f"h/max 1% {q[0]:.0e} 50% {q[1]:.0e} 99% {q[2]:.0e} (max {top:.1e}, {h.size} > 0)"


def _patch() -> None:
    """Note each ascent's (τ, evaluations, seconds, |W|, |V|, h's spread) and time the rounds'
    other parts."""

    def wrapped(dual, par, tau, box, shape):  # noqa: ANN001, ANN202
        CONF.update(dual=dual, tau=tau)
        before = _spread(dual, par, tau) if CONF["spread"] else ""
        t = time.perf_counter()
        out = _ASCEND(dual, par, tau, box, shape)
        dt = time.perf_counter() - t
        CLOCK["ascent"] += dt
        after = _spread(dual, out[0], tau) if CONF["spread"] else ""
        NOTES.append(f"ascent tau {tau:.0e}: {out[1]} evaluations, {dt:.3f} s, "
                     f"W {dual.sel.size} of V {dual.rows.size}")
        if before:
            NOTES.append(f"    start {before}; end {after}")
        return out

    dm._ascend = wrapped
    dm.lbfgs.minimize = lambda *a, **kw: (_preconditioned if CONF["variant"] == "D"
                                          else _MINIMIZE)(*a, **kw)
    for name in ("primal", "violators"):
        fn = getattr(dm.RestrictedDual, name)

        def timed(*a, _fn=fn, _name=name, **kw):  # noqa: ANN002, ANN003, ANN202
            t = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                CLOCK[_name] += time.perf_counter() - t
        setattr(dm.RestrictedDual, name, timed)


def _problem(name: str, cache: dict):  # noqa: ANN202
    if name not in cache:
        ds = (pb.load_dataset("census", top_k="all") if name == "census"
              else pb.load_dataset("synthetic", m=int(name[1:])))
        problem = _own_arrays(ds)
        cache[name] = (problem, float(row_budget_costs(problem).min()))
    return cache[name]


def run(arg: str, backend, cache: dict) -> None:  # noqa: ANN001
    """One solve as ``arg`` says; prints its line and notes."""
    where, variant, *rest = arg.split(":")
    name, f = where.split("/") if "/" in where else ("census", where)
    problem, d_const = _problem(name, cache)
    pairs = [r.split("=") for r in rest]
    consts = {k: float(v) for k, v in pairs if k.isupper() and k != "FLOOR"}
    CONF["FLOOR"] = float(dict(pairs).get("FLOOR", 1e-8))
    kw: dict = {"mode": "auto"}
    kw.update((k, v if k == "mode" else bool(int(v)) if k == "coarse_start" else int(v))
              for k, v in pairs if not k.isupper())
    saved = {k: getattr(dm, k) for k in [*consts, "LBFGS_MEMORY"]}
    if variant in ("P", "D"):
        dm.LBFGS_MEMORY = 10
    for k, v in consts.items():
        setattr(dm, k, type(getattr(dm, k))(v))
    CONF["variant"] = variant
    CLOCK.clear()
    NOTES.clear()
    try:
        t = time.perf_counter()
        s = solve_mod.solve_sppm(problem, float(f) * d_const, backend, SPPMSettings(**kw)).stats
        wall = time.perf_counter() - t
    finally:
        for k, v in saved.items():
            setattr(dm, k, v)
    timers = {k[5:-2]: round(v, 2) for k, v in s.items() if k.startswith("time_")}
    rounds = [(r["pairs"], r["evaluations"], round(r["time_s"], 2), float(f"{r['gap_bits']:.2e}"))
              for r in s.get("polish") or []]
    evals = sum(r[1] for r in rounds)
    print(f"{arg}: {wall:.2f} s, mode {s.get('mode')}, converged {s['converged']}, gap "
          f"{s['gap_bits']:.2e} bits, I {s['objective_bits']:.5f}, LB {s['lower_bits']:.5f}, "
          f"evaluations {evals}, {timers}, rounds' parts "
          f"{({k: round(v, 2) for k, v in CLOCK.items()})}, rounds {rounds}", flush=True)
    for note in NOTES:
        print("   ", note, flush=True)


def main() -> None:
    _patch()
    backend = pb.get_lp_backend("mckp")
    small = _own_arrays(pb.load_dataset("synthetic", m=6))  # compile outside the timed solves
    for variant in ("P", "D"):
        CONF["variant"] = variant
        solve_mod.solve_sppm(small, 0.25, backend, SPPMSettings(mode="dual", iterations=20,
                                                                warmup=5))
    cache: dict = {}
    args = sys.argv[1:]
    if args and args[0] == "--no-spread":
        CONF["spread"] = False
        args = args[1:]
    for arg in args:
        run(arg, backend, cache)


if __name__ == "__main__":
    main()
