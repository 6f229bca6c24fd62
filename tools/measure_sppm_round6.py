"""Issue 38's round six (tried, not in the code): census with every profile, sppm's dual
mode without the coarse start (the peer) against two changes made here by patching.

Each argument is one solve: ``<F>:<variant>[:key=value...]`` (Δ = F d_const, census
``top_k=all``; needs ``PRIVBENCH_DATA_DIR``), with ``variant``

* ``P``: the peer as the code is (``mode=dual coarse_start=False``);
* ``A``: the warm-up's Frank-Wolfe steps priced over each input's ``K`` nearest outputs
  (Hamming, :class:`.pricing.Neighbours`), exactly every ``E`` steps and at the last one;
* ``B``: the dual rounds started at the fine temperatures from the warm-up's posterior
  decoders and ν (the ``start`` path a coarse solve uses) instead of the default schedule.

Other ``key=value`` pairs are integer sppm settings (e.g. ``polish_rounds=1``). Prints the
wall time, the certificate, the solver's timers and each dual round's (pairs, s, gap).

    PRIVBENCH_DATA_DIR=/work/shared/data python tools/measure_sppm_round6.py 0.1:P 0.1:A:E=10
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

import privbench as pb
import privbench.plugins.mechanisms._sppm.dual_mode as dm
import privbench.plugins.mechanisms._sppm.frank_wolfe as fw
import privbench.plugins.mechanisms._sppm.modes as modes
import privbench.plugins.mechanisms._sppm.solve as solve_mod
from privbench.plugins.mechanisms._sppm.pricing import Neighbours, price_neighbours
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays
from privbench.protocol.feasibility import row_budget_costs

#: variant A's switch, K and E
CHEAP = {"on": False, "k": 128, "every": 10}
_INIT, _STEP, _CERTIFIED, _ROUNDS = (fw.ActiveSet.__init__, fw.ActiveSet.linear_step,
                                     fw._certified_step, dm.dual_rounds)


def _init(self, problem, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
    """ActiveSet with K-nearest lists besides the exact Hamming pricer (variant A)."""
    _INIT(self, problem, *args, **kw)
    self.cheap = CHEAP["on"] and isinstance(self.line, fw.HammingPricer)
    if self.cheap:
        t = time.perf_counter()
        self.nb = Neighbours(problem.distortion, CHEAP["k"])
        self.timers["pricing"] += time.perf_counter() - t


def _linear_step(self, L, empty, empty_cost, exact=True, costs_set=False, rounds=None):  # noqa: ANN001, ANN202
    """Column generation priced over the K-nearest lists only (not certified) when not exact."""
    if not self.cheap or exact:
        return _STEP(self, L, empty, empty_cost, exact, costs_set, rounds)
    P, cap = self.problem.joint, self.rounds if rounds is None else rounds
    if not costs_set:
        c = fw.pair_costs(L, P, self.rows, self.cols, empty, empty_cost)
        if self._in_backend == 0:
            self.backend.add_columns(self.cols, c, self.a)
        else:
            self.backend.set_costs(c)
    self._in_backend = self.rows.size
    added = solves = 0
    while True:
        t = time.perf_counter()
        sol = self.backend.solve()
        self.timers["lp"] += time.perf_counter() - t
        self.lp_solves += 1
        solves += 1
        lam = min(float(sol.budget_dual), 0.0)
        t = time.perf_counter()
        best_i, best_v = price_neighbours(L, P, self.problem.p_b, self.nb, lam, empty, empty_cost)
        fresh, cand = self._fresh(best_i, best_v, sol.simplex_duals)
        self.timers["pricing"] += time.perf_counter() - t
        if not fresh.any():
            return fw.LinearStep(sol, lam, best_v, added, False, complete=False)
        added += self._add(L, empty, empty_cost, best_i, cand[fresh])
        if cap and solves >= cap:
            x = np.concatenate([sol.x, np.zeros(self.rows.size - sol.x.size)])
            return fw.LinearStep(replace(sol, x=x), lam, best_v, added, False, complete=False)


def _certified_step(setup, state, trace, it, f, L, empty):  # noqa: ANN001, ANN202
    """frank_wolfe._certified_step with exact pricing every E steps for variant A."""
    V, delta = state.V, setup.delta
    if not getattr(V, "cheap", False):
        return _CERTIFIED(setup, state, trace, it, f, L, empty)
    exact = it % CHEAP["every"] == 0 or it == setup.settings.iterations
    step = V.linear_step(L, empty, None, exact)
    if not step.certified and (f - step.bound(delta)) / fw.LN2 < setup.tol:
        step = V.linear_step(L, empty, None, True, costs_set=True)
    state.x = V.padded(state.x)
    state.last_used = np.concatenate([state.last_used,
                                      np.full(V.rows.size - state.last_used.size, it)])
    state.last_used[step.sol.x > 0] = it
    state.lam = step.lam
    if step.certified:
        state.best_lb = max(state.best_lb, step.bound(delta))
    trace.checkpoint(f / fw.LN2, max(f - state.best_lb, 0.0) / fw.LN2)
    return step


def _warm_rounds(problem, delta, rows, cols, x, nu, price, tol, rounds, log, on_round=None,  # noqa: ANN001, ANN202
                 threads=1, start=None):
    """dual_rounds started at the fine temperatures from x's posterior and ν (variant B)."""
    if start is None:
        S = dm.RestrictedDual(problem, delta, rows[:1], cols[:1]).S
        start = (dm.posterior_logits(problem, rows, cols, x, S), nu)
    return _ROUNDS(problem, delta, rows, cols, x, nu, price, tol, rounds, log, on_round,
                   threads, start)


def main() -> None:
    fw.ActiveSet.__init__, fw.ActiveSet.linear_step = _init, _linear_step
    fw._certified_step = _certified_step
    backend = pb.get_lp_backend("mckp")
    small = _own_arrays(pb.load_dataset("synthetic", m=6))  # compile outside the timed solves
    solve_mod.solve_sppm(small, 0.25, backend, SPPMSettings(mode="dual", iterations=20, warmup=5))
    problem = _own_arrays(pb.load_dataset("census", top_k="all"))
    d_const = float(row_budget_costs(problem).min())
    for arg in sys.argv[1:]:
        f, variant, *rest = arg.split(":")
        kw = {"mode": "dual", "coarse_start": False}
        kw.update((k, int(v)) for k, v in (r.split("=") for r in rest))
        CHEAP.update(on=variant == "A", k=kw.pop("K", 128), every=kw.pop("E", 10))
        modes.dual_rounds = _warm_rounds if variant == "B" else _ROUNDS
        t = time.perf_counter()
        s = solve_mod.solve_sppm(problem, float(f) * d_const, backend, SPPMSettings(**kw)).stats
        timers = {k[5:-2]: round(v, 2) for k, v in s.items() if k.startswith("time_")}
        rounds = [(r["pairs"], round(r["time_s"], 2), round(r["gap_bits"], 4))
                  for r in s.get("polish") or []]
        print(f"{arg}: {time.perf_counter() - t:.2f} s, converged {s['converged']}, gap "
              f"{s['gap_bits']:.2e} bits, I {s['objective_bits']:.5f}, {timers}, rounds {rounds}",
              flush=True)


if __name__ == "__main__":
    main()
