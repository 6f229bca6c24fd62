"""The results store never alters a foreign SQLite file; export errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd

from privbench.cli import main


def _schema(path: Path) -> list:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


def test_foreign_runs_table_is_refused_and_untouched(tmp_path, capsys) -> None:
    db = tmp_path / "foreign.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, foo TEXT)")
    before = _schema(db)
    assert main(["results", "--db", str(db)]) == 2
    assert "not a privbench results table" in capsys.readouterr().err
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1",
                 "--db", str(db)]) == 2
    assert "not a privbench results table" in capsys.readouterr().err
    assert _schema(db) == before  # no columns or index added


def test_results_does_not_create_a_table_in_another_database(tmp_path, capsys) -> None:
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE other (a)")
    before = _schema(db)
    assert main(["results", "--db", str(db)]) == 2
    assert "no table 'runs'" in capsys.readouterr().err
    assert _schema(db) == before


def test_export_errors_and_integer_columns(tmp_path, capsys, db_path) -> None:
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1",
                 "--db", str(db_path)]) == 0
    capsys.readouterr()
    folder = tmp_path / "taken.csv"
    folder.mkdir()
    assert main(["results", "--db", str(db_path), "--export", str(folder)]) == 2
    assert "cannot write" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["results", "--db", str(db_path), "--export", str(blocker / "x.csv")]) == 2
    assert "cannot write" in capsys.readouterr().err
    assert main(["results", "--db", str(db_path), "--export", str(tmp_path / "x.xlsx")]) == 2
    assert not (tmp_path / "x.xlsx").exists()
    out = tmp_path / "runs.csv"
    assert main(["results", "--db", str(db_path), "--export", str(out)]) == 0
    text = out.read_text()
    row = pd.read_csv(out, dtype=str).iloc[0]
    assert row["n"] == "8" and row["nnz"] == "8" and row["support_max"] == "1", text[:300]


def test_db_below_a_file_is_a_clear_error(tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    db = blocker / "results.sqlite"
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1",
                 "--db", str(db)]) == 2
    assert "cannot create the folder of results database" in capsys.readouterr().err
    assert blocker.read_text() == "x"


def test_results_negative_limit(tmp_path, capsys, db_path) -> None:
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1",
                 "--db", str(db_path)]) == 0
    capsys.readouterr()
    assert main(["results", "--db", str(db_path), "--limit", "-1"]) == 2
    assert "--limit must be >= 0" in capsys.readouterr().err


def test_data_info_with_a_bad_parameter_exits_2(tmp_path, capsys) -> None:
    assert main(["data", "info", "census:split=bogus", "--json"]) == 2
    assert "split must be one of" in capsys.readouterr().out
    assert main(["data", "info", f"census:data_dir={tmp_path / 'absent'}"]) == 2
    assert main(["data", "info", "synthetic"]) == 0
