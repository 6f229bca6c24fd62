"""The runner drives one lifecycle for every mechanism."""

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
from privbench.results.store import ResultStore
from privbench.testing import check_mechanism

TESTS = Path(__file__).resolve().parent
#: the helper plugins the tests load by module name (PRIVBENCH_PLUGIN_MODULES)
PLUGINS = TESTS / "plugins"


@pytest.fixture
def lifecycle_host(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.setenv("PRIVBENCH_PLUGIN_MODULES", "lifecycle_plugins")
    from privbench.host import manager as host_module

    fresh = pb.PluginHost(env={**os.environ, "PRIVBENCH_PLUGIN_MODULES": "lifecycle_plugins"})
    previous = host_module.set_host(fresh)
    yield fresh
    host_module.set_host(previous)


def _run(mechanism: str, delta: float = 1.0, m: int = 4, **kw) -> dict:
    spec = pb.RunSpec(mechanism=mechanism, dataset="synthetic", dataset_params={"m": m},
                      delta=delta, **kw)
    return pb.execute_run(spec.to_dict(), timeout=kw.pop("timeout", None))


def test_prepare_once_then_repeat_timed_runs(lifecycle_host) -> None:
    from lifecycle_plugins import Nearest

    Nearest.calls.clear()
    spec = pb.RunSpec(mechanism="nearest", dataset="synthetic", dataset_params={"m": 3}, delta=1.0,
                      mechanism_params={"prepare_s": 0.3}, repeat=3, seed=7)
    record = pb.execute_run(spec.to_dict())
    assert record["status"] == "ok", record["error"]
    assert Nearest.calls == ["prepare", "run", "run", "run"]
    samples = record["metrics"]["runtime_samples_s"]
    assert len(samples) == 3 and record["runtime_s"] == sorted(samples)[1]
    assert record["metrics"]["prepare_s"] >= 0.3 > record["runtime_s"]  # prepare is not timed


def test_stats_never_overwrite_record_fields(lifecycle_host) -> None:
    record = _run("nearest", seed=5)
    assert record["status"] == "ok"
    assert record["runtime_s"] != 123.0 and record["metrics"]["mechanism_runtime_s"] == 123.0
    assert record["nnz"] == 16 and record["metrics"]["mechanism_nnz"] == -1
    assert record["mi_bits"] == pytest.approx(pb.load_dataset("synthetic", m=4).prior_mi_bits)
    assert record["metrics"]["mechanism_mi_bits"] == 9.0
    assert record["gap_bits"] == 0.0 and record["metrics"]["seed_seen"] == 5
    # a stat that is not JSON-serialisable is converted, never a crash of --json
    assert record["metrics"]["odd"].startswith("<object object")
    assert record["metrics"]["array"] == [0, 1, 2]
    json.dumps(record)


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "process", "dask"])
def test_a_mechanism_cannot_change_what_later_runs_see(lifecycle_host, tmp_path, executor) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text('mechanisms = ["expmec", "vandal", "expmec"]\ndatasets = ["synthetic:m=4"]\n'
                     "deltas = [1.0]\n")
    db = tmp_path / "r.sqlite"
    assert main(["sweep", str(sweep), "--db", str(db), "--executor", executor]) == 0
    with ResultStore(db, create=False) as store:  # outputs are read through the store's reader
        rows = store.frame()[["mechanism", "status", "mi_bits", "prior_mi_bits"]].values.tolist()
    expmec = [r for r in rows if r[0] == "expmec"]
    assert expmec and all(r[1] == "ok" and r[2] == pytest.approx(0.8379, abs=1e-4) for r in expmec)
    assert all(r[3] == pytest.approx(1.0) for r in rows)


def test_legacy_solve_still_runs_with_a_deprecation_warning(lifecycle_host) -> None:
    with pytest.warns(DeprecationWarning, match="old solve"):
        record = _run("legacy", seed=3)
    assert record["status"] == "ok" and record["metrics"]["seed_seen"] == 3
    res = pb.get_mechanism("legacy").solve(pb.load_dataset("synthetic", m=3), delta=0.5)
    assert res.mapping.shape == (8, 8)


def test_run_and_sweep_say_once_per_class_that_a_plugin_uses_the_old_protocol(
        lifecycle_host, tmp_path, capsys) -> None:
    """Python's default filters hide the runner's DeprecationWarning (it is attributed to
    privbench), so the command line says it on stderr, once per class."""
    assert main(["run", "-m", "legacy", "-m", "nearest", "-d", "synthetic:m=3", "-d",
                 "synthetic:m=2", "--delta", "0.5", "--delta", "1", "--no-store",
                 "--no-metric", "optimum"]) == 0
    err = capsys.readouterr().err
    assert err.count("deprecated: mechanism 'legacy' implements the old solve(") == 1
    assert "'nearest'" not in err
    sweep = tmp_path / "s.toml"
    sweep.write_text('mechanisms = ["legacy", "legacy"]\ndatasets = ["synthetic:m=3"]\n'
                     'deltas = [0.5]\nbaselines = false\nskip_metrics = ["optimum"]\n')
    assert main(["sweep", str(sweep), "--no-store"]) == 0
    assert capsys.readouterr().err.count("deprecated: mechanism 'legacy'") == 1


def test_check_warns_of_the_old_protocol(lifecycle_host, capsys) -> None:
    from lifecycle_plugins import Legacy, Nearest

    with pytest.warns(DeprecationWarning, match="mechanism 'legacy' implements the old solve") as seen:
        check_mechanism(Legacy)
    assert seen[0].filename == __file__  # attributed to the caller, as Python shows it
    assert main(["check", "lifecycle_plugins:Legacy"]) == 0  # a warning, not a failure
    out = capsys.readouterr().out
    assert "  warn  deprecated: mechanism 'legacy' implements the old solve(" in out
    assert "passed: legacy" in out
    assert main(["check", "lifecycle_plugins:Nearest"]) == 0 and Nearest.name == "nearest"
    assert "warn" not in capsys.readouterr().out


def test_plugin_exit_and_keyboard_interrupt_fail_only_their_run(lifecycle_host) -> None:
    assert "sys.exit(3)" in _run("exiter")["error"]
    record = _run("exiter", mechanism_params={"how": "interrupt"})
    assert record["status"] == "error" and "KeyboardInterrupt" in record["error"]


def test_a_timeout_cannot_be_swallowed(lifecycle_host) -> None:
    spec = pb.RunSpec(mechanism="swallower", dataset="synthetic", dataset_params={"m": 3}, delta=1.0)
    record = pb.execute_run(spec.to_dict(), timeout=0.5)
    assert record["status"] == "timeout"


@pytest.mark.parametrize("argv", [
    ["-m", "nearest:weight=-1"],       # the plugin's own check_params
    ["-m", "nearest:weight=abc"],      # the generic type check against the default
    ["-m", "expmec:beta=-1"],
    ["-m", "nearest", "--repeat", "0"],
])
def test_bad_parameters_exit_2_and_store_nothing(lifecycle_host, tmp_path, capsys, argv) -> None:
    db = tmp_path / "r.sqlite"
    code = main(["run", *argv, "-d", "synthetic:m=3", "--delta", "1", "--db", str(db)])
    assert code == 2
    assert capsys.readouterr().err.strip()
    assert not db.exists() or sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_repeat_in_a_sweep_file(lifecycle_host, tmp_path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text('mechanisms = ["nearest"]\ndatasets = ["synthetic:m=3"]\ndeltas = [1.0]\nrepeat = 2\n')
    db = tmp_path / "r.sqlite"
    assert main(["sweep", str(sweep), "--db", str(db)]) == 0
    with ResultStore(db, create=False) as store:
        metrics = store.frame()["metrics"].iloc[0]
    assert len(metrics["runtime_samples_s"]) == 2
    sweep.write_text('mechanisms = ["nearest"]\ndatasets = ["synthetic:m=3"]\ndeltas = [1.0]\nrepeat = 0\n')
    assert main(["sweep", str(sweep), "--db", str(tmp_path / "other.sqlite")]) == 2


@pytest.mark.parametrize("name", ["expmec", "identity", "randomized_response", "quantized",
                                  "nullspace", "laplace", "tradeoff", "nearest"])
def test_check_mechanism_drives_every_kind(lifecycle_host, name) -> None:
    rows = check_mechanism(lifecycle_host.get("mechanism", name))
    grid = lifecycle_host.get("mechanism", name).test_parameters
    assert {json.dumps(r["params"], sort_keys=True) for r in rows} == {
        json.dumps(dict(zip(sorted(grid), combo, strict=True)), sort_keys=True)
        for combo in __import__("itertools").product(*(grid[k] for k in sorted(grid)))}


def test_check_mechanism_catches_a_mechanism_that_writes_into_the_problem(lifecycle_host) -> None:
    class Writer(pb.MappingMechanism):
        name = "writer"

        def __init__(self) -> None:
            pass

        def run(self, problem, delta):
            problem.joint[0, 0] = 0.5
            return self.result(__import__("scipy.sparse").sparse.identity(problem.n, format="csc"))

    with pytest.raises(ValueError, match="read-only"):
        check_mechanism(Writer)


def test_no_plugin_reaches_for_the_host() -> None:
    out = subprocess.run(["grep", "-rn", "get_host", str(TESTS.parent / "plugins")],
                         capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""  # grep: 1 = no match


@pytest.mark.parametrize("argv", [
    ["-m", "sppm:iterations=-1"], ["-m", "sppm:mode=banana"], ["-m", "sppm:threads=-4"],
    ["-m", "sppm:tol=nan"], ["-m", "optimal:max_n=-1"], ["-m", "optimal:solver=nosuch"],
])
def test_bad_builtin_parameters_exit_2_before_anything_runs(tmp_path, capsys, argv) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", *argv, "-d", "synthetic:m=3", "--delta", "1", "--db", str(db)]) == 2
    name = argv[1].split(":")[1].split("=")[0]
    assert name in capsys.readouterr().err
    assert not db.exists() or sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def _signatures() -> dict[str, int]:
    from numba.core.registry import CPUDispatcher

    return {f"{name}.{attr}": len(value.signatures)
            for name, module in list(sys.modules.items()) if name.startswith("privbench")
            for attr, value in list(vars(module).items()) if isinstance(value, CPUDispatcher)}


@pytest.mark.parametrize(("dataset", "params", "delta"), [
    ("synthetic", {"m": 6}, 0.25), ("random", {"n": 30, "distortion": "hamming", "seed": 2}, 0.3)])
def test_sppm_prepare_compiles_everything_the_timed_run_needs(dataset, params, delta) -> None:
    """Deterministic form of "the first run is not slower": no kernel compiles in run()."""
    from privbench.running.problems import load_problem, run_view

    problem = run_view(load_problem(dataset, params))
    mech = pb.get_mechanism("sppm", lp_backend="mckp")
    mech.prepare(problem, pb.RunContext())
    before = _signatures()
    mech.run(problem, delta)
    after = _signatures()
    assert {k: v for k, v in after.items() if before.get(k, 0) != v} == {}


@pytest.mark.parametrize("dataset, params", [
    ("census", {"top_k": "all"}), ("movielens", {"top_k": 50}), ("csv", {"top_k": 8}),
])
def test_union_typed_parameters_accept_every_named_type(dataset: str, params: dict) -> None:
    """``top_k: int | str``: the default's type is not the only one allowed (a regression:
    ``census:top_k=all`` and ``movielens:top_k=50`` were refused at plan time)."""
    cls = pb.PluginHost().datasets()[dataset]
    assert cls.create(**params).top_k == params["top_k"]
    with pytest.raises(pb.ValidationError, match="top_k must be"):
        cls.create(top_k=[1])
