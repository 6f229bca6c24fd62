"""The run record's fields, declared once: name, SQL type, in output order.

The runner fills records with these fields (the CLI's ``--json`` contract), the store derives its
``runs`` columns from them, and ``--json`` prints them in this order.
"""

from __future__ import annotations

#: (field, SQLite declaration) in output order
RECORD_SCHEMA: tuple[tuple[str, str], ...] = (
    ("mechanism", "TEXT NOT NULL"),
    ("dataset", "TEXT NOT NULL"),
    ("params", "TEXT"),
    ("dataset_params", "TEXT"),
    ("delta", "REAL"),
    ("seed", "INTEGER"),
    ("lp_backend", "TEXT"),
    ("status", "TEXT NOT NULL"),
    ("error", "TEXT"),
    ("mi_bits", "REAL"),
    ("prior_mi_bits", "REAL"),
    ("distortion", "REAL"),
    ("runtime_s", "REAL"),
    ("peak_mem_mb", "REAL"),
    ("n", "INTEGER"),
    ("nnz", "INTEGER"),
    ("support_max", "INTEGER"),
    ("gap_bits", "REAL"),
    ("metrics", "TEXT"),
    ("run_key", "TEXT NOT NULL"),
    #: short hash of the code that made the run (running/fingerprint.py); details under
    #: provenance["fingerprint"]
    ("fingerprint", "TEXT"),
)
RECORD_FIELDS: tuple[str, ...] = tuple(name for name, _ in RECORD_SCHEMA)
#: fields holding nested data (stored as JSON text)
JSON_FIELDS = ("params", "dataset_params", "metrics")
