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
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from privbench import LPBackend, LPSolution, PrivacyProblem, ValidationError, validate_mapping
from privbench.protocol.feasibility import normalise_columns, pull_into_budget

from .atoms import AtomSet
from .hamming_pricing import HammingPricer
from .leakage import (
    POSTERIOR_FLOOR,
    decoder_logratios,
    leakage_nats,
    limit_costs,
    output_joint,
    pair_costs,
)
from .line_pricing import LinePricer
from .linesearch import exact_line_search
from .perfect import perfect_privacy_mapping
from .polish import polish
from .pricing import BLOCK_ENTRIES, Balls, Neighbours, price_exact, price_neighbours
from .smoothed_dual import DualRound, dual_rounds

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


def _row_budget_costs(problem: PrivacyProblem, rows: np.ndarray | None = None) -> np.ndarray:
    """E[d] of the constant mapping to each output i: Σ_j p(b_j) d(b̂_i, b_j), in blocks.

    For squared l2 on feature vectors it is ``||x_i - μ||² + Σ_j p_j ||x_j - μ||²`` (μ the
    p-weighted mean): O(n k) instead of O(n²), up to rounding; callers that act on a value
    near Δ recompute that row exactly (``rows``).
    """
    n = problem.n
    dist = problem.distortion
    if rows is not None:
        return dist.block(rows, np.arange(n)) @ problem.p_b
    if getattr(dist, "metric", None) == "sq_l2":
        centred = dist.points - problem.p_b @ dist.points
        sq = (centred * centred).sum(axis=1)
        return sq + problem.p_b @ sq
    step = max(1, min(n, BLOCK_ENTRIES // max(n, 1)))
    out = np.empty(n)
    cols = np.arange(n)
    for s in range(0, n, step):
        rows = np.arange(s, min(n, s + step))
        out[rows] = problem.distortion.block(rows, cols) @ problem.p_b
    return out


def start_from(problem: PrivacyProblem, delta: float, x0: Any
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A user's X0 (dense or scipy sparse, n x n) as pairs (rows, cols, x), validated
    with the same checks the runner applies to every returned mapping."""
    try:
        X = sp.coo_array(validate_mapping(x0, problem.n))
    except ValidationError as exc:
        raise ValidationError(f"sppm: x0 is not a valid mapping: {exc}") from None
    rows, cols, x = X.row.astype(np.int64), X.col.astype(np.int64), X.data
    used = float(np.sum(x * problem.p_b[cols] * problem.distortion.pairs(rows, cols)))
    if used > delta:
        raise ValidationError(f"sppm: x0 does not meet the budget: E[d] = {used:.6g} "
                              f"> delta = {delta:g}")
    return rows, cols, x


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


@dataclass
class LinearStep:
    """One linear minimisation: the master solution, its λ, the priced ``m_j``.

    ``certified``: ``m_j`` is the exact minimum over all n outputs, so
    ``λ Δ + Σ m_j`` bounds the optimum. ``complete``: nothing priced out, so the
    master solution is the LP optimum over all n² pairs.
    """

    sol: LPSolution
    lam: float
    best_v: np.ndarray
    added: int
    certified: bool
    complete: bool

    def bound(self, delta: float) -> float:
        return self.lam * delta + float(self.best_v.sum())


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


VARIANTS = ("classic", "pairwise")
MODES = ("frank-wolfe", "optimal", "dual")
#: mapping entries below this are solver dust: the optimal mode also tries them at zero
POLISH_CLEAN = 1e-9
#: the optimal mode's solver settings, in order (tight tolerances first)
POLISH_SETTINGS = (True, False)
#: pairwise FW keeps at most this many vertices (each O(|V|)); then it restarts from X
MAX_ATOMS = 40


class ActiveSet:
    """The active pairs V with their budget coefficients, mirrored in the LP backend."""

    def __init__(self, problem: PrivacyProblem, backend: LPBackend, rows: np.ndarray,
                 cols: np.ndarray, timers: dict[str, float], neighbours: int,
                 delta: float, rounds: int = 0, threads: int = 1) -> None:
        self.problem = problem
        self.delta = delta
        self.rounds = rounds
        self.pruned = 0
        self.backend = backend
        self.n = problem.n
        self.rows = rows
        self.cols = cols
        self.a = problem.p_b[cols] * problem.distortion.pairs(rows, cols)
        self.keys = set((rows * self.n + cols).tolist())
        #: X0's values on the first pairs (a mapping within the budget)
        self.x_start = np.ones(rows.size)
        self.timers = timers
        self.lp_solves = 0
        self.lp_iterations = 0
        self._in_backend = 0
        self.full_scans = 0
        t = time.perf_counter()
        #: exact compiled pricing (a line, or Hamming on coded profiles) is cheap enough for
        #: every round; other distortions price neighbour lists and certify with bounds
        dist = problem.distortion
        self.line: LinePricer | HammingPricer | None = None
        if LinePricer.supports(dist):
            self.line = LinePricer(dist.points[:, 0], dist.metric, threads=threads)
        elif HammingPricer.supports(dist):
            self.line = HammingPricer(dist.points, threads=threads)
        if self.line is None:
            self.nb = Neighbours(problem.distortion, neighbours)
            self.balls = Balls(problem.distortion)
        timers["pricing"] += time.perf_counter() - t

    def _fresh(self, best_i: np.ndarray, best_v: np.ndarray, mu: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Inputs whose best pair prices out and is not in V yet."""
        cand = np.flatnonzero(best_v - mu < -RC_TOL)
        new_keys = best_i[cand] * self.n + cand
        fresh = np.array([k not in self.keys for k in new_keys.tolist()], dtype=bool)
        return fresh, new_keys, cand

    def linear_step(self, L: np.ndarray, empty: np.ndarray, empty_cost: np.ndarray | None,
                    exact: bool = True, costs_set: bool = False, rounds: int | None = None
                    ) -> LinearStep:
        """Minimise the linearisation by column generation (Algorithm 2).

        With ``exact`` the last round scans all n² pairs (:func:`price_exact`), so the
        LP optimum is over the full set and ``m_j`` is exact; without it only the
        neighbour lists are priced (cheap; ``m_j`` is then an upper bound). On a line
        every round is exact (:mod:`.line_pricing`).

        ``rounds`` (default: the active set's) caps the master solves: after that many,
        the pairs that price out join V for the next iteration and the master solution
        over the old V is returned (an inexact but certified step; 0 = no cap).
        """
        problem, P = self.problem, self.problem.joint
        cap = self.rounds if rounds is None else rounds
        if not costs_set:
            c = pair_costs(L, P, self.rows, self.cols, empty, empty_cost)
            if self._in_backend == 0:
                self.backend.add_columns(self.cols, c, self.a)
            else:
                self.backend.set_costs(c)
        self._in_backend = self.rows.size
        added = 0
        solves = 0
        while True:
            t = time.perf_counter()
            sol = self.backend.solve()
            self.timers["lp"] += time.perf_counter() - t
            self.lp_solves += 1
            solves += 1
            self.lp_iterations += sol.iterations
            if sol.status != "optimal":
                raise RuntimeError(f"sppm: LP backend {self.backend.name!r} returned "
                                   f"{sol.status}: {sol.message}")
            lam = min(float(sol.budget_dual), 0.0)
            t = time.perf_counter()
            if self.line is not None:
                best_i, best_v = self.price_all(L, lam, empty, empty_cost)
                certified = True
                fresh, new_keys, cand = self._fresh(best_i, best_v, sol.simplex_duals)
            else:
                # cheap rounds on the neighbour lists; an exact scan once they are exhausted
                best_i, best_v = price_neighbours(L, P, problem.p_b, self.nb, lam, empty,
                                                  empty_cost)
                fresh, new_keys, cand = self._fresh(best_i, best_v, sol.simplex_duals)
                certified = False
                if exact and not fresh.any():
                    best_i, best_v, scanned = price_exact(L, P, problem.p_b, problem.distortion,
                                                          self.nb, lam, empty, empty_cost,
                                                          (best_i, best_v), self.balls)
                    self.full_scans += scanned
                    certified = True
                    fresh, new_keys, cand = self._fresh(best_i, best_v, sol.simplex_duals)
            self.timers["pricing"] += time.perf_counter() - t
            if not fresh.any():
                return LinearStep(sol, lam, best_v, added, certified, complete=certified)
            more = self._add(L, empty, empty_cost, best_i, cand[fresh], new_keys[fresh])
            added += more
            if cap and solves >= cap:
                x = np.concatenate([sol.x, np.zeros(self.rows.size - sol.x.size)])
                return LinearStep(replace(sol, x=x), lam, best_v, added, certified,
                                  complete=False)

    def price_all(self, L: np.ndarray, lam: float, empty: np.ndarray | None = None,
                  empty_cost: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact (argmin_i, min_i) of c_ij - λ a_ij over all n outputs, for every input j."""
        problem = self.problem
        if empty is None:
            empty = np.zeros(self.n, dtype=bool)
        if self.line is not None:
            self.full_scans += self.n
            return self.line.price(L, problem.joint, problem.p_b, lam, empty, empty_cost)
        best_i, best_v, scanned = price_exact(L, problem.joint, problem.p_b, problem.distortion,
                                              self.nb, lam, empty, empty_cost, None, self.balls)
        self.full_scans += scanned
        return best_i, best_v

    def close(self) -> None:
        self.backend.close()
        if self.line is not None:
            self.line.close()

    def prune(self, keep: np.ndarray) -> np.ndarray:
        """Drop the pairs where ``keep`` is False (never X0's) and rebuild the master.

        The backend is restarted with the kept columns (the LP protocol only grows
        columns); returns the indices of the kept pairs, to re-index x with.
        """
        keep = keep.copy()
        keep[: self.x_start.size] = True
        idx = np.flatnonzero(keep)
        self.pruned += self.rows.size - idx.size
        self.rows, self.cols, self.a = self.rows[idx], self.cols[idx], self.a[idx]
        self.keys = set((self.rows * self.n + self.cols).tolist())
        self.backend.close()
        self.backend.start(self.n, self.delta)
        self._in_backend = 0  # the next linear step adds every column with its cost
        return idx

    def _add(self, L: np.ndarray, empty: np.ndarray, empty_cost: np.ndarray | None,
             best_i: np.ndarray, nj: np.ndarray, keys: np.ndarray) -> int:
        """Append pairs (best_i[j], j) for j in ``nj`` to V and to the master."""
        problem = self.problem
        ni = best_i[nj]
        self.keys.update(keys.tolist())
        na = problem.p_b[nj] * problem.distortion.pairs(ni, nj)
        self.backend.add_columns(nj, pair_costs(L, problem.joint, ni, nj, empty, empty_cost), na)
        self.rows = np.concatenate([self.rows, ni])
        self.cols = np.concatenate([self.cols, nj])
        self.a = np.concatenate([self.a, na])
        self._in_backend = self.rows.size
        return int(ni.size)


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
        dQ = atoms.Q(s) - atoms.Q(v)
        gamma, _ = exact_line_search(Q, Q + dQ, p_a, atoms.w[v])
        if gamma <= 0:
            break
        x = x + gamma * (atoms.x_of(s, x.size) - atoms.x_of(v, x.size))
        Q = np.maximum(Q + gamma * dQ, 0.0)
        atoms.move(v, s, gamma)
    return x, Q


def solve_sppm(problem: PrivacyProblem, delta: float, backend: LPBackend, *,
               iterations: int = 100, tol: float = 1e-4, eta: float = POSTERIOR_FLOOR,
               variant: str = "classic", corrective_steps: int = 10, neighbours: int = 128,
               exact_every: int = 10, rounds: int = 1, prune_after: int = 0,
               threads: int = 0, mode: str = "frank-wolfe", polish_rounds: int = 20,
               handover: float = 1e-3, warmup: int = 100,
               x0: Any = None,
               on_iteration: Callable[[dict[str, Any]], None] | None = None) -> SPPMOutcome:
    """Run SPPM; stop after ``iterations`` steps or once the certified gap < ``tol`` bits.

    ``variant="classic"`` is the paper's Algorithm 1 (step toward the LP vertex);
    ``"pairwise"`` moves weight from the worst kept vertex to the new one and then
    takes up to ``corrective_steps`` pairwise steps among kept vertices (same
    certificate, fewer iterations near the optimum, more work per iteration).
    Pricing scans all n² pairs (exactly, see :mod:`.pricing`) every ``exact_every``
    iterations, at the last one, and whenever the neighbour-priced bound suggests the
    tolerance is met; other iterations price the ``neighbours`` nearest outputs only
    (an inexact but cheap linear step). ``gap_bits`` only ever uses exact bounds.

    Outputs with no mass are priced with the decoder r = p(a) (cost 0), which keeps
    the certificate valid and lets the step pool several inputs into an unused
    output; if that step does not descend, the step is retried with the limit
    gradient κ there (:mod:`.leakage`).
    """
    if variant not in VARIANTS:
        raise ValidationError(f"sppm: variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    if mode not in MODES:
        raise ValidationError(f"sppm: mode must be one of {', '.join(MODES)}; got {mode!r}")
    # the optimal mode hands over to exact restricted solves once FW has found the support;
    # the dual mode after ``warmup`` iterations (FW only gathers pairs for V there)
    fw_tol = max(tol, handover) if mode == "optimal" else tol
    if mode == "dual":
        iterations = min(iterations, warmup)
    n = problem.n
    P = problem.joint
    p_a = problem.p_a
    t_total = time.perf_counter()
    timers = {"pricing": 0.0, "lp": 0.0, "linesearch": 0.0, "polish": 0.0}
    polish_log: list[dict] = []

    # perfect privacy is affordable: a constant mapping has I = 0, which is optimal
    if problem.prior_mi_bits > 0:
        row_cost = _row_budget_costs(problem)
        best = int(np.argmin(row_cost))
        # the exact row sum may differ from Δ computed in another order by an ulp or two:
        # a relative 1e-12 stays far inside the runner's budget tolerance (1e-9)
        if row_cost[best] <= delta * (1 + 1e-9) \
                and _row_budget_costs(problem, np.array([best]))[0] <= delta * (1 + 1e-12):
            cols = np.arange(n)
            return SPPMOutcome(np.full(n, best), cols, np.ones(n), {
                "iterations": 0, "lp_solves": 0, "gap_bits": 0.0, "lower_bound_bits": 0.0,
                "objective_bits": 0.0, "converged": True, "stop_reason": "perfect privacy",
                "columns": n, "columns_generated": 0, "support_max": 1, "support_hist": {1: n},
                "lp_iterations": 0, "time_pricing_s": 0.0, "time_lp_s": 0.0,
                "time_linesearch_s": 0.0, "variant": variant, "atoms": None,
                "objective_trace_bits": [0.0], "gap_trace_bits": [0.0],
                "runtime_total_s": time.perf_counter() - t_total})

    if x0 is None:
        rows, cols = start_pairs(problem, delta)
        x = np.ones(n)
    else:
        rows, cols, x = start_from(problem, delta, x0)
    V = ActiveSet(problem, backend, rows, cols, timers, neighbours, delta, rounds,
                  threads or available_cores())
    V.x_start = x.copy()  # the first pairs of V hold X0, which meets the budget
    kappa = limit_costs(P, p_a, problem.p_b)
    best_lb = 0.0
    lam = 0.0
    trace_f: list[float] = []
    trace_gap: list[float] = []
    stop = "iterations"
    steps = 0
    atoms = AtomSet(x, output_joint(P, rows, cols, x, n)) if variant == "pairwise" else None
    backend.start(n, delta)
    try:
        last_used = np.zeros(x.size, dtype=np.int64)
        for it in range(iterations + 1):
            if prune_after and it % prune_after == 0 and it:
                keep = (x > 0) | (it - last_used < prune_after)
                if keep.mean() < 0.8:  # worth a master rebuild
                    kept = V.prune(keep)
                    x, last_used = x[kept], last_used[kept]
                    if atoms is not None:
                        atoms.collapse(x, output_joint(P, V.rows, V.cols, x, n))
            Q = output_joint(P, V.rows, V.cols, x, n)
            f = leakage_nats(Q, p_a)
            L, empty = decoder_logratios(Q, p_a, eta)
            exact = V.line is not None or exact_every <= 1 or it % exact_every == 0 \
                or it == iterations
            step = V.linear_step(L, empty, None, exact)
            if not step.certified and (f - step.bound(delta)) / LN2 < tol:
                # the neighbour-priced bound says we may be done: certify over all pairs
                step = V.linear_step(L, empty, None, True, costs_set=True)
            x = np.concatenate([x, np.zeros(V.rows.size - x.size)])
            last_used = np.concatenate([last_used, np.full(V.rows.size - last_used.size, it)])
            last_used[step.sol.x > 0] = it
            lam = step.lam
            if step.certified:
                best_lb = max(best_lb, step.bound(delta))
            gap = max(f - best_lb, 0.0)
            trace_f.append(f / LN2)
            trace_gap.append(gap / LN2)
            if on_iteration is not None:
                on_iteration({"iteration": it, "objective_bits": f / LN2, "gap_bits": gap / LN2,
                              "columns": int(V.rows.size)})
            if gap / LN2 < fw_tol:
                stop = "tolerance"
                break
            if it == iterations:
                break
            t = time.perf_counter()
            moved, x = _step(V, atoms, step.sol, x, Q, L, gap, delta, eta, corrective_steps)
            timers["linesearch"] += time.perf_counter() - t
            if not moved and not step.complete:  # an inexact step may miss: the full LP
                step = V.linear_step(L, empty, None, True, costs_set=True, rounds=0)
                x = np.concatenate([x, np.zeros(V.rows.size - x.size)])
                best_lb = max(best_lb, step.bound(delta))
                trace_gap[-1] = max(f - best_lb, 0.0) / LN2
                t = time.perf_counter()
                moved, x = _step(V, atoms, step.sol, x, Q, L, gap, delta, eta, corrective_steps)
                timers["linesearch"] += time.perf_counter() - t
            if not moved and empty.any():  # retry with the limit gradient at empty outputs
                step = V.linear_step(L, empty, kappa, rounds=0)
                x = np.concatenate([x, np.zeros(V.rows.size - x.size)])
                t = time.perf_counter()
                moved, x = _step(V, atoms, step.sol, x, Q, L, gap, delta, eta, corrective_steps)
                timers["linesearch"] += time.perf_counter() - t
            if not moved:
                stop = "no descent step (numerically converged)"
                break
            steps += 1
        if mode == "optimal" and trace_gap[-1] >= tol and best_lb > 0:
            x, best_lb, stop = _polish_rounds(V, x, best_lb, delta, eta, tol, polish_rounds,
                                              polish_log, trace_f, trace_gap)
        if mode == "dual" and trace_gap[-1] >= tol:
            x, best_lb, stop = _dual_phase(V, x, lam, best_lb, delta, tol, polish_rounds,
                                           polish_log, trace_f, trace_gap)
    finally:
        V.close()

    if best_lb <= 0 and trace_f[-1] > 0:
        # nothing proves I > 0: perfect privacy may be affordable, and FW only nears it
        X0 = perfect_privacy_mapping(problem, delta)
        if X0 is not None:
            Xs = sp.coo_array(X0)
            used = float(np.sum(Xs.data * problem.p_b[Xs.col]
                                * problem.distortion.pairs(Xs.row, Xs.col)))
            if used <= delta and leakage_nats(output_joint(P, Xs.row, Xs.col, Xs.data, n),
                                              p_a) / LN2 < trace_f[-1]:
                V.rows, V.cols, x, V.a = Xs.row.astype(np.int64), Xs.col.astype(np.int64), \
                    Xs.data, problem.p_b[Xs.col] * problem.distortion.pairs(Xs.row, Xs.col)
                stop = "perfect privacy (exact LP)"
                trace_f.append(leakage_nats(output_joint(P, V.rows, V.cols, x, n), p_a) / LN2)
                trace_gap.append(trace_f[-1])
    # undo rounding drift of the incremental updates, then re-check the budget exactly
    x = normalise_columns(V.cols, x, n)
    if not stop.startswith("perfect privacy"):  # the first pairs are X0's
        x_start = np.zeros_like(x)
        x_start[:V.x_start.size] = V.x_start
        x = pull_into_budget(V.a, x, x_start, delta)
    support = np.bincount(V.cols[x > 0], minlength=n)
    hist = np.bincount(support)
    stats: dict[str, Any] = {
        "iterations": steps,
        "lp_solves": V.lp_solves,
        "lp_iterations": V.lp_iterations,
        "full_scan_columns": V.full_scans,
        "neighbours": None if V.line is not None else V.nb.k,
        "gap_bits": trace_gap[-1],
        "lower_bound_bits": best_lb / LN2,
        "budget_dual": lam,
        "objective_bits": trace_f[-1],
        "converged": stop.startswith("tolerance") or stop.startswith("perfect privacy"),
        "stop_reason": stop,
        "columns": int(V.rows.size),
        "columns_generated": int(V.rows.size - V.x_start.size + V.pruned),
        "columns_pruned": V.pruned,
        "support_max": int(support.max()) if n else 0,
        "support_hist": {int(k): int(v) for k, v in enumerate(hist) if v},
        "time_pricing_s": timers["pricing"],
        "time_lp_s": timers["lp"],
        "time_linesearch_s": timers["linesearch"],
        "time_polish_s": timers["polish"],
        "mode": mode,
        "polish": polish_log or None,
        "runtime_total_s": time.perf_counter() - t_total,
        "variant": variant,
        "atoms": len(atoms) if atoms is not None else None,
        "objective_trace_bits": trace_f,
        "gap_trace_bits": trace_gap,
    }
    return SPPMOutcome(V.rows, V.cols, x, stats)


def _dual_phase(V: ActiveSet, x: np.ndarray, lam: float, best_lb: float, delta: float,
                tol: float, rounds: int, log: list[dict], trace_f: list[float],
                trace_gap: list[float]) -> tuple[np.ndarray, float, str]:
    """SPPM's ``dual`` mode after the Frank-Wolfe warm-up (:mod:`.smoothed_dual`).

    V takes the dual phase's pairs, reordered so that X0's pairs stay first (the budget
    repair of the epilogue mixes with X0 there).
    """
    t = time.perf_counter()
    priced = 0.0

    def price(L: np.ndarray, lam_: float) -> tuple[np.ndarray, np.ndarray]:
        nonlocal priced
        t_price = time.perf_counter()
        out = V.price_all(L, lam_)
        priced += time.perf_counter() - t_price
        return out

    def on_round(record: DualRound) -> None:
        trace_f.append(record.upper_bits)
        trace_gap.append(max(record.upper_bits - max(record.lower_bits, best_lb / LN2), 0.0))

    rows, cols, xd, lb, stop = dual_rounds(V.problem, delta, V.rows, V.cols, x, -lam, price,
                                           tol, rounds, log, on_round)
    n = V.n
    x0_keys = V.rows[: V.x_start.size] * n + V.cols[: V.x_start.size]
    first = np.isin(rows * n + cols, x0_keys)
    order = np.concatenate([np.flatnonzero(first), np.flatnonzero(~first)])
    # X0's pairs in their original order, then the rest
    lead = order[: int(first.sum())]
    pos = dict(zip((rows[lead] * n + cols[lead]).tolist(), lead.tolist(), strict=True))
    order[: lead.size] = [pos[k] for k in x0_keys.tolist()]
    V.rows, V.cols, xd = rows[order], cols[order], xd[order]
    V.a = V.problem.p_b[V.cols] * V.problem.distortion.pairs(V.rows, V.cols)
    V.timers["pricing"] += priced
    V.timers["polish"] += time.perf_counter() - t - priced
    best_lb = max(best_lb, lb)
    trace_gap[-1] = max(trace_f[-1] - best_lb / LN2, 0.0) if trace_f else trace_gap[-1]
    return xd, best_lb, stop


def _polish_rounds(V: ActiveSet, x: np.ndarray, best_lb: float, delta: float, eta: float,
                   tol: float, rounds: int, log: list[dict], trace_f: list[float],
                   trace_gap: list[float]) -> tuple[np.ndarray, float, str]:
    """SPPM's ``optimal`` mode: exact solves on V alternated with exact pricing (:mod:`.polish`).

    Each round solves problem (1) on V and repairs the point to exact feasibility, as
    is and with entries below ``POLISH_CLEAN`` zeroed (an interior-point solution puts
    dust everywhere, whose odd posteriors loosen the bound); at each candidate it
    prices all n² pairs (a certified bound; pairs that price out join V). It keeps the
    candidate with the least I and the best bound, and stops when the gap is below
    ``tol``, when no pair enters V after the solver ran with each of ``POLISH_SETTINGS``
    (tight tolerances, then the defaults: interior points near the optimum differ, and
    so do their bounds), or after ``rounds`` rounds.
    """
    problem, n, P, p_a = V.problem, V.n, V.problem.joint, V.problem.p_a

    def leak(v: np.ndarray) -> float:
        return leakage_nats(output_joint(P, V.rows, V.cols, v, n), p_a)

    def pad(v: np.ndarray) -> np.ndarray:  # V only grows: new pairs start at zero
        return np.concatenate([v, np.zeros(V.rows.size - v.size)])

    settings = iter(POLISH_SETTINGS)
    tight = next(settings)
    for _ in range(rounds):
        t = time.perf_counter()
        xp, record = polish(problem, V.rows, V.cols, V.a, delta, tight=tight)
        V.timers["polish"] += time.perf_counter() - t
        log.append(record)
        candidates = []
        if xp is not None:
            x_start = np.zeros_like(xp)
            x_start[: V.x_start.size] = V.x_start
            for raw in (xp, np.where(xp < POLISH_CLEAN, 0.0, xp)):
                candidates.append(pull_into_budget(V.a, normalise_columns(V.cols, raw, n),
                                                   x_start, delta))
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
        trace_f.append(f / LN2)
        trace_gap.append(max(f - best_lb, 0.0) / LN2)
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


def _step(V: ActiveSet, atoms: AtomSet | None, sol: LPSolution, x: np.ndarray, Q: np.ndarray,
          L: np.ndarray, gap: float, delta: float, eta: float, corrective_steps: int
          ) -> tuple[bool, np.ndarray]:
    """One Frank-Wolfe (or pairwise) step toward the LP vertex; returns (moved, x)."""
    n, P, p_a = V.n, V.problem.joint, V.problem.p_a
    x_new = normalise_columns(V.cols, sol.x, n)
    x_start = np.zeros_like(x_new)
    x_start[:V.x_start.size] = V.x_start
    x_new = pull_into_budget(V.a, x_new, x_start, delta)
    Q_new = output_joint(P, V.rows, V.cols, x_new, n)
    if atoms is None:
        # x and x_new both meet the budget, so every γ in [0, 1] does
        gamma, _ = exact_line_search(Q, Q_new, p_a, 1.0)
        return gamma > 0, (1.0 - gamma) * x + gamma * x_new
    s = atoms.add(x_new, Q_new)
    sc = atoms.scores(L)
    sc[s] = -np.inf
    v = int(np.argmax(sc))
    dQ = Q_new - atoms.Q(v)
    gamma, _ = exact_line_search(Q, Q + dQ, p_a, atoms.w[v])
    if gamma > 0:
        x = x + gamma * (atoms.x_of(s, x.size) - atoms.x_of(v, x.size))
        Q = np.maximum(Q + gamma * dQ, 0.0)
        atoms.move(v, s, gamma)
    else:  # fall back to a classic step toward the vertex
        gamma, _ = exact_line_search(Q, Q_new, p_a, 1.0)
        if gamma <= 0:
            atoms.move(s, v, 0.0)  # the new vertex did not help: forget it
            return False, x
        x = (1.0 - gamma) * x + gamma * atoms.x_of(s, x.size)
        Q = np.maximum((1.0 - gamma) * Q + gamma * Q_new, 0.0)
        atoms.toward(s, gamma)
    x, Q = _corrective_steps(atoms, x, Q, p_a, eta, corrective_steps, 0.1 * gap)
    if len(atoms) > MAX_ATOMS:
        atoms.collapse(x, Q)
    return True, x
