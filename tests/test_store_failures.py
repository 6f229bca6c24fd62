"""A store that cannot be written, a selection or comparison of nothing: one clear line and
the documented exit status, nothing computed for nothing, nothing stored lost."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.results import store as store_module

#: a quick run: the optimum metric is left out (it is the slow one)
RUN = ["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--no-metric", "optimum"]
SPEC = """name = "small"
mechanisms = ["identity", "expmec"]
datasets = ["synthetic:m=3"]
deltas = [0.5, 1.0]
skip_metrics = ["optimum"]
baselines = false
"""


@contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """``path`` (a file or a folder) made read-only for this user: chmod for a user, the
    immutable flag (``chattr +i``) for root, who writes files whatever their mode; skips
    where neither takes."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            if os.access(path, os.W_OK):
                pytest.skip("this user writes read-only files")
            yield path
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("root, and chattr +i does not work here: cannot make a read-only file")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        found = conn.execute("SELECT id, run_key, status FROM runs ORDER BY id").fetchall()
    conn.close()
    return found


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A store with one run."""
    db = tmp_path / "r.sqlite"
    assert main([*RUN, "--db", str(db)]) == 0
    return db


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SPEC)
    return path


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list:
    """The runs computed (none is, in fact: each call is recorded and the run is skipped)."""
    calls: list = []
    monkeypatch.setattr(pb, "execute_run", lambda *a, **k: calls.append(a))
    return calls


# -- a store that cannot be written ---------------------------------------------------------

@pytest.mark.parametrize("resume", [False, True])
def test_a_read_only_store_file_fails_before_anything_runs(stored, spec, ran, capsys,
                                                           resume) -> None:
    """Was: ``BEGIN IMMEDIATE`` passed on a read-only file in WAL mode, so the sweep ran
    and failed at its first record (exit 3, the record dumped), or with --resume failed to
    claim and the release of its claims masked that (exit 1, "internal error")."""
    before = rows(stored)
    capsys.readouterr()
    with read_only(stored):
        code = main(["sweep", str(spec), "--db", str(stored), *(["--resume"] if resume else [])])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "cannot be written" in err and str(stored) in err and "read-only" in err
    assert "internal error" not in err and '"mechanism"' not in err
    assert not ran
    assert rows(stored) == before


@pytest.mark.parametrize("existing", [False, True])
def test_a_store_in_a_read_only_folder_is_named_with_why(tmp_path, capsys, monkeypatch,
                                                          existing) -> None:
    """Was: exit 2 "unable to open database file", without the path's folder or why."""
    folder = tmp_path / "shared"
    folder.mkdir()
    db = folder / "r.sqlite"
    if existing:  # a writable store file, but SQLite must create its WAL files beside it
        assert main([*RUN, "--db", str(db)]) == 0
    ran: list = []
    monkeypatch.setattr(pb, "execute_run", lambda *a, **k: ran.append(a))
    capsys.readouterr()
    with read_only(folder):
        code = main([*RUN, "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert str(db) in err and f"its folder {folder} is not writable" in err
    assert not ran
    assert (rows(db) if existing else not db.exists())


def test_a_failed_claim_is_the_error_reported_not_the_release(stored, spec, ran, capsys,
                                                              monkeypatch) -> None:
    """A store that takes no write past the check (the check passed, the file became
    read-only): the claim's error is reported, exit 3; releasing the claims fails too and
    must not replace it ("internal error: OperationalError", exit 1)."""
    monkeypatch.setattr(store_module.ResultStore, "check_writable", lambda self: None)
    before = rows(stored)
    capsys.readouterr()
    with read_only(stored):
        code = main(["sweep", str(spec), "--db", str(stored), "--resume"])
    err = capsys.readouterr().err
    assert code == 3 and "cannot claim runs" in err and "internal error" not in err, err
    assert not ran
    assert rows(stored) == before


class _Refusing:
    """A connection that takes no write, as a store made read-only meanwhile."""

    def __enter__(self) -> _Refusing:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    def execute(self, *args: object) -> None:
        raise sqlite3.OperationalError("attempt to write a readonly database")


def test_a_release_that_fails_after_a_finished_sweep_is_one_line_exit_3(
        stored, spec, capsys, monkeypatch) -> None:
    real = store_module.ResultStore.release

    def release(self, owner):
        conn, self.conn = self.conn, _Refusing()
        try:
            real(self, owner)
        finally:
            self.conn = conn

    monkeypatch.setattr(store_module.ResultStore, "release", release)
    code = main(["sweep", str(spec), "--db", str(stored), "--resume"])
    err = capsys.readouterr().err
    assert code == 3 and "cannot release" in err and "internal error" not in err, err
    assert len(rows(stored)) == 4  # the run stored first, and the three the sweep ran


# -- a selection or a comparison of nothing -------------------------------------------------

@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_an_empty_selection_exports_the_columns_of_every_export(stored, tmp_path, capsys,
                                                                suffix) -> None:
    """Was: ``run_key`` twice in the header, and a Parquet export failed on it (exit 1)."""
    import pandas as pd

    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    read = pd.read_csv if suffix == ".csv" else pd.read_parquet
    full, empty = tmp_path / f"full{suffix}", tmp_path / f"empty{suffix}"
    assert main(["results", "--db", str(stored), "--export", str(full)]) == 0
    capsys.readouterr()
    assert main(["results", "--db", str(stored), "--mechanism", "nosuch",
                 "--export", str(empty)]) == 0
    out, err = capsys.readouterr()
    assert "wrote 0 runs" in out and "no runs match --mechanism nosuch" in err
    columns = list(read(empty).columns)
    assert len(columns) == len(set(columns)) and read(empty).empty
    assert {"id", "run_key", "mechanism", "mi_bits", "metrics_other"} <= set(columns)
    assert set(columns) <= set(read(full).columns)  # the same columns as a run's, no other


def test_results_says_why_it_shows_nothing(stored, tmp_path, capsys) -> None:
    """Was: nothing printed at all, exit 0."""
    capsys.readouterr()
    assert main(["results", "--db", str(stored), "--mechanism", "nosuch"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert f"no runs match --mechanism nosuch ({stored} holds 1 run; mechanisms: identity)" in err
    empty = tmp_path / "empty.sqlite"
    store_module.ResultStore(empty).close()
    assert main(["results", "--db", str(empty)]) == 0
    assert f"{empty} holds no runs" in capsys.readouterr().err


def test_regress_with_no_run_in_common_is_no_pass(stored, tmp_path, capsys) -> None:
    """Was: "0 runs compared ... no change beyond the thresholds", exit 0."""
    empty = tmp_path / "empty.sqlite"
    store_module.ResultStore(empty).close()
    other = tmp_path / "other.sqlite"
    assert main([*RUN[:6], "2", *RUN[7:], "--db", str(other)]) == 0  # another Δ: another key
    for base, new in ((empty, stored), (stored, other)):
        capsys.readouterr()
        assert main(["regress", str(base), str(new)]) == 2
        assert "no run in common, nothing compared" in capsys.readouterr().err
    # --fail-on-missing keeps its own verdict: the base's runs are missing (exit 1)
    assert main(["regress", str(stored), str(empty), "--fail-on-missing"]) == 1


@pytest.mark.parametrize("case", ["missing store", "missing sweep file", "read-only store"])
def test_a_report_that_fails_before_writing_leaves_no_folder(stored, spec, tmp_path, capsys,
                                                            case) -> None:
    """Was: exit 2 with an empty --out folder left behind."""
    out = tmp_path / "site" / "report"
    argv = ["report", "--out", str(out)]
    if case == "missing store":
        code = main([*argv, "--db", str(tmp_path / "none.sqlite")])
    elif case == "missing sweep file":
        code = main([*argv, "--db", str(stored), "--sweep", str(tmp_path / "none.toml")])
    else:
        with read_only(stored):
            code = main([*argv, "--db", str(stored), "--sweep", str(spec)])
    err = capsys.readouterr().err
    assert code == (3 if case == "read-only store" else 2), err
    assert not (tmp_path / "site").exists()
