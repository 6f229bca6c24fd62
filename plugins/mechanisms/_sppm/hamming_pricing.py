"""Exact pricing for Hamming distortions on integer-coded profiles, without an n² scan.

For input j the value of output i is ``v_ij = c_ij + w_j d(x_i, x_j)`` with
``w_j = (-λ) p(b_j) >= 0``, ``d`` the number of differing attributes and
``c_ij = Σ_a P[a, j] L[a, i]`` (or ``empty_cost[j]`` at an output with no mass).

The outputs are sorted lexicographically by their codes and cut into blocks of ``block``
consecutive outputs, and the blocks into superblocks of ``superblock`` blocks. Each
(super)block keeps, per private value a, ``lmin[a] = min L[a, i]`` over its live outputs,
whether it holds an empty output, and per attribute t a 64-bit mask of the values present
(empty outputs included: d applies to them too). A lower bound of v_ij over a (super)block is

    ``min(Σ_a P[a, j] lmin[a], empty_cost[j]) + w_j · #{t : x_jt not in mask_t}``

(the first term only over the parts that exist). Input j first scans its own block (which
holds x_j itself, at d = 0), then visits the superblocks outward from its own; a superblock
is opened only when its bound beats the best value found, and a block in it is scanned only
when its own bound does.

Why no slack is needed: each bound is computed with the same floating-point operations, in
the same order, as the values it bounds (``c = 0; c += P[a, j] * L[a, i]`` over a ascending,
then ``c + w * d``). With ``P >= 0`` and ``w >= 0`` every step is monotone in its operands
and IEEE rounding is monotone, so ``lmin <= L`` and ``#missing <= d`` give bound <= value
bit for bit. A (super)block is skipped only when bound >= best, so nothing strictly better
is ever skipped: the result is exactly the dense minimum, which the tests check.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

#: outputs per block of the sorted profiles
BLOCK = 16
#: blocks per superblock
SUPERBLOCK = 32
#: most distinct values per attribute (one bit each in a 64-bit mask)
MAX_CARD = 64


@numba.njit(cache=True, nogil=True)
def _value_masks(codes_s, block, superblock):  # pragma: no cover - compiled
    """Per block and superblock, per attribute: the bitmask of the values present."""
    n, k = codes_s.shape
    nb = (n + block - 1) // block
    ns = (nb + superblock - 1) // superblock
    bmask = np.zeros((nb, k), dtype=np.uint64)
    smask = np.zeros((ns, k), dtype=np.uint64)
    for s in range(n):
        b = s // block
        for t in range(k):
            bmask[b, t] |= np.uint64(1) << np.uint64(codes_s[s, t])
    for b in range(nb):
        for t in range(k):
            smask[b // superblock, t] |= bmask[b, t]
    return bmask, smask


@numba.njit(cache=True, nogil=True)
def _cost_tables(Ls, empty_s, block, superblock):  # pragma: no cover - compiled
    """Per block and superblock: min of L[a, ·] over live outputs, has-live, has-empty."""
    n_a, n = Ls.shape
    nb = (n + block - 1) // block
    ns = (nb + superblock - 1) // superblock
    blmin = np.full((nb, n_a), np.inf)
    blive = np.zeros(nb, dtype=np.bool_)
    bemp = np.zeros(nb, dtype=np.bool_)
    slmin = np.full((ns, n_a), np.inf)
    slive = np.zeros(ns, dtype=np.bool_)
    semp = np.zeros(ns, dtype=np.bool_)
    for s in range(n):
        b = s // block
        if empty_s[s]:
            bemp[b] = True
        else:
            blive[b] = True
            for a in range(n_a):
                if Ls[a, s] < blmin[b, a]:
                    blmin[b, a] = Ls[a, s]
    for b in range(nb):
        q = b // superblock
        slive[q] = slive[q] or blive[b]
        semp[q] = semp[q] or bemp[b]
        for a in range(n_a):
            slmin[q, a] = min(slmin[q, a], blmin[b, a])
    return blmin, blive, bemp, slmin, slive, semp


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
def _price_hamming(Ls, P, weight, empty_s, ecost, codes_s, order, block, superblock,
                   bmask, smask, blmin, blive, bemp, slmin, slive, semp,
                   s_lo, s_hi, best_i, best_v):  # pragma: no cover - compiled
    """(argmin_i, min_i) of v_ij for the inputs j = order[s], s_lo <= s < s_hi.

    Own block first (it holds x_j, so ``best`` starts at most c_jj), then the
    superblocks outward from j's own: lexicographic neighbours share the leading
    attributes, so good values come early and the bounds prune the rest.
    """
    n_a, n = Ls.shape
    k = codes_s.shape[1]
    nb = bmask.shape[0]
    ns = smask.shape[0]
    pj = np.empty(n_a)
    xj = np.empty(k, dtype=codes_s.dtype)
    xbit = np.empty(k, dtype=np.uint64)
    for s in range(s_lo, s_hi):
        j = order[s]
        w = weight[j]
        ej = ecost[j]
        for a in range(n_a):
            pj[a] = P[a, j]
        for t in range(k):
            xj[t] = codes_s[s, t]
            xbit[t] = np.uint64(1) << np.uint64(codes_s[s, t])
        home = s // block
        best, arg = _scan(pj, ej, w, xj, Ls, empty_s, codes_s, home * block,
                          min(home * block + block, n), np.inf, -1)
        hs = home // superblock
        for step in range(2 * ns):  # hs, hs + 1, hs - 1, hs + 2, ...
            q = hs + (step + 1) // 2 if step % 2 == 0 else hs - (step + 1) // 2
            if q < 0 or q >= ns:
                continue
            if _bound(pj, ej, w, xbit, slmin, slive, semp, smask, q) >= best:
                continue
            for b in range(q * superblock, min(q * superblock + superblock, nb)):
                if b == home:
                    continue
                if _bound(pj, ej, w, xbit, blmin, blive, bemp, bmask, b) >= best:
                    continue
                best, arg = _scan(pj, ej, w, xj, Ls, empty_s, codes_s, b * block,
                                  min(b * block + block, n), best, arg)
        best_i[j] = order[arg]
        best_v[j] = best


class HammingPricer:
    """Exact pricing for a Hamming distortion on k >= 2 integer-coded attributes; build once.

    The inputs are split into ``8 * threads`` ranges (of the sorted profiles) priced
    concurrently, since the kernel releases the GIL; call :meth:`close` to stop the threads.
    """

    #: below this many inputs one thread prices everything (threads cost more than they save)
    min_parallel = 4096

    def __init__(self, points: np.ndarray, threads: int = 1, block: int = BLOCK,
                 superblock: int = SUPERBLOCK) -> None:
        pts = np.asarray(points, dtype=np.float64)
        n, k = pts.shape
        codes = np.empty((n, k), dtype=np.uint8)
        for t in range(k):  # re-code each attribute to 0 .. card - 1
            values, inverse = np.unique(pts[:, t], return_inverse=True)
            if values.size > MAX_CARD:
                raise ValueError(f"attribute {t} has {values.size} values; at most {MAX_CARD} supported")
            codes[:, t] = inverse.reshape(-1)
        # lexicographic order, most distinct values first: leading attributes are constant
        # over a block, and a high-cardinality attribute is the likeliest to differ from x_j
        cards = codes.max(axis=0).astype(np.int64) + 1 if n else np.ones(k, np.int64)
        attrs = np.argsort(-cards, kind="stable")
        self.order = np.lexsort(codes[:, attrs[::-1]].T).astype(np.int64)
        self.codes_s = np.ascontiguousarray(codes[self.order])
        self.block = max(1, int(block))
        self.superblock = max(1, int(superblock))
        self.bmask, self.smask = _value_masks(self.codes_s, self.block, self.superblock)
        self.threads = max(1, int(threads))
        self._pool: ThreadPoolExecutor | None = None

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

    def price(self, L: np.ndarray, P: np.ndarray, p_b: np.ndarray, lam: float,
              empty: np.ndarray, empty_cost: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """(argmin_i, min_i) of c_ij - λ p(b_j) d(b̂_i, b_j) over all outputs, for every j."""
        n = P.shape[1]
        Ls = np.ascontiguousarray(np.asarray(L, dtype=np.float64)[:, self.order])
        P = np.ascontiguousarray(P, dtype=np.float64)
        empty_s = np.ascontiguousarray(np.asarray(empty, dtype=np.bool_)[self.order])
        ecost = np.zeros(n) if empty_cost is None else np.ascontiguousarray(empty_cost, dtype=np.float64)
        weight = np.ascontiguousarray(-lam * np.asarray(p_b, dtype=np.float64))
        tables = _cost_tables(Ls, empty_s, self.block, self.superblock)
        best_i = np.empty(n, dtype=np.int64)
        best_v = np.empty(n)

        def run(lo: int, hi: int) -> None:
            _price_hamming(Ls, P, weight, empty_s, ecost, self.codes_s, self.order, self.block,
                           self.superblock, self.bmask, self.smask, *tables, lo, hi, best_i, best_v)

        if self.threads == 1 or n < self.min_parallel:
            run(0, n)
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="sppm-hamming")
            # many small chunks: the work per input varies along the sorted profiles
            cuts = np.linspace(0, n, 8 * self.threads + 1).astype(int)
            for f in [self._pool.submit(run, a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]:
                f.result()
        return best_i, best_v

    def close(self) -> None:
        """Stop the worker threads (a later :meth:`price` starts them again)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
