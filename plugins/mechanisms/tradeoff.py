"""The trade-off model (Srivastava, Namboodiri, Prabhakar, CAiSE 2019): choose what to release.

A selection mechanism. Given a table with a class attribute, it enumerates the
partitions of p attributes (plus the class) that contain no privacy exception (PE) and
honour the utility exceptions (UE), samples a fraction ``v`` of them (vertical expense)
and a fraction ``h`` of the rows (horizontal expense, one sample shared by every task),
runs one classification task per partition through the harness's executor (``local``
by default, ``process`` for a process pool), and returns the partitions ranked by the
metric M (accuracy and AUC descending, false-positive rate ascending).

The table is ``problem.records`` (``table=problem``; class column ``private`` unless
``class_column`` says otherwise, attributes ``problem.attributes`` when they are
columns, else every other column) or the slides' embedded 12-row excerpt of UCI Adult
(``table=slides``). Δ plays no role. ``pe``/``ue`` take lists of attribute lists, or the
CLI form ``"age+workclass;race+sex"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb

from ._tradeoff import (
    ASCENDING,
    METRICS,
    OBJECTIVES,
    UE_MODES,
    admissible_partitions,
    count_partitions,
    evaluate_partition,
    sample_fraction,
    slides_table,
)

if TYPE_CHECKING:
    import pandas as pd

TABLES = ("problem", "slides")
#: bookkeeping columns of ``problem.records`` that are never attributes
RESERVED = ("symbol", "private", "line", "split")


def parse_combinations(value: Any, what: str) -> list[tuple[str, ...]]:
    """``[["a", "b"], ...]``, ``("a", "b")`` or ``"a+b;c+d"`` -> list of tuples."""
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, str):
        combos = [tuple(a.strip() for a in part.split("+") if a.strip())
                  for part in value.split(";") if part.strip()]
    elif isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        combos = [tuple(value)]  # one combination given flat
    elif isinstance(value, list | tuple):
        combos = []
        for item in value:
            if isinstance(item, str):
                combos.append(tuple(a.strip() for a in item.split("+") if a.strip()))
            elif isinstance(item, list | tuple) and all(isinstance(a, str) for a in item):
                combos.append(tuple(item))
            else:
                raise pb.ValidationError(f"tradeoff: {what} entries must be lists of attribute "
                                         f"names; got {item!r}")
    else:
        raise pb.ValidationError(f"tradeoff: {what} must be a list of attribute lists or "
                                 f"'a+b;c+d'; got {value!r}")
    if any(not c for c in combos):
        raise pb.ValidationError(f"tradeoff: {what} has an empty combination: {value!r}")
    return combos


def _as_list(value: Any, what: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(";") if v.strip()]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise pb.ValidationError(f"tradeoff: {what} must be a list of names or 'a;b;c'; got {value!r}")


class TradeoffModel(pb.SelectionMechanism):
    """Rank admissible attribute partitions by a classifier metric.

    :param p: the number of attributes per partition (an integer from 1 to the number of
        attributes).
    :param pe: privacy exceptions: attribute combinations no partition may contain whole, as
        ``age+workclass;race+sex`` or a list of lists.
    :param ue: utility exceptions: attribute combinations a partition must contain, in the
        same forms.
    :param ue_mode: with several utility exceptions, a partition must contain ``all`` of them
        or ``any`` one.
    :param objective: the classifier of each task: ``naive_bayes``, ``logistic_regression`` or
        ``decision_tree`` (scikit-learn).
    :param metric: the metric M partitions are ranked by: ``accuracy`` or ``auc`` (higher
        first) or ``fpr`` (false-positive rate, lower first).
    :param positive: the positive class label for ``fpr`` and ``auc`` (default: the minority
        class; a class with more than two labels needs it).
    :param v: the vertical expense, in (0, 1]: the share of admissible partitions evaluated
        (a seeded sample).
    :param h: the horizontal expense, in (0, 1]: the share of rows used (one seeded sample
        shared by every task).
    :param folds: the stratified cross-validation folds per task (an integer >= 2; fewer when
        the smallest class has fewer rows).
    :param table: the table: ``problem`` (the data set's records) or ``slides`` (the embedded
        12-row excerpt of UCI Adult).
    :param class_column: the class attribute (default: ``private`` for ``table=problem``,
        ``class`` for the slides).
    :param attributes: the candidate attributes, a list (default: the problem's public
        attributes that are columns, else every other column).
    :param executor: the executor the classification tasks run on (``local``, or ``process``
        for a process pool).
    :param workers: the worker processes of that executor (default: its own).
    """

    name = "tradeoff"
    citation = ('Srivastava, Namboodiri, Prabhakar, Achieving privacy-utility trade-off in existing '
                'software systems, CAiSE 2019')
    delta_role = "unused"
    description = "rank admissible attribute partitions by a classifier (Srivastava et al. 2019)"
    test_parameters = {"table": ["slides"], "p": [2]}
    requirements = ("sklearn",)
    extra = "ml"

    def __init__(self, p: int = 2, pe: Any = None, ue: Any = None, ue_mode: str = "all",
                 objective: str = "naive_bayes", metric: str = "accuracy",
                 positive: Any = None, v: float = 1.0, h: float = 1.0, folds: int = 5,
                 table: str = "problem", class_column: str | None = None,
                 attributes: Any = None, executor: str = "local",
                 workers: int | None = None) -> None:
        self.p = p
        self.pe = pe
        self.ue = ue
        self.ue_mode = ue_mode
        self.objective = objective
        self.metric = metric
        self.positive = positive
        self.v = v
        self.h = h
        self.folds = folds
        self.table = table
        self.class_column = class_column
        self.attributes = attributes
        self.executor = executor
        self.workers = workers

    # -- data -------------------------------------------------------------------------
    def _table(self, problem: pb.PrivacyProblem) -> tuple[pd.DataFrame, str, list[str]]:
        """The table, its class column and the candidate attributes."""
        if self.table == "slides":
            frame = slides_table()
            cls = self.class_column or "class"
            default = [c for c in frame.columns if c != cls]
        else:
            if problem.records is None:
                raise pb.ValidationError("tradeoff: this dataset has no records table "
                                         "(use table=slides for the slides' example)")
            frame = problem.records
            cls = self.class_column or "private"
            named = [a for a in (problem.attributes or ()) if a in frame.columns and a != cls]
            default = named or [c for c in frame.columns if c not in RESERVED and c != cls]
        if cls not in frame.columns:
            raise pb.ValidationError(f"tradeoff: class_column {cls!r} is not a column; "
                                     f"columns: {', '.join(map(str, frame.columns))}")
        attributes = _as_list(self.attributes, "attributes") or default
        unknown = [a for a in attributes if a not in frame.columns]
        if unknown:
            raise pb.ValidationError(f"tradeoff: unknown attribute(s) {', '.join(unknown)}; "
                                     f"columns: {', '.join(map(str, frame.columns))}")
        if cls in attributes:
            raise pb.ValidationError(f"tradeoff: the class column {cls!r} cannot be an attribute")
        return frame, cls, attributes

    def skip(self, problem: pb.PrivacyProblem) -> tuple[bool, str | None]:
        if self.table != "slides" and problem.records is None:
            return True, "tradeoff needs a table of records (problem.records); use table=slides"
        return False, None

    def check_params(self) -> None:
        """The checks that need no data (p's upper bound does: see ``_validate``)."""
        p = self.p
        if not isinstance(p, int) or isinstance(p, bool) or p < 1:
            raise pb.ValidationError(f"tradeoff: p must be an integer >= 1; got {p!r}")
        self._validate(None)
        self.context.executor(self.executor)  # an unknown executor is a bad parameter

    def _validate(self, n_attributes: int | None) -> tuple[list, list]:
        p = self.p
        if n_attributes is not None and (not isinstance(p, int) or isinstance(p, bool)
                                         or not 1 <= p <= n_attributes):
            raise pb.ValidationError(
                f"tradeoff: p must be an integer in 1..{n_attributes} (the number of "
                f"attributes); got {p!r}")
        for name, allowed in (("objective", OBJECTIVES), ("metric", METRICS),
                              ("ue_mode", UE_MODES), ("table", ("problem", "slides"))):
            if getattr(self, name) not in allowed:
                raise pb.ValidationError(f"tradeoff: {name} must be one of {', '.join(allowed)}; "
                                         f"got {getattr(self, name)!r}")
        for name in ("v", "h"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) \
                    or not 0 < value <= 1:
                raise pb.ValidationError(f"tradeoff: {name} must be in (0, 1]; got {value!r}")
        if not isinstance(self.folds, int) or isinstance(self.folds, bool) or self.folds < 2:
            raise pb.ValidationError(f"tradeoff: folds must be an integer >= 2; got {self.folds!r}")
        pe = parse_combinations(self.pe, "pe")
        ue = parse_combinations(self.ue, "ue")
        for what, combos in (("pe", pe), ("ue", ue)):
            for combo in combos:
                if len(combo) > p:
                    raise pb.ValidationError(
                        f"tradeoff: {what} combination {combo} is larger than p = {p}")
        return pe, ue

    def _executor(self) -> pb.Executor:
        return self.context.executor(self.executor, self.workers)

    # -- solve ------------------------------------------------------------------------
    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        seed = self.context.seed
        if self.table not in TABLES:
            raise pb.ValidationError(f"tradeoff: table must be one of {', '.join(TABLES)}; "
                                     f"got {self.table!r}")
        frame, cls, attributes = self._table(problem)
        pe, ue = self._validate(len(attributes))
        for what, combos in (("pe", pe), ("ue", ue)):
            unknown = sorted({a for c in combos for a in c} - set(attributes))
            if unknown:
                raise pb.ValidationError(f"tradeoff: {what} names unknown attribute(s) "
                                         f"{', '.join(unknown)}; attributes: {', '.join(attributes)}")
        candidates = admissible_partitions(attributes, self.p, pe, ue, self.ue_mode)
        if not candidates:
            raise pb.ValidationError("tradeoff: no admissible partition (the exceptions rule "
                                     "out every combination)")
        rng = np.random.default_rng(seed if seed is not None else 0)
        chosen = [candidates[i] for i in sample_fraction(len(candidates), self.v, rng)]
        rows = sample_fraction(len(frame), self.h, rng)
        sample = frame.iloc[rows]
        y = sample[cls].to_numpy()
        if cls == "private" and problem.private_labels is not None and self.table == "problem":
            y = np.asarray(problem.private_labels, dtype=object)[y.astype(int)]
        y = y.astype(str)
        positive = self._positive(y)
        tasks = [{"frame": sample[list(part)].reset_index(drop=True), "y": y,
                  "attributes": part, "objective": self.objective, "metric": self.metric,
                  "positive": positive, "folds": self.folds,
                  "seed": int(seed) if seed is not None else 0}
                 for part in chosen]
        results = self._executor().map_tasks(evaluate_partition, tasks)
        descending = self.metric not in ASCENDING
        order = sorted(range(len(results)),
                       key=lambda i: (-results[i]["score"] if descending else results[i]["score"], i))
        ranking = [{"rank": r + 1, **results[i]} for r, i in enumerate(order)]
        best = ranking[0]
        stats = {
            "n_attributes": len(attributes),
            "n_candidates": count_partitions(len(attributes), self.p),
            "n_admissible": len(candidates),
            "n_evaluated": len(chosen),
            "n_rows": int(len(frame)),
            "n_rows_used": int(len(rows)),
            "class_column": cls,
            "positive_class": positive,
            "best_partition": best["attributes"],
            "best_score": best["score"],
            "ranking": [[r["attributes"], r["score"]] for r in ranking],
        }
        return pb.MechanismResult(kind=self.output, selection=ranking, stats=stats)

    def _positive(self, y: np.ndarray) -> str:
        classes, counts = np.unique(y, return_counts=True)
        if len(classes) < 2:
            raise pb.ValidationError("tradeoff: the class attribute has a single value")
        if self.positive is not None:
            if str(self.positive) not in classes:
                raise pb.ValidationError(f"tradeoff: positive class {self.positive!r} not among "
                                         f"{', '.join(classes)}")
            return str(self.positive)
        if self.metric in ("fpr", "auc") and len(classes) > 2:
            raise pb.ValidationError("tradeoff: fpr and auc need a binary class or positive=LABEL")
        return str(classes[np.argmin(counts)])  # the minority class, e.g. >50K


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [TradeoffModel]
