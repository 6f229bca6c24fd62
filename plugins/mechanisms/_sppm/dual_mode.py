"""SPPM's ``dual`` mode: ascent on the decoder (the dual of problem (1)), with exact pricing.

Every decoder r and every ν >= 0 bound the optimum from below (:mod:`.leakage`):

    LB(r, ν) = -ν Δ + Σ_j min_i [c^r_ij + ν a_ij]      (min over all n outputs)

and max over (r, ν) of LB is the optimum itself (Lagrangian duality with
I(X) = max_r Σ X c^r, Sion's minimax theorem). Frank-Wolfe only ever evaluates LB at the
posterior of its iterate, which on census-like data (thousands of rare, pure profiles)
stays a weak decoder for thousands of iterations. Here the decoder is optimised directly:

* restricted to the active pairs V and smoothed (min -> soft-min at temperature τ), the
  dual is smooth and concave in (logits of r, log ν); L-BFGS maximises it at decreasing τ;
* its soft assignments are a primal point (the minimiser of I + τ · negative entropy on V),
  made to meet the budget exactly by a 1-D search on ν: the upper bound;
* exact pricing over all n² pairs at the dual point gives the certified lower bound; the
  inputs whose minimum lies outside V get their violating pairs added (a dense scan of
  those inputs only, at most ``CAP`` pairs each, the most violating), and the rounds
  repeat until the gap is below ``tol``.

A soft-min over V is not a lower bound by itself; only the exact-priced LB is reported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numba
import numpy as np
import scipy.optimize as so

from privbench import PrivacyProblem

from .._softmin import CUTOFF
from . import lbfgs
from .leakage import leakage_nats, output_joint
from .pricing import BLOCK_ENTRIES

LN2 = math.log(2.0)
#: most pairs one input adds to V per round (its most violating outputs)
CAP = 50
#: the temperatures of the first round (nats per unit of input mass); later rounds start
#: at ``TAUS[LATER_START]`` and every round ends at the floor chosen from ``tol``
TAUS = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)
LATER_START = 2
#: rounds stay at the coarse temperatures (``TAUS[:LATER_START]``) while they add more than
#: this fraction of n pairs to V
COARSE_EXIT = 0.02
#: the tolerance (bits) the finest temperature is chosen for when ``tol`` is smaller
#: (tol = 0 asks for every round: τ = 0 would divide by zero in the soft-min)
TOL_FLOOR = 1e-9
#: primal points are only taken at temperatures at least this (below, soft assignments
#: are nearly hard and the budget search makes them worse, not better)
PRIMAL_MIN_TAU = 1e-4
#: decoder logits are kept in [-LOGIT_BOUND, LOGIT_BOUND] (r >= ~1e-13: finite costs)
LOGIT_BOUND = 30.0
#: log ν is kept in this range
LOG_NU_BOUNDS = (-25.0, 10.0)
#: most L-BFGS iterations per temperature (and per widening of W)
MAXITER = 3000
#: a pair joins V when it beats the input's minimum over V by more than this (nats)
VIOLATION = 1e-12
#: each temperature's ascent evaluates only the working pairs W of V: those within
#: ``FOCUS`` times the soft-min's reach (``CUTOFF`` τ) of their input's minimum over V
FOCUS = 2.0
#: W is widened and the ascent resumed at most this many times per temperature
FOCUS_TRIES = 4
#: W is V at temperatures above this: there most pairs carry weight, and the coarse
#: ascents move far (W would be widened again and again)
FOCUS_MAX_TAU = 1e-3
#: curvature pairs kept by the ascents at the coarse temperatures (τ > ``FOCUS_MAX_TAU``,
#: where W = V and most evaluations are spent); finer ones keep L-BFGS-B's 10. On census
#: with every profile the coarse ascents need ~2x fewer evaluations with 50 (curvatures
#: spread over orders of magnitude between outputs; docs/studies/sppm-frontier.md, round
#: eight); at the fine temperatures the ascents are short, and 50 pairs there changed which
#: primal point seeded continuation's next level (synthetic m = 12, 0.3 d_const: twice the
#: pairs)
LBFGS_MEMORY = 50
#: a pass over at least this many working pairs is cut into two input ranges of equal
#: pairs, run on two threads when allowed (the cut does not depend on the threads, so
#: results do not either)
SPLIT_PAIRS = 50_000



@numba.njit(cache=True, inline="always")
def _cost(LT, ST, rows, d, j, t, nu):  # pragma: no cover - compiled
    """ĉ of pair t (input j): ν d_t + Σ_a S[j,a] L[rows[t], a], per unit of input mass."""
    c = nu * d[t]
    i = rows[t]
    for a in range(LT.shape[1]):
        c += ST[j, a] * LT[i, a]
    return c


#: e^x on [-CUTOFF, 0] as x = -(m / STEPS) ln 2 + r, |r| <= ln 2 / (2 STEPS): e^r by its
#: Taylor polynomial of degree 6 (truncation < 1e-17), 2^(-m / STEPS) from a table (22 KB);
#: ln 2 / STEPS split in a short high part (m times it is exact) and the rest
_STEPS = 32
_LN2_STEP = LN2 / _STEPS
_LN2_STEP_HI = float(np.float32(_LN2_STEP))
_LN2_STEP_LO = _LN2_STEP - _LN2_STEP_HI
_POW2 = 2.0 ** (-np.arange(int(CUTOFF / _LN2_STEP) + 2, dtype=np.float64) / _STEPS)
_TAYLOR = tuple(1.0 / math.factorial(q) for q in range(6, -1, -1))


@numba.njit(cache=True, inline="always")
def _exp(x):  # pragma: no cover - compiled
    """e^x for -CUTOFF <= x <= 0 to a few ulps, without a libm call (7 multiply-adds)."""
    mf = math.floor(x * (1.0 / _LN2_STEP) + 0.5)
    r = (x - mf * _LN2_STEP_HI) - mf * _LN2_STEP_LO
    p = 0.0
    for c in _TAYLOR:
        p = p * r + c
    return p * _POW2[np.int64(-mf)]


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _soft_pass(LT, ST, p_b, rows, d, starts, nu, tau, GT, w, j_lo, j_hi):  # pragma: no cover
    """Σ_j p_j softmin_τ over input j's pairs of ĉ_ij = Σ_a S[j,a] L[i,a] + ν d_ij, for
    the inputs j_lo <= j < j_hi (the GIL is released: two ranges can run at once).

    Pairs are sorted by input (``starts``); arrays are (n, k) for locality. Fills ``w``
    with the soft assignment (each input's entries sum to one), adds the value's gradient
    with respect to L into ``GT``, and returns (value, E[d]). Terms below e^-CUTOFF of
    the largest count as 0: each input's pairs within reach are gathered first (without
    a branch: about half the pairs are beyond reach at coarse temperatures, and a branch
    there mispredicts), and only those take an exponential and a gradient update. Sums
    run in any order (the results differ from ordered sums in the last bits only).
    """
    k = LT.shape[1]
    value = 0.0
    used = 0.0
    inv = 1.0 / tau
    most = 0
    for j in range(j_lo, j_hi):
        most = max(most, starts[j + 1] - starts[j])
    near = np.empty(most, dtype=np.int64)  # pairs of input j within reach, and their
    ex = np.empty(most)  # costs, then exponentials
    for j in range(j_lo, j_hi):
        lo, hi = starts[j], starts[j + 1]
        if lo == hi:
            continue
        m = np.inf
        for t in range(lo, hi):
            c = _cost(LT, ST, rows, d, j, t, nu)
            w[t] = c
            m = min(m, c)
        reach = m + CUTOFF * tau
        count = 0
        for t in range(lo, hi):
            near[count] = t
            ex[count] = w[t]
            count += w[t] <= reach  # <=: m + CUTOFF τ may round to m
            w[t] = 0.0
        z = 0.0
        for q in range(count):
            e = _exp(max((m - ex[q]) * inv, -CUTOFF))
            ex[q] = e
            z += e
        value += p_b[j] * (m - tau * math.log(z))
        iz = 1.0 / z
        for q in range(count):
            t = near[q]
            x = ex[q] * iz
            w[t] = x
            wt = x * p_b[j]
            used += wt * d[t]
            i = rows[t]
            for a in range(k):
                GT[i, a] += wt * ST[j, a]
    return value, used


@numba.njit(cache=True)
def _minima(LT, ST, p_b, rows, d, starts, nu):  # pragma: no cover - compiled
    """min over input j's pairs of p_j (Σ_a S[j,a] L[i,a] + ν d_ij): V's side of pricing."""
    out = np.empty(starts.size - 1)
    for j in range(starts.size - 1):
        m = np.inf
        for t in range(starts[j], starts[j + 1]):
            m = min(m, _cost(LT, ST, rows, d, j, t, nu))
        out[j] = p_b[j] * m
    return out


@numba.njit(cache=True)
def _gaps(LT, ST, rows, d, starts, nu):  # pragma: no cover - compiled
    """Per pair, its cost above its input's minimum over the pairs (per unit of input mass)."""
    out = np.empty(rows.size)
    for j in range(starts.size - 1):
        m = np.inf
        for t in range(starts[j], starts[j + 1]):
            out[t] = _cost(LT, ST, rows, d, j, t, nu)
            m = min(m, out[t])
        for t in range(starts[j], starts[j + 1]):
            out[t] -= m
    return out


@numba.njit(cache=True)
def _decoder(par, log_p, LT, rT):  # pragma: no cover - compiled
    """From L-BFGS's point (the (k-1) x n logits θ, row-major, then log ν): L[a, i] =
    log r(a | i) - log p(a) and r(a | i) into the (n, k) arrays LT and rT (the last private
    value's logit is 0). k exponentials and one logarithm per output."""
    n, k = LT.shape
    for i in range(n):
        top = 0.0
        for a in range(k - 1):
            top = max(top, par[a * n + i])
        z = 0.0
        for a in range(k):
            e = math.exp((par[a * n + i] if a < k - 1 else 0.0) - top)
            rT[i, a] = e
            z += e
        lse = top + math.log(z)
        for a in range(k):
            LT[i, a] = (par[a * n + i] if a < k - 1 else 0.0) - lse - log_p[a]
            rT[i, a] /= z


@numba.njit(cache=True)
def _chain(GT, rT, out):  # pragma: no cover - compiled
    """out[a * n + i] = -(G[a, i] - r(a | i) Σ_b G[b, i]) for a < k - 1: minus the gradient
    in θ (the chain rule through the softmax), L-BFGS's layout."""
    n, k = GT.shape
    for i in range(n):
        s = 0.0
        for a in range(k):
            s += GT[i, a]
        for a in range(k - 1):
            out[a * n + i] = -(GT[i, a] - rT[i, a] * s)


def log_softmax(theta: np.ndarray) -> np.ndarray:
    """log r for the free logits θ ((k-1) x n; the last private value's logit is 0)."""
    full = np.vstack([theta, np.zeros((1, theta.shape[1]))])
    top = full.max(axis=0)
    return full - (top + np.log(np.exp(full - top).sum(axis=0)))


@dataclass
class DualRound:
    """One round: V's size, the bounds (bits), the pairs added, the seconds it took."""

    pairs: int
    lower_bits: float
    upper_bits: float
    added: int
    evaluations: int
    time_s: float

    def as_dict(self) -> dict:
        return {"pairs": self.pairs, "lower_bound_bits": self.lower_bits,
                "objective_bits": self.upper_bits, "gap_bits": self.upper_bits - self.lower_bits,
                "pairs_added": self.added, "evaluations": self.evaluations,
                "time_s": self.time_s}


@dataclass
class RestrictedDual:
    """The smoothed dual on the pairs V (rows = outputs, cols = inputs), sorted by input."""

    problem: PrivacyProblem
    delta: float
    rows: np.ndarray
    cols: np.ndarray
    #: threads for a split pass (:data:`SPLIT_PAIRS`); 1 runs both halves in turn
    threads: int = 1
    d: np.ndarray = field(init=False)
    starts: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        p = self.problem
        self.live = np.flatnonzero(p.p_a > 0)
        self.log_p = np.log(p.p_a[self.live])[:, None]
        self.log_p_flat = np.ascontiguousarray(self.log_p[:, 0])
        safe = np.where(p.p_b > 0, p.p_b, 1.0)
        self.S = p.joint[self.live] / safe[None, :]
        self.ST = np.ascontiguousarray(self.S.T)
        self.p_b = np.ascontiguousarray(p.p_b, dtype=np.float64)
        self._pool: ThreadPoolExecutor | None = None
        self._sort(self.rows, self.cols)

    def _sort(self, rows: np.ndarray, cols: np.ndarray) -> None:
        order = np.lexsort((rows, cols))
        self.rows = np.ascontiguousarray(rows[order], dtype=np.int64)
        self.cols = np.ascontiguousarray(cols[order], dtype=np.int64)
        self.d = np.ascontiguousarray(
            self.problem.distortion.pairs(self.rows, self.cols), dtype=np.float64)
        self.starts = np.searchsorted(self.cols, np.arange(self.problem.n + 1))
        self.keys = np.sort(self.rows * self.problem.n + self.cols)  # V's pairs, for lookups
        self._work(np.arange(self.rows.size))

    def _work(self, sel: np.ndarray) -> None:
        """W = V's pairs ``sel`` (ascending, so still sorted by input): what a pass evaluates."""
        self.sel = sel
        self.w_rows, self.w_cols, self.w_d = self.rows[sel], self.cols[sel], self.d[sel]
        self.w_starts = np.searchsorted(self.w_cols, np.arange(self.problem.n + 1))
        self.w = np.empty(sel.size)
        n = self.problem.n
        cut = int(np.searchsorted(self.w_starts, sel.size // 2)) if sel.size >= SPLIT_PAIRS else n
        self.ranges = [(0, n)] if cut in (0, n) else [(0, cut), (cut, n)]

    def gaps(self, theta: np.ndarray, nu: float) -> np.ndarray:
        """Each pair of V's cost above its input's minimum over V (per unit of input mass)."""
        return _gaps(np.ascontiguousarray(self.L_of(theta).T), self.ST, self.rows, self.d,
                     self.starts, nu)

    def focus(self, theta: np.ndarray, nu: float, tau: float) -> None:
        """W = the pairs within ``FOCUS`` soft-min reaches of their input's minimum at (θ, ν).

        Outside W a pair's soft-min weight is 0 (below e^-CUTOFF) until the ascent moves
        far; :meth:`widen` checks that after it. W is a heuristic for speed only: the
        certified bound comes from exact pricing, the upper bound from a point on V.
        """
        self._work(np.flatnonzero(self.gaps(theta, nu) <= FOCUS * CUTOFF * tau))

    def focus_all(self) -> None:
        """W = V."""
        if self.sel.size != self.rows.size:
            self._work(np.arange(self.rows.size))

    def widen(self, theta: np.ndarray, nu: float, tau: float) -> int:
        """Add to W the pairs of V that would carry weight at (θ, ν) (and those within
        ``FOCUS`` reaches); returns how many of the first kind were missing (0: the pass
        over W equals the pass over V there)."""
        g = self.gaps(theta, nu)
        inside = np.zeros(self.rows.size, dtype=bool)
        inside[self.sel] = True
        missing = int(np.count_nonzero(~inside & (g < CUTOFF * tau)))
        if missing:
            self._work(np.flatnonzero(inside | (g <= FOCUS * CUTOFF * tau)))
        return missing

    def add(self, rows: np.ndarray, cols: np.ndarray) -> None:
        self._sort(np.concatenate([self.rows, rows]), np.concatenate([self.cols, cols]))

    def L_of(self, theta: np.ndarray) -> np.ndarray:
        """L[a, i] = log(r(a | i) / p(a)) over the live private values."""
        return np.ascontiguousarray(log_softmax(theta) - self.log_p)

    def full_L(self, theta: np.ndarray) -> np.ndarray:
        """L over every private value (0 where p(a) = 0), as the pricers take it."""
        L = np.zeros((self.problem.p_a.size, self.problem.n))
        L[self.live] = self.L_of(theta)
        return L

    def evaluate(self, theta: np.ndarray, nu: float, tau: float
                 ) -> tuple[float, np.ndarray, float]:
        """(smoothed dual value, its gradient in L, E[d] of the soft assignment)."""
        value, GT, used = self._pass(np.ascontiguousarray(self.L_of(theta).T), nu, tau)
        return value, GT.T, used

    def _pass(self, LT: np.ndarray, nu: float, tau: float) -> tuple[float, np.ndarray, float]:
        """(value, its gradient in L as (n, k), E[d]) at L = LT.T, over W."""
        args = (LT, self.ST, self.p_b, self.w_rows, self.w_d, self.w_starts, nu, tau)
        GTs = [np.zeros_like(LT) for _ in self.ranges]
        later = None
        if len(self.ranges) == 2 and self.threads > 1:  # the second half on the pool's thread
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="sppm-dual")
            later = self._pool.submit(_soft_pass, *args, GTs[1], self.w, *self.ranges[1])
        parts = [_soft_pass(*args, GTs[0], self.w, *self.ranges[0])]
        if later is not None:
            parts.append(later.result())
        elif len(self.ranges) == 2:
            parts.append(_soft_pass(*args, GTs[1], self.w, *self.ranges[1]))
        value, used = sum(v for v, _ in parts), sum(u for _, u in parts)
        GT = GTs[0] if len(GTs) == 1 else GTs[0] + GTs[1]
        return value - nu * self.delta, GT, used

    def close(self) -> None:
        """Stop the pass's second thread (if it started)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def objective(self, par: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
        """-value and -gradient in (θ, log ν), for L-BFGS (compiled but for the pass)."""
        n, k = self.problem.n, self.live.size
        nu = math.exp(par[-1])
        LT, rT = np.empty((n, k)), np.empty((n, k))
        _decoder(par, self.log_p_flat, LT, rT)
        value, GT, used = self._pass(LT, nu, tau)
        grad = np.empty(par.size)
        _chain(GT, rT, grad)
        grad[-1] = -(used - self.delta) * nu
        return -value, grad

    def soft_mapping(self, theta: np.ndarray, nu: float, tau: float) -> tuple[np.ndarray, float]:
        """The soft assignment on W as mapping values x on V (columns sum to one), and its E[d]."""
        _, _, used = self.evaluate(theta, nu, tau)
        w, cols = self.w, self.w_cols
        x = np.zeros(self.rows.size)
        x[self.sel] = w / np.bincount(cols, weights=w, minlength=self.problem.n)[cols]
        return x, used

    def primal(self, theta: np.ndarray, nu: float, tau: float) -> tuple[float, np.ndarray]:
        """(I in nats, x) of the soft assignment at the ν that spends exactly Δ (or less)."""
        def excess(log_nu: float) -> float:
            return self.soft_mapping(theta, math.exp(log_nu), tau)[1] - self.delta

        log_nu = math.log(nu)
        if excess(log_nu) > 0:  # over budget: E[d] falls as ν grows
            hi = log_nu + 1.0
            while excess(hi) > 0:
                if hi > log_nu + 60.0:  # V cannot meet the budget at this temperature
                    return math.inf, self.soft_mapping(theta, nu, tau)[0]
                hi += 5.0
            log_nu = so.brentq(excess, log_nu, hi, xtol=1e-12)
            if excess(log_nu) > 0:  # the root's rounding side: take the feasible end
                log_nu = hi
        x, used = self.soft_mapping(theta, math.exp(log_nu), tau)
        a = self.p_b[self.cols] * self.d
        if float(a @ x) > self.delta:
            return math.inf, x
        p = self.problem
        return leakage_nats(output_joint(p.joint, self.rows, self.cols, x, p.n), p.p_a), x

    def minima(self, L_live: np.ndarray, nu: float) -> np.ndarray:
        return _minima(np.ascontiguousarray(L_live.T), self.ST, self.p_b, self.rows, self.d,
                       self.starts, nu)

    def violators(self, L: np.ndarray, nu: float, inputs: np.ndarray, v_min: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (i, j), j in ``inputs``, with cost below j's minimum over V, not in V.

        A dense scan of those inputs' columns (in blocks), at most ``CAP`` per input.
        """
        p = self.problem
        n = p.n
        out_r: list[np.ndarray] = []
        out_c: list[np.ndarray] = []
        step = max(1, BLOCK_ENTRIES // max(n, 1))
        outputs = np.arange(n)
        for s in range(0, inputs.size, step):
            J = inputs[s: s + step]
            C = L.T @ p.joint[:, J] + nu * p.distortion.block(outputs, J) * p.p_b[J][None, :]
            ii, kk = np.nonzero(C < v_min[J][None, :] - VIOLATION)
            order = np.lexsort((C[ii, kk], kk))  # by input, the most violating first
            ii, kk = ii[order], kk[order]
            rank = np.arange(kk.size) - np.searchsorted(kk, kk)  # place within its input
            ii, jj = ii[rank < CAP], J[kk[rank < CAP]]
            fresh = ~self._in_v(ii, jj)
            out_r.append(ii[fresh].astype(np.int64))
            out_c.append(jj[fresh].astype(np.int64))
        if not out_r:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate(out_r), np.concatenate(out_c)

    def _in_v(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Whether each pair (rows[t], cols[t]) is in V."""
        keys = rows * self.problem.n + cols
        at = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        return self.keys[at] == keys if self.keys.size else np.zeros(keys.size, dtype=bool)


def dual_rounds(problem: PrivacyProblem, delta: float, rows: np.ndarray, cols: np.ndarray,
                x: np.ndarray, nu: float, price: Callable[[np.ndarray, float],
                                                          tuple[np.ndarray, np.ndarray]],
                tol: float, rounds: int, log: list[dict],
                on_round: Callable[[DualRound], None] | None = None, threads: int = 1,
                start: tuple[np.ndarray, float] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, str,
                           tuple[np.ndarray, float]]:
    """Rounds of smoothed dual ascent on V and exact pricing, from the mapping (rows, cols, x).

    ``price(L, λ)`` is exact pricing over all n outputs (λ = -ν <= 0), returning the
    (argmin, min) per input of c_ij - λ a_ij. Returns the pairs, the best mapping on them,
    the best certified lower bound (nats), why it stopped and the last dual point
    (logits θ, ν). ``threads`` (1 or 2) run the smoothed dual's passes. ``start`` (θ, ν),
    a warm start (:mod:`.continuation`), replaces the posterior of x and ``nu`` as the
    first dual point and skips the coarse temperatures.
    """
    n = problem.n
    dual = RestrictedDual(problem, delta, rows, cols, threads)
    if start is None:
        theta = posterior_logits(problem, rows, cols, x, dual.S)
    else:
        theta, nu = np.clip(start[0], -LOGIT_BOUND, LOGIT_BOUND), start[1]
    log_nu = float(np.clip(math.log(max(nu, 1e-8)), *LOG_NU_BOUNDS))
    best_ub = leakage_nats(output_joint(problem.joint, rows, cols, x, n), problem.p_a)
    best = (dual.rows.copy(), dual.cols.copy(), _align(rows, cols, x, dual, n))
    # I* >= 0 is certified for free: once a primal point has I <= tol the run is done,
    # whatever the dual's own bound (census at 0.3 d_const: I ~ 1e-4 bits from round 3 while
    # LB(r, nu) stayed near -4e-3 bits for 7 more rounds, 100 s)
    best_lb = 0.0
    floor = min(TAUS[-1], max(tol, TOL_FLOOR) * LN2 / 30)  # tol = 0: still a temperature
    taus = [t for t in TAUS if t > floor] + [floor]
    stop = "dual mode: rounds exhausted"
    coarse = start is None
    box = (np.r_[np.full(theta.size, -LOGIT_BOUND), LOG_NU_BOUNDS[0]],
           np.r_[np.full(theta.size, LOGIT_BOUND), LOG_NU_BOUNDS[1]])
    try:  # a run stopped by its time limit (an exception here) leaves no pass thread
        for rnd in range(rounds):
            t0 = time.perf_counter()
            evaluations = 0
            par = np.concatenate([theta.ravel(), [log_nu]])
            if coarse:  # V is still growing fast: no need for a sharp dual yet
                stages = taus[:LATER_START] if rnd == 0 else taus[LATER_START - 1: LATER_START]
            else:
                stages = taus[LATER_START:]
            for tau in stages:
                par, nfev = _ascend(dual, par, tau, box, theta.shape)
                evaluations += nfev
                if tau >= PRIMAL_MIN_TAU or tau == taus[-1]:
                    ub, xs = dual.primal(par[:-1].reshape(theta.shape), math.exp(par[-1]), tau)
                    if ub < best_ub:
                        best_ub, best = ub, (dual.rows.copy(), dual.cols.copy(), xs)
            theta, log_nu = par[:-1].reshape(theta.shape), par[-1]
            nu = math.exp(log_nu)
            L = dual.full_L(theta)
            best_i, best_v = price(L, -nu)
            best_lb = max(best_lb, float(best_v.sum()) - nu * delta)
            v_min = dual.minima(dual.L_of(theta), nu)
            inputs = np.flatnonzero(best_v < v_min - VIOLATION)
            new_r, new_c = dual.violators(L, nu, inputs, v_min)
            if new_r.size:
                dual.add(new_r, new_c)
            record = DualRound(dual.rows.size, best_lb / LN2, best_ub / LN2, int(new_r.size),
                               evaluations, time.perf_counter() - t0)
            log.append(record.as_dict())
            if on_round is not None:
                on_round(record)
            if (best_ub - best_lb) / LN2 < tol:
                stop = "tolerance (dual mode)"
                break
            if coarse and new_r.size <= COARSE_EXIT * n:
                coarse = False
                continue
            if new_r.size == 0:  # V holds the support: sharpen the smoothing instead
                floor /= 3.0
                taus = taus + [floor]
    finally:
        dual.close()
    rows_b, cols_b, x_b = best
    return rows_b, cols_b, x_b, best_lb, stop, (theta, math.exp(log_nu))


def posterior_logits(problem: PrivacyProblem, rows: np.ndarray, cols: np.ndarray,
                     x: np.ndarray, S: np.ndarray) -> np.ndarray:
    """The dual mode's logits of the posterior of the mapping x (outputs without mass take
    their own input's posterior S), clipped to ±``LOGIT_BOUND``: its cold start."""
    Q = output_joint(problem.joint, rows, cols, x, problem.n)[problem.p_a > 0]
    q = Q.sum(axis=0)
    post = np.where(q > 0, Q / np.where(q > 0, q, 1.0), S)
    log_post = np.log(np.clip(post, 1e-13, 1.0))
    return np.clip(log_post[:-1] - log_post[-1], -LOGIT_BOUND, LOGIT_BOUND)


def _ascend(dual: RestrictedDual, par: np.ndarray, tau: float, box: tuple[np.ndarray, np.ndarray],
            shape: tuple[int, int]) -> tuple[np.ndarray, int]:
    """L-BFGS (:mod:`.lbfgs`) on the smoothed dual at τ over the working pairs W, from
    ``par``; W is widened (and the ascent resumed with the same curvature pairs) while
    pairs of V outside it would carry weight at the end point. Returns the end point and
    the evaluations spent."""
    evaluations = 0
    if tau > FOCUS_MAX_TAU:
        dual.focus_all()
    else:
        dual.focus(par[:-1].reshape(shape), math.exp(par[-1]), tau)
    memory = lbfgs.Memory(par.size, LBFGS_MEMORY if tau > FOCUS_MAX_TAU else lbfgs.MEMORY)
    for _ in range(FOCUS_TRIES):
        res = lbfgs.minimize(lambda p: dual.objective(p, tau), par, *box, memory,
                             maxiter=MAXITER)
        par = res.x
        evaluations += res.nfev
        if not dual.widen(par[:-1].reshape(shape), math.exp(par[-1]), tau):
            break
    return par, evaluations


def _align(rows: np.ndarray, cols: np.ndarray, x: np.ndarray, dual: RestrictedDual,
           n: int) -> np.ndarray:
    """x on (rows, cols) re-indexed to the dual's sorted pairs (same pair set)."""
    lookup = dict(zip((rows * n + cols).tolist(), x.tolist(), strict=True))
    return np.array([lookup.get(k, 0.0) for k in (dual.rows * n + dual.cols).tolist()])
