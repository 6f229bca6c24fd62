"""Frictions a new user met on the command line, each pinned by a test."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import CLOSED_PIPE, build_parser, main
from privbench.results.store import ResultStore

DOCS = Path(__file__).resolve().parents[1] / "docs"


class NeedsOrtools(pb.MappingMechanism):
    name = "needs_ortools"
    requirements = ("privbench_test_no_such_module",)
    extra = "ortools"

    def __init__(self) -> None:
        pass


class _Plugin:
    @pb.hookimpl
    def privbench_register_mechanisms(self):
        return [NeedsOrtools]


def test_plugins_table_prints_the_install_hint_with_its_extra(host, capsys, monkeypatch) -> None:
    from privbench.host.manager import _Source

    monkeypatch.setenv("COLUMNS", "250")
    host.register(_Plugin(), name="needs-ortools",
                  source=_Source("pb-frictions", "1.0", __name__, packaged=True))
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "needs_ortools" in ln)
    assert "install with: pip install 'pb-frictions[ortools]'" in line  # [ortools] not markup


def test_results_heading_counts_the_runs_it_shows(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = Path("plug.sqlite")
    with ResultStore(db) as store:
        for k in range(24):
            store.add({"mechanism": "identity", "dataset": "synthetic", "status": "ok",
                       "delta": float(k), "run_key": f"identity|synthetic|{k}"})
    assert main(["results", "--db", str(db), "--limit", "12"]) == 0
    out = capsys.readouterr().out
    assert "12 runs in plug.sqlite on synthetic" in " ".join(out.split())
    assert "24 runs" not in out.split("showing")[0]
    assert "showing the last 12 of 24 runs" in out
    assert main(["results", "--db", str(db), "--limit", "0"]) == 0
    out = capsys.readouterr().out
    assert "24 runs in plug.sqlite on synthetic" in " ".join(out.split())
    assert "showing" not in out


def _closed_pipe(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI with its stdout reader already gone (``... | head`` after head exits)."""
    proc = subprocess.Popen([sys.executable, "-m", "privbench.cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # type: ignore[union-attr]
    _, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, proc.returncode, "", err)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["sweep", "{spec}", "--dry-run"], ["plugins"]])
def test_a_closed_pipe_ends_quietly(tmp_path, argv) -> None:
    spec = tmp_path / "grid.toml"
    spec.write_text('mechanisms = ["identity", "expmec"]\ndatasets = ["synthetic:m=3"]\n'
                    'deltas = [0.1, 0.2, 0.3]\nseeds = [1, 2, 3, 4]\n')
    done = _closed_pipe([a.replace("{spec}", str(spec)) for a in argv])
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == CLOSED_PIPE


def _options(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", "(the command itself)", helped.get(name)
                yield from _options(sub, f"{path} {name}")
        else:
            yield path, "/".join(action.option_strings) or action.dest, action.help


def test_every_option_and_command_has_help_text() -> None:
    missing = [f"{cmd} {opt}" for cmd, opt, text in _options(build_parser(), "privbench")
               if not text or text == argparse.SUPPRESS]
    assert missing == []
    options = {(cmd, opt) for cmd, opt, _ in _options(build_parser(), "privbench")}
    assert ("privbench run", "--seed") in options and ("privbench results", "--db") in options


def test_csv_list_syntax_is_documented_and_shown_back_as_a_list(tmp_path, capsys,
                                                              monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    table = Path("people.csv")
    rows = ["region,age,diet,income"] + [f"r{k % 3},{20 + k % 4},d{k % 2},{'hi' if k % 5 else 'lo'}"
                                         for k in range(40)]
    table.write_text("\n".join(rows) + "\n")
    spec = f"csv:path={table},private=income,public=[region,age,diet]"
    assert main(["run", "-m", "identity", "-d", spec, "--delta", "1", "--no-store",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out.splitlines()[0])
    assert record["status"] == "ok", record["error"]
    assert record["dataset_params"]["public"] == ["region", "age", "diet"]
    assert main(["run", "-m", "identity", "-d", spec, "--delta", "1", "--no-store"]) == 0
    title = " ".join(capsys.readouterr().out.split())
    assert "1 run on csv[path=people.csv,private=income,public=['region', 'age', 'diet']]" in title
    assert main(["plugins", "info", "csv"]) == 0
    assert "public=[region,age,diet]" in capsys.readouterr().out
    assert "public=[region,age,diet]" in (DOCS / "cli.md").read_text(encoding="utf-8")


def test_docs_cli_names_every_builtin_command_and_option() -> None:
    """docs/cli.md is the reference: a new option or command without a line there fails."""
    import importlib

    from privbench.cli import command_modules

    parser = argparse.ArgumentParser(prog="privbench")
    sub = parser.add_subparsers()
    for name in command_modules():  # the built-in commands (plugins document their own)
        importlib.import_module(f"privbench.cli.{name}").add_parser(sub)
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = []
    for cmd, opt, _ in _options(parser, "privbench"):
        if opt == "(the command itself)":
            if f"privbench {cmd.split(' ', 1)[1]}" not in text:
                missing.append(cmd)
        elif opt.startswith("-") and opt != "-h/--help":
            if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)
                       for o in opt.split("/")):
                missing.append(f"{cmd} {opt}")
    assert missing == []
