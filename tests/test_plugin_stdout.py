"""What plugin code prints during a run never lands in the results on stdout (``--json``
lines stay JSON; found by tools/probe_trust.py plugins/prints_to_stdout_under_json)."""

from __future__ import annotations

import json

import numpy as np

import privbench as pb
from privbench.cli import main
from privbench.host import manager as host_module


class Chatty(pb.MappingMechanism):
    name = "chatty"

    def __init__(self) -> None:
        pass

    def run(self, problem, delta):
        print("hello from a plugin")
        return self.result(np.eye(problem.n))


class Registers:
    @pb.hookimpl
    def privbench_register_mechanisms(self):
        return [Chatty]


def test_a_plugin_that_prints_leaves_json_lines_intact(capsys) -> None:
    host = pb.PluginHost()
    host.register(Registers(), name="chatty")
    previous = host_module.set_host(host)
    try:
        code = main(["run", "-m", "chatty", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1",
                     "--no-metric", "optimum", "--json", "--no-store"])
    finally:
        host_module.set_host(previous)
    captured = capsys.readouterr()
    assert code == 0
    lines = [line for line in captured.out.splitlines() if line.strip()]
    assert [json.loads(line)["mechanism"] for line in lines] == ["chatty", "identity"]
    assert "hello from a plugin" in captured.err  # said, where diagnostics go
