"""Plugins contribute commands (``privbench_register_commands``); the host names none."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.host import manager

ROOT = Path(__file__).resolve().parents[1]


class Commands:
    @pb.hookimpl
    def privbench_register_commands(self, cli):
        p = cli.add_benchmark("echo", help="print m squared")
        p.add_argument("--m", type=int, default=3)
        p.set_defaults(func=lambda args: print(args.m ** 2) or 0)
        q = cli.add_command("shout", help="refuse a bad value")
        q.set_defaults(func=self.shout)

    @staticmethod
    def shout(args):
        raise pb.ValidationError("--loud must be given")


class Broken:
    @pb.hookimpl
    def privbench_register_commands(self, cli):
        raise RuntimeError("no luck")


class Duplicate:
    @pb.hookimpl
    def privbench_register_commands(self, cli):
        cli.add_command("run", help="a second run command")


@pytest.fixture()
def host():
    host = pb.PluginHost()
    for plugin, name in ((Commands(), "cmds"), (Broken(), "broken-cmds"), (Duplicate(), "dup")):
        host.pm.register(plugin, name=name)
    previous = manager.set_host(host)
    yield host
    manager.set_host(previous)


def test_a_plugin_adds_a_benchmark_and_a_command(host, capsys) -> None:
    assert main(["benchmark", "echo", "--m", "7"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "49"
    assert main(["shout"]) == 2
    assert "privbench shout: error: --loud must be given" in capsys.readouterr().err


def test_a_failing_or_clashing_hook_costs_only_its_commands(host, capsys) -> None:
    assert main(["benchmark", "echo"]) == 0
    err = capsys.readouterr().err
    assert "plugin broken-cmds: privbench_register_commands failed: RuntimeError: no luck" in err
    assert "plugin dup: privbench_register_commands failed: PluginError: command 'run' is " \
           "already defined" in err
    assert main(["benchmark", "sppm", "--m", "4", "--mode", "fast"]) == 2  # built-ins intact


def test_the_host_names_no_mechanism() -> None:
    """No code of harness/ names sppm (an identifier, an import, a plugin name or spec as a
    string); docstrings, comments, help and citations may mention it as an example."""
    for path in sorted((ROOT / "harness").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            named = (isinstance(node, ast.Constant) and isinstance(node.value, str)
                     and re.fullmatch(r"\s*sppm([:\[(].*)?\s*", node.value, flags=re.I | re.S)
                     and node.value) or \
                (isinstance(node, ast.Name) and node.id) or \
                (isinstance(node, ast.Attribute) and node.attr) or \
                (isinstance(node, ast.alias) and node.name) or \
                (isinstance(node, ast.ImportFrom) and node.module) or ""
            assert "sppm" not in named.lower(), f"{path.relative_to(ROOT)}:{node.lineno}: {named}"
