"""A start for ``auto``'s dual mode on profiles (Hamming features) at large budgets:
one small level of clustered profiles, an exact restriction of the fine problem.

The K heaviest profiles are the centres (the best constant output among them); every
profile joins its nearest centre in Hamming distance (ties: the centre whose posterior
p(a | b) is closest, then the heavier one). The coarse problem has one input per cluster
(the members' joint summed) and one output per centre, and its distortion is the
cluster's *expected* distortion from the centre,

    d_c(I, J) = Σ_{j in J} p_j d(c_I, j) / p_J,

so a coarse mapping X_c, applied to every member of J alike with the outputs at the
centres (:func:`prolong_mapping`), is a fine mapping with the same output joint (so the
same I(A; B̂)) and the same E[d]: the coarse solve is a feasible fine point with
I = I_c >= I*. Near I* = 0 (census with every profile from ~0.3 d_const) I_c is below
the tolerance and one exact pricing certifies it (I* >= 0 is free); elsewhere the caller
runs the plain dual mode (:func:`.solve.solve_sppm`).

K is the smallest of :data:`LADDER` whose centres leave a spread (every profile at its
nearest centre) of at most :data:`SPREAD` Δ (:func:`clusters_for`): within-cluster
distortion is paid by every mapping of the restriction, so the spread must leave most of
the budget for moving mass. Below ~0.25 d_const on census no K up to 3,000 does, and the
start is skipped.

Tried and left out: prolonging the coarse *dual* point (each fine output its cluster's
logits) and seeding V with cluster members, for the fine dual rounds: census at 0.2
d_const, K = 3,000, the warm rounds ran 252 s before the fallback (docs/studies/
sppm-frontier.md, round five).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from privbench import FeatureDistortion, MatrixDistortion, PrivacyProblem
from privbench.protocol.feasibility import row_budget_costs

#: the start is on; off, ``auto`` on profiles is the plain dual mode (the tests turn it off
#: to check that nothing else clusters; ``coarse_start=False`` is the user's switch)
START = True
#: cluster counts tried, smallest first: the start takes the first whose spread (the
#: E[d] of every profile sent to its nearest centre) is at most SPREAD x Δ
LADDER = (250, 500, 1000, 1500, 2000)
#: census with every profile: K = 1,500 at 0.3 d_const (spread 0.30 Δ) gave I_c = 2e-4
#: bits, K = 1,000 (0.38 Δ) 3.4e-3 bits; K = 500 at 0.6 (0.28 Δ) 1e-5 bits
SPREAD = 1 / 3
#: the coarse level's tolerance, as a share of the run's (its mapping certifies the fine
#: run when its I is below the run's tol; the share leaves room for the fine rounding).
#: Its bound is ~0 throughout (I* ~ 0 where K fits), so the share is the I its rounds
#: must reach: on census with every profile at 0.3 d_const 0.5 cost one more round (0.38 s
#: of the coarse level's 1.5 s, I 7.3e-4 -> 3.6e-4 bits) that 0.8 does without
TOL_SHARE = 0.8
#: Frank-Wolfe warm-up steps of the coarse level's dual mode (the fine dual mode's
#: ``warmup`` is 100): with TOL_SHARE 0.8 the start took 1.3 s instead of 2.0 at 0.3
#: d_const, 0.53-0.58 instead of 0.72 at 0.4, 0.26-0.34 instead of 0.38-0.42 at 0.6; 10
#: steps were slower (2.2 s at 0.3) and 20-50 alike (docs/studies/sppm-frontier.md,
#: 'The clustered start's coarse level')
COARSE_WARMUP = 30
#: profiles the start applies from (below, the plain dual mode takes ~0.5 s: census top
#: 2,000)
CLUSTER_FROM = 4096
#: input columns per distance block (K x this entries)
BLOCK = 2048


@dataclass
class Clusters:
    """Centres (fine symbols, one per cluster) and each fine symbol's cluster."""

    centres: np.ndarray
    label: np.ndarray
    #: fine symbols by cluster, each cluster's heaviest first
    order: np.ndarray

    def members(self) -> tuple[np.ndarray, np.ndarray]:
        """(fine symbols by cluster, the heaviest first; where each cluster starts in it,
        K + 1 entries)."""
        first = np.searchsorted(self.label[self.order], np.arange(self.centres.size + 1))
        return self.order, first


def applies(problem: PrivacyProblem) -> bool:
    """Whether the dual mode may start from clustered profiles: Hamming features with
    more than :data:`CLUSTER_FROM` symbols."""
    d = problem.distortion
    return isinstance(d, FeatureDistortion) and d.metric == "hamming" \
        and problem.n > CLUSTER_FROM


def cluster(problem: PrivacyProblem, k: int) -> Clusters:
    """The K heaviest profiles (and the best constant output) as centres; every profile
    to its nearest centre (ties: closest posterior, then the heavier centre)."""
    p_b = problem.p_b
    heavy = np.argsort(-p_b, kind="stable")[:k]
    best = int(np.argmin(row_budget_costs(problem)))
    centres = np.sort(np.unique(np.r_[heavy, best]))
    post = problem.joint / np.where(p_b > 0, p_b, 1.0)[None, :]
    rank = np.argsort(np.argsort(-p_b[centres], kind="stable")).astype(np.float64)
    points = np.ascontiguousarray(problem.distortion.points)
    label = _nearest(points[centres], points, np.ascontiguousarray(post[:, centres].T),
                     np.ascontiguousarray(post.T), rank)
    label[centres] = np.arange(centres.size)  # a centre is its own cluster's
    return Clusters(centres, label, np.lexsort((-p_b, label)))


@numba.njit(cache=True)
def _nearest(centres, points, post_c, post, rank):  # pragma: no cover - compiled
    """Each point's centre: least Hamming distance, then least L1 distance of posteriors,
    then least ``rank`` (the heavier centre)."""
    n, k = points.shape[0], centres.shape[0]
    out = np.empty(n, dtype=np.int64)
    for j in range(n):
        best_d, best_t, best_r, arg = np.inf, np.inf, np.inf, 0
        for c in range(k):
            d = 0.0
            for f in range(points.shape[1]):
                d += centres[c, f] != points[j, f]
            if d > best_d:
                continue
            t = 0.0
            for a in range(post.shape[1]):
                t += abs(post_c[c, a] - post[j, a])
            if d < best_d or t < best_t or (t == best_t and rank[c] < best_r):
                best_d, best_t, best_r, arg = d, t, rank[c], c
        out[j] = arg
    return out


@numba.njit(cache=True)
def _expected(centres, points, p_b, label, k):  # pragma: no cover - compiled
    """D[I, J] = Σ_{j in J} p_j d(centre I, j) (Hamming), not yet divided by p_J."""
    D = np.zeros((centres.shape[0], k))
    for j in range(points.shape[0]):
        J = label[j]
        for c in range(centres.shape[0]):
            d = 0.0
            for f in range(points.shape[1]):
                d += centres[c, f] != points[j, f]
            D[c, J] += p_b[j] * d
    return D


def coarsen(problem: PrivacyProblem, groups: Clusters) -> PrivacyProblem:
    """The coarse problem: summed joint, the expected distortion from each centre."""
    k = groups.centres.size
    joint = np.zeros((problem.joint.shape[0], k))
    for a in range(joint.shape[0]):
        joint[a] = np.bincount(groups.label, weights=problem.joint[a], minlength=k)
    mass = joint.sum(axis=0)
    points = np.ascontiguousarray(problem.distortion.points)
    D = _expected(points[groups.centres], points, problem.p_b, groups.label, k)
    D /= np.where(mass > 0, mass, 1.0)[None, :]
    return PrivacyProblem.from_arrays(joint, MatrixDistortion(D), name=f"{problem.name}|clusters")


@dataclass
class Prolonged:
    """The coarse solve's mapping on the fine problem, and the coarse level's statistics."""

    rows: np.ndarray
    cols: np.ndarray
    x: np.ndarray
    levels: list[dict]


def clusters_for(problem: PrivacyProblem, delta: float) -> int | None:
    """The smallest count of :data:`LADDER` whose heaviest profiles as centres leave a
    spread Σ_j p_j min_c d(c, j) of at most :data:`SPREAD` Δ; None if none does (small
    budgets: census with every profile below ~0.2 d_const).

    The spread bounds the coarse problem's least E[d] (each cluster's inputs to its own
    centre), so the coarse problem is feasible, and the budget left for moving mass is at
    least (1 - SPREAD) Δ."""
    n, p_b = problem.n, problem.p_b
    order = np.argsort(-p_b, kind="stable")
    near = np.full(n, np.inf)
    done = 0
    for k in LADDER:
        k = min(k, n)
        fresh = order[done:k]
        for s in range(0, n, BLOCK):
            cols = np.arange(s, min(n, s + BLOCK))
            if fresh.size:
                near[cols] = np.minimum(near[cols],
                                        problem.distortion.block(fresh, cols).min(axis=0))
        done = k
        if float(p_b @ near) <= SPREAD * delta:
            return k
        if k == n:
            break
    return None


def coarse_start(problem: PrivacyProblem, delta: float, solve: Callable,
                 k: int | None = None) -> Prolonged | None:
    """Cluster (``k`` clusters, by default :func:`clusters_for`), solve the coarse problem
    at the same Δ (``solve(coarse, Δ)`` returns a :class:`.continuation.CoarseSolve` or
    None), prolong; None when no count fits the budget or the coarse solve gives nothing
    (a constant mapping is optimal there)."""
    k = clusters_for(problem, delta) if k is None else k
    if k is None:
        return None
    groups = cluster(problem, k)
    out = solve(coarsen(problem, groups), delta)
    if out is None:
        return None
    rows, cols, x = prolong_mapping(groups, out.rows, out.cols, out.x)
    return Prolonged(rows, cols, x, out.levels)


def prolong_mapping(groups: Clusters, rows_c: np.ndarray, cols_c: np.ndarray,
                    x_c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fine pairs (c_I, j) with mass x_c(I, J) for every member j of J: each fine column
    sums to its coarse column's sum, the output joint and E[d] are the coarse ones."""
    keep = x_c > 0
    I, J, x = rows_c[keep], cols_c[keep], x_c[keep]
    order, first = groups.members()
    size = first[J + 1] - first[J]
    pair = np.repeat(np.arange(I.size), size)
    offset = np.arange(pair.size) - np.repeat(np.cumsum(size) - size, size)
    cols = order[first[J][pair] + offset]
    return groups.centres[I][pair], cols, x[pair]
