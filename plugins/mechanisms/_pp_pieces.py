"""A sparse perfectly private mapping onto given outputs (``lip_optimal``'s ε repair).

A row s >= 0 of a mapping (over the public symbols) is perfectly private when its output
is as likely under every private value: Σ_j s_j p(b_j | a) = Σ_j s_j p(b_j) for every a,
that is D s = 0 with D[a, j] = p(b_j | a) - p(b_j). The all-ones row is one (the constant
mapping) but it is dense; spreading it over |B| outputs costs |B| · n entries (census with
every profile: 7,000 x 9,261 = 65 M). :func:`pieces` instead splits the all-ones row into
perfectly private pieces of small support, one private value a at a time: atoms with
D[a] s > 0 are paired with atoms with D[a] s < 0 by the north-west-corner rule of a
transport (each pair weighted to cancel exactly), so each stage at most doubles an atom's
support and leaves fewer than twice as many atoms. With |A| = 2 (census, random, the
synthetic example) one stage: pieces of two public symbols, fewer than n of them. The
pieces sum to the all-ones row (to rounding), so any assignment of them to outputs is a
column-stochastic mapping whose every row is perfectly private (to rounding: the caller
measures each row's own value rather than assuming 0).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: an atom whose D[a] s is below this, relative to its mass Σ_j s_j p(b_j), counts as 0
ZERO_REL = 1e-15


def pieces(cond: np.ndarray, p: np.ndarray) -> sp.csr_array:
    """Perfectly private rows (P, m) of small support summing to the all-ones row.

    :param cond: p(b_j | a), (|A|, m) over the live private values and public symbols.
    :param p: p(b_j), (m,), all > 0.
    """
    m = p.size
    S = sp.csr_array(sp.identity(m, format="csr"))
    for a in range(cond.shape[0] - 1):  # the last row of D is minus the sum of the others
        S = _stage(S, S @ (cond[a] - p), S @ p)
    return S


def _stage(S: sp.csr_array, value: np.ndarray, mass: np.ndarray) -> sp.csr_array:
    """Combine atoms (rows of S) into pieces with value 0 (north-west corner of the
    transport from the atoms of positive value to those of negative value)."""
    small = np.abs(value) <= ZERO_REL * mass
    pos = np.flatnonzero(~small & (value > 0))
    neg = np.flatnonzero(~small & (value < 0))
    rows: list[int] = []
    cols: list[int] = []
    coef: list[float] = []
    k, ip, ineg = 0, 0, 0
    rp = float(value[pos[0]]) if pos.size else 0.0
    rn = float(-value[neg[0]]) if neg.size else 0.0
    while ip < pos.size and ineg < neg.size:
        t = min(rp, rn)
        rows += [k, k]
        cols += [int(pos[ip]), int(neg[ineg])]
        coef += [t / value[pos[ip]], t / -value[neg[ineg]]]
        k += 1
        rp, rn = rp - t, rn - t
        if rp <= 0.0:
            ip += 1
            rp = float(value[pos[ip]]) if ip < pos.size else 0.0
        if rn <= 0.0:
            ineg += 1
            rn = float(-value[neg[ineg]]) if ineg < neg.size else 0.0
    # rounding leaves one side's last atoms (value ~1e-16 of the total): into the piece of
    # most mass, where they move its ratios least
    weights = np.bincount(rows, weights=np.asarray(coef) * mass[cols], minlength=1)
    target = int(np.argmax(weights))
    k = max(k, 1)
    for side, at, rest, sign in ((pos, ip, rp, 1.0), (neg, ineg, rn, -1.0)):
        for idx in range(at, side.size):
            left = (rest if idx == at else sign * value[side[idx]])
            rows.append(target)
            cols.append(int(side[idx]))
            coef.append(left / (sign * value[side[idx]]))
    keep = np.flatnonzero(small)
    rows += list(range(k, k + keep.size))
    cols += keep.tolist()
    coef += [1.0] * keep.size
    C = sp.csr_array((coef, (rows, cols)), shape=(k + keep.size, S.shape[0]))
    return sp.csr_array(C @ S)


def private_mixer(cond: np.ndarray, p: np.ndarray, live: np.ndarray, n: int,
                  outputs: np.ndarray) -> sp.csc_array:
    """A column-stochastic (n, n) mapping, perfectly private on every row (to rounding),
    whose rows are 0 outside ``outputs`` and have p(b̂) > 0 on each of them.

    Pieces are dealt to the outputs largest first, round-robin (a piece is split into equal
    copies when there are fewer pieces than outputs); a public symbol of probability 0
    (not in ``live``) goes to the first output. When the pieces hold more entries than
    |B| · m (many private values, few outputs), the all-ones row is dealt instead: V then
    sends every input uniformly to the outputs.
    """
    S = pieces(cond, p)
    if outputs.size * p.size <= S.nnz:  # many private values: the uniform V is as sparse
        S = sp.csr_array(np.ones((1, p.size)))
    P = S.shape[0]
    if P < outputs.size:
        copies = -(-outputs.size // P)
        S = sp.csr_array(sp.vstack([S / copies] * copies, format="csr"))
        P = S.shape[0]
    order = np.argsort(-(S @ p), kind="stable")
    owner = np.empty(P, np.int64)
    owner[order] = outputs[np.arange(P) % outputs.size]
    C = sp.coo_array(S)
    dead = np.setdiff1d(np.arange(n), live)
    rows = np.concatenate([owner[C.row], np.full(dead.size, outputs[0])])
    cols = np.concatenate([live[C.col], dead])
    vals = np.concatenate([C.data, np.ones(dead.size)])
    return sp.csc_array((vals, (rows, cols)), shape=(n, n))
