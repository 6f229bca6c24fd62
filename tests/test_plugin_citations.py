"""``plugins info`` for every built-in plugin names where it comes from (a citation, or
"none: ..." saying it is privbench's own), and shows each parameter's doc whole."""

from __future__ import annotations

import json

from privbench.cli import main
from privbench.host.describe import describe


def test_every_builtin_plugin_has_a_citation(host) -> None:
    builtin = [info for info in host.plugins() if info.distribution == "privbench"]
    assert len(builtin) >= 60  # every kind: mechanisms ... figures
    missing = [f"{info.kind} {info.name}" for info in builtin if not describe(info)["citation"]]
    assert missing == []


def test_plugins_info_shows_citation_and_whole_parameter_docs(host, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["plugins", "info", "sppm"]) == 0
    text = capsys.readouterr().out
    assert "citation: Salamatian, Fawaz, Kveton, Taft, SPPM" in text
    assert "…" not in text
    assert "steps)." in text  # the end of `iterations`' doc, once cut at the first sentence


def test_every_builtin_plugin_parameter_has_help(host, capsys) -> None:
    """docs/cli.md: ``plugins info`` gives every parameter its whole help. Read through the
    path ``plugins info --json`` takes, for every installed built-in plugin of every kind."""
    assert main(["plugins", "--json"]) == 0
    names = {(row["kind"], row["role"], row["name"]) for row in json.loads(capsys.readouterr().out)
             if row["distribution"] == "privbench"}
    assert len(names) >= 60
    missing = []
    for kind, role, name in sorted(names):
        assert main(["plugins", "info", name, "--kind", role, "--json"]) == 0
        [data] = json.loads(capsys.readouterr().out)
        assert data["kind"] == kind, data
        missing += [f"{role} {name}: {p['name']}" for p in data["parameters"]
                    if not " ".join(str(p["doc"] or "").split())]
    assert missing == [], f"{len(missing)} parameters without help:\n" + "\n".join(missing)
