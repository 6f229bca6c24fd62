"""The greedy agglomerative merge behind ``privacy_funnel`` (one job: choose the clusters).

Makhdoumi, Salamatian, Fawaz, Médard (ITW 2014), section V: merging clusters i and j
lowers I(A; cluster) by (p_i + p_j) JS_π(p(a|i), p(a|j)), π ∝ (p_i, p_j), which equals
φ(i) + φ(j) - φ(i ∪ j) with φ(c) = Σ_a q_c(a) ln(q_c(a) / p_c) (q_c = p(a, c)).

A cluster c is released as its representative r(c) = argmin_i C[c, i], where
C[c, i] = Σ_{j ∈ c} p(b_j) d(b̂_i, b_j) (rows add up when clusters merge), so the
distortion a merge adds is min_i (C[c] + C[c'])_i - min C[c] - min C[c'] >= 0.

Not every pair is priced exactly (that is O(n) per pair, O(n^3) in all): for each
cluster the ``candidates`` pairs with the best ratio under an upper bound on the added
distortion (keep r(c) or r(c'), whichever is cheaper: two look-ups in C), and as many
among the pairs that bound proves to fit the budget left, are priced exactly and pushed
on a heap; a cluster whose heap entries all went stale is priced
again. With ``candidates >= n`` every pair is priced: the plain greedy of the paper.

Two rules choose the pair (``rule``): ``ratio`` (privbench's, the default) the largest
leakage decrease per unit of added distortion; ``paper`` (Makhdoumi et al.) the largest
leakage decrease, as in the paper, among the merges that keep the constraints. Both keep
E[d] <= Δ and, when ``min_entropy_nats`` > 0, the paper's utility constraint
I(B; Y) = H(Y) >= R (Y the cluster, a function of B): a merge of clusters of mass p_i, p_j
lowers H(Y) by (p_i + p_j) h(p_i / (p_i + p_j)).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

#: merges that lower the leakage by less than this (nats) are not worth a distortion
MIN_GAIN_NATS = 1e-14


def neg_entropy(Q: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """φ(c) = Σ_a q_c(a) ln(q_c(a) / p_c) for rows of Q (0 ln 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = Q * np.log(Q / mass[:, None])
    return np.where(Q > 0, terms, 0.0).sum(axis=1)


@dataclass
class FunnelState:
    """Clusters live in the slots of their first member; ``version`` changes on a merge."""

    Q: np.ndarray          # (n, |A|) joint mass of each cluster
    mass: np.ndarray       # (n,) p(cluster)
    C: np.ndarray          # (n, n) C[c, i]: cost of releasing cluster c as b̂_i
    rep: np.ndarray        # (n,) representative of each cluster
    cost: np.ndarray       # (n,) C[c, rep[c]]
    phi: np.ndarray        # (n,) φ(c)
    alive: np.ndarray      # (n,) bool
    label: np.ndarray      # (n,) the cluster of each symbol
    budget: float
    used: float
    candidates: int
    rule: str = "ratio"
    entropy: float = 0.0          # H(clusters), nats
    min_entropy: float = 0.0      # the paper's R, nats (0: no utility constraint)
    version: np.ndarray = field(default=None)  # type: ignore[assignment]
    partners: list[set[int]] = field(default_factory=list)
    heap: list[tuple] = field(default_factory=list)
    merges: int = 0
    gain_nats: float = 0.0

    def __post_init__(self) -> None:
        n = self.mass.shape[0]
        self.version = np.zeros(n, dtype=np.int64)
        self.partners = [set() for _ in range(n)]


def entropy_loss(p_i: np.ndarray | float, p_j: np.ndarray | float) -> np.ndarray:
    """How much H(clusters) (nats) drops when clusters of masses p_i and p_j merge."""
    p_i, p_j = np.asarray(p_i, dtype=float), np.asarray(p_j, dtype=float)
    total = p_i + p_j
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = (np.where(p_i > 0, p_i * np.log(total / p_i), 0.0)
                 + np.where(p_j > 0, p_j * np.log(total / p_j), 0.0))
    return np.where(total > 0, terms, 0.0)


def _fits(s: FunnelState, added: np.ndarray | float, loss: np.ndarray | float) -> np.ndarray:
    """Whether merges adding ``added`` distortion and losing ``loss`` nats of H(Y) keep
    both constraints."""
    return (s.used + np.asarray(added) <= s.budget) & (
        (s.min_entropy <= 0) | (s.entropy - np.asarray(loss) >= s.min_entropy * (1 - 1e-12)))


def initial_state(joint: np.ndarray, cost_rows: np.ndarray, p_b: np.ndarray, delta: float,
                  candidates: int, rule: str = "ratio", min_entropy: float = 0.0) -> FunnelState:
    """Singleton clusters; ``cost_rows[j, i] = p(b_j) d(b̂_i, b_j)``; ``rule`` and
    ``min_entropy`` (nats) as in the module docstring."""
    Q = np.array(joint.T, dtype=float, order="C")  # a copy: never a view of the problem
    n = len(p_b)
    rep = np.where(p_b > 0, np.argmin(cost_rows, axis=1), np.arange(n))  # massless: itself
    cost = cost_rows[np.arange(n), rep]
    positive = p_b[p_b > 0]
    return FunnelState(Q=Q, mass=p_b.copy(), C=cost_rows, rep=rep, cost=cost,
                       phi=neg_entropy(Q, np.maximum(p_b, 1e-300)), alive=p_b > 0,
                       label=np.arange(n), budget=delta, used=float(cost.sum()),
                       candidates=candidates, rule=rule,
                       entropy=float(-(positive * np.log(positive)).sum()),
                       min_entropy=float(min_entropy))


def price(s: FunnelState, c: int) -> None:
    """Push cluster c's best candidate pairs (exactly priced, within the budget left)."""
    others = np.flatnonzero(s.alive)
    others = others[others != c]
    if others.size == 0:
        return
    mass = s.mass[c] + s.mass[others]
    gain = s.phi[c] + s.phi[others] - neg_entropy(s.Q[c][None, :] + s.Q[others], mass)
    keep = gain > MIN_GAIN_NATS
    others, gain = others[keep], gain[keep]
    if others.size == 0:
        return
    bound = np.minimum(s.C[others, s.rep[c]] - s.cost[others], s.C[c, s.rep[others]] - s.cost[c])
    bound = np.maximum(bound, 0.0)
    with np.errstate(divide="ignore"):
        ratio = np.where(bound > 0, gain / np.maximum(bound, 1e-300), np.inf)
    loss = entropy_loss(s.mass[c], s.mass[others])
    if others.size > s.candidates:
        # the best ratios (rule=paper: gains), and the best among pairs sure to fit
        order = np.lexsort((-gain, -ratio)) if s.rule == "ratio" else np.argsort(-gain, kind="stable")
        sure = order[_fits(s, bound[order], loss[order])]
        order = np.unique(np.concatenate([order[: s.candidates], sure[: s.candidates]]))
        others, gain, loss = others[order], gain[order], loss[order]
    merged = s.C[c][None, :] + s.C[others]
    reps = np.argmin(merged, axis=1)
    added = merged[np.arange(others.size), reps] - s.cost[c] - s.cost[others]
    added = np.maximum(added, 0.0)
    for o, g, d, r, h in zip(others.tolist(), gain.tolist(), added.tolist(), reps.tolist(),
                             loss.tolist(), strict=True):
        if not _fits(s, d, h):  # the very test run_funnel applies: no push-drop cycle
            continue
        score = (g / d if d > 0 else np.inf) if s.rule == "ratio" else g
        a, b = (c, o) if c < o else (o, c)
        heapq.heappush(s.heap, (-score, -g, a, b, int(s.version[a]), int(s.version[b]), d, g, r, h))
        s.partners[a].add(b)
        s.partners[b].add(a)


def _drop_pair(s: FunnelState, a: int, b: int) -> None:
    """Forget a pair that no longer fits; price again a cluster left without pairs."""
    s.partners[a].discard(b)
    s.partners[b].discard(a)
    for c in (a, b):
        if s.alive[c] and not s.partners[c]:
            price(s, c)


def _merge(s: FunnelState, a: int, b: int, added: float, gain: float, rep: int,
           loss: float) -> None:
    """Fold cluster b into a (a keeps its slot with a new version)."""
    s.Q[a] += s.Q[b]
    s.mass[a] += s.mass[b]
    s.C[a] += s.C[b]
    s.rep[a] = rep
    s.cost[a] = s.C[a, rep]
    s.phi[a] = neg_entropy(s.Q[a][None, :], s.mass[a:a + 1])[0]
    s.alive[b] = False
    s.label[s.label == b] = a
    s.version[a] += 1
    s.used += added
    s.entropy -= loss
    s.gain_nats += gain
    s.merges += 1
    orphans = (s.partners[a] | s.partners[b]) - {a, b}
    s.partners[a], s.partners[b] = set(), set()
    for o in orphans:
        s.partners[o].discard(a)
        s.partners[o].discard(b)
    price(s, a)
    for o in sorted(orphans):
        if s.alive[o] and not s.partners[o]:
            price(s, o)


def run_funnel(s: FunnelState) -> FunnelState:
    """Merge the best pair (by ``s.rule``) that fits the constraints until none does."""
    for c in np.flatnonzero(s.alive).tolist():
        price(s, c)
    while s.heap:
        _, _, a, b, va, vb, added, gain, rep, loss = heapq.heappop(s.heap)
        if not (s.alive[a] and s.alive[b]) or s.version[a] != va or s.version[b] != vb:
            continue  # stale: one side has merged since
        if not _fits(s, added, loss):
            _drop_pair(s, a, b)
            continue
        _merge(s, a, b, added, gain, rep, loss)
    return s
