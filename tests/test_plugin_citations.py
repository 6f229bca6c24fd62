"""``plugins info`` for every built-in plugin names where it comes from (a citation, or
"none: ..." saying it is privbench's own), and shows each parameter's doc whole."""

from __future__ import annotations

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
