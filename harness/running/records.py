"""The run record: its fields (declared once), JSON-safe values, and who may write what.

Infinity is a value (``lip_epsilon`` of a mapping with a zero where an output is seen):
records keep ``float('inf')``, the store writes it as SQLite's REAL infinity at top level
and as ``Infinity`` in its JSON columns (which Python's ``json`` reads back as inf), and
:func:`record_json` prints it as the string ``"inf"`` so that ``--json`` lines are strict
JSON. NaN means nothing and becomes ``None`` (null).

Metrics write the record's top-level fields; a mechanism's own stats go under
``metrics`` and never overwrite a field (a colliding stat is kept as
``mechanism_<name>``); only ``gap_bits``, the mechanism's own certificate, is lifted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from privbench.protocol.record import RECORD_FIELDS, RUN_FIELDS

STATUSES = ("ok", "error", "timeout", "invalid", "skip")
#: what a run measures about its own execution, under ``metrics``: varies between two
#: otherwise identical runs (compare records without them). ``metric_seconds`` is what
#: each metric took; ``optimum_source`` and ``optimum_seconds`` say whether the optimum
#: metric reused a certificate (the run's own or an earlier run's) or solved.
TIMING_METRICS = ("prepare_s", "peak_rss_mb", "runtime_samples_s", "metric_seconds",
                  "optimum_seconds", "optimum_source")
#: stats a mechanism may set at top level
MECHANISM_FIELDS = ("gap_bits",)
#: fields the runner fills itself (its own, plus the data set's prior leakage and the
#: ``metrics`` namespace); metrics may not write them
RUNNER_FIELDS = (*RUN_FIELDS, "prior_mi_bits", "metrics")


def plain(value: Any) -> Any:
    """JSON-friendly Python values (numpy converted, NaN to None, ±inf kept, the rest repr'd)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        f = float(value)
        return None if math.isnan(f) else f
    if value is None or isinstance(value, str):
        return value
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _strict(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def declared_units() -> dict[str, str]:
    """Every declared output's unit, by name (the runner's own and each metric's)."""
    from privbench.host.manager import get_host

    return {name: out.unit for name, out in get_host().outputs().items()}


#: a value under ``metrics`` whose JSON is longer than this is left out of a ``--json``
#: line unless ``--full`` (per-resample arrays made a line up to 134 KB); the store keeps all
BULKY_CHARS = 2000


def _slim(metrics: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``metrics`` without its bulky values, and the keys left out (``bootstrap.samples``
    for the per-resample arrays, whose summary stays)."""
    kept: dict[str, Any] = {}
    omitted: list[str] = []
    for key, value in metrics.items():
        if isinstance(value, dict) and "samples" in value:
            value = {k: v for k, v in value.items() if k != "samples"}
            omitted.append(f"{key}.samples")
        if len(json.dumps(_strict(value), default=str)) > BULKY_CHARS:
            omitted.append(key)
            continue
        kept[key] = value
    return kept, omitted


def record_json(record: dict[str, Any], units: dict[str, str] | None = None, *,
                full: bool = True) -> str:
    """One record as a strict JSON line (``--json``): ±inf as ``"inf"``/``"-inf"``, NaN as
    null (``float(x)`` reads either string back), the provenance left out.

    With ``units`` (declared output name -> unit, ``PluginHost.outputs()``), the line also
    carries ``units``: the unit of every declared output the record holds, top level or
    under ``metrics`` (``{"mi_bits": "bits", "lip_epsilon": "nats", ...}``). With
    ``full=False`` (``run --json`` without ``--full``) bulky values under ``metrics`` are
    left out and listed under ``omitted`` (:func:`_slim`); top-level fields always stay.
    """
    line = {k: v for k, v in record.items() if k != "provenance"}
    if not full and isinstance(line.get("metrics"), dict):
        line["metrics"], omitted = _slim(line["metrics"])
        if omitted:
            line["omitted"] = {"keys": omitted, "why": "bulky: --json --full shows them; the store keeps "
                               "them (privbench results --export)"}
    if units is not None:
        metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
        line["units"] = {name: unit for name, unit in units.items()
                         if record.get(name) is not None or metrics.get(name) is not None}
    return json.dumps(_strict(line), allow_nan=False, default=str)


def fill_metrics(record: dict[str, Any], values: dict[str, Any]) -> None:
    """Metric values: record fields at top level (one writer each), the rest under ``metrics``."""
    for key, value in values.items():
        if key in RECORD_FIELDS and key not in RUNNER_FIELDS:
            record[key] = value
        else:
            record["metrics"][key] = value


def fill_stats(record: dict[str, Any], stats: dict[str, Any]) -> None:
    """A mechanism's stats under ``metrics``; never over a field or a metric's value."""
    for key, value in stats.items():
        if key in MECHANISM_FIELDS:
            record[key] = value
        elif key in RECORD_FIELDS or key in record["metrics"]:
            record["metrics"][f"mechanism_{key}"] = value
        else:
            record["metrics"][key] = value


def metric_failure_lines(errors: Iterable[dict[str, Any] | None]) -> list[str]:
    """One line per metric that failed on some runs: ``metric X failed on N runs: reason``
    (the first run's reason), from each run's ``metric_errors`` (the runner's field:
    metric name -> reason), for the terminal of ``run``, ``sweep`` and ``compare``."""
    failed: dict[str, list[str]] = {}
    for values in errors:
        if not isinstance(values, dict):
            continue
        for name, reason in values.items():
            if reason is not None:
                failed.setdefault(str(name), []).append(str(reason))
    return [f"metric {name} failed on {len(reasons)} run{'s' if len(reasons) != 1 else ''}: "
            f"{reasons[0][:300]}" for name, reasons in sorted(failed.items())]
