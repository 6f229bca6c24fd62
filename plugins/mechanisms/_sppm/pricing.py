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
#: outputs per contiguous block of the sorted line (1-D feature distortions)
LINE_BLOCK = 32


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
            # contiguous blocks of the sorted outputs (the last padded with its own end)
            n, b = self.order.size, LINE_BLOCK
            nbk = -(-n // b)
            pad = np.concatenate([self.order, np.full(nbk * b - n, self.order[-1])])
            self.block_rows = pad.reshape(nbk, b)
            self.block_lo = self.sorted[np.arange(nbk) * b]
            self.block_hi = self.sorted[np.minimum(np.arange(nbk) * b + b - 1, n - 1)]
        else:
            self.order = None
            self.tree = cKDTree(points)

    def _radius(self, radius: np.ndarray) -> np.ndarray:
        r = np.sqrt(np.maximum(radius, 0.0)) if self.square else np.maximum(radius, 0.0)
        return r * (1 + 1e-9) + 1e-12

    def block_distance(self, cols: np.ndarray) -> np.ndarray:
        """(blocks, |cols|) lower bounds of d(b̂_i, b_j) over the outputs i of each block."""
        x = self.points[cols, 0][None, :]
        gap = np.maximum(np.maximum(self.block_lo[:, None] - x, x - self.block_hi[:, None]), 0.0)
        if self.square:
            gap = gap * gap
        return gap * (1 - 1e-12)

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


def price_line_blocks(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, distortion: Distortion,
                      balls: Balls, lam: float, empty: np.ndarray, empty_cost: np.ndarray | None,
                      cols: np.ndarray, best_i: np.ndarray, best_v: np.ndarray,
                      chunk_entries: int = BLOCK_ENTRIES // 4) -> int:
    """Exact pricing on a line: improve ``best_i``/``best_v`` (indexed like ``cols``) in place.

    The sorted outputs are cut into contiguous blocks. For input j and block β,
    ``Σ_a P[a, j] min_{i∈β} L[a, i] - λ p(b_j) min_{i∈β} d(b̂_i, b_j)`` (P >= 0, λ <= 0)
    is a lower bound of every value in the block, so only blocks whose bound is below
    the best value found so far are scanned, in full. Returns the number of inputs
    that needed a scan.
    """
    if cols.size == 0:
        return 0
    rows_b = balls.block_rows
    at_empty = empty[rows_b]
    live_any = ~at_empty.all(axis=1)
    has_empty = at_empty.any(axis=1)
    Lmin = np.where(empty[None, :], np.inf, L)[:, rows_b].min(axis=2)  # (|A|, blocks)
    Lmin[:, ~live_any] = 0.0
    Pc = P[:, cols]
    bound = Lmin.T @ Pc
    bound -= 1e-12 * (np.abs(Lmin).max() * Pc.sum(axis=0) + 1e-300)[None, :]
    bound[~live_any] = np.inf
    if has_empty.any():
        e = np.zeros(cols.size) if empty_cost is None else empty_cost[cols]
        bound[has_empty] = np.minimum(bound[has_empty], e[None, :])
    if lam != 0.0:
        bound -= lam * p_b[cols][None, :] * balls.block_distance(cols)
    bk, jj = np.nonzero(bound < best_v[None, :])
    if bk.size == 0:
        return 0
    b = rows_b.shape[1]
    step = max(1, chunk_entries // b)
    for s in range(0, bk.size, step):
        k_b, k_j = bk[s : s + step], jj[s : s + step]
        rows = rows_b[k_b]  # (k, b)
        jcol = cols[k_j]
        v = np.einsum("akb,ak->kb", L[:, rows], P[:, jcol])
        if has_empty.any():
            at = empty[rows]
            if at.any():
                e = np.zeros(jcol.size) if empty_cost is None else empty_cost[jcol]
                v = np.where(at, e[:, None], v)
        if lam != 0.0:
            d = distortion.pairs(rows.ravel(), np.repeat(jcol, b)).reshape(rows.shape)
            v -= lam * p_b[jcol][:, None] * d
        arg = np.argmin(v, axis=1)
        k = np.arange(k_b.size)
        vmin, imin = v[k, arg], rows[k, arg]
        low = best_v.copy()
        np.minimum.at(low, k_j, vmin)
        win = (vmin == low[k_j]) & (vmin < best_v[k_j])
        best_i[k_j[win]] = imin[win]
        best_v[k_j[win]] = vmin[win]
    return int(np.unique(jj).size)


def price_neighbours(L: np.ndarray, P: np.ndarray, p_b: np.ndarray, nb: Neighbours, lam: float,
                     empty: np.ndarray, empty_cost: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(argmin, min) of c - λ a over each input's neighbour list only: O(|A| n K)."""
    n = P.shape[1]
    idx = nb.idx
    # one gathered (n, K) slab per private value, accumulated in place (no |A| x n x K array)
    c = L[0][idx]
    c *= P[0][:, None]
    for a in range(1, L.shape[0]):
        t = L[a][idx]
        t *= P[a][:, None]
        c += t
    if empty.any():
        fill = np.zeros(n) if empty_cost is None else empty_cost
        np.copyto(c, np.broadcast_to(fill[:, None], c.shape), where=empty[idx])
    if lam != 0.0:
        c += (-lam * p_b)[:, None] * nb.dist
    arg = np.argmin(c, axis=1)
    rows = np.arange(n)
    return idx[rows, arg], c[rows, arg]


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
    if balls is not None and getattr(balls, "order", None) is not None:
        # a line: per-block bounds are much tighter than one bound per input
        cols = np.arange(P.shape[1])
        scanned = price_line_blocks(L, P, p_b, distortion, balls, lam, empty, empty_cost,
                                    cols, best_i, best_v)
        return best_i, best_v, scanned
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
