"""A run that catches its timeout is no result, under every executor (issue 32, found by
tools/probe_trust.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import privbench as pb
from privbench.host import manager as host_module
from privbench.running.specs import RunSpec

TESTS = Path(__file__).resolve().parent
#: metrics that take longer than the second between two raises of the timeout
SLOW = ("optimum", "mapping_behaviour")


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PRIVBENCH_PLUGIN_MODULES", "hostile_plugins")
    previous = host_module.set_host(pb.PluginHost(env=dict(os.environ)))
    yield
    host_module.set_host(previous)


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
    assert pb.execute_run(spec, timeout=30.0)["status"] == "ok"
