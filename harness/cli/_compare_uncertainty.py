"""The part of ``privbench compare`` that says which differences are real.

Per budget, one table: each mechanism's value with its 95 % bootstrap interval over
resampled users (or mean ± sd over replicates), and its difference to the most private
mechanism at that budget, called real only when a paired bootstrap (the same resamples
for both mappings) excludes zero. See docs/error-bars.md.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from privbench.protocol.feasibility import within_budget
from privbench.protocol.metric import Output
from privbench.results.significance import (
    NOT_DISTINGUISHABLE,
    paired_difference,
    replicate_difference,
)
from privbench.results.views import output_values

#: a difference below both runs' certified gaps is solver tolerance, not a finding
WITHIN_GAP = "within the certified gaps"


def _fmt(v: float) -> str:
    return ("inf" if v > 0 else "-inf") if math.isinf(v) else f"{v:.4g}"


def _value_cell(row: pd.Series, value: float, out: Output) -> str:
    count = int(row.get("replicates", 1) or 1)
    if count > 1:
        sd = row.get(f"{out.name}_sd", math.nan)
        return f"{_fmt(value)} ± {sd:.2g} (n={count})"
    return _fmt(value)


def _interval_cell(metrics: Any, out: Output) -> str:
    ci = metrics.get(f"{out.name}_ci95") if isinstance(metrics, dict) else None
    if not (isinstance(ci, list | tuple) and len(ci) == 2):
        return "—"
    return f"[{_fmt(float(ci[0]))}, {_fmt(float(ci[1]))}]"


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


def _within_gap(a: pd.Series, b: pd.Series, diff: float, out: Output) -> bool:
    """Both runs certify their leakage to within gap_bits and the difference is smaller."""
    if out.name != "mi_bits":
        return False
    gaps = [r.get("gap_bits") for r in (a, b)]
    if any(g is None or (isinstance(g, float) and math.isnan(g)) for g in gaps):
        return False
    return abs(diff) <= max(float(g) for g in gaps)


def _varies(row: pd.Series, out: Output) -> bool:
    """Replicates that disagree (identical replicates, e.g. a deterministic mechanism
    under several run seeds, pair like one run)."""
    sd = row.get(f"{out.name}_sd", 0.0)
    return int(row.get("replicates", 1) or 1) > 1 and not (sd == 0 or pd.isna(sd))


def _spread(row: pd.Series, out: Output) -> tuple[float, float, int]:
    """(mean, sd, count) of a collapsed row's output."""
    mean = float(output_values(row.to_frame().T, out.name).iloc[0])
    sd = row.get(f"{out.name}_sd", 0.0)
    return mean, 0.0 if pd.isna(sd) else float(sd), int(row.get("replicates", 1) or 1)


def verdict(a: pd.Series, b: pd.Series, out: Output) -> str:
    """How run ``a`` compares with run ``b`` (single runs; replicates are shown as sd)."""
    if _varies(a, out) or _varies(b, out):
        diff = replicate_difference(*_spread(a, out), *_spread(b, out))
        how = "over replicates"
    else:
        diff = paired_difference(a["metrics"], b["metrics"], out.name)
        how = "paired bootstrap"
    if diff is None:
        return "no paired bootstrap (no user records, or other draws)"
    span = f"{_fmt(diff.estimate)} [{_fmt(diff.low)}, {_fmt(diff.high)}]"
    if not diff.significant:
        return f"{span} ({how}): {NOT_DISTINGUISHABLE}"
    if _within_gap(a, b, diff.estimate, out):
        return f"{span} ({how}): {WITHIN_GAP}"
    better = diff.high < 0 if out.direction != "higher" else diff.low > 0
    return f"{span} ({how}): significant, {'more' if better else 'less'} private"


def uncertainty_tables(collapsed: pd.DataFrame, budgets: list[float], out: Output,
                       instance: str) -> list[Any]:
    """One rich table per budget at which some run has an interval or replicates."""
    from rich.markup import escape
    from rich.table import Table

    tables = []
    values = output_values(collapsed, out.name)
    for b in budgets:
        at = collapsed[(collapsed["delta"] == b) & values.notna()]
        has_ci = at["metrics"].map(lambda m: isinstance(m, dict) and f"{out.name}_ci95" in m)
        if at.empty or not (has_ci.any() or (at.get("replicates", 1) > 1).any()):
            continue
        order = values[at.index].sort_values(ascending=out.direction != "higher")
        at = at.loc[order.index]
        within = pd.Series([not _over_budget(r, b) for _, r in at.iterrows()], index=at.index)
        at = pd.concat([at[within], at[~within]])
        best = at.iloc[0]
        table = Table(title=escape(f"{instance}: {out.name} at Δ = {b:g}, 95 % intervals over "
                                   f"resampled users; differences to {best['label']} (paired "
                                   "bootstrap, or over replicates)"))
        for col in ("mechanism", out.name, "95 % interval", "E[d]", f"vs {best['label']}"):
            table.add_column(escape(col), justify="left" if col == "mechanism" else "right")
        for idx, row in at.iterrows():
            other = ("—" if idx == best.name else
                     "spends more than Δ: not compared" if _over_budget(row, b)
                     else verdict(row, best, out))
            table.add_row(escape(str(row["label"])), _value_cell(row, float(values[idx]), out),
                          _interval_cell(row["metrics"], out), _distortion_cell(row, b),
                          escape(other))
        tables.append(table)
    return tables
