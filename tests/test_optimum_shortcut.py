"""The ``optimum`` metric solves only when it must, and its shortcuts never over-claim.

Every check compares the metric's interval with the exact least leakage I*(D_X) at the
mapping's own distortion, computed by ``optimal`` (cvxpy/Clarabel, a different solver path);
a lower bound above it is an over-claim.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sparse

import privbench as pb
from privbench.measures.optimum import Bound, interval
from privbench.plugins.metrics import _optimum_cache as optimum_cache
from privbench.plugins.metrics.optimum import OptimumGap, choose_certifier

pytest.importorskip("cvxpy")

#: Clarabel's accuracy on these small programs (bits)
EXACT_TOL = 1e-6


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optimum_cache, "_MEMORY", {})
    # no sweep store outside a sweep: the runner sets it per run (RunSpec.store)


def _problem(seed: int = 3) -> pb.PrivacyProblem:
    return pb.load_dataset("random", n=10, n_private=2, seed=seed, distortion="hamming")


def _exact(problem: pb.PrivacyProblem, distortion: float) -> float:
    return pb.metrics.mutual_information(
        problem, pb.get_mechanism("optimal").solve(problem, delta=distortion).mapping)


def _budget(problem: pb.PrivacyProblem, frac: float) -> float:
    return frac * float((problem.distortion.to_dense() @ problem.p_b).min())


def test_a_certified_run_needs_no_solve() -> None:
    problem = _problem()
    delta = _budget(problem, 0.1)
    result = pb.get_mechanism("sppm", tol=1e-4).solve(problem, delta=delta)
    out = OptimumGap().compute(problem, result, delta=delta)
    assert out["optimum_source"] == "certificate" and out["optimum_seconds"] == 0.0
    D_X = pb.metrics.expected_distortion(problem, result.mapping)
    exact = _exact(problem, D_X)
    assert out["optimum_lower_bits"] <= exact + EXACT_TOL <= out["optimum_upper_bits"] + 2 * EXACT_TOL
    assert out["optimum_upper_bits"] - out["optimum_lower_bits"] <= 1e-3


def _certificate_from_a_tighter_budget(problem: pb.PrivacyProblem
                                       ) -> tuple[pb.MechanismResult, float, float]:
    """A mapping at D_X = Δ2 carrying the certificate of a solve at Δ1 < D_X (the stats of
    a solver that reported the wrong budget, or a mechanism that overspent Δ1)."""
    delta1, delta2 = _budget(problem, 0.05), _budget(problem, 0.15)
    tight = pb.get_mechanism("sppm", tol=1e-5, mode="optimal").solve(problem, delta=delta1)
    loose = pb.get_mechanism("sppm", tol=1e-5, mode="optimal").solve(problem, delta=delta2)
    result = pb.MechanismResult(kind="mapping", mapping=loose.mapping, stats=dict(tight.stats))
    return result, delta1, pb.metrics.expected_distortion(problem, loose.mapping)


def test_a_certificate_at_a_smaller_budget_is_not_used_as_is() -> None:
    """D_X > Δ: the certificate's lower bound on I*(Δ) is above I*(D_X); using it as a bound
    at D_X would over-claim by ~0.1 bits here (I*(Δ) = 0.168, I*(D_X) = 0.070)."""
    problem = _problem()
    result, delta1, D_X = _certificate_from_a_tighter_budget(problem)
    claimed = pb.Certificate.from_stats(result.stats).lower_bits
    exact = _exact(problem, D_X)
    assert claimed > exact + 0.01  # the trap is real: I*(Δ1) is well above I*(D_X)
    out = OptimumGap().compute(problem, result, delta=delta1)
    assert out["optimum_lower_bits"] <= exact + EXACT_TOL
    assert out["optimum_upper_bits"] >= exact - EXACT_TOL
    assert out["optimum_source"] != "certificate"


def test_a_certificate_at_a_larger_budget_bounds_from_below() -> None:
    """D_X <= Δ: the certificate's bound on I*(Δ) holds at D_X (I* is non-increasing), so an
    under-spending certified mapping needs no solve and the bound stays below I*(D_X)."""
    problem = _problem(5)
    delta = _budget(problem, 0.1)
    res = pb.get_mechanism("sppm", tol=1e-5, mode="optimal").solve(problem, delta=delta)
    bigger = 1.5 * delta  # the same mapping and certificate, reported against a looser Δ
    out = OptimumGap().compute(problem, res, delta=bigger)
    D_X = pb.metrics.expected_distortion(problem, res.mapping)
    assert out["optimum_lower_bits"] <= _exact(problem, D_X) + EXACT_TOL
    cert = pb.Certificate.from_stats(res.stats)
    assert out["optimum_lower_bits"] >= min(cert.lower_bits, 0.0) - 1e-12


def test_the_runs_own_certificate_serves_later_runs() -> None:
    """sppm at Δ leaves its certificate in the cache; expmec at the same Δ is then certified
    from it, without a solve, and the interval holds against the exact optimum."""
    problem = pb.load_dataset("synthetic", m=4)
    delta = 1.0
    sppm = pb.get_mechanism("sppm", tol=1e-4).solve(problem, delta=delta)
    assert OptimumGap().compute(problem, sppm, delta=delta)["optimum_source"] == "certificate"
    expmec = pb.get_mechanism("expmec").solve(problem, delta=delta)
    out = OptimumGap().compute(problem, expmec, delta=delta)
    assert out["optimum_source"] == "cache" and out["optimum_seconds"] == 0.0
    exact = _exact(problem, pb.metrics.expected_distortion(problem, expmec.mapping))
    assert out["optimum_lower_bits"] <= exact + EXACT_TOL <= out["optimum_upper_bits"] + 2 * EXACT_TOL


def test_the_certifier_suits_the_problem() -> None:
    line = pb.load_dataset("synthetic", m=4)
    assert choose_certifier(line, 1e-3) == ("sppm", {"tol": 1e-3})
    for n, certifier in ((10, ("mirror_descent", {"tol": 1e-3})),
                         (200, ("sppm", {"tol": 1e-3, "mode": "dual"}))):
        hamming = pb.load_dataset("random", n=n, seed=0, distortion="hamming")
        matrix = pb.load_dataset("random", n=n, seed=0, distortion="random")
        for problem in (hamming, matrix):
            assert choose_certifier(problem, 1e-3) == certifier
    identity = pb.MechanismResult(kind="mapping", mapping=sparse.csc_array(
        0.5 * np.eye(line.n) + 0.5 / line.n))
    out = OptimumGap().compute(line, identity, delta=100.0)
    assert out["optimum_source"] == "sppm[tol=0.001]" and out["optimum_seconds"] > 0


def _convex_curve(D: np.ndarray | float) -> np.ndarray | float:
    """A convex, non-increasing stand-in for I*(D): (1 - D)^2 up to 1, then 0."""
    return np.maximum(0.0, 1.0 - np.asarray(D)) ** 2


def test_interval_holds_on_a_convex_curve() -> None:
    """Random exact bounds on a known convex curve: the interval brackets it everywhere
    (monotonicity, the chord above, the chord's extension below)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        points = np.sort(rng.uniform(0.0, 1.2, rng.integers(1, 5)))
        bounds = [Bound(float(d), float(_convex_curve(d)) * rng.uniform(0.9, 1.0),
                        float(_convex_curve(d)) * rng.uniform(1.0, 1.1) + 1e-15, "test")
                  for d in points]
        for D in rng.uniform(0.0, 1.3, 20):
            lower, upper = interval(bounds, float(D))
            assert lower <= _convex_curve(D) + 1e-12 <= upper + 2e-12


def test_interval_extends_a_bound_just_below_by_convexity() -> None:
    """A lower bound certified at Δ, asked at D_X = Δ (1 + 1e-12) (rounding): kept almost whole,
    and fading as D moves away; without a point below to draw the chord from, nothing."""
    at = Bound(0.5, float(_convex_curve(0.5)), float(_convex_curve(0.5)), "solver")
    start = Bound(0.0, 0.0, 1.0, "identity")
    lo_near, _ = interval([start, at], 0.5 * (1 + 1e-12))
    assert lo_near == pytest.approx(0.25, abs=1e-9)
    lo_far, _ = interval([start, at], 0.9)
    assert 0.0 <= lo_far <= _convex_curve(0.9) and lo_far < lo_near
    assert interval([at], 0.5 * (1 + 1e-12))[0] == 0.0
    assert math.isinf(interval([at], 0.4)[1])
