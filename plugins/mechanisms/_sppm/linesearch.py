"""Exact line search (SPPM problem (5)) on γ, in the space of Q = p(a, b̂).

φ(γ) = I(A; B̂) at (1 - γ) X + γ X' only depends on Q(γ) = (1 - γ) Q + γ Q', an
|A| x n array, so each evaluation is O(|A| n). φ is convex; we bisect on the sign of
φ'(γ) = Σ ΔQ[a, i] log(Q_γ[a, i] / (p(a) q_γ[i])), which is exact to machine
precision in ~60 halvings and needs no bracketing grid.
"""

from __future__ import annotations

import numpy as np

from .leakage import leakage_nats


def _derivative(Q: np.ndarray, dQ: np.ndarray, p_a: np.ndarray, gamma: float) -> float:
    Qg = Q + gamma * dQ
    np.maximum(Qg, 0.0, out=Qg)
    qg = Qg.sum(axis=0)
    mask = dQ != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(Qg[mask]) - np.log((p_a[:, None] * qg[None, :])[mask])
    terms = dQ[mask] * logs
    # Qg = 0 with dQ > 0 happens only at γ = 0: slope -inf, any step helps
    terms = np.where(np.isnan(terms), 0.0, terms)
    return float(terms.sum())


def exact_line_search(Q: np.ndarray, Q_new: np.ndarray, p_a: np.ndarray, gamma_max: float = 1.0,
                      *, iterations: int = 64) -> tuple[float, float]:
    """Return (γ*, φ(γ*)) minimising φ on [0, gamma_max]; γ* = 0 if no step helps."""
    dQ = Q_new - Q
    f0 = leakage_nats(Q, p_a)
    if gamma_max <= 0 or not np.any(dQ):
        return 0.0, f0
    if _derivative(Q, dQ, p_a, gamma_max) <= 0:
        gamma = gamma_max
    else:
        lo, hi = 0.0, gamma_max
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if _derivative(Q, dQ, p_a, mid) > 0:
                hi = mid
            else:
                lo = mid
        gamma = lo if lo > 0 else hi
    f = leakage_nats(np.maximum(Q + gamma * dQ, 0.0), p_a)
    if f > f0 + 4 * np.finfo(float).eps * max(1.0, abs(f0)):
        return 0.0, f0
    return gamma, f
