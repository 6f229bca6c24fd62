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
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privbench.protocol.outputs import declared, resamples_of

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
        """True when the interval excludes zero: the raw test. ``compare`` words a verdict
        with the difference's resolution too (:mod:`privbench.results.verdicts`): a
        difference of 1e-8 bits whose paired interval excludes zero is "equal within
        resolution" there, not significant."""
        return self.low > 0 or self.high < 0

    def verdict(self, better_is_lower: bool = True) -> str:
        """'a better', 'b better' or :data:`NOT_DISTINGUISHABLE`."""
        if not self.significant:
            return NOT_DISTINGUISHABLE
        a_lower = self.high < 0
        return "a better" if a_lower == better_is_lower else "b better"


def paired_difference(metrics_a: Mapping[str, Any] | None, metrics_b: Mapping[str, Any] | None,
                      output: str, *, level: float = 0.95) -> PairedDifference | None:
    """The paired bootstrap of ``output`` between two runs' ``metrics`` dicts.

    None when either run has no bootstrap samples of ``output`` or the two were not drawn
    from the same resamples (different data, seed or count: pairing would be wrong).
    The interval is the bias-corrected normal interval of the difference, as each run's
    own away from its boundary (:func:`privbench.plugins.metrics.bootstrap.normal_interval`):
    centred on 2 diff̂ - mean(diff*) (the bootstrap bias mean(diff*) - diff̂ subtracted
    once), ± z sd(diff*). A difference has no boundary to test (it may take either sign),
    so no boundary test; its interval is clipped to what a difference of the two outputs
    can be (identity against constant on five users: [0.61, 1.63] bits unclipped, where
    |A| = 2 bounds the difference by 1 bit), when both runs store their ``ranges``.
    """
    a, b = resamples_of(metrics_a), resamples_of(metrics_b)
    if a is None or b is None or a.get("key") is None or a.get("key") != b.get("key"):
        return None
    va, vb = a["samples"].get(output), b["samples"].get(output)
    if va is None or vb is None or len(va) != len(vb) or not va:
        return None
    diff = np.asarray(va, dtype=float) - np.asarray(vb, dtype=float)
    if not np.all(np.isfinite(diff)):
        return None
    from scipy.special import ndtri

    centre = _point(metrics_a, output, va) - _point(metrics_b, output, vb)
    corrected = 2 * centre - float(diff.mean())
    half = float(ndtri((1 + level) / 2)) * (float(diff.std(ddof=1)) if diff.size > 1 else 0.0)
    low, high = _clipped(corrected - half, corrected + half, a, b, output)
    return PairedDifference(output, centre, low, high, diff.size)


def _clipped(low: float, high: float, a: Mapping[str, Any], b: Mapping[str, Any],
             output: str) -> tuple[float, float]:
    """[low, high] within [lo_a - hi_b, hi_a - lo_b] when both draws store ``output``'s
    range (records stored before ``ranges`` existed are left as they are)."""
    range_a = (a.get("ranges") or {}).get(output)
    range_b = (b.get("ranges") or {}).get(output)
    if not range_a or not range_b:
        return low, high
    least, most = range_a[0] - range_b[1], range_a[1] - range_b[0]
    return float(min(max(low, least), most)), float(max(min(high, most), least))


def _point(metrics: Mapping[str, Any] | None, output: str, samples: list[float]) -> float:
    """The run's own estimate of ``output`` (stored beside the samples), else their mean."""
    estimates = (resamples_of(metrics) or {}).get("estimates") or {}
    value = estimates.get(output)
    return float(value) if value is not None else float(np.mean(samples))


@dataclass(frozen=True)
class Replicates:
    """Mean ± standard deviation of one output over replicate runs (different seeds)."""

    mean: float
    sd: float
    count: int

    def __str__(self) -> str:
        from privbench.results.verdicts import is_noise

        if self.count < 2:
            return f"{self.mean:.4g}"
        sd = 0.0 if is_noise(self.sd, self.mean) else self.sd  # 4e-18 is rounding, not spread
        return f"{self.mean:.4g} ± {sd:.2g} (n={self.count})"


def replicates(values: Iterable[float | None]) -> Replicates | None:
    """Summarise replicate values (None and NaN dropped); sd is the sample sd (ddof=1)."""
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not kept:
        return None
    arr = np.asarray(kept)
    sd = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return Replicates(float(arr.mean()), sd, int(arr.size))


#: data-set parameters that only pick a replicate (a surrogate draw, a held-out split, a
#: random instance): runs that differ only by them are replicates of one experiment
REPLICATE_PARAMS = ("seed", "holdout_seed")
_REPLICATE = re.compile(r"(?<=[\[,])(?:" + "|".join(REPLICATE_PARAMS) + r")=[^,\]]*,?")


def replicate_group(instance: str) -> str:
    """The instance name without its replicate parameters (``surrogate[seed=2]`` ->
    ``surrogate``; ``census[top_k=300,holdout_seed=1]`` -> ``census[top_k=300]``)."""
    text = _REPLICATE.sub("", instance).replace(",]", "]").replace("[]", "")
    return text


def collapse_replicates(runs: pd.DataFrame, outputs: list[str]) -> pd.DataFrame:
    """One row per (replicate group, label, Δ): the mean of each output and of the
    distortion over its replicates (run seeds and data-set seeds), with ``replicates``
    (the count) and ``<output>_sd`` columns; other columns from the group's first run.

    Pareto curves drawn from the collapsed rows follow the mean, not the luckiest seed.
    """
    from privbench.results.verdicts import is_noise
    from privbench.results.views import output_values

    if runs.empty:
        return runs.assign(replicates=pd.Series(dtype=int))
    intervals = {rel.name for rel in declared().relations("interval").values()}
    df = runs.copy()
    df["instance"] = df["instance"].map(replicate_group)
    names = list(dict.fromkeys(["distortion", *outputs]))
    for name in names:
        df[f"__{name}"] = output_values(df, name).astype(float)
    rows = []
    for _, g in df.groupby(["instance", "label", "delta"], sort=True, dropna=False):
        first = g.iloc[0].copy()
        first["replicates"] = len(g)
        metrics = dict(first["metrics"]) if isinstance(first["metrics"], dict) else {}
        for name in names:
            summary = replicates(g[f"__{name}"])
            mean = summary.mean if summary else math.nan
            sd = summary.sd if summary else math.nan
            if name in first.index and name not in ("metrics",):
                first[name] = mean
            else:
                metrics[name] = mean
            first[f"{name}_sd"] = sd
        # replicates that differ only by rounding (~1e-17) keep their draws: they pair
        if len(g) > 1 and not all(is_noise(first[f"{n}_sd"], first.get(n, metrics.get(n)))
                                  for n in names):
            for name in declared().carrying("resamples"):  # a mean of different runs
                metrics.pop(name, None)  # has no draws of its own
            for key in [k for k in metrics if k in intervals]:
                del metrics[key]
        first["metrics"] = metrics
        rows.append(first)
    out = pd.DataFrame(rows).drop(columns=[f"__{n}" for n in names])
    return out.reset_index(drop=True)


def replicate_difference(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float,
                         n_b: int) -> PairedDifference:
    """Difference of two replicate means with a normal 95 % interval,
    ±1.96·sqrt(sd_a²/n_a + sd_b²/n_b) (Welch's standard error; with few replicates it is
    optimistic, which the table's n shows)."""
    se = math.sqrt(sd_a**2 / n_a + sd_b**2 / n_b)
    diff = mean_a - mean_b
    return PairedDifference("", diff, diff - 1.96 * se, diff + 1.96 * se, min(n_a, n_b))
