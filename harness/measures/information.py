"""Exact metrics of a mapping X, X[i, j] = p(b̂_i | b_j), under a prior p(A, B).

These are the reference implementations the metric plugins call (``pb.metrics``).
Everything works on scipy.sparse mappings in O(nnz + |A| n) time and memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from privbench.measures.notions import (
    JOINT_NOTIONS,
    guessing_entropy,
    ldp_epsilon_private,
    lip_epsilon,
    maximal_leakage,
    min_entropy_leakage,
    mutual_information_of_joint,
    notions,
    notions_of_joint,
    sibson_mi,
    t_closeness,
    total_variation,
)
from privbench.protocol.mapping import validate_mapping

if TYPE_CHECKING:
    from privbench.protocol.problem import PrivacyProblem

__all__ = [
    "JOINT_NOTIONS",
    "NOTIONS",
    "attribute_leakage_bits",
    "expected_distortion",
    "guessing_entropy",
    "ldp_epsilon_private",
    "lip_epsilon",
    "maximal_leakage",
    "min_entropy_leakage",
    "leakage_nats",
    "mutual_information",
    "mutual_information_of_joint",
    "notions",
    "notions_of_joint",
    "output_joint",
    "sibson_mi",
    "support_sizes",
    "t_closeness",
    "total_variation",
]


def _as_mapping(mapping: Any) -> sp.csc_array:
    return sp.csc_array(mapping) if not isinstance(mapping, sp.csc_array) else mapping


def output_joint(problem: PrivacyProblem, mapping: Any) -> np.ndarray:
    """p(a, b̂_i) = Σ_j X[i, j] p(a, b_j), shape (|A|, n)."""
    X = _as_mapping(mapping)
    return np.asarray((X @ problem.joint.T).T)


def _checked(problem: PrivacyProblem, mapping: Any) -> sp.csc_array:
    """The mapping, checked: (n, n), finite, non-negative, columns summing to 1.

    Without the check a matrix that is not a conditional pmf gives a number that means
    nothing (a negative distortion, I = 0 for a matrix of ones).
    """
    return validate_mapping(mapping, problem.n)


def mutual_information(problem: PrivacyProblem, mapping: Any) -> float:
    """I(A; B̂) in bits for the released B̂ = mapping applied to B.

    :raises InvalidMappingError: when ``mapping`` is not an (n, n) column-stochastic matrix.
    """
    return mutual_information_of_joint(output_joint(problem, _checked(problem, mapping)))


def expected_distortion(problem: PrivacyProblem, mapping: Any) -> float:
    """E[d(B, B̂)] = Σ_j p(b_j) Σ_i X[i, j] d(b̂_i, b_j), over the stored entries only.

    :raises InvalidMappingError: when ``mapping`` is not an (n, n) column-stochastic matrix.
    """
    X = sp.coo_array(_checked(problem, mapping))
    if X.nnz == 0:
        return 0.0
    d = problem.distortion.pairs(X.row, X.col)
    return float(np.sum(problem.p_b[X.col] * X.data * d))


def support_sizes(mapping: Any, *, tol: float = 0.0) -> np.ndarray:
    """Number of outputs b̂ with X[i, j] > tol, for every input j."""
    X = sp.csc_array(mapping)
    if tol > 0:
        X = X.multiply(X > tol)
        X = sp.csc_array(X)
    X.eliminate_zeros()
    return np.diff(X.indptr)


def leakage_nats(Q: np.ndarray, p_a: np.ndarray) -> float:
    """I(A; B̂) in nats from Q[a, i] = p(a, b̂_i), with 0 log 0 = 0."""
    q = Q.sum(axis=0)
    mask = Q > 0
    denom = (p_a[:, None] * q[None, :])[mask]
    value = float(np.sum(Q[mask] * np.log(Q[mask] / denom)))
    return max(value, 0.0)


def attribute_leakage_bits(joint: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """I(A; F_k) in bits for each public attribute k (SPPM paper, Table 1).

    ``joint[a, j]`` is p(a, symbol j) (or p(a, b̂_j) after a mapping) and ``codes[j, k]``
    the value of attribute k in symbol j: the joint of A and F_k sums the symbols that
    share a value.
    """
    P = np.asarray(joint, dtype=float)
    codes = np.asarray(codes)
    out = np.empty(codes.shape[1])
    for k in range(codes.shape[1]):
        _, inverse = np.unique(codes[:, k], return_inverse=True)
        inverse = inverse.reshape(-1)
        per_value = np.zeros((P.shape[0], int(inverse.max()) + 1 if inverse.size else 0))
        np.add.at(per_value.T, inverse, P.T)
        out[k] = mutual_information_of_joint(per_value)
    return out


#: output name -> f(problem, mapping) for every exact notion of a mapping run: the
#: leakage ``mi_bits``, the ``distortion`` and the notions of :mod:`privbench.measures.notions`
#: (``sibson_mi`` at α = 2). ``JOINT_NOTIONS`` holds the same notions (all but the
#: distortion, which needs d) as f(Q) of the joint Q[a, b̂] = p(a, b̂).
NOTIONS = {
    "mi_bits": mutual_information,
    "distortion": expected_distortion,
    "maximal_leakage": maximal_leakage,
    "min_entropy_leakage": min_entropy_leakage,
    "sibson_mi": sibson_mi,
    "lip_epsilon": lip_epsilon,
    "ldp_epsilon_private": ldp_epsilon_private,
    "total_variation": total_variation,
    "t_closeness": t_closeness,
    "guessing_entropy": guessing_entropy,
}
