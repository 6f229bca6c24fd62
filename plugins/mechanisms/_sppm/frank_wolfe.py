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
from privbench._plumbing.buffers import GrowingArrays
from privbench.protocol.feasibility import pull_into_budget

from . import working_set
from .atoms import AtomSet
from .columns import normalise_columns
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
from .pair_index import PairIndex
from .pricing import BLOCK_ENTRIES, Balls, Neighbours, price_exact, price_neighbours
from .settings import SPPMSettings

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


#: pairwise FW keeps at most this many vertices (each O(|V|)); then it restarts from X
MAX_ATOMS = 40


class ActiveSet:
    """The active pairs V with their budget coefficients, mirrored in the LP backend."""

    def __init__(self, problem: PrivacyProblem, backend: LPBackend, rows: np.ndarray,
                 cols: np.ndarray, x_start: np.ndarray, timers: dict[str, float],
                 neighbours: int, delta: float, rounds: int = 0, threads: int = 1) -> None:
        self.problem = problem
        self.delta = delta
        self.rounds = rounds
        self.pruned = 0
        self.backend = backend
        self.n = problem.n
        self._set_pairs(rows, cols, problem.p_b[cols] * problem.distortion.pairs(rows, cols))
        #: X0's values on the first pairs (a mapping within the budget)
        self.x_start = np.array(x_start, dtype=float)
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

    # V's arrays grow in doubling buffers (privbench._plumbing.buffers)
    @property
    def rows(self) -> np.ndarray:
        return self._pairs.view("rows")

    @property
    def cols(self) -> np.ndarray:
        return self._pairs.view("cols")

    @property
    def a(self) -> np.ndarray:
        return self._pairs.view("a")

    def _set_pairs(self, rows: np.ndarray, cols: np.ndarray, a: np.ndarray) -> None:
        self._pairs = GrowingArrays(rows=np.asarray(rows, dtype=np.int64),
                                    cols=np.asarray(cols, dtype=np.int64),
                                    a=np.asarray(a, dtype=np.float64))
        self.index = PairIndex(self.n, self.rows, self.cols)

    def _fresh(self, best_i: np.ndarray, best_v: np.ndarray, mu: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Inputs whose best pair prices out and is not in V yet."""
        cand = np.flatnonzero(best_v - mu < -RC_TOL)
        fresh = self.index.find(best_i[cand], cand) < 0
        return fresh, cand

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
                fresh, cand = self._fresh(best_i, best_v, sol.simplex_duals)
            else:
                # cheap rounds on the neighbour lists; an exact scan once they are exhausted
                best_i, best_v = price_neighbours(L, P, problem.p_b, self.nb, lam, empty,
                                                  empty_cost)
                fresh, cand = self._fresh(best_i, best_v, sol.simplex_duals)
                certified = False
                if exact and not fresh.any():
                    best_i, best_v, scanned = price_exact(L, P, problem.p_b, problem.distortion,
                                                          self.nb, lam, empty, empty_cost,
                                                          (best_i, best_v), self.balls)
                    self.full_scans += scanned
                    certified = True
                    fresh, cand = self._fresh(best_i, best_v, sol.simplex_duals)
            self.timers["pricing"] += time.perf_counter() - t
            if not fresh.any():
                return LinearStep(sol, lam, best_v, added, certified, complete=certified)
            more = self._add(L, empty, empty_cost, best_i, cand[fresh])
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

    def replace_pairs(self, rows: np.ndarray, cols: np.ndarray) -> None:
        """Take a new pair list (a mode's own support); X0's pairs must stay first."""
        rows, cols = rows.astype(np.int64), cols.astype(np.int64)
        self._set_pairs(rows, cols, self.problem.p_b[cols] * self.problem.distortion.pairs(rows, cols))

    def extend(self, rows: np.ndarray, cols: np.ndarray) -> None:
        """Append pairs found outside a linear step (a working-set burst); the master gets
        their costs at the next linear step, which sets every cost."""
        problem = self.problem
        rows, cols = rows.astype(np.int64), cols.astype(np.int64)
        a = problem.p_b[cols] * problem.distortion.pairs(rows, cols)
        self.index.add(rows, cols, self.rows.size)
        if self._in_backend:
            self.backend.add_columns(cols, np.zeros(rows.size), a)
        self._pairs.append(rows=rows, cols=cols, a=a)
        self._in_backend = self.rows.size if self._in_backend else 0

    def padded(self, x: np.ndarray) -> np.ndarray:
        """x extended with zeros for the pairs added since (V only grows between prunes)."""
        return np.concatenate([x, np.zeros(self.rows.size - x.size)])

    def start_values(self, size: int) -> np.ndarray:
        """X0 on the first pairs, zero elsewhere: the feasible point budget repairs mix with."""
        x_start = np.zeros(size)
        x_start[: self.x_start.size] = self.x_start
        return x_start

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
        self._set_pairs(self.rows[idx], self.cols[idx], self.a[idx])
        self.backend.close()
        self.backend.start(self.n, self.delta)
        self._in_backend = 0  # the next linear step adds every column with its cost
        return idx

    def _add(self, L: np.ndarray, empty: np.ndarray, empty_cost: np.ndarray | None,
             best_i: np.ndarray, nj: np.ndarray) -> int:
        """Append pairs (best_i[j], j) for j in ``nj`` to V and to the master."""
        problem = self.problem
        ni = best_i[nj]
        self.index.add(ni, nj, self.rows.size)
        na = problem.p_b[nj] * problem.distortion.pairs(ni, nj)
        self.backend.add_columns(nj, pair_costs(L, problem.joint, ni, nj, empty, empty_cost), na)
        self._pairs.append(rows=ni, cols=nj, a=na)
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


@dataclass(frozen=True)
class Setup:
    """What one SPPM solve reads and never changes: the problem, Δ, the settings as this
    solve runs them, and what is derived from them once.

    ``settings`` is :class:`.settings.SPPMSettings` with ``iterations`` and
    ``restricted_steps`` as this mode runs them (the dual mode's Frank-Wolfe warm-up is
    ``warmup`` steps; only ``frank-wolfe`` has bursts).
    """

    problem: PrivacyProblem
    delta: float
    settings: SPPMSettings
    #: Frank-Wolfe stops at this gap (bits): ``tol``, or ``handover`` before the optimal mode
    fw_tol: float
    on_iteration: Callable[[dict[str, Any]], None] | None = None
    #: the dual mode's warm start (:class:`.continuation.WarmStart`), None: a cold start
    warm: Any = None
    #: the coarse levels solved for this run's start (:mod:`.continuation`), coarsest first
    levels: list[dict] | None = None
    #: the posterior floor of the decoder (:data:`.leakage.POSTERIOR_FLOOR`)
    eta: float = POSTERIOR_FLOOR
    #: the limit gradient at outputs with no mass (:func:`.leakage.limit_costs`)
    kappa: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        p = self.problem
        object.__setattr__(self, "kappa", limit_costs(p.joint, p.p_a, p.p_b))

    @property
    def tol(self) -> float:
        """The certified gap (bits) a run must reach to have converged."""
        return self.settings.tol


@dataclass
class State:
    """What a step changes: V, the iterate x on V's pairs, the certificate's bound and λ,
    the counters, the last dual point. :func:`run_frank_wolfe` and a mode's finisher
    (:mod:`.modes`) advance it."""

    V: ActiveSet
    x: np.ndarray
    atoms: AtomSet | None
    #: the best certified lower bound on min I (nats) and the last master's λ
    best_lb: float = 0.0
    lam: float = 0.0
    #: Frank-Wolfe steps taken and, of those, the ones on the working inputs
    steps: int = 0
    restricted_taken: int = 0
    last_prune: int = 0
    #: the iteration at which each pair last carried mass (pruning)
    last_used: np.ndarray = field(init=False, repr=False)
    #: the dual mode's last dual point (logits θ, ν), for a finer level's warm start
    dual_point: Any = None
    def __post_init__(self) -> None:
        self.last_used = np.zeros(self.x.size, dtype=np.int64)

    def leakage(self, x: np.ndarray | None = None) -> float:
        """I(A; B̂) in nats of x (default: the iterate) on V's pairs."""
        V = self.V
        return leakage_nats(output_joint(V.problem.joint, V.rows, V.cols,
                                         self.x if x is None else x, V.n), V.problem.p_a)


#: the parts of a solve timed apart (the ``time_<part>_s`` stats)
TIMERS = ("pricing", "lp", "linesearch", "polish")


@dataclass
class Trace:
    """What a solve records: objective and gap per entry with its time, the stop reason,
    the modes' log and the time spent per part (``timers``, which V adds to as well)."""

    #: ``time.perf_counter()`` at the start of the solve (0: at construction)
    t0: float = 0.0
    f: list[float] = field(default_factory=list)
    gap: list[float] = field(default_factory=list)
    #: seconds since ``t0`` at each entry (the solver-shootout ``trace`` stat)
    t: list[float] = field(default_factory=list)
    stop: str = "iterations"
    polish_log: list[dict] = field(default_factory=list)
    timers: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TIMERS, 0.0))

    def __post_init__(self) -> None:
        self.t0 = self.t0 or time.perf_counter()

    def checkpoint(self, f_bits: float, gap_bits: float) -> None:
        """Append one entry: objective and gap (bits) with the seconds since ``t0``."""
        self.f.append(f_bits)
        self.gap.append(gap_bits)
        self.t.append(time.perf_counter() - self.t0)

    def restamp(self) -> None:
        """The last entry's gap improved just now: its time is now (a bound is only
        certified once computed)."""
        if self.t:
            self.t[-1] = time.perf_counter() - self.t0


def run_frank_wolfe(setup: Setup, state: State, trace: Trace) -> None:
    """Algorithm 1: linear step by column generation, exact line search, until the
    certified gap is below ``fw_tol`` bits or ``iterations`` steps were taken."""
    P, p_a, V = setup.problem.joint, setup.problem.p_a, state.V
    iterations = setup.settings.iterations
    bursts = working_set.enabled(setup, state)
    it = -1
    while it < iterations:
        it += 1
        _maybe_prune(setup, state, it)
        Q = output_joint(P, V.rows, V.cols, state.x, V.n)
        f = leakage_nats(Q, p_a)
        L, empty = decoder_logratios(Q, p_a, setup.eta)
        step = _certified_step(setup, state, trace, it, f, L, empty)
        gap = trace.gap[-1] * LN2
        if setup.on_iteration is not None:
            setup.on_iteration({"iteration": it, "objective_bits": f / LN2,
                                "gap_bits": gap / LN2, "columns": int(V.rows.size)})
        if gap / LN2 < setup.fw_tol:
            trace.stop = "tolerance"
            return
        if it == iterations:
            return
        if not _descend(setup, state, trace, step, Q, L, empty, f, gap):
            trace.stop = "no descent step (numerically converged)"
            return
        state.steps += 1
        if bursts:
            taken = working_set.burst(
                setup, state, trace,
                min(setup.settings.restricted_steps, iterations - it - 1), it)
            state.restricted_taken += taken
            it += taken
            if trace.stop == "tolerance":
                return


def _maybe_prune(setup: Setup, state: State, it: int) -> None:
    """Every ``prune_after`` iterations drop pairs unused that long, if it shrinks V enough."""
    prune_after = setup.settings.prune_after
    if not (prune_after and it - state.last_prune >= prune_after):
        return
    state.last_prune = it
    keep = (state.x > 0) | (it - state.last_used < prune_after)
    if keep.mean() < 0.8:  # worth a master rebuild
        V = state.V
        kept = V.prune(keep)
        state.x, state.last_used = state.x[kept], state.last_used[kept]
        if state.atoms is not None:
            state.atoms.collapse(state.x, output_joint(setup.problem.joint, V.rows, V.cols,
                                                       state.x, V.n))


def _certified_step(setup: Setup, state: State, trace: Trace, it: int, f: float,
                    L: np.ndarray, empty: np.ndarray) -> LinearStep:
    """The linear step of iteration ``it`` (exact pricing when due or when the cheap bound
    says the tolerance is met), recorded in the certificate and the traces."""
    V, delta, exact_every = state.V, setup.delta, setup.settings.exact_every
    exact = V.line is not None or exact_every <= 1 or it % exact_every == 0 \
        or it == setup.settings.iterations
    step = V.linear_step(L, empty, None, exact)
    if not step.certified and (f - step.bound(delta)) / LN2 < setup.tol:
        step = V.linear_step(L, empty, None, True, costs_set=True)
    state.x = V.padded(state.x)
    state.last_used = np.concatenate([state.last_used,
                                      np.full(V.rows.size - state.last_used.size, it)])
    state.last_used[step.sol.x > 0] = it
    state.lam = step.lam
    if step.certified:
        state.best_lb = max(state.best_lb, step.bound(delta))
    trace.checkpoint(f / LN2, max(f - state.best_lb, 0.0) / LN2)
    return step


def _descend(setup: Setup, state: State, trace: Trace, step: LinearStep, Q: np.ndarray,
             L: np.ndarray, empty: np.ndarray, f: float, gap: float) -> bool:
    """Step toward the LP vertex; if that does not descend, retry with the full LP, then
    with the limit gradient at empty outputs. False when nothing descends."""
    V = state.V
    retries = [lambda: step]
    if not step.complete:  # an inexact step may miss: the full LP
        retries.append(lambda: V.linear_step(L, empty, None, True, costs_set=True, rounds=0))
    if empty.any():  # the limit gradient at outputs with no mass
        retries.append(lambda: V.linear_step(L, empty, setup.kappa, rounds=0))
    for k, make_step in enumerate(retries):
        current = make_step()
        state.x = V.padded(state.x)
        if k == 1 and not step.complete:
            state.best_lb = max(state.best_lb, current.bound(setup.delta))
            trace.gap[-1] = max(f - state.best_lb, 0.0) / LN2
            trace.restamp()
        t = time.perf_counter()
        moved, state.x = _step(V, state.atoms, current.sol, state.x, Q, L, f, gap,
                               setup.delta, setup.eta, setup.settings.corrective_steps)
        trace.timers["linesearch"] += time.perf_counter() - t
        if moved:
            return True
    return False


def _step(V: ActiveSet, atoms: AtomSet | None, sol: LPSolution, x: np.ndarray, Q: np.ndarray,
          L: np.ndarray, f: float, gap: float, delta: float, eta: float, corrective_steps: int
          ) -> tuple[bool, np.ndarray]:
    """One Frank-Wolfe (or pairwise) step toward the LP vertex; returns (moved, x)."""
    n, P, p_a = V.n, V.problem.joint, V.problem.p_a
    x_new = normalise_columns(V.cols, sol.x, n)
    x_new = pull_into_budget(V.a, x_new, V.start_values(x_new.size), delta)
    Q_new = output_joint(P, V.rows, V.cols, x_new, n)
    if atoms is None:
        # x and x_new both meet the budget, so every γ in [0, 1] does
        gamma, _ = exact_line_search(Q, Q_new, p_a, 1.0, f0=f)
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
