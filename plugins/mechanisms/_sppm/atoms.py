"""The iterate as a convex combination of LP vertices ("atoms"), for pairwise steps.

Classic Frank-Wolfe (the paper's Algorithm 1) only moves toward the new vertex and
zig-zags near the optimum. Keeping the vertices lets a step move weight *from* the
worst active vertex *to* the best one (pairwise FW, Lacoste-Julien & Jaggi 2015),
and lets corrective steps re-balance the kept vertices without another LP. Memory is
O(atoms x (|V| + |A| n)); a vertex found twice is stored once, and vertices whose
weight drops to zero are discarded.
"""

from __future__ import annotations

import numpy as np


def _signature(x: np.ndarray) -> bytes:
    nz = np.flatnonzero(x > 1e-15)
    return nz.tobytes() + np.round(x[nz], 12).tobytes()


class AtomSet:
    """Vertices x_t (zero-padded as V grows), their flattened Q_t in one buffer, weights w_t."""

    def __init__(self, x0: np.ndarray, Q0: np.ndarray) -> None:
        self.shape = Q0.shape
        self._Q = np.empty((8, Q0.size))
        self._Q[0] = Q0.ravel()
        self.xs: list[np.ndarray] = [x0.copy()]
        self.w: list[float] = [1.0]
        self.sig: list[bytes] = [_signature(x0)]

    def __len__(self) -> int:
        return len(self.w)

    def Q(self, t: int) -> np.ndarray:
        return self._Q[t].reshape(self.shape)

    def x_of(self, t: int, size: int) -> np.ndarray:
        v = self.xs[t]
        if v.size < size:
            v = np.concatenate([v, np.zeros(size - v.size)])
            self.xs[t] = v
        return v

    def add(self, x: np.ndarray, Q: np.ndarray) -> int:
        """Index of vertex x, stored now unless an equal vertex is already kept."""
        sig = _signature(x)
        if sig in self.sig:
            return self.sig.index(sig)
        k = len(self.w)
        if k == self._Q.shape[0]:
            grown = np.empty((2 * k, self._Q.shape[1]))
            grown[:k] = self._Q
            self._Q = grown
        self._Q[k] = Q.ravel()
        self.xs.append(x.copy())
        self.w.append(0.0)
        self.sig.append(sig)
        return k

    def scores(self, L: np.ndarray) -> np.ndarray:
        """⟨c, x_t⟩ = Σ_{a,i} L[a, i] Q_t[a, i] for every atom (linear cost of each vertex)."""
        return self._Q[: len(self.w)] @ L.ravel()

    def _drop(self, t: int) -> None:
        last = len(self.w) - 1
        if t != last:  # move the last atom into slot t
            self._Q[t] = self._Q[last]
            self.xs[t], self.w[t], self.sig[t] = self.xs[last], self.w[last], self.sig[last]
        self.xs.pop()
        self.w.pop()
        self.sig.pop()

    def collapse(self, x: np.ndarray, Q: np.ndarray) -> None:
        """Forget the vertices: the current iterate becomes the only atom (caps memory)."""
        self.__init__(x, Q)  # type: ignore[misc]

    def toward(self, dst: int, gamma: float) -> None:
        """A classic Frank-Wolfe step: every weight times (1 - gamma), dst gains gamma."""
        self.w = [(1.0 - gamma) * w for w in self.w]
        self.w[dst] += gamma
        for t in sorted((t for t, w in enumerate(self.w) if w <= 1e-15 and t != dst),
                        reverse=True):
            self._drop(t)

    def move(self, src: int, dst: int, gamma: float) -> None:
        """Shift weight gamma from atom src to atom dst; drop src when it empties."""
        self.w[dst] += gamma
        self.w[src] -= gamma
        if self.w[src] <= 1e-15:
            self.w[dst] += self.w[src]
            self._drop(src)
