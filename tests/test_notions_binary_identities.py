"""For a binary private attribute several notions are one number in disguise (theorems,
docs/privacy-notions.md "Binary A"); each identity checked on random binary problems and
random mappings, and shown to fail for |A| = 3 (so the tests are not vacuous).

With p0, p1 the prior, q(b̂) the output law and r(b̂) = p(A = 0 | b̂):
  maximal leakage  = log2(1 + TV / (2 p0 p1))
  guessing entropy = 2 - S, S = Σ_b̂ max_a p(a, b̂) the MAP adversary's success
  min-entropy leak = log2(S / max(p0, p1)) = log2((2 - G) / max(p0, p1))
  t-closeness      = max(r_max - p0, p0 - r_min)
  LDP ε (w.r.t. A) = max over r in {r_min, r_max} of |ln(r p1 / ((1 - r) p0))|
  LIP ε            = max over r in {r_min, r_max} of max(|ln(r / p0)|, |ln((1 - r) / p1)|)
(r_min, r_max over the outputs with q(b̂) > 0; the ε's are inf when r reaches 0 or 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbench as pb
from privbench import metrics as M


def random_problem(rng: np.random.Generator, n_private: int = 2) -> tuple[pb.PrivacyProblem,
                                                                          np.ndarray]:
    n = int(rng.integers(2, 9))
    joint = rng.dirichlet(np.full(n_private * n, 0.7)).reshape(n_private, n)
    problem = pb.PrivacyProblem.from_arrays(joint=joint, distortion=1.0 - np.eye(n))
    X = rng.dirichlet(np.full(n, 0.5), size=n).T  # columns on the simplex
    if rng.random() < 0.3:  # some deterministic (sparse) mappings too
        X = np.zeros((n, n))
        X[rng.integers(0, n, n), np.arange(n)] = 1.0
    return problem, X


def released(problem: pb.PrivacyProblem, X: np.ndarray) -> np.ndarray:
    Q = X @ problem.joint.T  # (n, |A|): p(b̂, a)
    Q = Q.T / Q.sum()
    return Q[:, Q.sum(axis=0) > 0]


CASES = [random_problem(np.random.default_rng(seed)) for seed in range(40)]


@pytest.mark.parametrize("problem, X", CASES)
def test_maximal_leakage_is_a_function_of_total_variation(problem, X) -> None:
    p0, p1 = released(problem, X).sum(axis=1)
    tv = M.total_variation(problem, X)
    assert M.maximal_leakage(problem, X) == pytest.approx(
        math.log2(1 + tv / (2 * p0 * p1)), abs=1e-12)


@pytest.mark.parametrize("problem, X", CASES)
def test_guessing_entropy_is_two_minus_the_map_success(problem, X) -> None:
    Q = released(problem, X)
    success = float(Q.max(axis=0).sum())  # the MAP adversary guesses argmax_a p(a | b̂)
    G = M.guessing_entropy(problem, X)
    assert G == pytest.approx(2 - success, abs=1e-12)
    assert M.min_entropy_leakage(problem, X) == pytest.approx(
        max(math.log2((2 - G) / Q.sum(axis=1).max()), 0.0), abs=1e-12)


def extreme_posteriors(problem, X) -> tuple[float, float, float, float]:
    Q = released(problem, X)
    p0, p1 = Q.sum(axis=1)
    r = Q[0] / Q.sum(axis=0)
    return p0, p1, float(r.min()), float(r.max())


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


@pytest.mark.parametrize("problem, X", CASES)
def test_lip_ldp_and_t_closeness_depend_only_on_the_two_extreme_posteriors(problem, X) -> None:
    p0, p1, lo, hi = extreme_posteriors(problem, X)
    assert M.t_closeness(problem, X) == pytest.approx(max(hi - p0, p0 - lo), abs=1e-12)

    def ldp(r: float) -> float:
        return abs(_log(r * p1) - _log((1 - r) * p0))

    def lip(r: float) -> float:
        return max(abs(_log(r / p0)), abs(_log((1 - r) / p1)))

    for notion, f in ((M.ldp_epsilon_private, ldp), (M.lip_epsilon, lip)):
        expected = max(f(lo), f(hi))
        value = notion(problem, X)
        if math.isinf(expected):
            assert math.isinf(value)
        else:
            assert value == pytest.approx(expected, rel=1e-9)


def test_the_identities_need_a_binary_private_attribute() -> None:
    """|A| = 3: the binary formulas are off on most random problems."""
    off = {"maximal": 0, "guessing": 0}
    for seed in range(20):
        problem, X = random_problem(np.random.default_rng(100 + seed), n_private=3)
        Q = released(problem, X)
        p = Q.sum(axis=1)
        tv = M.total_variation(problem, X)
        off["maximal"] += not math.isclose(M.maximal_leakage(problem, X),
                                           math.log2(1 + tv / (2 * p[0] * (1 - p[0]))))
        off["guessing"] += not math.isclose(M.guessing_entropy(problem, X),
                                            2 - float(Q.max(axis=0).sum()))
    assert off["maximal"] >= 15 and off["guessing"] >= 15


def test_identities_on_a_stored_census_like_example() -> None:
    """The identities order mechanisms the same way: on one binary problem, two mappings
    compare the same under maximal leakage and TV, and under guessing and min-entropy."""
    rng = np.random.default_rng(7)
    problem, _ = random_problem(rng)
    n = problem.n
    X1 = rng.dirichlet(np.ones(n), size=n).T
    X2 = np.full((n, n), 1.0 / n) * 0.5 + np.eye(n) * 0.5
    ml = [M.maximal_leakage(problem, X) for X in (X1, X2)]
    tv = [M.total_variation(problem, X) for X in (X1, X2)]
    assert (ml[0] < ml[1]) == (tv[0] < tv[1])
    ge = [M.guessing_entropy(problem, X) for X in (X1, X2)]
    mel = [M.min_entropy_leakage(problem, X) for X in (X1, X2)]
    assert (ge[0] > ge[1]) == (mel[0] < mel[1]) or math.isclose(mel[0], mel[1])
