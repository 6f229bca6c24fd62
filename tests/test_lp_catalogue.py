"""The catalogue's LP mechanisms and the constant baseline, against independent formulations.

Each LP mechanism's optimum is compared with a cvxpy program written here from the
definitions (X an (n, n) variable, W = P(B|A) Xᵀ), on random instances; the returned
mappings are checked against the constraints they promise; small cases are worked by hand.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import expected_distortion, mutual_information
from privbench.testing import check_mechanism

cp = pytest.importorskip("cvxpy")

LP_MECHANISMS = ("maxleak_optimal", "map_optimal", "lip_optimal", "perfect_privacy")
SEEDS = range(6)


def instance(seed: int) -> tuple[pb.PrivacyProblem, float]:
    """A random problem (n <= 20, |A| <= 3, random distortion) and a budget strictly
    between the least distortion and the best constant's distortion."""
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(4, 21))
    k = int(rng.integers(2, 4))
    joint = rng.dirichlet(np.full(n * k, 0.7)).reshape(k, n)
    D = rng.random((n, n)) * rng.choice([1.0, 3.0])
    if seed % 2 == 0:
        np.fill_diagonal(D, 0.0)
    p = joint.sum(axis=0)
    least = float((D * p).min(axis=0).sum())
    const = float((D @ p).min())
    delta = least + rng.uniform(0.2, 0.6) * (const - least)
    return pb.PrivacyProblem.from_arrays(joint, D, name=f"lpcat-{seed}"), delta


def reference(name: str, problem: pb.PrivacyProblem, delta: float, notion: str = "lip") -> float:
    """The mechanism's LP optimum, written directly in cvxpy (Clarabel)."""
    n, joint, D = problem.n, problem.joint, problem.distortion.to_dense()
    p = problem.p_b
    cond = joint / problem.p_a[:, None]
    X = cp.Variable((n, n), nonneg=True)
    W = cond @ X.T  # W[a, i] = p(b̂_i | a)
    q = X @ p       # p(b̂_i)
    dist = cp.sum(cp.multiply(D * p[None, :], X))
    cons = [cp.sum(X, axis=0) == 1]
    if name == "maxleak_optimal":
        objective, cons = cp.sum(cp.max(W, axis=0)), cons + [dist <= delta]
    elif name == "map_optimal":
        objective, cons = cp.sum(cp.max(joint @ X.T, axis=0)), cons + [dist <= delta]
    elif name == "perfect_privacy":
        objective = dist
        cons += [W[a, :] == W[0, :] for a in range(1, W.shape[0])]
    elif notion == "lip":
        objective = dist
        for a in range(W.shape[0]):
            cons += [W[a, :] <= math.exp(delta) * q, W[a, :] >= math.exp(-delta) * q]
    else:
        objective = dist
        k = W.shape[0]
        cons += [W[a, :] <= math.exp(delta) * W[b, :] for a in range(k) for b in range(k) if a != b]
    prob = cp.Problem(cp.Minimize(objective), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == cp.OPTIMAL
    return float(prob.value)


def achieved(name: str, problem: pb.PrivacyProblem, X: np.ndarray) -> float:
    """The objective of ``name`` evaluated on the returned mapping."""
    cond = problem.joint / problem.p_a[:, None]
    if name == "maxleak_optimal":
        return float((cond @ X.T).max(axis=0).sum())
    if name == "map_optimal":
        return float((problem.joint @ X.T).max(axis=0).sum())
    return expected_distortion(problem, X)


def dense(result: pb.MechanismResult, n: int) -> np.ndarray:
    return pb.validate_mapping(result.mapping, n).toarray()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["maxleak_optimal", "map_optimal", "perfect_privacy"])
def test_budget_lps_match_cvxpy(name: str, seed: int) -> None:
    problem, delta = instance(seed)
    res = pb.get_mechanism(name).solve(problem, delta=delta)
    X = dense(res, problem.n)
    want = reference(name, problem, delta)
    assert achieved(name, problem, X) == pytest.approx(want, abs=1e-6)
    assert res.stats["lp_objective"] == pytest.approx(want, abs=1e-6)
    if name != "perfect_privacy":
        assert expected_distortion(problem, X) <= delta * (1 + 1e-12)  # after the repair


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("notion", ["lip", "ldp"])
def test_lip_and_ldp_match_cvxpy_and_hold(notion: str, seed: int) -> None:
    problem, _ = instance(seed)
    eps = [0.05, 0.3, 1.0][seed % 3]
    res = pb.get_mechanism("lip_optimal", notion=notion).solve(problem, delta=eps)
    X = dense(res, problem.n)
    want = reference("lip_optimal", problem, eps, notion)
    assert expected_distortion(problem, X) == pytest.approx(want, abs=1e-6)
    key = "lip_epsilon_nats" if notion == "lip" else "ldp_epsilon_nats"
    assert res.stats[key] <= eps + 1e-6
    W = (problem.joint / problem.p_a[:, None]) @ X.T
    q = X @ problem.p_b
    if notion == "lip":
        assert np.all(W <= math.exp(eps) * q + 1e-9)
        assert np.all(W >= math.exp(-eps) * q - 1e-9)
    else:
        assert np.all(W[:, None, :] <= math.exp(eps) * W[None, :, :] + 1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_perfect_privacy_is_independent_and_no_dearer_than_constant(seed: int) -> None:
    problem, _ = instance(seed)
    res = pb.get_mechanism("perfect_privacy").solve(problem, delta=0.0)
    X = dense(res, problem.n)
    W = (problem.joint / problem.p_a[:, None]) @ X.T
    assert np.abs(W - W[0]).max() < 1e-8
    assert res.stats["dependence_max"] < 1e-8
    assert mutual_information(problem, X) < 1e-8
    const = pb.get_mechanism("constant").solve(problem, delta=0.0)
    assert expected_distortion(problem, X) <= expected_distortion(problem, const.mapping) + 1e-9


@pytest.mark.parametrize("seed", SEEDS)
def test_constant_is_the_brute_force_argmin(seed: int) -> None:
    problem, _ = instance(seed)
    n = problem.n
    costs = []
    for i in range(n):
        X = np.zeros((n, n))
        X[i, :] = 1.0
        costs.append(expected_distortion(problem, X))
    res = pb.get_mechanism("constant").solve(problem, delta=1.0)
    X = dense(res, n)
    best = int(np.argmin(costs))
    assert res.stats["output"] == best
    assert np.array_equal(X[best], np.ones(n))
    assert expected_distortion(problem, X) == pytest.approx(min(costs), rel=1e-12)
    assert mutual_information(problem, X) == pytest.approx(0.0, abs=1e-12)


def test_zero_epsilon_lip_and_ldp_are_perfect_privacy() -> None:
    problem, _ = instance(3)
    pp = expected_distortion(problem, pb.get_mechanism("perfect_privacy").solve(problem, 0.0).mapping)
    for notion in ("lip", "ldp"):
        res = pb.get_mechanism("lip_optimal", notion=notion).solve(problem, delta=0.0)
        assert expected_distortion(problem, res.mapping) == pytest.approx(pp, abs=1e-7)


def test_identity_joint_hand_examples() -> None:
    """A = B binary, uniform, Hamming: with X = [[1-u, v], [u, 1-v]] and u + v <= 1,
    Σ_b̂ max_a W = 2 - u - v and E[d] = (u + v) / 2, so the least maximal leakage at Δ <= 1/2
    is log2(2 - 2Δ) and the least MAP success 1 - Δ; independence forces equal columns,
    a constant output."""
    problem = pb.PrivacyProblem.from_arrays(np.eye(2) / 2, 1.0 - np.eye(2))
    for delta in (0.1, 0.25, 0.4):
        ml = pb.get_mechanism("maxleak_optimal").solve(problem, delta=delta)
        assert ml.stats["maxleak_bits"] == pytest.approx(math.log2(2 - 2 * delta), abs=1e-9)
        mp = pb.get_mechanism("map_optimal").solve(problem, delta=delta)
        assert mp.stats["map_vulnerability"] == pytest.approx(1 - delta, abs=1e-9)
    three = pb.PrivacyProblem.from_arrays(np.diag([0.5, 0.3, 0.2]),
                                          [[0, 1, 4], [1, 0, 1], [4, 1, 0]])
    X = dense(pb.get_mechanism("perfect_privacy").solve(three, delta=0.0), 3)
    assert np.allclose(X, X[:, :1])  # every column the same distribution
    const = pb.get_mechanism("constant").solve(three, delta=0.0)
    assert const.stats["output"] == 1  # costs 0.5, 0.7 (row 1: .5 + .2), 2.3
    assert np.allclose(X, dense(const, 3))


def test_maxleak_and_map_reach_zero_leakage_at_the_constant_budget() -> None:
    problem, _ = instance(1)
    const = expected_distortion(problem, pb.get_mechanism("constant").solve(problem, 0.0).mapping)
    ml = pb.get_mechanism("maxleak_optimal").solve(problem, delta=const)
    assert ml.stats["maxleak_bits"] == pytest.approx(0.0, abs=1e-9)
    mp = pb.get_mechanism("map_optimal").solve(problem, delta=const)
    assert mp.stats["map_vulnerability"] == pytest.approx(problem.p_a.max(), abs=1e-9)


@pytest.mark.parametrize("backend", ["scipy", "cvxpy"])
def test_other_backends_agree_with_highs(backend: str) -> None:
    problem, delta = instance(4)
    for name in LP_MECHANISMS:
        d = 0.3 if name == "lip_optimal" else delta
        ref = pb.get_mechanism(name).solve(problem, delta=d).stats["lp_objective"]
        got = pb.get_mechanism(name, lp_backend=backend).solve(problem, delta=d)
        assert got.stats["lp_objective"] == pytest.approx(ref, abs=1e-6)


def test_bad_requests_are_refused_with_the_reason() -> None:
    problem, _ = instance(0)
    with pytest.raises(pb.ValidationError, match="restricted masters only"):
        pb.get_mechanism("maxleak_optimal", lp_backend="mckp")
    with pytest.raises(pb.ValidationError, match="notion must be one of lip, ldp"):
        pb.get_mechanism("lip_optimal", notion="dp")
    with pytest.raises(pb.ValidationError, match="max_n must be an integer"):
        pb.get_mechanism("perfect_privacy", max_n=0)
    with pytest.raises(pb.ValidationError, match=r"n = \d+ exceeds max_n = 3"):
        pb.get_mechanism("map_optimal", max_n=3).solve(problem, delta=1.0)
    positive = pb.PrivacyProblem.from_arrays(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(pb.ValidationError, match="below the least expected distortion"):
        pb.get_mechanism("maxleak_optimal").solve(positive, delta=0.5)


def test_zero_probability_symbols_are_released_unchanged() -> None:
    joint = np.array([[0.3, 0.0, 0.2, 0.1], [0.1, 0.0, 0.1, 0.2], [0.0, 0.0, 0.0, 0.0]])
    D = 1.0 - np.eye(4)
    problem = pb.PrivacyProblem.from_arrays(joint, D)
    for name in LP_MECHANISMS:
        X = dense(pb.get_mechanism(name).solve(problem, delta=0.2), 4)
        assert X[1, 1] == 1.0


@pytest.mark.parametrize("name", ("constant",) + LP_MECHANISMS)
def test_check_mechanism_passes(name: str) -> None:
    summaries = check_mechanism(pb.get_host().get("mechanism", name))
    assert summaries
    if name in ("constant", "perfect_privacy"):
        assert max(s["mi_bits"] for s in summaries) < 1e-8


def test_runner_reads_delta_by_role() -> None:
    """lip_optimal reads Δ as ε, so a run whose E[d] exceeds Δ is not marked invalid."""
    rec = pb.execute_run({"mechanism": "lip_optimal", "dataset": "synthetic",
                          "dataset_params": {"m": 3}, "delta": 0.0})
    assert rec["status"] == "ok", rec["error"]
    assert rec["distortion"] > 0.0
    assert rec["mi_bits"] == pytest.approx(0.0, abs=1e-8)
    rec = pb.execute_run({"mechanism": "maxleak_optimal", "dataset": "synthetic",
                          "dataset_params": {"m": 3}, "delta": 0.5})
    assert rec["status"] == "ok", rec["error"]
    assert rec["distortion"] <= 0.5
    assert rec["metrics"]["maxleak_bits"] >= 0.0


def test_lp_backend_option_reaches_the_lp_mechanisms(capsys, db_path) -> None:
    """``--lp-backend`` sets the mechanism's parameter; a master-only backend is exit 2."""
    from privbench.cli import main

    rc = main(["run", "-m", "perfect_privacy", "-d", "synthetic:m=3", "--delta", "0",
               "--lp-backend", "scipy", "--json", "--db", str(db_path)])
    assert rc == 0
    rec = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rec["status"] == "ok"
    assert rec["params"] == {"lp_backend": "scipy"}  # a parameter, not a record field
    rc = main(["run", "-m", "map_optimal", "-d", "synthetic:m=3", "--delta", "1",
               "--lp-backend", "mckp", "--db", str(db_path)])
    assert rc == 2
    assert "solves restricted masters only" in capsys.readouterr().err
