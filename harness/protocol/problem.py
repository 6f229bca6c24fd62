"""The privacy problem every mechanism solves: a prior p(A, B) and a distortion d(b̂, b)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from privbench.protocol.distortion import Distortion, as_distortion
from privbench.protocol.errors import ValidationError
from privbench.protocol.joint import mutual_information_of_joint
from privbench.protocol.parts import PARTS, Catalog, Holdout, ProfileCoding, Ratings, Targets

if TYPE_CHECKING:
    import pandas as pd


def _as_joint(joint: Any) -> np.ndarray:
    """Validate a (|A|, n) pmf or table of counts and return it normalised."""
    raw = np.asarray(joint)
    if np.iscomplexobj(raw):
        raise ValidationError("joint has complex entries; a pmf or table of counts is real")
    try:
        P = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"joint must be a numeric (|A|, n) array: {exc}") from None
    if P.ndim != 2:
        raise ValidationError(f"joint must be a 2-D (|A|, n) array; got shape {P.shape}")
    if P.shape[0] < 1 or P.shape[1] < 1:
        raise ValidationError(f"joint must have at least one private and one public value; got {P.shape}")
    if np.isnan(P).any():
        a, b = np.argwhere(np.isnan(P))[0]
        raise ValidationError(f"joint has NaN at (a={a}, b={b})")
    if np.isinf(P).any():
        a, b = np.argwhere(np.isinf(P))[0]
        raise ValidationError(f"joint has an infinite value at (a={a}, b={b})")
    if (P < 0).any():
        a, b = np.argwhere(P < 0)[0]
        raise ValidationError(f"joint has a negative probability {P[a, b]:g} at (a={a}, b={b})")
    # scale by the largest entry first: counts near 1e308 would overflow the plain sum
    # to inf and turn the prior into zeros (every mechanism would then "leak" 0 bits)
    peak = P.max()
    if peak <= 0:
        raise ValidationError("joint has zero total mass; expected a pmf or non-negative counts")
    P = P / peak
    return P / P.sum()


@dataclass(frozen=True, eq=False)
class PrivacyProblem:
    """A prior p(A, B) over |A| private and n public values, plus the distortion d.

    ``joint[a, j] = p(A = a, B = b_j)`` (normalised); ``distortion`` evaluates
    d(b̂_i, b_j). Optional context travels with the problem so that record-level
    metrics (attacks, recommendation quality) can run: ``records`` has one row per user
    with an integer column ``private`` (index into ``private_labels``) and ``symbol``
    (index into the alphabet, -1 when the user's profile is outside it); ``features`` is
    a per-record feature matrix.
    """

    joint: np.ndarray
    distortion: Distortion
    symbols: Sequence[Any] | None = None
    attributes: tuple[str, ...] | None = None
    private_labels: tuple[Any, ...] | None = None
    records: pd.DataFrame | None = None
    features: np.ndarray | None = None
    name: str = "custom"
    meta: dict[str, Any] = field(default_factory=dict)
    coding: ProfileCoding | None = None
    ratings: Ratings | None = None
    targets: Targets | None = None
    catalog: Catalog | None = None
    holdout: Holdout | None = None

    @classmethod
    def from_arrays(
        cls,
        joint: Any,
        distortion: Any,
        *,
        symbols: Sequence[Any] | None = None,
        attributes: Sequence[str] | None = None,
        private_labels: Sequence[Any] | None = None,
        records: pd.DataFrame | None = None,
        features: np.ndarray | None = None,
        name: str = "custom",
        meta: dict[str, Any] | None = None,
        coding: ProfileCoding | None = None,
        ratings: Ratings | None = None,
        targets: Targets | None = None,
        catalog: Catalog | None = None,
        holdout: Holdout | None = None,
    ) -> PrivacyProblem:
        """Build a validated problem from a pmf (or counts) and a distortion.

        :param joint: (|A|, n) non-negative array; normalised to sum to one.
        :param distortion: a :class:`Distortion` or an (n, n) matrix with
            ``D[i, j] = d(b̂_i, b_j) >= 0``.
        """
        P = _as_joint(joint)
        dist = as_distortion(distortion, P.shape[1])
        if symbols is not None and len(symbols) != P.shape[1]:
            raise ValidationError(f"{len(symbols)} symbols given for n = {P.shape[1]} public values")
        if private_labels is not None and len(private_labels) != P.shape[0]:
            raise ValidationError(
                f"{len(private_labels)} private labels given for |A| = {P.shape[0]} private values"
            )
        return cls(
            joint=P,
            distortion=dist,
            symbols=list(symbols) if symbols is not None else None,
            attributes=tuple(attributes) if attributes is not None else None,
            private_labels=tuple(private_labels) if private_labels is not None else None,
            records=records,
            features=features,
            name=name,
            meta=dict(meta or {}),
            coding=coding,
            ratings=ratings,
            targets=targets,
            catalog=catalog,
            holdout=holdout,
        )

    def missing_parts(self, needs: tuple[str, ...] | frozenset[str]) -> list[str]:
        """The parts of ``needs`` (names of :data:`~privbench.protocol.parts.PARTS`) this
        problem lacks, in order."""
        return [name for name in needs if name in PARTS and getattr(self, name) is None]

    def for_run(self) -> PrivacyProblem:
        """The copy one run receives: shared read-only arrays, its own tables and parts."""
        changes: dict[str, Any] = {"meta": copy.deepcopy(self.meta),
                                   "distortion": copy.copy(self.distortion)}
        if self.records is not None:
            changes["records"] = self.records.copy()
        for name in ("coding", "ratings", "targets", "catalog", "holdout"):
            part = getattr(self, name)
            if part is not None:
                changes[name] = part.for_run()
        view = copy.copy(self)
        view.__dict__.update(changes)
        return view

    @property
    def n(self) -> int:
        """Public alphabet size."""
        return self.joint.shape[1]

    @property
    def n_private(self) -> int:
        """|A|, the number of private values (rows of the joint)."""
        return self.joint.shape[0]

    @cached_property
    def p_b(self) -> np.ndarray:
        """Marginal p(b_j)."""
        return self.joint.sum(axis=0)

    @cached_property
    def p_a(self) -> np.ndarray:
        """Marginal p(a)."""
        return self.joint.sum(axis=1)

    @cached_property
    def prior_mi_bits(self) -> float:
        """I(A; B) in bits: the leakage of releasing B as it is."""
        return mutual_information_of_joint(self.joint)

    def require_zero_diagonal(self, mechanism: str = "this mechanism") -> None:
        """Raise unless d(b, b) = 0 for every b (the identity then has zero distortion)."""
        diag = self.distortion.diagonal()
        bad = np.flatnonzero(np.abs(diag) > 1e-12)
        if bad.size:
            j = int(bad[0])
            raise ValidationError(
                f"{mechanism} needs d(b, b) = 0 for every symbol; d({j}, {j}) = {diag[j]:g}"
            )

    def describe(self) -> dict[str, Any]:
        """Plain-data summary for stores and reports."""
        return {
            "name": self.name,
            "n": self.n,
            "n_private": self.n_private,
            "distortion": self.distortion.name,
            "prior_mi_bits": self.prior_mi_bits,
            **{k: v for k, v in self.meta.items() if isinstance(v, str | int | float | bool)},
        }
