"""Which differences between stored runs are real: paired bootstrap and replicates.

Runs on data built from user records carry, under ``metrics.bootstrap``, the value of each
exact privacy notion and the distortion on B resamples of the users (the ``bootstrap``
metric). Two runs whose draws have the same ``key`` were evaluated on the *same*
resamples, so the difference of their values resample by resample is the bootstrap
distribution of the difference (a paired bootstrap): a difference is called real only
when its 95 % interval excludes zero. Runs that differ only by seed (replicates) are
summarised as mean ± standard deviation with their count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

#: what ``compare`` prints when a difference is inside the paired interval
NOT_DISTINGUISHABLE = "not distinguishable on this sample"


@dataclass(frozen=True)
class PairedDifference:
    """The paired bootstrap interval of value(a) - value(b) for one output."""

    output: str
    estimate: float
    low: float
    high: float
    resamples: int

    @property
    def significant(self) -> bool:
        """True when the interval excludes zero (a difference that is not sampling noise)."""
        return self.low > 0 or self.high < 0

    def verdict(self, better_is_lower: bool = True) -> str:
        """'a better', 'b better' or :data:`NOT_DISTINGUISHABLE`."""
        if not self.significant:
            return NOT_DISTINGUISHABLE
        a_lower = self.high < 0
        return "a better" if a_lower == better_is_lower else "b better"


def _samples(metrics: Mapping[str, Any] | None) -> dict[str, Any] | None:
    boot = (metrics or {}).get("bootstrap")
    if not isinstance(boot, Mapping) or not isinstance(boot.get("samples"), Mapping):
        return None
    return dict(boot)


def paired_difference(metrics_a: Mapping[str, Any] | None, metrics_b: Mapping[str, Any] | None,
                      output: str, *, level: float = 0.95) -> PairedDifference | None:
    """The paired bootstrap of ``output`` between two runs' ``metrics`` dicts.

    None when either run has no bootstrap samples of ``output`` or the two were not drawn
    from the same resamples (different data, seed or count: pairing would be wrong).
    The interval is bias-corrected like each run's own (the percentiles of the paired
    differences shifted by mean(diff*) - diff̂).
    """
    a, b = _samples(metrics_a), _samples(metrics_b)
    if a is None or b is None or a.get("key") is None or a.get("key") != b.get("key"):
        return None
    va, vb = a["samples"].get(output), b["samples"].get(output)
    if va is None or vb is None or len(va) != len(vb) or not va:
        return None
    diff = np.asarray(va, dtype=float) - np.asarray(vb, dtype=float)
    if not np.all(np.isfinite(diff)):
        return None
    centre = _point(metrics_a, output, va) - _point(metrics_b, output, vb)
    bias = float(diff.mean()) - centre
    q_lo, q_hi = np.percentile(diff, [50 * (1 - level), 50 * (1 + level)]) - bias
    return PairedDifference(output, centre, float(q_lo), float(q_hi), diff.size)


def _point(metrics: Mapping[str, Any] | None, output: str, samples: list[float]) -> float:
    """The run's own estimate of ``output`` (stored beside the samples), else their mean."""
    estimates = (_samples(metrics) or {}).get("estimates") or {}
    value = estimates.get(output)
    return float(value) if value is not None else float(np.mean(samples))


@dataclass(frozen=True)
class Replicates:
    """Mean ± standard deviation of one output over replicate runs (different seeds)."""

    mean: float
    sd: float
    count: int

    def __str__(self) -> str:
        if self.count < 2:
            return f"{self.mean:.4g}"
        return f"{self.mean:.4g} ± {self.sd:.2g} (n={self.count})"


def replicates(values: Iterable[float | None]) -> Replicates | None:
    """Summarise replicate values (None and NaN dropped); sd is the sample sd (ddof=1)."""
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not kept:
        return None
    arr = np.asarray(kept)
    sd = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return Replicates(float(arr.mean()), sd, int(arr.size))
