"""The run record: the runner's own fields, and the outputs it shows at top level.

The runner's fields (identity, status, timing, provenance) are the record's schema and the
store's ``runs`` columns. Everything a run measures is an output a plugin declared
(:class:`~privbench.protocol.metric.Output`), stored once per run in the store's
``outputs`` table; a record shows the :data:`TOP_LEVEL_OUTPUTS` as fields of their own
(the ``run --json`` contract of docs/cli.md: null where they do not apply) and the others under
``metrics``. ``--json`` prints the fields in :data:`RECORD_FIELDS` order.
"""

from __future__ import annotations

from privbench.protocol.metric import (
    CERTIFICATE_OUTPUTS,
    DISTORTION_OUTPUT,
    LEAKAGE_OUTPUT,
    NNZ_OUTPUT,
    PRIOR_LEAKAGE_OUTPUT,
    SUPPORT_MAX_OUTPUT,
    Output,
)

#: the runner's own fields, (field, SQLite declaration): what a run is (mechanism, data set,
#: parameters, budget, seed), how it ended (status, error, and ``metric_errors``: metric
#: name -> why that metric failed on this run, a JSON object), what it cost (runtime,
#: memory), the problem's size, its key and the fingerprint of the code that made it
#: (running/fingerprint.py; details under ``provenance["fingerprint"]``)
RUN_SCHEMA: tuple[tuple[str, str], ...] = (
    ("mechanism", "TEXT NOT NULL"),
    ("dataset", "TEXT NOT NULL"),
    ("params", "TEXT"),
    ("dataset_params", "TEXT"),
    ("delta", "REAL"),
    ("seed", "INTEGER"),
    ("status", "TEXT NOT NULL"),
    ("error", "TEXT"),
    ("metric_errors", "TEXT"),
    ("runtime_s", "REAL"),
    ("peak_mem_mb", "REAL"),
    ("n", "INTEGER"),
    ("run_key", "TEXT NOT NULL"),
    ("fingerprint", "TEXT"),
)
RUN_FIELDS: tuple[str, ...] = tuple(name for name, _ in RUN_SCHEMA)
#: outputs a record shows as fields of their own (the rest are under ``metrics``)
TOP_LEVEL_OUTPUTS: tuple[Output, ...] = (
    LEAKAGE_OUTPUT, PRIOR_LEAKAGE_OUTPUT, DISTORTION_OUTPUT, NNZ_OUTPUT, SUPPORT_MAX_OUTPUT,
    next(o for o in CERTIFICATE_OUTPUTS if o.name == "gap_bits"),
)
TOP_LEVEL_NAMES: tuple[str, ...] = tuple(o.name for o in TOP_LEVEL_OUTPUTS)


def _sql_type(out: Output) -> str:
    return "INTEGER" if out.unit == "count" else "REAL"


_TYPES = dict(RUN_SCHEMA) | {o.name: _sql_type(o) for o in TOP_LEVEL_OUTPUTS} | {"metrics": "TEXT"}
#: the record's fields in output order (``--json``): run fields, top-level outputs, metrics
RECORD_FIELDS: tuple[str, ...] = (*RUN_FIELDS[:-2], *TOP_LEVEL_NAMES, "metrics", *RUN_FIELDS[-2:])
#: (field, SQL type) of every record field (exports keep integers integers)
RECORD_SCHEMA: tuple[tuple[str, str], ...] = tuple((name, _TYPES[name]) for name in RECORD_FIELDS)
#: fields holding nested data (stored as JSON text)
JSON_FIELDS = ("params", "dataset_params", "metric_errors", "metrics")
