"""Attack metrics: how well an adversary infers A from what was released.

* ``posterior_attack`` (default, exact, mapping mechanisms): the Bayes-optimal adversary
  knows p(A, B̂). Its ROC ranks outputs by p(a+ | b̂) and its AUC is computed from the
  distribution, with no sampling; the MAP detector's accuracy is Σ_b̂ max_a p(a, b̂)
  (and Σ_b max_a p(a, b) without the mechanism).
* ``nb_attack`` / ``lr_attack`` (opt-in: ``-M nb_attack``): Naive Bayes and logistic
  regression trained on released records with seeded stratified k-fold cross-validation;
  pooled out-of-fold scores give the ROC points and AUC (SPPM paper, Figures 3 and 4).
  For a mapping mechanism the records are released by sampling the mapping (seeded).

The positive class is the last private value (e.g. income > 50K); with more than two
private values the AUC is the one-vs-rest macro average and the ROC is last-vs-rest.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._release import covered_records, rng_for, sample_release, symbol_codes

#: ROC curves are stored on at most this many points
ROC_POINTS = 101


def _roc_dict(fpr: np.ndarray, tpr: np.ndarray) -> dict[str, list[float]]:
    """Store a ROC compactly: resampled on a fixed FPR grid when it has many points."""
    if fpr.size > ROC_POINTS:
        grid = np.linspace(0.0, 1.0, ROC_POINTS)
        tpr = np.interp(grid, fpr, tpr)
        fpr = grid
    return {"fpr": np.round(fpr, 5).tolist(), "tpr": np.round(tpr, 5).tolist()}


def exact_roc(joint_out: np.ndarray, positive: int = -1,
              scorer: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """ROC and AUC of the detector that scores an output b̂ by p(a+ | b̂).

    :param joint_out: p(a, b̂), shape (|A|, m), of the users attacked. Outputs with equal
        scores form one step, so ties are counted half, as the trapezoid does.
    :param scorer: the p(a, b̂) the adversary believes (the design prior's, when the
        users attacked are held out); ``joint_out`` itself when omitted. An output the
        scorer gives no mass gets the scorer's overall share of a+.
    """
    P = np.asarray(joint_out, dtype=float)
    P = P / P.sum()
    S = P if scorer is None else np.asarray(scorer, dtype=float)
    s_pos = S[positive]
    s_mass = S.sum(axis=0)
    fallback = s_pos.sum() / max(s_mass.sum(), 1e-300)
    belief = np.divide(s_pos, s_mass, out=np.full(s_mass.shape, fallback), where=s_mass > 0)
    pos = P[positive]
    neg = P.sum(axis=0) - pos
    live = (pos + neg) > 0
    pos, neg = pos[live], neg[live]
    score = np.round(belief[live], 12)
    uniq, inv = np.unique(-score, return_inverse=True)  # descending scores
    pos_bins = np.bincount(inv, weights=pos, minlength=uniq.size)
    neg_bins = np.bincount(inv, weights=neg, minlength=uniq.size)
    tpr = np.concatenate([[0.0], np.cumsum(pos_bins) / max(pos.sum(), 1e-300)])
    fpr = np.concatenate([[0.0], np.cumsum(neg_bins) / max(neg.sum(), 1e-300)])
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
    return fpr, tpr, auc


def map_accuracy(joint_out: np.ndarray, scorer: np.ndarray | None = None) -> float:
    """Accuracy of the MAP detector argmax_a p(a | y): Σ_y max_a p(a, y).

    With ``scorer`` the detector guesses argmax_a of the scorer's p(a, y) (what the
    adversary believes) and is scored on ``joint_out`` (the users attacked).
    """
    P = np.asarray(joint_out, dtype=float)
    if scorer is None:
        return float(P.max(axis=0).sum() / P.sum())
    guess = np.asarray(scorer, dtype=float).argmax(axis=0)
    return float(P[guess, np.arange(P.shape[1])].sum() / P.sum())


#: an attacker's ROC AUC: the higher, the better the attack, so lower is more private
AUC = "probability"
CITE_MAP = "Salamatian et al., How to hide the elephant, GlobalSIP 2013 (MAP adversary)"


class PosteriorAttack(pb.Metric):
    name = "posterior_attack"
    description = "exact Bayes-optimal adversary: posterior ROC/AUC, MAP accuracy (mapping)"
    needs = frozenset({"mapping"})
    outputs = (
        pb.Output("posterior_auc", AUC, "lower",
                  "ROC AUC of the exact posterior adversary for A from B̂ (0.5: no better than chance)",
                  "Fawcett, An introduction to ROC analysis, Pattern Recogn. Lett. 2006",
                            label="posterior adversary AUC"),
        pb.Output("posterior_roc", "none", "neutral", "the posterior adversary's ROC points {fpr, tpr}"),
        pb.Output("map_accuracy", "probability", "lower",
                  "accuracy of the MAP guess of A from B̂ (the posterior Bayes vulnerability)", CITE_MAP,
                            label="MAP adversary accuracy"),
        pb.Output("map_accuracy_prior", "probability", "neutral",
                  "accuracy of the MAP guess of A with no release (the prior Bayes vulnerability)"),
    )

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        out = pb.metrics.output_joint(problem, result.mapping)
        fpr, tpr, auc = exact_roc(out)
        return {
            "posterior_auc": auc,
            "posterior_roc": _roc_dict(fpr, tpr),
            "map_accuracy": map_accuracy(out),
            "map_accuracy_prior": map_accuracy(problem.joint),
        }


def _one_hot(codes: np.ndarray) -> sp.csr_array:
    """Sparse one-hot encoding of integer category codes, one block per column."""
    n, k = codes.shape
    width = codes.max(axis=0) + 1
    offsets = np.concatenate([[0], np.cumsum(width)[:-1]])
    cols = (codes + offsets).ravel()
    rows = np.repeat(np.arange(n), k)
    return sp.csr_array((np.ones(n * k), (rows, cols)), shape=(n, int(width.sum())))


class _ClassifierAttack(pb.Metric):
    """A classifier trained on released records with seeded stratified k-fold CV.

    :param folds: the stratified cross-validation folds (at most; fewer when a private value
        has fewer records, and no result below 2).
    :param max_records: the most released records trained and tested on: more are subsampled,
        seeded (0: all of them).
    """

    default = False
    needs = frozenset({"problem"})
    requirements = ("sklearn",)
    extra = "ml"
    prefix: ClassVar[str] = ""
    salt: ClassVar[int] = 0
    #: encode categorical symbol features one-hot (linear models) or keep codes (NB)
    one_hot: ClassVar[bool] = False

    def __init__(self, folds: int = 5, max_records: int = 50000) -> None:
        self.folds = folds
        self.max_records = max_records

    def applies(self, problem, result) -> bool:
        if result is None:
            return False
        if result.records is not None:
            return problem.records is not None
        return result.mapping is not None and problem.records is not None

    def unmet(self, problem: pb.PrivacyProblem) -> str:
        return ("needs per-user records to train on, which this data set does not carry"
                if problem.records is None else "")

    def _model(self, categorical: bool, codes: np.ndarray | None) -> Any:
        raise NotImplementedError

    def _data(self, problem: pb.PrivacyProblem, result: pb.MechanismResult,
              rng: np.random.Generator) -> tuple[Any, np.ndarray, bool, np.ndarray | None]:
        """(features, labels, categorical?, category codes) of the released records."""
        if result.records is not None:
            released = result.records  # a feature matrix, or the record mechanisms' dict
            if isinstance(released, dict):
                released = released.get("released")
            X = np.asarray(released, dtype=float)
            y = problem.records["private"].to_numpy()
            if X.shape[0] != y.size:
                raise pb.ValidationError(f"{X.shape[0]} released records for {y.size} users")
            if self.max_records and y.size > self.max_records:
                keep = np.sort(rng.choice(y.size, size=self.max_records, replace=False))
                X, y = X[keep], y[keep]
            return X, y, False, None
        recs = covered_records(problem, max_records=self.max_records, rng=rng)
        released = sample_release(result.mapping, recs["symbol"].to_numpy(), rng)
        codes, _ = symbol_codes(problem)
        return codes[released], recs["private"].to_numpy(), True, codes

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        from sklearn.metrics import roc_auc_score, roc_curve
        from sklearn.model_selection import StratifiedKFold, cross_val_predict

        rng = rng_for(seed, self.salt)
        X, y, categorical, codes = self._data(problem, result, rng)
        classes, y = np.unique(y, return_inverse=True)
        p = self.prefix
        if classes.size < 2:
            return {f"{p}_error": "released records hold a single private value"}
        folds = int(min(self.folds, np.bincount(y).min()))
        if folds < 2:
            return {f"{p}_error": "too few records of some private value for 2-fold CV"}
        raw = X
        if categorical and self.one_hot:
            X = _one_hot(X)
        cv = StratifiedKFold(n_splits=folds, shuffle=True,
                             random_state=int(rng.integers(2**31 - 1)))
        proba = cross_val_predict(self._model(categorical, codes), X, y, cv=cv,
                                  method="predict_proba")
        pos = classes.size - 1
        fpr, tpr, _ = roc_curve(y == pos, proba[:, pos])
        auc = float(roc_auc_score(y, proba[:, 1]) if classes.size == 2
                    else roc_auc_score(y, proba, multi_class="ovr"))
        out = {
            f"{p}_auc": auc,
            f"{p}_roc": _roc_dict(fpr, tpr),
            f"{p}_accuracy": float(np.mean(proba.argmax(axis=1) == y)),
            f"{p}_records": int(y.size),
            f"{p}_folds": folds,
        }
        if problem.holdout is not None and result.mapping is not None and codes is not None:
            out.update(self._holdout(problem, result, rng, raw, y, classes, codes))
        return out

    def _holdout(self, problem: pb.PrivacyProblem, result: pb.MechanismResult,
                 rng: np.random.Generator, X: Any, y: np.ndarray, classes: np.ndarray,
                 codes: np.ndarray) -> dict[str, Any]:
        """Train on every released design record (``X``: their symbol codes), test on
        released held-out records (held-out users outside the design alphabet have no
        symbol and are left out)."""
        from sklearn.metrics import roc_auc_score

        p = self.prefix
        recs = problem.holdout.records
        recs = recs[recs["symbol"].to_numpy() >= 0]
        recs = recs[np.isin(recs["private"].to_numpy(), classes)]
        if len(recs) == 0:
            return {f"{p}_holdout_error": "no held-out user is in the alphabet"}
        if self.max_records and len(recs) > self.max_records:
            recs = recs.iloc[np.sort(rng.choice(len(recs), self.max_records, replace=False))]
        released = sample_release(result.mapping, recs["symbol"].to_numpy(), rng)
        X_test = codes[released]
        y_test = np.searchsorted(classes, recs["private"].to_numpy())
        if self.one_hot:  # one encoding for both sets, so the columns agree
            both = _one_hot(np.vstack([X, X_test]))
            X, X_test = both[: y.size], both[y.size:]
        model = self._model(True, codes).fit(X, y)
        proba = model.predict_proba(X_test)
        out = {f"{p}_holdout_accuracy": float(np.mean(proba.argmax(axis=1) == y_test)),
               f"{p}_holdout_records": int(y_test.size)}
        if np.unique(y_test).size == classes.size:
            out[f"{p}_holdout_auc"] = float(
                roc_auc_score(y_test, proba[:, 1]) if classes.size == 2
                else roc_auc_score(y_test, proba, multi_class="ovr"))
        return out


def classifier_outputs(p: str, who: str) -> tuple[pb.Output, ...]:
    """The outputs of a classifier attack with key prefix ``p`` (``who``: the model)."""
    return (
        pb.Output(f"{p}_auc", AUC, "lower", f"ROC AUC of a {who} adversary on released records (k-fold CV)",
                  label=f"{who} AUC"),
        pb.Output(f"{p}_accuracy", "probability", "lower", f"accuracy of the {who} adversary (k-fold CV)",
                  label=f"{who} accuracy"),
        pb.Output(f"{p}_roc", "none", "neutral", f"the {who} adversary's ROC points {{fpr, tpr}}"),
        pb.Output(f"{p}_records", "count", "neutral", "released records the adversary saw"),
        pb.Output(f"{p}_folds", "count", "neutral", "cross-validation folds"),
        pb.Output(f"{p}_holdout_auc", AUC, "lower",
                  f"ROC AUC of the {who} adversary on held-out users' released records",
                  label=f"{who} AUC, held-out"),
        pb.Output(f"{p}_holdout_accuracy", "probability", "lower",
                  f"accuracy of the {who} adversary on held-out users' released records",
                  label=f"{who} accuracy, held-out"),
        pb.Output(f"{p}_holdout_records", "count", "neutral", "held-out records the adversary was tested on"),
        pb.Output(f"{p}_error", "none", "neutral", "why the attack could not run",
                  of=f"{p}_auc", relation="error"),
        pb.Output(f"{p}_holdout_error", "none", "neutral", "why the held-out attack could not run",
                  of=f"{p}_holdout_auc", relation="error"),
    )


class NaiveBayesAttack(_ClassifierAttack):
    name = "nb_attack"
    citation = 'Pedregosa et al., Scikit-learn, JMLR 2011; Fawcett, ROC analysis, 2006'
    description = "Naive Bayes adversary on released records, k-fold CV: ROC points, AUC"
    prefix = "nb"
    salt = 1
    outputs = classifier_outputs("nb", "Naive Bayes")

    def _model(self, categorical: bool, codes: np.ndarray | None) -> Any:
        from sklearn.naive_bayes import CategoricalNB, GaussianNB

        if categorical and codes is not None:
            return CategoricalNB(min_categories=codes.max(axis=0) + 1)
        return GaussianNB()


class LogisticAttack(_ClassifierAttack):
    name = "lr_attack"
    citation = 'Pedregosa et al., Scikit-learn, JMLR 2011; Fawcett, ROC analysis, 2006'
    description = "logistic-regression adversary on released records, k-fold CV: ROC, AUC"
    prefix = "lr"
    salt = 2
    outputs = classifier_outputs("lr", "logistic-regression")
    one_hot = True

    def _model(self, categorical: bool, codes: np.ndarray | None) -> Any:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        model = LogisticRegression(max_iter=2000)
        return model if categorical else make_pipeline(StandardScaler(), model)


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [PosteriorAttack, NaiveBayesAttack, LogisticAttack]
