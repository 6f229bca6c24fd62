"""Frank-Wolfe steps on the working inputs only, between two full iterations.

Most inputs never move: on ``synthetic:m=14`` 876 of 16,384 inputs ever leave the
output they start at (the rest are far from the budget's frontier). An input with a
single pair in V is *frozen* there (its column is that pair, x = 1); the others, the
working inputs W, form a restricted problem: the same I(A; B̂), the frozen inputs'
mass a constant offset, the budget less what the frozen inputs use. Only the outputs
W's pairs reach, C, move; the others keep their decoder, so W is priced exactly over
all n outputs (a pair to an output outside C brings it into C). A step of it is a step
of the full problem (the frozen columns stay put).

Classic Frank-Wolfe leaves mass on every pair a vertex ever used (~50 per working
input at m = 16), so the restricted master holds only the pairs of the last
``PRUNE_EVERY`` vertices and the priced ones; the iterate lives on all of them and
moves by ``x <- (1 - γ) x + γ v`` with Q updated from the vertex alone. An iteration
costs O(|W| + |C|) plus the pricing's walks and a scaling of x.

Nothing here certifies by itself. At the end of a burst the decoder and λ of its best
restricted bound are priced exactly over all n² pairs (``λ Δ + Σ_j min_i``), a valid
bound for any decoder and λ <= 0 (:mod:`.leakage`), when the restricted bound (never
below that one) leaves the tolerance within reach; and the full iteration that
follows every burst adds the pairs that price out anywhere, which un-freezes their
inputs and widens C.
"""

from __future__ import annotations

import math
import time

import numpy as np

from privbench._plumbing.buffers import GrowingArrays

from .columns import normalise_columns
from .leakage import decoder_logratios, leakage_nats, output_joint, pair_costs
from .line_pricing import LinePricer
from .linesearch import exact_line_search
from .pair_index import PairIndex

LN2 = math.log(2.0)
#: a burst ends once its own gap is below this fraction of the tolerance (the exact
#: certificate then usually is too)
STOP_FRACTION = 1.0
#: the restricted master keeps the pairs of the last this many vertices (and the new ones)
PRUNE_EVERY = 10
#: a burst's master starts with the pairs that carry at least this much of their input
MASTER_START = 1e-3
#: a pair enters the restricted master when its reduced cost is below -RC_TOL
RC_TOL = 1e-10
#: the restricted pricing runs on the pricer's threads from this many working inputs
MIN_PARALLEL = 1024


def enabled(setup, state) -> bool:
    """Bursts need exact pricing on a line and classic steps."""
    return setup.settings.restricted_steps > 0 and isinstance(state.V.line, LinePricer) \
        and state.atoms is None


class _Restricted:
    """The restricted problem: W's pairs with local indices (inputs: W, outputs: C)."""

    def __init__(self, setup, state, work: np.ndarray, counts: np.ndarray) -> None:
        V, P, p_a = state.V, setup.problem.joint, setup.problem.p_a
        n, self.p_a, self.k = V.n, p_a, work.size
        mask = counts[V.cols] >= 2
        in_work, frozen = np.flatnonzero(mask), np.flatnonzero(~mask)
        self.work, self.in_work = work, in_work
        self.Q_frozen = output_joint(P, V.rows[frozen], V.cols[frozen], state.x[frozen], n)
        Q_work = output_joint(P, V.rows[in_work], V.cols[in_work], state.x[in_work], n)
        Q_full = self.Q_frozen + Q_work
        #: the decoder on all outputs (C's columns are rewritten every iteration)
        self.L, self.empty = decoder_logratios(Q_full, p_a, setup.eta)
        self.reach = np.union1d(V.rows[in_work], work)
        self.local_out = np.full(n, -1, dtype=np.int64)
        self.local_out[self.reach] = np.arange(self.reach.size)
        outside = np.ones(n, dtype=bool)
        outside[self.reach] = False
        #: I(A; B̂)'s terms outside C and the bound's there (Σ Q L)
        self.f_out = leakage_nats(Q_full[:, outside], p_a)
        self.bound_out = float(np.sum(Q_full[:, outside] * self.L[:, outside]))
        self.offset = np.ascontiguousarray(self.Q_frozen[:, self.reach])
        self.delta = setup.delta - float(V.a[frozen] @ state.x[frozen])
        self.P = np.ascontiguousarray(P[:, work])
        self.p_b = setup.problem.p_b[work]
        in_local = np.full(n, -1, dtype=np.int64)
        in_local[work] = np.arange(work.size)
        rows, cols = self.local_out[V.rows[in_work]], in_local[V.cols[in_work]]
        #: every pair of the burst: V's pairs of W (origin: their index in V), then new ones
        self.pairs = GrowingArrays(rows=rows, cols=cols, a=V.a[in_work], x=state.x[in_work],
                                   origin=in_work, in_master=np.zeros(in_work.size, dtype=bool))
        #: V's pairs are found through V's index (then this map), the burst's new ones here
        self.index, self.local_of_v = V.index, np.full(V.rows.size, -1, dtype=np.int64)
        self.local_of_v[in_work] = np.arange(in_work.size)
        self.found = PairIndex(n, np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.QW = np.ascontiguousarray(Q_work[:, self.reach])  # W's part of Q, on C
        #: the iterate is ``scale * view("x")``: a step scales every pair, lazily
        self.scale = 1.0
        self.used_x = float(V.a[in_work] @ state.x[in_work])
        # the master starts with each input's heaviest pair and every pair above
        # MASTER_START (not all ~150 an input has: Frank-Wolfe leaves dust on each)
        x = state.x[in_work]
        heaviest = np.zeros(work.size)
        np.maximum.at(heaviest, cols, x)
        self._set_master(np.flatnonzero((x >= MASTER_START) | (x == heaviest[cols])),
                         np.zeros(0, dtype=np.int64))

    def view(self, name: str) -> np.ndarray:
        return self.pairs.view(name)

    def iterate(self) -> np.ndarray:
        """x on every pair of the burst."""
        return self.scale * self.view("x")

    def widen(self, outputs: np.ndarray) -> None:
        """Bring ``outputs`` (global, not in C) into C."""
        outputs = np.unique(outputs)
        self.local_out[outputs] = np.arange(self.reach.size, self.reach.size + outputs.size)
        self.reach = np.concatenate([self.reach, outputs])
        moved = self.Q_frozen[:, outputs]
        self.offset = np.concatenate([self.offset, moved], axis=1)
        self.QW = np.concatenate([self.QW, np.zeros_like(moved)], axis=1)
        self.f_out -= leakage_nats(moved, self.p_a)
        self.bound_out -= float(np.sum(moved * self.L[:, outputs]))

    def enter(self, outputs: np.ndarray, inputs: np.ndarray, a: np.ndarray, step: int
              ) -> np.ndarray:
        """Pairs (global output, local input) into the master (new ones into ``pairs``);
        returns the indices of those not in the master before."""
        if np.any(self.local_out[outputs] < 0):
            self.widen(outputs[self.local_out[outputs] < 0])
        idx = self.find(outputs, inputs)
        new = idx < 0
        if new.any():
            start = self.pairs.size
            self.pairs.append(rows=self.local_out[outputs[new]], cols=inputs[new], a=a[new],
                              x=np.zeros(int(new.sum())), origin=np.full(int(new.sum()), -1),
                              in_master=np.zeros(int(new.sum()), dtype=bool))
            idx[new] = np.arange(start, self.pairs.size)
            self.found.add(outputs[new], self.work[inputs[new]], start)
        in_master = self.view("in_master")
        idx = idx[~in_master[idx]]
        in_master[idx] = True
        self.master.append(pair=idx, rows=self.view("rows")[idx], cols=self.view("cols")[idx],
                           a=self.view("a")[idx], last=np.full(idx.size, step))
        return idx

    def find(self, outputs: np.ndarray, inputs: np.ndarray) -> np.ndarray:
        """The index in ``pairs`` of each (global output, local input), -1 if not seen."""
        at_v = self.index.find(outputs, self.work[inputs])
        idx = np.where(at_v >= 0, self.local_of_v[at_v], -1)
        miss = idx < 0
        if miss.any() and len(self.found):
            idx[miss] = self.found.find(outputs[miss], self.work[inputs[miss]])
        return idx

    def prune_master(self, step: int) -> bool:
        """Drop the master's pairs no vertex used for ``PRUNE_EVERY`` steps; True if it shrank."""
        last = self.master.view("last")
        keep = step - last < PRUNE_EVERY
        if keep.mean() >= 0.8:
            return False
        pair = self.master.view("pair")
        self.view("in_master")[pair[~keep]] = False
        self._set_master(pair[keep], last[keep])
        return True

    def _set_master(self, pair: np.ndarray, last: np.ndarray) -> None:
        """The master's pairs (indices into ``pairs``) with the step each last carried
        mass (0 when ``last`` is empty), their rows, columns and budget costs alongside."""
        self.view("in_master")[pair] = True
        self.master = GrowingArrays(pair=pair, rows=self.view("rows")[pair],
                                    cols=self.view("cols")[pair], a=self.view("a")[pair],
                                    last=last if last.size else np.zeros(pair.size, np.int64))


def working_inputs(V) -> tuple[np.ndarray, np.ndarray]:
    """(W, each input's pair count in V): W is the inputs with two pairs or more; an input
    with one pair is frozen there (a test freezes more through this seam)."""
    counts = np.bincount(V.cols, minlength=V.n)
    return np.flatnonzero(counts >= 2), counts


def burst(setup, state, trace, max_steps: int, it: int) -> int:
    """Up to ``max_steps`` restricted Frank-Wolfe steps from ``state.x``; returns the
    steps taken. Reads ``setup`` (:class:`.frank_wolfe.Setup`); updates ``state.x`` (and
    V, with the pairs found) and ``state.best_lb`` (one exact pricing at the end), and in
    ``trace`` the entries, timers and ``stop`` (``"tolerance"`` when the certificate is met).
    """
    V = state.V
    work, counts = working_inputs(V)
    if max_steps <= 0 or work.size == 0:
        return 0
    r = _Restricted(setup, state, work, counts)
    L_start, empty_start = r.L.copy(), r.empty.copy()
    master = type(V.backend).create(**V.backend.get_params())
    pricer = V.line.for_inputs(work)
    pricer.min_parallel = MIN_PARALLEL
    try:
        steps, best = _steps(setup, state, trace, r, pricer, master, max_steps)
    finally:
        master.close()
    _write_back(state, r, it)
    _certify(setup, state, trace, r, L_start, empty_start, best)
    return steps


def _master_solve(r: _Restricted, master, L: np.ndarray, empty: np.ndarray, fresh: bool,
                  timers: dict[str, float]):
    """Solve the restricted master at the decoder L (``fresh``: restart it with all its pairs)."""
    m = r.master
    cost = pair_costs(L, r.P, m.view("rows"), m.view("cols"), empty, None)
    t = time.perf_counter()
    if fresh:
        master.start(r.k, r.delta)
        master.add_columns(m.view("cols"), cost, m.view("a"))
    else:
        master.set_costs(cost)
    sol = master.solve()
    timers["lp"] += time.perf_counter() - t
    if sol.status != "optimal":
        raise RuntimeError(f"sppm: LP backend {master.name!r} returned {sol.status} on the "
                           f"working set: {sol.message}")
    return sol


def _steps(setup, state, trace, r: _Restricted, pricer: LinePricer, master, max_steps: int
           ) -> tuple[int, tuple | None]:
    """The restricted iterations; returns (steps, (L on C, empty on C, λ, |C|, the bound)
    of the best restricted bound)."""
    p_a, eta, timers = setup.problem.p_a, setup.eta, trace.timers
    best, best_lb, steps, fresh = None, -np.inf, 0, True
    t = time.perf_counter()
    tables = pricer.tables(r.L, r.empty)  # then updated on C's columns only
    blocks, blocks_for = pricer.blocks_of(r.reach), r.reach.size
    timers["pricing"] += time.perf_counter() - t
    while steps < max_steps:
        if steps and steps % PRUNE_EVERY == 0:
            fresh = r.prune_master(steps) or fresh
            # afresh from x now and then (the updates from vertices accumulate rounding)
            x = r.iterate()
            r.QW = output_joint(r.P, r.view("rows"), r.view("cols"), x, r.reach.size)
            r.used_x = float(r.view("a") @ x)
        Q = r.offset + r.QW
        f_c = leakage_nats(Q, p_a)
        L, empty = decoder_logratios(Q, p_a, eta)
        r.L[:, r.reach], r.empty[r.reach] = L, empty
        sol = _master_solve(r, master, L, empty, fresh, timers)
        fresh = False
        lam = min(float(sol.budget_dual), 0.0)
        t = time.perf_counter()
        if blocks_for != r.reach.size:  # C grew
            blocks, blocks_for = pricer.blocks_of(r.reach), r.reach.size
        pricer.update_tables(tables, r.L, r.empty, blocks)
        best_i, best_v = pricer.price(r.L, r.P, r.p_b, lam, r.empty, tables=tables)
        timers["pricing"] += time.perf_counter() - t
        lb = lam * r.delta + float(best_v.sum()) + float(np.sum(r.offset * L))
        lb += r.bound_out  # the terms outside C (they change as C widens)
        if lb > best_lb:
            best_lb, best = lb, (L, empty, lam, r.reach.size, lb)
        f = r.f_out + f_c
        if (f - best_lb) / LN2 < STOP_FRACTION * setup.fw_tol:
            break  # the exact certificate (:func:`_certify`) decides
        trace.checkpoint(f / LN2, max(f - state.best_lb, 0.0) / LN2)
        if setup.on_iteration is not None:
            setup.on_iteration({"iteration": state.steps, "objective_bits": f / LN2,
                            "gap_bits": trace.gap[-1],
                            "columns": int(state.V.rows.size + r.pairs.size - r.in_work.size)})
        t = time.perf_counter()
        moved = _step(r, sol.x, Q, f_c, steps)
        timers["linesearch"] += time.perf_counter() - t
        if not moved:
            break
        steps += 1
        state.steps += 1
        cand = np.flatnonzero(best_v - sol.simplex_duals < -RC_TOL)
        if cand.size:
            out = best_i[cand]
            a = r.p_b[cand] * setup.problem.distortion.pairs(out, r.work[cand])
            added = r.enter(out, cand, a, steps)
            if added.size and not fresh:
                master.add_columns(r.view("cols")[added], np.zeros(added.size),
                                   r.view("a")[added])
    return steps, best


def _step(r: _Restricted, vertex: np.ndarray, Q: np.ndarray, f_c: float, step: int) -> bool:
    """A classic step toward the master's vertex, as far as the budget allows."""
    size = vertex.size
    m = r.master
    mp, rows, cols, a = (m.view(name)[:size] for name in ("pair", "rows", "cols", "a"))
    v = normalise_columns(cols, vertex, r.k)
    used_v = float(a @ v)
    gamma_max = 1.0
    if used_v > r.delta:  # the LP vertex meets Δ only to rounding: stop where x + γ(v - x) does
        rise = used_v - r.used_x
        gamma_max = max(float(np.nextafter((r.delta - r.used_x) / rise, 0.0)), 0.0) \
            if rise > 0 else 0.0
    Qv = output_joint(r.P, rows, cols, v, r.reach.size)
    gamma, _ = exact_line_search(Q, r.offset + Qv, r.p_a, gamma_max, f0=f_c)
    if gamma <= 0:
        return False
    r.scale *= 1.0 - gamma
    if r.scale < 1e-200:
        r.view("x")[:] *= r.scale
        r.scale = 1.0
    r.view("x")[mp] += (gamma / r.scale) * v
    r.QW = (1.0 - gamma) * r.QW + gamma * Qv
    r.used_x = (1.0 - gamma) * r.used_x + gamma * used_v
    m.view("last")[:size][v > 0] = step
    return True


def _write_back(state, r: _Restricted, it: int) -> None:
    """The restricted iterate into ``state.x``; the pairs found in the burst join V."""
    V = state.V
    origin = r.view("origin").copy()
    found = origin < 0
    if found.any():
        start = V.rows.size
        V.extend(r.reach[r.view("rows")[found]], r.work[r.view("cols")[found]])
        origin[found] = np.arange(start, V.rows.size)
    state.x = V.padded(state.x)
    state.last_used = np.concatenate([state.last_used, np.full(V.rows.size - state.last_used.size, it)])
    x = r.iterate()
    state.x[origin] = x
    state.last_used[origin[x > 0]] = it


def _certify(setup, state, trace, r: _Restricted, L_start: np.ndarray, empty_start: np.ndarray,
             best: tuple | None) -> None:
    """Exact pricing over all n² pairs at the burst's best decoder and λ: a certificate.

    The decoder is the burst start's outside C as it was then, the best iteration's on it
    (any decoder gives a valid bound, :mod:`.leakage`).
    """
    Q_end = r.offset + output_joint(r.P, r.view("rows"), r.view("cols"), r.iterate(),
                                    r.reach.size)
    f = r.f_out + leakage_nats(Q_end, setup.problem.p_a)
    # the full bound at a decoder and λ is at most the restricted one (a frozen input's
    # least cost is at most its own pair's): price only when it may meet the tolerance
    if best is not None and (f - best[4]) / LN2 < setup.fw_tol * (1 + 1e-9):
        L_c, empty_c, lam, c_then, _ = best
        L_start[:, r.reach[:c_then]] = L_c
        empty_start[r.reach[:c_then]] = empty_c
        t = time.perf_counter()
        _, best_v = state.V.price_all(L_start, lam, empty_start)
        trace.timers["pricing"] += time.perf_counter() - t
        state.best_lb = max(state.best_lb, lam * setup.delta + float(best_v.sum()))
    gap_bits = max(f - state.best_lb, 0.0) / LN2
    if gap_bits < setup.fw_tol:
        trace.checkpoint(f / LN2, gap_bits)
        trace.stop = "tolerance"
