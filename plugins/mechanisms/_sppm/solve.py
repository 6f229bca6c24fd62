"""The SPPM driver: decide perfect privacy, run Frank-Wolfe, finish with the mode, report.

:func:`solve_sppm` is the one entry point of the package (``sppm.py`` calls it); the
iterations are in :mod:`.frank_wolfe`, the modes in :mod:`.modes`, perfect privacy in
:func:`privbench.protocol.feasibility.constant_output` and :mod:`.perfect`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from privbench import Certificate, LPBackend, PrivacyProblem
from privbench._plumbing.blas import one_blas_thread
from privbench.protocol.feasibility import constant_output, normalise_columns, pull_into_budget

from . import continuation, profile_clusters
from .atoms import AtomSet
from .dual_mode import posterior_logits
from .frank_wolfe import (
    LN2,
    TIMERS,
    ActiveSet,
    Setup,
    SPPMOutcome,
    State,
    Trace,
    available_cores,
    run_frank_wolfe,
    start_from,
    start_pairs,
)
from .leakage import output_joint
from .modes import COARSEST_DUAL_FROM, MODES, resolve_mode
from .perfect import perfect_privacy_mapping
from .settings import SPPMSettings

#: the default settings (the plugin's defaults: :class:`.settings.SPPMSettings`)
DEFAULT_SETTINGS = SPPMSettings()


#: dual rounds a warm-started run of ``auto`` gets before it falls back to Frank-Wolfe
#: (the coarse starts that hold certify in 1-3 rounds)
WARM_ROUNDS = 4


def solve_sppm(problem: PrivacyProblem, delta: float, backend: LPBackend,
               settings: SPPMSettings = DEFAULT_SETTINGS, *, x0: Any = None,
               on_iteration: Callable[[dict[str, Any]], None] | None = None,
               **changes: Any) -> SPPMOutcome:
    """Run SPPM with ``settings`` (:class:`.settings.SPPMSettings`, the plugin's defaults);
    stop after ``settings.iterations`` steps or once the certified gap < ``settings.tol``.

    ``backend`` is the LP backend instance the master runs on (the plugin creates it
    from ``settings.lp_backend``); ``x0`` a starting mapping (see the plugin's ``x0``);
    ``on_iteration`` receives a progress dict each Frank-Wolfe iteration. Keyword
    ``changes`` are a convenience for ``settings.replace(**changes)``.

    ``auto`` picks its mode here (:func:`.modes.resolve_mode`): a dual run from a coarse
    start (:mod:`.continuation`) gets :data:`WARM_ROUNDS` rounds and, uncertified then,
    falls back to Frank-Wolfe (stat ``auto_fallback``). Pricing and the certificate:
    :mod:`.frank_wolfe`.
    """
    if changes:
        settings = settings.replace(**changes)
    t_total = time.perf_counter()
    best = constant_output(problem, delta) if problem.prior_mi_bits > 0 else None
    if best is not None:  # a constant mapping has I = 0, which is optimal
        return _constant_outcome(problem.n, best, delta, settings, t_total)
    mode = resolve_mode(settings.mode, problem, delta)
    start = settings.mode == "auto" and mode == "dual" and x0 is None and settings.coarse_start
    failed = None
    if start and profile_clusters.START and profile_clusters.applies(problem):
        out = _cluster_solve(problem, delta, backend, settings, on_iteration, t_total)
        if out is not None and out.stats["converged"]:
            return out
        if out is not None:  # measured, not certified: the plain dual mode instead
            failed = f"clustered profiles: I = {out.stats['objective_bits']:.2g} bits, " \
                f"gap {out.stats['gap_bits']:.2g} bits"
        settings = settings.replace(coarse_start=False)
    warm = start and continuation.applies(problem)  # a line: the dual mode's coarse start
    # a good coarse start certifies in 1-2 rounds; a poor one is cut short (the fine
    # level only: the coarse levels keep polish_rounds, the coarsest one's cold dual mode
    # needs more than 4 at m = 12, 0.6 d_const, and a poor coarse point fails the fine run)
    out = _solve(problem, delta, backend, settings.replace(mode=mode), x0, on_iteration,
                 t_total, WARM_ROUNDS if warm else None)
    if warm and not out.stats["converged"]:
        # the coarse start does not always hold (synthetic m = 9 and 11 at 0.01 d_const:
        # gap 0.73-0.88 bits where m = 10 and 12 certify in 1-3 s): Frank-Wolfe instead
        failed = f"dual mode from a coarse start: gap {out.stats['gap_bits']:.2g} bits"
        out = _solve(problem, delta, backend, settings.replace(mode="frank-wolfe"), None,
                     on_iteration, time.perf_counter())
        out.stats.update(mode="frank-wolfe", auto_fallback=failed)
    elif failed is not None:
        out.stats.update(auto_fallback=failed)
    return out


def _cluster_solve(problem: PrivacyProblem, delta: float, backend: LPBackend,
                   settings: SPPMSettings, on_iteration: Callable[[dict[str, Any]], None] | None,
                   t_total: float) -> SPPMOutcome | None:
    """The start from clustered profiles (:mod:`.profile_clusters`): the coarse problem
    solved to ``tol`` x :data:`.profile_clusters.TOL_SHARE` by the dual mode after
    :data:`.profile_clusters.COARSE_WARMUP` Frank-Wolfe steps, its mapping prolonged (the same
    I and E[d] on the fine problem) and certified by one exact pricing of all n² pairs (a
    Frank-Wolfe run of 0 steps from it). Near I* = 0 that certifies (I* >= 0 is free);
    None when no cluster count fits the budget (:func:`.profile_clusters.clusters_for`) or
    the coarse solve gives nothing."""
    coarse_o = settings.replace(tol=settings.tol * profile_clusters.TOL_SHARE,
                                warmup=profile_clusters.COARSE_WARMUP)
    out = profile_clusters.coarse_start(
        problem, delta, lambda p, d: _coarse_solve(p, d, backend, coarse_o, "dual"))
    if out is None:
        return None
    mixed = _within_budget(problem, delta, out.rows, out.cols, out.x)
    if mixed is None:
        return None
    rows, cols, x = mixed
    X0 = sp.coo_array((x, (rows, cols)), shape=(problem.n, problem.n))
    one = _solve(problem, delta, backend, settings.replace(mode="frank-wolfe", iterations=0),
                 X0, on_iteration, t_total)
    # the run is auto's dual mode started from clusters, not a Frank-Wolfe run: say so
    k = out.levels[0]["n"] if out.levels else None
    one.stats.update(mode="dual", coarse_levels=out.levels, stop_reason=(
        f"{one.stats['stop_reason']} (clustered start: the mapping of {k} clustered "
        "profiles, priced exactly)"))
    return one


def _solve(problem: PrivacyProblem, delta: float, backend: LPBackend, settings: SPPMSettings,
           x0: Any, on_iteration: Callable[[dict[str, Any]], None] | None,
           t_total: float, fine_rounds: int | None = None) -> SPPMOutcome:
    """One solve in a resolved mode (not ``auto``): Frank-Wolfe, the mode, the outcome;
    ``fine_rounds`` caps this level's ``polish_rounds`` (not its coarse levels')."""
    setup, state, trace = _solve_state(problem, delta, backend, settings, x0, on_iteration,
                                       t_total, fine_rounds)
    _perfect_privacy_by_lp(setup, state, trace)
    return _outcome(setup, state, trace, t_total)


#: a prolonged coarse mapping is mixed with X0 to spend at most (1 - this) Δ (its E[d] on
#: the fine line differs from the coarse one by the spread within groups, and rounding)
BUDGET_MARGIN = 1e-9


def _solve_state(problem: PrivacyProblem, delta: float, backend: LPBackend,
                 o: SPPMSettings, x0: Any,
                 on_iteration: Callable[[dict[str, Any]], None] | None,
                 t_total: float, fine_rounds: int | None = None) -> tuple[Setup, State, Trace]:
    """Frank-Wolfe then the mode's finisher; the solve's setup, state and trace at the end.
    On a long line, when X0 is not given and ``coarse_start`` holds, the dual mode starts
    from a coarse solve's dual point and Frank-Wolfe from its prolonged mapping
    (:mod:`.continuation`)."""
    mode = o.mode
    handover_first, finish = MODES[mode]
    coarse = mode in ("dual", "frank-wolfe") and x0 is None and o.coarse_start \
        and continuation.applies(problem)
    warm = continuation.coarse_start(
        problem, delta, lambda p, d: _coarse_solve(p, d, backend, o, "dual")) \
        if coarse and mode == "dual" else None
    levels = warm.levels if warm is not None else None
    start = _coarse_mapping(problem, delta, backend, o) if coarse and mode == "frank-wolfe" \
        else None
    trace = Trace(t0=t_total)
    if start is not None:
        rows, cols, x, levels = start
    elif x0 is None:
        rows, cols, x = start_pairs(problem, delta) + (np.ones(problem.n),)
    else:
        rows, cols, x = start_from(problem, delta, x0)
    V = ActiveSet(problem, backend, rows, cols, x, trace.timers, o.neighbours, delta, o.rounds,
                  o.threads or available_cores())
    atoms = AtomSet(x, output_joint(problem.joint, rows, cols, x, problem.n)) \
        if o.variant == "pairwise" else None
    iterations = o.iterations
    if mode == "dual":  # a warm start needs no Frank-Wolfe pairs: one certified step only
        iterations = min(iterations, 0 if warm is not None else o.warmup)
    # the other modes finish on V: bursts leave it larger (their pairs join it), which
    # loosens the optimal mode's bounds at its dust
    runs = o.replace(iterations=iterations,
                     restricted_steps=o.restricted_steps if mode == "frank-wolfe" else 0,
                     polish_rounds=min(o.polish_rounds, fine_rounds or o.polish_rounds))
    setup = Setup(problem, delta, runs, max(o.tol, o.handover) if handover_first else o.tol,
                  on_iteration, warm, levels=levels)
    state = State(V, x.copy(), atoms)
    backend.start(problem.n, delta)
    try:
        with one_blas_thread():  # thousands of vector dot products; pricing has its threads
            run_frank_wolfe(setup, state, trace)
            finish(setup, state, trace)
    finally:
        V.close()
    return setup, state, trace


def _coarse_mapping(problem: PrivacyProblem, delta: float, backend: LPBackend,
                    o: SPPMSettings
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]] | None:
    """Frank-Wolfe's X0 from a coarse solve (:func:`.continuation.coarse_mapping`), mixed
    with the default X0 where it spends more than (1 - BUDGET_MARGIN) Δ; None when there
    is no coarse mapping or the mix cannot meet the budget."""
    out = continuation.coarse_mapping(
        problem, delta, lambda p, d: _coarse_solve(p, d, backend, o, "frank-wolfe"))
    if out is None:
        return None
    rows, cols, x, levels = out
    mixed = _within_budget(problem, delta, rows, cols, x)
    return None if mixed is None else (*mixed, levels)


def _within_budget(problem: PrivacyProblem, delta: float, rows: np.ndarray, cols: np.ndarray,
                   x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(rows, cols, x) mixed with the default X0 where it spends more than (1 -
    BUDGET_MARGIN) Δ; None when the mix cannot meet the budget."""
    x = normalise_columns(cols, x, problem.n)  # the coarse iterate's rounding drift
    d, p_b = problem.distortion, problem.p_b
    used = float(np.sum(x * p_b[cols] * d.pairs(rows, cols)))
    target = delta * (1 - BUDGET_MARGIN)
    if used > target:  # mix with the default X0, the least E[d] there is
        rows0, cols0 = start_pairs(problem, delta)
        least = float(p_b @ d.pairs(rows0, cols0))
        if least >= target:
            return None
        t = (used - target) / (used - least)
        n = problem.n
        keys, inverse = np.unique(np.concatenate([rows * n + cols, rows0 * n + cols0]),
                                  return_inverse=True)
        x = np.bincount(inverse, weights=np.concatenate([(1 - t) * x, np.full(n, t)]),
                        minlength=keys.size)
        rows, cols = keys // n, keys % n
    return rows, cols, x


def _coarse_solve(problem: PrivacyProblem, delta: float, backend: LPBackend,
                  o: SPPMSettings, fine_mode: str) -> continuation.CoarseSolve | None:
    """A coarse level of :mod:`.continuation` for a fine run in ``fine_mode``: its last
    dual point, pairs and mapping; None when a constant mapping is optimal there."""
    t = time.perf_counter()
    if problem.prior_mi_bits <= 0 or constant_output(problem, delta) is not None:
        return None
    # Frank-Wolfe's levels are Frank-Wolfe's; for the dual mode the coarsest level (no
    # coarser start) runs Frank-Wolfe below COARSEST_DUAL_FROM: the cold dual mode stalls
    # at small budgets (m = 8, 1e-3 d_const: gap 0.011 bits after 20 rounds, 15 s) where
    # Frank-Wolfe certifies in a second
    mode = fine_mode if fine_mode == "frank-wolfe" or continuation.applies(problem) \
        else resolve_mode("auto", problem, delta, COARSEST_DUAL_FROM)
    setup, state, trace = _solve_state(problem, delta, backend, o.replace(mode=mode), None,
                                       None, t)
    V = state.V
    if state.dual_point is not None:
        theta, nu = state.dual_point
    else:  # Frank-Wolfe certified before the dual rounds: its posterior and λ
        live = problem.p_a > 0
        S = problem.joint[live] / np.where(problem.p_b > 0, problem.p_b, 1.0)[None, :]
        theta, nu = posterior_logits(problem, V.rows, V.cols, state.x, S), -state.lam
    level = {"n": problem.n, "mode": mode, "iterations": state.steps,
             "objective_bits": trace.f[-1], "gap_bits": trace.gap[-1],
             "pairs": int(V.rows.size), "seconds": time.perf_counter() - t}
    return continuation.CoarseSolve(theta, nu, V.rows, V.cols, state.x,
                                    (setup.levels or []) + [level])


def _perfect_privacy_by_lp(setup: Setup, state: State, trace: Trace) -> None:
    """When nothing proves I > 0, perfect privacy may be affordable without a constant
    mapping (Frank-Wolfe only nears it): the exact LP of :mod:`.perfect` decides."""
    if state.best_lb > 0 or trace.f[-1] <= 0:
        return
    problem = setup.problem
    X0 = perfect_privacy_mapping(problem, setup.delta)
    if X0 is None:
        return
    Xs = sp.coo_array(X0)
    used = float(np.sum(Xs.data * problem.p_b[Xs.col] * problem.distortion.pairs(Xs.row, Xs.col)))
    V = state.V
    saved = V.rows, V.cols
    V.replace_pairs(Xs.row, Xs.col)
    f = state.leakage(Xs.data) / LN2
    if used <= setup.delta and f < trace.f[-1]:
        state.x, trace.stop = Xs.data, "perfect privacy (exact LP)"
        trace.checkpoint(f, f)
    else:
        V.replace_pairs(*saved)


def _constant_outcome(n: int, best: int, delta: float, settings: SPPMSettings,
                      t_total: float) -> SPPMOutcome:
    """Every input to output ``best``: I = 0, certified optimal without a step."""
    cert = Certificate.of(0.0, 0.0, "perfect privacy", converged=True, delta=delta,
                          trace=[[time.perf_counter() - t_total, 0.0, 0.0]])
    stats = _stats(cert, np.ones(n, dtype=np.int64), dict.fromkeys(TIMERS, 0.0), t_total,
                   iterations=0, restricted_iterations=0, lp_solves=0, lp_iterations=0,
                   full_scan_columns=0, neighbours=None, budget_dual=None, columns=n,
                   columns_generated=0, columns_pruned=0, mode=None, polish=None,
                   coarse_levels=None, variant=settings.variant, atoms=None,
                   objective_trace_bits=[0.0], gap_trace_bits=[0.0])
    return SPPMOutcome(np.full(n, best), np.arange(n), np.ones(n), stats)


def _outcome(setup: Setup, state: State, trace: Trace, t_total: float) -> SPPMOutcome:
    """Undo the rounding drift of incremental updates, re-check the budget, report."""
    V, n = state.V, state.V.n
    x = normalise_columns(V.cols, state.x, n)
    if not trace.stop.startswith("perfect privacy"):  # the first pairs are X0's
        x = pull_into_budget(V.a, x, V.start_values(x.size), setup.delta)
    # converged means the certificate meets tol (the optimal mode's Frank-Wolfe stage
    # stops at the looser handover gap, which is not convergence)
    converged = trace.gap[-1] < setup.tol or trace.stop.startswith("perfect privacy")
    cert = Certificate.of(trace.f[-1], state.best_lb / LN2, trace.stop, converged=converged,
                          trace=solver_trace(trace.t, trace.f, trace.gap), delta=setup.delta)
    stats = _stats(
        cert, np.bincount(V.cols[x > 0], minlength=n), trace.timers, t_total,
        iterations=state.steps, restricted_iterations=state.restricted_taken,
        lp_solves=V.lp_solves, lp_iterations=V.lp_iterations, full_scan_columns=V.full_scans,
        neighbours=None if V.line is not None else V.nb.k, budget_dual=state.lam,
        columns=int(V.rows.size), columns_generated=int(V.rows.size - V.x_start.size + V.pruned),
        columns_pruned=V.pruned, mode=setup.settings.mode, polish=trace.polish_log or None,
        coarse_levels=setup.levels,
        variant=setup.settings.variant,
        atoms=len(state.atoms) if state.atoms is not None else None,
        objective_trace_bits=trace.f, gap_trace_bits=trace.gap)
    return SPPMOutcome(V.rows, V.cols, x, stats)


def _stats(cert: Certificate, support: np.ndarray, timers: dict[str, float], t_total: float,
           *, iterations: int, restricted_iterations: int, lp_solves: int, lp_iterations: int,
           full_scan_columns: int, neighbours: int | None, budget_dual: float | None,
           columns: int, columns_generated: int, columns_pruned: int, mode: str | None,
           polish: list[dict] | None, coarse_levels: list[dict] | None, variant: str,
           atoms: int | None, objective_trace_bits: list[float],
           gap_trace_bits: list[float]) -> dict[str, Any]:
    """The one stats dict of a solve, which the plugin returns as is (its record's
    ``metrics``): the certificate under its own names (:class:`privbench.Certificate`:
    ``objective_bits``, ``lower_bits``, ``gap_bits``, ``stop_reason``, ``trace``,
    ``converged``, ``certified_delta``), the solver's counters (every keyword, required,
    so that every outcome has the same keys), the support sizes (``support`` = each
    input's number of outputs) and the times."""
    n = support.size
    return {
        "iterations": iterations, "restricted_iterations": restricted_iterations,
        "lp_solves": lp_solves, "lp_iterations": lp_iterations,
        "full_scan_columns": full_scan_columns, "neighbours": neighbours,
        "budget_dual": budget_dual, "columns": columns, "columns_generated": columns_generated,
        "columns_pruned": columns_pruned, "support_max": int(support.max()) if n else 0,
        "support_hist": {int(k): int(v) for k, v in enumerate(np.bincount(support)) if v},
        **{f"time_{k}_s": timers[k] for k in TIMERS},
        "mode": mode, "polish": polish, "coarse_levels": coarse_levels,
        "runtime_total_s": time.perf_counter() - t_total, "variant": variant, "atoms": atoms,
        "objective_trace_bits": objective_trace_bits, "gap_trace_bits": gap_trace_bits,
        **cert.to_stats(),
    }


def solver_trace(seconds: list[float], upper: list[float], gap: list[float]
                 ) -> list[list[float]]:
    """``[[seconds, upper_bits, lower_bits], ...]``, the shootout's common trace format.

    lower = the best certified bound so far (a running max of upper - gap and 0, so a
    round whose own bound is weaker never lowers it); entries with a non-finite objective (a
    dual round without a feasible primal point) are left out.
    """
    out: list[list[float]] = []
    best = 0.0  # I >= 0 is certified for free
    for t, f, g in zip(seconds, upper, gap, strict=False):
        if not (np.isfinite(f) and np.isfinite(g)):
            continue
        best = max(best, f - g)
        out.append([round(float(t), 6), float(f), float(best)])
    return out
