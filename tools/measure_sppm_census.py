"""SPPM's dual mode on census, this code against its earlier settings, interleaved.

Each argument is one solve: ``<top_k>:<new|old|base>`` (census, Δ = 0.5, the ``sppm``
plugin's dual-mode options, tol 1e-3; needs ``PRIVBENCH_DATA_DIR``). ``old`` runs with the
settings before ``docs/studies/sppm-scaling.md``'s census section (the working pairs W = V at
every temperature; Hamming pricing with 8-nat cost classes, 64 blocks per superblock;
the smoothed dual's pass on one thread), ``base`` with the dual ascent as it was before
the projected L-BFGS (scipy's L-BFGS-B, the objective's glue in numpy, the pass with
libm's exp and branches over every pair, the constant mappings' E[d] from n² block sums;
the violators' array code is in both), ``new`` as the code is. Prints wall and CPU seconds, the load
average, the certified gap, the dual rounds and the solver's timers.

    PRIVBENCH_DATA_DIR=/work/shared/data python tools/measure_sppm_census.py all:new all:old
"""

from __future__ import annotations

import math
import sys
import time

import numba
import numpy as np
import scipy.optimize as so

import privbench as pb
import privbench.plugins.mechanisms._sppm.dual_mode as dual_mode
import privbench.plugins.mechanisms._sppm.hamming_pricing as hamming_pricing
import privbench.plugins.mechanisms._sppm.solve as solve_mod
import privbench.protocol.feasibility as feasibility
from privbench.plugins.mechanisms._softmin import soft_weights
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays

#: settings as they were before the change (``old``): (object, attribute) -> value; the
#: pricer's defaults (threads, block, superblock, cost_bin) were 64 blocks per superblock
#: and 8-nat cost classes
_PRICER = hamming_pricing.HammingPricer.__init__
OLD = {(dual_mode, "FOCUS_MAX_TAU"): -1.0,
       (_PRICER, "__defaults__"): (1, hamming_pricing.BLOCK, 64, 8.0),
       (dual_mode, "SPLIT_PAIRS"): 2**62}
NEW = {key: getattr(*key) for key in OLD}


def _scipy_ascend(dual, par, tau, box, shape):  # noqa: ANN001, ANN202 - the old code
    """``dual_mode._ascend`` before the projected L-BFGS: scipy's L-BFGS-B, restarted
    without memory after each widening of W."""
    evaluations = 0
    if tau > dual_mode.FOCUS_MAX_TAU:
        dual.focus_all()
    else:
        dual.focus(par[:-1].reshape(shape), math.exp(par[-1]), tau)
    bounds = list(zip(box[0].tolist(), box[1].tolist(), strict=True))
    for _ in range(dual_mode.FOCUS_TRIES):
        res = so.minimize(_scipy_objective, par, args=(dual, tau), jac=True,
                          method="L-BFGS-B", bounds=bounds, options={"maxiter": 3000})
        par = res.x
        evaluations += int(res.nfev)
        if not dual.widen(par[:-1].reshape(shape), math.exp(par[-1]), tau):
            break
    return par, evaluations


def _scipy_objective(par, dual, tau):  # noqa: ANN001, ANN202 - the old code
    """``RestrictedDual.objective`` before the compiled decoder and chain rule."""
    theta = par[:-1].reshape(dual.live.size - 1, -1)
    nu = math.exp(par[-1])
    log_r = dual_mode.log_softmax(theta)
    value, GT, used = dual._pass(np.ascontiguousarray((log_r - dual.log_p).T), nu, tau)
    G = GT.T
    r = np.exp(log_r)
    g_theta = (G - r * G.sum(axis=0))[:-1]
    return -value, -np.concatenate([g_theta.ravel(), [(used - dual.delta) * nu]])


@numba.njit(cache=True, nogil=True)
def _branchy_pass(LT, ST, p_b, rows, d, starts, nu, tau, GT, w, j_lo, j_hi):  # noqa: ANN001, ANN202
    """``dual_mode._soft_pass`` before the branch-free loops and the polynomial exp."""
    k = LT.shape[1]
    value = 0.0
    used = 0.0
    inv = 1.0 / tau
    for j in range(j_lo, j_hi):
        lo, hi = starts[j], starts[j + 1]
        if lo == hi:
            continue
        for t in range(lo, hi):
            w[t] = dual_mode._cost(LT, ST, rows, d, j, t, nu)
        m, z = soft_weights(w, lo, hi, inv)
        value += p_b[j] * (m - tau * math.log(z))
        for t in range(lo, hi):
            x = w[t] / z
            w[t] = x
            wt = x * p_b[j]
            if wt == 0.0:
                continue
            used += wt * d[t]
            i = rows[t]
            for a in range(k):
                GT[i, a] += wt * ST[j, a]
    return value, used


_ROW_COSTS = feasibility.row_budget_costs


def _block_row_costs(problem, rows=None):  # noqa: ANN001, ANN202 - the old code
    """``row_budget_costs`` before the Hamming identity: n² distances in blocks."""
    if rows is not None or getattr(problem.distortion, "metric", None) != "hamming":
        return _ROW_COSTS(problem, rows)
    n = problem.n
    step = max(1, min(n, 2**22 // max(n, 1)))
    out = np.empty(n)
    for s in range(0, n, step):
        part = np.arange(s, min(n, s + step))
        out[part] = problem.distortion.block(part, np.arange(n)) @ problem.p_b
    return out


BASE = {(dual_mode, "_ascend"): _scipy_ascend, (dual_mode, "_soft_pass"): _branchy_pass,
        (feasibility, "row_budget_costs"): _block_row_costs}
NOW = {key: getattr(*key) for key in BASE}


def main() -> None:
    backend = pb.get_lp_backend("mckp")
    options = SPPMSettings(mode="dual")
    small = pb.load_dataset("synthetic", m=6)  # compile the kernels outside the timed solves
    for code in (BASE, NOW):  # compile both passes outside the timed solves
        for (module, name), value in code.items():
            setattr(module, name, value)
        solve_mod.solve_sppm(_own_arrays(small), 0.25, backend,
                             options.replace(iterations=20, warmup=5))
    problems: dict[str, pb.PrivacyProblem] = {}
    for arg in sys.argv[1:]:
        top_k, which = arg.split(":")
        if top_k not in problems:
            problems[top_k] = pb.load_dataset("census",
                                              top_k=top_k if top_k == "all" else int(top_k))
        for (module, name), value in {**(OLD if which == "old" else NEW),
                                      **(BASE if which == "base" else NOW)}.items():
            setattr(module, name, value)
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        cpu, wall = time.process_time(), time.perf_counter()
        s = solve_mod.solve_sppm(_own_arrays(problems[top_k]), 0.5, backend, options).stats
        rounds = s["polish"] or []
        print(f"census:{top_k} {which} n={problems[top_k].n} "
              f"wall={time.perf_counter() - wall:.2f} cpu={time.process_time() - cpu:.2f} "
              f"load={load} fw={s['iterations']} dual_rounds={len(rounds)} "
              f"evaluations={sum(r['evaluations'] for r in rounds)} gap={s['gap_bits']:.3e} "
              f"pricing={s['time_pricing_s']:.2f} lp={s['time_lp_s']:.2f} "
              f"ls={s['time_linesearch_s']:.2f} polish={s['time_polish_s']:.2f}", flush=True)


if __name__ == "__main__":
    main()
