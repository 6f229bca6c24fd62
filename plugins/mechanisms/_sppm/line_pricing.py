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

import copy

import numba
import numpy as np

from .chunks import InputChunks

#: outputs per block of the sorted line
BLOCK = 8
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


@numba.njit(cache=True, inline="always")
def _fill_block(L, empty, order, block, lmin, emp, b):  # pragma: no cover - compiled
    """Level 0 of block b: the least L[a, i] over its live outputs, and whether one is empty."""
    emp[0, b] = False
    for a in range(L.shape[0]):
        lmin[0, b, a] = np.inf
    for s in range(b * block, min(b * block + block, order.size)):
        i = order[s]
        if empty[i]:
            emp[0, b] = True
        else:
            for a in range(L.shape[0]):
                if L[a, i] < lmin[0, b, a]:
                    lmin[0, b, a] = L[a, i]


@numba.njit(cache=True, inline="always")
def _combine(lmin, emp, k, b):  # pragma: no cover - compiled
    """Level k at b from the two halves of level k - 1."""
    half = 1 << (k - 1)
    emp[k, b] = emp[k - 1, b] or emp[k - 1, b + half]
    for a in range(lmin.shape[2]):
        lmin[k, b, a] = min(lmin[k - 1, b, a], lmin[k - 1, b + half, a])


@numba.njit(cache=True, nogil=True)
def _block_tables(L, empty, order, block):  # pragma: no cover - compiled
    """Range-minimum tables over the blocks of the sorted line.

    ``lmin[k, b, a]`` = min of L[a, i] over live outputs i in blocks b .. b + 2^k - 1
    (inf when there is none); ``emp[k, b]``: does that range hold an empty output?
    ``side[0, b, a]`` / ``side[1, b, a]``: the same over blocks b .. end / 0 .. b (all
    that a walk to the right / left from block b can still reach), ``side_emp`` likewise.
    """
    n_a, n = L.shape
    nb = (n + block - 1) // block
    levels = 1
    while (1 << levels) <= nb:
        levels += 1
    lmin = np.full((levels, nb, n_a), np.inf)
    emp = np.zeros((levels, nb), dtype=np.bool_)
    for b in range(nb):
        _fill_block(L, empty, order, block, lmin, emp, b)
    for k in range(1, levels):
        for b in range(nb - (1 << k) + 1):
            _combine(lmin, emp, k, b)
    # side[0, b] = blocks b .. nb - 1 (the walk to the right), side[1, b] = blocks 0 .. b
    side = np.full((2, nb, n_a), np.inf)
    side_emp = np.zeros((2, nb), dtype=np.bool_)
    for step in range(nb):
        for d in range(2):
            b = nb - 1 - step if d == 0 else step
            prev = b + 1 if d == 0 else b - 1
            side_emp[d, b] = emp[0, b]
            for a in range(n_a):
                side[d, b, a] = lmin[0, b, a]
            if 0 <= prev < nb:
                side_emp[d, b] = side_emp[d, b] or side_emp[d, prev]
                for a in range(n_a):
                    side[d, b, a] = min(side[d, b, a], side[d, prev, a])
    return lmin, emp, side, side_emp


@numba.njit(cache=True, nogil=True)
def _update_tables(L, empty, order, block, lmin, emp, side, side_emp, blocks):  # pragma: no cover
    """:func:`_block_tables` again after the outputs of ``blocks`` (sorted, unique block
    indices) changed: those blocks, the ranges over them and the side minima that move.
    The values are those a rebuild gives (the same minima of the same numbers)."""
    n_a, n = L.shape
    levels, nb = lmin.shape[0], lmin.shape[1]
    for t in range(blocks.size):
        _fill_block(L, empty, order, block, lmin, emp, blocks[t])
    for k in range(1, levels):
        size = 1 << k
        done = -1  # ranges up to this start are recomputed at this level
        t = 0
        while t < blocks.size:
            lo = blocks[t]
            while t + 1 < blocks.size and blocks[t + 1] == blocks[t] + 1:
                t += 1
            hi = blocks[t]
            t += 1
            for b in range(max(lo - size + 1, done + 1, 0), min(hi, nb - size) + 1):
                _combine(lmin, emp, k, b)
                done = b
    first, last = blocks[0], blocks[blocks.size - 1]
    for d in range(2):
        b = last if d == 0 else first
        while 0 <= b < nb:
            prev = b + 1 if d == 0 else b - 1
            new_emp = emp[0, b]
            if 0 <= prev < nb:
                new_emp = new_emp or side_emp[d, prev]
            same = new_emp == side_emp[d, b]
            side_emp[d, b] = new_emp
            for a in range(n_a):
                v = lmin[0, b, a]
                if 0 <= prev < nb:
                    v = min(v, side[d, prev, a])
                same = same and v == side[d, b, a]
                side[d, b, a] = v
            outside = b < first if d == 0 else b > last
            if same and outside:
                break  # the rest of this side is unchanged
            b = b - 1 if d == 0 else b + 1


@numba.njit(cache=True, inline="always")
def _range_bound(P, j, ecost, lmin, emp, k, b):  # pragma: no cover - compiled
    """Lower bound of c_ij over the outputs of blocks b .. b + 2^k - 1."""
    bound = np.inf
    if lmin[k, b, 0] < np.inf:
        bound = 0.0
        for a in range(P.shape[0]):
            bound += P[a, j] * lmin[k, b, a]
    if emp[k, b]:
        bound = min(bound, ecost[j])
    return bound


@numba.njit(cache=True, inline="always")
def _scan_block(L, P, j, w, xj, ecost, empty, coord, order, kind, lo, hi, best, arg):  # pragma: no cover
    """Improve (best, arg) with the outputs at sorted positions lo .. hi - 1."""
    for s in range(lo, hi):
        i = order[s]
        c = ecost[j] if empty[i] else _cost(L, P, j, i)
        v = c + w * _dist(coord[i] - xj, kind)
        if v < best:
            best = v
            arg = i
    return best, arg


@numba.njit(cache=True, nogil=True)
def _price_line(L, P, weight, empty, ecost, coord, order, in_coord, in_home, block, kind, lmin,
                emp, side, side_emp, block_lo, block_hi, j_lo, j_hi, best_i, best_v):  # pragma: no cover
    """(argmin_i, min_i) of c_ij + weight_j d(x_i, x_j) for inputs j_lo <= j < j_hi.

    ``in_coord[j]`` is input j's coordinate, ``in_home[j]`` the block it falls in (any
    block gives the exact minimum: the walk covers every block, this one is just first).

    After b_j's own block the walk goes right, then left; it stops as soon as the cost
    bound of everything left in that direction plus the distortion to the next block
    cannot beat the best value; at each block it skips the longest run of 2^k blocks
    whose range bound plus the distortion to the run's near end cannot, else it scans
    the block.
    """
    n_a = P.shape[0]
    n = order.size
    levels, nb = lmin.shape[0], lmin.shape[1]
    for j in range(j_lo, j_hi):
        xj = in_coord[j]
        w = weight[j]
        home = in_home[j]
        best, arg = _scan_block(L, P, j, w, xj, ecost, empty, coord, order, kind,
                                home * block, min(home * block + block, n), np.inf, -1)
        for direction in range(2):
            b = home + 1 if direction == 0 else home - 1
            while 0 <= b < nb:
                if direction == 0:
                    gap = block_lo[b] - xj if xj < block_lo[b] else 0.0
                else:
                    gap = xj - block_hi[b] if xj > block_hi[b] else 0.0
                dterm = w * _dist(gap, kind)
                rest = np.inf  # a cost bound over blocks b and beyond, in this direction
                if side[direction, b, 0] < np.inf:
                    rest = 0.0
                    for a in range(n_a):
                        rest += P[a, j] * side[direction, b, a]
                if side_emp[direction, b]:
                    rest = min(rest, ecost[j])
                if rest + dterm >= best:
                    break  # farther blocks are farther still
                # skip the longest run of 2^k blocks from b that cannot beat best; runs
                # from b nest, so when one can, every longer one can too: going up from
                # one block costs a single test where the block must be scanned
                run = 0
                for k in range(levels):
                    size = 1 << k
                    start = b if direction == 0 else b - size + 1
                    if start < 0 or start + size > nb:
                        break
                    if _range_bound(P, j, ecost, lmin, emp, k, start) + dterm < best:
                        break
                    run = size
                if run:
                    b = b + run if direction == 0 else b - run
                    continue
                best, arg = _scan_block(L, P, j, w, xj, ecost, empty, coord, order, kind,
                                        b * block, min(b * block + block, n), best, arg)
                b = b + 1 if direction == 0 else b - 1
        best_i[j] = arg
        best_v[j] = best


class LinePricer:
    """Exact pricing for a 1-D feature distortion; build once per problem.

    The inputs are split into ``threads`` ranges priced concurrently (the kernel
    releases the GIL); call :meth:`close` to stop the threads.
    """

    #: below this many inputs one thread prices everything (threads cost more than they save)
    min_parallel = 4096

    def __init__(self, coord: np.ndarray, metric: str, block: int = BLOCK,
                 threads: int = 1) -> None:
        self.coord = np.ascontiguousarray(coord, dtype=np.float64)
        self.metric = metric
        self.kind = KINDS[metric]
        self.order = np.argsort(self.coord, kind="stable").astype(np.int64)
        self.rank = np.empty_like(self.order)
        self.rank[self.order] = np.arange(self.order.size)
        self.block = int(block)
        first = np.arange(0, self.order.size, self.block)
        last = np.minimum(first + self.block, self.order.size) - 1
        self.block_lo = self.coord[self.order[first]]
        self.block_hi = self.coord[self.order[last]]
        #: the inputs priced (all symbols; :meth:`for_inputs` takes a subset)
        self.in_coord = self.coord
        self.in_home = self.rank // self.block
        self.threads = max(1, int(threads))
        self._chunks = InputChunks(self.threads, "sppm-pricing")

    @staticmethod
    def supports(distortion: object) -> bool:
        points = getattr(distortion, "points", None)
        metric = getattr(distortion, "metric", None)
        if points is None or metric not in KINDS or points.shape[1] != 1:
            return False
        return metric != "hamming" or bool(np.all((points == 0) | (points == 1)))

    def for_inputs(self, inputs: np.ndarray) -> LinePricer:
        """This pricer for the inputs ``inputs`` only (symbol indices; input k of
        :meth:`price` is symbol ``inputs[k]``), over the same outputs and threads."""
        sub = copy.copy(self)
        sub.in_coord = self.coord[inputs]
        sub.in_home = self.in_home[inputs]
        return sub

    def tables(self, L: np.ndarray, empty: np.ndarray) -> tuple:
        """The block tables of a decoder, for :meth:`price` and :meth:`update_tables`."""
        return _block_tables(np.ascontiguousarray(L, dtype=np.float64),
                             np.ascontiguousarray(empty, dtype=np.bool_), self.order, self.block)

    def blocks_of(self, outputs: np.ndarray) -> np.ndarray:
        """The blocks holding ``outputs``, for :meth:`update_tables`."""
        return np.unique(self.rank[outputs] // self.block)

    def update_tables(self, tables: tuple, L: np.ndarray, empty: np.ndarray,
                      blocks: np.ndarray) -> None:
        """Bring ``tables`` up to date, in place, after L's (and ``empty``'s) columns in
        ``blocks`` (:meth:`blocks_of`) changed: O(those blocks) plus the ranges and sides
        over them, instead of a rebuild's O(n)."""
        if blocks.size:
            _update_tables(L, empty, self.order, self.block, *tables, blocks)

    def price(self, L: np.ndarray, P: np.ndarray, p_b: np.ndarray, lam: float,
              empty: np.ndarray, empty_cost: np.ndarray | None = None,
              tables: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(argmin_i, min_i) of c_ij - λ p(b_j) d(b̂_i, b_j) over all outputs, for every j.

        ``tables``: :meth:`tables` of this L and ``empty`` (kept up to date by the caller);
        default: built here."""
        n = P.shape[1]
        if n != self.in_coord.size or L.shape[1] != self.coord.size:
            raise ValueError(f"line pricing: {n} inputs and {L.shape[1]} outputs, built for "
                             f"{self.in_coord.size} and {self.coord.size}")
        L = np.ascontiguousarray(L, dtype=np.float64)
        P = np.ascontiguousarray(P, dtype=np.float64)
        empty = np.ascontiguousarray(empty, dtype=np.bool_)
        ecost = np.zeros(n) if empty_cost is None else np.ascontiguousarray(empty_cost, float)
        weight = np.ascontiguousarray(-lam * p_b, dtype=np.float64)
        if tables is None:
            tables = _block_tables(L, empty, self.order, self.block)
        best_i = np.empty(n, dtype=np.int64)
        best_v = np.empty(n)

        def run(lo: int, hi: int) -> None:
            _price_line(L, P, weight, empty, ecost, self.coord, self.order, self.in_coord,
                        self.in_home, self.block, self.kind, *tables, self.block_lo, self.block_hi, lo, hi,
                        best_i, best_v)

        self._chunks.run(run, n, self.min_parallel)
        return best_i, best_v

    def close(self) -> None:
        self._chunks.close()
