"""Typed optional parts of a problem: what some data sets carry beyond p(A, B) and d.

A mechanism declares the parts it needs in ``needs`` (the runner stores a run on a
problem without one as ``skip``, naming the part); a metric declares them in its
``needs`` too and simply does not apply without them. No metric or mechanism needs to
know which data set produced a part.

=============  ================================================================
``records``    one row per user (``PrivacyProblem.records``: ``private``, ``symbol``)
``features``   a per-record feature matrix (``PrivacyProblem.features``)
``coding``     the public profile as coded attributes (:class:`ProfileCoding`)
``ratings``    who rated which item how, and what each item counts toward (:class:`Ratings`)
``targets``    the labels a record mechanism keeps or hides (:class:`Targets`)
``catalog``    descriptive tables of the data set (:class:`Catalog`)
``holdout``    users the prior was not estimated from (:class:`Holdout`)
=============  ================================================================
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

PARTS = ("records", "features", "coding", "ratings", "targets", "catalog", "holdout")


def _readonly(value: Any) -> Any:
    """A copy a run may not change: arrays read-only views, tables copies."""
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    pandas = sys.modules.get("pandas")  # a table implies pandas is imported already
    if pandas is not None and isinstance(value, pandas.DataFrame | pandas.Series):
        return value.copy()
    if isinstance(value, list):
        return [_readonly(v) for v in value]
    if isinstance(value, dict):
        return {k: _readonly(v) for k, v in value.items()}
    return value


class Part:
    """Base of the parts: :meth:`for_run` is the copy one run receives."""

    def for_run(self) -> Part:
        """A copy whose arrays are read-only: what one run receives, so no run changes another's."""
        return dataclasses.replace(self, **{f.name: _readonly(getattr(self, f.name))
                                            for f in dataclasses.fields(self)})  # type: ignore[arg-type]


@dataclass(frozen=True)
class ProfileCoding(Part):
    """Each public attribute's code, for the alphabet and for every record.

    :param attribute_values: the label of each code, per attribute.
    :param profile_codes: (n, k) codes of each symbol of the alphabet.
    :param record_codes: (records, k) codes of every record, inside the alphabet or not.
    """

    attribute_values: list[list[Any]]
    profile_codes: np.ndarray
    record_codes: np.ndarray


@dataclass(frozen=True)
class Ratings(Part):
    """Ratings, for recommendation metrics (quantized-mapping paper, Table I).

    :param table: columns ``user_id`` (matching ``records["user_id"]``), ``item_id``,
        ``rating``.
    :param item_features: indexed by ``item_id``, one column per public profile
        coordinate: how much the item counts toward it (a movie's genres; 1 for the
        show a coordinate is about).
    """

    table: pd.DataFrame
    item_features: pd.DataFrame


@dataclass(frozen=True)
class Targets(Part):
    """The labels a record mechanism keeps predictable (``desired``) or hides
    (``confidential``), as columns of ``records``; ``true_weights`` when known."""

    desired: list[str]
    confidential: list[str]
    true_weights: np.ndarray | None = None


@dataclass(frozen=True)
class Catalog(Part):
    """Descriptive tables of a data set (items, users' preferences, a surrogate's design),
    for reports and users; no metric depends on them."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Holdout(Part):
    """Held-out users: drawn from the data set like the design users, but left out of
    the prior, so a mapping designed on the prior can be evaluated on people it never saw.

    :param joint: (|A|, n) counts of held-out users per private value and design symbol
        (users whose profile is outside the design alphabet are not in it).
    :param records: one row per held-out user, with ``private`` and ``symbol`` (-1 when
        the profile is outside the design alphabet) as in ``PrivacyProblem.records``.
    :param features: the held-out users' rows of the feature matrix, when there is one.
    """

    joint: np.ndarray
    records: pd.DataFrame
    features: np.ndarray | None = None

    @property
    def n_users(self) -> int:
        """Number of held-out records."""
        return int(len(self.records))

    @property
    def n_outside(self) -> int:
        """Held-out users whose profile is not in the design alphabet."""
        return int((self.records["symbol"].to_numpy() < 0).sum())
