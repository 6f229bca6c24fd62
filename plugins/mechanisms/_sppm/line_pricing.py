"""Exact pricing on a line (1-D feature distortions) in O(n · local) instead of O(n²).

For input j the value of output i is ``v_ij = c_ij + (-λ) p(b_j) d(x_i, x_j)`` with
``c_ij = Σ_a P[a, j] L[a, i]`` (or ``empty_cost[j]`` at an output with no mass). The
outputs are sorted by coordinate and cut into contiguous blocks. Walking outward from
b_j's own block, a block β is bounded below by ``Σ_a P[a, j] min_{i∈β} L[a, i]`` plus
the distortion to its nearest end; it is scanned only when that bound beats the best
value found, and the walk in a direction stops as soon as the global cost bound
``Σ_a P[a, j] min_i L[a, i]`` plus the distortion to the next block cannot (every
farther block is farther). Both bounds are computed with the same operations, in the
same order, as the values they bound, so IEEE rounding (monotone) keeps them below:
the result is exactly the dense minimum, which the tests check.
"""

from __future__ import annotations

import numba
import numpy as np

#: outputs per block of the sorted line
BLOCK = 32
#: distortion kinds understood by the kernel (how d follows from the coordinate gap)
SQUARE, ABSOLUTE, INDICATOR = 0, 1, 2
KINDS = {"sq_l2": SQUARE, "l2": ABSOLUTE, "l1": ABSOLUTE, "hamming": INDICATOR}


@numba.njit(cache=True, inline="always")
def _dist(gap, kind):  # pragma: no cover - compiled
    if kind == SQUARE:
        return gap * gap
    if kind == ABSOLUTE:
        return abs(gap)
    return 1.0 if gap != 0.0 else 0.0


@numba.njit(cache=True, inline="always")
def _cost(L, P, j, i):  # pragma: no cover - compiled
    c = 0.0
    for a in range(L.shape[0]):
        c += P[a, j] * L[a, i]
    return c


@numba.njit(cache=True, nogil=True)
def _price_line(L, P, weight, empty, ecost, coord, order, rank, block, kind):  # pragma: no cover
    """(argmin_i, min_i) of c_ij + weight_j d(x_i, x_j) for every input j."""
    n_a, n = P.shape
    nb = (n + block - 1) // block
    # per block: min over live outputs of L[a, ·], whether it holds an empty output
    lmin = np.full((nb, n_a), np.inf)
    has_live = np.zeros(nb, dtype=np.bool_)
    has_empty = np.zeros(nb, dtype=np.bool_)
    for s in range(n):
        i = order[s]
        b = s // block
        if empty[i]:
            has_empty[b] = True
        else:
            has_live[b] = True
            for a in range(n_a):
                if L[a, i] < lmin[b, a]:
                    lmin[b, a] = L[a, i]
    lglob = np.full(n_a, np.inf)
    any_live = False
    for b in range(nb):
        if has_live[b]:
            any_live = True
            for a in range(n_a):
                lglob[a] = min(lglob[a], lmin[b, a])
    any_empty = False
    for b in range(nb):
        any_empty = any_empty or has_empty[b]
    best_i = np.empty(n, dtype=np.int64)
    best_v = np.empty(n)
    for j in range(n):
        xj = coord[j]
        w = weight[j]
        cglob = np.inf
        if any_live:
            cglob = 0.0
            for a in range(n_a):
                cglob += P[a, j] * lglob[a]
        if any_empty:
            cglob = min(cglob, ecost[j])
        best = np.inf
        arg = -1
        home = rank[j] // block
        for direction in range(2):
            b = home if direction == 0 else home - 1
            step = 1 if direction == 0 else -1
            while 0 <= b < nb:
                lo = coord[order[b * block]]
                hi = coord[order[min(b * block + block, n) - 1]]
                gap = lo - xj if xj < lo else (xj - hi if xj > hi else 0.0)
                dterm = w * _dist(gap, kind)
                if cglob + dterm >= best:
                    break  # farther blocks are farther still
                bound = np.inf
                if has_live[b]:
                    bound = 0.0
                    for a in range(n_a):
                        bound += P[a, j] * lmin[b, a]
                if has_empty[b]:
                    bound = min(bound, ecost[j])
                if bound + dterm < best:
                    for s in range(b * block, min(b * block + block, n)):
                        i = order[s]
                        c = ecost[j] if empty[i] else _cost(L, P, j, i)
                        v = c + w * _dist(coord[i] - xj, kind)
                        if v < best:
                            best = v
                            arg = i
                b += step
        best_i[j] = arg
        best_v[j] = best
    return best_i, best_v


class LinePricer:
    """Exact pricing for a 1-D feature distortion; build once per problem."""

    def __init__(self, coord: np.ndarray, metric: str, block: int = BLOCK) -> None:
        self.coord = np.ascontiguousarray(coord, dtype=np.float64)
        self.kind = KINDS[metric]
        self.order = np.argsort(self.coord, kind="stable").astype(np.int64)
        self.rank = np.empty_like(self.order)
        self.rank[self.order] = np.arange(self.order.size)
        self.block = int(block)

    @staticmethod
    def supports(distortion: object) -> bool:
        points = getattr(distortion, "points", None)
        metric = getattr(distortion, "metric", None)
        if points is None or metric not in KINDS or points.shape[1] != 1:
            return False
        return metric != "hamming" or bool(np.all((points == 0) | (points == 1)))

    def price(self, L: np.ndarray, P: np.ndarray, p_b: np.ndarray, lam: float,
              empty: np.ndarray, empty_cost: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """(argmin_i, min_i) of c_ij - λ p(b_j) d(b̂_i, b_j) over all outputs, for every j."""
        n = P.shape[1]
        ecost = np.zeros(n) if empty_cost is None else np.ascontiguousarray(empty_cost, float)
        weight = np.ascontiguousarray(-lam * p_b, dtype=np.float64)
        return _price_line(np.ascontiguousarray(L, float), np.ascontiguousarray(P, float), weight,
                           np.ascontiguousarray(empty, np.bool_), ecost, self.coord, self.order,
                           self.rank, self.block, self.kind)
