"""Privacy notions of a mapping beyond I(A; B̂), exact from the joint of A and B̂.

Each notion has two entry points:

* ``name(problem, mapping)`` - the mapping X (an (n, n) array or scipy sparse matrix,
  X[i, j] = p(b̂_i | b_j), checked like every ``pb.metrics`` function) applied to the
  problem's prior;
* ``name_of_joint(Q)`` - from Q[a, i] = p(a, b̂_i) alone (counts or a pmf, shape
  (|A|, n')), for callers that already hold the joint (bootstrap resamples of users, a
  different output alphabet).

Write W(b̂ | a) = p(a, b̂) / p(a) for the channel from A to B̂ (W = P(B|A)·X). Private
values with p(a) = 0 have no channel row and output symbols with p(b̂) = 0 are never
seen; every notion ignores both, so they change no value. Cost: O(nnz(X) |A|) for the
joint plus O(|A| n) (guessing entropy: O(|A| log |A| n)); nothing n x n is built.

An infinite value (``lip_epsilon``, ``ldp_epsilon_private``: some output that one private
value can produce and another cannot) is ``float('inf')``, never NaN.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from privbench.protocol.errors import ValidationError
from privbench.protocol.joint import mutual_information_of_joint
from privbench.protocol.joint import scaled_joint as _scaled
from privbench.protocol.mapping import validate_mapping

if TYPE_CHECKING:
    from privbench.protocol.problem import PrivacyProblem

__all__ = [
    "JOINT_NOTIONS",
    "guessing_entropy",
    "guessing_entropy_of_joint",
    "ldp_epsilon_private",
    "ldp_epsilon_private_of_joint",
    "lip_epsilon",
    "lip_epsilon_of_joint",
    "maximal_leakage",
    "maximal_leakage_of_joint",
    "min_entropy_leakage",
    "min_entropy_leakage_of_joint",
    "mutual_information_of_joint",
    "notions_of_joint",
    "sibson_mi",
    "sibson_mi_of_joint",
    "t_closeness",
    "t_closeness_of_joint",
    "total_variation",
    "total_variation_of_joint",
]


def _joint(problem: PrivacyProblem, mapping: Any) -> np.ndarray:
    """Q[a, i] = p(a, b̂_i) = Σ_j X[i, j] p(a, b_j) for a checked mapping."""
    X = validate_mapping(mapping, problem.n)
    return np.asarray((X @ problem.joint.T).T)


def _support(Q: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, p_a, q) normalised, restricted to p(a) > 0 and p(b̂) > 0.

    :raises ValidationError: when Q is not a non-negative 2-D array with positive mass.
    """
    Q = _scaled(Q)
    if Q is None:
        raise ValidationError("joint has zero total mass; expected a pmf or non-negative counts")
    Q = Q[Q.sum(axis=1) > 0][:, Q.sum(axis=0) > 0]
    return Q, Q.sum(axis=1), Q.sum(axis=0)


def _channel(Q: np.ndarray, p_a: np.ndarray) -> np.ndarray:
    """W[a, i] = p(b̂_i | a)."""
    return Q / p_a[:, None]


def maximal_leakage_of_joint(Q: Any) -> float:
    """log2 Σ_b̂ max_a W(b̂ | a), in bits (Issa, Wagner, Kamath 2020)."""
    Q, p_a, _ = _support(Q)
    value = math.log2(float(_channel(Q, p_a).max(axis=0).sum()))
    return max(value, 0.0)


def min_entropy_leakage_of_joint(Q: Any) -> float:
    """log2 of posterior over prior Bayes vulnerability of A: log2 Σ_b̂ max_a p(a, b̂) / max_a p(a)."""
    Q, p_a, _ = _support(Q)
    value = math.log2(float(Q.max(axis=0).sum()) / float(p_a.max()))
    return max(value, 0.0)


def _check_alpha(alpha: float) -> float:
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise ValidationError(f"alpha must be a number > 0 (or inf); got {alpha!r}") from None
    if not alpha > 0:  # also catches NaN
        raise ValidationError(f"alpha must be > 0 (1 gives I(A; B̂), inf maximal leakage); got {alpha!r}")
    return alpha


def sibson_mi_of_joint(Q: Any, alpha: float = 2.0) -> float:
    """Sibson's α-information in bits: α/(α-1) log2 Σ_b̂ (Σ_a p(a) W(b̂|a)^α)^(1/α).

    α = 1 gives I(A; B̂) (the limit), α = inf maximal leakage; α > 0 otherwise
    (Sibson 1969; Verdú 2015). Each column is scaled by its largest W so that large α
    neither overflows nor underflows.

    :raises ValidationError: when ``alpha`` is not > 0.
    """
    alpha = _check_alpha(alpha)
    Q, p_a, _ = _support(Q)
    if alpha == 1.0:
        return mutual_information_of_joint(Q)
    W = _channel(Q, p_a)
    if math.isinf(alpha):
        return max(math.log2(float(W.max(axis=0).sum())), 0.0)
    top = W.max(axis=0)
    inner = (p_a[:, None] * (W / top) ** alpha).sum(axis=0)
    total = float(np.sum(top * inner ** (1.0 / alpha)))
    return max(alpha / (alpha - 1.0) * math.log2(total), 0.0)


def lip_epsilon_of_joint(Q: Any) -> float:
    """max over a, b̂ with p(b̂) > 0 of |ln W(b̂|a) / p(b̂)|, in nats (inf where W = 0)."""
    Q, p_a, q = _support(Q)
    W = _channel(Q, p_a)
    if (W <= 0).any():
        return math.inf
    return float(np.max(np.abs(np.log(W / q[None, :]))))


def ldp_epsilon_private_of_joint(Q: Any) -> float:
    """max over b̂, a, a' of ln W(b̂|a) / W(b̂|a'), in nats: local DP with respect to A.

    Outputs no private value produces (0/0) are ignored; an output that some private
    value produces and another cannot gives inf.
    """
    Q, p_a, _ = _support(Q)
    W = _channel(Q, p_a)
    low = W.min(axis=0)
    if (low <= 0).any():
        return math.inf
    return max(float(np.max(np.log(W.max(axis=0) / low))), 0.0)


def total_variation_of_joint(Q: Any) -> float:
    """½ Σ_{a, b̂} |p(a, b̂) − p(a) p(b̂)|: the distance of the joint from independence."""
    Q, p_a, q = _support(Q)
    return 0.5 * float(np.abs(Q - p_a[:, None] * q[None, :]).sum())


def t_closeness_of_joint(Q: Any) -> float:
    """max over b̂ with p(b̂) > 0 of ½ Σ_a |p(a|b̂) − p(a)|.

    Li, Li, Venkatasubramanian's t with the equal ground distance, for which the earth
    mover's distance is the total variation distance; every output b̂ is one class.
    """
    Q, p_a, q = _support(Q)
    return 0.5 * float(np.abs(Q / q[None, :] - p_a[:, None]).sum(axis=0).max())


def guessing_entropy_of_joint(Q: Any) -> float:
    """Σ_b̂ Σ_k k p(a_(k), b̂): the expected number of guesses of A by an adversary who
    sees B̂ and guesses in order of decreasing posterior (Massey 1994); at least 1."""
    Q, _, _ = _support(Q)
    ranked = -np.sort(-Q, axis=0)
    ranks = np.arange(1, Q.shape[0] + 1, dtype=float)
    return float(ranks @ ranked.sum(axis=1))


def maximal_leakage(problem: PrivacyProblem, mapping: Any) -> float:
    """Maximal leakage from A to B̂ in bits (see :func:`maximal_leakage_of_joint`)."""
    return maximal_leakage_of_joint(_joint(problem, mapping))


def min_entropy_leakage(problem: PrivacyProblem, mapping: Any) -> float:
    """Min-entropy leakage of A through B̂ in bits (Smith 2009)."""
    return min_entropy_leakage_of_joint(_joint(problem, mapping))


def sibson_mi(problem: PrivacyProblem, mapping: Any, alpha: float = 2.0) -> float:
    """Sibson's α-information I_α(A; B̂) in bits (see :func:`sibson_mi_of_joint`)."""
    _check_alpha(alpha)
    return sibson_mi_of_joint(_joint(problem, mapping), alpha)


def lip_epsilon(problem: PrivacyProblem, mapping: Any) -> float:
    """Local information privacy ε in nats (Jiang, Li, Tandon); inf when unbounded."""
    return lip_epsilon_of_joint(_joint(problem, mapping))


def ldp_epsilon_private(problem: PrivacyProblem, mapping: Any) -> float:
    """Local-DP ε of the channel A → B̂ in nats; inf when unbounded."""
    return ldp_epsilon_private_of_joint(_joint(problem, mapping))


def total_variation(problem: PrivacyProblem, mapping: Any) -> float:
    """Total variation between p(A, B̂) and p(A) p(B̂), a probability."""
    return total_variation_of_joint(_joint(problem, mapping))


def t_closeness(problem: PrivacyProblem, mapping: Any) -> float:
    """The t of t-closeness of B̂ (total variation ground distance), a probability."""
    return t_closeness_of_joint(_joint(problem, mapping))


def guessing_entropy(problem: PrivacyProblem, mapping: Any) -> float:
    """Guessing entropy G(A | B̂) in expected guesses (higher is more private)."""
    return guessing_entropy_of_joint(_joint(problem, mapping))


#: output name -> f(Q) for I(A; B̂) and the notions above (Sibson's at its default α = 2)
JOINT_NOTIONS = {
    "mi_bits": mutual_information_of_joint,
    "maximal_leakage": maximal_leakage_of_joint,
    "min_entropy_leakage": min_entropy_leakage_of_joint,
    "sibson_mi": sibson_mi_of_joint,
    "lip_epsilon": lip_epsilon_of_joint,
    "ldp_epsilon_private": ldp_epsilon_private_of_joint,
    "total_variation": total_variation_of_joint,
    "t_closeness": t_closeness_of_joint,
    "guessing_entropy": guessing_entropy_of_joint,
}


def notions_of_joint(Q: Any) -> dict[str, float]:
    """Every notion of :data:`JOINT_NOTIONS` from one joint Q[a, b̂]."""
    return {name: f(Q) for name, f in JOINT_NOTIONS.items()}


def notions(problem: PrivacyProblem, mapping: Any) -> dict[str, float]:
    """Every notion of :data:`JOINT_NOTIONS` for one mapping; the joint is computed once."""
    return notions_of_joint(_joint(problem, mapping))
