"""Exact metrics against hand computations and invariants."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import privbench as pb
from privbench import metrics as M


def test_mutual_information_hand_example() -> None:
    # p(a, b) = [[0.4, 0.1], [0.1, 0.4]]: I = 1 - H(0.2) bits
    joint = np.array([[0.4, 0.1], [0.1, 0.4]])
    h = -(0.2 * np.log2(0.2) + 0.8 * np.log2(0.8))
    assert M.mutual_information_of_joint(joint) == pytest.approx(1 - h, abs=1e-15)


def test_metrics_of_a_two_symbol_mapping() -> None:
    problem = pb.PrivacyProblem.from_arrays(joint=[[0.4, 0.1], [0.1, 0.4]],
                                            distortion=[[0, 2], [3, 0]])
    # X[i, j] = p(b̂_i | b_j): b_0 stays w.p. 0.75, moves to b_1 w.p. 0.25; b_1 stays
    X = sp.csc_array(np.array([[0.75, 0.0], [0.25, 1.0]]))
    # p(a, b̂) = [[0.3, 0.2], [0.075, 0.425]]
    out = M.output_joint(problem, X)
    np.testing.assert_allclose(out, [[0.3, 0.2], [0.075, 0.425]])
    pa, pb_ = out.sum(1, keepdims=True), out.sum(0, keepdims=True)
    expect = float(np.sum(out * np.log2(out / (pa @ pb_))))
    assert M.mutual_information(problem, X) == pytest.approx(expect, abs=1e-15)
    # E[d] = p(b_0) * 0.25 * d(b̂_1, b_0) = 0.5 * 0.25 * 3
    assert M.expected_distortion(problem, X) == pytest.approx(0.375)
    np.testing.assert_array_equal(M.support_sizes(X), [2, 1])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 12), k=st.integers(2, 4))
def test_data_processing_and_nonnegativity(seed: int, n: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    problem = pb.PrivacyProblem.from_arrays(rng.dirichlet(np.ones(n * k)).reshape(k, n),
                                            rng.random((n, n)))
    X = rng.dirichlet(np.ones(n) * 0.3, size=n).T  # columns on the simplex
    mi = M.mutual_information(problem, X)
    assert -1e-12 <= mi <= problem.prior_mi_bits + 1e-12
    assert M.mutual_information(problem, np.eye(n)) == pytest.approx(problem.prior_mi_bits)
    constant = np.zeros((n, n))
    constant[0] = 1.0
    assert M.mutual_information(problem, constant) == pytest.approx(0.0, abs=1e-15)


def test_asymmetric_hand_example() -> None:
    """p(b) = (0.7, 0.3), an asymmetric d and mapping: weighting E[d] by p(b̂) instead of
    p(b) (0.266) or transposing X or d gives another number than the hand value 0.29."""
    import math

    problem = pb.PrivacyProblem.from_arrays(joint=[[0.6, 0.1], [0.1, 0.2]],
                                            distortion=[[0.0, 1.0], [2.0, 0.0]])
    X = np.array([[0.9, 0.5], [0.1, 0.5]])
    assert M.expected_distortion(problem, X) == pytest.approx(0.7 * 0.1 * 2.0 + 0.3 * 0.5 * 1.0)
    q = {(0, 0): 0.59, (0, 1): 0.11, (1, 0): 0.19, (1, 1): 0.11}  # p(a, b̂) by hand
    pa = {0: 0.7, 1: 0.3}
    pbh = {0: 0.78, 1: 0.22}
    by_hand = sum(v * math.log2(v / (pa[a] * pbh[i])) for (a, i), v in q.items())
    assert M.mutual_information(problem, X) == pytest.approx(by_hand, abs=1e-12)


def test_expmec_meets_the_budget_under_a_skewed_prior() -> None:
    """E[d] of ExpMec's mapping, recomputed by hand, equals Δ when p(b) is far from uniform."""
    rng = np.random.default_rng(7)
    joint = rng.dirichlet(np.r_[np.full(5, 0.2), np.full(5, 5.0)]).reshape(2, 5)
    D = rng.random((5, 5)) * 3
    np.fill_diagonal(D, 0.0)
    problem = pb.PrivacyProblem.from_arrays(joint=joint, distortion=D)
    X = pb.get_mechanism("expmec").solve(problem, delta=0.4).mapping.toarray()
    p_b = joint.sum(axis=0) / joint.sum()
    by_hand = sum(p_b[j] * X[i, j] * D[i, j] for i in range(5) for j in range(5))
    assert by_hand == pytest.approx(0.4, abs=1e-9)
