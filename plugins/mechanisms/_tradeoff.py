"""Trade-off model internals (Srivastava, Namboodiri, Prabhakar, CAiSE 2019 slides).

* :func:`admissible_partitions` - step 1: every p-subset of the n attributes that
  contains no privacy exception and honours the utility exceptions;
* :func:`sample_fraction` - the vertical (v) and horizontal (h) expenses;
* :func:`evaluate_partition` - step 2 for one partition: a top-level, picklable task
  (executors may run it in another process) that cross-validates a scikit-learn
  classifier on the partition's columns plus the class and returns the metric M.

``SLIDES_TABLE`` is Table 1 of the slides (an excerpt of UCI Adult), embedded so the
slides' example runs without data files.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

OBJECTIVES = ("naive_bayes", "logistic_regression", "decision_tree")
METRICS = ("accuracy", "fpr", "auc")
#: metrics where smaller is better (ranked ascending)
ASCENDING = frozenset({"fpr"})
UE_MODES = ("all", "any")

#: the rows of ``SLIDES_TABLE`` (a DataFrame built on first use: listing plugins needs no pandas)
SLIDES_ROWS = (
    (39, "State-gov", "Never-married", "White", "<=50K"),
    (49, "Self-emp-inc", "Married-civ-spouse", "White", ">50K"),
    (28, "Private", "Married-civ-spouse", "Other", "<=50K"),
    (35, "Private", "Divorced", "White", ">50K"),
    (38, "Private", "Divorced", "White", "<=50K"),
    (53, "Local-gov", "Never-married", "White", "<=50K"),
    (28, "Private", "Married-civ-spouse", "Black", "<=50K"),
    (37, "Private", "Married-civ-spouse", "Black", ">50K"),
    (37, "Private", "Married-civ-spouse", "White", "<=50K"),
    (49, "Private", "Married-spouse-absent", "Black", "<=50K"),
    (38, "Federal-gov", "Married-civ-spouse", "White", ">50K"),
    (42, "Private", "Married-civ-spouse", "White", ">50K"),
)
SLIDES_COLUMNS = ("age", "workclass", "marital-status", "race", "class")


def slides_table() -> pd.DataFrame:
    """Table 1 of the slides as a DataFrame (a new copy each call)."""
    import pandas as pd

    return pd.DataFrame(list(SLIDES_ROWS), columns=list(SLIDES_COLUMNS))


def __getattr__(name: str) -> object:
    """``SLIDES_TABLE``, built when first asked for."""
    if name == "SLIDES_TABLE":
        return slides_table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def admissible_partitions(attributes: Sequence[str], p: int,
                          pe: Iterable[Iterable[str]] = (), ue: Iterable[Iterable[str]] = (),
                          ue_mode: str = "all") -> list[tuple[str, ...]]:
    """Step 1: p-subsets (in ``itertools.combinations`` order) that are admissible.

    A partition is rejected when it contains every attribute of some privacy exception;
    with utility exceptions it must contain every attribute of all of them
    (``ue_mode="all"``) or of at least one (``"any"``).
    """
    pe_sets = [frozenset(c) for c in pe]
    ue_sets = [frozenset(c) for c in ue]
    out = []
    for combo in itertools.combinations(attributes, p):
        chosen = frozenset(combo)
        if any(c <= chosen for c in pe_sets):
            continue
        if ue_sets:
            hits = [c <= chosen for c in ue_sets]
            if not (all(hits) if ue_mode == "all" else any(hits)):
                continue
        out.append(tuple(combo))
    return out


def count_partitions(n: int, p: int) -> int:
    """C(n, p), the number of candidate partitions before exceptions."""
    return math.comb(n, p)


def sample_fraction(count: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """ceil(fraction * count) distinct indices (at least one when count > 0), sorted."""
    if count == 0:
        return np.arange(0)
    k = min(count, max(1, math.ceil(fraction * count - 1e-9)))
    return np.sort(rng.choice(count, size=k, replace=False))


def _model(objective: str, numeric: list[str], categorical: list[str], seed: int) -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.naive_bayes import CategoricalNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import (
        FunctionTransformer,
        KBinsDiscretizer,
        OneHotEncoder,
        OrdinalEncoder,
        StandardScaler,
    )

    if objective == "naive_bayes":
        # categorical NB on codes; numeric columns binned into quantiles
        steps = []
        if categorical:
            steps.append(("cat", OrdinalEncoder(handle_unknown="use_encoded_value",
                                                unknown_value=-1, encoded_missing_value=-1),
                          categorical))
        if numeric:
            steps.append(("num", KBinsDiscretizer(n_bins=5, encode="ordinal",
                                                  strategy="quantile", quantile_method="linear"),
                          numeric))
        prep = ColumnTransformer(steps)
        return make_pipeline(prep, FunctionTransformer(_shift_codes), CategoricalNB())
    steps = []
    if categorical:
        steps.append(("cat", OneHotEncoder(handle_unknown="ignore"), categorical))
    if numeric:
        steps.append(("num", StandardScaler(), numeric))
    prep = ColumnTransformer(steps)
    if objective == "logistic_regression":
        from sklearn.linear_model import LogisticRegression

        return make_pipeline(prep, LogisticRegression(max_iter=1000))
    from sklearn.tree import DecisionTreeClassifier

    return make_pipeline(prep, DecisionTreeClassifier(random_state=seed))


def _shift_codes(X: Any) -> np.ndarray:
    """Unknown codes (-1) become a category of their own: CategoricalNB needs codes >= 0."""
    return np.asarray(X, dtype=float) + 1.0


def evaluate_partition(task: dict[str, Any]) -> dict[str, Any]:
    """Cross-validate ``task["objective"]`` on ``task["frame"]`` and return metric M.

    ``task``: frame (the partition's columns), y (class labels), positive (the positive
    class for fpr/auc), objective, metric, folds, seed, attributes. Uses stratified
    k-fold predictions over every row (k = min(folds, smallest class size)); with a
    class of one row it falls back to resubstitution and says so.
    """
    import pandas as pd
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    frame: pd.DataFrame = task["frame"]
    y = np.asarray(task["y"])
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    categorical = [c for c in frame.columns if c not in numeric]
    frame = frame.copy()
    for c in categorical:
        frame[c] = frame[c].astype(str)
    model = _model(task["objective"], numeric, categorical, task["seed"])
    classes, counts = np.unique(y, return_counts=True)
    folds = int(min(task["folds"], counts.min()))
    method = "predict_proba" if task["metric"] == "auc" else "predict"
    if len(classes) < 2:
        raise ValueError("the class attribute has a single value in the sampled rows")
    if folds >= 2:
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=task["seed"])
        pred = cross_val_predict(model, frame, y, cv=cv, method=method)
        scheme = f"{folds}-fold"
    else:
        model.fit(frame, y)
        pred = getattr(model, method)(frame)
        scheme = "resubstitution"
    positive = task["positive"]
    if task["metric"] == "accuracy":
        score = float(accuracy_score(y, pred))
    elif task["metric"] == "fpr":
        negative = y != positive
        fp = int(np.sum(negative & (pred == positive)))
        score = fp / int(negative.sum()) if negative.any() else 0.0
    else:
        col = int(np.flatnonzero(classes == positive)[0])
        score = float(roc_auc_score(y == positive, pred[:, col]))
    return {"attributes": list(task["attributes"]), "score": score, "scheme": scheme,
            "rows": int(len(y))}
