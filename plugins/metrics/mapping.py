"""Metrics that look inside a mapping (SPPM paper, Table 1 and Figure 5) and what it
does to recommendations (quantized-mapping paper, Table I).

* ``feature_leakage`` (default): I(A; F) for each public feature F of B before the
  mapping and of B̂ after it, exact from p(a, b̂) (Table 1).
* ``mapping_behaviour`` (default): the average probability that a symbol is mapped to
  its k-th closest symbol (k = 1 is itself), with the standard error across symbols
  (Figure 5). Ties in distance keep alphabet order. For large alphabets a seeded
  sample of columns is used (at most ``max_columns``, and about 2^24 distances in all)
  and its size is reported as ``behaviour_columns``.
* ``recommendation_rmse`` (opt-in): RMSE of a matrix-factorisation recommender trained
  on the original vs the released ratings, 5 folds of users with 10% of each test
  user's ratings held out (Table I: RMSE1 vs RMSE2).

The support-size histogram (Figure 7) is ``support_hist`` of the core ``support`` metric.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._release import rng_for, sample_release, symbol_codes

if TYPE_CHECKING:
    import pandas as pd

SPPM = "Salamatian et al., SPPM: sparse privacy preserving mappings, UAI 2014"
QUANTIZED = "Salamatian et al., How to hide the elephant, GlobalSIP 2013"


class FeatureLeakage(pb.Metric):
    name = "feature_leakage"
    description = "I(A; F) per public feature before and after the mapping (SPPM Table 1)"
    needs = frozenset({"mapping"})
    outputs = (pb.Output("feature_mi", "bits", "neutral",
                         "I(A; F) per public feature F, {feature: {before, after}} (SPPM Table 1)",
                         SPPM),)

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        codes, names = symbol_codes(problem)
        if problem.coding is not None:  # the data set's own coding of each attribute
            codes = problem.coding.profile_codes
        before = pb.metrics.attribute_leakage_bits(problem.joint, codes)
        after = pb.metrics.attribute_leakage_bits(pb.metrics.output_joint(problem, result.mapping),
                                                  codes)
        return {"feature_mi": {name: {"before": float(b), "after": float(a)}
                               for name, b, a in zip(names, before, after, strict=True)}}


def behaviour(problem: pb.PrivacyProblem, mapping: Any, *, k_max: int,
              columns: np.ndarray, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over ``columns`` of X[k-th closest symbol to b_j, j]."""
    X = sp.csc_array(mapping)
    k_max = min(k_max, problem.n)
    rows = np.arange(problem.n)
    probs = np.empty((columns.size, k_max))
    for s in range(0, columns.size, chunk):
        cols = columns[s:s + chunk]
        D = problem.distortion.block(rows, cols)
        order = np.argsort(D, axis=0, kind="stable")[:k_max]
        dense = X[:, cols].toarray()
        probs[s:s + chunk] = np.take_along_axis(dense, order, axis=0).T
    mean = probs.mean(axis=0)
    se = probs.std(axis=0, ddof=1) / np.sqrt(columns.size) if columns.size > 1 \
        else np.zeros(k_max)
    return mean, se


#: distances computed by ``mapping_behaviour`` at most (columns are sampled beyond it)
WORK_LIMIT = 2**24


class MappingBehaviour(pb.Metric):
    """P(b mapped to its k-th closest symbol), k = 1 .. k_max, averaged over the columns (SPPM Figure 5).

    :param k_max: the neighbour ranks k reported, 1 .. k_max (capped at n).
    :param max_columns: the most columns b averaged over: beyond it (or beyond about 2^24
        distances) a seeded sample of columns is used.
    """

    name = "mapping_behaviour"
    description = "P(map to k-th closest symbol), mean and standard error (SPPM Figure 5)"
    needs = frozenset({"mapping"})
    outputs = (
        pb.Output("behaviour_mean", "probability", "neutral",
                  "P(b mapped to its k-th closest symbol), k = 1.. (SPPM Figure 5), a list", SPPM),
        pb.Output("behaviour_se", "probability", "neutral", "standard errors of behaviour_mean"),
        pb.Output("behaviour_columns", "count", "neutral", "columns averaged (sampled beyond a work limit)"),
    )

    def __init__(self, k_max: int = 20, max_columns: int = 2048) -> None:
        self.k_max = k_max
        self.max_columns = max_columns

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        columns = np.arange(problem.n)
        # at most max_columns columns and about 2^24 distances: a default metric stays cheap
        budget = min(self.max_columns, max(64, WORK_LIMIT // max(problem.n, 1)))
        if problem.n > budget:
            rng = rng_for(seed, 3)
            columns = np.sort(rng.choice(problem.n, size=budget, replace=False))
        mean, se = behaviour(problem, result.mapping, k_max=self.k_max, columns=columns)
        return {"behaviour_mean": mean.tolist(), "behaviour_se": se.tolist(),
                "behaviour_columns": int(columns.size)}


class RecommendationRMSE(pb.Metric):
    """A recommender's RMSE on original and on released ratings (quantized-mapping paper, Table I).

    :param folds: the folds users are split into; each fold's held-out ratings are predicted
        once (an integer >= 1).
    :param holdout: the share of each fold's ratings held out as its test set, in (0, 1].
    :param rank: the latent dimension of the biased matrix factorisation.
    :param reg: its ridge penalty (>= 0).
    :param iters: its alternating-least-squares sweeps.
    """

    name = "recommendation_rmse"
    description = "MF recommender RMSE on original vs released ratings, 5-fold (quantized Table I)"
    needs = frozenset({"mapping", "ratings"})
    default = False
    outputs = (
        pb.Output("rmse_original_mean", "none", "neutral", "recommender RMSE on the original ratings"),
        pb.Output("rmse_released_mean", "none", "neutral",
                  "recommender RMSE on the released ratings (quantized paper, Table I)", QUANTIZED),
        pb.Output("rmse_original", "none", "neutral", "per-fold RMSE on the original ratings"),
        pb.Output("rmse_released", "none", "neutral", "per-fold RMSE on the released ratings"),
        pb.Output("released_ratings", "count", "neutral", "ratings after the release"),
        pb.Output("original_ratings", "count", "neutral", "ratings before the release"),
    )

    def __init__(self, folds: int = 5, holdout: float = 0.1, rank: int = 8,
                 reg: float = 5.0, iters: int = 10) -> None:
        self.folds = folds
        self.holdout = holdout
        self.rank = rank
        self.reg = reg
        self.iters = iters

    def applies(self, problem, result) -> bool:
        return super().applies(problem, result) and problem.records is not None

    def unmet(self, problem: pb.PrivacyProblem) -> str:
        return super().unmet(problem) or (
            "needs per-user records, which this data set does not carry" if problem.records is None else "")

    @staticmethod
    def normalised(problem: pb.PrivacyProblem) -> tuple[pd.DataFrame, np.ndarray | None]:
        """Ratings as (user = record row, item = 0..m-1, rating) and item features aligned.

        Accepts ``user``/``item`` columns or ``user_id``/``item_id`` ones (users matched on
        ``records["user_id"]``); features from the ratings part's ``item_features``
        (indexed by item id, one column per profile coordinate).
        """
        import pandas as pd

        raw = problem.ratings.table
        if "user" in raw:
            users = raw["user"].to_numpy(np.int64)
        else:
            users = pd.Index(problem.records["user_id"]).get_indexer(raw["user_id"])
        item_col = raw["item"] if "item" in raw else raw["item_id"]
        items, uniques = pd.factorize(item_col, sort=True)
        ratings = pd.DataFrame({"user": users, "item": items,
                                "rating": raw["rating"].to_numpy(float)})
        ratings = ratings[ratings["user"] >= 0].reset_index(drop=True)
        return ratings, problem.ratings.item_features.reindex(uniques).fillna(0).to_numpy()

    def released_ratings(self, problem: pb.PrivacyProblem, ratings: pd.DataFrame,
                         item_features: np.ndarray, mapping: Any,
                         rng: np.random.Generator) -> pd.DataFrame:
        """Sample every covered user's released symbol, then release ratings to match it."""
        from ._recommender import release_by_features, release_direct

        symbols = problem.records["symbol"].to_numpy(np.int64)
        released = symbols.copy()
        inside = symbols >= 0
        released[inside] = sample_release(mapping, symbols[inside], rng)
        points = np.asarray(getattr(problem.distortion, "points", symbol_codes(problem)[0]))
        if np.isin(points, (0, 1)).all():
            return release_by_features(ratings, symbols, released, points, item_features, rng)
        one_item = item_features.sum(axis=0) == 1
        if not one_item.all():
            raise pb.ValidationError("recommendation_rmse: non-binary profiles need one item "
                                     "per profile coordinate (the ratings part's item_features)")
        return release_direct(ratings, symbols, released, points,
                              np.argmax(item_features, axis=0))

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        import pandas as pd

        from ._recommender import fit_predict

        rng = rng_for(seed, 4)
        ratings, item_features = self.normalised(problem)
        released = self.released_ratings(problem, ratings, item_features, result.mapping, rng)
        users = ratings["user"].unique()
        fold_of = dict(zip(rng.permutation(users), np.arange(users.size) % self.folds,
                           strict=True))
        rmse1, rmse2 = [], []
        opts = {"rank": self.rank, "reg": self.reg, "iters": self.iters}
        for f in range(self.folds):
            in_fold = ratings["user"].map(fold_of).to_numpy() == f
            test_idx = np.flatnonzero(in_fold)
            held = rng.choice(test_idx, size=max(1, round(self.holdout * test_idx.size)),
                              replace=False)
            test = ratings.iloc[held]
            train = ratings.drop(index=held)
            key = pd.MultiIndex.from_frame(test[["user", "item"]])
            rel_train = released[~pd.MultiIndex.from_frame(released[["user", "item"]]).isin(key)]
            mf_seed = int(rng.integers(2**31 - 1))
            truth = test["rating"].to_numpy(float)
            for store, data in ((rmse1, train), (rmse2, rel_train)):
                pred = fit_predict(data, test, seed=mf_seed, **opts)
                store.append(float(np.sqrt(np.mean((pred - truth) ** 2))))
        return {"rmse_original": rmse1, "rmse_released": rmse2,
                "rmse_original_mean": float(np.mean(rmse1)),
                "rmse_released_mean": float(np.mean(rmse2)),
                "released_ratings": int(len(released)), "original_ratings": int(len(ratings))}


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [FeatureLeakage, MappingBehaviour, RecommendationRMSE]
