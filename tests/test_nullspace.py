"""Null-space cleaning: the paper's toy example, the knapsack, e_utility <= ε, Alg. 2 and 3."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

import privbench as pb
from privbench.plugins.mechanisms._nullspace import (
    augmented_fractional_knapsack,
    clean_rows,
    eigen_basis,
    generalized_basis,
)
from privbench.plugins.metrics.records import privacy_errors, utility_errors

TOY_X = np.array([[3.0, 1.0], [4.0, 2.0], [5.0, 1.0], [6.0, 5.0]])
TOY_CLEANED = np.array([[1.0, -1.0], [1.0, -1.0], [2.0, -2.0], [0.5, -0.5]])


def toy_problem() -> pb.PrivacyProblem:
    """The toy table: y_d = x1 - x2, y_c = x1 + 2 x2."""
    y_d = TOY_X[:, 0] - TOY_X[:, 1]
    y_c = TOY_X[:, 0] + 2 * TOY_X[:, 1]
    records = pd.DataFrame({"private": [0, 0, 1, 1], "symbol": [0, 1, 2, 3],
                            "y_d": y_d, "y_c": y_c})
    return pb.PrivacyProblem.from_arrays(np.ones((2, 4)), np.ones((4, 4)) - np.eye(4),
                                         records=records, features=TOY_X, name="toy")


def test_toy_example_low_level():
    basis = eigen_basis(np.array([[1.0], [-1.0]]))
    cleaned, alpha = clean_rows(TOY_X, basis, 0.0)
    np.testing.assert_allclose(cleaned, TOY_CLEANED, atol=1e-12)
    # y_d is unchanged, and rows 1 and 2 become identical although y_c differs (5 vs 8)
    np.testing.assert_allclose(cleaned @ [1, -1], TOY_X @ [1, -1], atol=1e-12)
    np.testing.assert_array_equal(cleaned[0], cleaned[1])


def test_toy_example_through_the_mechanism():
    mech = pb.get_mechanism("nullspace", desired="y_d", confidential="y_c",
                            test_fraction=0.0, center=False)
    res = mech.solve(toy_problem(), 0.0)
    np.testing.assert_allclose(res.records["released"], TOY_CLEANED, atol=1e-9)
    np.testing.assert_allclose(res.records["ally_weights"].ravel(), [1.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(res.transform(TOY_X[:1]), TOY_CLEANED[:1], atol=1e-9)


def knapsack_brute_force(G, H, eps):
    """Best Σ β G over the LP's vertices: items fully in (β = 1), at most one fractional."""
    n, best = len(G), 0.0
    for mask in itertools.product([0, 1], repeat=n):
        beta = np.array(mask, dtype=float)
        used = beta @ H
        if used > eps + 1e-12:
            continue
        best = max(best, beta @ G)
        for k in np.flatnonzero(beta == 0):
            b = beta.copy()
            b[k] = 1.0 if H[k] == 0 else min(1.0, (eps - used) / H[k])
            best = max(best, b @ G)
    return best


@pytest.mark.parametrize("seed", range(25))
def test_knapsack_optimal_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    G = rng.random(n) * (rng.random(n) > 0.2)
    H = rng.random(n) * (rng.random(n) > 0.2)
    eps = float(rng.random() * H.sum()) if seed % 5 else 0.0
    alpha = augmented_fractional_knapsack(G, H, eps)
    assert np.all((alpha >= 0) & (alpha <= 1))
    assert alpha**2 @ H <= eps + 1e-12
    np.testing.assert_allclose(alpha**2 @ G, knapsack_brute_force(G, H, eps), atol=1e-12)
    # and against an LP solver in β = α²
    lp = linprog(-G, A_ub=H[None, :], b_ub=[eps], bounds=[(0, 1)] * n, method="highs")
    np.testing.assert_allclose(alpha**2 @ G, -lp.fun, atol=1e-9)


def test_knapsack_rows_vectorised_and_bad_input():
    rng = np.random.default_rng(3)
    G, H = rng.random((5, 4)), rng.random((5, 4))
    together = augmented_fractional_knapsack(G, H, 0.7)
    for i in range(5):
        np.testing.assert_array_equal(together[i], augmented_fractional_knapsack(G[i], H[i], 0.7))
    with pytest.raises(ValueError, match="eps"):
        augmented_fractional_knapsack(G, H, -1.0)
    with pytest.raises(ValueError, match="non-negative"):
        augmented_fractional_knapsack(-G, H, 1.0)


def test_generalized_basis_diagonalises_both_forms():
    rng = np.random.default_rng(0)
    A_d, A_c = rng.normal(size=(7, 2)), rng.normal(size=(7, 2))
    basis = generalized_basis(A_d, A_c)
    V = basis.vectors
    np.testing.assert_allclose(V @ basis.coords, np.eye(7), atol=1e-10)
    np.testing.assert_allclose(V.T @ A_d @ A_d.T @ V, np.diag(basis.lam_d), atol=1e-10)
    np.testing.assert_allclose(V.T @ A_c @ A_c.T @ V, np.diag(basis.lam_c), atol=1e-10)
    # generalized eigenvalue equation B_d v = γ B_c v where λ^c > 0
    for j in np.flatnonzero(basis.lam_c > 1e-9):
        gamma = basis.lam_d[j] / basis.lam_c[j]
        v = V[:, j]
        np.testing.assert_allclose(A_d @ (A_d.T @ v), gamma * (A_c @ (A_c.T @ v)), atol=1e-8)


def test_degenerate_predictors_clean_everything():
    Z = np.random.default_rng(1).normal(size=(4, 3))
    for basis in (eigen_basis(np.zeros((3, 1))), generalized_basis(np.zeros((3, 1)),
                                                                   np.zeros((3, 2)))):
        cleaned, alpha = clean_rows(Z, basis, 0.0)
        np.testing.assert_allclose(cleaned, 0.0, atol=1e-12)
        assert np.all(alpha == 1.0)
    # only A_c vanishes: Algorithm 2 has nothing to protect against, yet still removes
    # the exact null space of A_d at no utility cost
    A_d = np.array([[1.0], [0.0], [0.0]])
    cleaned, _ = clean_rows(Z, generalized_basis(A_d, np.zeros((3, 1))), 0.0)
    np.testing.assert_allclose(cleaned[:, 1:], 0.0, atol=1e-12)
    np.testing.assert_allclose(cleaned[:, 0], Z[:, 0], atol=1e-12)


@pytest.mark.parametrize("variant", [1, 2])
@pytest.mark.parametrize("eps", [0.0, 1e-3, 0.01, 0.1, 1.0])
def test_e_utility_within_budget_for_every_record(variant, eps):
    problem = pb.load_dataset("linear_gaussian", n_samples=400, n_features=12, n_labels=4,
                              n_desired=2, seed=1)
    res = pb.get_mechanism("nullspace", variant=variant, test_fraction=0.25).solve(
        problem, eps, seed=0)
    rec = res.records
    e = utility_errors({**rec, "test": np.arange(len(rec["original"]))})  # every row
    if eps > 0:
        assert np.all(e <= eps), e.max()
        # the budget is used: a row below ε has had every direction removed (x̃ = μ)
        below = e < eps * (1 - 1e-6)
        np.testing.assert_allclose(rec["released"][below],
                                   np.broadcast_to(rec["offset"], rec["released"][below].shape),
                                   atol=1e-8)
    else:
        assert e.max() < 1e-20


def test_variant2_maximises_the_cleaners_privacy_error():
    """Theorem 4: against the estimated A_c, Algorithm 2 beats Algorithm 1 at equal ε."""
    problem = pb.load_dataset("linear_gaussian", n_samples=600, n_features=6, n_labels=5,
                              n_desired=2, spectrum_decay=0.5, seed=2)
    out = {}
    for variant in (1, 2):
        rec = pb.get_mechanism("nullspace", variant=variant).solve(problem, 0.05, seed=0).records
        out[variant] = privacy_errors(rec, attack=False)["model_error"].mean()
    assert out[2] >= out[1] - 1e-12
    assert out[2] > 0


def test_attack_metric_and_complete_privacy(host):
    problem = pb.load_dataset("linear_gaussian", n_samples=500, seed=3)
    res = pb.get_mechanism("nullspace").solve(problem, 0.01, seed=1)
    from privbench.running.runner import compute_metrics

    values = compute_metrics(problem, res, delta=0.01, seed=1)
    for key in ("e_utility", "e_utility_max", "e_privacy", "complete_privacy_rate",
                "e_privacy_attack", "complete_privacy_rate_attack"):
        assert key in values, key
    assert values["e_utility_max"] <= 0.01
    assert values["e_utility_within_budget"] == 1.0
    assert 0 <= values["complete_privacy_rate"] <= 1
    # cleaning hides something: the adversary's error grows versus the raw features
    raw = privacy_errors({**res.records, "released": res.records["original"]}, attack=False)
    assert values["e_privacy"] > raw["error"].mean()


def test_skip_and_errors():
    mech = pb.get_mechanism("nullspace")
    no_features = pb.load_dataset("synthetic", m=3)
    skip, reason = mech.skip(no_features)
    assert skip and "features" in reason
    problem = toy_problem()
    skip, reason = pb.get_mechanism("nullspace", desired="nope").skip(problem)
    assert skip and "nope" in reason
    with pytest.raises(pb.ValidationError, match="variant"):
        pb.get_mechanism("nullspace", variant=3, desired="y_d").solve(problem, 0.1)
    with pytest.raises(pb.ValidationError, match="both desired and confidential"):
        pb.get_mechanism("nullspace", desired="y_d", confidential="y_d",
                         test_fraction=0.0).solve(problem, 0.1)


def test_seeded_split_is_reproducible():
    problem = pb.load_dataset("linear_gaussian", n_samples=300, seed=4)
    a = pb.get_mechanism("nullspace").solve(problem, 0.01, seed=7).records
    b = pb.get_mechanism("nullspace").solve(problem, 0.01, seed=7).records
    np.testing.assert_array_equal(a["test"], b["test"])
    np.testing.assert_array_equal(a["released"], b["released"])


def test_linear_gaussian_generator():
    a = pb.load_dataset("linear_gaussian", n_samples=50, n_features=5, n_labels=3, seed=2)
    b = pb.load_dataset("linear_gaussian", n_samples=50, n_features=5, n_labels=3, seed=2)
    c = pb.load_dataset("linear_gaussian", n_samples=50, n_features=5, n_labels=3, seed=3)
    np.testing.assert_array_equal(a.features, b.features)
    assert not np.array_equal(a.features, c.features)
    assert a.features.shape == (50, 5)
    assert a.targets.desired == ["y0"] and a.targets.confidential == ["y1", "y2"]
    # the labels are linear in the features up to the noise
    Y = a.records[["y0", "y1", "y2"]].to_numpy()
    resid = Y - a.features @ a.targets.true_weights
    assert resid.std() == pytest.approx(0.1, rel=0.3)
    # the prior counts every record once
    assert a.joint.sum() == pytest.approx(1.0)
    with pytest.raises(pb.ValidationError, match="n_desired"):
        pb.load_dataset("linear_gaussian", n_labels=2, n_desired=2)
    with pytest.raises(pb.ValidationError, match="spectrum_decay"):
        pb.load_dataset("linear_gaussian", spectrum_decay=0)


def test_runs_through_the_runner(host):
    from privbench.running.runner import RunSpec, execute_run

    rec = execute_run(RunSpec("nullspace", "linear_gaussian", 0.05, {"variant": 2},
                              {"n_samples": 300, "seed": 1}, seed=0))
    assert rec["status"] == "ok", rec["error"]
    assert rec["metrics"]["e_utility_max"] <= 0.05
    assert rec["distortion"] == pytest.approx(rec["metrics"]["e_utility"])
    skipped = execute_run(RunSpec("nullspace", "synthetic", 0.05, {}, {"m": 2}))
    assert skipped["status"] == "skip" and "features" in skipped["error"]


@pytest.mark.realdata
def test_census_runs_with_targets_from_the_records(real_data_dir, host, monkeypatch):
    from privbench.running.runner import RunSpec, execute_run

    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(real_data_dir))
    params = {"variant": 2, "desired": "education-num;hours-per-week", "confidential": "private"}
    rec = execute_run(RunSpec("nullspace", "census", 0.1, params, {"top_k": 300}, seed=0))
    assert rec["status"] == "ok", rec["error"]
    m = rec["metrics"]
    assert m["e_utility_max"] <= 0.1 and m["e_utility_within_budget"] == 1.0
    assert m["n_features"] == 94 and m["null_space_dim"] == 92
    # Theorem 4: against the cleaner's own estimate of A_c the adversary is reduced to
    # (no better than) the mean prediction on every test record
    assert m["complete_privacy_rate"] == 1.0
    assert 0 < m["complete_privacy_rate_attack"] < 1
    skipped = execute_run(RunSpec("nullspace", "census", 0.1, {}, {"top_k": 300}))
    assert skipped["status"] == "skip" and "desired" in skipped["error"]
