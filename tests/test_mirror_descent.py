"""mirror_descent: within 1e-3 bits of the exact optimum (cvxpy), feasible, certified,
a sane trace; conformance; parameter errors; census top 100 against the optimum."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.measures.optimum import decoder_lower_bound
from privbench.plugins.mechanisms.mirror_descent import MirrorDescent
from privbench.testing import check_mechanism

TOL = 1e-3

# (n, |A|, distortion, seed, budget as a fraction of the uniform mapping's E[d]);
# the fractions put the optimum strictly between 0 and I(A; B)
CASES = [
    (8, 2, "random", 0, 0.05),
    (16, 3, "hamming", 1, 0.1),
    (24, 2, "random", 2, 0.03),
    (40, 3, "hamming", 3, 0.2),
    (64, 2, "random", 4, 0.005),
    (48, 2, "random", 6, 0.01),
    (64, 3, "hamming", 5, 0.02),
]


def _uniform_cost(problem: pb.PrivacyProblem) -> float:
    return float(np.sum(problem.p_b * problem.distortion.to_dense().mean(axis=0)))


def _assert_valid(problem: pb.PrivacyProblem, result: pb.MechanismResult, delta: float) -> None:
    X = result.mapping.toarray()
    assert np.all(X >= 0)
    assert np.allclose(X.sum(axis=0), 1.0, atol=1e-9, rtol=0)
    assert pb.metrics.expected_distortion(problem, result.mapping) <= delta + 1e-9 * max(1.0, delta)


def _assert_trace(result: pb.MechanismResult) -> None:
    trace = result.stats["trace"]
    assert trace, "no checkpoints"
    seconds = [t[0] for t in trace]
    assert seconds == sorted(seconds)
    # the seconds include the harness's certificates (a gap is certified once they exist)
    assert 0.0 < result.stats["certify_s"] <= seconds[-1] <= result.stats["solve_time_s"]
    assert all(lower <= upper + 1e-12 for _, upper, lower in trace)


@pytest.mark.parametrize(("n", "k", "dist", "seed", "frac"), CASES)
def test_matches_optimum(n: int, k: int, dist: str, seed: int, frac: float) -> None:
    problem = pb.load_dataset("random", n=n, n_private=k, seed=seed, distortion=dist)
    delta = frac * _uniform_cost(problem)
    exact = pb.get_mechanism("optimal").solve(problem, delta=delta)
    best = pb.metrics.mutual_information(problem, exact.mapping)
    assert 1e-3 < best < problem.prior_mi_bits - 1e-3, "the budget should be interesting"
    result = MirrorDescent().solve(problem, delta=delta)
    _assert_valid(problem, result, delta)
    mine = pb.metrics.mutual_information(problem, result.mapping)
    assert abs(mine - best) <= TOL
    stats = result.stats
    assert stats["converged"] and stats["gap_bits"] <= TOL
    assert stats["lower_bits"] <= best + 1e-6  # the certificate is valid
    assert mine - stats["lower_bits"] == pytest.approx(stats["gap_bits"], abs=1e-9)
    assert stats["budget_dual"] >= 0
    _assert_trace(result)


def test_fixed_step_also_converges() -> None:
    problem = pb.load_dataset("random", n=32, n_private=2, seed=7, distortion="hamming")
    delta = 0.1 * _uniform_cost(problem)
    result = MirrorDescent(step="fixed").solve(problem, delta=delta)
    _assert_valid(problem, result, delta)
    assert result.stats["converged"] and result.stats["eta"] == 1.0


def test_budget_extremes() -> None:
    """Δ at the least distortion (only the identity fits) and Δ affording a constant."""
    problem = pb.load_dataset("random", n=12, n_private=2, seed=3, distortion="random")
    at_zero = MirrorDescent().solve(problem, delta=0.0)
    _assert_valid(problem, at_zero, 0.0)
    assert np.allclose(at_zero.mapping.toarray(), np.eye(12))
    generous = MirrorDescent().solve(problem, delta=10.0 * _uniform_cost(problem))
    assert pb.metrics.mutual_information(problem, generous.mapping) == pytest.approx(0.0, abs=1e-12)
    assert generous.stats["gap_bits"] == 0.0


def test_iteration_and_time_limits_still_feasible() -> None:
    problem = pb.load_dataset("random", n=40, n_private=3, seed=3, distortion="hamming")
    delta = 0.2 * _uniform_cost(problem)
    for params in ({"iterations": 3, "check_every": 2}, {"max_seconds": 0.0}):
        result = MirrorDescent(**params).solve(problem, delta=delta)
        _assert_valid(problem, result, delta)
        assert result.stats["gap_bits"] >= 0
        lower = decoder_lower_bound(problem, result.mapping, delta)
        assert result.stats["lower_bits"] >= lower - 1e-9


@pytest.mark.slow
def test_conformance() -> None:
    check_mechanism(MirrorDescent)


@pytest.mark.parametrize(("param", "value"), [
    ("iterations", -1), ("iterations", 2.5), ("tol", -1.0), ("tol", float("nan")),
    ("check_every", 0), ("eta", 0.0), ("eta", "big"), ("step", "newton"),
    ("max_seconds", -1.0), ("max_n", 0), ("max_n", True), ("threads", -1),
])
def test_bad_parameters(param: str, value: object) -> None:
    with pytest.raises(pb.ValidationError, match=param):
        MirrorDescent.create(**{param: value})


def test_skip_large() -> None:
    problem = pb.load_dataset("random", n=20, n_private=2, seed=0)
    skip, reason = MirrorDescent(max_n=10).skip(problem)
    assert skip and "max_n" in reason and "dense" in reason


@pytest.mark.realdata
@pytest.mark.parametrize("delta", [0.3, 1.0])
def test_census_top_100(real_data_dir: Path, delta: float) -> None:
    problem = pb.load_dataset("census", top_k=100, data_dir=str(real_data_dir), download=False)
    exact = pb.get_mechanism("optimal").solve(problem, delta=delta)
    best = pb.metrics.mutual_information(problem, exact.mapping)
    result = MirrorDescent().solve(problem, delta=delta)
    _assert_valid(problem, result, delta)
    assert abs(pb.metrics.mutual_information(problem, result.mapping) - best) <= TOL
    assert result.stats["lower_bits"] <= best + 1e-6
    _assert_trace(result)
