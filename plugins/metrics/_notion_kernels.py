"""The bootstrap's exact notions over a stack of output joints, compiled: one pass a joint.

Each notion takes a (B, |A|, n) stack of output joints Q (unnormalised, as resampled)
and returns the notion for every joint, (B,): the same definitions as
``pb.metrics.JOINT_NOTIONS`` (tests/test_bootstrap_intervals.py checks them joint by joint,
infinite values and rows or columns without mass included). The numpy forms they replace
made several full passes over the stack per notion (normalise, both marginals, W = p(b̂|a),
then the notion's own reductions over non-contiguous axes); on census with every profile
(n = 9,261) the double bootstrap's 1,500 inner joints took most of the metric's time.

Per joint: Qn = Q / Σ Q, p(a) = Σ_j Qn[a, j], q(b̂) = Σ_a Qn[a, b̂], W[a, b̂] = Qn[a, b̂] /
p(a) (0 where p(a) = 0), the divisions taken as multiplications by reciprocals (the values
differ from the numpy forms' in the last bits). A joint without mass gets the value the
numpy forms gave it: NaN where they divided 0 by 0 into the result (min-entropy leakage,
total variation, guessing entropy), else 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def _marginals(Q, b, pa, q, ipa):  # pragma: no cover - compiled
    """1 / Σ Q[b] (0 when Σ Q[b] = 0), and into pa, q the marginals p(a), q(b̂) of the
    normalised joint, into ipa 1 / p(a) (0 where p(a) = 0): one pass, and multiplications
    by reciprocals in the kernels' cell loops instead of divisions."""
    k, n = Q.shape[1], Q.shape[2]
    q[:] = 0.0
    tot = 0.0
    for a in range(k):
        row = 0.0
        for j in range(n):
            x = Q[b, a, j]
            row += x
            q[j] += x
        pa[a] = row
        tot += row
    inv = 1.0 / tot if tot > 0 else 0.0
    for a in range(k):
        pa[a] *= inv
        ipa[a] = 1.0 / pa[a] if pa[a] > 0 else 0.0
    for j in range(n):
        q[j] *= inv
    return inv


@numba.njit(cache=True, inline="always")
def _log2_floor(x):  # pragma: no cover - compiled
    return max(math.log2(x), 0.0) if x > 0 else 0.0


@numba.njit(cache=True, inline="always")
def _log2_floor(x):  # pragma: no cover - compiled
    return max(math.log2(x), 0.0) if x > 0 else 0.0


#: the notions in the driver's order (its ``which``), and the value of a joint without
#: mass for each (NaN where the numpy forms divided 0 by 0 into the result, else 0)
NAMES = ("mi_bits", "maximal_leakage", "min_entropy_leakage", "sibson_mi", "lip_epsilon",
         "ldp_epsilon_private", "total_variation", "t_closeness", "guessing_entropy")
EMPTY = np.array([0.0, 0.0, np.nan, 0.0, 0.0, 0.0, np.nan, 0.0, np.nan])


@numba.njit(cache=True)
def over_stack(Q, which, empty):  # pragma: no cover - compiled
    """Notion ``NAMES[which]`` of every joint of the (B, |A|, n) stack Q (``empty``: the
    value of a joint without mass). One compiled driver for all nine: the joint loop and
    the marginals here, the notion's own pass in its inlined ``_*_joint``."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa, w, ones = np.empty(k), np.empty(n), np.empty(k), np.empty(k), np.ones(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        if not inv > 0:
            out[b] = empty
        elif which == 0:
            out[b] = _mi_joint(Q, b, inv, pa, q)
        elif which == 1:  # log2 Σ_b̂ max_a p(b̂ | a) (at least 0)
            out[b] = _log2_floor(_column_maxima(Q, b, inv, ipa))
        elif which == 2:  # log2 (Σ_b̂ max_a p(a, b̂) / max_a p(a)) (at least 0)
            out[b] = _log2_floor(_column_maxima(Q, b, inv, ones) / pa.max())
        elif which == 3:
            out[b] = _sibson_joint(Q, b, inv, pa, q, ipa, w)
        elif which == 4:
            out[b] = _lip_joint(Q, b, inv, pa, q, ipa)
        elif which == 5:
            out[b] = _ldp_joint(Q, b, inv, pa, q, ipa)
        elif which == 6:
            out[b] = _tv_joint(Q, b, inv, pa, q)
        elif which == 7:
            out[b] = _t_closeness_joint(Q, b, inv, pa, q)
        else:
            out[b] = _guessing_joint(Q, b, inv, w)
    return out


@numba.njit(cache=True, inline="always")
def _mi_joint(Q, b, inv, pa, q):  # pragma: no cover - compiled
    """I(A; B̂) in bits."""
    s = 0.0
    for a in range(Q.shape[1]):
        for j in range(Q.shape[2]):
            x = Q[b, a, j] * inv
            if x > 0:
                s += x * math.log2(x / (pa[a] * q[j]))
    return max(s, 0.0)


@numba.njit(cache=True, inline="always")
def _column_maxima(Q, b, inv, scale):  # pragma: no cover - compiled
    """Σ_b̂ max_a p(a, b̂) scale[a]: with scale = 1 / p(a) the numerator of maximal
    leakage, with scale = 1 that of min-entropy leakage."""
    s = 0.0
    for j in range(Q.shape[2]):
        top = 0.0
        for a in range(Q.shape[1]):
            top = max(top, Q[b, a, j] * inv * scale[a])
        s += top
    return s


@numba.njit(cache=True, inline="always")
def _sibson_joint(Q, b, inv, pa, q, ipa, w):  # pragma: no cover - compiled
    """Sibson's α = 2 information, each column scaled by its largest W."""
    k = Q.shape[1]
    s = 0.0
    for j in range(Q.shape[2]):
        if not q[j] > 0:
            continue
        top = 0.0
        for a in range(k):
            w[a] = Q[b, a, j] * inv * ipa[a]
            top = max(top, w[a])
        inner = 0.0
        for a in range(k):
            inner += pa[a] * (w[a] / top) ** 2
        s += top * math.sqrt(inner)
    return 2.0 * _log2_floor(s)


@numba.njit(cache=True, inline="always")
def _lip_joint(Q, b, inv, pa, q, ipa):  # pragma: no cover - compiled
    """max over p(a) > 0, q(b̂) > 0 of |ln(p(b̂ | a) / q(b̂))|; inf where such a p(b̂ | a) is 0.

    ln is increasing, so the largest |ln r| is ln of the largest ratio r or -ln of the
    least: two logarithms a joint, not one a cell."""
    hi, lo, zero = 1.0, 1.0, False  # a joint without valid cells has LIP 0 (ln 1)
    for a in range(Q.shape[1]):
        if not pa[a] > 0:
            continue
        for j in range(Q.shape[2]):
            if not q[j] > 0:
                continue
            r = Q[b, a, j] * inv * ipa[a] / q[j]
            if r <= 0:
                zero = True
            hi = max(hi, r)
            lo = min(lo, r)
    return np.inf if zero else max(math.log(hi), -math.log(lo))


@numba.njit(cache=True, inline="always")
def _ldp_joint(Q, b, inv, pa, q, ipa):  # pragma: no cover - compiled
    """max over q(b̂) > 0 of ln(max_a p(b̂ | a) / min_{p(a) > 0} p(b̂ | a)) (at least 0);
    inf where that minimum is 0."""
    best = 0.0
    for j in range(Q.shape[2]):
        if not q[j] > 0:
            continue
        top, low = 0.0, np.inf
        for a in range(Q.shape[1]):
            w = Q[b, a, j] * inv * ipa[a]
            top = max(top, w)
            if pa[a] > 0:
                low = min(low, w)
        if low <= 0:
            return np.inf
        best = max(best, top / low)  # the largest ratio: ln is increasing
    # top >= low, so a ratio is at least 1 and ε at least 0; no column: 0
    return math.log(best) if best >= 1.0 else 0.0


@numba.njit(cache=True, inline="always")
def _tv_joint(Q, b, inv, pa, q):  # pragma: no cover - compiled
    """½ Σ |p(a, b̂) - p(a) q(b̂)|."""
    s = 0.0
    for a in range(Q.shape[1]):
        for j in range(Q.shape[2]):
            s += abs(Q[b, a, j] * inv - pa[a] * q[j])
    return 0.5 * s


@numba.njit(cache=True, inline="always")
def _t_closeness_joint(Q, b, inv, pa, q):  # pragma: no cover - compiled
    """½ max over q(b̂) > 0 of Σ_a |p(a | b̂) - p(a)|."""
    best = 0.0
    for j in range(Q.shape[2]):
        if not q[j] > 0:
            continue
        gap = 0.0
        for a in range(Q.shape[1]):
            gap += abs(Q[b, a, j] * inv / q[j] - pa[a])
        best = max(best, gap)
    return 0.5 * best


@numba.njit(cache=True, inline="always")
def _guessing_joint(Q, b, inv, col):  # pragma: no cover - compiled
    """Σ_b̂ Σ_r r p_(r)(b̂), p_(1) >= p_(2) >= ... the column's joint values ranked."""
    k = Q.shape[1]
    s = 0.0
    for j in range(Q.shape[2]):
        for a in range(k):  # insertion sort, largest first (|A| is small)
            x = Q[b, a, j] * inv
            r = a
            while r > 0 and col[r - 1] < x:
                col[r] = col[r - 1]
                r -= 1
            col[r] = x
        for r in range(k):
            s += (r + 1) * col[r]
    return s


def kernel(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The notion ``name`` (one of :data:`NAMES`) over a C-contiguous float64 stack."""
    which = NAMES.index(name)
    empty = float(EMPTY[which])
    return lambda Q: over_stack(Q, which, empty)


#: the compiled notions by name (the keys of ``pb.metrics.JOINT_NOTIONS``)
KERNELS = {name: kernel(name) for name in NAMES}
