"""``pb.sweep``: a sweep is a library call, the same one the command line makes."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.protocol.errors import ValidationError
from privbench.protocol.shared import sweep_store

ROOT = Path(__file__).resolve().parents[1]
SPEC = {"mechanisms": ["expmec", "identity"], "datasets": ["synthetic:m=3"], "deltas": [0.5, 2.0],
        "baselines": False, "name": "api"}


def _rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT run_key, status FROM runs").fetchall())


def test_sweep_returns_and_stores_what_the_cli_stores(tmp_path: Path) -> None:
    records = pb.sweep(dict(SPEC), db=tmp_path / "api.sqlite")
    assert sorted(r["status"] for r in records) == ["ok"] * 4
    spec_file = tmp_path / "s.toml"
    spec_file.write_text('mechanisms = ["expmec", "identity"]\ndatasets = ["synthetic:m=3"]\n'
                         'deltas = [0.5, 2.0]\nbaselines = false\nname = "api"\n')
    assert main(["sweep", str(spec_file), "--db", str(tmp_path / "cli.sqlite")]) == 0
    assert _rows(tmp_path / "api.sqlite") == _rows(tmp_path / "cli.sqlite")
    by_key = {r["run_key"]: r["mi_bits"] for r in records}
    assert set(by_key) == {key for key, _ in _rows(tmp_path / "cli.sqlite")}


def test_sweep_resumes_and_stores_nothing_without_a_db(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    assert len(pb.sweep(dict(SPEC), db=db)) == 4
    assert pb.sweep(dict(SPEC), db=db, resume=True) == []  # everything stored by the same code
    assert len(pb.sweep(dict(SPEC), db=None)) == 4
    assert len(_rows(db)) == 4


def test_a_dict_is_read_as_a_sweep_file_is(tmp_path: Path) -> None:
    spec = {k: v for k, v in SPEC.items() if k != "baselines"}
    records = pb.sweep(spec, db=None)
    assert {r["mechanism"] for r in records} >= {"expmec", "identity", "constant"}  # baselines
    with pytest.raises(ValidationError, match="sweep: unknown key"):
        pb.sweep({**SPEC, "deltaz": [1.0]}, db=None)


def test_sweep_rejects_a_bad_request_before_running(tmp_path: Path) -> None:
    db = tmp_path / "bad.sqlite"
    with pytest.raises(ValidationError, match="workers"):
        pb.sweep(dict(SPEC), db=db, workers=0)
    with pytest.raises(pb.PluginError, match="nonesuch"):
        pb.sweep({**SPEC, "mechanisms": ["nonesuch"]}, db=db)
    assert not db.exists() or _rows(db) == []


class StoreSpy(pb.MappingMechanism):
    """Records the store a run sees and whether the environment carries it."""

    name = "store_spy"
    seen: list[tuple[str | None, bool]] = []

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        import scipy.sparse as sp

        store = sweep_store()
        StoreSpy.seen.append((str(store) if store else None, "PRIVBENCH_STORE" in os.environ))
        return self.result(sp.identity(problem.n, format="csc"))


def test_the_sweep_store_reaches_a_run_through_its_spec_not_the_environment(tmp_path: Path) -> None:
    class Plugin:
        @pb.hookimpl
        def privbench_register_mechanisms(self) -> list[type]:
            return [StoreSpy]

    host = pb.get_host()
    host.register(Plugin(), name="store_spy_plugin")
    try:
        StoreSpy.seen.clear()
        db = tmp_path / "spy.sqlite"
        pb.sweep({"mechanisms": ["store_spy"], "datasets": ["synthetic:m=2"], "deltas": [1.0],
                  "baselines": False}, db=db)
        assert StoreSpy.seen == [(str(db.resolve()), False)]
        assert sweep_store() is None  # only for the run's duration
        StoreSpy.seen.clear()
        pb.execute_run(pb.RunSpec(mechanism="store_spy", dataset="synthetic", delta=1.0,
                                  dataset_params={"m": 2}))
        assert StoreSpy.seen == [(None, False)]  # a run outside a sweep has no store
    finally:
        host.pm.unregister(name="store_spy_plugin")


@pytest.mark.slow
def test_the_readmes_python_block_runs_as_written_in_a_script(tmp_path: Path) -> None:
    """The README's "From Python" block, saved as a script (P and D defined first), runs:
    the process executor's workers import the script again, so the sweeps must sit under
    the main guard the README shows."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("**From Python:**", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "specs").mkdir()
    shutil.copy(ROOT / "specs" / "quick.toml", tmp_path / "specs")
    script = tmp_path / "readme.py"
    script.write_text("import numpy as np\nP = np.array([[0.3, 0.1, 0.1], [0.1, 0.1, 0.3]])\n"
                      "D = 1 - np.eye(3)\n" + block
                      + "    print('records', len(records), sorted({r['status'] for r in records}))\n",
                      encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "records 8 ['ok']" in done.stdout, done.stdout
    assert len(pb.load_runs(tmp_path / "quick.sqlite")) == 36
