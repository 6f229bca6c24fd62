"""Attack metrics against hand computations on tiny problems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.plugins.metrics._release import sample_release, symbol_codes
from privbench.plugins.metrics.attacks import (
    LogisticAttack,
    NaiveBayesAttack,
    PosteriorAttack,
    exact_roc,
    map_accuracy,
)

# p(a, b): rows a = 0, 1; p(a = 1 | b) = 0.25, 0.5, 0.75
JOINT = np.array([[0.3, 0.1, 0.1], [0.1, 0.1, 0.3]])
# by hand: outputs sorted by score 0.75, 0.5, 0.25 give TPR 0, .6, .8, 1 and FPR 0, .2, .4, 1
# AUC = .2 * .6 / 2 + .2 * 1.4 / 2 + .6 * 1.8 / 2 = .06 + .14 + .54
HAND_AUC = 0.74


def tiny_problem(scale: int = 1000) -> pb.PrivacyProblem:
    """The prior above with records in exactly its proportions (10 * scale users)."""
    counts = np.rint(JOINT * 10 * scale).astype(int)
    rows = [(a, j) for a in range(2) for j in range(3) for _ in range(counts[a, j])]
    records = pd.DataFrame(rows, columns=["private", "symbol"])
    return pb.PrivacyProblem.from_arrays(
        joint=JOINT, distortion=1 - np.eye(3), records=records, private_labels=(0, 1),
    )


def mapping_result(X: np.ndarray) -> pb.MechanismResult:
    return pb.MechanismResult(kind="mapping", mapping=sp.csc_array(X))


def test_exact_roc_matches_hand_computation() -> None:
    fpr, tpr, auc = exact_roc(JOINT)
    assert fpr.tolist() == pytest.approx([0, 0.2, 0.4, 1])
    assert tpr.tolist() == pytest.approx([0, 0.6, 0.8, 1])
    assert auc == pytest.approx(HAND_AUC)
    # ties: one output with both values -> a single step, AUC 1/2
    assert exact_roc(np.array([[0.3], [0.7]]))[2] == pytest.approx(0.5)
    assert map_accuracy(JOINT) == pytest.approx(0.3 + 0.1 + 0.3)


def test_posterior_attack_on_identity_and_constant_mappings() -> None:
    problem = tiny_problem(1)
    metric = PosteriorAttack()
    ident = metric.compute(problem, mapping_result(np.eye(3)), delta=0.0)
    assert ident["posterior_auc"] == pytest.approx(HAND_AUC)
    assert ident["map_accuracy"] == pytest.approx(0.7)
    assert ident["map_accuracy_prior"] == pytest.approx(0.7)
    const = metric.compute(problem, mapping_result(np.array([[1.0] * 3, [0] * 3, [0] * 3])),
                           delta=1.0)
    assert const["posterior_auc"] == pytest.approx(0.5)
    assert const["map_accuracy"] == pytest.approx(0.5)  # max_a p(a)


def test_sample_release_is_seeded_and_follows_the_mapping() -> None:
    X = sp.csc_array(np.array([[1.0, 0.25], [0.0, 0.75]]))
    symbols = np.array([0] * 10 + [1] * 40000)
    a = sample_release(X, symbols, np.random.default_rng(3))
    b = sample_release(X, symbols, np.random.default_rng(3))
    assert np.array_equal(a, b)
    assert (a[:10] == 0).all()
    assert np.mean(a[10:] == 1) == pytest.approx(0.75, abs=0.01)


def test_symbol_codes_from_tuples_and_points() -> None:
    problem = pb.PrivacyProblem.from_arrays(
        joint=np.ones((2, 3)), distortion=1 - np.eye(3),
        symbols=[("x", 1), ("y", 1), ("x", 2)], attributes=("letter", "digit"),
    )
    codes, names = symbol_codes(problem)
    assert names == ["letter", "digit"]
    assert codes.tolist() == [[0, 0], [1, 0], [0, 1]]


@pytest.mark.parametrize("cls", [NaiveBayesAttack, LogisticAttack])
def test_classifier_attacks_approach_the_exact_posterior(cls: type) -> None:
    pytest.importorskip("sklearn")
    problem = tiny_problem(1000)
    metric = cls()
    assert not metric.default
    assert metric.applies(problem, mapping_result(np.eye(3)))
    out = metric.compute(problem, mapping_result(np.eye(3)), delta=0.0, seed=1)
    p = metric.prefix
    # one categorical feature: the trained posterior is p(a | b) up to smoothing
    assert out[f"{p}_auc"] == pytest.approx(HAND_AUC, abs=0.01)
    assert out[f"{p}_accuracy"] == pytest.approx(0.7, abs=0.01)
    assert out[f"{p}_records"] == 10000 and out[f"{p}_folds"] == 5
    roc = out[f"{p}_roc"]
    assert roc["fpr"][0] == 0 and roc["tpr"][-1] == 1
    again = metric.compute(problem, mapping_result(np.eye(3)), delta=0.0, seed=1)
    assert again == out


def test_classifier_attack_is_blind_after_a_constant_mapping() -> None:
    pytest.importorskip("sklearn")
    problem = tiny_problem(1)  # 40 users of each private value
    const = np.array([[1.0] * 3, [0] * 3, [0] * 3])
    out = NaiveBayesAttack().compute(problem, mapping_result(const), delta=1.0, seed=0)
    assert out["nb_auc"] == pytest.approx(0.5)


def test_classifier_attack_on_released_feature_records() -> None:
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 200)
    feats = np.column_stack([y + rng.normal(0, 0.1, y.size), rng.normal(size=y.size)])
    problem = pb.PrivacyProblem.from_arrays(
        joint=np.ones((2, 2)), distortion=1 - np.eye(2),
        records=pd.DataFrame({"private": y, "symbol": -1}),
    )
    released = pb.MechanismResult(kind="records", records=feats)
    out = LogisticAttack().compute(problem, released, delta=0.0, seed=0)
    assert out["lr_auc"] > 0.99
    as_dict = pb.MechanismResult(kind="records", records={"kind": "feature_records",
                                                           "released": feats})
    assert LogisticAttack().compute(problem, as_dict, delta=0.0, seed=0)["lr_auc"] > 0.99
    noise = pb.MechanismResult(kind="records", records=rng.normal(size=(y.size, 2)))
    assert abs(LogisticAttack().compute(problem, noise, delta=0.0, seed=0)["lr_auc"] - 0.5) < 0.1
