"""The report's echoed sweep spec says what ran: the baselines the sweep added."""

from __future__ import annotations

from privbench.plugins.reporters.html import _echo_spec


def test_echo_names_the_baselines_the_sweep_added(tmp_path, host) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('mechanisms = ["expmec", "identity"]\ndatasets = ["synthetic:m=3"]\n'
                    "deltas = [1.0]\n", encoding="utf-8")
    echo = _echo_spec(spec, host.mechanisms())
    assert echo["added"] == ["constant"] and echo["text"].startswith("mechanisms")
    spec.write_text(spec.read_text(encoding="utf-8") + "baselines = false\n", encoding="utf-8")
    assert _echo_spec(spec, host.mechanisms())["added"] == []
