"""The README's "Writing a plugin" example is complete and runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.results.store import ResultStore
from privbench.testing import check_mechanism

README = Path(__file__).resolve().parents[1] / "README.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(# my_mech\.py.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "the README has one my_mech.py example"
    return blocks[0]


def test_the_example_is_at_most_40_lines() -> None:
    assert len(_example().rstrip("\n").splitlines()) <= 40


@pytest.fixture
def my_mech(tmp_path, monkeypatch):
    (tmp_path / "my_mech.py").write_text(_example(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PRIVBENCH_PLUGIN_MODULES", "my_mech")
    from privbench.host import manager

    previous = manager.set_host(pb.PluginHost())
    yield manager.get_host()
    manager.set_host(previous)


def test_the_example_passes_check_mechanism_and_runs_from_the_cli(my_mech, tmp_path, capsys) -> None:
    rows = check_mechanism(my_mech.get("mechanism", "nearest"))
    assert {r["params"]["weight"] for r in rows} == {0.0, 0.5}
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "nearest:weight=0.25", "-d", "synthetic:m=4", "--delta", "1",
                 "--db", str(db)]) == 0
    with ResultStore(db, create=False) as store:
        status, metrics = store.frame()[["status", "metrics"]].iloc[0]
    assert status == "ok" and metrics["iterations"] == 1 and "prepare_s" in metrics
    assert main(["run", "-m", "nearest:weight=2", "-d", "synthetic:m=4", "--delta", "1",
                 "--no-store"]) == 2
    assert "weight must be in [0, 1]" in capsys.readouterr().err
