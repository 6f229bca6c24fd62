"""SPPM's modes: what runs after (or instead of more) Frank-Wolfe.

Every mode starts with :func:`.frank_wolfe.run_frank_wolfe` and may then continue from
its state with a finisher of the same signature, ``finish(setup, state, trace)``: it reads
the :class:`.frank_wolfe.Setup` (``polish_rounds`` from its settings) and changes the
:class:`.frank_wolfe.State` and the :class:`.frank_wolfe.Trace` it is given:

* ``frank-wolfe``: nothing more (Algorithm 1 alone);
* ``optimal``: restricted exact solves of problem (1) alternated with exact pricing;
* ``dual``: entropy-smoothed dual ascent on the decoder over V, certified by pricing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from privbench import PrivacyProblem
from privbench.protocol.feasibility import normalise_columns, pull_into_budget, row_budget_costs

from . import continuation
from .dual_mode import DualRound, dual_rounds
from .frank_wolfe import LN2, Setup, State, Trace
from .leakage import decoder_logratios, output_joint
from .polish import polish

#: mapping entries below this are solver dust: the optimal mode also tries them at zero
POLISH_CLEAN = 1e-9
#: the optimal mode's solver settings, in order (tight tolerances first)
POLISH_SETTINGS = (True, False)


def finish_frank_wolfe(setup: Setup, state: State, trace: Trace) -> None:
    """``frank-wolfe``: Algorithm 1 alone."""


def finish_dual(setup: Setup, state: State, trace: Trace) -> None:
    """``dual``: entropy-smoothed dual ascent after the Frank-Wolfe warm-up (:mod:`.smoothed_dual`).

    V takes the dual phase's pairs, reordered so that X0's pairs stay first (the budget
    repair of the epilogue mixes with X0 there).
    """
    if trace.gap[-1] < setup.tol:
        return
    V, delta, tol, log, trace_f, trace_gap = state.V, setup.delta, setup.tol, trace.polish_log, \
        trace.f, trace.gap
    best_lb, warm = state.best_lb, setup.warm
    t = time.perf_counter()
    priced = 0.0

    def price(L: np.ndarray, lam_: float) -> tuple[np.ndarray, np.ndarray]:
        nonlocal priced
        t_price = time.perf_counter()
        out = V.price_all(L, lam_)
        priced += time.perf_counter() - t_price
        return out

    def on_round(record: DualRound) -> None:
        trace.checkpoint(record.upper_bits,
                     max(record.upper_bits - max(record.lower_bits, best_lb / LN2), 0.0))

    threads = V.line.threads if V.line is not None else 1  # the pricing's own (sppm threads)
    n = V.n
    rows0, cols0, x0 = V.rows, V.cols, state.x
    start = None
    if warm is not None:  # a coarse solve's dual point and pairs (:mod:`.continuation`)
        fresh = ~np.isin(warm.rows * n + warm.cols, V.rows * n + V.cols)
        rows0 = np.concatenate([V.rows, warm.rows[fresh]])
        cols0 = np.concatenate([V.cols, warm.cols[fresh]])
        x0 = np.concatenate([state.x, np.zeros(int(fresh.sum()))])
        start = (warm.theta, warm.nu)
    rows, cols, xd, lb, stop, state.dual_point = dual_rounds(
        V.problem, delta, rows0, cols0, x0, -state.lam, price, tol,
        setup.settings.polish_rounds, log, on_round, threads, start)
    x0_keys = V.rows[: V.x_start.size] * n + V.cols[: V.x_start.size]
    first = np.isin(rows * n + cols, x0_keys)
    order = np.concatenate([np.flatnonzero(first), np.flatnonzero(~first)])
    # X0's pairs in their original order, then the rest
    lead = order[: int(first.sum())]
    pos = dict(zip((rows[lead] * n + cols[lead]).tolist(), lead.tolist(), strict=True))
    order[: lead.size] = [pos[k] for k in x0_keys.tolist()]
    V.replace_pairs(rows[order], cols[order])
    trace.timers["pricing"] += priced
    trace.timers["polish"] += time.perf_counter() - t - priced
    state.best_lb = max(best_lb, lb)
    trace_gap[-1] = max(trace_f[-1] - state.best_lb / LN2, 0.0) if trace_f else trace_gap[-1]
    trace.restamp()
    state.x, trace.stop = xd[order], stop


def finish_optimal(setup: Setup, state: State, trace: Trace) -> None:
    """``optimal``: exact solves on V alternated with exact pricing (:mod:`.polish`).

    Each round solves problem (1) on V and repairs the point to exact feasibility, as
    is and with entries below ``POLISH_CLEAN`` zeroed (an interior-point solution puts
    dust everywhere, whose odd posteriors loosen the bound); at each candidate it
    prices all n² pairs (a certified bound; pairs that price out join V). It keeps the
    candidate with the least I and the best bound, and stops when the gap is below
    ``tol``, when no pair enters V after the solver ran with each of ``POLISH_SETTINGS``
    (tight tolerances, then the defaults: interior points near the optimum differ, and
    so do their bounds), or after ``polish_rounds`` rounds.
    """
    if trace.gap[-1] >= setup.tol:
        state.x, state.best_lb, trace.stop = _polish_rounds(setup, state, trace)


def _polish_rounds(setup: Setup, state: State, trace: Trace) -> tuple[np.ndarray, float, str]:
    V, delta, eta, tol, log = state.V, setup.delta, setup.eta, setup.tol, trace.polish_log
    x, best_lb, trace_gap, rounds = state.x, state.best_lb, trace.gap, setup.settings.polish_rounds
    problem, n, P, p_a = V.problem, V.n, V.problem.joint, V.problem.p_a
    leak, pad = state.leakage, V.padded
    settings = iter(POLISH_SETTINGS)
    tight = next(settings)
    for _ in range(rounds):
        t = time.perf_counter()
        xp, record = polish(problem, V.rows, V.cols, V.a, delta, tight=tight)
        trace.timers["polish"] += time.perf_counter() - t
        log.append(record)
        candidates = []
        if xp is not None:
            for raw in (xp, np.where(xp < POLISH_CLEAN, 0.0, xp)):
                candidates.append(pull_into_budget(V.a, normalise_columns(V.cols, raw, n),
                                                   V.start_values(xp.size), delta))
        added = 0
        for k in range(len(candidates)):
            cand = candidates[k] = pad(candidates[k])
            L, empty = decoder_logratios(output_joint(P, V.rows, V.cols, cand, n), p_a, eta)
            step = V.linear_step(L, empty, None, True, rounds=0)
            added += step.added
            best_lb = max(best_lb, step.bound(delta))
        x = pad(x)
        f = leak(x)
        for cand in candidates:
            cand = pad(cand)
            fc = leak(cand)
            if fc < f:
                x, f = cand, fc
        trace.checkpoint(f / LN2, max(f - best_lb, 0.0) / LN2)
        record.update(objective_bits=f / LN2, gap_bits=trace_gap[-1], pairs_added=added)
        if trace_gap[-1] < tol:
            return x, best_lb, "tolerance (optimal mode)"
        if xp is None:
            return x, best_lb, f"optimal mode: restricted solve failed ({record['status']})"
        if added == 0:  # V holds the support: only the solver's accuracy is left to try
            tight = next(settings, None)
            if tight is None:
                return x, best_lb, "optimal mode: no pair prices out (solver accuracy reached)"
    return x, best_lb, "optimal mode: polish rounds exhausted"


#: the ``auto`` mode (sppm's default) picks ``dual`` from this relative budget Δ / d_const
#: on (d_const: the best constant mapping's E[d]) and ``frank-wolfe`` below it, where
#: Frank-Wolfe certifies fastest (docs/studies/sppm-frontier.md has the measurements). At
#: 0.01 and 0.03 d_const the dual mode (Frank-Wolfe warm-up, no coarse start) certified
#: census with every profile in 6.2 / 5.2 s against Frank-Wolfe's 12.4 / 29.2 s (the peer
#: rows of the benchmark, under the lock), MovieLens in 0.17 / 0.14 s against 0.34 / 0.53
#: s, census top 300 0.05 / 0.06 against 0.08 / 0.17 s, synthetic m = 8 0.52 / 0.36
#: against 0.35 / 0.64 s (nice 10, two runs each); below 0.01 it stalls (census every
#: profile: gap 0.011 bits at 1e-4 d_const, no certificate in 76 s at 1e-3). Re-checked
#: with the Hamming pricing's level lists (census every profile, one run each, locked):
#: 0.01 d_const dual 3.72 s, Frank-Wolfe 7.35 s; 3e-3 Frank-Wolfe 9.72 s, dual uncertified
#: at 60 s
AUTO_DUAL_FROM = 0.01
#: ... and on a long line (where both modes start from a coarse solve,
#: :mod:`.continuation`) from this one. Below it Frank-Wolfe from the prolonged coarse
#: mapping wins: at 0.01 d_const (nice 10, load 5-7, one run each) 1.2 / 1.2 / 2.1 / 3.4 /
#: 2.7 s at m = 9 to 13 against the warm-started dual mode's 18 / 10.6 / 86 / 1.7 / 4.6 s
#: (at m = 9 and 11 its start does not hold and it falls back to Frank-Wolfe after 4
#: rounds); at 0.03 the dual mode is ahead from m = 11 on (1.4 / 3.7 s against 2.0 / 6.0
#: s), Frank-Wolfe at m = 9 and 10 (1.5 / 2.2 s against 8.4 / 3.6 s)
AUTO_LINE_DUAL_FROM = 0.03
#: the coarsest level of the dual mode's coarse start (n <= 256, no coarser start) runs
#: the dual mode from this relative budget and Frank-Wolfe below: a Frank-Wolfe level's
#: posterior starts the finer dual rounds better there (synthetic m = 7 from n = 32 at
#: 0.03 d_const: from a dual level the fine rounds did not certify and fell back)
COARSEST_DUAL_FROM = 0.1
#: relative slack of that comparison (rounding of d_const's two computations)
AUTO_RTOL = 1e-9


def resolve_mode(mode: str, problem: PrivacyProblem, delta: float,
                 start: float | None = None) -> str:
    """The mode a run uses: ``mode`` itself, or for ``auto`` the one the relative budget
    Δ / d_const and the distortion call for (:data:`AUTO_DUAL_FROM`,
    :data:`AUTO_LINE_DUAL_FROM`; ``start`` replaces them, e.g. ``COARSEST_DUAL_FROM``).

    d_const = min_i Σ_j p_j d_ij, the constant mapping's budget (O(n k) for squared l2
    and Hamming features, the same sums the perfect-privacy check does)."""
    if mode != "auto":
        return mode
    d_const = float(row_budget_costs(problem).min()) if problem.n else 0.0
    if start is None:
        start = AUTO_LINE_DUAL_FROM if continuation.applies(problem) else AUTO_DUAL_FROM
    # the O(n k) sums differ from the constant mechanism's exact row by ~1e-13 relative:
    # Δ = 0.1 d_const computed either way must pick the same mode
    return "dual" if d_const > 0 and delta >= start * d_const * (1 - AUTO_RTOL) \
        else "frank-wolfe"


#: mode -> (Frank-Wolfe stops at the handover gap instead of tol, finisher)
MODES: dict[str, tuple[bool, Callable[[Setup, State, Trace], None]]] = {
    "frank-wolfe": (False, finish_frank_wolfe),
    "optimal": (True, finish_optimal),
    "dual": (False, finish_dual),
}
