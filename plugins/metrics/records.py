"""Metrics of record mechanisms that transform feature vectors (nullspace, laplace).

They read the plain dict a record mechanism returns as ``result.records`` (kind
``feature_records``: original and released feature rows, desired and confidential
targets, the train/test split and the ally's linear predictor A_d) and are evaluated
on the test rows, as in the null-space paper's experiments:

* ``e_utility``: |A_dᵀ(x - x̃)|², the move of the ally's prediction (<= ε per record for
  null-space cleaning); also reported as the run's ``distortion`` (mean);
* ``e_privacy``: the adversary fits A_c by least squares on the *uncleaned* training
  rows and predicts y_c from x̃; e_privacy = |ỹ_c - y_c|² (eq. 4), e_privacy_model =
  |ỹ_c - A_cᵀx|² (the quantity Theorems 2 and 4 maximise); complete privacy is reached
  for a record when its error exceeds the error of predicting from the mean feature
  vector (the training mean of y_c);
* ``e_privacy_attack``: Algorithm 3 - the adversary knows the cleaning, cleans its
  training rows (the released training rows) and refits on them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import privbench as pb

RECORDS_KIND = "feature_records"
#: the null-space paper, whose experiments define e_utility and e_privacy
CITE = "Xu, Cao, Shah, Maung, Schweitzer, Cleaning the null space, AAAI 2017"


def _data(result: pb.MechanismResult | None) -> dict[str, Any] | None:
    records = getattr(result, "records", None)
    if isinstance(records, dict) and records.get("kind") == RECORDS_KIND:
        return records
    return None


def _ols(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares with an intercept: Y ≈ X W + b."""
    mx, my = X.mean(axis=0), Y.mean(axis=0)
    Z = X - mx
    if Z.shape[0] < 4 * Z.shape[1]:
        W = np.linalg.lstsq(Z, Y - my, rcond=None)[0]
    else:  # tall: normal equations with an eigen pseudo-inverse (minimum norm, fast)
        lam, V = np.linalg.eigh(Z.T @ Z)
        keep = lam > max(lam.max(initial=0.0), 0.0) * Z.shape[1] * 1e-13
        W = V[:, keep] @ ((V[:, keep].T @ (Z.T @ (Y - my))) / lam[keep][:, None])
    return W, my - mx @ W


def utility_errors(records: dict[str, Any]) -> np.ndarray:
    """Per test record |A_dᵀ(x - x̃)|² (the difference is taken first, for accuracy)."""
    test = np.asarray(records["test"])
    diff = np.asarray(records["original"])[test] - np.asarray(records["released"])[test]
    move = diff @ np.asarray(records["ally_weights"])
    return np.sum(move * move, axis=1)


def no_better_than_mean(error: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """Complete privacy per record: the adversary does no better than the mean predictor.

    A relative tolerance of 1e-9 keeps an adversary reduced exactly to the mean
    prediction (Algorithm 2 often achieves this) from being judged by rounding noise.
    """
    return error >= baseline - 1e-9 * np.maximum(1.0, baseline)


def privacy_errors(records: dict[str, Any], *, attack: bool) -> dict[str, np.ndarray]:
    """Per test record: adversary error, model error and the mean-vector baseline."""
    X = np.asarray(records["original"])
    R = np.asarray(records["released"])
    Y = np.asarray(records["confidential"])
    train, test = np.asarray(records["train"]), np.asarray(records["test"])
    W, b = _ols(X[train], Y[train])
    if attack:
        Wa, ba = _ols(R[train], Y[train])
    else:
        Wa, ba = W, b
    guess = R[test] @ Wa + ba
    truth = Y[test]
    model = X[test] @ W + b
    baseline = X[train].mean(axis=0) @ W + b  # = training mean of y_c for least squares
    return {
        "error": np.sum((guess - truth) ** 2, axis=1),
        "model_error": np.sum((guess - model) ** 2, axis=1),
        "baseline_error": np.sum((baseline - truth) ** 2, axis=1),
    }


class EUtility(pb.Metric):
    name = "e_utility"
    description = "null-space paper's e_utility |A_dᵀ(x - x̃)|² on the test records"
    needs = frozenset({"records"})
    outputs = (
        pb.Output("e_utility", "distortion", "neutral", "mean |A_dᵀ(x - x̃)|² over test records", CITE),
        pb.Output("e_utility_max", "distortion", "neutral", "largest |A_dᵀ(x - x̃)|² over test records"),
        pb.Output("distortion", "distortion", "neutral", "the run's distortion: mean e_utility", label="E[d(B, B̂)]"),
        pb.Output("e_utility_within_budget", "probability", "neutral", "share of test records with e_utility <= Δ"),
    )

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        records = _data(result)
        if records is None:
            return {}
        e = utility_errors(records)
        return {"e_utility": float(e.mean()), "e_utility_max": float(e.max()),
                "distortion": float(e.mean()),
                "e_utility_within_budget": float(np.mean(e <= delta))}


class EPrivacy(pb.Metric):
    name = "e_privacy"
    description = "adversary's error and complete-privacy rate (adversary trained on raw data)"
    needs = frozenset({"records"})
    outputs = (
        pb.Output("e_privacy", "distortion", "higher",
                  "mean squared error of the adversary's estimate of the confidential targets", CITE,
                            label="adversary MSE (e_privacy)"),
        pb.Output("e_privacy_model", "distortion", "higher",
                  "mean |ỹ_c - A_cᵀx|², the adversary's move from its own model's prediction", CITE,
                            label="adversary's move from its model"),
        pb.Output("baseline_error", "distortion", "neutral", "error of predicting from the mean features"),
        pb.Output("complete_privacy_rate", "probability", "higher",
                  "share of test records where the adversary does no better than the mean", CITE,
                            label="complete-privacy rate"),
    )

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        records = _data(result)
        if records is None:
            return {}
        err = privacy_errors(records, attack=False)
        private = no_better_than_mean(err["error"], err["baseline_error"])
        return {"e_privacy": float(err["error"].mean()),
                "e_privacy_model": float(err["model_error"].mean()),
                "baseline_error": float(err["baseline_error"].mean()),
                "complete_privacy_rate": float(np.mean(private))}


class EPrivacyAttack(pb.Metric):
    name = "e_privacy_attack"
    description = "the same after Algorithm 3 (adversary retrains on cleaned data)"
    needs = frozenset({"records"})
    outputs = (
        pb.Output("e_privacy_attack", "distortion", "higher",
                  "adversary's mean squared error after retraining on cleaned data (Algorithm 3)", CITE,
                            label="retrained adversary MSE"),
        pb.Output("complete_privacy_rate_attack", "probability", "higher",
                  "complete-privacy rate against the retraining adversary", CITE,
                            label="complete-privacy rate, retrained adversary"),
    )

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        records = _data(result)
        if records is None:
            return {}
        err = privacy_errors(records, attack=True)
        private = no_better_than_mean(err["error"], err["baseline_error"])
        return {"e_privacy_attack": float(err["error"].mean()),
                "complete_privacy_rate_attack": float(np.mean(private))}


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [EUtility, EPrivacy, EPrivacyAttack]
