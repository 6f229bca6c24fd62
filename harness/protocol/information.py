"""Exact metrics of a mapping X, X[i, j] = p(b̂_i | b_j), under a prior p(A, B).

These are the reference implementations the metric plugins call (``pb.metrics``).
Everything works on scipy.sparse mappings in O(nnz + |A| n) time and memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from privbench.protocol.mapping import validate_mapping

if TYPE_CHECKING:
    from privbench.protocol.problem import PrivacyProblem

__all__ = [
    "attribute_leakage_bits",
    "expected_distortion",
    "leakage_nats",
    "mutual_information",
    "mutual_information_of_joint",
    "output_joint",
    "support_sizes",
]


def mutual_information_of_joint(joint: np.ndarray) -> float:
    """I(A; Y) in bits for a joint pmf of shape (|A|, |Y|); exact, never negative."""
    P = np.asarray(joint, dtype=float)
    total = P.sum()
    if total <= 0:
        return 0.0
    P = P / total
    pa = P.sum(axis=1, keepdims=True)
    py = P.sum(axis=0, keepdims=True)
    mask = P > 0
    ratio = P[mask] / (pa @ py)[mask]
    value = float(np.sum(P[mask] * np.log2(ratio)))
    return max(value, 0.0)


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
