"""Mapping metrics (Table 1, Figure 5, Table I) against hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.plugins.metrics._recommender import fit_predict, release_by_features
from privbench.plugins.metrics.mapping import (
    FeatureLeakage,
    MappingBehaviour,
    RecommendationRMSE,
)

POINTS = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
# A uniform; the first feature agrees with A w.p. 0.8, the second is independent of A
JOINT = np.array([[0.2, 0.2, 0.05, 0.05], [0.05, 0.05, 0.2, 0.2]])
H_02 = -(0.2 * np.log2(0.2) + 0.8 * np.log2(0.8))


def result(X: np.ndarray) -> pb.MechanismResult:
    return pb.MechanismResult(kind="mapping", mapping=sp.csc_array(X))


def test_feature_leakage_before_and_after() -> None:
    problem = pb.PrivacyProblem.from_arrays(
        joint=JOINT, distortion=pb.FeatureDistortion(POINTS, "hamming"),
        attributes=("first", "second"),
    )
    ident = FeatureLeakage().compute(problem, result(np.eye(4)), delta=0.0)["feature_mi"]
    assert ident["first"]["before"] == pytest.approx(1 - H_02)
    assert ident["first"]["after"] == pytest.approx(1 - H_02)
    assert ident["second"]["before"] == pytest.approx(0.0, abs=1e-12)
    # clear the first feature: 00, 10 -> 00 and 01, 11 -> 01
    X = np.zeros((4, 4))
    X[0, [0, 2]] = 1
    X[1, [1, 3]] = 1
    cleared = FeatureLeakage().compute(problem, result(X), delta=1.0)["feature_mi"]
    assert cleared["first"]["after"] == pytest.approx(0.0, abs=1e-12)
    assert cleared["second"]["after"] == pytest.approx(0.0, abs=1e-12)


def test_mapping_behaviour_by_hand() -> None:
    problem = pb.PrivacyProblem.from_arrays(
        joint=np.ones((2, 3)), distortion=pb.FeatureDistortion(np.array([0.0, 1.0, 3.0]), "l1"),
    )
    X = np.array([[0.5, 0.0, 0.0], [0.5, 1.0, 0.2], [0.0, 0.0, 0.8]])
    # closest-first orders: col 0 -> (0, 1, 2), col 1 -> (1, 0, 2), col 2 -> (2, 1, 0)
    per_symbol = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.8, 0.2, 0.0]])
    out = MappingBehaviour().compute(problem, result(X), delta=1.0)
    assert out["behaviour_mean"] == pytest.approx(per_symbol.mean(axis=0).tolist())
    se = per_symbol.std(axis=0, ddof=1) / np.sqrt(3)
    assert out["behaviour_se"] == pytest.approx(se.tolist())
    assert out["behaviour_columns"] == 3
    sampled = MappingBehaviour(max_columns=2).compute(problem, result(X), delta=1.0, seed=0)
    assert sampled["behaviour_columns"] == 2


def test_fit_predict_recovers_a_low_rank_matrix() -> None:
    rng = np.random.default_rng(0)
    u, v = rng.uniform(1, 2, 40), rng.uniform(1, 2, 30)
    full = pd.DataFrame([(a, b, u[a] * v[b]) for a in range(40) for b in range(30)],
                        columns=["user", "item", "rating"])
    test = full.sample(60, random_state=0)
    pred = fit_predict(full.drop(index=test.index), test, rank=2, reg=0.01, iters=30)
    assert np.sqrt(np.mean((pred - test["rating"]) ** 2)) < 0.05


def test_release_by_features_by_hand() -> None:
    # items 0, 1 carry feature 0; items 2, 3 feature 1; item 2 is the most rated
    F = np.array([[1, 0], [1, 0], [0, 1], [0, 1]])
    points = np.array([[1, 0], [0, 1]])
    ratings = pd.DataFrame({"user": [0, 0, 1, 2, 2], "item": [0, 1, 2, 2, 3],
                            "rating": [4.0, 2.0, 5.0, 3.0, 1.0]})
    original = np.array([0, 1, -1])
    released = np.array([1, 1, 0])  # user 0 switches 10 -> 01; user 2 is outside the alphabet
    out = release_by_features(ratings, original, released, points, F, np.random.default_rng(0))
    user0 = out[out["user"] == 0].sort_values("item")
    # feature 0 off: items 0, 1 dropped; feature 1 on: two ratings (2 ratings / 1 feature),
    # the most rated items of feature 1 first, each at the item's mean
    assert user0["item"].tolist() == [2, 3]
    assert user0["rating"].tolist() == [4.0, 1.0]
    assert out[out["user"] != 0].equals(ratings[ratings["user"] != 0])


def ratings_problem() -> pb.PrivacyProblem:
    """60 users of three binary profiles; profile decides which items are rated high."""
    rng = np.random.default_rng(1)
    points = np.array([[1, 0], [0, 1], [1, 1]])
    F = np.array([[1, 0]] * 4 + [[0, 1]] * 4)
    symbols = np.repeat([0, 1, 2], 20)
    private = (symbols == 1).astype(int)
    rows = []
    for user, s in enumerate(symbols):
        for item in np.sort(rng.choice(8, size=6, replace=False)):
            liked = points[s] @ F[item]
            rows.append((user, item, float(np.clip(2 + 2 * liked + rng.normal(0, 0.3), 1, 5))))
    joint = np.array([[20, 0, 20], [0, 20, 0]], dtype=float)
    return pb.PrivacyProblem.from_arrays(
        joint=joint, distortion=pb.FeatureDistortion(points, "hamming"),
        records=pd.DataFrame({"private": private, "symbol": symbols}),
        ratings=pb.Ratings(pd.DataFrame(rows, columns=["user", "item", "rating"]),
                           pd.DataFrame(F, index=pd.Index(range(8), name="item_id"))),
    )


def test_recommendation_rmse_identity_equals_original() -> None:
    problem = ratings_problem()
    metric = RecommendationRMSE(iters=5)
    assert not metric.default and metric.applies(problem, result(np.eye(3)))
    out = metric.compute(problem, result(np.eye(3)), delta=0.0, seed=0)
    assert len(out["rmse_original"]) == 5
    assert out["rmse_released"] == out["rmse_original"]
    assert out["released_ratings"] == out["original_ratings"] == 360
    # release every profile as 10: users of 01 and 11 lose their feature-1 ratings
    # (3 each on average) and 01 users gain up to 3 feature-0 ratings at item means
    X = np.zeros((3, 3))
    X[0, :] = 1
    moved = metric.compute(problem, result(X), delta=1.0, seed=0)
    assert moved["rmse_original"] == out["rmse_original"]
    assert moved["released_ratings"] < 360
    assert moved["rmse_released_mean"] > moved["rmse_original_mean"]


def test_recommendation_rmse_needs_ratings() -> None:
    problem = pb.PrivacyProblem.from_arrays(joint=JOINT, distortion=1 - np.eye(4))
    assert not RecommendationRMSE().applies(problem, result(np.eye(4)))


def test_release_direct_replaces_the_profile_ratings() -> None:
    from privbench.plugins.metrics._recommender import release_direct

    points = np.array([[5, 0], [3, 4]])  # star ratings of items 10 and 11
    ratings = pd.DataFrame({"user": [0, 0, 1], "item": [10, 12, 10],
                            "rating": [5.0, 2.0, 5.0]})
    out = release_direct(ratings, np.array([0, 0]), np.array([1, 0]), points, np.array([10, 11]))
    user0 = out[out["user"] == 0].sort_values("item")
    assert user0[["item", "rating"]].values.tolist() == [[10, 3.0], [11, 4.0], [12, 2.0]]
    assert out[out["user"] == 1]["rating"].tolist() == [5.0]
