"""Trade-off summaries read off stored privacy-distortion curves.

A curve is a set of (distortion, leakage) points a mechanism achieved. Mixing two
mappings with weights (t, 1 - t) gives a mapping whose distortion is the same mix and
whose leakage is at most the same mix (I(A; B̂) is convex in p(b̂ | b)), so the straight
segment between two achieved points is achievable too. We therefore summarise a curve
by its Pareto front (leakage strictly falling as distortion grows) and interpolate
linearly between its points; nothing is extrapolated beyond the measured range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Curve",
    "distortion_for_leakage",
    "distortion_ratio",
    "leakage_at_distortion",
    "pareto_front",
]


@dataclass(frozen=True)
class Curve:
    """The Pareto front of a mechanism's (distortion, leakage) points, sorted by distortion."""

    distortion: np.ndarray
    leakage: np.ndarray

    @classmethod
    def from_points(cls, distortion: Iterable[float], leakage: Iterable[float]) -> Curve:
        d, i = pareto_front(distortion, leakage)
        return cls(d, i)

    def __len__(self) -> int:
        return int(self.distortion.size)


def pareto_front(distortion: Iterable[float], leakage: Iterable[float]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Points not dominated by another (less or equal distortion and less leakage).

    NaN / None points are dropped. :returns: (distortion, leakage), distortion ascending,
    leakage strictly descending.
    """
    d = np.asarray(list(distortion), dtype=float)
    i = np.asarray(list(leakage), dtype=float)
    if d.shape != i.shape:
        raise ValueError(f"{d.size} distortion values for {i.size} leakage values")
    keep = np.isfinite(d) & np.isfinite(i)
    d, i = d[keep], i[keep]
    order = np.lexsort((i, d))  # by distortion, then leakage
    d, i = d[order], i[order]
    front_d: list[float] = []
    front_i: list[float] = []
    for dv, iv in zip(d, i, strict=True):
        if not front_i or iv < front_i[-1]:
            if front_d and dv == front_d[-1]:  # same distortion, lower leakage: replace
                front_i[-1] = iv
            else:
                front_d.append(float(dv))
                front_i.append(float(iv))
    return np.asarray(front_d), np.asarray(front_i)


def _as_curve(curve: Curve | tuple[Sequence[float], Sequence[float]]) -> Curve:
    return curve if isinstance(curve, Curve) else Curve.from_points(*curve)


def distortion_for_leakage(curve: Curve | tuple[Sequence[float], Sequence[float]],
                           target: float) -> float | None:
    """Least distortion at which the curve brings the leakage to ``target`` or below.

    :returns: None when no measured point (or segment) reaches the target.
    """
    c = _as_curve(curve)
    if len(c) == 0:
        return None
    d, i = c.distortion, c.leakage
    hits = np.flatnonzero(i <= target)
    if hits.size == 0:
        return None
    k = int(hits[0])
    if k == 0:
        return float(d[0])
    # i[k-1] > target >= i[k]: interpolate on the segment
    t = (i[k - 1] - target) / (i[k - 1] - i[k])
    return float(d[k - 1] + t * (d[k] - d[k - 1]))


def leakage_at_distortion(curve: Curve | tuple[Sequence[float], Sequence[float]],
                          budget: float) -> float | None:
    """Least leakage reachable within distortion ``budget`` (interpolated on the front).

    :returns: None when the budget is below the smallest measured distortion.
    """
    c = _as_curve(curve)
    if len(c) == 0 or budget < c.distortion[0]:
        return None
    if budget >= c.distortion[-1]:
        return float(c.leakage[-1])
    return float(np.interp(budget, c.distortion, c.leakage))


def distortion_ratio(curve: Curve | tuple[Sequence[float], Sequence[float]],
                     reference: Curve | tuple[Sequence[float], Sequence[float]],
                     target: float) -> float | None:
    """How many times the reference's distortion ``curve`` needs to reach ``target``.

    "ExpMec needs 8x the distortion of SPPM" is ``distortion_ratio(expmec, sppm, t) == 8``.
    :returns: None when either curve misses the target; inf when only the reference
        reaches it at zero distortion.
    """
    a = distortion_for_leakage(curve, target)
    b = distortion_for_leakage(reference, target)
    if a is None or b is None:
        return None
    if b == 0:
        return 1.0 if a == 0 else float("inf")
    return a / b


#: mechanisms preferred as the reference of ratios, in order
REFERENCE_ORDER = ("sppm", "optimal")


def default_targets(prior_bits: float) -> list[float]:
    """Leakage targets when none are given: a quarter and a tenth of I(A; B)."""
    return [float(f"{prior_bits * f:.3g}") for f in (0.25, 0.1)]


def pick_reference(labels: Sequence[str]) -> str | None:
    """The mechanism other curves are compared with: sppm, else optimal, else the first."""
    for name in REFERENCE_ORDER:
        for label in sorted(labels):
            if label == name or label.startswith(name + "["):
                return label
    return sorted(labels)[0] if labels else None


@dataclass(frozen=True)
class MechanismSummary:
    """One row of a comparison table: a mechanism's curve read at matched points."""

    label: str
    points: int
    leakage_at: dict[float, float | None]
    distortion_for: dict[float, float | None]
    ratio: dict[float, float | None]


def summarise(curves: dict[str, Curve], *, targets: Sequence[float], budgets: Sequence[float],
              reference: str | None) -> list[MechanismSummary]:
    """Leakage at each budget, distortion for each target, and ratios to ``reference``."""
    ref = curves.get(reference) if reference else None
    rows = []
    for label in sorted(curves):
        c = curves[label]
        rows.append(MechanismSummary(
            label=label,
            points=len(c),
            leakage_at={b: leakage_at_distortion(c, b) for b in budgets},
            distortion_for={t: distortion_for_leakage(c, t) for t in targets},
            ratio={t: (distortion_ratio(c, ref, t) if ref is not None else None) for t in targets},
        ))
    return rows
