"""A run that catches its timeout is no result, under every executor (found by
tools/probe_trust.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import privbench as pb
from privbench.running.specs import RunSpec

TESTS = Path(__file__).resolve().parent
#: the helper plugins the tests load by module name (PRIVBENCH_PLUGIN_MODULES)
PLUGINS = TESTS / "plugins"
#: metrics that take longer than the second between two raises of the timeout
SLOW = ("optimum", "mapping_behaviour")


def test_a_local_run_that_caught_its_timeout_once_is_a_timeout(hostile) -> None:
    """It sleeps 2.5 s, catches the timeout raised at 1 s and returns before the re-raise:
    its result came after its limit, so it is not stored ok."""
    spec = RunSpec(mechanism="hostile_returns", mechanism_params={"what": "swallow_once"},
                   dataset="synthetic", dataset_params={"m": 2}, delta=1.0, skip_metrics=SLOW)
    record = pb.execute_run(spec, timeout=1.0)
    assert record["status"] == "timeout", record
    assert "time limit of 1 s" in record["error"] and "caught the timeout" in record["error"]


def test_a_run_within_its_limit_is_ok(hostile) -> None:
    spec = RunSpec(mechanism="hostile_returns", mechanism_params={"what": "nothing"},
                   dataset="synthetic", dataset_params={"m": 2}, delta=1.0)
    assert pb.execute_run(spec, timeout=300.0)["status"] == "ok"  # generous: load-proof


def test_a_metric_past_the_limit_is_named_in_the_timeout(hostile) -> None:
    """The limit covers the run and its metrics: when a metric runs past it, the error says
    which one, that the mechanism's run had finished, and how to leave the metric out
    (on census with every profile the bootstrap's 15 s after a 5 s solve read as a solve
    that timed out)."""
    others = tuple(name for name in pb.metric_names()
                   if name not in ("leakage", "distortion", "hostile_slow_metric"))
    spec = RunSpec(mechanism="hostile_returns", mechanism_params={"what": "nothing"},
                   dataset="synthetic", dataset_params={"m": 2}, delta=1.0,
                   metrics=("hostile_slow_metric",), skip_metrics=others)
    record = pb.execute_run(spec, timeout=1.0)
    assert record["status"] == "timeout", record
    assert "while computing metric hostile_slow_metric" in record["error"], record["error"]
    assert "--no-metric hostile_slow_metric" in record["error"]
    assert "while preparing" not in record["error"]
    assert record["runtime_s"] is not None and record["runtime_s"] < 1.0  # the solve finished


def _slow_prepare(prepare_s: float, run_s: float) -> RunSpec:
    """No metric but I and E[d]: the limits below leave the metrics a second or two."""
    others = tuple(name for name in pb.get_host().metrics() if name not in ("leakage", "distortion"))
    return RunSpec(mechanism="hostile_slow_prepare",
                   mechanism_params={"prepare_s": prepare_s, "run_s": run_s},
                   dataset="synthetic", dataset_params={"m": 2}, delta=1.0, skip_metrics=others)


@pytest.mark.slow
def test_prepare_and_run_are_each_limited(hostile) -> None:
    """A 6 s prepare (numba compiling on a fresh clone) does not use up a 10 s limit: the
    6 s run after it gets the whole limit again (together they take 12 s; each has 4 s to
    spare, so machine load cannot fail it); a prepare or a run longer than the limit times
    out, and the message says which."""
    record = pb.execute_run(_slow_prepare(6.0, 6.0), timeout=10.0)
    assert record["status"] == "ok", (record["error"], record["metrics"].get("prepare_s"))
    assert record["metrics"]["prepare_s"] >= 6.0 and record["runtime_s"] >= 6.0
    record = pb.execute_run(_slow_prepare(3.0, 0.0), timeout=1.0)
    assert record["status"] == "timeout" and "while preparing" in record["error"], record
    record = pb.execute_run(_slow_prepare(0.0, 3.0), timeout=1.0)
    assert record["status"] == "timeout" and "while preparing" not in record["error"], record


def _python(code: str, tmp_path: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "hostile_plugins"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path)


def test_a_dask_run_that_swallows_every_timeout_is_given_up(tmp_path) -> None:
    """It catches every raise of its timeout: the task returns a timeout record anyway
    (naming the worker to restart) instead of holding its worker and the sweep forever.
    In a subprocess: the given-up thread is left behind until its process ends."""
    pytest.importorskip("distributed")
    # sys.__stdout__: the given-up run, still inside execute_run, holds sys.stdout on stderr
    code = ("import os, sys, privbench as pb\n"
            "from privbench.plugins.executors.dask_executor import run_on_worker\n"
            "spec = pb.RunSpec(mechanism='hostile_returns', mechanism_params={'what': "
            "'swallow_timeout'}, dataset='synthetic', dataset_params={'m': 2}, delta=1.0)\n"
            # a warm-up run first: imports, plugins and the data set are loaded before the
            # hostile run's clock starts (under load they took the whole 1 s limit, and the
            # run timed out before it could swallow anything)
            "warm = pb.RunSpec(mechanism='hostile_returns', mechanism_params={'what': 'nothing'}, "
            "dataset='synthetic', dataset_params={'m': 2}, delta=1.0)\n"
            "assert run_on_worker(warm.to_dict(), timeout=60.0, give_up_s=2.0)['status'] == 'ok'\n"
            "record = run_on_worker(spec.to_dict(), timeout=1.0, give_up_s=2.0)\n"
            "sys.__stdout__.write(record['status'] + ' | ' + record['error'] + '\\n')\n"
            "sys.__stdout__.flush()\n"
            "os._exit(0)\n")
    try:
        out = _python(code, tmp_path, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the run that swallows its timeout held the task")
    assert out.stdout.startswith("timeout |"), out.stderr[-2000:]
    assert "ignored the timeout for 2 s more" in out.stdout and "given up" in out.stdout


@pytest.mark.slow
def test_a_dask_sweep_goes_on_past_a_run_that_swallows_every_timeout(tmp_path) -> None:
    """Through the CLI: the hostile run is a timeout, the worker is restarted, the next
    run on that (only) worker is stored ok, and the command ends. A limit of 5 s: the
    restarted worker's first run imports privbench and its plugins."""
    pytest.importorskip("distributed")
    db = tmp_path / "r.sqlite"
    code = ("import sys\n"
            "from privbench.plugins.executors import dask_executor\n"
            "dask_executor.GIVE_UP_S = 2.0\n"
            "from privbench.cli import main\n"
            "sys.exit(main(['run', '-m', 'hostile_returns:what=swallow_timeout', '-m', 'identity', "
            "'-d', 'synthetic:m=2', '--delta', '1', '--executor', 'dask', '--workers', '1', "
            f"'--timeout', '5', '--no-metric', 'optimum', '--db', r'{db}']))\n")
    out = _python(code, tmp_path, timeout=280)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = dict(sqlite3.connect(db).execute("SELECT mechanism, status FROM runs").fetchall())
    assert rows == {"hostile_returns": "timeout", "identity": "ok"}, out.stderr[-2000:]


def _timeout_in_compiled_code(how: str) -> None:
    """What CPython raises when the time limit's exception lands inside a numba function:
    ``SystemError`` with the timeout as its cause and context (``from``), or as its
    context only (raised while handling it)."""
    try:
        raise pb.RunTimeout("run exceeded its time limit of 1 s")
    except pb.RunTimeout as exc:
        message = "CPUDispatcher(<function _tables>) returned a result with an exception set"
        if how == "cause":
            raise SystemError(message) from exc
        raise SystemError(message)  # noqa: B904 - the implicit context is the case tested


class _TimesOutInside(pb.MappingMechanism):
    name = "times_out_inside"

    def __init__(self, how: str = "cause") -> None:
        self.how = how

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        _timeout_in_compiled_code(self.how)
        raise AssertionError("unreachable")


class _TimesOutInsideMetric(pb.Metric):
    name = "times_out_inside_metric"
    default = False

    def compute(self, problem, result, *, delta, seed=None) -> dict:
        _timeout_in_compiled_code("cause")
        return {}


class _TimeoutPlugin:
    @pb.hookimpl
    def privbench_register_mechanisms(self):
        return [_TimesOutInside]

    @pb.hookimpl
    def privbench_register_metrics(self):
        return [_TimesOutInsideMetric]


@pytest.mark.parametrize("how", ["cause", "context"])
def test_a_timeout_surfacing_as_a_system_error_is_a_timeout(host, how: str) -> None:
    """The time limit fired inside a compiled function (sppm frank-wolfe on census, once in
    ~22 runs at --timeout 1): the SystemError it became is the timeout, not an error."""
    host.register(_TimeoutPlugin(), name="times-out-inside")
    spec = RunSpec(mechanism="times_out_inside", mechanism_params={"how": how},
                   dataset="synthetic", dataset_params={"m": 2}, delta=1.0)
    record = pb.execute_run(spec)
    assert record["status"] == "timeout", record
    assert record["error"] == "run exceeded its time limit of 1 s"


def test_a_timeout_surfacing_in_a_metric_is_the_runs_timeout(host) -> None:
    host.register(_TimeoutPlugin(), name="times-out-inside")
    others = tuple(name for name in pb.metric_names()
                   if name not in ("leakage", "distortion", "times_out_inside_metric"))
    spec = RunSpec(mechanism="identity", dataset="synthetic", dataset_params={"m": 2}, delta=1.0,
                   metrics=("times_out_inside_metric",), skip_metrics=others)
    record = pb.execute_run(spec)
    assert record["status"] == "timeout", record
    assert "times_out_inside_metric" not in (record.get("metric_errors") or {})


def test_a_system_error_without_a_timeout_behind_it_is_an_error(host) -> None:
    class _Broken(_TimesOutInside):
        name = "plain_system_error"

        def run(self, problem, delta):
            raise SystemError("a genuine interpreter error")

    class _Plugin:
        @pb.hookimpl
        def privbench_register_mechanisms(self):
            return [_Broken]

    host.register(_Plugin(), name="plain-system-error")
    record = pb.execute_run(RunSpec(mechanism="plain_system_error", dataset="synthetic",
                                    dataset_params={"m": 2}, delta=1.0))
    assert record["status"] == "error" and "SystemError: a genuine interpreter error" in record["error"]
