"""How runs are laid out in the store (schema version 3), and the moves from older layouts.

Version 3: the table ``runs`` holds the runner's own fields
(:data:`privbench.protocol.record.RUN_SCHEMA`: identity, status and the metrics that failed,
timing, provenance), one row per run; the table ``outputs`` holds every output of every
run, one row per (run, output):
``value`` a number as SQLite stores it (so SQL can filter on ``mi_bits``), ``json`` the JSON
text of anything else (intervals, traces, flags). An output is stored once whatever the
record showed it as: a top-level field (``mi_bits``) or a key under ``metrics``.

Versions 0 and 1 held the core metric's outputs and ``lp_backend`` as columns of ``runs``
and every other output in a JSON column ``metrics``. :func:`migrate` moves such a table to
the current version (``lp_backend`` is dropped: the mechanism's ``params`` hold it); :func:`read_old`
reads one in place, for stores opened read-only. Both readers return the same frame.

Versions 0 to 2 kept why a metric failed as an output ``<metric>_error`` beside the names
in ``metric_seconds``; version 3 keeps it in the runner's field ``metric_errors``.
:func:`carried_errors` moves such values (the only place that reads the old name
pattern): :func:`migrate` and :func:`migrate_v2` in the store, :func:`read_v2` when a
store is read in place.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

import pandas as pd

from privbench.protocol.record import RUN_SCHEMA, TOP_LEVEL_NAMES

#: the ``runs`` columns: the record's run fields plus the store's own
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_key", "TEXT NOT NULL"),
    ("sweep_id", "TEXT"),
    *(column for column in RUN_SCHEMA if column[0] != "run_key"),
    ("provenance", "TEXT"),
    ("created_at", "TEXT NOT NULL"),
)
RUN_COLUMN_NAMES = tuple(name for name, _ in RUN_COLUMNS)
#: ``runs`` columns holding JSON text
RUN_JSON = ("params", "dataset_params", "metric_errors", "provenance")
OUTPUTS_TABLE = ("CREATE TABLE IF NOT EXISTS outputs (run_id INTEGER NOT NULL, name TEXT NOT NULL, "
                 "value, json TEXT, PRIMARY KEY (run_id, name)) WITHOUT ROWID")
#: the name under which a migrated run keeps ``metrics`` text that was not a JSON object
#: (the reader then skips the run and says so, as it did before the migration)
DAMAGED = ""


def create_runs(conn: sqlite3.Connection) -> None:
    """Create the version-2 tables (none of them exists yet)."""
    cols = ",\n  ".join(f"{name} {decl}" for name, decl in RUN_COLUMNS)
    conn.execute(f"CREATE TABLE runs (\n  id INTEGER PRIMARY KEY,\n  {cols}\n)")
    conn.execute(OUTPUTS_TABLE)


def _cell(value: Any) -> tuple[Any, str | None]:
    """(value, json) of one output: numbers as themselves, anything else as JSON text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value, None
    return None, json.dumps(value, sort_keys=True, default=str)


def output_rows(record: dict[str, Any]) -> list[tuple[str, Any, str | None]]:
    """(name, value, json) for every output of ``record``: its top-level outputs that have
    a value, then each key under ``metrics`` (a key already stored is the same output)."""
    cells: dict[str, tuple[Any, str | None]] = {}
    for name in TOP_LEVEL_NAMES:
        if record.get(name) is not None:
            cells[name] = _cell(record[name])
    metrics = record.get("metrics")
    for name, value in (metrics if isinstance(metrics, dict) else {}).items():
        cells.setdefault(str(name), _cell(value))
    return [(name, value, text) for name, (value, text) in cells.items()]


def insert(conn: sqlite3.Connection, row: dict[str, Any], record: dict[str, Any]) -> int:
    """Insert one run (``row``: its ``runs`` columns) and its outputs; returns its id."""
    names = [name for name in RUN_COLUMN_NAMES if name in row]
    cur = conn.execute(f"INSERT INTO runs ({','.join(names)}) VALUES "
                       f"({','.join('?' for _ in names)})", [row[n] for n in names])
    run_id = int(cur.lastrowid or 0)
    conn.executemany("INSERT INTO outputs VALUES (?, ?, ?, ?)",
                     [(run_id, *cells) for cells in output_rows(record)])
    return run_id


def attach_outputs(df: pd.DataFrame, rows: Iterable[tuple[int, str, Any, str | None]]
                   ) -> tuple[pd.DataFrame, set[int]]:
    """``df`` (``runs`` rows with their ``_rowid_``: a run's id even in a table copied
    without its ``id`` column) with a column per top-level output and ``metrics`` (a dict
    of the others) from ``rows`` of ``outputs``; and the ids of runs with an output that
    cannot be read."""
    top: dict[str, dict[int, Any]] = {name: {} for name in TOP_LEVEL_NAMES}
    nested: dict[int, dict[str, Any]] = {}
    bad: set[int] = set()
    for run_id, name, value, text in rows:
        if name == DAMAGED:
            bad.add(run_id)
            continue
        if text is not None:
            try:
                value = json.loads(text)
            except ValueError:
                bad.add(run_id)
                continue
        if name in top:
            top[name][run_id] = value
        else:
            nested.setdefault(run_id, {})[name] = value
    ids = df["_rowid_"].tolist()
    for name in TOP_LEVEL_NAMES:
        given = pd.Series([top[name].get(i) for i in ids], index=df.index, dtype=object)
        numbers = pd.to_numeric(given, errors="coerce")
        # numbers as numbers; a stored text stays visible (regress refuses it by name)
        df[name] = numbers if (numbers.notna() | given.isna()).all() else given
    df["metrics"] = [nested.get(i, {}) for i in ids]
    return df, bad


def is_old(conn: sqlite3.Connection) -> bool:
    """True when ``runs`` has the version 0/1 layout (outputs as columns, no ``outputs``)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return "runs" in tables and "outputs" not in tables


def read_old(df: pd.DataFrame) -> pd.DataFrame:
    """A version 0/1 ``runs`` frame (``metrics`` decoded) shaped as the current version reads: every
    top-level output a column, no ``lp_backend`` column (it is in ``params``)."""
    for name in TOP_LEVEL_NAMES:
        if name not in df:
            df[name] = pd.Series([float("nan")] * len(df), index=df.index)
    # an output is one value: a copy under metrics of a top-level output is not a second
    tops = df[list(TOP_LEVEL_NAMES)].to_dict("records")
    df["metrics"] = [{k: v for k, v in m.items() if not (k in top and pd.notna(top[k]))}
                     for m, top in zip(df["metrics"], tops, strict=True)]
    return df.drop(columns=["lp_backend"], errors="ignore")


def carried_errors(metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``metrics`` of a run stored before version 3 split into its outputs and its
    ``metric_errors``: the value ``<name>_error`` of each metric ``name`` that ran
    (``metric_seconds`` names them) was the runner's note that ``name`` failed."""
    ran = metrics.get("metric_seconds")
    names = {f"{name}_error": str(name) for name in (ran if isinstance(ran, dict) else {})}
    errors = {names[k]: str(v) for k, v in metrics.items() if k in names and v is not None}
    if not errors:
        return metrics, {}
    return {k: v for k, v in metrics.items() if k not in names}, errors


def read_v2(df: pd.DataFrame) -> pd.DataFrame:
    """A frame read from a store older than version 3 (its ``runs`` had no
    ``metric_errors`` column) with each run's failed metrics moved from ``metrics`` to
    ``metric_errors``, as the migration moves them."""
    split = [carried_errors(m) for m in df["metrics"]]
    df["metrics"] = [metrics for metrics, _ in split]
    df["metric_errors"] = [errors for _, errors in split]
    return df


def _value(value: Any, text: str | None) -> Any:
    try:
        return json.loads(text) if text is not None else value
    except ValueError:
        return text


def migrate_v2(conn: sqlite3.Connection) -> int:
    """Move a version 2 store to version 3 (inside the caller's transaction): ``runs``
    rebuilt with the ``metric_errors`` column (ids kept), each failed metric's
    ``<name>_error`` output moved there; returns the number of runs with one."""
    old = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    conn.execute("ALTER TABLE runs RENAME TO runs_old")
    create_runs(conn)  # ``outputs`` exists: kept as it is
    keep = [name for name in RUN_COLUMN_NAMES if name in old]
    conn.execute(f"INSERT INTO runs (id, {','.join(keep)}) SELECT id, {','.join(keep)} "
                 "FROM runs_old ORDER BY id")
    conn.execute("DROP TABLE runs_old")
    moved = 0
    for run_id, text in conn.execute("SELECT run_id, json FROM outputs WHERE name = "
                                     "'metric_seconds'").fetchall():
        try:
            ran = json.loads(text) if text else {}
        except ValueError:
            continue  # unreadable: the reader skips the run and says so
        names = [f"{name}_error" for name in (ran if isinstance(ran, dict) else {})]
        marks = ",".join("?" for _ in names)
        found = conn.execute(f"SELECT name, value, json FROM outputs WHERE run_id = ? AND "
                             f"name IN ({marks})", (run_id, *names)).fetchall() if names else []
        cells = {name: _value(v, t) for name, v, t in found}
        _, errors = carried_errors({"metric_seconds": ran, **cells})
        if errors:
            conn.execute("UPDATE runs SET metric_errors = ? WHERE id = ?",
                         (json.dumps(errors, sort_keys=True), run_id))
            conn.executemany("DELETE FROM outputs WHERE run_id = ? AND name = ?",
                             [(run_id, f"{name}_error") for name in errors])
            moved += 1
    return moved


def migrate(conn: sqlite3.Connection) -> int:
    """Move a version 0/1 ``runs`` table to version 3 (inside the caller's transaction);
    returns the number of runs moved. Every row keeps its id and every output its value."""
    old = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    conn.execute("ALTER TABLE runs RENAME TO runs_old")
    create_runs(conn)
    keep = [name for name in RUN_COLUMN_NAMES if name in old]
    conn.execute(f"INSERT INTO runs (id, {','.join(keep)}) SELECT rowid, {','.join(keep)} "
                 "FROM runs_old ORDER BY rowid")
    tops = [name for name in TOP_LEVEL_NAMES if name in old]
    select = ", ".join(["rowid", *tops, "metrics" if "metrics" in old else "NULL"])
    moved = 0
    for row in conn.execute(f"SELECT {select} FROM runs_old ORDER BY rowid").fetchall():
        run_id, values, text = row[0], row[1:-1], row[-1]
        record: dict[str, Any] = dict(zip(tops, values, strict=True))
        try:
            metrics = json.loads(text) if text else {}
        except ValueError:
            metrics = None
        errors: dict[str, str] = {}
        if isinstance(metrics, dict):
            metrics, errors = carried_errors(metrics)
        cells = output_rows({**record, "metrics": metrics if isinstance(metrics, dict) else {}})
        if not isinstance(metrics, dict):
            cells.append((DAMAGED, None, str(text)))
        if errors:
            conn.execute("UPDATE runs SET metric_errors = ? WHERE id = ?",
                         (json.dumps(errors, sort_keys=True), run_id))
        conn.executemany("INSERT INTO outputs VALUES (?, ?, ?, ?)",
                         [(run_id, *cell) for cell in cells])
        moved += 1
    conn.execute("DROP TABLE runs_old")
    return moved
