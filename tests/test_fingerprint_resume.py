"""Every record carries a fingerprint of the code that made it; ``--resume`` reuses a
stored run only when the fingerprints match."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.host import manager as host_module
from privbench.running import fingerprint

PLUGIN = '''
import numpy as np
import privbench as pb


class Mine(pb.MappingMechanism):
    name = "mine"

    def __init__(self):
        pass

    def run(self, problem, delta):
        return self.result(np.eye(problem.n))  # VERSION {version}


@pb.hookimpl
def privbench_register_mechanisms():
    return [Mine]
'''


@pytest.fixture
def module_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A module plugin ``mine`` outside any distribution; yields a function editing it."""
    source = tmp_path / "plugin_mine.py"
    source.write_text(PLUGIN.format(version=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PRIVBENCH_PLUGIN_MODULES", "plugin_mine")
    previous = host_module.set_host(pb.PluginHost())
    fingerprint.clear_cache()

    def edit(version: int) -> None:
        source.write_text(PLUGIN.format(version=version))
        stat = source.stat()  # a new mtime even within the clock's resolution
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9 * version))
        fingerprint.clear_cache()

    yield edit
    sys.modules.pop("plugin_mine", None)
    host_module.set_host(previous)
    fingerprint.clear_cache()


def _rows(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT run_key, fingerprint, provenance FROM runs ORDER BY id").fetchall()


def test_records_carry_a_fingerprint_with_each_plugin_used(module_plugin, tmp_path) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "mine", "-d", "synthetic:m=2", "--delta", "1", "--db", str(db)]) == 0
    [(_, short, prov)] = _rows(db)
    details = json.loads(prov)["fingerprint"]
    assert short == details["hash"] and len(short) == 16
    used = {(p["kind"], p["name"]): p for p in details["plugins"]}
    assert {("mechanism", "mine"), ("dataset", "synthetic"), ("metric", "leakage")} <= set(used)
    mine = used[("mechanism", "mine")]
    assert mine["distribution"] == "(module)" and mine["files"] == 1
    assert len(mine["source"]) == 16
    assert details["core"]["privbench"] == pb.__version__


def test_sppm_fingerprint_covers_its_private_helpers() -> None:
    files = fingerprint.module_closure("privbench.plugins.mechanisms.sppm")
    assert any(p.parent.name == "_sppm" for p in files)
    assert not any("harness" in p.parts for p in files)  # the host is hashed once, apart


def test_resume_reruns_only_the_runs_of_an_edited_plugin(module_plugin, tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    spec = tmp_path / "grid.toml"
    spec.write_text('mechanisms = ["mine", "identity"]\ndatasets = ["synthetic:m=2"]\n'
                    'deltas = [0.5, 1.0]\nbaselines = false\n')
    assert main(["sweep", str(spec), "--db", str(db)]) == 0
    assert main(["sweep", str(spec), "--db", str(db), "--resume"]) == 0
    assert "resume: 4 stored, 0 to run of 4" in capsys.readouterr().err
    before = {key: fp for key, fp, _ in _rows(db)}
    module_plugin(2)
    assert main(["sweep", str(spec), "--db", str(db), "--resume"]) == 0
    err = capsys.readouterr().err
    assert "resume: 2 stored, 2 stale re-run" in err and "2 to run of 4" in err
    rows = _rows(db)
    assert len(rows) == 6
    rerun = [key for key, _, _ in rows[4:]]
    assert sorted(rerun) == sorted(k for k in before if k.startswith("mine"))
    assert all(fp != before[key] for key, fp, _ in rows[4:])
    # the kept runs' code did not change: the same fingerprint as before
    identity_fp = {fp for key, fp, _ in rows if key.startswith("identity")}
    assert identity_fp == {before[k] for k in before if k.startswith("identity")}
    module_plugin(3)
    assert main(["sweep", str(spec), "--db", str(db), "--resume", "--keep-stale"]) == 0
    assert "resume: 4 stored, 0 to run of 4" in capsys.readouterr().err
    assert len(_rows(db)) == 6


def test_a_row_without_fingerprint_is_stale(tmp_path, capsys) -> None:
    """Rows stored before fingerprints existed were made by unknown code."""
    db = tmp_path / "r.sqlite"
    args = ["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--db", str(db)]
    assert main(args) == 0
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET fingerprint = NULL")
    spec = tmp_path / "one.toml"
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=2"]\ndeltas = [1.0]\n'
                    "baselines = false\n")
    assert main(["sweep", str(spec), "--db", str(db), "--resume"]) == 0
    assert "0 stored, 1 stale re-run" in capsys.readouterr().err


def _store_run(db: Path, **fields) -> None:
    from privbench.results.store import ResultStore

    record = {"mechanism": "identity", "dataset": "synthetic", "status": "ok",
              "run_key": "k1", "delta": 1.0, "mi_bits": 0.5, "metrics": {}, **fields}
    with ResultStore(db) as store:
        store.add(record)


def test_results_and_compare_mark_rows_made_by_other_code(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    for delta in ("0.5", "1"):
        assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", delta,
                     "--db", str(db)]) == 0
    assert main(["results", "--db", str(db)]) == 0
    assert "†" not in capsys.readouterr().out  # made by the installed code
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET fingerprint = 'feedfeedfeedfeed' WHERE delta = 0.5")
    assert main(["results", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "ok†" in out and "made by other code" in out and "(1 row)" in out
    assert main(["compare", "--db", str(db), "--reference", "identity"]) == 0
    out = capsys.readouterr().out
    assert "identity†" in out and "made by other code" in out


def test_regress_refuses_text_where_a_number_belongs(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    _store_run(db, mi_bits=0.5, fingerprint="a" * 16)
    _store_run(db, mi_bits=0.5, fingerprint="b" * 16)
    assert main(["regress", str(db)]) == 0
    assert "1 of the compared runs were made by different code" in capsys.readouterr().err
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE outputs SET value = 'x' WHERE run_id = 2 AND name = 'mi_bits'")
    assert main(["regress", str(db)]) == 2
    err = capsys.readouterr().err
    assert "new run k1: mi_bits = 'x' is not a finite number" in err
