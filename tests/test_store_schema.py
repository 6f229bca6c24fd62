"""Stores carry a schema version, read-only stores are readable, and a claim holds only
while its lease is fresh and its holder plausible."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from privbench.cli import main
from privbench.results import store as store_module
from privbench.results.store import SCHEMA_VERSION, ResultStore

RUN = ("run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--no-metric", "optimum",
       "--no-metric", "mapping_behaviour")


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _version(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def test_a_new_store_carries_the_schema_version(tmp_path) -> None:
    db = tmp_path / "r.sqlite"
    assert main([*RUN, "--db", str(db)]) == 0
    assert _version(db) == SCHEMA_VERSION == 3


def test_a_store_of_a_newer_privbench_is_refused_naming_both_versions(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main([*RUN, "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE runs ADD COLUMN quantum_state BLOB NOT NULL DEFAULT x'00'")
        conn.execute("PRAGMA user_version = 999")
    capsys.readouterr()
    for command in ([*RUN, "--db", str(db)], ["results", "--db", str(db)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "schema version 999" in err and f"schema version {SCHEMA_VERSION}" in err, err
    assert _rows(db) == 1 and _version(db) == 999  # was: appended to silently


def _old_store(db: Path) -> None:
    """A store as privbench wrote it before schema versions: fewer columns, no version."""
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA application_id = {store_module.APPLICATION_ID}")
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, run_key TEXT NOT NULL, "
                     "mechanism TEXT, dataset TEXT, delta REAL, status TEXT, mi_bits REAL, "
                     "metrics TEXT, created_at TEXT NOT NULL)")
        conn.execute("INSERT INTO runs (run_key, mechanism, dataset, delta, status, mi_bits, "
                     "metrics, created_at) VALUES ('old', 'identity', 'synthetic', 1, 'ok', 0.5, "
                     "'{}', '2025-01-01T00:00:00+00:00')")


def test_an_older_store_is_migrated_in_a_transaction(tmp_path, monkeypatch, capsys) -> None:
    db = tmp_path / "r.sqlite"
    _old_store(db)
    # a migration that fails leaves the store as it was, and the copy it kept is named
    real = ResultStore._create

    def broken(self, migrate_from=0):
        assert (tmp_path / "r.sqlite.v0.bak").is_file()  # the old file is kept meanwhile
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(ResultStore, "_create", broken)
    capsys.readouterr()
    assert main([*RUN, "--db", str(db)]) == 3
    assert "r.sqlite.v0.bak" in capsys.readouterr().err
    assert _version(db) == 0 and _rows(db) == 1
    monkeypatch.setattr(ResultStore, "_create", real)
    assert main([*RUN, "--db", str(db)]) == 0
    assert _version(db) == SCHEMA_VERSION and _rows(db) == 2
    assert not (tmp_path / "r.sqlite.v0.bak").exists()  # dropped once the migration committed
    with ResultStore(db) as s:
        df = s.frame()
    assert list(df["run_key"])[0] == "old" and float(df["mi_bits"].iloc[0]) == 0.5


@contextmanager
def _read_only_folder(folder: Path):
    """``folder`` made read-only: chmod for a user, a read-only bind mount for root."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    view = folder.with_name(folder.name + "-ro")
    view.mkdir()
    if subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True).returncode:
        pytest.skip("root without mount: cannot make a read-only folder")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(view)],
                          capture_output=True).returncode:
            pytest.skip("cannot remount read-only")
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], capture_output=True)


@pytest.mark.parametrize("wal_left", [False, True])
def test_a_store_in_a_read_only_folder_is_readable(tmp_path, capsys, wal_left) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    db = folder / "r.sqlite"
    assert main([*RUN, "--db", str(db)]) == 0
    assert main([*RUN[:6], "2", *RUN[7:], "--db", str(db)]) == 0
    if wal_left:  # no shared-memory file next to the store: SQLite cannot create one
        for extra in folder.glob("r.sqlite-*"):
            extra.unlink()
    with _read_only_folder(folder) as ro:
        rdb = ro / "r.sqlite"
        capsys.readouterr()
        assert main(["results", "--db", str(rdb)]) == 0  # was: "attempt to write a readonly database"
        assert "identity" in capsys.readouterr().out
        assert main(["compare", "--db", str(rdb)]) in (0, 1)
        assert "readonly" not in capsys.readouterr().err
        assert main(["regress", str(rdb), str(rdb), "--no-runtime"]) == 0
        assert main(["report", "--db", str(rdb), "--out", str(tmp_path / "site")]) == 0


def _claim(db: Path, key: str, host: str, pid: int, at: datetime) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO claims VALUES (?, 'other', ?, ?, ?)",
                     (key, host, pid, at.isoformat(timespec="seconds")))


@pytest.fixture
def two_runs(tmp_path, capsys) -> tuple[Path, Path, list[str]]:
    spec = tmp_path / "two.toml"
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=2"]\ndeltas = [0.5, 1]\n'
                    'baselines = false\nskip_metrics = ["optimum", "mapping_behaviour"]\n')
    assert main(["sweep", str(spec), "--dry-run"]) == 0
    keys = capsys.readouterr().out.split()
    db = tmp_path / "r.sqlite"
    ResultStore(db).close()
    return spec, db, keys


def test_a_claim_dated_in_the_future_or_held_by_an_implausible_process_is_taken_over(
        two_runs, capsys) -> None:
    import socket

    spec, db, keys = two_runs
    now = datetime.now(UTC)
    # a live Python process (this one) and a lease dated year 9999: was "nothing to do" forever
    _claim(db, keys[0], socket.gethostname(), os.getpid(), datetime(9999, 1, 1, tzinfo=UTC))
    # a fresh lease held by a live process that is no Python interpreter (pid 1 here)
    _claim(db, keys[1], socket.gethostname(), 1, now - timedelta(seconds=5))
    capsys.readouterr()
    assert main(["sweep", str(spec), "--db", str(db), "--resume"]) == 0
    assert "0 stored, 2 to run of 2" in capsys.readouterr().err
    assert _rows(db) == 2


def test_steal_claims_takes_over_a_fresh_plausible_claim(two_runs, capsys) -> None:
    import socket

    spec, db, keys = two_runs
    started = datetime.now(UTC) + timedelta(seconds=1)  # after this (Python) process started
    _claim(db, keys[0], socket.gethostname(), os.getpid(), started)
    _claim(db, keys[1], "another-host", 4242, started)
    capsys.readouterr()
    assert main(["sweep", str(spec), "--db", str(db), "--resume"]) == 0
    err = capsys.readouterr().err
    assert "2 claimed by another sweep, 0 to run" in err and "--steal-claims" in err
    assert main(["sweep", str(spec), "--db", str(db), "--steal-claims"]) == 2
    assert "needs --resume" in capsys.readouterr().err
    assert main(["sweep", str(spec), "--db", str(db), "--resume", "--steal-claims"]) == 0
    assert _rows(db) == 2
