"""No plugin, file or database takes a sweep down or bends a number silently."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main

TESTS = Path(__file__).resolve().parent
#: the helper plugins the tests load by module name (PRIVBENCH_PLUGIN_MODULES)
PLUGINS = TESTS / "plugins"


def test_a_read_only_store_fails_before_anything_runs(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--db", str(db)]) == 0
    db.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        if os.access(db, os.W_OK):
            pytest.skip("running as a user who can write read-only files (root)")
        code = main(["run", "-m", "expmec", "-d", "synthetic:m=3", "--delta", "1", "--db", str(db)])
    finally:
        tmp_path.chmod(0o755)
        db.chmod(0o644)
    assert code == 3 and "cannot be written" in capsys.readouterr().err


def test_an_unwritable_store_is_found_before_any_run(tmp_path, capsys, monkeypatch) -> None:
    """The same path as above for any user (root writes read-only files)."""
    from privbench.results import store as store_module

    ran = []
    monkeypatch.setattr(store_module.ResultStore, "check_writable", lambda self: (_ for _ in ()).throw(
        store_module.StoreWriteError(f"results database {self.path} cannot be written: readonly")))
    monkeypatch.setattr(pb, "execute_run", lambda *a, **k: ran.append(a))
    code = main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1",
                 "--db", str(tmp_path / "r.sqlite")])
    assert code == 3 and not ran and "cannot be written" in capsys.readouterr().err


def test_a_failing_write_saves_the_record_and_exits_3(tmp_path, capsys, monkeypatch) -> None:
    """reliability.md: a result computed before the store failed is not lost. It goes to a
    file the one error line names (it was dumped on the terminal, a whole JSON record)."""
    from privbench.results import store as store_module

    def broken(self, record, *, sweep_id=None):
        raise store_module.StoreWriteError("could not store the run: disk I/O error")

    monkeypatch.setattr(store_module.ResultStore, "add", broken)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1",
                 "--db", str(tmp_path / "r.sqlite")])
    err = capsys.readouterr().err
    assert code == 3 and "disk I/O error" in err
    assert '"mechanism"' not in err  # one line, not the record
    saved = sorted(tmp_path.glob("privbench-unstored-*.json"))
    assert len(saved) == 1 and str(saved[0]) in err
    record = json.loads(saved[0].read_text())
    assert record["mechanism"] == "identity" and record["mi_bits"] == 1.0
    assert "provenance" in record and record["run_key"] in err


def test_a_record_no_file_can_take_is_printed(tmp_path, capsys, monkeypatch) -> None:
    """The last resort: neither the current nor the temporary folder takes the file."""
    import tempfile

    from privbench.results import store as store_module

    def broken(self, record, *, sweep_id=None):
        raise store_module.StoreWriteError("could not store the run: disk I/O error")

    def no_file(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(store_module.ResultStore, "add", broken)
    monkeypatch.setattr(tempfile, "mkstemp", no_file)
    code = main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1",
                 "--db", str(tmp_path / "r.sqlite")])
    err = capsys.readouterr().err
    assert code == 3 and "printed above" in err and '"mi_bits": 1.0' in err


@pytest.mark.parametrize("command", [["results"], ["report", "--out", "OUT"], ["regress"],
                                     ["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1"]])
def test_a_corrupted_store_gives_a_clear_error(tmp_path, capsys, command) -> None:
    db = tmp_path / "r.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    argv = [c.replace("OUT", str(tmp_path / "out")) for c in command] + ["--db", str(db)]
    if command == ["regress"]:
        argv = ["regress", str(db)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(db) in err and "Traceback" not in err


@pytest.mark.slow
def test_six_processes_creating_one_store_all_succeed(tmp_path) -> None:
    db = tmp_path / "fresh.sqlite"
    code = ("import sys; from privbench.results.store import ResultStore\n"
            "with ResultStore(sys.argv[1]) as s: s.add({'mechanism': 'm', 'dataset': 'd', "
            "'status': 'ok', 'run_key': sys.argv[2]})\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db), f"k{i}"],
                              stderr=subprocess.PIPE, text=True) for i in range(6)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 6


def test_a_slow_git_never_fails_provenance(monkeypatch) -> None:
    from privbench.running import provenance as prov

    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        if cmd[1] == "status":
            raise subprocess.TimeoutExpired(cmd, 5)
        return subprocess.CompletedProcess(cmd, 0, stdout="abc123\n", stderr="")

    monkeypatch.setattr(prov.subprocess, "run", fake_run)
    assert prov._git_commit() == "abc123-unknown-state"


def test_a_plugin_that_exits_while_importing_is_broken_not_fatal(tmp_path) -> None:
    (tmp_path / "exits_at_import.py").write_text("import sys\nsys.exit(4)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PRIVBENCH_PLUGIN_MODULES": "exits_at_import"}
    out = subprocess.run([sys.executable, "-m", "privbench", "plugins", "--json"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "sys.exit(4)" in out.stdout and '"broken"' in out.stdout


def test_a_spec_file_cannot_choose_a_remote_scheduler(tmp_path, capsys) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=3"]\ndeltas = [1.0]\n'
                    'executor = "dask:scheduler=tcp://203.0.113.9:8786"\n')
    assert main(["sweep", str(spec), "--db", str(tmp_path / "r.sqlite")]) == 2
    assert "--scheduler" in capsys.readouterr().err


def test_data_fetch_honours_offline(monkeypatch, tmp_path, capsys) -> None:
    from privbench.datasets import _files

    def no_network(*a, **k):
        raise AssertionError("the network was used")

    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_files, "download", no_network)
    assert main(["data", "fetch", "census"]) == 2
    assert "PRIVBENCH_OFFLINE" in capsys.readouterr().err


def test_a_huge_grid_fails_fast_even_in_a_dry_run(tmp_path, capsys) -> None:
    spec = tmp_path / "huge.toml"
    deltas = ", ".join(str(i / 10) for i in range(2000))
    seeds = ", ".join(str(i) for i in range(100))
    spec.write_text(f'mechanisms = ["identity", "expmec"]\ndatasets = ["synthetic:m=3"]\n'
                    f"deltas = [{deltas}]\nseeds = [{seeds}]\n")
    assert main(["sweep", str(spec), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "400,000 runs" in err and "100,000" in err and "--max-runs" in err


def test_a_zip_bomb_is_refused_with_the_limit_named(tmp_path, monkeypatch) -> None:
    import zipfile

    from privbench.datasets import _files

    archive = tmp_path / "adult.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("adult.data", b"0" * 5_000_000)  # 5 MB that compresses to a few KB
    monkeypatch.setenv(_files.MAX_MEMBER_ENV, "1000000")
    source = _files.Source("zip", archive, {"adult.data": "adult.data"}, "data_dir")
    with pytest.raises(pb.DataError, match="unpacks to 5,000,000 bytes.*limit of 1,000,000"):
        source.read_bytes("adult.data")


@pytest.mark.realdata
def test_an_edited_data_file_is_warned_about_and_its_hash_recorded(real_data_dir, tmp_path,
                                                                    monkeypatch) -> None:
    import hashlib
    import json
    import shutil
    import warnings

    from privbench.datasets import _common

    folder = tmp_path / "adult"
    shutil.copytree(real_data_dir / "adult", folder)
    data = (folder / "adult.data").read_bytes()
    (folder / "adult.data").write_bytes(data.replace(b"39,", b"38,", 1))  # one edited age
    monkeypatch.setattr(_common, "_WARNED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pb.load_dataset("census", data_dir=str(tmp_path), top_k=20)
        pb.load_dataset("census", data_dir=str(tmp_path), top_k=30)
    mine = [w for w in caught if "not the official file" in str(w.message)]
    assert len(mine) == 1 and "adult.data" in str(mine[0].message)  # once per file
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-d", f"census:data_dir={tmp_path},top_k=20",
                 "--delta", "1", "--db", str(db)]) == 0
    (prov,) = sqlite3.connect(db).execute("SELECT provenance FROM runs").fetchone()
    hashes = json.loads(prov)["data_files"]
    edited = hashlib.sha256((folder / "adult.data").read_bytes()).hexdigest()
    assert edited in hashes.values() and len(hashes) == 2


@pytest.mark.slow
def test_two_concurrent_resumes_run_each_missing_run_once(tmp_path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('mechanisms = ["sppm:iterations=40", "expmec"]\ndatasets = ["synthetic:m=5"]\n'
                    "deltas = [0.25, 0.5, 1, 2, 4, 8, 16, 32]\nbaselines = false\n")
    db = tmp_path / "r.sqlite"
    cmd = [sys.executable, "-m", "privbench", "sweep", str(spec), "--db", str(db), "--resume"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    with sqlite3.connect(db) as conn:
        keys = [r[0] for r in conn.execute("SELECT run_key FROM runs WHERE status = 'ok'")]
        assert conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0  # released
    assert len(keys) == 16 and len(set(keys)) == 16  # every run once, none twice


def test_claims_of_a_dead_process_are_taken_over(tmp_path) -> None:
    from privbench.results.store import ResultStore

    with ResultStore(tmp_path / "r.sqlite") as store:
        store.conn.execute("INSERT INTO claims VALUES ('k1', 'ghost', ?, 999999999, 'then')",
                           (__import__("socket").gethostname(),))
        store.conn.commit()
        assert store.claim(["k1", "k2"], owner="me") == ["k1", "k2"]
        assert store.claim(["k1", "k2"], owner="other") == []  # I am alive: mine stay mine


@pytest.mark.slow
def test_max_mem_fails_only_the_hungry_run(tmp_path, monkeypatch) -> None:
    (tmp_path / "hog_plugin.py").write_text(
        "import numpy as np, scipy.sparse as sp, privbench as pb\n"
        "class Hog(pb.MappingMechanism):\n"
        "    name = 'hog'\n"
        "    def __init__(self):\n        pass\n"
        "    def run(self, problem, delta):\n"
        "        block = np.ones(2_000_000_000 // 8)  # 2 GB\n"
        "        return self.result(sp.identity(problem.n, format='csc'), s=float(block[0]))\n"
        "@pb.hookimpl\n"
        "def privbench_register_mechanisms():\n    return [Hog]\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PRIVBENCH_PLUGIN_MODULES": "hog_plugin"}
    db = tmp_path / "r.sqlite"
    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m", "hog", "-m", "identity",
                          "-d", "synthetic:m=3", "--delta", "1", "--executor", "process",
                          "--workers", "1", "--max-mem", "1200", "--db", str(db)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = dict(sqlite3.connect(db).execute("SELECT mechanism, status FROM runs").fetchall())
    assert rows == {"hog": "error", "identity": "ok"}
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--no-store",
                 "--max-mem", "100"]) == 2  # the local executor cannot enforce it


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "process"])
def test_plugin_exit_or_interrupt_fails_only_its_run(tmp_path, executor) -> None:
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "lifecycle_plugins"}
    db = tmp_path / "r.sqlite"
    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m", "exiter",
                          "-m", "exiter:how=interrupt", "-m", "identity", "-d", "synthetic:m=3",
                          "--delta", "1", "--executor", executor, "--db", str(db)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = sqlite3.connect(db).execute("SELECT mechanism, status, error FROM runs").fetchall()
    assert sorted((m, s) for m, s, _ in rows) == [("exiter", "error"), ("exiter", "error"),
                                                  ("identity", "ok")]
    assert {e for _, _, e in rows if e} == {"mechanism 'exiter' called sys.exit(3)",
                                           "mechanism 'exiter' raised KeyboardInterrupt"}
