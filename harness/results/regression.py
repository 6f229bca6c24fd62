"""Regression comparison of stored runs: what got worse between two sides, beyond noise.

The library behind ``privbench regress`` (which adds flags, tables and the exit status).
Runs are matched by ``run_key``. Worse means larger: I(A;B̂) (``mi_bits``), the certified
gap (``gap_bits``), the distortion and the runtime, or a run that was ok and no longer is.
Runtime is judged honestly about noise: a slow-down must exceed the factor and the noise
floor and, for runs with ``--repeat`` samples, the slowest base sample must be faster than
the fastest new one; a side with fewer than ``REPEATS_FOR_FACTOR`` samples is weaker
evidence and must be ``runtime_factor_single`` slower.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from privbench.protocol.errors import ValidationError
from privbench.results.store import open_existing

#: timed samples (``--repeat``) each side needs for ``--runtime-factor`` to apply
REPEATS_FOR_FACTOR = 3


@dataclass(frozen=True)
class Thresholds:
    """How much worse a quantity may get before it counts (defaults of the CLI flags)."""

    mi_bits: float = 1e-4          # absolute, bits
    gap_bits: float = 1e-4         # absolute, bits
    distortion: float = 1e-3       # relative to max(|base|, 1e-12)
    runtime_factor: float = 1.5    # new / base, both sides with REPEATS_FOR_FACTOR samples
    runtime_factor_single: float = 2.0  # new / base when a side has fewer samples
    runtime_min_s: float = 0.1     # noise floor: ignore slow-downs smaller than this many seconds


@dataclass(frozen=True)
class Change:
    """One quantity of one run that moved beyond its threshold."""

    run_key: str
    quantity: str
    base: Any
    new: Any
    verdict: str  # worse | better | missing

    def describe(self) -> str:
        """How much it moved: ``x1.80`` for a runtime, ``+0.002`` for a number, else ``a -> b``."""
        if isinstance(self.base, float) and isinstance(self.new, float):
            if self.quantity == "runtime_s" and self.base > 0:
                return f"x{self.new / self.base:.2f}"
            return f"{self.new - self.base:+.4g}"
        return f"{self.base} -> {self.new}"


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


#: the stored numbers regress compares; a value that is not a number is refused
COMPARED = ("mi_bits", "gap_bits", "distortion", "runtime_s")


def _check_numbers(key: str, side: str, row: dict[str, Any]) -> None:
    """A compared field holding text (``mi_bits = 'x'``) is a damaged store, not a pass."""
    for quantity in COMPARED:
        value = row.get(quantity)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, bool) or _num(value) is None or isinstance(value, str | bytes):
            raise ValidationError(f"{side} run {key}: {quantity} = {str(value)[:40]!r} is not a "
                                  "finite number; the store is damaged or not privbench's")


def compare_rows(key: str, base: dict[str, Any], new: dict[str, Any], t: Thresholds
                 ) -> list[Change]:
    """The changes beyond threshold between two records of the same run."""
    _check_numbers(key, "base", base)
    _check_numbers(key, "new", new)
    if base.get("status") != new.get("status"):
        if base.get("status") == "ok":
            return [Change(key, "status", base.get("status"), new.get("status"), "worse")]
        if new.get("status") == "ok":
            return [Change(key, "status", base.get("status"), new.get("status"), "better")]
        return []
    if base.get("status") != "ok":
        return []
    changes: list[Change] = []

    def check(quantity: str, worse: bool, better: bool) -> None:
        if worse or better:
            changes.append(Change(key, quantity, _num(base.get(quantity)),
                                  _num(new.get(quantity)), "worse" if worse else "better"))

    for quantity, tol in (("mi_bits", t.mi_bits), ("gap_bits", t.gap_bits)):
        b, n = _num(base.get(quantity)), _num(new.get(quantity))
        if b is not None and n is not None:
            check(quantity, n - b > tol, b - n > tol)
        elif b is not None and n is None and quantity == "gap_bits":
            changes.append(Change(key, quantity, b, None, "worse"))  # certificate lost
    b, n = _num(base.get("distortion")), _num(new.get("distortion"))
    if b is not None and n is not None:
        scale = t.distortion * max(abs(b), 1e-12)
        check("distortion", n - b > scale, b - n > scale)
    b, n = _num(base.get("runtime_s")), _num(new.get("runtime_s"))
    if b is not None and n is not None:
        b_lo, b_hi, b_count = _sample_range(base, b)
        n_lo, n_hi, n_count = _sample_range(new, n)
        # with repeats the medians must differ beyond the factor AND the samples must not
        # overlap: one slow sample on a shared machine is noise, not a regression; with
        # too few samples to see the noise, the slow-down must be larger
        factor = t.runtime_factor if min(b_count, n_count) >= REPEATS_FOR_FACTOR \
            else max(t.runtime_factor, t.runtime_factor_single)
        check("runtime_s", n > b * factor and n - b > t.runtime_min_s and n_lo > b_hi,
              b > n * factor and b - n > t.runtime_min_s and b_lo > n_hi)
    return changes


def _sample_range(row: dict[str, Any], runtime: float) -> tuple[float, float, int]:
    """(min, max, count) of a run's timed samples (``--repeat``), else its one runtime."""
    metrics = row.get("metrics")
    if isinstance(metrics, str):
        try:
            metrics = json.loads(metrics)
        except ValueError:
            metrics = None
    samples = [v for v in (_num(x) for x in ((metrics or {}).get("runtime_samples_s") or []))
               if v is not None]
    return (min(samples), max(samples), len(samples)) if samples else (runtime, runtime, 1)


def compare_frames(base: pd.DataFrame, new: pd.DataFrame, t: Thresholds
                   ) -> tuple[list[Change], dict[str, int]]:
    """Changes for every run key in ``base``; counts of compared/missing/added keys."""
    base_rows = {r["run_key"]: r for r in base.to_dict("records")}
    new_rows = {r["run_key"]: r for r in new.to_dict("records")}
    changes: list[Change] = []
    for key in sorted(base_rows):
        if key not in new_rows:
            changes.append(Change(key, "run", base_rows[key].get("status"), None, "missing"))
            continue
        changes.extend(compare_rows(key, base_rows[key], new_rows[key], t))
    counts = {"compared": len(set(base_rows) & set(new_rows)),
              "other_code": sum(base_rows[k].get("fingerprint") != new_rows[k].get("fingerprint")
                                or base_rows[k].get("fingerprint") is None
                                for k in set(base_rows) & set(new_rows)),
              "missing": len(set(base_rows) - set(new_rows)),
              "added": len(set(new_rows) - set(base_rows))}
    return changes, counts


def _latest(df: pd.DataFrame) -> pd.DataFrame:
    """The last row of every run key."""
    return df.drop_duplicates("run_key", keep="last")


def load_sides(base_db: str | Path, new_db: str | Path | None = None, *,
               base_sweep: str | None = None, new_sweep: str | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    """The base and new rows (one per run key) and a label for each: the latest rows of two
    stores, two sweeps of one or two stores, or (one store, no sweeps) each key's previous
    row against its latest."""
    with open_existing(base_db) as store:
        base_all = store.frame()
    if new_db is not None:
        with open_existing(new_db) as store:
            new_all = store.frame()
    else:
        new_all = base_all
    if (base_sweep is None) != (new_sweep is None):
        raise ValidationError("give both --base-sweep and --new-sweep, or neither")
    if base_sweep is not None:
        for name, df, sweep in (("base", base_all, base_sweep),
                                ("new", new_all, new_sweep)):
            if not (df["sweep_id"] == sweep).any():
                known = ", ".join(sorted(map(str, df["sweep_id"].dropna().unique()))) or "(none)"
                raise ValidationError(f"{name}: no runs with sweep id {sweep!r}; stored: {known}")
        base = _latest(base_all[base_all["sweep_id"] == base_sweep])
        new = _latest(new_all[new_all["sweep_id"] == new_sweep])
        return base, new, f"sweep {base_sweep}", f"sweep {new_sweep}"
    if new_db is not None:
        return _latest(base_all), _latest(new_all), str(base_db), str(new_db)
    # one store: previous row of each key against its latest row
    if base_all.empty:
        raise ValidationError(f"{base_db} holds no runs")
    ranked = base_all.groupby("run_key").cumcount(ascending=False)
    new = base_all[ranked == 0]
    base = base_all[ranked == 1]
    if base.empty:
        raise ValidationError(f"every run in {base_db} is stored once; nothing to compare "
                              "(give a second database, or --base-sweep/--new-sweep)")
    return base, new[new["run_key"].isin(base["run_key"])], "previous", "latest"
