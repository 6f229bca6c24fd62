"""A store that is not privbench's, or is damaged, and boolean variables."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from privbench._plumbing.env import env_flag
from privbench.cli import main
from privbench.protocol.errors import ValidationError

RUN = ["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1"]


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("on", True), ("YES", True), ("true", True), (" 0 ", False), ("off", False),
    ("no", False), ("False", False), ("", False)])
def test_boolean_variables_read_every_accepted_spelling(value, expected) -> None:
    assert env_flag("PRIVBENCH_X", env={"PRIVBENCH_X": value}) is expected


@pytest.mark.parametrize("value", ["2", "onn", "maybe", "enabled"])
def test_unknown_boolean_values_are_refused(value) -> None:
    with pytest.raises(ValidationError, match=f"PRIVBENCH_X='{value}' is not a boolean"):
        env_flag("PRIVBENCH_X", env={"PRIVBENCH_X": value})


def test_offline_on_means_offline(monkeypatch) -> None:
    from privbench.datasets._files import offline

    monkeypatch.setenv("PRIVBENCH_OFFLINE", "on")
    assert offline()
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "2")
    with pytest.raises(ValidationError, match="PRIVBENCH_OFFLINE"):
        offline()


def test_a_bad_trace_flag_is_exit_2(monkeypatch, capsys) -> None:
    from privbench.host import manager as host_module

    monkeypatch.setenv("PRIVBENCH_TRACE_PLUGINS", "maybe")
    previous = host_module.set_host(None)
    try:
        assert main(["plugins"]) == 2
    finally:
        host_module.set_host(previous)
    assert "PRIVBENCH_TRACE_PLUGINS='maybe' is not a boolean" in capsys.readouterr().err


def _foreign(path: Path, *, app_id: int = 0) -> bytes:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, run_key TEXT, status TEXT)")
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        if app_id:
            conn.execute(f"PRAGMA application_id = {app_id}")
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize("app_id", [0, 0x12345678])
def test_a_foreign_database_is_refused_untouched(tmp_path, capsys, app_id) -> None:
    db = tmp_path / "other.sqlite"
    before = _foreign(db, app_id=app_id)
    assert main([*RUN, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert ("another application" if app_id else "invoices") in err
    assert db.read_bytes() == before  # no table added, no WAL switch
    assert not (tmp_path / "other.sqlite-wal").exists()


def test_a_new_store_is_marked_and_reopened(tmp_path) -> None:
    from privbench.results.store import APPLICATION_ID

    db = tmp_path / "r.sqlite"
    assert main([*RUN, "--db", str(db)]) == 0
    assert main([*RUN, "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2


def test_a_store_made_before_the_mark_is_still_read(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main([*RUN, "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA application_id = 0")
    assert main(["results", "--db", str(db)]) == 0
    assert main([*RUN, "--db", str(db)]) == 0


def test_a_row_with_damaged_json_is_skipped_and_named(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main([*RUN, "--delta", "2", "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE outputs SET json = '{not json' WHERE run_id = 1 AND name = 'promises'")
    capsys.readouterr()
    assert main(["results", "--db", str(db)]) == 0
    captured = capsys.readouterr()
    assert "skipped 1 row(s)" in captured.err and "id 1" in captured.err
    assert "1 run in" in captured.out and "identity    2" in captured.out
    assert main(["compare", "--db", str(db), "--reference", "identity"]) == 0


def test_a_runs_table_without_id_is_read(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main([*RUN, "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)") if r[1] != "id"]
        conn.execute(f"CREATE TABLE copy AS SELECT {', '.join(columns)} FROM runs")
        conn.execute("DROP TABLE runs")
        conn.execute("ALTER TABLE copy RENAME TO runs")
    assert main(["results", "--db", str(db)]) == 0
    assert "identity" in capsys.readouterr().out


def test_a_corrupted_page_is_one_line_exit_3(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA page_size = 1024")
    conn.close()
    assert main([*RUN, "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:  # many rows, so that runs spans many pages
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.executemany("INSERT INTO runs (run_key, mechanism, dataset, status, created_at, "
                         "provenance) SELECT run_key || ?, mechanism, dataset, status, "
                         "created_at, provenance FROM runs WHERE id = 1",
                         [(str(i),) for i in range(300)])
    conn.close()
    data = bytearray(db.read_bytes())
    pages = len(data) // 1024
    for page in range(pages // 2, pages - 1):  # garbage over the later data pages
        data[page * 1024 + 8: page * 1024 + 200] = b"\xff" * 192
    db.write_bytes(bytes(data))
    capsys.readouterr()
    code = main(["results", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 3 and "cannot read the runs" in err and "Traceback" not in err
