"""Pricing (SPPM Algorithm 2, step (7)): the most violated dual constraint per input j.

For a budget dual λ <= 0 it computes, for every input j,
``m_j = min_i c[i, j] - λ p(b_j) d(b̂_i, b_j)`` and the minimising i. With the master's
μ_j, column (i, j) prices out iff ``m_j - μ_j < 0``; and whatever λ <= 0 is,
``λ Δ + Σ_j m_j`` is a lower bound of the full LP over all n² pairs (Lagrangian
duality), which is what makes the Frank-Wolfe gap certified.

The cost matrix is the rank-|A| product C = Lᵀ P, built and scanned in blocks of
columns so memory stays O(n · block) (DESIGN.md: never an n x n matrix).
"""

from __future__ import annotations

import numpy as np

from privbench import Distortion

#: entries per block (n x block floats, a few temporaries)
BLOCK_ENTRIES = 2**20


def price(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, distortion: Distortion, lam: float,
          empty: np.ndarray, empty_cost: np.ndarray | None = None,
          block_entries: int = BLOCK_ENTRIES) -> tuple[np.ndarray, np.ndarray]:
    """Return (argmin_i, min_i) of c[i, j] - λ p(b_j) d(b̂_i, b_j) for every j.

    :param L: decoder log-ratios (|A|, n); c[i, j] = Σ_a L[a, i] P[a, j]
    :param empty: outputs with no mass; their cost is ``empty_cost[j]`` (0 when None)
    """
    n = P.shape[1]
    best_i = np.empty(n, dtype=np.int64)
    best_v = np.empty(n)
    all_rows = np.arange(n)
    step = max(1, min(n, block_entries // max(n, 1)))
    has_empty = bool(empty.any())
    LT = np.ascontiguousarray(L.T)
    for s in range(0, n, step):
        J = np.arange(s, min(n, s + step))
        M = LT @ P[:, J]
        if has_empty:
            M[empty, :] = 0.0 if empty_cost is None else empty_cost[J][None, :]
        if lam != 0.0:
            D = distortion.block(all_rows, J)
            D *= -lam * p_b[J][None, :]
            M += D
        idx = np.argmin(M, axis=0)
        best_i[J] = idx
        best_v[J] = M[idx, np.arange(J.size)]
    return best_i, best_v
