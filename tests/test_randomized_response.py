"""k-ary randomized response: the closed-form budget calibration and local DP."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench import metrics as M
from privbench.plugins.mechanisms.randomized_response import RandomizedResponse, rr_mapping
from privbench.testing import check_mechanism, small_problems


def test_matrix_and_local_dp():
    X = rr_mapping(5, np.log(3.0))
    np.testing.assert_allclose(X.sum(axis=0), 1.0)
    np.testing.assert_allclose(X[0, 0], 3 / 7)
    np.testing.assert_allclose(X[1, 0], 1 / 7)
    # local DP: max ratio over inputs of any output's probability is e^ε
    assert np.log((X.max(axis=1) / X.min(axis=1)).max()) == pytest.approx(np.log(3.0))
    np.testing.assert_array_equal(rr_mapping(4, np.inf), np.eye(4))
    np.testing.assert_allclose(rr_mapping(4, 0.0), np.full((4, 4), 0.25))
    assert np.isfinite(rr_mapping(3, 1e4)).all()


@pytest.mark.parametrize("problem", small_problems(), ids=lambda p: p.name)
def test_budget_is_met_with_equality(problem):
    D = problem.distortion.to_dense()
    uniform = float(np.sum(problem.p_b * D.mean(axis=0)))
    mech = pb.get_mechanism("randomized_response")
    for delta in (0.01 * uniform, 0.5 * uniform, 0.99 * uniform):
        res = mech.solve(problem, delta)
        assert M.expected_distortion(problem, res.mapping) == pytest.approx(delta, rel=1e-9)
        # the largest ε that fits: a slightly larger ε would give less distortion...
        eps = res.stats["epsilon"]
        looser = rr_mapping(problem.n, eps * 0.999)
        assert M.expected_distortion(problem, looser) > delta
    # beyond the uniform mapping's distortion ε = 0; at Δ = 0 the identity
    assert mech.solve(problem, 2 * uniform).stats["epsilon"] == 0.0
    res0 = mech.solve(problem, 0.0)
    assert res0.stats["epsilon"] is None
    assert M.mutual_information(problem, res0.mapping) == pytest.approx(problem.prior_mi_bits)


def test_conformance():
    check_mechanism(RandomizedResponse)
    check_mechanism(RandomizedResponse, {"epsilon": 1.0})


def test_leakage_decreases_with_budget():
    problem = pb.load_dataset("random", n=12, n_private=3, seed=5)
    mech = pb.get_mechanism("randomized_response")
    mis = [M.mutual_information(problem, mech.solve(problem, d).mapping)
           for d in (0.0, 0.05, 0.1, 0.2, 0.4)]
    assert all(a >= b - 1e-12 for a, b in zip(mis, mis[1:], strict=False))


def test_errors_and_skip():
    problem = pb.load_dataset("random", n=6)
    with pytest.raises(pb.ValidationError, match="epsilon"):
        pb.get_mechanism("randomized_response", epsilon=-1).solve(problem, 0.1)
    skip, reason = pb.get_mechanism("randomized_response", max_n=4).skip(problem)
    assert skip and "max_n" in reason
    bad = pb.PrivacyProblem.from_arrays(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(pb.ValidationError, match="d\\(b, b\\) = 0"):
        pb.get_mechanism("randomized_response").solve(bad, 0.1)


@pytest.mark.realdata
def test_census(real_data_dir):
    problem = pb.load_dataset("census", top_k=300, data_dir=str(real_data_dir))
    res = pb.get_mechanism("randomized_response").solve(problem, 1.0)
    assert M.expected_distortion(problem, res.mapping) == pytest.approx(1.0, rel=1e-9)
    assert M.mutual_information(problem, res.mapping) < problem.prior_mi_bits
