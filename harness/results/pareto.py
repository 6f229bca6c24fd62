"""Trade-off summaries read off stored privacy-distortion curves.

A curve is a set of (distortion, value) points a mechanism achieved under one privacy
output (I(A; B̂) by default; any declared output with ``compare --by``). Mixing two
mappings with weights (t, 1 - t) gives a mapping whose distortion is the same mix; for an
output convex in the mapping (I(A; B̂) is) its value is at most the same mix, so the
straight segment between two achieved points is achievable too. We therefore summarise a
curve by its Pareto front (the value strictly improving as distortion grows) and, for
convex outputs, interpolate linearly between its points; for the others we read the best
point measured within the budget. Nothing is extrapolated beyond the measured range.
An output where higher is more private (attacker error, guessing entropy) is handled by
the same code with the order reversed; infinite values (a notion that is unbounded for a
mapping) stay on the curve and are never interpolated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from privbench.protocol.feasibility import budget_slack

__all__ = [
    "Curve",
    "distortion_for_leakage",
    "distortion_ratio",
    "leakage_at_distortion",
    "pareto_front",
    "rank_rows",
]


@dataclass(frozen=True)
class Curve:
    """The Pareto front of a mechanism's (distortion, value) points, sorted by distortion.

    ``leakage`` holds the values as measured (bits of I(A; B̂) by default); ``higher``
    says a higher value is more private; ``interpolate`` whether a segment between two
    points is achievable (see the module docstring).
    """

    distortion: np.ndarray
    leakage: np.ndarray
    higher: bool = False
    interpolate: bool = True

    @classmethod
    def from_points(cls, distortion: Iterable[float], leakage: Iterable[float], *,
                    higher: bool = False, interpolate: bool = True) -> Curve:
        """The curve of measured (distortion, leakage) points: their Pareto front (``higher``:
        for an output where a higher value is more private), interpolated between points."""
        d, i = pareto_front(distortion, leakage, higher=higher)
        return cls(d, i, higher, interpolate)

    def __len__(self) -> int:
        return int(self.distortion.size)

    def key(self, value: float | np.ndarray) -> float | np.ndarray:
        """``value`` in "lower is better" order (negated when higher is more private)."""
        return -value if self.higher else value


def pareto_front(distortion: Iterable[float], leakage: Iterable[float], *, higher: bool = False
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Points not dominated by another (less or equal distortion and a better value).

    NaN / None points and infinite distortions are dropped; infinite values are kept.
    :returns: (distortion, value), distortion ascending, the value strictly improving
        (descending, or ascending when ``higher``).
    """
    d = np.asarray(list(distortion), dtype=float)
    i = np.asarray(list(leakage), dtype=float)
    if d.shape != i.shape:
        raise ValueError(f"{d.size} distortion values for {i.size} leakage values")
    keep = np.isfinite(d) & ~np.isnan(i)
    d, i = d[keep], i[keep]
    k = -i if higher else i
    order = np.lexsort((k, d))  # by distortion, then by value, best first
    front_d: list[float] = []
    front_i: list[float] = []
    best: float | None = None
    for dv, kv, iv in zip(d[order], k[order], i[order], strict=True):
        if best is None or kv < best:
            if front_d and dv == front_d[-1]:  # same distortion, better value: replace
                front_i[-1] = float(iv)
            else:
                front_d.append(float(dv))
                front_i.append(float(iv))
            best = kv
    return np.asarray(front_d), np.asarray(front_i)


def _as_curve(curve: Curve | tuple[Sequence[float], Sequence[float]]) -> Curve:
    return curve if isinstance(curve, Curve) else Curve.from_points(*curve)


def reaching_points(curve: Curve | tuple[Sequence[float], Sequence[float]],
                    target: float) -> tuple[int, int] | None:
    """Where the curve first brings the value to ``target``: (i, j) the measured points it
    is read between (i == j: read at point j itself, its first point or, without
    interpolation, the first point that reaches it); None when none reaches it."""
    c = _as_curve(curve)
    k = c.key(c.leakage)
    hits = np.flatnonzero(k <= c.key(target))
    if hits.size == 0:
        return None
    j = int(hits[0])
    if j == 0 or not (c.interpolate and np.isfinite(k[j - 1])):
        return j, j
    return j - 1, j  # k[j-1] > target >= k[j]: on the segment


def distortion_for_leakage(curve: Curve | tuple[Sequence[float], Sequence[float]],
                           target: float) -> float | None:
    """Least distortion at which the curve brings the value to ``target`` (or better).

    :returns: None when no measured point (or segment) reaches the target.
    """
    c = _as_curve(curve)
    where = reaching_points(c, target)
    if where is None:
        return None
    i, j = where
    d, k, t = c.distortion, c.key(c.leakage), c.key(target)
    if i == j:
        return float(d[j])
    s = (k[i] - t) / (k[i] - k[j])
    return float(d[i] + s * (d[j] - d[i]))


def leakage_at_distortion(curve: Curve | tuple[Sequence[float], Sequence[float]],
                          budget: float) -> float | None:
    """Best value reachable within distortion ``budget`` (interpolated on a convex front).

    A point whose distortion exceeds ``budget`` by no more than the runner's tolerance
    (:func:`privbench.protocol.feasibility.within_budget`) is within it, as it is for the
    runner that accepted the run.

    :returns: None when the budget is below the smallest measured distortion.
    """
    c = _as_curve(curve)
    reach = budget + budget_slack(budget)
    if len(c) == 0 or reach < c.distortion[0]:
        return None
    j = int(np.searchsorted(c.distortion, reach, side="right")) - 1  # last point within
    if j == len(c) - 1 or c.distortion[j] >= budget:
        return float(c.leakage[j])
    left, right = c.leakage[j], c.leakage[j + 1]
    if not (c.interpolate and np.isfinite(left) and np.isfinite(right)):
        return float(left)
    s = (budget - c.distortion[j]) / (c.distortion[j + 1] - c.distortion[j])
    return float(left + s * (right - left))


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


def default_targets(prior_bits: float) -> list[float]:
    """Leakage targets when none are given: a quarter and a tenth of I(A; B)."""
    return [float(f"{prior_bits * f:.3g}") for f in (0.25, 0.1)]


def pick_reference(labels: Sequence[str], preferred: Sequence[str] = ()) -> str | None:
    """The curve other curves are compared with: the first mechanism of ``preferred`` (names,
    in order) that has a label, else the first label."""
    for name in preferred:
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


def rank_rows(rows: Sequence[MechanismSummary], budget: float | None, *, higher: bool = False
              ) -> list[MechanismSummary]:
    """``rows`` best first by their value at ``budget`` (more private first; rows that
    cannot be read there last, by label)."""
    def order(r: MechanismSummary) -> tuple[int, float, str]:
        v = r.leakage_at.get(budget) if budget is not None else None
        if v is None or np.isnan(v):
            return (1, 0.0, r.label)
        return (0, -v if higher else v, r.label)

    return sorted(rows, key=order)
