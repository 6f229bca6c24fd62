"""SPPM (Algorithm 1): Frank-Wolfe on I(A; B̂), each linear step by column generation.

Each iteration linearises I(A; B̂) at X (costs from :mod:`.leakage`), solves the
restricted master LP (4) on the active pairs V with an LP backend, prices every
(i, j) in blocks (:mod:`.pricing`) and adds the most violated pair per input j until
none prices out, so X' is optimal over all n² pairs; then it steps to the exact
minimiser on the segment [X, X'] (:mod:`.linesearch`).

The certificate: for the λ of the final master, ``λ Δ + Σ_j min_i (c_ij - λ a_ij)``
is a lower bound on the linear program over all n² pairs, which is a lower bound on
min I (see :mod:`.leakage`). The best bound seen so far, subtracted from I(X), is
``gap_bits``; it is valid however loosely the LP solver converged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbench import LPBackend, PrivacyProblem, ValidationError

from .atoms import AtomSet
from .feasible import max_feasible_step, normalise_columns, pull_into_budget
from .leakage import (
    POSTERIOR_FLOOR,
    decoder_logratios,
    leakage_nats,
    limit_costs,
    output_joint,
    pair_costs,
)
from .linesearch import exact_line_search
from .pricing import BLOCK_ENTRIES, price

LN2 = math.log(2.0)
#: a pair enters the master when its reduced cost is below -RC_TOL (LP dual tolerance)
RC_TOL = 1e-10


@dataclass
class SPPMOutcome:
    """Final active pairs and mapping values, and the solver statistics."""

    rows: np.ndarray
    cols: np.ndarray
    x: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)


def _row_budget_costs(problem: PrivacyProblem) -> np.ndarray:
    """E[d] of the constant mapping to each output i: Σ_j p(b_j) d(b̂_i, b_j), in blocks."""
    n = problem.n
    step = max(1, min(n, BLOCK_ENTRIES // max(n, 1)))
    out = np.empty(n)
    cols = np.arange(n)
    for s in range(0, n, step):
        rows = np.arange(s, min(n, s + step))
        out[rows] = problem.distortion.block(rows, cols) @ problem.p_b
    return out


def start_pairs(problem: PrivacyProblem, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """X0: identity when it meets the budget, else each input to its least-distortion output."""
    n = problem.n
    idx = np.arange(n)
    diag = problem.distortion.diagonal()
    if float(problem.p_b @ diag) <= delta:
        return idx.copy(), idx.copy()
    step = max(1, min(n, BLOCK_ENTRIES // max(n, 1)))
    rows = np.empty(n, dtype=np.int64)
    for s in range(0, n, step):
        J = np.arange(s, min(n, s + step))
        rows[J] = np.argmin(problem.distortion.block(idx, J), axis=0)
    rows = np.where(diag <= problem.distortion.pairs(rows, idx), idx, rows)
    least = float(problem.p_b @ problem.distortion.pairs(rows, idx))
    if least > delta:
        raise ValidationError(
            f"sppm: no mapping meets the budget: the least possible E[d] is {least:.6g} "
            f"> delta = {delta:g}")
    return rows, idx.copy()


VARIANTS = ("pairwise", "classic")


def _corrective_steps(atoms: AtomSet, x: np.ndarray, Q: np.ndarray, p_a: np.ndarray,
                      eta: float, steps: int, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise steps among the kept vertices only (no LP), while they gain > threshold."""
    for _ in range(steps):
        if len(atoms) < 2:
            break
        L, _ = decoder_logratios(Q, p_a, eta)
        sc = atoms.scores(L)
        s, v = int(np.argmin(sc)), int(np.argmax(sc))
        if sc[v] - sc[s] <= threshold:
            break
        dQ = atoms.Qs[s] - atoms.Qs[v]
        gamma, _ = exact_line_search(Q, Q + dQ, p_a, atoms.w[v])
        if gamma <= 0:
            break
        x = x + gamma * (atoms.x_of(s, x.size) - atoms.x_of(v, x.size))
        Q = np.maximum(Q + gamma * dQ, 0.0)
        atoms.move(v, s, gamma)
    return x, Q


def solve_sppm(problem: PrivacyProblem, delta: float, backend: LPBackend, *,
               iterations: int = 100, tol: float = 1e-4, eta: float = POSTERIOR_FLOOR,
               variant: str = "pairwise", corrective_steps: int = 10,
               on_iteration: Callable[[dict[str, Any]], None] | None = None) -> SPPMOutcome:
    """Run SPPM; stop after ``iterations`` steps or once the certified gap < ``tol`` bits.

    ``variant="classic"`` is the paper's Algorithm 1 (step toward the LP vertex);
    ``"pairwise"`` moves weight from the worst kept vertex to the new one and then
    takes up to ``corrective_steps`` pairwise steps among kept vertices (same
    certificate, far fewer iterations near the optimum).
    """
    if variant not in VARIANTS:
        raise ValidationError(f"sppm: variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    n = problem.n
    P = problem.joint
    p_a, p_b = problem.p_a, problem.p_b
    t_total = time.perf_counter()
    timers = {"pricing": 0.0, "lp": 0.0, "linesearch": 0.0}

    # perfect privacy is affordable: a constant mapping has I = 0, which is optimal
    if problem.prior_mi_bits > 0:
        row_cost = _row_budget_costs(problem)
        best = int(np.argmin(row_cost))
        if row_cost[best] <= delta:
            cols = np.arange(n)
            return SPPMOutcome(np.full(n, best), cols, np.ones(n), {
                "iterations": 0, "lp_solves": 0, "gap_bits": 0.0, "lower_bound_bits": 0.0,
                "objective_bits": 0.0, "converged": True, "stop_reason": "perfect privacy",
                "columns": n, "columns_generated": 0, "support_max": 1,
                "runtime_total_s": time.perf_counter() - t_total})

    rows, cols = start_pairs(problem, delta)
    a = p_b[cols] * problem.distortion.pairs(rows, cols)
    x = np.ones(n)
    keys = set((rows * n + cols).tolist())
    kappa = limit_costs(P, p_a, p_b)
    best_lb = 0.0
    lp_solves = lp_iters = 0
    trace_f: list[float] = []
    trace_gap: list[float] = []
    stop = "iterations"
    steps = 0
    atoms = AtomSet(x, output_joint(P, rows, cols, x, n)) if variant == "pairwise" else None
    backend.start(n, delta)
    try:
        for it in range(iterations + 1):
            Q = output_joint(P, rows, cols, x, n)
            f = leakage_nats(Q, p_a)
            L, empty = decoder_logratios(Q, p_a, eta)
            c = pair_costs(L, P, rows, cols, empty, kappa)
            if it == 0:
                backend.add_columns(cols, c, a)
            else:
                backend.set_costs(c)
            while True:  # column generation (Algorithm 2)
                t = time.perf_counter()
                sol = backend.solve()
                timers["lp"] += time.perf_counter() - t
                lp_solves += 1
                lp_iters += sol.iterations
                if sol.status != "optimal":
                    raise RuntimeError(f"sppm: LP backend {backend.name!r} returned "
                                       f"{sol.status}: {sol.message}")
                lam = min(float(sol.budget_dual), 0.0)
                t = time.perf_counter()
                best_i, best_v = price(L, P, p_b, problem.distortion, lam, empty, kappa)
                timers["pricing"] += time.perf_counter() - t
                cand = np.flatnonzero(best_v - sol.simplex_duals < -RC_TOL)
                new_keys = best_i[cand] * n + cand
                fresh = np.array([k not in keys for k in new_keys.tolist()], dtype=bool)
                if not fresh.any():
                    break
                ni, nj = best_i[cand[fresh]], cand[fresh]
                keys.update(new_keys[fresh].tolist())
                na = p_b[nj] * problem.distortion.pairs(ni, nj)
                nc = pair_costs(L, P, ni, nj, empty, kappa)
                backend.add_columns(nj, nc, na)
                rows = np.concatenate([rows, ni])
                cols = np.concatenate([cols, nj])
                a = np.concatenate([a, na])
                x = np.concatenate([x, np.zeros(ni.size)])
            if empty.any():  # limit costs are not a decoder: certify with r = p(a) there
                t = time.perf_counter()
                _, best_v = price(L, P, p_b, problem.distortion, lam, empty, None)
                timers["pricing"] += time.perf_counter() - t
            best_lb = max(best_lb, lam * delta + float(best_v.sum()))
            gap = max(f - best_lb, 0.0)
            trace_f.append(f / LN2)
            trace_gap.append(gap / LN2)
            if on_iteration is not None:
                on_iteration({"iteration": it, "objective_bits": f / LN2, "gap_bits": gap / LN2,
                              "columns": int(rows.size)})
            if gap / LN2 < tol:
                stop = "tolerance"
                break
            if it == iterations:
                break
            t = time.perf_counter()
            x_new = normalise_columns(cols, sol.x, n)
            x_start = np.zeros_like(x_new)
            x_start[:n] = 1.0
            x_new = pull_into_budget(a, x_new, x_start, delta)
            Q_new = output_joint(P, rows, cols, x_new, n)
            if atoms is None:
                gamma_max = max_feasible_step(a, x, x_new, delta)
                gamma, _ = exact_line_search(Q, Q_new, p_a, gamma_max)
                moved = gamma > 0
                x = (1.0 - gamma) * x + gamma * x_new
            else:
                s = atoms.add(x_new, Q_new)
                sc = atoms.scores(L)
                sc[s] = -np.inf
                v = int(np.argmax(sc))
                dQ = Q_new - atoms.Qs[v]
                gamma, _ = exact_line_search(Q, Q + dQ, p_a, atoms.w[v])
                moved = gamma > 0
                if moved:
                    x = x + gamma * (atoms.x_of(s, x.size) - atoms.x_of(v, x.size))
                    Q = np.maximum(Q + gamma * dQ, 0.0)
                    atoms.move(v, s, gamma)
                else:  # fall back to a classic step toward the vertex
                    gamma, _ = exact_line_search(Q, Q_new, p_a, 1.0)
                    moved = gamma > 0
                    if moved:
                        x = (1.0 - gamma) * x + gamma * atoms.x_of(s, x.size)
                        Q = np.maximum((1.0 - gamma) * Q + gamma * Q_new, 0.0)
                        atoms.toward(s, gamma)
                    else:
                        atoms.move(s, v, 0.0)  # the new vertex did not help: forget it
                x, Q = _corrective_steps(atoms, x, Q, p_a, eta, corrective_steps,
                                         0.1 * gap)
            timers["linesearch"] += time.perf_counter() - t
            if not moved:
                stop = "no descent step (numerically converged)"
                break
            steps += 1
    finally:
        backend.close()

    # undo rounding drift of the incremental updates, then re-check the budget exactly
    x = normalise_columns(cols, x, n)
    x_start = np.zeros_like(x)
    x_start[:n] = 1.0
    x = pull_into_budget(a, x, x_start, delta)
    support = np.bincount(cols[x > 0], minlength=n)
    hist = np.bincount(support)
    stats: dict[str, Any] = {
        "iterations": steps,
        "lp_solves": lp_solves,
        "lp_iterations": lp_iters,
        "gap_bits": trace_gap[-1],
        "lower_bound_bits": best_lb / LN2,
        "objective_bits": trace_f[-1],
        "converged": stop == "tolerance",
        "stop_reason": stop,
        "columns": int(rows.size),
        "columns_generated": int(rows.size - n),
        "support_max": int(support.max()) if n else 0,
        "support_hist": {int(k): int(v) for k, v in enumerate(hist) if v},
        "time_pricing_s": timers["pricing"],
        "time_lp_s": timers["lp"],
        "time_linesearch_s": timers["linesearch"],
        "runtime_total_s": time.perf_counter() - t_total,
        "variant": variant,
        "atoms": len(atoms) if atoms is not None else None,
        "objective_trace_bits": trace_f,
        "gap_trace_bits": trace_gap,
    }
    return SPPMOutcome(rows, cols, x, stats)
