"""The part of ``privbench compare`` that says which differences are real.

Per budget, one table: each mechanism's value with its 95 % bootstrap interval over
resampled users (or mean ± sd over replicates), and its difference to the most private
mechanism at that budget, worded by :mod:`privbench.results.verdicts`: "significant" only
when its interval (a paired bootstrap: the same resamples for both mappings; or over
replicates) lies beyond the difference's resolution; a run that stopped uncertified is
never ranked below another as if its value were final. See docs/error-bars.md.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from privbench.host.manager import get_host
from privbench.protocol.errors import PrivbenchError
from privbench.protocol.feasibility import within_budget
from privbench.protocol.metric import Output
from privbench.protocol.outputs import declared, interval_of, output_of
from privbench.results.significance import paired_difference, replicate_difference
from privbench.results.verdicts import (
    ABS_FLOOR,
    EQUAL,
    IDENTICAL,
    SIGNIFICANT,
    WITHIN_GAP,
    Resolution,
    Verdict,
    decide,
    is_noise,
    paired_samples,
    resolution,
    users_of,
)
from privbench.results.views import output_values


def _fmt(v: float) -> str:
    return ("inf" if v > 0 else "-inf") if math.isinf(v) else f"{v:.4g}"


def _value_cell(row: pd.Series, value: float, out: Output) -> str:
    count = int(row.get("replicates", 1) or 1)
    text = _fmt(value)
    if count > 1:
        sd = row.get(f"{out.name}_sd", math.nan)
        sd = 0.0 if is_noise(sd, value) and not pd.isna(sd) else sd  # 1e-18: rounding
        text = f"{_fmt(value)} ± {sd:.2g} (n={count})"
    if _converged(row) is False:
        gap = row.get("gap_bits")
        text += " (not certified" + ("" if gap is None or pd.isna(gap) else
                                     f", gap {float(gap):.3g} bits") + ")"
    return text


def _interval_cell(ci: tuple[float, float] | None) -> str:
    """[lo, hi]; an end within the absolute numeric floor of 0 is 0 (the constant mapping's
    resampled leakages are ~1e-17: its interval read [0, 8.171e-17])."""
    if ci is None:
        return "—"
    lo, hi = (0.0 if abs(v) <= ABS_FLOOR else v for v in ci)
    return f"[{_fmt(lo)}, {_fmt(hi)}]"


def _over_budget(row: pd.Series, budget: float) -> bool:
    """True when the run's E[d] exceeds the budget it was asked for (a mechanism that
    reads Δ otherwise, or ignores it): its leakage is not comparable at this budget."""
    d = row.get("distortion")
    return d is not None and not pd.isna(d) and not within_budget(float(d), budget)


def _distortion_cell(row: pd.Series, budget: float) -> str:
    """E[d] of the run, marked when it spends more than the budget (not comparable)."""
    d = row.get("distortion")
    if d is None or pd.isna(d):
        return "—"
    return f"{float(d):.4g}" + (" > Δ" if _over_budget(row, budget) else "")


def _converged(row: pd.Series) -> bool | None:
    """The run's ``metrics.converged`` (False: stopped at its cap without its certificate)."""
    value = output_of(row, "converged")
    return None if value is None else bool(value)


def _gap(row: pd.Series, out: Output) -> float | None:
    """The run's certified gap in the output's unit: ``gap_bits`` for I(A; B̂) only."""
    g = row.get("gap_bits") if out.name == "mi_bits" else None
    return None if g is None or pd.isna(g) else float(g)


def _identical(row: pd.Series, out: Output) -> bool:
    """Replicates (several seeds) whose values agree to rounding (e.g. a deterministic
    mechanism under several run seeds): they pair like one run."""
    return int(row.get("replicates", 1) or 1) > 1 and is_noise(row.get(f"{out.name}_sd", 0.0),
                                                                 _spread(row, out)[0])


def _varies(row: pd.Series, out: Output) -> bool:
    """Replicates that disagree by more than rounding."""
    return int(row.get("replicates", 1) or 1) > 1 and not _identical(row, out)


def _spread(row: pd.Series, out: Output) -> tuple[float, float, int]:
    """(mean, sd, count) of a collapsed row's output."""
    mean = float(output_values(row.to_frame().T, out.name).iloc[0])
    sd = row.get(f"{out.name}_sd", 0.0)
    return mean, 0.0 if pd.isna(sd) else float(sd), int(row.get("replicates", 1) or 1)


def _boot(row: pd.Series) -> Any:
    """The run's per-resample payload (the output declared with payload="resamples")."""
    for name in declared().carrying("resamples"):
        found = output_of(row, name)
        if found is not None:
            return found
    return None


def _not_final(a: pd.Series, b: pd.Series, found: Verdict, estimate: float, res: Resolution,
               out: Output) -> str | None:
    """A difference whose less private side stopped uncertified is not ranked when the
    verdict would rank it (significant) or excuse it by that run's own gap (equal within
    the certified gaps): its value is not final (a longer run may go below the other's)."""
    by_gap = found.word == EQUAL and WITHIN_GAP in res.why
    if not (found.word == SIGNIFICANT or by_gap) or abs(estimate) <= res.numeric:
        return None
    a_worse = (estimate > 0) != (out.direction == "higher")
    worse = a if a_worse else b
    if _converged(worse) is not False:
        return None
    gap = worse.get("gap_bits")
    gap_text = "unknown" if gap is None or pd.isna(gap) else f"{float(gap):.3g} bits"
    return (f"not ranked: {worse['label']} is not certified (stopped at its cap, gap "
            f"{gap_text}); its value is not final")


def verdict(a: pd.Series, b: pd.Series, out: Output, min_diff: float = 0.0) -> str:
    """How run ``a`` compares with run ``b``: the difference, its interval, how it was
    tested and one of the verdicts of :mod:`privbench.results.verdicts`."""
    va, vb = _spread(a, out)[0], _spread(b, out)[0]
    users, diffs = None, None
    if _varies(a, out) or _varies(b, out):
        diff = replicate_difference(*_spread(a, out), *_spread(b, out))
        how = "over replicates"
    else:
        diff = paired_difference(a["metrics"], b["metrics"], out.name)
        how = "paired bootstrap"
        counts = [u for u in (users_of(_boot(a)), users_of(_boot(b))) if u is not None]
        users = min(counts) if counts else None
        diffs = paired_samples(_boot(a), _boot(b), out.name)
    if diff is None and _exact(a) and _exact(b):  # neither varies: else over replicates
        return _exact_difference(a, b, va - vb, out, min_diff)
    if diff is None:
        if _identical(a, out) and _identical(b, out):
            return (f"{_fmt(va - vb)} (over replicates): {IDENTICAL}, no spread to test "
                    "against (no paired bootstrap)")
        return "no paired bootstrap (no user records, or other draws)"
    res = _resolution(a, b, diff.estimate, out, min_diff)
    at_zero = _both_at_zero(a, b, out)
    span = _fmt(diff.estimate) if at_zero else \
        f"{_fmt(diff.estimate)} [{_fmt(diff.low)}, {_fmt(diff.high)}]"
    found = decide(diff.estimate, diff.low, diff.high, res, higher=out.direction == "higher",
                   users=users, diffs=diffs, both_at_zero=at_zero)
    return f"{span} ({how}): {_not_final(a, b, found, diff.estimate, res, out) or found.text()}"


def _exact(row: pd.Series) -> bool:
    """The run's data set is a distribution (no user records: ``metrics.user_records`` 0),
    so its values are exact, not estimates from a sample of users; and its mechanism is
    deterministic, or its replicates over seeds agree (one seed of a randomized mechanism
    is one draw of it)."""
    metrics = row.get("metrics")
    if not isinstance(metrics, dict) or metrics.get("user_records") != 0:
        return False
    if int(row.get("replicates", 1) or 1) > 1:
        return True
    try:
        return not getattr(get_host().get("mechanism", str(row.get("mechanism"))),
                           "randomized", True)
    except PrivbenchError:  # a mechanism no longer installed: its nature is unknown
        return False


def _exact_difference(a: pd.Series, b: pd.Series, estimate: float, out: Output,
                      min_diff: float) -> str:
    """The verdict on a difference between exact values (a distribution, no sampled users;
    replicates, if any, agree): there is no sampling spread, so the difference stands as
    measured, beyond the resolution (rounding, certified gaps, --min-diff) or not."""
    res = _resolution(a, b, estimate, out, min_diff)
    found = decide(estimate, estimate, estimate, res, higher=out.direction == "higher")
    text = _not_final(a, b, found, estimate, res, out) or found.text()
    if found.word == SIGNIFICANT:
        text += " (exact values: the data set is a distribution, not a sample of users)"
    return f"{_fmt(estimate)} (exact): {text}"


def _resolution(a: pd.Series, b: pd.Series, estimate: float, out: Output,
                min_diff: float) -> Resolution:
    """The resolution of a - b (:func:`privbench.results.verdicts.resolution`)."""
    lp = [output_of(r, "lp_gap") for r in (a, b)]
    return resolution((_spread(a, out)[0], _spread(b, out)[0]),
                      gaps=(_gap(a, out), _gap(b, out)), lp_gaps=(lp[0], lp[1]),
                      min_diff=min_diff, worse_gap=_worse_gap(a, b, estimate, out))


def _worse_gap(a: pd.Series, b: pd.Series, estimate: float, out: Output) -> float | None:
    """The certified gap of the less private of ``a`` and ``b`` (``estimate`` = a - b), when
    it has one and did not stop at its cap. Both rows of a table are at one budget Δ and the
    other run spends at most Δ, so the optimum at Δ is at most the other's value and the
    certified run's excess over it is at most its gap (I(A; B̂) only: ``_gap``)."""
    if estimate == 0 or out.direction == "neutral":
        return None
    worse, other = (a, b) if (estimate > 0) == (out.direction == "lower") else (b, a)
    budget = worse.get("delta")
    if budget is None or pd.isna(budget) or _over_budget(other, float(budget)):
        return None  # the optimum at the certified run's Δ need not be below the other's value
    return None if _converged(worse) is False else _gap(worse, out)


def _both_at_zero(a: pd.Series, b: pd.Series, out: Output) -> bool:
    """Both runs' own intervals of a leakage (lower is more private) are [0, 0] to the
    numeric floor: neither leaks anything detectable on this sample."""
    if out.direction != "lower":
        return False
    cis = [interval_of(r.to_frame().T, out.name).iloc[0] for r in (a, b)]
    return all(ci is not None and abs(ci[0]) <= ABS_FLOOR and abs(ci[1]) <= ABS_FLOOR
               for ci in cis)


def uncertainty_tables(collapsed: pd.DataFrame, budgets: list[float], out: Output,
                       instance: str, min_diff: float = 0.0) -> list[Any]:
    """One rich table per budget at which some run has an interval or replicates."""
    from rich.markup import escape
    from rich.table import Table

    tables = []
    values = output_values(collapsed, out.name)
    intervals = interval_of(collapsed, out.name)  # the output's declared interval
    for b in budgets:
        at = collapsed[(collapsed["delta"] == b) & values.notna()]
        has_ci = intervals[at.index].notna()
        if at.empty or not (has_ci.any() or (at.get("replicates", 1) > 1).any()):
            continue
        order = values[at.index].sort_values(ascending=out.direction != "higher")
        at = at.loc[order.index]
        within = pd.Series([not _over_budget(r, b) for _, r in at.iterrows()], index=at.index)
        at = pd.concat([at[within], at[~within]])
        best = at.iloc[0]
        how = ("exact values (the data set is a distribution: no sampled users)"
               if all(_exact(r) for _, r in at.iterrows()) else
               "95 % intervals over resampled users")
        table = Table(title=escape(f"{instance}: {out.name} at Δ = {b:g}, {how}; differences "
                                   f"to {best['label']} (paired bootstrap, or over replicates)"))
        for col in ("mechanism", out.name, "95 % interval", "E[d]", f"vs {best['label']}"):
            table.add_column(escape(col), justify="left" if col == "mechanism" else "right")
        for idx, row in at.iterrows():
            other = ("—" if idx == best.name else
                     "spends more than Δ: not compared" if _over_budget(row, b)
                     else verdict(row, best, out, min_diff))
            table.add_row(escape(str(row["label"])), _value_cell(row, float(values[idx]), out),
                          _interval_cell(intervals[idx]), _distortion_cell(row, b),
                          escape(other))
        tables.append(table)
    return tables
