"""Exact pricing for Hamming distortions on integer-coded profiles, without an n² scan.

For input j the value of output i is ``v_ij = c_ij + w_j d(x_i, x_j)`` with
``w_j = (-λ) p(b_j) >= 0``, ``d`` the number of differing attributes and
``c_ij = Σ_a P[a, j] L[a, i]`` (or ``empty_cost[j]`` at an output with no mass).

Per call the outputs are grouped into cost classes (the live outputs whose L[:, i] share a
cell of a ``cost_bin``-nat grid; the empty ones), sorted by class and then lexicographically
by their codes, and cut into blocks of at most ``block`` consecutive outputs of one class,
the blocks into superblocks of at most ``superblock`` blocks of one class. Each
(super)block keeps, per private value a, ``lmin[a] = min L[a, i]`` over its live outputs,
whether it holds an empty output, and per attribute t a 64-bit mask of the values present
(empty outputs included: d applies to them too). A lower bound of v_ij over a (super)block is

    ``min(Σ_a P[a, j] lmin[a], empty_cost[j]) + w_j · #{t : x_jt not in mask_t}``

(the first term only over the parts that exist). The classes keep the cost term nearly
tight (with realistic decoders every code-sorted block holds near-pure outputs of every
private value, so its lmin would be all floors); the code order keeps the distance term
tight. Input j first scans its own block (which holds x_j itself, at d = 0), then visits
the superblocks best-first by bound, stopping at the first one whose bound reaches the
best value found; inside a superblock a block is scanned only when its own bound beats it.

Why no slack is needed: each bound is computed with the same floating-point operations, in
the same order, as the values it bounds (``c = 0; c += P[a, j] * L[a, i]`` over a ascending,
then ``c + w * d``). With ``P >= 0`` and ``w >= 0`` every step is monotone in its operands
and IEEE rounding is monotone, so ``lmin <= L`` and ``#missing <= d`` give bound <= value
bit for bit. A (super)block is skipped only when bound >= best, so nothing strictly better
is ever skipped: the result is exactly the dense minimum, which the tests check.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numba
import numpy as np

from .chunks import InputChunks

#: outputs per block of the sorted profiles
BLOCK = 8
#: blocks per superblock
SUPERBLOCK = 16
#: width (nats) of the grid cells of L[:, i] that group outputs into cost classes (None: no
#: classes). On census (every profile) the decoders of the Frank-Wolfe warm-up span under 8
#: nats: at 8.0 all live outputs fell in one class and a block's min-L bound was the floor
#: of both private values; 0.5 with superblocks of 16 blocks priced those 2.1x faster (CPU,
#: 11 decoders of one run) and the dual rounds' 1.5x (docs/studies/sppm-scaling.md)
COST_BIN = 0.5
#: most distinct values per attribute (one bit each in a 64-bit mask)
MAX_CARD = 64
#: the pricer keeps, per input, the lists of the outputs at Hamming distance 0 .. ``LEVELS``
#: and prices an input over them first, nearest level first, until the next level's bound
#: reaches its best value; only the inputs that could gain farther out go on to the
#: branch and bound. On census with every profile the Frank-Wolfe steps at 1e-4 / 1e-3
#: d_const needed at most level 1 or 2 for almost every input (7 attributes; 112 k pairs
#: at distance 1, 1.25 M at distance 2, 6.9 M at 3)
LEVELS = 2
#: the lists are built at the pricer's ``LISTS_AFTER``-th call: a run that prices once or
#: twice (a certificate of a prolonged mapping) does not pay for them
LISTS_AFTER = 3
#: no lists when they would hold more than this many pairs per input on average (the
#: branch and bound alone then)
LIST_PAIRS_PER_INPUT = 256
#: an input whose lists did not settle it goes straight to the branch and bound in the
#: next calls, and every ``SKIP_REFRESH``-th call tries the lists on every input again
#: (their scan is wasted work for such an input; at 0.1 d_const on census 700-6,500 of
#: 9,261 inputs, and consecutive calls' decoders are alike)
SKIP_REFRESH = 8


@numba.njit(cache=True, nogil=True)
def _tables(Ls, empty_s, codes_s, cls_s, block, superblock):  # pragma: no cover - compiled
    """Blocks and superblocks of the sorted outputs, with their bound ingredients.

    A block is at most ``block`` consecutive outputs of one cost class, a superblock at
    most ``superblock`` consecutive blocks of one class. Per (super)block: min of L[a, ·]
    over its live outputs, has-live, has-empty, and per attribute the mask of the values
    present (empty outputs included: d applies to them too).
    """
    n_a, n = Ls.shape
    k = codes_s.shape[1]
    bstart = np.empty(n + 1, dtype=np.int64)  # output ranges of the blocks
    sstart = np.empty(n + 1, dtype=np.int64)  # block ranges of the superblocks
    nb = 0
    ns = 0
    for s in range(n):
        new_class = s == 0 or cls_s[s] != cls_s[s - 1]
        if new_class or s - bstart[nb - 1] >= block:
            if new_class or nb - sstart[ns - 1] >= superblock:
                sstart[ns] = nb
                ns += 1
            bstart[nb] = s
            nb += 1
    bstart[nb] = n
    sstart[ns] = nb
    bmask = np.zeros((nb, k), dtype=np.uint64)
    blmin = np.full((nb, n_a), np.inf)
    blive = np.zeros(nb, dtype=np.bool_)
    bemp = np.zeros(nb, dtype=np.bool_)
    smask = np.zeros((ns, k), dtype=np.uint64)
    slmin = np.full((ns, n_a), np.inf)
    slive = np.zeros(ns, dtype=np.bool_)
    semp = np.zeros(ns, dtype=np.bool_)
    home = np.empty(n, dtype=np.int64)  # block of each sorted output
    for q in range(ns):
        for b in range(sstart[q], sstart[q + 1]):
            for s in range(bstart[b], bstart[b + 1]):
                home[s] = b
                for t in range(k):
                    bmask[b, t] |= np.uint64(1) << np.uint64(codes_s[s, t])
                if empty_s[s]:
                    bemp[b] = True
                else:
                    blive[b] = True
                    for a in range(n_a):
                        if Ls[a, s] < blmin[b, a]:
                            blmin[b, a] = Ls[a, s]
            slive[q] = slive[q] or blive[b]
            semp[q] = semp[q] or bemp[b]
            for t in range(k):
                smask[q, t] |= bmask[b, t]
            for a in range(n_a):
                slmin[q, a] = min(slmin[q, a], blmin[b, a])
    return (bstart[: nb + 1].copy(), sstart[: ns + 1].copy(), home, bmask, blmin, blive, bemp,
            smask, slmin, slive, semp)


@numba.njit(cache=True, inline="always")
def _bound(pj, ej, w, xbit, lmin, live, emp, mask, b):  # pragma: no cover - compiled
    """Lower bound of v_ij over (super)block b; same operations, same order as the values."""
    c = np.inf
    if live[b]:  # lmin finite: no 0 * inf
        c = 0.0
        for a in range(pj.shape[0]):
            c += pj[a] * lmin[b, a]
    if emp[b]:
        c = min(c, ej)
    miss = 0
    for t in range(xbit.shape[0]):
        if (mask[b, t] & xbit[t]) == 0:
            miss += 1
    return c + w * float(miss)


@numba.njit(cache=True, inline="always")
def _scan(pj, ej, w, xj, Ls, empty_s, codes_s, lo, hi, best, arg):  # pragma: no cover - compiled
    """Best (value, sorted position) over sorted outputs lo .. hi - 1, starting from (best, arg)."""
    n_a = pj.shape[0]
    k = xj.shape[0]
    for s in range(lo, hi):
        if empty_s[s]:
            c = ej
        else:
            c = 0.0
            for a in range(n_a):
                c += pj[a] * Ls[a, s]
        d = 0
        for t in range(k):
            if codes_s[s, t] != xj[t]:
                d += 1
        v = c + w * float(d)
        if v < best:
            best = v
            arg = s
    return best, arg


@numba.njit(cache=True, nogil=True)
def _price_hamming(Ls, P, weight, empty_s, ecost, codes_s, order, bstart, sstart, home,
                   bmask, blmin, blive, bemp, smask, slmin, slive, semp,
                   positions, p_lo, p_hi, best_i, best_v):  # pragma: no cover - compiled
    """(argmin_i, min_i) of v_ij for the inputs j = order[s], s = positions[p] for
    p_lo <= p < p_hi, from the incumbents (best_i[j], best_v[j]) (best_v[j] = inf: none).

    Own block first (it holds x_j, so ``best`` is then at most v_jj), then the
    superblocks best-first by bound: once a bound reaches ``best`` all later ones do.
    """
    n_a, n = Ls.shape
    k = codes_s.shape[1]
    ns = smask.shape[0]
    pj = np.empty(n_a)
    xj = np.empty(k, dtype=codes_s.dtype)
    xbit = np.empty(k, dtype=np.uint64)
    sbound = np.empty(ns)
    for p in range(p_lo, p_hi):
        s = positions[p]
        j = order[s]
        w = weight[j]
        ej = ecost[j]
        for a in range(n_a):
            pj[a] = P[a, j]
        for t in range(k):
            xj[t] = codes_s[s, t]
            xbit[t] = np.uint64(1) << np.uint64(codes_s[s, t])
        hb = home[s]
        best, arg = _scan(pj, ej, w, xj, Ls, empty_s, codes_s, bstart[hb], bstart[hb + 1],
                          best_v[j], -1)
        for q in range(ns):
            sbound[q] = _bound(pj, ej, w, xbit, slmin, slive, semp, smask, q)
        for _ in range(ns):  # best-first; few are opened, so a min-scan beats sorting
            q = 0
            for r in range(1, ns):
                if sbound[r] < sbound[q]:
                    q = r
            if sbound[q] >= best:
                break  # every unvisited superblock is bounded out too
            sbound[q] = np.inf  # visited
            for b in range(sstart[q], sstart[q + 1]):
                if b == hb or _bound(pj, ej, w, xbit, blmin, blive, bemp, bmask, b) >= best:
                    continue
                best, arg = _scan(pj, ej, w, xj, Ls, empty_s, codes_s, bstart[b], bstart[b + 1], best, arg)
        if arg >= 0:  # else the incumbent stands
            best_i[j] = order[arg]
            best_v[j] = best


@numba.njit(cache=True)
def _group_pairs(members, gstart, codes, dropped, fill, out_j, out_i, at):  # pragma: no cover
    """Ordered pairs (j, i) of one group (profiles equal outside ``dropped``) that differ in
    every dropped attribute: exactly the pairs at distance ``dropped.size`` that agree
    elsewhere. Counts them, or (``fill``) also writes them from ``at`` on; returns the end."""
    for g in range(gstart.size - 1):
        for x in range(gstart[g], gstart[g + 1]):
            j = members[x]
            for y in range(gstart[g], gstart[g + 1]):
                i = members[y]
                ok = True
                for t in dropped:
                    if codes[i, t] == codes[j, t]:
                        ok = False
                        break
                if ok:
                    if fill:
                        out_j[at] = j
                        out_i[at] = i
                    at += 1
    return at


@numba.njit(cache=True)
def _scatter(key, values, starts):  # pragma: no cover - compiled
    """values placed by key into the CSR buckets ``starts`` (a counting sort, stable)."""
    out = np.empty(values.size, dtype=values.dtype)
    at = starts[:-1].copy()
    for t in range(key.size):
        out[at[key[t]]] = values[t]
        at[key[t]] += 1
    return out


def _groupings(codes: np.ndarray, levels: int
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(dropped attributes, members sorted by group, group starts) for every set of at most
    ``levels`` attributes: profiles equal on the other attributes share a group."""
    n, k = codes.shape
    for h in range(levels + 1):
        for dropped in itertools.combinations(range(k), h):
            keep = [t for t in range(k) if t not in dropped]
            cards = codes[:, keep].max(axis=0).astype(np.int64) + 1 if n else []
            if float(np.log2(cards).sum()) <= 62:  # one integer key per profile
                gid = np.zeros(n, dtype=np.int64)
                for t, card in zip(keep, cards, strict=True):
                    gid = gid * int(card) + codes[:, t]
            else:
                gid = np.unique(codes[:, keep], axis=0, return_inverse=True)[1].reshape(-1)
            members = np.argsort(gid, kind="stable")
            gstart = np.flatnonzero(np.r_[True, np.diff(gid[members]) != 0, True])
            yield np.array(dropped, dtype=np.int64), members.astype(np.int64), gstart


@numba.njit(cache=True, nogil=True)
def _price_levels(L, P, weight, empty, ecost, lmin, any_live, any_empty, starts, nbr, levels,
                  inputs, p_lo, p_hi, best_i, best_v, farther):  # pragma: no cover - compiled
    """Inputs j = inputs[p], p_lo <= p < p_hi, priced over their outputs at distance
    0 .. ``levels``.

    Before level h the bound ``cb_j + w_j h`` (cb_j = Σ_a P[a, j] min_i L[a, i] over the
    live outputs, or the empty cost if lower) is compared with the best value so far:
    once it is reached no output at distance >= h can beat it. ``farther[j]`` says whether
    an output beyond the lists still could (the branch and bound then goes on from the
    best found). The bound and the values take the same operations in the same order as
    :func:`_bound` and :func:`_scan`, so bound <= value holds bit for bit.
    """
    n_a = P.shape[0]
    for p in range(p_lo, p_hi):
        j = inputs[p]
        w = weight[j]
        ej = ecost[j]
        cb = np.inf
        if any_live:
            cb = 0.0
            for a in range(n_a):
                cb += P[a, j] * lmin[a]
        if any_empty:
            cb = min(cb, ej)
        best = np.inf
        arg = -1
        done = False
        for h in range(levels + 1):
            if cb + w * float(h) >= best:
                done = True
                break
            base = j * (levels + 1) + h
            for t in range(starts[base], starts[base + 1]):
                i = nbr[t]
                if empty[i]:
                    c = ej
                else:
                    c = 0.0
                    for a in range(n_a):
                        c += P[a, j] * L[a, i]
                v = c + w * float(h)
                if v < best:
                    best = v
                    arg = i
        best_i[j] = arg
        best_v[j] = best
        farther[j] = (not done) and cb + w * float(levels + 1) < best


class HammingPricer:
    """Exact pricing for a Hamming distortion on k >= 2 integer-coded attributes; build once.

    The inputs are split into ``8 * threads`` ranges (of the sorted profiles) priced
    concurrently, since the kernel releases the GIL; call :meth:`close` to stop the threads.
    """

    #: below this many inputs one thread prices everything (threads cost more than they save)
    min_parallel = 4096
    #: ... and the level lists (a few microseconds an input: on census with every profile
    #: two threads priced them slower than one)
    levels_min_parallel = 1 << 16
    #: ... and the branch and bound after the lists (tens of microseconds an input: the
    #: 1-3 k inputs left at 0.01 d_const on census priced 1.3x faster on two threads)
    rest_min_parallel = 1024

    def __init__(self, points: np.ndarray, threads: int = 1, block: int = BLOCK,
                 superblock: int = SUPERBLOCK, cost_bin: float | None = COST_BIN,
                 levels: int | None = None, lists_after: int | None = None) -> None:
        pts = np.asarray(points, dtype=np.float64)
        n, k = pts.shape
        self.codes = np.empty((n, k), dtype=np.uint8)
        for t in range(k):  # re-code each attribute to 0 .. card - 1
            values, inverse = np.unique(pts[:, t], return_inverse=True)
            if values.size > MAX_CARD:
                raise ValueError(f"attribute {t} has {values.size} values; at most {MAX_CARD} supported")
            self.codes[:, t] = inverse.reshape(-1)
        # lexicographic order, most distinct values first: leading attributes are constant
        # over a block, and a high-cardinality attribute is the likeliest to differ from x_j
        cards = self.codes.max(axis=0).astype(np.int64) + 1 if n else np.ones(k, np.int64)
        attrs = np.argsort(-cards, kind="stable")
        lex = np.lexsort(self.codes[:, attrs[::-1]].T)
        self.lex_rank = np.empty(n, dtype=np.int64)
        self.lex_rank[lex] = np.arange(n)
        self.block = max(1, int(block))
        self.superblock = max(1, int(superblock))
        self.cost_bin = cost_bin
        self.threads = max(1, int(threads))
        self._chunks = InputChunks(self.threads, "sppm-hamming")
        self.levels = LEVELS if levels is None else int(levels)  # < 0: no lists
        self.lists_after = LISTS_AFTER if lists_after is None else int(lists_after)
        self.calls = 0
        #: the level lists (CSR: input j's outputs at distance h from starts[j (levels + 1)
        #: + h]); None before they are built, False when they would be too large
        self._lists: tuple[np.ndarray, np.ndarray] | None | bool = None
        #: the inputs that skip the lists until the next refresh (``SKIP_REFRESH``)
        self._skip: np.ndarray | None = None

    def _order(self, L: np.ndarray, empty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Outputs sorted by cost class, then lexicographically by codes; and their classes.

        A class holds the live outputs whose L[:, i] fall in one cell of a grid of
        ``cost_bin`` nats (empty outputs: one class), so a superblock's min-L bound is
        nearly tight in cost while its blocks stay tight in Hamming distance. Any order
        is exact; this one only makes the bounds prune.
        """
        n = L.shape[1]
        if self.cost_bin is None or n == 0:
            cls = empty.astype(np.int64)
        else:
            lo = L.min(axis=1, keepdims=True) if L.shape[0] else np.zeros((0, 1))
            cells = np.floor((L - lo) / self.cost_bin)
            span = float(cells.max()) + 1.0 if cells.size else 1.0
            if span ** L.shape[0] < 2.0**62:  # one integer key per cell
                key = np.zeros(n, dtype=np.int64)
                for row in cells.astype(np.int64):
                    key = key * int(span) + row
                key[empty] = -1
                cls = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            else:
                cells[:, empty] = -1.0
                cls = np.unique(cells, axis=1, return_inverse=True)[1].reshape(-1).astype(np.int64)
        order = np.lexsort((self.lex_rank, cls)).astype(np.int64)
        return order, cls[order]

    @staticmethod
    def supports(distortion: object) -> bool:
        """Hamming on >= 2 attributes of integer codes >= 0 with at most 64 values each."""
        points = getattr(distortion, "points", None)
        if getattr(distortion, "metric", None) != "hamming" or points is None:
            return False
        points = np.asarray(points)
        if points.ndim != 2 or points.shape[1] < 2 or points.shape[0] == 0:
            return False
        if not np.all(np.isfinite(points)) or np.any(points < 0) or np.any(points != np.rint(points)):
            return False
        return all(np.unique(points[:, t]).size <= MAX_CARD for t in range(points.shape[1]))

    def _level_lists(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The outputs at distance 0 .. ``levels`` of every input (built once, by grouping
        the profiles equal outside each set of at most ``levels`` attributes), or None when
        they would hold more than ``LIST_PAIRS_PER_INPUT`` pairs per input."""
        if self._lists is None and self.levels < 0:
            self._lists = False
        if self._lists is None:
            n, h = self.codes.shape[0], self.levels + 1
            groupings = list(_groupings(self.codes, self.levels))
            # a group of g profiles holds at most g² pairs of the lists
            if sum(int((np.diff(gs) ** 2).sum()) for _, _, gs in groupings) \
                    > LIST_PAIRS_PER_INPUT * n:
                self._lists = False
                return None
            none = np.empty(0, dtype=np.int64)
            sizes = [_group_pairs(m, gs, self.codes, d, False, none, none, 0)
                     for d, m, gs in groupings]
            out_j, out_i = np.empty(sum(sizes), dtype=np.int64), np.empty(sum(sizes), dtype=np.int64)
            level = np.empty(sum(sizes), dtype=np.int64)
            at = 0
            for (d, m, gs), size in zip(groupings, sizes, strict=True):
                _group_pairs(m, gs, self.codes, d, True, out_j, out_i, at)
                level[at: at + size] = d.size
                at += size
            key = out_j * h + level  # CSR by (input, level)
            starts = np.zeros(n * h + 1, dtype=np.int64)
            np.cumsum(np.bincount(key, minlength=n * h), out=starts[1:])
            self._lists = (starts, _scatter(key, out_i.astype(np.int32), starts))
        return self._lists or None

    def price(self, L: np.ndarray, P: np.ndarray, p_b: np.ndarray, lam: float,
              empty: np.ndarray, empty_cost: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """(argmin_i, min_i) of c_ij - λ p(b_j) d(b̂_i, b_j) over all outputs, for every j.

        From the ``lists_after``-th call on each input is first priced over its level lists
        (:func:`_price_levels`); the branch and bound then prices only the inputs that an
        output farther out could still improve, from the best value found.
        """
        n = P.shape[1]
        L = np.asarray(L, dtype=np.float64)
        empty = np.asarray(empty, dtype=np.bool_)
        P = np.ascontiguousarray(P, dtype=np.float64)
        ecost = np.zeros(n) if empty_cost is None else np.ascontiguousarray(empty_cost, dtype=np.float64)
        weight = np.ascontiguousarray(-lam * np.asarray(p_b, dtype=np.float64))
        best_i = np.full(n, -1, dtype=np.int64)
        best_v = np.full(n, np.inf)
        self.calls += 1
        lists = self._level_lists() if self.calls >= self.lists_after and n else None
        if lists is not None:
            live = ~empty
            lmin = L[:, live].min(axis=1) if live.any() else np.zeros(L.shape[0])
            refresh = self._skip is None or self.calls % SKIP_REFRESH == 0
            todo = np.arange(n) if refresh else np.flatnonzero(~self._skip)
            farther = np.ones(n, dtype=np.bool_)  # the skipped ones go on, from no incumbent
            Lc = np.ascontiguousarray(L)
            self._chunks.run(lambda lo, hi: _price_levels(
                Lc, P, weight, empty, ecost, lmin, bool(live.any()), bool(empty.any()),
                *lists, self.levels, todo, lo, hi, best_i, best_v, farther), todo.size,
                self.levels_min_parallel)
            if refresh:
                self._skip = farther.copy()
            rest = np.flatnonzero(farther)
        else:
            rest = np.arange(n)
        if rest.size:
            order, cls_s = self._order(L, empty)
            Ls = np.ascontiguousarray(L[:, order])
            empty_s = np.ascontiguousarray(empty[order])
            codes_s = np.ascontiguousarray(self.codes[order])
            tables = _tables(Ls, empty_s, codes_s, cls_s, self.block, self.superblock)
            rank = np.empty(n, dtype=np.int64)
            rank[order] = np.arange(n)
            positions = np.sort(rank[rest])

            def run(lo: int, hi: int) -> None:
                _price_hamming(Ls, P, weight, empty_s, ecost, codes_s, order, *tables,
                               positions, lo, hi, best_i, best_v)

            self._chunks.run(run, positions.size, self.rest_min_parallel)
        return best_i, best_v

    def close(self) -> None:
        """Stop the worker threads (a later :meth:`price` starts them again)."""
        self._chunks.close()
