"""Coarse-to-fine continuation on a line (1-D feature distortions): the dual mode and
Frank-Wolfe start from the solve of a coarser line.

At a fixed relative budget Δ / d_const the line problem converges as n grows (synthetic,
0.3 d_const: I* = 0.16576 bits at m = 8, 0.16572 at m = 10), so the dual point of the
problem with groups of :data:`FACTOR` neighbouring symbols merged, solved first (itself by
continuation while it is large), is nearly optimal on the fine line once prolonged:

* the decoder's logits are interpolated over the coordinate (constant beyond the ends),
  so no output starts pure (a pure decoder at an output that one private value alone
  reaches prices every input of the other value at about -29 nats: the cold dual mode's
  working set grew to ~n²/2 pairs from there);
* ν is kept: merged symbols sit at their group's mean coordinate, so distortions, and the
  price of a unit of distortion, keep their scale;
* V is seeded with each fine input's neighbourhood of its group's coarse support (the
  members of every coarse output it uses, widened by :data:`MARGIN` outputs on each side).

Frank-Wolfe (small budgets, where the dual mode stalls on nearly pure decoders) starts
instead from the coarse *mapping*, prolonged by shifts (:func:`prolong_mapping`): the
k-th member of coarse input J goes to the k-th member of coarse output I with J's mass
on I, which on evenly spaced symbols costs exactly the coarse distortion, and keeps each
output's posterior near its group's. Synthetic m = 14 at 1e-3 d_const: 27 fine
iterations from the m = 12 level instead of over 20,000 from the identity.

The result is only a starting point: the fine run's certificate is, as always, an exact
price over all n² pairs, and its primal points are feasible on the fine problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privbench import FeatureDistortion, PrivacyProblem

#: symbols merged per coarse symbol (one level: n -> n / FACTOR)
FACTOR = 4
#: the dual mode on a line starts from a coarse solve above this n (below it the cold
#: dual mode is fast: m = 10, 0.1-0.6 d_const, a few seconds on an idle core)
COARSE_FROM = 256
#: fine outputs added on each side of a coarse output's members when seeding V
MARGIN = 2
#: coarse pairs with at least this mass seed V
SEED_MASS = 1e-4
#: the coarse solve's tolerance (bits): a warm start needs no sharper certificate
COARSE_TOL = 1e-3


@dataclass
class WarmStart:
    """A dual point and pairs for the fine dual mode (from :func:`coarse_start`)."""

    #: decoder logits (live private values but the last, n) as the dual mode keeps them
    theta: np.ndarray
    nu: float
    rows: np.ndarray
    cols: np.ndarray
    #: the coarse level's own statistics (n, I, gap, seconds), for the run's stats
    levels: list[dict]


@dataclass
class CoarseSolve:
    """What :func:`coarse_start` needs back from a solve of the coarse problem."""

    theta: np.ndarray
    nu: float
    rows: np.ndarray
    cols: np.ndarray
    x: np.ndarray
    levels: list[dict]


def applies(problem: PrivacyProblem) -> bool:
    """Whether the dual mode starts from a coarse solve: a line (1-D points, a distance
    metric, not Hamming's indicator) with more than :data:`COARSE_FROM` symbols."""
    d = problem.distortion
    points = getattr(d, "points", None)
    return (isinstance(d, FeatureDistortion) and points is not None and points.ndim == 2
            and points.shape[1] == 1 and d.metric in ("sq_l2", "l2", "l1")
            and problem.n > COARSE_FROM)


def coarsen(problem: PrivacyProblem) -> tuple[PrivacyProblem, np.ndarray, np.ndarray]:
    """(coarse problem, fine symbols in coordinate order, group of each fine symbol).

    Groups are :data:`FACTOR` consecutive symbols in coordinate order; a group's joint is
    the sum of its members', its coordinate their p_b-weighted mean (plain mean if p_b is
    0 there), so the coarse coordinates are sorted too."""
    x = problem.distortion.points[:, 0]
    order = np.argsort(x, kind="stable")
    group = np.empty(problem.n, dtype=np.int64)
    group[order] = np.arange(problem.n) // FACTOR
    nc = int(group.max()) + 1
    joint = np.zeros((problem.joint.shape[0], nc))
    np.add.at(joint.T, group, problem.joint.T)
    w = np.bincount(group, weights=problem.p_b, minlength=nc)
    wx = np.bincount(group, weights=problem.p_b * x, minlength=nc)
    plain = np.bincount(group, weights=x, minlength=nc) / np.bincount(group, minlength=nc)
    coord = np.where(w > 0, wx / np.where(w > 0, w, 1.0), plain)
    coarse = PrivacyProblem.from_arrays(
        joint, FeatureDistortion(coord[:, None], problem.distortion.metric),
        name=f"{problem.name}|coarse")
    return coarse, order, group


def coarse_start(problem: PrivacyProblem, delta: float,
                 solve: Callable[[PrivacyProblem, float], CoarseSolve | None]) -> WarmStart | None:
    """The prolonged dual point and seed pairs of the coarse problem's solve (``solve``,
    the dual mode on it, recursively); None when the coarse solve gives no dual point."""
    coarse, order, group = coarsen(problem)
    out = solve(coarse, delta)
    if out is None:
        return None
    x_fine = problem.distortion.points[:, 0]
    x_coarse = coarse.distortion.points[:, 0]
    theta = np.empty((out.theta.shape[0], problem.n))
    for a in range(out.theta.shape[0]):
        theta[a] = np.interp(x_fine, x_coarse, out.theta[a])
    rows, cols = seed_pairs(order, group, out.rows, out.cols, out.x, problem.n)
    return WarmStart(theta, out.nu, rows, cols, out.levels)


def coarse_mapping(problem: PrivacyProblem, delta: float,
                   solve: Callable[[PrivacyProblem, float], CoarseSolve | None]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]] | None:
    """(rows, cols, x, the coarse levels' statistics): the coarse problem's mapping
    (``solve``, Frank-Wolfe on it, recursively) prolonged to ``problem``
    (:func:`prolong_mapping`); None when the coarse solve gives none. Not yet checked
    against the fine budget (the caller mixes it into the budget)."""
    coarse, order, group = coarsen(problem)
    out = solve(coarse, delta)
    if out is None:
        return None
    rows, cols, x = prolong_mapping(order, group, out.rows, out.cols, out.x, problem.n)
    return rows, cols, x, out.levels


def prolong_mapping(order: np.ndarray, group: np.ndarray, rows_c: np.ndarray,
                    cols_c: np.ndarray, x_c: np.ndarray, n: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fine pairs by shifts: for each coarse pair (I, J) with mass x > 0, the k-th member
    of J (coordinate order) goes to the k-th member of I (its last if I has fewer) with
    mass x. Each fine column sums to its coarse column's sum (one for a mapping)."""
    keep = x_c > 0
    I, J, x = rows_c[keep], cols_c[keep], x_c[keep]
    first = np.searchsorted(group[order], np.arange(int(group.max()) + 2))
    size = np.diff(first)
    k = np.arange(FACTOR)
    ok = k[None, :] < size[J][:, None]  # (pairs, FACTOR): J's members
    out_rank = first[I][:, None] + np.minimum(k[None, :], size[I][:, None] - 1)
    in_rank = first[J][:, None] + k[None, :]
    rows = order[out_rank[ok]]
    cols = order[in_rank[ok]]
    vals = np.broadcast_to(x[:, None], ok.shape)[ok]
    keys, inverse = np.unique(rows.astype(np.int64) * n + cols, return_inverse=True)
    return keys // n, keys % n, np.bincount(inverse, weights=vals, minlength=keys.size)


def seed_pairs(order: np.ndarray, group: np.ndarray, rows_c: np.ndarray, cols_c: np.ndarray,
               x_c: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Fine pairs (i, j): j in coarse input J's group, i within :data:`MARGIN` ranks of
    coarse output I's group, for each coarse pair (I, J) carrying mass >= SEED_MASS."""
    keep = x_c >= SEED_MASS
    I, J = rows_c[keep], cols_c[keep]
    # fine members of each group in coordinate order: ranks FACTOR g ... FACTOR g + size - 1
    first = np.searchsorted(group[order], np.arange(int(group.max()) + 2))
    out_rank = np.arange(-MARGIN, FACTOR + MARGIN)
    ranks = first[I][:, None] + out_rank[None, :]  # (pairs, outputs per pair)
    ranks = np.clip(ranks, 0, n - 1)
    members = np.arange(FACTOR)
    inputs = first[J][:, None] + members[None, :]
    in_ok = inputs < first[J + 1][:, None]
    fine_out = order[ranks]  # (p, F + 2M)
    fine_in = np.where(in_ok, order[np.minimum(inputs, n - 1)], -1)  # (p, F)
    r = np.broadcast_to(fine_out[:, None, :], (I.size, FACTOR, out_rank.size))
    c = np.broadcast_to(fine_in[:, :, None], r.shape)
    ok = c >= 0
    keys = np.unique(r[ok].astype(np.int64) * n + c[ok])
    return keys // n, keys % n
