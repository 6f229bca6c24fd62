"""Shared plumbing of the record mechanisms (nullspace, laplace).

Turns a ``PrivacyProblem`` into a feature matrix, desired and confidential targets and a
seeded train/test split, fits the ally's linear predictor, and packs what a mechanism
released into the plain dict that ``privbench.plugins.metrics.records`` reads::

    {"kind": "feature_records", "original": X, "released": X̃, "desired": Y_d,
     "confidential": Y_c, "train": idx, "test": idx, "ally_weights": A_d,
     "ally_intercept": b_d, "offset": μ, ...}

Targets are looked up by name in ``problem.records`` (numeric columns as they are, a
two-valued column as 0/1, other categorical columns one-hot, i.e. multi-label); a data
set may name its default ones in the ``targets`` part (:class:`privbench.Targets`).
``desired`` / ``confidential`` may be one name, a list of names, or a string ``"a;b"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb

if TYPE_CHECKING:
    import pandas as pd

RECORDS_KIND = "feature_records"
#: columns of ``problem.records`` that are bookkeeping, never targets or features
RESERVED = ("symbol",)


def as_names(value: Any, what: str) -> list[str]:
    """Normalise a target parameter to a list of column names."""
    if value is None:
        return []
    if isinstance(value, str):
        names = [v.strip() for v in value.replace("+", ";").split(";") if v.strip()]
    elif isinstance(value, list | tuple):
        names = [str(v).strip() for v in value]
    else:
        raise pb.ValidationError(f"{what} must be a column name or a list of names; got {value!r}")
    if not names:
        raise pb.ValidationError(f"{what} is empty")
    return names


def _target_table(problem: pb.PrivacyProblem) -> pd.DataFrame:
    import pandas as pd

    if problem.records is None:
        return pd.DataFrame()
    return problem.records.drop(columns=[c for c in RESERVED if c in problem.records.columns])


def _default_targets(problem: pb.PrivacyProblem) -> tuple[list[str], list[str]]:
    """The data set's own desired / confidential targets (its ``targets`` part), if any."""
    if problem.targets is None:
        return [], []
    return list(problem.targets.desired), list(problem.targets.confidential)


def encode_targets(table: pd.DataFrame, names: list[str], what: str
                   ) -> tuple[np.ndarray, list[str]]:
    """Numeric columns as they are; two-valued columns 0/1; others one-hot."""
    import pandas as pd

    missing = [n for n in names if n not in table.columns]
    if missing:
        raise pb.ValidationError(
            f"{what}: unknown target column(s) {', '.join(missing)}; available: "
            f"{', '.join(map(str, table.columns)) or '(none)'}")
    blocks, labels = [], []
    for name in names:
        col = table[name]
        if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
            values = col.to_numpy(dtype=float)
            if not np.isfinite(values).all():
                raise pb.ValidationError(f"{what}: target column {name!r} has missing values")
            blocks.append(values[:, None])
            labels.append(name)
            continue
        cats = pd.Categorical(col)
        if (cats.codes < 0).any():
            raise pb.ValidationError(f"{what}: target column {name!r} has missing values")
        if len(cats.categories) == 2:
            blocks.append((cats.codes == 1).astype(float)[:, None])
            labels.append(f"{name}={cats.categories[1]}")
        else:
            blocks.append(np.eye(len(cats.categories))[cats.codes])
            labels.extend(f"{name}={c}" for c in cats.categories)
    return np.hstack(blocks), labels


@dataclass
class RecordData:
    """Features, targets and the split a record mechanism works on."""

    X: np.ndarray
    Y_d: np.ndarray
    Y_c: np.ndarray
    desired: list[str]
    confidential: list[str]
    train: np.ndarray
    test: np.ndarray
    offset: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


def missing_requirements(problem: pb.PrivacyProblem, desired: Any, confidential: Any
                         ) -> str | None:
    """Why this problem cannot feed a record mechanism (None when it can)."""
    if problem.features is None:
        return "needs numeric feature vectors (problem.features); this dataset has none"
    table = _target_table(problem)
    default_d, default_c = _default_targets(problem)
    want_d = as_names(desired, "desired") or default_d
    want_c = as_names(confidential, "confidential") or default_c
    if not want_d:
        return ("needs a desired target: pass desired=COLUMN "
                f"(columns: {', '.join(map(str, table.columns)) or 'none'})")
    if not want_c:
        want_c = ["private"] if "private" in table.columns else []
        if not want_c:
            return "needs a confidential target: pass confidential=COLUMN"
    missing = [n for n in want_d + want_c if n not in table.columns]
    if missing:
        return (f"target column(s) {', '.join(missing)} not in this dataset "
                f"(columns: {', '.join(map(str, table.columns)) or 'none'})")
    return None


def check_test_fraction(test_fraction: Any, what: str) -> None:
    if not (isinstance(test_fraction, int | float) and not isinstance(test_fraction, bool)
            and 0 <= test_fraction < 1):
        raise pb.ValidationError(f"{what}: test_fraction must be in [0, 1); got {test_fraction!r}")


def prepare(problem: pb.PrivacyProblem, *, desired: Any, confidential: Any,
            test_fraction: float, center: bool, seed: int | None, what: str) -> RecordData:
    """Build features, targets and a seeded split; ``test_fraction = 0`` means in-sample."""
    reason = missing_requirements(problem, desired, confidential)
    if reason:
        raise pb.ValidationError(f"{what}: {reason}")
    check_test_fraction(test_fraction, what)
    X = np.asarray(problem.features, dtype=float)
    if X.ndim != 2 or not np.isfinite(X).all():
        raise pb.ValidationError(f"{what}: problem.features must be a finite 2-D matrix")
    table = _target_table(problem)
    if len(table) != X.shape[0]:
        raise pb.ValidationError(f"{what}: {X.shape[0]} feature rows but {len(table)} target rows")
    default_d, default_c = _default_targets(problem)
    want_d = as_names(desired, "desired") or default_d
    want_c = as_names(confidential, "confidential") or default_c or ["private"]
    overlap = sorted(set(want_d) & set(want_c))
    if overlap:
        raise pb.ValidationError(f"{what}: {', '.join(overlap)} is both desired and confidential")
    Y_d, d_labels = encode_targets(table, want_d, f"{what} desired")
    Y_c, c_labels = encode_targets(table, want_c, f"{what} confidential")
    m = X.shape[0]
    rng = np.random.default_rng(seed if seed is not None else 0)
    perm = rng.permutation(m)
    n_test = int(round(test_fraction * m))
    if test_fraction > 0 and (n_test < 1 or m - n_test < 2):
        raise pb.ValidationError(f"{what}: {m} rows are too few for test_fraction={test_fraction}")
    test = np.sort(perm[:n_test]) if n_test else np.arange(m)
    train = np.sort(perm[n_test:]) if n_test else np.arange(m)
    offset = X[train].mean(axis=0) if center else np.zeros(X.shape[1])
    return RecordData(X=X, Y_d=Y_d, Y_c=Y_c, desired=d_labels, confidential=c_labels,
                      train=train, test=test, offset=offset)


def min_norm_lstsq(Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Minimum-norm least squares W = argmin |Z W - Y|.

    Tall matrices (many records, few features) go through the Gram matrix ZᵀZ and an
    eigen-pseudo-inverse, much faster than an SVD of Z; exact collinearity (one-hot
    dummies) gives eigenvalues at rounding level, which are dropped.
    """
    m, n = Z.shape
    if m < 4 * n:
        return np.linalg.lstsq(Z, Y, rcond=None)[0]
    lam, V = np.linalg.eigh(Z.T @ Z)
    keep = lam > max(lam.max(initial=0.0), 0.0) * n * 1e-13
    V = V[:, keep]
    return V @ ((V.T @ (Z.T @ Y)) / lam[keep][:, None])


def fit_linear(X: np.ndarray, Y: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares Y ≈ (X - offset) W + b (b = 0 when offset is zero: no intercept).

    With a zero offset the model has no intercept, as in the paper's toy example;
    otherwise the intercept is the mean target, since the centred features have mean 0
    on the rows the offset was taken from. Rank deficiency (one-hot dummies) gives the
    minimum-norm W, which lies in the row space of the data.
    """
    Z = X - offset
    if np.any(offset):
        b = Y.mean(axis=0)
        W = min_norm_lstsq(Z - Z.mean(axis=0), Y - b)
        b = b - Z.mean(axis=0) @ W
    else:
        W = min_norm_lstsq(Z, Y)
        b = np.zeros(Y.shape[1])
    return W, b


def pack(data: RecordData, released: np.ndarray, A_d: np.ndarray, b_d: np.ndarray,
         **extra: Any) -> dict[str, Any]:
    """The plain dict that record metrics read (see the module docstring)."""
    return {"kind": RECORDS_KIND, "original": data.X, "released": released,
            "desired": data.Y_d, "confidential": data.Y_c, "desired_labels": data.desired,
            "confidential_labels": data.confidential, "train": data.train, "test": data.test,
            "ally_weights": A_d, "ally_intercept": b_d, "offset": data.offset, **extra}


class AllyPredictorMechanism(pb.RecordMechanism):
    """What null-space cleaning and its Laplace comparison share: the ally's targets, a
    train/test split of the records, the least-squares ally predictor A_d fitted on the
    training rows, and the released records packed for the record metrics.

    Subclasses store ``variant``, ``desired``, ``confidential``, ``test_fraction`` and
    ``center`` in their ``__init__`` (the sklearn rule: every class declares its own).

    :param variant: the null-space algorithm: 1 (eigenvectors of A_d A_dᵀ, Algorithm 1) or 2
        (generalized eigenvectors against the adversary's least-squares predictor A_c,
        Algorithm 2).
    :param desired: the target columns the ally predicts, a name or a list (default: the data
        set's own desired targets).
    :param confidential: the target columns to hide, a name or a list (default: the data set's
        own confidential targets, else ``private``).
    :param test_fraction: the share of records (seeded by the run's seed) held out to measure
        the metrics on, in [0, 1); 0 measures in sample.
    :param center: work on x - μ, μ the training rows' mean, so removed components fall back to
        the mean (``false``: the paper's toy setting, no intercept).
    """

    variant: int
    desired: Any
    confidential: Any
    test_fraction: float
    center: bool

    def check_params(self) -> None:
        if self.variant not in (1, 2) or isinstance(self.variant, bool):
            raise pb.ValidationError(f"{self.name}: variant must be 1 or 2; got {self.variant!r}")
        check_test_fraction(self.test_fraction, self.name)

    def skip(self, problem: pb.PrivacyProblem) -> tuple[bool, str | None]:
        reason = missing_requirements(problem, self.desired, self.confidential)
        return (True, f"{self.name} {reason}") if reason else (False, None)

    def ally(self, problem: pb.PrivacyProblem, seed: int | None
             ) -> tuple[RecordData, np.ndarray, np.ndarray]:
        """The records split for this run and the ally's predictor (A_d, b_d)."""
        data = prepare(problem, desired=self.desired, confidential=self.confidential,
                       test_fraction=self.test_fraction, center=bool(self.center), seed=seed,
                       what=self.name)
        A_d, b_d = fit_linear(data.X[data.train], data.Y_d[data.train], data.offset)
        return data, A_d, b_d

    def released(self, data: RecordData, released: np.ndarray, A_d: np.ndarray,
                 b_d: np.ndarray, transform: Any, stats: dict[str, Any]) -> pb.MechanismResult:
        """The result: released rows packed with the split and the ally's weights."""
        records = pack(data, released, A_d, b_d, mechanism=self.name)
        return pb.MechanismResult(kind=self.output, records=records, transform=transform,
                                  stats=stats)
