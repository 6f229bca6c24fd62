"""Stored runs as a flat table for ``privbench results --export`` (CSV or Parquet).

A spreadsheet or a DataFrame wants one value per cell, so the nested parts of a run
record become columns: one per mechanism parameter (``param.tol``), per data-set
parameter (``dataset_param.top_k``), per metric that failed on some run
(``metric_error.nb_attack``: why, from the runner's ``metric_errors``), per declared output any run has (``mi_bits``,
``maximal_leakage``, ... with ``<interval>_lo`` / ``_hi`` where an output's declared
interval is stored: ``mi_bits_ci95_lo``, since the bootstrap declares ``mi_bits_ci95`` as
``mi_bits``'s interval) and per provenance entry (``provenance.git_commit``,
``provenance.packages.numpy``). What no declaration names stays, as JSON, in
``metrics_other``; nothing is lost.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from typing import Any

import pandas as pd

from privbench.protocol.metric import Output
from privbench.protocol.outputs import Declared
from privbench.protocol.record import JSON_FIELDS, RECORD_FIELDS, RECORD_SCHEMA

__all__ = ["export_frame"]

#: record fields by SQL type: integers stay integers (NULLs would make them 16.0), reals
#: stay numbers when every run has NULL there
INTEGER_FIELDS = tuple(name for name, decl in RECORD_SCHEMA if decl.startswith("INTEGER"))
REAL_FIELDS = tuple(name for name, decl in RECORD_SCHEMA if decl.startswith("REAL"))
#: the store's own columns, first in the export
STORE_FIELDS = ("id", "run_key", "sweep_id", "created_at")


def _intervals(outputs: Mapping[str, Output]) -> dict[str, str]:
    """Each declared interval's name -> the output it is the interval of."""
    table = outputs if isinstance(outputs, Declared) else Declared(outputs.values())
    return {rel.name: of for of, rel in table.relations("interval").items()}


def _cell(value: Any) -> Any:
    """A value fit for one cell: lists and dicts as JSON text."""
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def _flatten(data: Any, prefix: str) -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"prefix.a.b": 1}``; lists stay whole (as JSON)."""
    if not isinstance(data, dict):
        return {prefix: _cell(data)} if data is not None else {}
    flat: dict[str, Any] = {}
    for key in sorted(data):
        flat.update(_flatten(data[key], f"{prefix}.{key}"))
    return flat


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "float"
    return "str" if isinstance(value, str) else "other"


def _uniform(column: pd.Series, integer: bool = False) -> pd.Series:
    """One type per column (Parquet needs it): integers as nullable Int64 (also a stored
    integer field that NULLs turned into floats), a column mixing numbers and text
    (``top_k=300`` and ``top_k=all``) as text."""
    values = column.dropna()
    kinds = {_kind(v) for v in values}
    if not kinds:
        return pd.array([None] * len(column), dtype="Int64") if integer else column
    if kinds == {"int"} or (integer and kinds <= {"int", "float"}):
        return pd.array([None if pd.isna(v) else int(v) for v in column], dtype="Int64")
    if kinds <= {"int", "float"}:
        return column.astype(float)
    if len(kinds) == 1:
        return column
    return column.map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v))
                      else str(v))


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        try:
            return float(value[0]), float(value[1])
        except (TypeError, ValueError):
            return None
    return None


def _row(record: Mapping[str, Any], outputs: Mapping[str, Output]) -> dict[str, Any]:
    """One flat row: record fields, parameters, declared outputs, the rest, provenance."""
    row: dict[str, Any] = {k: record.get(k) for k in STORE_FIELDS if k in record}
    row.update({k: record.get(k) for k in RECORD_FIELDS if k not in JSON_FIELDS + ("run_key",)})
    row.update(_flatten(record.get("params") or {}, "param"))
    row.update(_flatten(record.get("dataset_params") or {}, "dataset_param"))
    row.update(_flatten(record.get("metric_errors") or {}, "metric_error"))
    metrics = dict(record.get("metrics") or {})
    # every stored declared interval ``[lo, hi]`` becomes two numeric columns
    intervals = _intervals(outputs)
    for key in [k for k in metrics if k in intervals]:
        ci = _interval(metrics[key])
        if ci is not None:
            metrics.pop(key)
            row[f"{key}_lo"], row[f"{key}_hi"] = ci
    for name in outputs:
        if name in intervals:
            continue  # split above (or absent)
        if row.get(name) is None and name in metrics:
            row[name] = _cell(metrics.pop(name))
        else:
            metrics.pop(name, None)  # a copy of a top-level field
    row["metrics_other"] = json.dumps(metrics, sort_keys=True, default=str) if metrics else None
    row.update(_flatten(record.get("provenance") or {}, "provenance"))
    return row


def export_frame(runs: pd.DataFrame, outputs: Mapping[str, Output]) -> pd.DataFrame:
    """``runs`` (as :meth:`ResultStore.frame` returns them) as one flat table.

    :param outputs: the declared outputs (``PluginHost.outputs()``); each one that some
        run has becomes a column, in declaration order after the record's own fields.
    """
    rows = [_row(r, outputs) for r in runs.to_dict("records")]
    if rows:  # values as given; types decided per column below
        flat = pd.DataFrame(rows, dtype=object)
    else:  # no run: the columns every export has (those of a run with nothing set), typed
        flat = pd.DataFrame({col: pd.Series([], dtype=object)
                             for col in _row(dict.fromkeys(STORE_FIELDS), outputs)})
    flat = flat[_order(list(flat.columns), outputs)]
    for col in flat.columns:
        if col in REAL_FIELDS:
            flat[col] = pd.to_numeric(flat[col], errors="coerce").astype(float)
        else:
            cells = flat[col].astype(object).where(flat[col].notna(), None)
            flat[col] = _uniform(cells, integer=col in INTEGER_FIELDS or col == "id")
    return flat


def _order(columns: list[str], outputs: Mapping[str, Output]) -> list[str]:
    """Store and record fields, parameters, declared outputs, the rest, provenance."""
    intervals = _intervals(outputs)

    def rank(col: str) -> tuple[int, int, str]:
        if col in STORE_FIELDS:
            return (0, STORE_FIELDS.index(col), col)
        if col in RECORD_FIELDS and col not in outputs:
            return (1, RECORD_FIELDS.index(col), col)
        if col.startswith("metric_error."):  # beside the run's error
            return (1, RECORD_FIELDS.index("metric_errors"), col)
        if col.startswith("param."):
            return (2, 0, col)
        if col.startswith("dataset_param."):
            return (3, 0, col)
        split = col.endswith(("_lo", "_hi")) and col[:-3] in intervals
        base = intervals[col[:-3]] if split else col
        within = "0" if not split else ("1" if col.endswith("_lo") else "2")  # lo, hi
        if base in outputs:
            return (4, list(outputs).index(base), within)
        if col.startswith("provenance."):
            return (6, 0, col)
        return (5, 0, col)

    return sorted(columns, key=rank)
