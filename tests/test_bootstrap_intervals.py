"""Bootstrap intervals over users: the resampling, the vectorised notions, the
coverage of the interval against a simulation, and the paired comparison of two runs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import privbench as pb
from privbench.plugins.metrics import bootstrap as bs
from privbench.results.significance import NOT_DISTINGUISHABLE, paired_difference, replicates

RNG = np.random.default_rng(20261125)


def sampled_problem(P: np.ndarray, users: int, rng: np.random.Generator,
                    outside: float = 0.0) -> pb.PrivacyProblem | None:
    """A problem estimated from ``users`` draws of the true joint P (plus users outside
    the alphabet with probability ``outside``), with one record per user."""
    A, n = P.shape
    cells = np.append(P.ravel() * (1 - outside), np.full(A, outside / A))
    counts = rng.multinomial(users, cells / cells.sum())
    codes = np.repeat(np.arange(cells.size), counts)
    private = np.where(codes < A * n, codes // n, codes - A * n)
    symbol = np.where(codes < A * n, codes % n, -1)
    joint = np.zeros((A, n))
    np.add.at(joint, (private[symbol >= 0], symbol[symbol >= 0]), 1.0)
    if (joint.sum(axis=0) == 0).any():
        return None
    D = 1.0 - np.eye(n)
    return pb.PrivacyProblem.from_arrays(joint, D, records=pd.DataFrame(
        {"private": private, "symbol": symbol}))


def random_mapping(n: int, rng: np.random.Generator) -> np.ndarray:
    return 0.5 * np.eye(n) + 0.5 * rng.dirichlet(np.full(n, 0.3), size=n).T


def test_user_cells_count_records_inside_and_outside_the_alphabet():
    P = RNG.dirichlet(np.ones(8)).reshape(2, 4)
    prob = sampled_problem(P, 500, RNG, outside=0.2)
    cells = bs.user_cells(prob).reshape(2, 5)
    rec = prob.records
    assert cells.sum() == len(rec) == 500
    assert cells[:, 4].sum() == (rec["symbol"] < 0).sum() > 0
    assert np.allclose(cells[:, :4] / cells[:, :4].sum(), prob.joint)


def test_synthetic_problems_have_no_users_and_no_intervals():
    problem = pb.load_dataset("synthetic", m=3)
    assert bs.user_cells(problem) is None
    assert not bs.BootstrapIntervals().applies(problem, pb.get_mechanism("identity")
                                               .solve(problem, delta=0.0))


def test_vectorised_values_equal_the_reference_metrics_per_resample():
    P = RNG.dirichlet(np.ones(3 * 7)).reshape(3, 7)
    prob = sampled_problem(P, 2000, RNG, outside=0.1)
    X = random_mapping(7, RNG)
    joints = bs.resampled_joints(bs.user_cells(prob), 3, np.random.default_rng(3), 5)
    values = bs._evaluate(bs.notion_functions(), pb.metrics._as_mapping(X),
                          bs._column_costs(prob, pb.metrics._as_mapping(X)), joints)
    for k in range(5):
        ref = pb.PrivacyProblem.from_arrays(joints[k], 1.0 - np.eye(7))
        assert values["mi_bits"][k] == pytest.approx(pb.metrics.mutual_information(ref, X),
                                                     abs=1e-12)
        assert values["distortion"][k] == pytest.approx(pb.metrics.expected_distortion(ref, X),
                                                        abs=1e-12)
    centre = bs.estimates(prob, X)
    assert centre["mi_bits"] == pytest.approx(pb.metrics.mutual_information(prob, X), abs=1e-12)


def test_resampled_joints_average_to_the_sample_joint():
    P = RNG.dirichlet(np.ones(10)).reshape(2, 5)
    prob = sampled_problem(P, 3000, RNG, outside=0.3)
    joints = bs.resampled_joints(bs.user_cells(prob), 2, np.random.default_rng(0), 4000)
    assert np.allclose(joints.sum(axis=(1, 2)), 1.0)
    assert np.allclose(joints.mean(axis=0), prob.joint, atol=3e-3)


@pytest.mark.slow
def test_interval_covers_the_true_leakage_in_about_95_percent_of_samples():
    """Draw 200 samples of 3,000 users from a known joint; the 95 % interval of the
    plug-in I(A; B̂) of a fixed mapping must cover the true I(A; B̂) in 88-99 % of them
    (Monte Carlo sd of the coverage at 200 draws: 1.5 points)."""
    rng = np.random.default_rng(7)
    P = rng.dirichlet(np.full(24, 0.7)).reshape(2, 12)
    X = random_mapping(12, rng)
    truth = pb.metrics.mutual_information_of_joint((X @ P.T).T)
    covered = drawn = 0
    while drawn < 200:
        prob = sampled_problem(P, 3000, rng)
        if prob is None:
            continue
        drawn += 1
        samples = bs.bootstrap_samples(prob, X, resamples=200, seed=drawn)
        lo, hi = bs.basic_interval(bs.estimates(prob, X)["mi_bits"], samples["mi_bits"])
        covered += lo <= truth <= hi
    assert 0.88 <= covered / drawn <= 0.99


def test_basic_interval_is_never_nan_and_keeps_infinity():
    assert bs.basic_interval(0.0, np.zeros(50)) == [0.0, 0.0]
    lo, hi = bs.basic_interval(1.0, np.array([0.5, np.inf, 2.0]))
    assert hi == float("inf") and lo == 0.5


def test_paired_difference_of_identical_mappings_is_not_distinguishable():
    P = RNG.dirichlet(np.ones(12)).reshape(2, 6)
    prob = sampled_problem(P, 800, RNG)
    X = random_mapping(6, RNG)
    metric = bs.BootstrapIntervals()
    result = pb.MechanismResult("mapping", mapping=X)
    a = metric.compute(prob, result, delta=0.0)
    b = metric.compute(prob, result, delta=0.0)
    diff = paired_difference(a, b, "mi_bits")
    assert diff is not None and diff.low == diff.high == 0.0
    assert diff.verdict() == NOT_DISTINGUISHABLE


def test_paired_difference_detects_a_real_gap_and_refuses_unpaired_runs():
    P = np.array([[0.3, 0.05, 0.1, 0.05], [0.05, 0.3, 0.05, 0.1]])
    prob = sampled_problem(P, 2000, RNG)
    leaky, private = np.eye(4), np.full((4, 4), 0.25)
    metric = bs.BootstrapIntervals()
    a = metric.compute(prob, pb.MechanismResult("mapping", mapping=private), delta=0.0)
    b = metric.compute(prob, pb.MechanismResult("mapping", mapping=leaky), delta=0.0)
    diff = paired_difference(a, b, "mi_bits")
    assert diff.significant and diff.verdict(better_is_lower=True) == "a better"
    other = bs.BootstrapIntervals(seed=1).compute(prob, pb.MechanismResult("mapping", mapping=leaky),
                                                  delta=0.0)
    assert paired_difference(a, other, "mi_bits") is None  # different draws: no pairing


def test_replicates_summary():
    summary = replicates([0.1, 0.2, None, 0.3])
    assert summary.count == 3 and summary.mean == pytest.approx(0.2)
    assert summary.sd == pytest.approx(0.1)
    assert "n=3" in str(summary)
    assert replicates([None]) is None


@pytest.mark.slow
def test_run_json_carries_intervals_on_a_records_dataset(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "privbench", "run", "-m", "expmec", "-d",
         "politics_tv_surrogate", "--delta", "0.5", "--json", "--full", "--no-store"],
        capture_output=True, text=True, check=True, cwd=tmp_path)  # --full: with samples
    record = json.loads(out.stdout.splitlines()[0])
    lo, hi = record["metrics"]["mi_bits_ci95"]
    assert 0.0 <= lo <= hi and hi - lo < 0.5
    lo, hi = record["metrics"]["distortion_ci95"]
    assert lo <= record["distortion"] + 1e-9 and record["distortion"] <= hi + 1e-9
    assert len(record["metrics"]["bootstrap"]["samples"]["mi_bits"]) == 200


def test_bad_resamples_is_refused_at_plan_time(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "privbench", "run", "-m", "identity", "-d",
         "politics_tv_surrogate", "--delta", "0", "-M", "bootstrap:resamples=3", "--no-store"],
        capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2 and "resamples" in out.stderr


def test_vectorised_notions_equal_the_per_joint_functions() -> None:
    """Every notion the bootstrap evaluates over a stack of resampled joints equals
    ``pb.metrics.JOINT_NOTIONS`` joint by joint (to 1e-12), on stacks with private values
    or outputs without mass and zero cells (LIP and LDP ε infinite there), unnormalised."""
    rng = np.random.default_rng(39)
    assert set(bs.VECTORISED) == set(pb.metrics.JOINT_NOTIONS)
    infinite = dict.fromkeys(bs.VECTORISED, 0)
    for trial in range(120):
        A, n = int(rng.integers(2, 6)), int(rng.integers(2, 12))
        Q = rng.dirichlet(np.full(A * n, 0.5), size=8).reshape(8, A, n)
        Q[rng.random(Q.shape) < 0.15] = 0.0
        if trial % 3 == 0:
            Q[:, rng.integers(A), :] = 0.0
        if trial % 4 == 0:
            Q[:, :, rng.integers(n)] = 0.0
        Q = Q[Q.sum(axis=(1, 2)) > 0] * rng.uniform(0.5, 2.0)
        for name, fn in bs.VECTORISED.items():
            got = fn(Q)
            want = np.array([pb.metrics.JOINT_NOTIONS[name](q) for q in Q])
            assert np.array_equal(np.isinf(got), np.isinf(want)), name
            infinite[name] += int(np.isinf(want).sum())
            fin = np.isfinite(want)
            assert got[fin] == pytest.approx(want[fin], rel=1e-12, abs=1e-12), name
    assert infinite["lip_epsilon"] > 0 and infinite["ldp_epsilon_private"] > 0


def test_compiled_notions_on_an_empty_joint_and_a_transposed_stack() -> None:
    """A resample without users (possible for the inner Poisson draws) gets NaN where a
    notion divides by its empty prior (min-entropy leakage, total variation, guessing
    entropy; calibrated_interval then falls back) and 0 elsewhere, as the numpy forms the
    kernels replaced did; its neighbours in the stack are unaffected, and a strided stack
    (the output joints of a sparse product come transposed) gives the same values."""
    rng = np.random.default_rng(4)
    Q = rng.dirichlet(np.ones(3 * 7), size=3).reshape(3, 3, 7)
    Q[1] = 0.0
    nan_when_empty = {"min_entropy_leakage", "total_variation", "guessing_entropy"}
    strided = np.asfortranarray(Q)
    assert not strided.flags.c_contiguous
    for name, fn in bs.VECTORISED.items():
        got = fn(Q)
        if name in nan_when_empty:
            assert np.isnan(got[1]), name
        else:
            assert got[1] == 0.0, name
        for b in (0, 2):
            assert got[b] == pytest.approx(pb.metrics.JOINT_NOTIONS[name](Q[b]), rel=1e-12), name
        np.testing.assert_array_equal(fn(strided), got)
