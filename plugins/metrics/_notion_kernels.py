"""The bootstrap's exact notions over a stack of output joints, compiled: one pass a joint.

Each function takes a (B, |A|, n) stack of output joints Q (unnormalised, as resampled)
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

import numba
import numpy as np

LOG2 = math.log(2.0)


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


@numba.njit(cache=True)
def mi_bits(Q):  # pragma: no cover - compiled
    """I(A; B̂) in bits."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa = np.empty(k), np.empty(n), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        s = 0.0
        if inv > 0:
            for a in range(k):
                for j in range(n):
                    x = Q[b, a, j] * inv
                    if x > 0:
                        s += x * math.log2(x / (pa[a] * q[j]))
        out[b] = max(s, 0.0)
    return out


@numba.njit(cache=True)
def maximal_leakage(Q):  # pragma: no cover - compiled
    """log2 Σ_b̂ max_a p(b̂ | a) (at least 0)."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa = np.empty(k), np.empty(n), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        s = 0.0
        if inv > 0:
            for j in range(n):
                top = 0.0
                for a in range(k):
                    if pa[a] > 0:
                        top = max(top, Q[b, a, j] * inv * ipa[a])
                s += top
        out[b] = _log2_floor(s)
    return out


@numba.njit(cache=True)
def min_entropy_leakage(Q):  # pragma: no cover - compiled
    """log2 (Σ_b̂ max_a p(a, b̂) / max_a p(a)) (at least 0); NaN without mass."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa = np.empty(k), np.empty(n), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        if not inv > 0:
            out[b] = np.nan
            continue
        s = 0.0
        for j in range(n):
            top = 0.0
            for a in range(k):
                top = max(top, Q[b, a, j] * inv)
            s += top
        out[b] = _log2_floor(s / pa.max())
    return out


@numba.njit(cache=True)
def sibson_mi(Q):  # pragma: no cover - compiled
    """Sibson's α = 2 information, each column scaled by its largest W."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa, w = np.empty(k), np.empty(n), np.empty(k), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        s = 0.0
        if inv > 0:
            for j in range(n):
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
        out[b] = 2.0 * _log2_floor(s)
    return out


@numba.njit(cache=True)
def lip_epsilon(Q):  # pragma: no cover - compiled
    """max over p(a) > 0, q(b̂) > 0 of |ln(p(b̂ | a) / q(b̂))|; inf where such a p(b̂ | a) is 0.

    ln is increasing, so the largest |ln r| is ln of the largest ratio r or -ln of the
    least: two logarithms a joint, not one a cell."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa = np.empty(k), np.empty(n), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        hi, lo, zero = 1.0, 1.0, False  # a joint without valid cells has LIP 0 (ln 1)
        if inv > 0:
            for a in range(k):
                if not pa[a] > 0:
                    continue
                for j in range(n):
                    if not q[j] > 0:
                        continue
                    r = Q[b, a, j] * inv * ipa[a] / q[j]
                    if r <= 0:
                        zero = True
                    hi = max(hi, r)
                    lo = min(lo, r)
        out[b] = np.inf if zero else max(math.log(hi), -math.log(lo))
    return out


@numba.njit(cache=True)
def ldp_epsilon_private(Q):  # pragma: no cover - compiled
    """max over q(b̂) > 0 of ln(max_a p(b̂ | a) / min_{p(a) > 0} p(b̂ | a)) (at least 0);
    inf where that minimum is 0."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa = np.empty(k), np.empty(n), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        best = 0.0
        if inv > 0:
            for j in range(n):
                if not q[j] > 0:
                    continue
                top, low = 0.0, np.inf
                for a in range(k):
                    w = Q[b, a, j] * inv * ipa[a]
                    top = max(top, w)
                    if pa[a] > 0:
                        low = min(low, w)
                if low <= 0:
                    best = np.inf
                    break
                best = max(best, top / low)  # the largest ratio: ln is increasing
        # top >= low, so a ratio is at least 1 and ε at least 0; no column: 0
        out[b] = math.log(best) if best >= 1.0 else 0.0
    return out


@numba.njit(cache=True)
def total_variation(Q):  # pragma: no cover - compiled
    """½ Σ |p(a, b̂) - p(a) q(b̂)|; NaN without mass."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa = np.empty(k), np.empty(n), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        if not inv > 0:
            out[b] = np.nan
            continue
        s = 0.0
        for a in range(k):
            for j in range(n):
                s += abs(Q[b, a, j] * inv - pa[a] * q[j])
        out[b] = 0.5 * s
    return out


@numba.njit(cache=True)
def t_closeness(Q):  # pragma: no cover - compiled
    """½ max over q(b̂) > 0 of Σ_a |p(a | b̂) - p(a)|."""
    B, k, n = Q.shape
    out = np.empty(B)
    pa, q, ipa = np.empty(k), np.empty(n), np.empty(k)
    for b in range(B):
        inv = _marginals(Q, b, pa, q, ipa)
        best = 0.0
        if inv > 0:
            for j in range(n):
                if not q[j] > 0:
                    continue
                gap = 0.0
                for a in range(k):
                    gap += abs(Q[b, a, j] * inv / q[j] - pa[a])
                best = max(best, gap)
        out[b] = 0.5 * best
    return out


@numba.njit(cache=True)
def guessing_entropy(Q):  # pragma: no cover - compiled
    """Σ_b̂ Σ_r r p_(r)(b̂), p_(1) >= p_(2) >= ... the column's joint values ranked; NaN
    without mass."""
    B, k, n = Q.shape
    out = np.empty(B)
    col = np.empty(k)
    for b in range(B):
        tot = 0.0
        for a in range(k):
            for j in range(n):
                tot += Q[b, a, j]
        inv = 1.0 / tot if tot > 0 else 0.0
        if not inv > 0:
            out[b] = np.nan
            continue
        s = 0.0
        for j in range(n):
            for a in range(k):  # insertion sort, largest first (|A| is small)
                x = Q[b, a, j] * inv
                r = a
                while r > 0 and col[r - 1] < x:
                    col[r] = col[r - 1]
                    r -= 1
                col[r] = x
            for r in range(k):
                s += (r + 1) * col[r]
        out[b] = s
    return out


#: the compiled notions by name (the keys of ``pb.metrics.JOINT_NOTIONS``)
KERNELS = {"mi_bits": mi_bits, "maximal_leakage": maximal_leakage,
           "min_entropy_leakage": min_entropy_leakage, "sibson_mi": sibson_mi,
           "lip_epsilon": lip_epsilon, "ldp_epsilon_private": ldp_epsilon_private,
           "total_variation": total_variation, "t_closeness": t_closeness,
           "guessing_entropy": guessing_entropy}
