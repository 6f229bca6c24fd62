"""The restricted master as a multiple-choice knapsack LP, solved exactly in O(|V| log |V|).

SPPM's master (``privbench.protocol.lp``) has one simplex row per input j and a single budget
row. That is the LP relaxation of a multiple-choice knapsack problem, which has a
closed-form solution (Sinha & Zoltners 1979): in the (a, c) plane each input's useful
columns form the lower-left convex hull of its points; start every input at its
least-budget hull point and buy the hull segments in order of slope Δc/Δa (most
negative first) until the budget runs out, the last one fractionally. The slope of
that last segment is the budget dual λ (<= 0), and μ_j = c - λ a at each input's
chosen point; every column then has reduced cost c - λ a - μ_j >= 0, which is the
optimality certificate a simplex solver would give, without the simplex.

The loops are compiled with numba (they are per-input scans no numpy call expresses).
"""

from __future__ import annotations

import numba
import numpy as np

#: statuses returned by :func:`solve_mckp`
OPTIMAL, INFEASIBLE = 0, 1


@numba.njit(cache=True, nogil=True)
def _hulls(cost, budget, order, ptr):  # pragma: no cover - compiled
    """Lower-left hull of each input's points (sorted by budget within the input).

    Returns the hull column indices, flattened, and their per-input offsets. Points
    dominated by a cheaper point with less or equal budget are dropped first, so the
    chain has strictly increasing budget and strictly decreasing cost.
    """
    n = ptr.size - 1
    hull = np.empty(order.size, dtype=np.int64)
    hptr = np.empty(n + 1, dtype=np.int64)
    top = 0
    for j in range(n):
        hptr[j] = top
        start = top
        best = np.inf
        for p in range(ptr[j], ptr[j + 1]):
            k = order[p]
            ck = cost[k]
            if ck >= best:
                continue  # dominated: an earlier point costs no more and uses no more budget
            ak = budget[k]
            if top > start and budget[hull[top - 1]] == ak:
                top -= 1  # same budget, cheaper: replaces the previous point
            # pop points that lie on or above the segment from their predecessor to k
            while top - start >= 2:
                k1 = hull[top - 2]
                k2 = hull[top - 1]
                cross = (budget[k2] - budget[k1]) * (ck - cost[k1]) \
                    - (cost[k2] - cost[k1]) * (ak - budget[k1])
                if cross <= 0.0:
                    top -= 1
                else:
                    break
            hull[top] = k
            top += 1
            best = ck
    hptr[n] = top
    return hull, hptr


@numba.njit(cache=True, nogil=True)
def _greedy(cost, budget, hull, hptr, delta, x, mu):  # pragma: no cover - compiled
    """Buy hull segments by slope; fill x and μ; return (status, λ, objective)."""
    n = hptr.size - 1
    used = 0.0
    nseg = 0
    for j in range(n):
        used += budget[hull[hptr[j]]]
        nseg += hptr[j + 1] - hptr[j] - 1
    if used > delta * (1.0 + 1e-12) + 1e-300:
        return INFEASIBLE, 0.0, np.nan
    slope = np.empty(nseg)
    seg_in = np.empty(nseg, dtype=np.int64)
    s = 0
    for j in range(n):
        for h in range(hptr[j], hptr[j + 1] - 1):
            k1 = hull[h]
            k2 = hull[h + 1]
            slope[s] = (cost[k2] - cost[k1]) / (budget[k2] - budget[k1])
            seg_in[s] = j
            s += 1
    order = np.argsort(slope, kind="mergesort")
    pos = hptr[:-1].copy()  # each input's current hull position
    left = max(delta - used, 0.0)
    lam = 0.0
    frac_j = -1
    frac_t = 0.0
    for r in range(nseg):
        s = order[r]
        j = seg_in[s]
        k1 = hull[pos[j]]
        k2 = hull[pos[j] + 1]
        da = budget[k2] - budget[k1]
        if da <= left:
            left -= da
            pos[j] += 1
        else:
            lam = slope[s]
            frac_j = j
            frac_t = left / da
            break
    objective = 0.0
    for j in range(n):
        k = hull[pos[j]]
        if j == frac_j:
            k2 = hull[pos[j] + 1]
            x[k] = 1.0 - frac_t
            x[k2] = frac_t
            objective += (1.0 - frac_t) * cost[k] + frac_t * cost[k2]
        else:
            x[k] = 1.0
            objective += cost[k]
        mu[j] = cost[k] - lam * budget[k]
    return OPTIMAL, lam, objective


@numba.njit(cache=True, nogil=True)
def _merge(order, new, cols, budget):  # pragma: no cover - compiled
    """Merge two index lists, each sorted by (cols, budget), into one."""
    out = np.empty(order.size + new.size, dtype=np.int64)
    p = q = 0
    for r in range(out.size):
        if q >= new.size:
            take_old = True
        elif p >= order.size:
            take_old = False
        else:
            a, b = order[p], new[q]
            take_old = cols[a] < cols[b] or (cols[a] == cols[b] and budget[a] <= budget[b])
        if take_old:
            out[r] = order[p]
            p += 1
        else:
            out[r] = new[q]
            q += 1
    return out


def group_order(cols: np.ndarray, budget: np.ndarray, n: int, order: np.ndarray | None = None,
                counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Columns sorted by (input, budget) and each input's offsets into that order.

    :param order: the result for the first ``order.size`` columns, if known: only the
        columns added since are sorted, then merged in (O(|V|) instead of a full sort)
    :param counts: the number of columns of each input, if known
    """
    start = 0 if order is None else order.size
    new = (np.lexsort((budget[start:], cols[start:])) + start).astype(np.int64)
    order = new if order is None else _merge(order, new, cols, budget)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n) if counts is None else counts, out=ptr[1:])
    return order, ptr


def solve_mckp(cost: np.ndarray, budget: np.ndarray, order: np.ndarray, ptr: np.ndarray,
               delta: float) -> tuple[int, np.ndarray, float, np.ndarray, float]:
    """Exact optimum of the master: (status, x, λ, μ, objective).

    :param order, ptr: from :func:`group_order` for the same columns and budgets
    """
    n = ptr.size - 1
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    budget = np.ascontiguousarray(budget, dtype=np.float64)
    hull, hptr = _hulls(cost, budget, order, ptr)
    x = np.zeros(cost.size)
    mu = np.zeros(n)
    status, lam, objective = _greedy(cost, budget, hull, hptr, float(delta), x, mu)
    return int(status), x, float(lam), mu, float(objective)
