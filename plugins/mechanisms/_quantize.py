"""Quantisation of a public alphabet for the quantized mapping (Salamatian et al., Alg. 1).

Representatives are symbols of the alphabet itself (medoids), so the composed mapping
stays an n x n mapping on the problem's alphabet and d(b, ĉ) is the problem's own
distortion. Two methods, both using only ``distortion.block`` (K x n at a time):

* :func:`k_center` - greedy farthest-first (Gonzalez 1985), a 2-approximation of the
  smallest radius r = max_b min_c d(b, c), the quantity Theorem 1's bound depends on;
* :func:`k_means_pp` - seeded k-means++ starts (D² sampling weighted by p(b));
* :func:`k_medoids` - Lloyd-style alternation weighted by p(b): assign each symbol to
  its nearest representative, then move each representative to the member with the
  smallest Σ p(b) d(m, b) (k-means/k-modes restricted to alphabet points, with the
  data set's own distortion: Hamming for binary profiles, l2 for star ratings).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privbench import Distortion

#: members considered as the new medoid of a cluster (the most probable ones)
MEDOID_CANDIDATES = 256


@dataclass(frozen=True)
class Quantization:
    """ψ: symbol j -> cluster ``labels[j]`` represented by symbol ``centers[labels[j]]``."""

    centers: np.ndarray  # (K,) symbol indices
    labels: np.ndarray  # (n,) cluster of every symbol
    dist_to_center: np.ndarray  # (n,) d(ψ(b), b)

    @property
    def radius(self) -> float:
        """r = max_b d(ψ(b), b)."""
        return float(self.dist_to_center.max()) if self.dist_to_center.size else 0.0

    def mean_distortion(self, p_b: np.ndarray) -> float:
        """E[d(ψ(B), B)], the distortion of quantisation alone."""
        return float(np.sum(p_b * self.dist_to_center))


def assign(distortion: Distortion, centers: np.ndarray) -> Quantization:
    """Map every symbol to its nearest center (ties: the first center)."""
    D = distortion.block(centers, np.arange(distortion.n))  # d(ĉ = center, b)
    labels = np.argmin(D, axis=0)
    # a center always represents itself, even when another center is at distance 0
    labels[centers] = np.arange(centers.size)
    dist = D[labels, np.arange(distortion.n)]
    return Quantization(centers=np.asarray(centers), labels=labels, dist_to_center=dist)


def k_center(distortion: Distortion, k: int, p_b: np.ndarray) -> Quantization:
    """Greedy farthest-first traversal, started at the most probable symbol."""
    n = distortion.n
    k = min(k, n)
    centers = [int(np.argmax(p_b))]
    nearest = distortion.block(np.array(centers), np.arange(n))[0].copy()
    while len(centers) < k:
        far = int(np.argmax(nearest))
        if nearest[far] <= 0:
            break  # every symbol already sits on a center
        centers.append(far)
        nearest = np.minimum(nearest, distortion.block(np.array([far]), np.arange(n))[0])
    return assign(distortion, np.array(centers))


def k_means_pp(distortion: Distortion, k: int, p_b: np.ndarray,
               rng: np.random.Generator) -> Quantization:
    """Weighted k-means++ seeding (Arthur & Vassilvitskii 2007) with the problem's d.

    The first center is drawn ∝ p(b), each next one ∝ p(b) D(b)², D(b) the distance to
    the nearest center so far; unlike farthest-first it is not drawn to rare outliers.
    """
    n = distortion.n
    k = min(k, n)
    cols = np.arange(n)
    centers = [int(rng.choice(n, p=p_b / p_b.sum()))]
    nearest = distortion.block(np.array(centers), cols)[0].copy()
    while len(centers) < k:
        weight = p_b * nearest**2
        total = weight.sum()
        if total <= 0:
            break  # every symbol with mass already sits on a center
        nxt = int(rng.choice(n, p=weight / total))
        centers.append(nxt)
        nearest = np.minimum(nearest, distortion.block(np.array([nxt]), cols)[0])
    return assign(distortion, np.array(centers))


def k_medoids(distortion: Distortion, k: int, p_b: np.ndarray, *, max_iter: int = 50,
              init: Quantization | None = None) -> Quantization:
    """Weighted Voronoi iteration from ``init`` (default: :func:`k_center`).

    Stops when the centers stop changing; the expected quantisation distortion
    Σ p(b) d(ψ(b), b) never increases from one iteration to the next.
    """
    q = init or k_center(distortion, k, p_b)
    for _ in range(max_iter):
        new_centers = q.centers.copy()
        for c in range(q.centers.size):
            members = np.flatnonzero(q.labels == c)
            if members.size <= 1:
                continue
            cand = members[np.argsort(-p_b[members], kind="stable")[:MEDOID_CANDIDATES]]
            if q.centers[c] not in cand:
                cand = np.append(cand, q.centers[c])
            cost = distortion.block(cand, members) @ p_b[members]
            best = cand[int(np.argmin(cost))]
            current = float(distortion.block(np.array([q.centers[c]]), members)[0] @ p_b[members])
            if cost.min() < current - 1e-12 * max(1.0, abs(current)):
                new_centers[c] = best
        if np.array_equal(new_centers, q.centers) \
                or len(set(new_centers.tolist())) < new_centers.size:
            break
        nq = assign(distortion, new_centers)
        if nq.mean_distortion(p_b) > q.mean_distortion(p_b) - 1e-15:
            break
        q = nq
    return q


def aggregate(joint: np.ndarray, q: Quantization) -> np.ndarray:
    """Eq. (3): q(a, c) = Σ_{b ~ c} p(a, b), shape (|A|, K)."""
    out = np.zeros((joint.shape[0], q.centers.size))
    np.add.at(out.T, q.labels, joint.T)
    return out
