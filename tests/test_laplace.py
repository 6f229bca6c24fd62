"""Laplace noise on features, calibrated to the e_utility of a null-space run (Figure 7)."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.plugins.metrics.records import privacy_errors, utility_errors


@pytest.fixture(scope="module")
def problem() -> pb.PrivacyProblem:
    return pb.load_dataset("linear_gaussian", n_samples=600, n_features=12, n_labels=4, seed=5)


@pytest.mark.parametrize("variant", [1, 2])
def test_matches_the_nullspace_e_utility(problem, variant):
    ns = pb.get_mechanism("nullspace", variant=variant).solve(problem, 0.02, seed=3)
    lp = pb.get_mechanism("laplace", variant=variant).solve(problem, 0.02, seed=3)
    target = utility_errors(ns.records).mean()
    assert lp.stats["target_e_utility"] == pytest.approx(target, rel=1e-12)
    assert utility_errors(lp.records).mean() == pytest.approx(target, rel=1e-9)
    np.testing.assert_array_equal(lp.records["test"], ns.records["test"])


def test_budget_match_and_fixed_scale(problem):
    res = pb.get_mechanism("laplace", match="budget").solve(problem, 0.05, seed=0)
    assert utility_errors(res.records).mean() == pytest.approx(0.05, rel=1e-9)
    fixed = pb.get_mechanism("laplace", scale=0.3).solve(problem, 0.05, seed=0)
    noise = fixed.records["released"] - fixed.records["original"]
    # Laplace(0, b): mean |z| = b, var = 2 b^2
    assert np.abs(noise).mean() == pytest.approx(0.3, rel=0.05)
    assert noise.var() == pytest.approx(2 * 0.3**2, rel=0.1)
    assert fixed.stats["scale"] == 0.3


def test_nullspace_gives_better_privacy_at_equal_utility(problem):
    """The paper's Figure 7 finding, on generated data."""
    ns = pb.get_mechanism("nullspace").solve(problem, 0.01, seed=0)
    lp = pb.get_mechanism("laplace").solve(problem, 0.01, seed=0)
    e_ns = privacy_errors(ns.records, attack=False)
    e_lp = privacy_errors(lp.records, attack=False)
    assert e_ns["error"].mean() > e_lp["error"].mean()
    cp_ns = np.mean(e_ns["error"] >= e_ns["baseline_error"])
    cp_lp = np.mean(e_lp["error"] >= e_lp["baseline_error"])
    assert cp_ns > cp_lp


def test_seeded_and_errors(problem):
    a = pb.get_mechanism("laplace", match="budget").solve(problem, 0.05, seed=9)
    b = pb.get_mechanism("laplace", match="budget").solve(problem, 0.05, seed=9)
    np.testing.assert_array_equal(a.records["released"], b.records["released"])
    with pytest.raises(pb.ValidationError, match="match"):
        pb.get_mechanism("laplace", match="paper").solve(problem, 0.05)
    with pytest.raises(pb.ValidationError, match="scale"):
        pb.get_mechanism("laplace", scale=-1.0).solve(problem, 0.05)
    skip, reason = pb.get_mechanism("laplace").skip(pb.load_dataset("synthetic", m=2))
    assert skip and "features" in reason


@pytest.mark.realdata
def test_census(real_data_dir):
    census = pb.load_dataset("census", data_dir=str(real_data_dir))
    kw = {"desired": "education-num;hours-per-week", "confidential": "private"}
    ns = pb.get_mechanism("nullspace", **kw).solve(census, 0.5, seed=0)
    lp = pb.get_mechanism("laplace", **kw).solve(census, 0.5, seed=0)
    assert utility_errors(ns.records).max() <= 0.5
    assert utility_errors(lp.records).mean() == pytest.approx(utility_errors(ns.records).mean(),
                                                              rel=1e-9)
