"""Privacy notions of a mapping (pb.metrics): hand-computed channels, independent dense
formulas on random problems, invariants, infinities, and the qif package."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench import metrics as M
from privbench.measures import notions as N

HAMMING2 = np.array([[0.0, 1.0], [1.0, 0.0]])


def _problem(joint, D=None) -> pb.PrivacyProblem:
    joint = np.asarray(joint, dtype=float)
    n = joint.shape[1]
    return pb.PrivacyProblem.from_arrays(joint, 1.0 - np.eye(n) if D is None else D)


# --- hand-computed channels -------------------------------------------------------------

def test_erasure_channel_by_hand():
    """p(a) = (1/2, 1/2); W = [[1/2, 1/2, 0], [0, 1/2, 1/2]] (identity mapping on B).

    q = p(b̂) = (1/4, 1/2, 1/4).
    maximal leakage  log2(1/2 + 1/2 + 1/2) = log2 1.5
    min-entropy      Σ max_a p(a, b̂) = 3/4 over prior vulnerability 1/2: log2 1.5
    Sibson α = 2     2 log2 Σ_b̂ sqrt(Σ_a p(a) W²) = 2 log2(sqrt(1/8) + 1/2 + sqrt(1/8))
    I(A; B̂)          H(A) − H(A|B̂) = 1 − 1/2 = 1/2 bit
    LIP, LDP ε       W(b̂_0 | a_1) = 0 while p(b̂_0) > 0: inf
    total variation  ½ Σ |Q − p(a)q| = ½ (1/8 + 0 + 1/8 + 1/8 + 0 + 1/8) = 1/4
    t-closeness      posterior at b̂_0 is (1, 0) against (1/2, 1/2): ½ (1/2 + 1/2) = 1/2
    guessing         1/4 (b̂_0) + (1·1/4 + 2·1/4) (b̂_1) + 1/4 (b̂_2) = 5/4
    """
    problem = _problem([[0.25, 0.25, 0.0], [0.0, 0.25, 0.25]])
    X = np.eye(3)
    assert M.maximal_leakage(problem, X) == pytest.approx(math.log2(1.5), abs=1e-12)
    assert M.min_entropy_leakage(problem, X) == pytest.approx(math.log2(1.5), abs=1e-12)
    assert M.sibson_mi(problem, X) == pytest.approx(2 * math.log2(2 * math.sqrt(1 / 8) + 0.5), abs=1e-12)
    assert M.sibson_mi(problem, X, alpha=1) == pytest.approx(0.5, abs=1e-12)
    assert M.lip_epsilon(problem, X) == math.inf
    assert M.ldp_epsilon_private(problem, X) == math.inf
    assert M.total_variation(problem, X) == pytest.approx(0.25, abs=1e-12)
    assert M.t_closeness(problem, X) == pytest.approx(0.5, abs=1e-12)
    assert M.guessing_entropy(problem, X) == pytest.approx(1.25, abs=1e-12)


def test_binary_symmetric_mapping_by_hand():
    """B = A (p = 1/2 each) and X = [[3/4, 1/4], [1/4, 3/4]]: W = P(B|A)·X is the
    binary symmetric channel with crossover 1/4, and q = (1/2, 1/2).

    maximal leakage  log2(3/4 + 3/4) = log2 1.5; min-entropy the same (uniform prior)
    Sibson α = 2     2 log2 (2 sqrt(½ 9/16 + ½ 1/16)) = 2 log2(sqrt(5)/2) = log2(5/4)
    LIP ε            max(|ln (3/4)/(1/2)|, |ln (1/4)/(1/2)|) = ln 2
    LDP ε (w.r.t. A) ln (3/4)/(1/4) = ln 3
    total variation  ½ · 4 · (3/8 − 1/4) = 1/4; t-closeness ½ (1/4 + 1/4) = 1/4
    guessing         2 · (3/8 + 2 · 1/8) = 5/4
    """
    problem = _problem([[0.5, 0.0], [0.0, 0.5]], HAMMING2)
    X = sp.csc_array([[0.75, 0.25], [0.25, 0.75]])
    assert M.maximal_leakage(problem, X) == pytest.approx(math.log2(1.5), abs=1e-12)
    assert M.min_entropy_leakage(problem, X) == pytest.approx(math.log2(1.5), abs=1e-12)
    assert M.sibson_mi(problem, X, alpha=2.0) == pytest.approx(math.log2(1.25), abs=1e-12)
    assert M.lip_epsilon(problem, X) == pytest.approx(math.log(2.0), abs=1e-12)
    assert M.ldp_epsilon_private(problem, X) == pytest.approx(math.log(3.0), abs=1e-12)
    assert M.total_variation(problem, X) == pytest.approx(0.25, abs=1e-12)
    assert M.t_closeness(problem, X) == pytest.approx(0.25, abs=1e-12)
    assert M.guessing_entropy(problem, X) == pytest.approx(1.25, abs=1e-12)
    # α = inf is maximal leakage, α → 1 mutual information: 1 − h(1/4)
    assert M.sibson_mi(problem, X, alpha=math.inf) == pytest.approx(math.log2(1.5), abs=1e-12)
    h = -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75))
    assert M.sibson_mi(problem, X, alpha=1.0) == pytest.approx(1 - h, abs=1e-12)


def test_skewed_prior_min_entropy_differs_from_maximal_leakage():
    """p(a) = (3/4, 1/4), W = [[1, 0], [1/2, 1/2]]: Q = [[3/4, 0], [1/8, 1/8]].
    Σ max_a Q = 3/4 + 1/8 = 7/8 over prior vulnerability 3/4: log2(7/6) bits, while
    maximal leakage is log2(1 + 1/2) = log2 1.5 (the capacity, at another prior)."""
    problem = _problem([[0.75, 0.0], [0.125, 0.125]], HAMMING2)
    X = np.eye(2)
    assert M.min_entropy_leakage(problem, X) == pytest.approx(math.log2(7 / 6), abs=1e-12)
    assert M.maximal_leakage(problem, X) == pytest.approx(math.log2(1.5), abs=1e-12)
    # guessing: b̂_0 alone tells nothing new: 3/4 + 2·1/8; b̂_1: 1/8
    assert M.guessing_entropy(problem, X) == pytest.approx(0.75 + 0.25 + 0.125, abs=1e-12)


# --- independent dense formulas on random problems --------------------------------------

def _channel_loops(P: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """W[a, i] = Σ_j p(b_j | a) X[i, j] and p(a), by plain loops."""
    k, n = P.shape
    p_a = np.array([sum(P[a, j] for j in range(n)) for a in range(k)])
    W = np.zeros((k, n))
    for a in range(k):
        for i in range(n):
            W[a, i] = sum(P[a, j] / p_a[a] * X[i, j] for j in range(n))
    return W, p_a


def _brute(P: np.ndarray, X: np.ndarray, alpha: float) -> dict[str, float]:
    W, p_a = _channel_loops(P, X)
    k, n = W.shape
    q = [sum(p_a[a] * W[a, i] for a in range(k)) for i in range(n)]
    seen = [i for i in range(n) if q[i] > 0]
    lip = max(abs(math.log(W[a, i] / q[i])) if W[a, i] > 0 else math.inf
              for a in range(k) for i in seen)
    ldp = max((math.log(W[a, i] / W[b, i]) if W[b, i] > 0 else math.inf)
              for a in range(k) for b in range(k) for i in seen)
    guesses = 0.0
    for i in seen:
        ranked = sorted((p_a[a] * W[a, i] for a in range(k)), reverse=True)
        guesses += sum((r + 1) * v for r, v in enumerate(ranked))
    mi = sum(p_a[a] * W[a, i] * math.log2(W[a, i] / q[i])
             for a in range(k) for i in seen if W[a, i] > 0)
    sib = sum(sum(p_a[a] * W[a, i] ** alpha for a in range(k)) ** (1 / alpha) for i in seen)
    return {
        "mi_bits": mi,
        "maximal_leakage": math.log2(sum(max(W[a, i] for a in range(k)) for i in range(n))),
        "min_entropy_leakage": math.log2(sum(max(p_a[a] * W[a, i] for a in range(k)) for i in range(n))
                                         / max(p_a)),
        "sibson_mi": alpha / (alpha - 1) * math.log2(sib),
        "lip_epsilon": lip,
        "ldp_epsilon_private": ldp,
        "total_variation": 0.5 * sum(abs(p_a[a] * W[a, i] - p_a[a] * q[i]) for a in range(k) for i in range(n)),
        "t_closeness": max(0.5 * sum(abs(p_a[a] * W[a, i] / q[i] - p_a[a]) for a in range(k)) for i in seen),
        "guessing_entropy": guesses,
    }


def _random_mapping(rng: np.random.Generator, n: int, sparsity: float) -> np.ndarray:
    X = rng.random((n, n)) * (rng.random((n, n)) >= sparsity)
    X[rng.integers(n, size=n), np.arange(n)] += 0.1  # no empty column
    return X / X.sum(axis=0)


@pytest.mark.parametrize("seed", range(12))
def test_agrees_with_dense_brute_force(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 5)), int(rng.integers(2, 8))
    P = rng.dirichlet(np.ones(k * n) * 0.7).reshape(k, n)
    if seed % 3 == 0:
        P[:, rng.integers(n)] = 0.0  # a public value nobody has
    problem = _problem(P)
    X = _random_mapping(rng, n, sparsity=(0.0, 0.4, 0.8)[seed % 3])
    alpha = float(rng.choice([0.5, 2.0, 3.7]))
    expected = _brute(problem.joint, X, alpha)
    for name, value in expected.items():
        f = M.NOTIONS[name]
        got = f(problem, sp.csc_array(X), alpha=alpha) if name == "sibson_mi" else f(problem, X)
        if math.isinf(value):
            assert got == math.inf, name
        else:
            assert got == pytest.approx(value, rel=1e-9, abs=1e-12), name
        # the joint-level entry point gives the same number
        Q = M.output_joint(problem, X) * 1000.0  # counts are fine
        by_joint = N.sibson_mi_of_joint(Q, alpha) if name == "sibson_mi" else M.JOINT_NOTIONS[name](Q)
        assert by_joint == pytest.approx(got, rel=1e-12, abs=1e-12) or by_joint == got == math.inf


def test_registries_name_every_notion():
    problem = pb.load_dataset("random", n=7, n_private=3, seed=4)
    X = _random_mapping(np.random.default_rng(4), 7, 0.3)
    assert set(M.JOINT_NOTIONS) | {"distortion"} == set(M.NOTIONS)
    assert M.NOTIONS["distortion"](problem, X) == pytest.approx(M.expected_distortion(problem, X))
    every = M.notions(problem, X)
    assert set(every) == set(M.JOINT_NOTIONS)
    for name, value in every.items():
        assert value == M.NOTIONS[name](problem, X)


# --- invariants -------------------------------------------------------------------------

def _random_cases(count: int = 8):
    rng = np.random.default_rng(11)
    for _ in range(count):
        k, n = int(rng.integers(2, 5)), int(rng.integers(3, 10))
        problem = _problem(rng.dirichlet(np.ones(k * n)).reshape(k, n))
        yield problem, _random_mapping(rng, n, float(rng.choice([0.0, 0.5])))


def test_orderings_between_notions():
    for problem, X in _random_cases():
        v = M.notions(problem, X)
        k = problem.joint.shape[0]
        assert v["maximal_leakage"] >= v["min_entropy_leakage"] - 1e-12 >= -1e-12
        # Sibson's I_α grows with α from below I(A; B̂) to maximal leakage
        chain = [M.sibson_mi(problem, X, alpha=a) for a in (0.3, 0.7, 1.0, 1.5, 2.0, 5.0, 50.0)]
        assert all(x <= y + 1e-12 for x, y in zip(chain, chain[1:], strict=False))
        assert chain[2] == pytest.approx(v["mi_bits"], abs=1e-12)
        assert chain[-1] <= v["maximal_leakage"] + 1e-12
        # α → 1 from either side is I(A; B̂)
        for a in (1 - 1e-7, 1 + 1e-7):
            assert M.sibson_mi(problem, X, alpha=a) == pytest.approx(v["mi_bits"], abs=1e-5)
        # ε-LDP (w.r.t. A) gives ε-LIP, ε-LIP gives 2ε-LDP; both bound maximal leakage
        assert v["lip_epsilon"] <= v["ldp_epsilon_private"] + 1e-12
        assert v["ldp_epsilon_private"] <= 2 * v["lip_epsilon"] + 1e-12
        assert v["maximal_leakage"] <= v["lip_epsilon"] / math.log(2) + 1e-12
        # the average distance from the prior is at most the largest
        assert 0 <= v["total_variation"] <= v["t_closeness"] + 1e-12 <= 1
        assert 1 - 1e-12 <= v["guessing_entropy"] <= (k + 1) / 2 + 1e-12


def test_data_processing_against_the_identity():
    """A mapping never leaks more than releasing B itself, under every notion."""
    for problem, X in _random_cases():
        v, prior = M.notions(problem, X), M.notions(problem, np.eye(problem.n))
        for name in v:
            if name == "guessing_entropy":
                assert v[name] >= prior[name] - 1e-12
            else:
                assert v[name] <= prior[name] + 1e-12, name


@pytest.mark.parametrize("X", ["uniform", "one_output"])
def test_mapping_independent_of_b_leaks_nothing(X):
    problem = pb.load_dataset("random", n=6, n_private=3, seed=2)
    n = problem.n
    mapping = np.full((n, n), 1 / n) if X == "uniform" else sp.csc_array(
        (np.ones(n), (np.zeros(n, dtype=int), np.arange(n))), shape=(n, n))
    v = M.notions(problem, mapping)
    for name in ("mi_bits", "maximal_leakage", "min_entropy_leakage", "sibson_mi", "lip_epsilon",
                 "ldp_epsilon_private", "total_variation", "t_closeness"):
        assert v[name] == pytest.approx(0.0, abs=1e-12), name
    for alpha in (0.5, 1.0, 3.0, math.inf):
        assert M.sibson_mi(problem, mapping, alpha=alpha) == pytest.approx(0.0, abs=1e-12)
    # guessing without information: the prior order, 1·p(a_(1)) + 2·p(a_(2)) + ...
    p_a = np.sort(problem.joint.sum(axis=1))[::-1]
    assert v["guessing_entropy"] == pytest.approx(float(np.arange(1, 4) @ p_a), abs=1e-12)


def test_identity_on_a_deterministic_private_attribute():
    """The toy example: B determines A, so releasing B reveals A under every notion."""
    problem = pb.load_dataset("synthetic", m=4)
    v = M.notions(problem, sp.identity(problem.n, format="csc"))
    for name in ("mi_bits", "maximal_leakage", "min_entropy_leakage", "sibson_mi"):
        assert v[name] == pytest.approx(1.0, abs=1e-12), name
    assert v["lip_epsilon"] == v["ldp_epsilon_private"] == math.inf
    assert v["t_closeness"] == pytest.approx(0.5) and v["total_variation"] == pytest.approx(0.5)
    assert v["guessing_entropy"] == pytest.approx(1.0)


# --- infinities and bad input -----------------------------------------------------------

def test_infinite_values_are_inf_never_nan():
    # a private value with no mass and a public value with no mass: ignored, finite
    P = np.array([[0.3, 0.2, 0.0], [0.0, 0.0, 0.0], [0.1, 0.4, 0.0]])
    problem = _problem(P)
    X = np.array([[0.5, 0.25, 1.0], [0.5, 0.75, 0.0], [0.0, 0.0, 0.0]])
    v = M.notions(problem, X)
    assert all(math.isfinite(x) for x in v.values()), v
    # b̂_0 (from b_0 only) that a_2 cannot reach: inf for both ε, finite elsewhere
    problem = _problem([[0.3, 0.2, 0.0], [0.0, 0.0, 0.0], [0.0, 0.4, 0.1]])
    X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    v = M.notions(problem, X)
    assert v["lip_epsilon"] == v["ldp_epsilon_private"] == math.inf
    assert not any(math.isnan(x) for x in v.values())
    assert all(math.isfinite(v[k]) for k in v if k not in ("lip_epsilon", "ldp_epsilon_private"))


@pytest.mark.parametrize("alpha", [0, -1.0, float("nan"), "two", None])
def test_alpha_must_be_positive(alpha):
    problem = pb.load_dataset("random", n=4, seed=0)
    with pytest.raises(pb.ValidationError, match="alpha"):
        M.sibson_mi(problem, np.eye(4), alpha=alpha)


def test_bad_mapping_and_joint_are_refused():
    problem = pb.load_dataset("random", n=4, seed=0)
    with pytest.raises(pb.InvalidMappingError, match="column"):
        M.maximal_leakage(problem, np.ones((4, 4)))
    with pytest.raises(pb.InvalidMappingError, match="shape"):
        M.guessing_entropy(problem, np.eye(3))
    with pytest.raises(pb.ValidationError, match="zero total mass"):
        N.total_variation_of_joint(np.zeros((2, 3)))
    with pytest.raises(pb.ValidationError, match="non-negative"):
        N.t_closeness_of_joint(np.array([[0.5, -0.1], [0.3, 0.3]]))
    with pytest.raises(pb.ValidationError, match="2-D"):
        N.lip_epsilon_of_joint(np.ones(3))


# --- the qif package (independent implementation) ---------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_agrees_with_qif_on_random_channels(seed):
    import qif  # test-only dependency ([dev] extra), independent of privbench
    rng = np.random.default_rng(100 + seed)
    k, n = int(rng.integers(2, 6)), int(rng.integers(2, 9))
    problem = _problem(rng.dirichlet(np.ones(k * n)).reshape(k, n))
    X = _random_mapping(rng, n, float(rng.choice([0.0, 0.5])))
    p_a = problem.joint.sum(axis=1)
    C = (problem.joint / p_a[:, None]) @ X.T  # qif: rows secrets, columns observations
    C = C / C.sum(axis=1, keepdims=True)  # qif asserts rows sum to 1 exactly-ish
    bv = qif.measure.bayes_vuln
    posterior_vuln = float(M.output_joint(problem, X).max(axis=0).sum())
    assert posterior_vuln == pytest.approx(bv.posterior(p_a, C), rel=1e-9)
    assert M.min_entropy_leakage(problem, X) == pytest.approx(bv.min_entropy_leakage(p_a, C), rel=1e-9, abs=1e-12)
    assert M.maximal_leakage(problem, X) == pytest.approx(math.log2(bv.mult_capacity(C)), rel=1e-9, abs=1e-12)
    assert M.guessing_entropy(problem, X) == pytest.approx(qif.measure.guessing.posterior(p_a, C), rel=1e-9)
    assert M.mutual_information(problem, X) == pytest.approx(qif.measure.shannon.add_leakage(p_a, C),
                                                             rel=1e-9, abs=1e-12)
