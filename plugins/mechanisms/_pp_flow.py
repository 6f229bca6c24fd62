"""A first master for the perfect-privacy LP with two private values, from a min-cost flow.

With |A| = 2 the perfect-privacy LP (least E[d] with W(b̂|a_0) = W(b̂|a_1) for every output)
is a min-cost flow: let c_j = p(b_j|a_1) - p(b_j|a_0) (the "charge" of column j, Σ_j c_j = 0)
and f[i, j] = |c_j| X[i, j]. Each output i must receive as much charge from the positive
columns as from the negative ones, so the flow runs from every positive column j (supply c_j)
through outputs i to every negative column k (demand |c_k|), at cost dcost[i, j] / |c_j| per
unit on the arc j -> i (and the same on i -> k); columns with c_j = 0 go to their nearest
output. Over all n outputs that is ~2 n² arcs; over each column's ``SEED_NEAREST`` nearest
outputs plus the constant output of least E[d] (which keeps it feasible) it is a restricted
LP whose optimum, from a network solver (OR-Tools' min-cost flow, integers: costs and
supplies scaled and rounded), is close to the whole LP's.

Only the *support* of that flow is used: its pairs (i, j) join the column generation's first
master, which solves the exact LP in floating point and proves its bound as always. Why: on
census with every profile (n = 9,261) the perfect-privacy column generation from the nearest
outputs took dozens of rounds whose HiGHS re-solves ran 10-90 s each (10,000 simplex
iterations on ~18,500 rows); the network solver finds a near-optimal support in seconds.
Without ``ortools`` installed (extra ``privbench[ortools]``) the seed is skipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

#: partners per charged column offered to the flow: this many cheapest by path cost and
#: this many nearest by d (census top 5,000: the flow is the optimum with 300, 7 % above
#: it with 100; census with every profile: 2.6 % above it, 43 rounds after)
SEED_PARTNERS = 300
#: a column with |c_j| at most this carries no charge (it goes to its nearest output)
CHARGE_TOL = 1e-15
#: bytes of one block of path costs
BLOCK_BYTES = 48 * 2**20
#: integer scales: a unit of charge is 1e-9; a unit of cost 1e-6 of the median arc cost,
#: costs capped at 4e9 units, so the total (<= 2e9 units of flow) stays below 2^63
FLOW_SCALE = 1e9
COST_RESOLUTION = 1e6
COST_CAP = 4e9


def nearest_outputs(data: Any) -> np.ndarray:
    """Each live column's nearest output (least dcost), in blocks of columns."""
    out = np.empty(data.m, dtype=np.int64)
    step = max(1, BLOCK_BYTES // (8 * data.n))
    for lo in range(0, data.m, step):
        out[lo: lo + step] = data.dcost[:, lo: lo + step].argmin(axis=0)
    return out


def flow_seed_applies(problem: Any) -> bool:
    """Two private values of positive probability and OR-Tools importable."""
    if int(np.count_nonzero(np.asarray(problem.p_a) > 0)) != 2:
        return False
    try:
        import ortools.graph.python.min_cost_flow  # noqa: F401
    except ImportError:
        return False
    return True


def seed_pairs(data: Any, partners: int | None = None
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs (output i, live column jj) of a near-optimal perfectly private mapping.

    ``data`` is a ``_lp_colgen.Problem``; None when |A| != 2, when OR-Tools is missing or
    when the flow solver does not report an optimum (the caller then starts as usual)."""
    X = flow_mapping(data, partners)
    if X is None:
        return None
    coo = sp.coo_array(X)
    return coo.row.astype(np.int64), coo.col.astype(np.int64)


def flow_mapping(data: Any, partners: int | None = None) -> sp.csc_array | None:
    """The flow's mapping over the live columns (n x m; columns sum to 1 up to the 1e-9
    rounding of the charges, so only close to perfectly private), or None (see
    :func:`seed_pairs`). With every partner offered and a metric d it is optimal."""
    if data.cond.shape[0] != 2:
        return None
    try:
        from ortools.graph.python import min_cost_flow
    except ImportError:
        return None
    m = data.m
    charge = data.cond[1] - data.cond[0]
    pos = np.flatnonzero(charge > CHARGE_TOL)
    neg = np.flatnonzero(charge < -CHARGE_TOL)
    free = np.setdiff1d(np.arange(m), np.concatenate([pos, neg]))
    near_free = nearest_outputs(data)[free]
    if pos.size == 0 or neg.size == 0:
        hub = int(data.dcost.sum(axis=1).argmin())
        rest = np.setdiff1d(np.arange(m), free)
        return sp.csc_array((np.ones(m), (np.concatenate([near_free, np.full(rest.size, hub)]),
                                          np.concatenate([free, rest]))), shape=(data.n, m))
    arcs = _arcs(data, pos, neg, np.abs(charge), partners)
    tails, heads, cost, via_i = arcs
    supply = np.rint(charge * FLOW_SCALE).astype(np.int64)
    supply[free] = 0
    supply[np.argmax(np.abs(supply))] -= int(supply.sum())  # exact balance after rounding
    positive_cost = cost[cost > 0]
    typical = float(np.median(positive_cost)) if positive_cost.size else 1.0
    unit = np.rint(np.minimum(cost / typical * COST_RESOLUTION, COST_CAP)).astype(np.int64)
    cap = np.full(tails.size, int(np.abs(supply).sum()), dtype=np.int64)
    flow = min_cost_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, cap, unit)
    # nodes: live columns 0..m-1, the hub output m
    flow.set_nodes_supplies(np.arange(m + 1), np.concatenate([supply, [0]]))
    if flow.solve() != flow.OPTIMAL:
        return None
    amount = np.asarray(flow.flows(np.arange(tails.size)), dtype=float) / FLOW_SCALE
    used = amount > 0
    # a unit of charge on j -> k (or j -> hub -> k) puts mass 1/|c| of each end on output via_i
    ends = np.concatenate([tails[used], heads[used]])
    outs = np.concatenate([via_i[used], via_i[used]])
    mass = np.concatenate([amount[used], amount[used]])
    real = ends < m
    vals = mass[real] / np.abs(charge[ends[real]])
    return sp.csc_array((np.concatenate([vals, np.ones(free.size)]),
                         (np.concatenate([outs[real], near_free]),
                          np.concatenate([ends[real], free]))), shape=(data.n, m))


def _arcs(data: Any, pos: np.ndarray, neg: np.ndarray, size: np.ndarray,
          partners: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arcs j -> k (j positive, k negative) to each column's ``partners`` (default
    ``SEED_PARTNERS``) cheapest
    partners, at the cost of the cheaper of the two paths through output j's or k's own
    symbol, dcost[i, j] / |c_j| + dcost[i, k] / |c_k| (exact for a metric d, an upper bound
    otherwise); and j -> hub, hub -> k through the constant output of least E[d], which
    keeps the flow feasible. Returns tails, heads, unit costs and the output of each arc."""
    live, m = data.live, data.m
    hub = int(data.dcost.sum(axis=1).argmin())
    t, h, c, via = [], [], [], []
    for src, dst, flip in ((pos, neg, False), (neg, pos, True)):
        k = min(SEED_PARTNERS if partners is None else partners, dst.size)
        step = max(1, BLOCK_BYTES // (8 * 3 * dst.size))
        for lo in range(0, src.size, step):
            s = src[lo: lo + step]
            own_s = data.dcost[live[s], s] / size[s]  # via s's symbol: s pays its own d
            via_s = own_s[:, None] + data.dcost[np.ix_(live[s], dst)] / size[dst][None, :]
            own_d = data.dcost[live[dst], dst] / size[dst]
            via_d = data.dcost[np.ix_(live[dst], s)].T / size[s][:, None] + own_d[None, :]
            best = np.minimum(via_s, via_d)
            if k < dst.size:  # the cheapest paths, and the nearest partners by d
                dist = data.dcost[np.ix_(live[s], dst)] / data.p[dst][None, :]
                top = np.concatenate([np.argpartition(best, k - 1, axis=1)[:, :k],
                                      np.argpartition(dist, k - 1, axis=1)[:, :k]], axis=1)
            else:
                top = np.broadcast_to(np.arange(dst.size), best.shape)
            rows = np.broadcast_to(np.arange(s.size)[:, None], top.shape)
            a, b = s[rows].ravel(), dst[top].ravel()
            out = np.where((via_s[rows, top] <= via_d[rows, top]).ravel(), live[a], live[b])
            t.append(b if flip else a)
            h.append(a if flip else b)
            c.append(best[rows, top].ravel())
            via.append(out)
    t.append(pos)
    h.append(np.full(pos.size, m))
    c.append(data.dcost[hub, pos] / size[pos])
    via.append(np.full(pos.size, hub))
    t.append(np.full(neg.size, m))
    h.append(neg)
    c.append(data.dcost[hub, neg] / size[neg])
    via.append(np.full(neg.size, hub))
    return (np.concatenate(t), np.concatenate(h), np.concatenate(c), np.concatenate(via))
