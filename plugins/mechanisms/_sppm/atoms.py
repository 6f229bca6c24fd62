"""The iterate as a convex combination of LP vertices ("atoms"), for pairwise steps.

Classic Frank-Wolfe (the paper's Algorithm 1) only moves toward the new vertex and
zig-zags near the optimum. Keeping the vertices lets a step move weight *from* the
worst active vertex *to* the best one (pairwise FW, Lacoste-Julien & Jaggi 2015),
and lets corrective steps re-balance the kept vertices without another LP. Memory is
O(atoms x (|V| + |A| n)); vertices whose weight drops to zero are discarded.
"""

from __future__ import annotations

import numpy as np


class AtomSet:
    """Vertices x_t (over the active pairs, zero-padded as V grows), their Q_t, weights w_t."""

    def __init__(self, x0: np.ndarray, Q0: np.ndarray) -> None:
        self.xs: list[np.ndarray] = [x0.copy()]
        self.Qs: list[np.ndarray] = [Q0.copy()]
        self.w: list[float] = [1.0]

    def __len__(self) -> int:
        return len(self.w)

    def x_of(self, t: int, size: int) -> np.ndarray:
        v = self.xs[t]
        if v.size < size:
            v = np.concatenate([v, np.zeros(size - v.size)])
            self.xs[t] = v
        return v

    def add(self, x: np.ndarray, Q: np.ndarray) -> int:
        self.xs.append(x.copy())
        self.Qs.append(Q.copy())
        self.w.append(0.0)
        return len(self.w) - 1

    def scores(self, L: np.ndarray) -> np.ndarray:
        """⟨c, x_t⟩ = Σ_{a,i} L[a, i] Q_t[a, i] for every atom (linear cost of each vertex)."""
        return np.array([float(np.sum(L * Q)) for Q in self.Qs])

    def toward(self, dst: int, gamma: float) -> None:
        """A classic Frank-Wolfe step: every weight times (1 - gamma), dst gains gamma."""
        self.w = [(1.0 - gamma) * w for w in self.w]
        self.w[dst] += gamma
        keep = [t for t, w in enumerate(self.w) if w > 1e-15 or t == dst]
        if len(keep) < len(self.w):
            self.xs = [self.xs[t] for t in keep]
            self.Qs = [self.Qs[t] for t in keep]
            self.w = [self.w[t] for t in keep]

    def move(self, src: int, dst: int, gamma: float) -> None:
        """Shift weight gamma from atom src to atom dst; drop src when it empties."""
        self.w[dst] += gamma
        self.w[src] -= gamma
        if self.w[src] <= 1e-15:
            self.w[dst] += self.w[src]
            for seq in (self.xs, self.Qs, self.w):
                del seq[src]
