"""The store's layout (schema version 2): the runner's fields in ``runs``, every output once
in ``outputs``; a version 1 store made by an older privbench (tests/data/store_v1.sqlite.gz,
a real sweep stored by main at d591a14) and a version 0 one are read in place and migrated,
with every value kept."""

from __future__ import annotations

import gzip
import json
import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import privbench as pb
from privbench.cli import main
from privbench.protocol.record import RUN_FIELDS, TOP_LEVEL_NAMES
from privbench.results import layout
from privbench.results.store import SCHEMA_VERSION, ResultStore

FIXTURE = Path(__file__).resolve().parent / "data" / "store_v1.sqlite.gz"
V1_OUTPUT_COLUMNS = ("mi_bits", "prior_mi_bits", "distortion", "nnz", "support_max", "gap_bits",
                     "lp_backend", "metrics")


def _v1(tmp_path: Path, name: str = "v1.sqlite") -> Path:
    db = tmp_path / name
    db.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    return db


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _columns(db: Path, table: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _raw_v1(db: Path) -> dict[str, dict]:
    """The fixture's rows as version 1 stored them (top-level columns and metrics JSON)."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY rowid")]
    return {r["run_key"]: {**r, "metrics": json.loads(r["metrics"])} for r in rows}


def test_the_fixture_is_a_version_1_store_with_outputs_as_columns(tmp_path) -> None:
    db = _v1(tmp_path)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert set(V1_OUTPUT_COLUMNS) <= set(_columns(db, "runs"))
    raw = _raw_v1(db)
    assert len(raw) == 15 and {r["status"] for r in raw.values()} == {"ok", "timeout"}
    assert any(r["lp_backend"] == "highs" for r in raw.values())
    assert any("mi_bits_ci95" in r["metrics"] for r in raw.values())  # bootstrap intervals


def test_a_version_1_store_is_migrated_with_every_value_kept(tmp_path) -> None:
    db = _v1(tmp_path)
    raw = _raw_v1(db)
    in_place = pb.load_runs(db)  # read-only: read in the old layout, nothing written
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    ResultStore(db).close()  # a writing command opens it: migrated
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        outputs = conn.execute("SELECT run_id, name, value, json FROM outputs").fetchall()
        # numbers are numbers to SQL: runs can be picked by an output's value
        low = conn.execute("SELECT COUNT(*) FROM outputs WHERE name = 'mi_bits' AND value < 0.1"
                           ).fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    assert free == 0  # the old layout's pages given back (VACUUM after the move)
    assert not (tmp_path / "v1.sqlite.v1.bak").exists()
    assert set(_columns(db, "runs")) == {"id", "sweep_id", "provenance", "created_at", *RUN_FIELDS}
    assert low == sum(1 for r in raw.values() if r["mi_bits"] is not None and r["mi_bits"] < 0.1)
    # every output of every run once: each top-level value and each metrics key
    stored = {}
    for run_id, name, value, text in outputs:
        assert (run_id, name) not in stored
        stored[run_id, name] = json.loads(text) if text is not None else value
    for row in raw.values():
        expected = {name: row[name] for name in TOP_LEVEL_NAMES if row[name] is not None}
        expected.update({k: v for k, v in row["metrics"].items() if k not in expected})
        mine = {name: v for (rid, name), v in stored.items() if rid == row["id"]}
        assert mine == expected, row["run_key"]
    after = pb.load_runs(db)
    assert list(after["run_key"]) == list(in_place["run_key"])
    assert sorted(after.columns) == sorted(in_place.columns) and "lp_backend" not in after
    for col in after.columns:
        for a, b in zip(after[col], in_place[col], strict=True):
            assert _same(a, b), col


def test_the_old_layout_reads_as_the_new(tmp_path) -> None:
    raw = _raw_v1(_v1(tmp_path))
    runs = pb.load_runs(_v1(tmp_path, "again.sqlite")).set_index("run_key")
    for key, row in raw.items():
        for name in TOP_LEVEL_NAMES:
            assert _same(runs.at[key, name], float("nan") if row[name] is None else row[name])
        # lp_backend was a copy of a parameter: the parameter stays
        assert runs.at[key, "params"].get("lp_backend") == row["lp_backend"]
        # an output is one value: the copy of prior_mi_bits under metrics is not a second
        assert runs.at[key, "metrics"] == {k: v for k, v in row["metrics"].items()
                                           if not (k in TOP_LEVEL_NAMES and row[k] is not None)}


def test_a_failed_migration_leaves_the_version_1_store_as_it_was(tmp_path, monkeypatch) -> None:
    db = _v1(tmp_path)
    with sqlite3.connect(db) as conn:
        before = [tuple(r) for r in conn.execute("SELECT * FROM runs ORDER BY rowid")]

    def broken(conn):
        conn.execute("ALTER TABLE runs RENAME TO runs_old")  # half-way, then the disk fails
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(layout, "migrate", broken)
    with pytest.raises(pb.PrivbenchError, match=r"from store schema version 1 to 3.*v1.sqlite.v1.bak"):
        ResultStore(db)
    assert set(V1_OUTPUT_COLUMNS) <= set(_columns(db, "runs"))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert len(pb.load_runs(db)) == 15
    with sqlite3.connect(tmp_path / "v1.sqlite.v1.bak") as copy:  # the copy it named
        assert [tuple(r) for r in copy.execute("SELECT * FROM runs ORDER BY rowid")] == before


def test_a_version_0_store_is_migrated(tmp_path, capsys) -> None:
    db = tmp_path / "v0.sqlite"
    with sqlite3.connect(db) as conn:  # before schema versions: fewer columns, no version
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, run_key TEXT NOT NULL, "
                     "mechanism TEXT, dataset TEXT, delta REAL, status TEXT, mi_bits REAL, "
                     "lp_backend TEXT, metrics TEXT, created_at TEXT NOT NULL)")
        conn.execute("INSERT INTO runs (run_key, mechanism, dataset, delta, status, mi_bits, "
                     "lp_backend, metrics, created_at) VALUES ('old', 'identity', 'synthetic', 1, "
                     "'ok', 0.5, 'highs', '{\"mi_bits_ci95\": [0.4, 0.6], \"lip_epsilon\": "
                     "Infinity}', '2025-01-01T00:00:00+00:00')")
        conn.execute("INSERT INTO runs (run_key, mechanism, dataset, delta, status, metrics, "
                     "created_at) VALUES ('bad', 'identity', 'synthetic', 2, 'ok', '{oops', "
                     "'2025-01-01T00:00:00+00:00')")
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--no-metric",
                 "optimum", "--db", str(db)]) == 0
    runs = pb.load_runs(db).set_index("run_key")
    assert runs.at["old", "mi_bits"] == 0.5
    assert runs.at["old", "metrics"] == {"mi_bits_ci95": [0.4, 0.6], "lip_epsilon": math.inf}
    assert "bad" not in runs.index  # damaged metrics: skipped and named, as before
    assert "whose JSON fields are damaged" in capsys.readouterr().err
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # the damaged text is kept in the store, not thrown away by the migration
        assert conn.execute("SELECT json FROM outputs WHERE name = ''").fetchall() == [("{oops",)]


def test_a_record_round_trips_through_the_new_layout(tmp_path) -> None:
    record = {"mechanism": "m", "dataset": "d", "params": {"lp_backend": "highs"},
              "dataset_params": {}, "delta": 1.0, "seed": 3, "status": "ok", "run_key": "k",
              "mi_bits": math.inf, "prior_mi_bits": 1.0, "nnz": 12, "gap_bits": None,
              "metrics": {"converged": False, "trace": [[0.1, 1.0, 0.5]], "note": "x",
                          "mi_bits_ci95": [0.1, 0.2], "support_hist": {"1": 4},
                          "certified_delta": None, "iterations": 7, "prior_mi_bits": 1.0}}
    db = tmp_path / "r.sqlite"
    with ResultStore(db) as store:
        store.add(record)
        run = store.frame().iloc[0]
    assert run["mi_bits"] == math.inf and run["nnz"] == 12 and math.isnan(run["gap_bits"])
    assert run["params"] == {"lp_backend": "highs"} and run["seed"] == 3
    expected = dict(record["metrics"])
    del expected["prior_mi_bits"]  # the same output as the top-level one: stored once
    assert run["metrics"] == expected
    assert isinstance(run["metrics"]["converged"], bool)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM outputs WHERE name = 'prior_mi_bits'"
                            ).fetchone()[0] == 1


def test_run_json_and_load_runs_keep_their_fields_on_the_new_layout(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    capsys.readouterr()
    assert main(["run", "-m", "sppm:iterations=30", "-d", "synthetic:m=2", "--delta", "1",
                 "--json", "--no-metric", "optimum", "--db", str(db)]) == 0
    line = json.loads(capsys.readouterr().out.splitlines()[-1])
    for field in ("status", "mi_bits", "prior_mi_bits", "distortion", "runtime_s", "peak_mem_mb",
                  "n", "nnz", "support_max", "gap_bits", "metrics"):
        assert field in line, field
    assert "converged" in line["metrics"] and "lp_backend" not in line
    run = pb.load_runs(db).iloc[0]
    for field in ("mi_bits", "distortion", "gap_bits", "nnz", "runtime_s"):
        assert _same(float(run[field]), float(line[field])), field
    assert run["metrics"]["converged"] == line["metrics"]["converged"]
    assert isinstance(pb.load_runs(db), pd.DataFrame)
