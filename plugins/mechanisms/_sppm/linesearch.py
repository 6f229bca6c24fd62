"""Exact line search (SPPM problem (5)) on γ, in the space of Q = p(a, b̂).

φ(γ) = I(A; B̂) at (1 - γ) X + γ X' only depends on Q(γ) = Q + γ ΔQ, an |A| x n
array, so each evaluation is O(|A| n). φ is convex, with

    φ'(γ)  = Σ ΔQ[a, i] log(Q_γ[a, i] / (p(a) q_γ[i]))
    φ''(γ) = Σ ΔQ[a, i]² / Q_γ[a, i] - Σ Δq[i]² / q_γ[i]   (>= 0)

We keep a bracket [lo, hi] with φ'(lo) < 0 < φ'(hi) and take Newton steps on φ',
bisecting whenever Newton leaves the bracket: exact to machine precision in a
handful of evaluations, with bisection's guarantee; no grid.
"""

from __future__ import annotations

import numpy as np

from .leakage import leakage_nats


class _Segment:
    """φ', φ'' along Q + γ ΔQ, on the flattened entries that move."""

    def __init__(self, Q: np.ndarray, dQ: np.ndarray, p_a: np.ndarray) -> None:
        cols = np.flatnonzero(np.any(dQ != 0, axis=0))
        a_idx, c_idx = np.nonzero(dQ[:, cols])
        self.Q = Q[:, cols][a_idx, c_idx]
        self.dQ = dQ[:, cols][a_idx, c_idx]
        self.col = c_idx
        # q_γ = mass that does not move + the moving entries, so q_γ >= every Q_γ entry
        self.q_still = Q[:, cols].sum(axis=0) - np.bincount(c_idx, self.Q, cols.size)
        self.dq = dQ[:, cols].sum(axis=0)
        self.log_pa = np.log(np.where(p_a > 0, p_a, 1.0))[a_idx]

    def derivatives(self, gamma: float) -> tuple[float, float]:
        Qg = self.Q + gamma * self.dQ
        zero = Qg <= 0
        if zero.any():  # an entry at 0: slope -inf if it is growing, +inf if it is vanishing
            return (-np.inf if np.any(self.dQ[zero] > 0) else np.inf), np.inf
        qg = self.q_still + np.bincount(self.col, Qg, self.q_still.size)
        g = float(self.dQ @ (np.log(Qg) - self.log_pa - np.log(qg)[self.col]))
        with np.errstate(over="ignore", invalid="ignore"):
            h = float(self.dQ @ (self.dQ / Qg) - self.dq @ (self.dq / qg))
        return g, h


def exact_line_search(Q: np.ndarray, Q_new: np.ndarray, p_a: np.ndarray, gamma_max: float = 1.0,
                      *, max_evals: int = 100) -> tuple[float, float]:
    """Return (γ*, φ(γ*)) minimising φ on [0, gamma_max]; γ* = 0 if no step helps."""
    dQ = Q_new - Q
    f0 = leakage_nats(Q, p_a)
    if gamma_max <= 0 or not np.any(dQ):
        return 0.0, f0
    seg = _Segment(Q, dQ, p_a)
    g_hi, _ = seg.derivatives(gamma_max)
    if g_hi <= 0:
        gamma = gamma_max
    else:
        lo, hi = 0.0, gamma_max
        g0, h0 = seg.derivatives(0.0)
        if g0 >= 0:
            return 0.0, f0
        gamma = 0.5 * gamma_max if not np.isfinite(g0) or h0 <= 0 else \
            min(0.5 * gamma_max, -g0 / h0)
        for _ in range(max_evals):
            g, h = seg.derivatives(gamma)
            if g == 0:
                lo = hi = gamma
                break
            if g < 0:
                lo = gamma
            else:
                hi = gamma
            if hi - lo <= 4 * np.finfo(float).eps * max(hi, 1e-300):
                break
            step = gamma - g / h if 0 < h < np.inf and np.isfinite(g) else np.nan
            if lo < step < hi:
                if abs(step - gamma) <= 1e-13 * gamma:  # Newton has converged
                    lo = hi = step
                    break
                gamma = step
            else:
                gamma = 0.5 * (lo + hi)
        gamma = lo if lo > 0 else hi
    f = leakage_nats(np.maximum(Q + gamma * dQ, 0.0), p_a)
    if f > f0 + 4 * np.finfo(float).eps * max(1.0, abs(f0)):
        return 0.0, f0
    return gamma, f
