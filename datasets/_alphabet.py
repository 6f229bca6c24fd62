"""From per-user profiles to a prior p(A, B): alphabets, top-K, per-attribute leakage.

Every tabular adapter ends the same way: each user has an integer-coded public
profile (one column per attribute) and a private label. The alphabet is the set of
distinct profiles, ordered by frequency (most probable first, ties broken by the
codes so the order is reproducible), optionally cut to the ``top_k`` most probable;
users whose profile is cut get ``symbol = -1`` and are left out of the prior, which is
then the empirical joint of the remaining users (as in the SPPM paper's census setup).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from privbench.measures.information import attribute_leakage_bits
from privbench.protocol.errors import DataError, ValidationError

if TYPE_CHECKING:
    import pandas as pd


def parse_top_k(value: Any, *, dataset: str, default_all: bool = False) -> int | None:
    """``top_k`` as a positive int, or None for every profile (``all``/``none``)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("all", "none")):
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        else:
            raise ValidationError(
                f"{dataset}: top_k must be a positive integer or 'all'; got {value!r}"
            )
    if int(value) < 1:
        raise ValidationError(f"{dataset}: top_k must be >= 1 or 'all'; got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Alphabet:
    """The result of :func:`build_alphabet`.

    ``codes[j]`` is the profile of symbol j (integer codes, one per attribute);
    ``counts[a, j]`` how many users with private value a have it; ``symbol[r]`` the
    symbol of user r (-1 when outside the alphabet).
    """

    codes: np.ndarray
    counts: np.ndarray
    symbol: np.ndarray
    n_distinct: int

    @property
    def n(self) -> int:
        return self.codes.shape[0]

    @property
    def coverage(self) -> float:
        """Share of users whose profile is in the alphabet."""
        return float((self.symbol >= 0).mean()) if self.symbol.size else 0.0


def build_alphabet(profiles: np.ndarray, private: np.ndarray, n_private: int,
                   top_k: int | None, *, dataset: str) -> Alphabet:
    """Count distinct profiles per private value and keep the ``top_k`` most probable.

    :param profiles: (users, attributes) integer codes.
    :param private: (users,) private value index in ``range(n_private)``.
    :raises DataError: when there are no users (an empty alphabet after filtering).
    """
    X = np.asarray(profiles)
    if X.ndim != 2:
        raise ValidationError(f"{dataset}: profiles must be 2-D; got shape {X.shape}")
    if X.shape[0] == 0:
        raise DataError(
            f"{dataset}: no users left after filtering, so the public alphabet is empty; "
            "check the filtering parameters (missing values, columns, top_k)"
        )
    X = X.astype(np.int64, copy=False)
    if X.shape[1] == 0:
        uniq = np.zeros((1, 0), dtype=np.int64)
        inverse = np.zeros(X.shape[0], dtype=np.int64)
    else:
        uniq, inverse = np.unique(X, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
    counts = np.zeros((n_private, uniq.shape[0]), dtype=np.int64)
    np.add.at(counts, (np.asarray(private, dtype=np.int64), inverse), 1)
    total = counts.sum(axis=0)
    # most probable first; np.unique sorted the codes lexicographically, and a stable
    # sort keeps that order among equal counts
    order = np.argsort(-total, kind="stable")
    if top_k is not None:
        order = order[:top_k]
    rank = np.full(uniq.shape[0], -1, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return Alphabet(codes=uniq[order], counts=counts[:, order], symbol=rank[inverse],
                    n_distinct=int(uniq.shape[0]))


def check_private(labels: pd.Series, *, dataset: str, column: str) -> tuple[np.ndarray, tuple]:
    """Integer-code the private column; it must take at least two values."""
    import pandas as pd

    values = pd.Series(labels).dropna()
    distinct = sorted(values.unique().tolist(), key=lambda v: (str(type(v)), v))
    if len(distinct) < 2:
        shown = "one value" if distinct else "no value"  # never the value: it is data
        raise DataError(
            f"{dataset}: the private column {column!r} takes {shown} only; it needs at least "
            "two values for there to be anything to protect"
        )
    index = {v: i for i, v in enumerate(distinct)}
    return np.array([index[v] for v in labels], dtype=np.int64), tuple(distinct)


def map_accuracy(joint: np.ndarray) -> float:
    """Accuracy of the MAP guess of A from B under ``joint``: Σ_b max_a p(a, b)."""
    P = np.asarray(joint, dtype=float)
    P = P / P.sum()
    return float(P.max(axis=0).sum())


def attribute_mutual_information(joint: np.ndarray, codes: np.ndarray,
                                 attributes: tuple[str, ...] | list[str],
                                 mapping: Any = None,
                                 labels: list[list[Any]] | None = None) -> pd.DataFrame:
    """I(A; F) in bits for each public attribute F of the profiles (SPPM paper, Table 1).

    ``codes[j, k]`` is the value of attribute k in symbol j. With a mapping X
    (X[i, j] = p(b̂_i | b_j)) the table also gives I(A; F̂) of the released attribute,
    computed exactly from p(a, b̂) = Σ_j p(a, b_j) X[i, j].
    """
    import pandas as pd

    P = np.asarray(joint, dtype=float)
    P = P / P.sum()
    released = None
    if mapping is not None:
        X = sp.csr_array(mapping) if sp.issparse(mapping) else np.asarray(mapping, dtype=float)
        released = np.asarray((X @ P.T).T)
    before = attribute_leakage_bits(P, codes)
    after = attribute_leakage_bits(released, codes) if released is not None else None
    rows = []
    for k, name in enumerate(attributes):
        values, inverse = np.unique(codes[:, k], return_inverse=True)
        row: dict[str, Any] = {"attribute": name, "values": int(values.size),
                               "mi_bits": float(before[k])}
        if labels is not None:
            mass = np.bincount(inverse.reshape(-1), weights=P.sum(axis=0), minlength=values.size)
            top = np.argsort(-mass, kind="stable")[:3]
            row["examples"] = ", ".join(str(labels[k][int(values[t])]) for t in top)
        if after is not None:
            row["mi_bits_released"] = float(after[k])
        rows.append(row)
    return pd.DataFrame(rows)


def one_hot(codes: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Concatenated one-hot encoding of integer-coded categorical columns (float)."""
    n = codes.shape[0]
    out = np.zeros((n, int(sum(sizes))), dtype=float)
    offset = 0
    for k, size in enumerate(sizes):
        out[np.arange(n), offset + codes[:, k]] = 1.0
        offset += size
    return out


def prior_summary(joint: np.ndarray, alphabet: Alphabet) -> dict[str, Any]:
    """Numbers every adapter puts in ``meta``."""
    return {
        "n_users": int(alphabet.symbol.size),
        "n_users_in_alphabet": int((alphabet.symbol >= 0).sum()),
        "coverage": alphabet.coverage,
        "n_distinct_profiles": alphabet.n_distinct,
        "map_accuracy": map_accuracy(joint),
    }


#: a table overfits when more than this share of its users are in profiles of at most
#: OVERFIT_SIZE users (each such profile nearly names its users' private values)
OVERFIT_SHARE = 0.5
OVERFIT_SIZE = 2


def _numeric(values: list[Any]) -> bool:
    """Whether a column's labels (its missing label aside) are all numbers."""
    try:
        [float(v) for v in values if v != "<missing>"]
    except (TypeError, ValueError):
        return False
    return bool(values)


def overfit_meta(codes: np.ndarray, columns: list[str], labels: list[list[Any]],
                 bins: dict[str, int], dataset: str) -> dict[str, Any]:
    """Warn (and return ``{"notes": [...]}`` for ``meta``) when the profiles overfit.

    More than half the users in profiles held by one or two users means the prior is
    mostly the users themselves: I(A; B) is then close to H(A) whatever the population
    is. The note names the columns with the most distinct values and suggests ``bins``.
    Empty when the profiles are fine.
    """
    import warnings

    X = np.asarray(codes, dtype=np.int64)
    if X.shape[0] == 0 or X.shape[1] == 0:
        return {}
    _, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    size = counts[inverse.reshape(-1)]
    share = float((size <= OVERFIT_SIZE).mean())
    if share <= OVERFIT_SHARE:
        return {}
    distinct = sorted(((len(labels[k]), c) for k, c in enumerate(columns)
                       if c not in bins), reverse=True)[:3]
    worst = ", ".join(f"{c} ({v} values)" for v, c in distinct) or "(every column is binned)"
    numeric = [c for _, c in distinct if _numeric(labels[columns.index(c)])]
    hint = (f"bucket numeric columns with bins=[{','.join(f'{c}:4' for c in numeric[:2])}] "
            "or leave many-valued columns out of public" if numeric
            else "leave many-valued columns out of public (or fewer bins)")
    note = (f"{dataset}: {share:.0%} of the {X.shape[0]} users are in profiles held by at most "
            f"{OVERFIT_SIZE} users ({counts.size} distinct profiles): the prior overfits and "
            f"I(A; B) will be close to H(A). Most distinct values: {worst}; {hint}")
    warnings.warn(note, UserWarning, stacklevel=3)
    return {"notes": [note]}
