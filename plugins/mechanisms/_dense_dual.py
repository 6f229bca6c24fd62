"""The dense kernels of ``smoothed_dual``: the soft-min pass over all n² pairs (numba),
the dual objective, its primal point and certified bounds (:class:`DenseDual`).

Kept apart from the plugin module so that listing plugins imports neither numba nor
scipy.optimize; ``smoothed_dual`` imports this module when it prepares or runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np
import scipy.optimize as so

import privbench as pb
from privbench.measures.information import leakage_nats
from privbench.protocol.certificate import floored_posterior

from ._softmin import soft_weights

LN2 = math.log(2.0)
#: decoder logits stay in [-LOGIT_BOUND, LOGIT_BOUND] (r >= ~1e-13: finite costs)
LOGIT_BOUND = 30.0
#: log ν may move this far (nats) from its first estimate
LOG_NU_RANGE = 40.0
#: threads only pay above this n (below, a parallel region's start-up, ~8 ms on a loaded
#: 2-core machine, costs more than the whole serial pass: 0.06 ms at n = 100)
PARALLEL_MIN_N = 1024


@numba.njit(cache=True, nogil=True)
def _costs(LT, ST, DT, nu, j, out):  # pragma: no cover - compiled
    """out[i] = ĉ_ij = Σ_a S[j,a] L[i,a] + ν d_ij for every output i of input j."""
    n, k = LT.shape
    for i in range(n):
        v = nu * DT[j, i]
        for a in range(k):
            v += ST[j, a] * LT[i, a]
        out[i] = v


@numba.njit(cache=True, nogil=True)
def _pass_inputs(LT, ST, p_b, DT, nu, tau, G, grad, lo, hi):  # pragma: no cover - compiled
    """Inputs lo..hi-1 of the dense pass: (Σ_j p_j softmin_i ĉ_ij, Σ_j p_j min_i ĉ_ij, E[d]
    of the soft assignment), ĉ_ij = Σ_a S[j,a] L[i,a] + ν d_ij; with ``grad``, adds the
    soft value's gradient in L into G (n x k). Terms below e^-CUTOFF of the largest are 0.
    """
    n, k = LT.shape
    buf = np.empty(n)
    inv = 1.0 / tau
    soft = 0.0
    hard = 0.0
    used = 0.0
    for j in range(lo, hi):
        pj = p_b[j]
        if pj <= 0.0:
            continue
        _costs(LT, ST, DT, nu, j, buf)
        m, z = soft_weights(buf, 0, n, inv)
        soft += pj * (m - tau * math.log(z))
        hard += pj * m
        scale = pj / z
        for i in range(n):
            e = buf[i]
            if e == 0.0:
                continue
            wt = e * scale
            used += wt * DT[j, i]
            if grad:
                for a in range(k):
                    G[i, a] += wt * ST[j, a]
    return soft, hard, used


@numba.njit(parallel=True, cache=True)
def _pass_parallel(LT, ST, p_b, DT, nu, tau, GT_parts, grad):  # pragma: no cover - compiled
    """:func:`_pass_inputs` over chunks of inputs in parallel, each into its own GT_parts[c]."""
    n = LT.shape[0]
    chunks = GT_parts.shape[0]
    size = (n + chunks - 1) // chunks
    out = np.zeros((chunks, 3))
    for c in numba.prange(chunks):
        s, h, u = _pass_inputs(LT, ST, p_b, DT, nu, tau, GT_parts[c], grad, c * size,
                               min(n, (c + 1) * size))
        out[c, 0] = s
        out[c, 1] = h
        out[c, 2] = u
    return out[:, 0].sum(), out[:, 1].sum(), out[:, 2].sum()


@numba.njit(cache=True, nogil=True)
def _weights_inputs(LT, ST, p_b, DT, nu, tau, WT, lo, hi):  # pragma: no cover - compiled
    """Fill WT[j] (lo <= j < hi) with input j's soft assignment (sums to one); its E[d]."""
    n, k = LT.shape
    inv = 1.0 / tau
    used = 0.0
    for j in range(lo, hi):
        row = WT[j]
        _costs(LT, ST, DT, nu, j, row)
        _, z = soft_weights(row, 0, n, inv)
        s = 0.0
        for i in range(n):
            row[i] /= z
            s += row[i] * DT[j, i]
        used += p_b[j] * s
    return used


@numba.njit(parallel=True, cache=True)
def _weights_parallel(LT, ST, p_b, DT, nu, tau, WT, chunks):  # pragma: no cover - compiled
    n = LT.shape[0]
    size = (n + chunks - 1) // chunks
    out = np.zeros(chunks)
    for c in numba.prange(chunks):
        out[c] = _weights_inputs(LT, ST, p_b, DT, nu, tau, WT, c * size, min(n, (c + 1) * size))
    return out.sum()


def log_softmax(theta: np.ndarray) -> np.ndarray:
    """log r for the free logits θ ((k-1) x n; the last live private value's logit is 0)."""
    full = np.vstack([theta, np.zeros((1, theta.shape[1]))])
    top = full.max(axis=0)
    return full - (top + np.log(np.exp(full - top).sum(axis=0)))


class DenseDual:
    """The smoothed dual of problem (1) over every pair, with the best hard bound seen.

    Arrays handed to the kernels are private, writable, C-contiguous copies: numba
    compiles read-only arguments separately, and the runner's arrays are read-only.
    """

    def __init__(self, problem: pb.PrivacyProblem, delta: float, D: np.ndarray,
                 parallel: bool = False) -> None:
        self.problem, self.delta, self.n = problem, float(delta), problem.n
        self.live = np.flatnonzero(problem.p_a > 0)
        self.P = np.array(problem.joint[self.live], dtype=np.float64)
        self.p_a = np.array(problem.p_a[self.live], dtype=np.float64)
        self.log_p = np.log(self.p_a)[:, None]
        self.p_b = np.array(problem.p_b, dtype=np.float64)
        safe = np.where(self.p_b > 0, self.p_b, 1.0)
        self.ST = np.ascontiguousarray((self.P / safe[None, :]).T)
        self.DT = np.array(D.T, dtype=np.float64, order="C")
        self.parallel = bool(parallel)
        self.chunks = int(min(self.n, 4 * numba.get_num_threads())) if parallel else 1
        self.GT_parts = np.zeros((self.chunks, self.n, self.live.size))
        self.WT = np.empty((self.n, self.n))
        self.best_lb = -math.inf
        self.best_nu = math.nan
        self.evaluations = 0

    # -- the dual ------------------------------------------------------------------------
    def start(self) -> np.ndarray:
        """Logits of the identity's posterior r(a | b̂_i) = p(a | b_i) (p(a) where p(b_i) = 0)."""
        post = np.where(self.p_b[None, :] > 0, self.ST.T, self.p_a[:, None])
        log_post = np.log(floored_posterior(post, self.p_a))
        return np.clip(log_post[:-1] - log_post[-1], -LOGIT_BOUND, LOGIT_BOUND)

    def _pass(self, log_r: np.ndarray, nu: float, tau: float, grad: bool
              ) -> tuple[float, np.ndarray | None, float]:
        """(soft value, gradient in L or None, E[d]); records the hard bound it certifies."""
        LT = np.ascontiguousarray((log_r - self.log_p).T)
        if grad:
            self.GT_parts.fill(0.0)
        if self.parallel:
            soft, hard, used = _pass_parallel(LT, self.ST, self.p_b, self.DT, nu, tau,
                                              self.GT_parts, grad)
        else:
            soft, hard, used = _pass_inputs(LT, self.ST, self.p_b, self.DT, nu, tau,
                                            self.GT_parts[0], grad, 0, self.n)
        self.evaluations += 1
        lb = hard - nu * self.delta
        if lb > self.best_lb:
            self.best_lb, self.best_nu = lb, nu
        G = self.GT_parts.sum(axis=0).T if grad else None
        return soft - nu * self.delta, G, used

    def objective(self, par: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
        """-value and -gradient in (θ, log ν), for L-BFGS-B."""
        theta = par[:-1].reshape(self.live.size - 1, self.n)
        nu = math.exp(par[-1])
        log_r = log_softmax(theta)
        value, G, used = self._pass(log_r, nu, tau, True)
        r = np.exp(log_r)
        g_theta = (G - r * G.sum(axis=0))[:-1]  # chain rule through the softmax
        g_nu = (used - self.delta) * nu
        return -value, -np.concatenate([g_theta.ravel(), [g_nu]])

    def soft_used(self, theta: np.ndarray, log_nu: float, tau: float) -> float:
        """E[d] of the soft assignment (no gradient)."""
        return self._pass(log_softmax(theta), math.exp(log_nu), tau, False)[2]

    def budget_nu(self, theta: np.ndarray, log_nu: float, tau: float,
                  used: Callable[[float], float] | None = None) -> float:
        """The log ν at which the soft assignment spends exactly Δ (the feasible side).

        E[d] falls as ν grows; the root is bracketed by steps of 2 from ``log_nu``, found by
        Brent's method and nudged up until the budget holds. Returns +inf if no ν in range
        meets it (Δ below what the soft assignment can reach at this τ).
        """
        f = used or (lambda ln: self.soft_used(theta, ln, tau))

        def excess(ln: float) -> float:
            return f(ln) - self.delta

        e0 = excess(log_nu)
        if e0 == 0.0:
            return log_nu
        step = 2.0 if e0 > 0 else -2.0
        lo = log_nu
        hi = lo + step
        while (excess(hi) > 0) == (e0 > 0):
            lo, hi = hi, hi + step
            if abs(hi - log_nu) > 2 * LOG_NU_RANGE:
                return math.inf if e0 > 0 else hi
        a, b = min(lo, hi), max(lo, hi)
        root = so.brentq(excess, a, b, xtol=1e-13, rtol=1e-14)
        nudge = 1e-12
        while excess(root) > 0:
            if root > b:
                return b
            root += nudge
            nudge *= 4.0
        return root

    # -- the primal ----------------------------------------------------------------------
    def primal(self, theta: np.ndarray, log_nu: float, tau: float
               ) -> tuple[float, np.ndarray | None]:
        """(I in nats, WT) of the soft assignment at the ν that spends Δ (inf, None if none)."""
        LT = np.ascontiguousarray((log_softmax(theta) - self.log_p).T)

        def used(ln: float) -> float:
            if self.parallel:
                return _weights_parallel(LT, self.ST, self.p_b, self.DT, math.exp(ln), tau,
                                         self.WT, self.chunks)
            return _weights_inputs(LT, self.ST, self.p_b, self.DT, math.exp(ln), tau, self.WT,
                                   0, self.n)

        ln = self.budget_nu(theta, log_nu, tau, used)
        if not math.isfinite(ln):
            return math.inf, None
        if used(ln) > self.delta:
            return math.inf, None
        return leakage_nats(self.P @ self.WT, self.p_a), self.WT.copy()

    def posterior_bound(self, WT: np.ndarray, nu: float) -> None:
        """Price the posterior decoder of a primal point (a free second certificate)."""
        Q = self.P @ WT
        q = Q.sum(axis=0)
        post = np.where(q[None, :] > 0, Q / np.where(q > 0, q, 1.0)[None, :], self.p_a[:, None])
        log_r = np.log(floored_posterior(post, self.p_a))  # a decoder: columns sum to 1
        self._pass(log_r, nu, 1.0, False)


class OutOfTime(Exception):
    """``max_seconds`` passed during a stage."""


#: whether this process has compiled the kernels (see :func:`compile_once`)
_WARMED: set[bool] = set()


def compile_once() -> None:
    """Compile the kernels once per process (``smoothed_dual``'s untimed prepare)."""
    if not _WARMED:
        _compile()
        _WARMED.add(True)


def _compile() -> None:
    """Run both kernels once on 3 symbols with the argument types ``run`` passes."""
    n, k = 3, 2
    LT, ST = np.zeros((n, k)), np.full((n, k), 0.5)
    p_b, DT = np.full(n, 1 / 3), np.ones((n, n))
    G = np.zeros((1, n, k))
    for grad in (True, False):
        _pass_inputs(LT, ST, p_b, DT, 1.0, 0.1, G[0], grad, 0, n)
        _pass_parallel(LT, ST, p_b, DT, 1.0, 0.1, G, grad)
    _weights_inputs(LT, ST, p_b, DT, 1.0, 0.1, np.empty((n, n)), 0, n)
    _weights_parallel(LT, ST, p_b, DT, 1.0, 0.1, np.empty((n, n)), 1)
