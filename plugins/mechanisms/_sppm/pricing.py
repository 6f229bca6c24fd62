"""Pricing (SPPM Algorithm 2, step (7)): the most violated dual constraint per input j.

For a budget dual λ <= 0 it computes, for every input j,
``m_j = min_i c[i, j] - λ p(b_j) d(b̂_i, b_j)`` and the minimising i. With the master's
μ_j, pair (i, j) prices out iff ``m_j - μ_j < 0``; and whatever λ <= 0 is,
``λ Δ + Σ_j m_j`` is a lower bound of the full LP over all n² pairs (Lagrangian
duality), which is what makes the Frank-Wolfe gap certified.

The cost matrix is the rank-|A| product C = Lᵀ P and is never stored: the full scan
works in blocks of columns (memory O(n · block)). The fast path prices only each
input's K nearest outputs (:class:`Neighbours`) and proves the rest cannot win:
outside the list d(b̂_i, b_j) >= d_K(j), so every value there is at least
``min_i c[i, j] + (-λ) p(b_j) d_K(j)``; only inputs where that bound does not clear
the best value found are scanned in full. The result is exact either way.
"""

from __future__ import annotations

import numpy as np

from privbench import Distortion

#: entries per block (n x block floats, a few temporaries)
BLOCK_ENTRIES = 2**20


def _blocks(n: int, cols: np.ndarray, block_entries: int):
    step = max(1, min(cols.size, block_entries // max(n, 1)))
    for s in range(0, cols.size, step):
        yield cols[s : s + step]


def price(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, distortion: Distortion, lam: float,
          empty: np.ndarray, empty_cost: np.ndarray | None = None,
          cols: np.ndarray | None = None, block_entries: int = BLOCK_ENTRIES
          ) -> tuple[np.ndarray, np.ndarray]:
    """Full scan: (argmin_i, min_i) of c[i, j] - λ p(b_j) d(b̂_i, b_j) for j in ``cols``.

    :param L: decoder log-ratios (|A|, n); c[i, j] = Σ_a L[a, i] P[a, j]
    :param empty: outputs with no mass; their cost is ``empty_cost[j]`` (0 when None)
    :param cols: inputs to price (default all)
    """
    n = P.shape[1]
    cols = np.arange(n) if cols is None else np.asarray(cols, dtype=np.int64)
    best_i = np.empty(cols.size, dtype=np.int64)
    best_v = np.empty(cols.size)
    all_rows = np.arange(n)
    has_empty = bool(empty.any())
    LT = np.ascontiguousarray(L.T)
    pos = 0
    for J in _blocks(n, cols, block_entries):
        M = LT @ P[:, J]
        if has_empty:
            M[empty, :] = 0.0 if empty_cost is None else empty_cost[J][None, :]
        if lam != 0.0:
            D = distortion.block(all_rows, J)
            D *= -lam * p_b[J][None, :]
            M += D
        idx = np.argmin(M, axis=0)
        best_i[pos : pos + J.size] = idx
        best_v[pos : pos + J.size] = M[idx, np.arange(J.size)]
        pos += J.size
    return best_i, best_v


class Neighbours:
    """The K outputs nearest to each input by distortion: one blocked scan, O(n K) memory."""

    def __init__(self, distortion: Distortion, k: int, block_entries: int = BLOCK_ENTRIES) -> None:
        n = distortion.n
        k = max(1, min(int(k), n))
        self.k = k
        self.idx = np.empty((n, k), dtype=np.int64)
        self.dist = np.empty((n, k))
        rows = np.arange(n)
        for J in _blocks(n, rows, block_entries):
            D = distortion.block(rows, J)  # (n, |J|)
            part = np.argpartition(D, k - 1, axis=0)[:k] if k < n else \
                np.broadcast_to(rows[:, None], D.shape)
            d = np.take_along_axis(D, part, axis=0)
            order = np.argsort(d, axis=0, kind="stable")
            self.idx[J] = np.take_along_axis(part, order, axis=0).T
            self.dist[J] = np.take_along_axis(d, order, axis=0).T
        #: every output outside j's list is at least this far from b_j
        self.radius = self.dist[:, -1].copy()
        self.complete = k >= n


class Balls:
    """Range queries {i : d(b̂_i, b_j) <= r} for feature distortions (k-d tree), else None.

    sq_l2 / l2 / l1, and Hamming on 0/1 points (where it equals l1), are metrics a k-d
    tree answers exactly; other distortions fall back to full scans.
    """

    def __init__(self, distortion: Distortion) -> None:
        from scipy.spatial import cKDTree

        points = getattr(distortion, "points", None)
        metric = getattr(distortion, "metric", None)
        self.tree = None
        if points is None or metric not in ("sq_l2", "l2", "l1", "hamming"):
            return
        if metric == "hamming" and not np.all((points == 0) | (points == 1)):
            return
        self.p = 2 if metric in ("sq_l2", "l2") else 1
        self.square = metric == "sq_l2"
        self.points = points
        if points.shape[1] == 1:  # a line: balls are ranges of the sorted points
            self.order = np.argsort(points[:, 0], kind="stable")
            self.sorted = points[self.order, 0]
            self.tree = True
        else:
            self.order = None
            self.tree = cKDTree(points)

    def _radius(self, radius: np.ndarray) -> np.ndarray:
        r = np.sqrt(np.maximum(radius, 0.0)) if self.square else np.maximum(radius, 0.0)
        return r * (1 + 1e-9) + 1e-12

    def sizes(self, cols: np.ndarray, radius: np.ndarray) -> np.ndarray:
        """How many outputs each ball holds (to cut the work into bounded chunks)."""
        r = self._radius(radius)
        if self.order is not None:
            centre = self.points[cols, 0]
            return (np.searchsorted(self.sorted, centre + r, side="right")
                    - np.searchsorted(self.sorted, centre - r, side="left"))
        return np.asarray(self.tree.query_ball_point(self.points[cols], r, p=self.p,
                                                     return_length=True), dtype=np.int64)

    def query(self, cols: np.ndarray, radius: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Flattened (row, col) pairs with d <= radius[col] (plus a rounding margin)."""
        r = self._radius(radius)
        if self.order is not None:
            centre = self.points[cols, 0]
            lo = np.searchsorted(self.sorted, centre - r, side="left")
            hi = np.searchsorted(self.sorted, centre + r, side="right")
            sizes = hi - lo
            starts = np.repeat(lo - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
            rows = self.order[np.arange(int(sizes.sum())) + starts]
            return rows, np.repeat(cols, sizes)
        found = self.tree.query_ball_point(self.points[cols], r, p=self.p, return_sorted=False)
        sizes = np.array([len(f) for f in found], dtype=np.int64)
        rows = np.concatenate([np.asarray(f, dtype=np.int64) for f in found]) if len(found) \
            else np.zeros(0, dtype=np.int64)
        return rows, np.repeat(cols, sizes)


def price_balls(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, distortion: Distortion,
                balls: Balls, lam: float, empty: np.ndarray, empty_cost: np.ndarray | None,
                cols: np.ndarray, radius: np.ndarray, block_entries: int = BLOCK_ENTRIES // 4
                ) -> tuple[np.ndarray, np.ndarray]:
    """(argmin, min) for inputs ``cols`` over the outputs within ``radius`` of each.

    Inputs are taken in chunks of about ``block_entries`` pairs, so memory stays
    bounded however large the balls are.
    """
    best_i = np.empty(cols.size, dtype=np.int64)
    best_v = np.empty(cols.size)
    ends = np.cumsum(balls.sizes(cols, radius))
    start = 0
    while start < cols.size:
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + block_entries, side="right")))
        sl = slice(start, stop)
        best_i[sl], best_v[sl] = _price_ball_chunk(L, P, p_b, distortion, balls, lam, empty,
                                                   empty_cost, cols[sl], radius[sl])
        start = stop
    return best_i, best_v


def _price_ball_chunk(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, distortion: Distortion,
                      balls: Balls, lam: float, empty: np.ndarray,
                      empty_cost: np.ndarray | None, cols: np.ndarray, radius: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    rows, rep = balls.query(cols, radius)
    c = np.einsum("ak,ak->k", L[:, rows], P[:, rep])
    if empty.any():
        at = empty[rows]
        c[at] = 0.0 if empty_cost is None else empty_cost[rep[at]]
    v = c - lam * p_b[rep] * distortion.pairs(rows, rep)
    # segment minimum per input (each ball contains b_j itself when d(b_j, b_j) = 0)
    order = np.lexsort((v, rep))
    first = np.concatenate([[True], rep[order][1:] != rep[order][:-1]])
    pick = order[first]
    best_i = np.full(cols.size, -1, dtype=np.int64)
    best_v = np.full(cols.size, np.inf)
    where = np.searchsorted(cols, rep[pick])
    best_i[where] = rows[pick]
    best_v[where] = v[pick]
    return best_i, best_v


def price_neighbours(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, nb: Neighbours, lam: float,
                     empty: np.ndarray, empty_cost: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(argmin, min) of c - λ a over each input's neighbour list only: O(|A| n K)."""
    n = P.shape[1]
    c = np.einsum("ajk,aj->jk", L[:, nb.idx], P)
    if empty.any():
        at_empty = empty[nb.idx]
        fill = np.zeros(n) if empty_cost is None else empty_cost
        c = np.where(at_empty, fill[:, None], c)
    c -= lam * p_b[:, None] * nb.dist
    arg = np.argmin(c, axis=1)
    rows = np.arange(n)
    return nb.idx[rows, arg], c[rows, arg]


def _hull_points(points: np.ndarray) -> np.ndarray:
    """Indices of the convex-hull vertices of ``points`` (all indices when Qhull cannot help).

    A linear function attains its minimum over a finite set at a hull vertex, so
    min_i ⟨L_i, P_j⟩ only needs these (usually a handful) instead of all n outputs.
    """
    m, dim = points.shape
    if dim == 1:
        return np.array([int(np.argmin(points[:, 0])), int(np.argmax(points[:, 0]))])
    if m <= dim + 1:
        return np.arange(m)
    from scipy.spatial import ConvexHull, QhullError

    try:
        return np.asarray(ConvexHull(points).vertices)
    except (QhullError, ValueError):  # flat or degenerate point set: use them all
        return np.arange(m)


def min_cost(L: np.ndarray, P: np.ndarray, empty: np.ndarray, empty_cost: np.ndarray | None,
             cols: np.ndarray | None = None) -> np.ndarray:
    """min_i c[i, j] for j in ``cols`` (distortion ignored), via the hull of the points L[:, i]."""
    P = P if cols is None else P[:, cols]
    n = P.shape[1]
    if empty_cost is not None and cols is not None:
        empty_cost = empty_cost[cols]
    live = np.flatnonzero(~empty)
    if live.size:
        pts = L[:, live].T
        hull = _hull_points(pts)
        out = (pts[hull] @ P).min(axis=0)
        # a hair of slack for rounding in Qhull and in the products
        out -= 1e-12 * (np.abs(pts).max() * P.sum(axis=0) + 1e-300)
    else:
        out = np.full(n, np.inf)
    if empty.any():
        out = np.minimum(out, 0.0 if empty_cost is None else empty_cost)
    return out


def price_exact(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, distortion: Distortion,
                nb: Neighbours, lam: float, empty: np.ndarray,
                empty_cost: np.ndarray | None = None,
                neighbour_result: tuple[np.ndarray, np.ndarray] | None = None,
                balls: Balls | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact (argmin, min) over all n outputs: neighbour lists, a bound, full scans as needed.

    :param neighbour_result: :func:`price_neighbours` for the same L and λ, if at hand
    :returns: argmin, min, and how many inputs needed a full scan.
    """
    if neighbour_result is None:
        neighbour_result = price_neighbours(L, P, p_b, nb, lam, empty, empty_cost)
    best_i, best_v = (a.copy() for a in neighbour_result)
    if nb.complete:
        return best_i, best_v, 0
    # min_i c[i, j] >= Σ_a P[a, j] min_i L[a, i] (P >= 0): O(|A| n), exact when a column
    # has one private value; the exact hull minimum only where this does not settle it
    live = ~empty
    cmin = P.T @ (L[:, live].min(axis=1) if live.any() else np.zeros(L.shape[0]))
    if empty.any():
        cmin = np.minimum(cmin, 0.0 if empty_cost is None else empty_cost)
    cmin -= 1e-12 * (np.abs(L).max() * P.sum(axis=0) + 1e-300)
    unsure = np.flatnonzero(cmin - lam * p_b * nb.radius < best_v)
    if unsure.size:
        cmin[unsure] = min_cost(L, P, empty, empty_cost, unsure)
        unsure = unsure[cmin[unsure] - lam * p_b[unsure] * nb.radius[unsure] < best_v[unsure]]
    if unsure.size and balls is not None and balls.tree is not None and lam < 0:
        # every output that could beat best_v lies within this distortion of b_j
        radius = (best_v[unsure] - cmin[unsure]) / (-lam * p_b[unsure])
        i, v = price_balls(L, P, p_b, distortion, balls, lam, empty, empty_cost, unsure, radius)
        better = v < best_v[unsure]
        best_i[unsure[better]] = i[better]
        best_v[unsure[better]] = v[better]
    elif unsure.size:
        i, v = price(L, P, p_b, distortion, lam, empty, empty_cost, cols=unsure)
        better = v < best_v[unsure]
        best_i[unsure[better]] = i[better]
        best_v[unsure[better]] = v[better]
    return best_i, best_v, int(unsure.size)
