"""The exponential mechanism against a hand computation."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench import metrics as M
from privbench.testing import check_mechanism


def _two_symbol_problem() -> pb.PrivacyProblem:
    return pb.PrivacyProblem.from_arrays(joint=[[0.3, 0.2], [0.1, 0.4]], distortion=[[0, 1], [1, 0]])


def test_fixed_beta_matches_hand_formula() -> None:
    # two symbols at distance 1: p(stay) = 1 / (1 + e^-β), p(move) = e^-β / (1 + e^-β)
    beta = 0.7
    res = pb.get_mechanism("expmec", beta=beta).solve(_two_symbol_problem(), delta=0.0)
    move = np.exp(-beta) / (1 + np.exp(-beta))
    np.testing.assert_allclose(res.mapping.toarray(), [[1 - move, move], [move, 1 - move]])
    assert res.stats["epsilon"] == pytest.approx(2 * beta * 1.0)


def test_budget_calibration_hits_delta() -> None:
    # E[d](β) = move(β) here (both columns move with the same probability, d = 1)
    problem = _two_symbol_problem()
    delta = 0.2
    res = pb.get_mechanism("expmec").solve(problem, delta=delta)
    beta = np.log(1 / delta - 1)  # move = δ  <=>  e^-β = δ / (1 - δ)
    assert res.stats["beta"] == pytest.approx(beta, rel=1e-9)
    assert M.expected_distortion(problem, res.mapping) == pytest.approx(delta, abs=1e-10)
    assert M.expected_distortion(problem, res.mapping) <= delta + 1e-12
    assert res.stats["epsilon"] == pytest.approx(2 * beta)


def test_zero_and_large_budgets() -> None:
    problem = pb.load_dataset("synthetic", m=3)
    zero = pb.get_mechanism("expmec").solve(problem, delta=0.0)
    np.testing.assert_allclose(zero.mapping.toarray(), np.eye(8))
    assert zero.stats["epsilon"] is None
    huge = pb.get_mechanism("expmec").solve(problem, delta=1e6)
    assert huge.stats["beta"] == 0.0  # the uniform mapping already fits
    assert M.mutual_information(problem, huge.mapping) == pytest.approx(0.0, abs=1e-12)


def test_expmec_conformance() -> None:
    rows = check_mechanism(pb.get_host().get("mechanism", "expmec"))
    assert len(rows) >= 8


def test_expmec_refuses_large_alphabets() -> None:
    mech = pb.get_mechanism("expmec", max_n=16)
    skip, reason = mech.skip(pb.load_dataset("synthetic", m=5))
    assert skip and "max_n = 16" in reason
