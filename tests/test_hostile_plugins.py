"""Hostile plugins fail their own run, named, and never bend another value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.running.specs import RunSpec

TESTS = Path(__file__).resolve().parent
#: the helper plugins the tests load by module name (PRIVBENCH_PLUGIN_MODULES)
PLUGINS = TESTS / "plugins"


def _run(what: str, value=None, metrics: tuple[str, ...] = ()) -> dict:
    params = {"what": what} if value is None else {"what": what, "value": value}
    spec = RunSpec(mechanism="hostile_returns", mechanism_params=params, dataset="synthetic",
                   dataset_params={"m": 2}, delta=1.0, metrics=metrics)
    return pb.execute_run(spec)


def test_a_rogue_metric_cannot_overwrite_fields(hostile) -> None:
    record = _run("nothing", metrics=("hostile_rogue",))
    assert record["status"] == "ok"
    assert record["mi_bits"] == pytest.approx(record["prior_mi_bits"])  # identity: I(A;B)
    assert record["mi_bits"] >= 0 and record["runtime_s"] > 0
    error = record["metric_errors"]["hostile_rogue"]  # the runner's field, not an output
    assert not any(key.endswith("_error") for key in record["metrics"])
    assert "mi_bits" in error and "status" in error and "runtime_s" in error
    assert record["metrics"]["rogue_note"] == "here"  # its own value is kept
    assert "mi_bits" not in record["metrics"]


class _Undeclared(pb.Metric):
    name = "undeclared_writer"
    default = False
    outputs = (pb.Output("declared", "none"),)

    def compute(self, problem, result, *, delta, seed=None):
        return {"declared": 1, "undeclared": 2, "mi_bits": 99}


class _RunnerFieldWriter(pb.Metric):
    name = "runner_field_writer"
    default = False
    outputs = (pb.Output("runtime_s", "seconds"), pb.Output("status", "none"),
               pb.Output("kept", "none"))

    def compute(self, problem, result, *, delta, seed=None):
        return {"runtime_s": -1.0, "status": "hacked", "kept": 1}


def test_a_metric_never_writes_the_runners_fields_even_declared(host: pb.PluginHost) -> None:
    """Declaring runtime_s and status stored them under metrics (-1.0, "hacked") with no
    word in metric_errors, though the docs say the runner's fields are never a metric's."""

    class Plugin:
        @pb.hookimpl
        def privbench_register_metrics(self):
            return [_RunnerFieldWriter]

    host.register(Plugin(), name="runner-field-plugin")
    record = pb.execute_run(RunSpec(mechanism="identity", dataset="synthetic",
                                    dataset_params={"m": 2}, delta=1.0,
                                    metrics=("runner_field_writer",)))
    assert record["status"] == "ok" and record["runtime_s"] >= 0
    assert record["metrics"]["kept"] == 1
    assert "runtime_s" not in record["metrics"] and "status" not in record["metrics"]
    assert "may not write runtime_s (the runner's), status (the runner's)" in \
        record["metric_errors"]["runner_field_writer"]


def test_a_metric_stores_only_the_keys_it_declares(host: pb.PluginHost) -> None:
    """``undeclared`` is dropped as ``mi_bits`` is, and ``metric_errors`` names both."""

    class Plugin:
        @pb.hookimpl
        def privbench_register_metrics(self):
            return [_Undeclared]

    host.register(Plugin(), name="undeclared-plugin")
    record = pb.execute_run(RunSpec(mechanism="identity", dataset="synthetic",
                                    dataset_params={"m": 2}, delta=1.0,
                                    metrics=("undeclared_writer",)))
    assert record["status"] == "ok"
    assert record["metrics"]["declared"] == 1
    assert "undeclared" not in record["metrics"] and "undeclared" not in record
    assert record["mi_bits"] == pytest.approx(record["prior_mi_bits"])
    assert record["metric_errors"] == {"undeclared_writer": (
        "metric 'undeclared_writer' may not write undeclared (not among its outputs), "
        "mi_bits (a record field it does not declare); those values were dropped")}


@pytest.mark.parametrize("skip_leakage", [False, True])
def test_a_third_party_metric_cannot_claim_a_builtin_field(hostile, skip_leakage) -> None:
    """A metric of another distribution declaring ``mi_bits`` (and running before
    ``leakage``) gets its value stored under its own name, whether leakage runs or not;
    the output registry keeps the built-in's declaration."""
    from privbench.host.manager import get_host

    spec = RunSpec(mechanism="identity", dataset="synthetic", dataset_params={"m": 2},
                   delta=1.0, metrics=("aaa_hostile_claim",),
                   skip_metrics=("leakage",) if skip_leakage else ())
    record = pb.execute_run(spec)
    assert record["status"] == "ok"
    assert record["metrics"]["aaa_hostile_claim_mi_bits"] == 0.0
    assert record["metric_errors"] == {}
    if skip_leakage:
        assert record["mi_bits"] is None
    else:
        assert record["mi_bits"] == pytest.approx(record["prior_mi_bits"]) and record["mi_bits"] > 0.5
    declared = get_host().outputs()["mi_bits"]
    assert declared.unit == "bits" and declared.direction == "lower"


@pytest.mark.parametrize(("what", "value", "message"), [
    ("unknown_kind", None, "result kind 'banana' is unknown"),
    ("empty_records", None, "result kind 'records' but the mechanism declares"),
    ("empty_selection", None, "result kind 'selection' but the mechanism declares"),
    ("gap", -5.0, "gap_bits = -5.0 is not a finite number >= 0"),
    ("gap", "lots", "gap_bits = 'lots' is not a number"),
    ("complex", None, "mapping has complex entries"),
    ("self_stats", None, "refers to itself"),
    ("deep_stats", None, "nests deeper than"),
])
def test_damaged_results_are_invalid(hostile, what, value, message) -> None:
    record = _run(what, value)
    assert record["status"] == "invalid", record["error"]
    assert message in record["error"]


def test_empty_records_and_selection_are_invalid() -> None:
    from privbench.protocol.errors import InvalidMappingError
    from privbench.running.validate import check_result

    with pytest.raises(InvalidMappingError, match="holds no records"):
        check_result(pb.MechanismResult(kind="records", records=[]), "records")
    with pytest.raises(InvalidMappingError, match="selects nothing"):
        check_result(pb.MechanismResult(kind="selection", selection=[]), "selection")
    check_result(pb.MechanismResult(kind="selection", selection=[("a",)]), "selection")


@pytest.mark.parametrize("where", ["init", "check_params"])
@pytest.mark.parametrize("how", ["exit", "interrupt"])
def test_exits_at_plan_time_are_a_clear_error(hostile, capsys, where, how) -> None:
    code = main(["run", "-m", f"hostile_returns:what={how}_in_{where}", "-d", "synthetic:m=2",
                 "--delta", "1", "--no-store"])
    err = capsys.readouterr().err
    assert code == 2 and "hostile_returns" in err
    assert ("sys.exit(7)" if how == "exit" else "KeyboardInterrupt") in err


@pytest.mark.parametrize("where", ["skip", "repr"])
def test_exits_at_run_time_fail_only_that_run(hostile, where) -> None:
    record = _run(f"exit_in_{where}")
    if where == "repr":  # costs only the repr field
        assert record["status"] == "ok" and "repr failed" in record["metrics"]["mechanism_repr"]
    else:
        assert record["status"] == "error" and "sys.exit(7)" in record["error"]
        assert "hostile_returns" in record["error"]


def test_a_metric_that_exits_fails_only_itself(hostile) -> None:
    record = _run("nothing", metrics=("hostile_exits",))
    assert record["status"] == "ok" and record["mi_bits"] is not None
    assert "sys.exit(5)" in record["metric_errors"]["hostile_exits"]
    assert "hostile_exits_error" not in record["metrics"]


def test_a_registration_hook_that_exits_is_a_broken_plugin() -> None:
    class ExitingHook:
        @pb.hookimpl
        def privbench_register_mechanisms(self):
            sys.exit(3)

    host = pb.PluginHost(autoload=False)
    host.register(ExitingHook(), name="exiting")
    [row] = [p for p in host.plugins() if p.plugin == "exiting"]
    assert row.status == "broken" and "sys.exit(3)" in row.reason


@pytest.mark.parametrize(("how", "code", "message"), [
    ("exit", 2, "reporter 'hostile_reporter' called sys.exit(4)"),
    ("raise", 2, "reporter 'hostile_reporter' failed: RuntimeError: reporter bug"),
    ("full", 3, "No space left on device"),
])
def test_a_failing_reporter_is_one_line(hostile, tmp_path, capsys, monkeypatch, how, code,
                                        message) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1",
                 "--db", str(db)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("PRIVBENCH_HOSTILE_REPORTER", how)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "out"),
                 "--reporter", "hostile_reporter"]) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_closed_stdout_is_one_line(tmp_path) -> None:
    import subprocess

    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--delta",
                 "2", "--db", str(db)]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "privbench", "results", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader left before anything was printed
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err
    assert proc.returncode == 1 and err == ""  # quiet, like a command cut by `head`


@pytest.mark.parametrize("what", ["patch_numpy", "patch_information"])
def test_a_run_that_patches_shared_modules_is_undone(hostile, what) -> None:
    clean = pb.execute_run(RunSpec(mechanism="expmec", dataset="synthetic",
                                   dataset_params={"m": 3}, delta=0.5))
    record = _run(what)
    assert record["status"] == "invalid" and "changed shared module" in record["error"]
    again = pb.execute_run(RunSpec(mechanism="expmec", dataset="synthetic",
                                   dataset_params={"m": 3}, delta=0.5))
    assert again["mi_bits"] == pytest.approx(clean["mi_bits"]) and again["mi_bits"] > 0.1


@pytest.mark.parametrize("target", [
    "numpy.linalg:norm", "scipy.special:xlogy", "scipy.sparse.linalg:spsolve",
    "privbench.protocol.checks:finite_float", "privbench.plugins.mechanisms.expmec:solve_beta",
    "privbench.protocol.mechanism:MappingMechanism.result",
])
def test_patches_of_submodules_plugins_and_classes_are_undone(hostile, target) -> None:
    """Beyond numpy and information: any numpy/scipy submodule, any privbench module
    (plugins included) and the methods of privbench's classes."""
    import importlib

    module, _, path = target.partition(":")
    owner = importlib.import_module(module)
    *outer, attr = path.split(".")
    for name in outer:
        owner = getattr(owner, name)
    original = vars(owner)[attr]
    clean = pb.execute_run(RunSpec(mechanism="expmec", dataset="synthetic",
                                   dataset_params={"m": 3}, delta=0.5))
    record = _run("patch", target)
    assert record["status"] == "invalid" and f"{attr}" in record["error"], record["error"]
    assert vars(owner)[attr] is original
    again = pb.execute_run(RunSpec(mechanism="expmec", dataset="synthetic",
                                   dataset_params={"m": 3}, delta=0.5))
    assert again["status"] == "ok" and again["mi_bits"] == pytest.approx(clean["mi_bits"])


@pytest.mark.slow
@pytest.mark.parametrize("what", ["patch", "fork"])
def test_a_process_worker_that_was_patched_or_forked_is_retired(tmp_path, what) -> None:
    """What the in-place restore cannot see (here a mark left in ``json``) never reaches
    a later run: the worker that ran the patch or the fork is replaced."""
    import json

    value = ",value=numpy:log2" if what == "patch" else ""
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "hostile_plugins"}
    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m",
                          "hostile_returns:what=whoami,value=before", "-m",
                          f"hostile_returns:what={what}{value}", "-m",
                          "hostile_returns:what=whoami,value=after", "-m", "expmec", "-d",
                          "synthetic:m=3", "--delta", "0.5", "--executor", "process",
                          "--workers", "1", "--no-store", "--json", "--timeout", "120"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    records = {(r["mechanism"], r["params"].get("value") or r["params"].get("what")): r
               for r in map(json.loads, out.stdout.splitlines())}
    before = records["hostile_returns", "before"]["metrics"]
    after = records["hostile_returns", "after"]["metrics"]
    assert after["pid"] != before["pid"] and after["marker"] is False
    assert records["expmec", None]["status"] == "ok"
    assert records["expmec", None]["mi_bits"] > 0.1
    if what == "patch":
        assert records["hostile_returns", "numpy:log2"]["status"] == "invalid"


@pytest.mark.slow
def test_a_forked_child_does_not_carry_on_the_sweep(tmp_path) -> None:
    import sqlite3
    import subprocess

    spec = tmp_path / "fork.toml"
    spec.write_text('mechanisms = ["hostile_returns:what=fork", "identity"]\n'
                    'datasets = ["synthetic:m=2"]\ndeltas = [0.5, 1.0]\nbaselines = false\n')
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "hostile_plugins"}
    out = subprocess.run([sys.executable, "-m", "privbench", "sweep", str(spec), "--db", str(db)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(db) as conn:
        keys = [r[0] for r in conn.execute("SELECT run_key FROM runs")]
    assert len(keys) == len(set(keys)) == 4


def test_a_plugin_that_cancels_the_timer_still_times_out(hostile) -> None:
    import time

    spec = RunSpec(mechanism="hostile_returns", mechanism_params={"what": "cancel_timer"},
                   dataset="synthetic", dataset_params={"m": 2}, delta=1.0)
    started = time.monotonic()
    record = pb.execute_run(spec, timeout=1.0)
    assert record["status"] == "timeout"
    assert time.monotonic() - started < 60


@pytest.mark.slow
@pytest.mark.parametrize("what", ["swallow_timeout", "block_alarm"])
def test_a_run_that_cannot_be_stopped_ends_privbench_with_a_message(tmp_path, what) -> None:
    import subprocess

    code = ("import privbench as pb\n"
            "from privbench.running import guards\n"
            "guards.ESCALATE_S = 2.0\n"
            "spec = pb.RunSpec(mechanism='hostile_returns', mechanism_params={'what': "
            f"'{what}'}}, dataset='synthetic', dataset_params={{'m': 2}}, delta=1.0)\n"
            "record = pb.execute_run(spec, timeout=1.0)\n"
            "raise SystemExit(0 if record['status'] == 'timeout' else 5)\n")
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "hostile_plugins"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    if out.returncode == 0:  # the run was unwound after all (a timeout record): no hang
        return
    assert out.returncode == 124, out.stderr
    assert "ignored its time limit of 1 s" in out.stderr and "Traceback" not in out.stderr


def test_dask_timeout_repeats_and_a_caught_timeout_is_no_result(hostile) -> None:
    from privbench.plugins.executors.dask_executor import run_on_worker

    spec = RunSpec(mechanism="hostile_returns", mechanism_params={"what": "swallow_once"},
                   dataset="synthetic", dataset_params={"m": 2}, delta=1.0)
    record = run_on_worker(spec.to_dict(), timeout=1.0)
    assert record["status"] == "timeout" and "time limit of 1 s" in record["error"]


@pytest.mark.slow
def test_a_thread_left_running_does_not_hold_the_command(tmp_path) -> None:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "hostile_plugins"}
    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m",
                          "hostile_returns:what=leave_thread", "-d", "synthetic:m=2", "--delta",
                          "1", "--no-store"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "left thread(s) running (left-behind)" in out.stderr


def test_a_plugin_that_sleeps_at_import_is_broken_not_a_hang(tmp_path) -> None:
    """In a fresh process (pytest's own timeout holds the interval timer here)."""
    import subprocess

    (tmp_path / "sleepy_plugin.py").write_text("import time\ntime.sleep(600)\n")
    code = ("import os\nimport privbench as pb\nfrom privbench.host import manager\n"
            "manager.IMPORT_TIMEOUT_S = 1.0\n"
            "host = pb.PluginHost()\n"
            "[row] = [p for p in host.plugins() if p.plugin == 'sleepy_plugin']\n"
            "print(row.status, row.reason)\n"
            "assert host.mechanisms()\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PRIVBENCH_PLUGIN_MODULES": "sleepy_plugin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("broken") and "longer than 1 s" in out.stdout
