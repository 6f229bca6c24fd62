"""``--resume`` re-runs the rows of a data file edited since (found by
tools/probe_trust.py stale/csv_data_edited): the fingerprint covers the code, the data
files' sha256 (``provenance.data_files``) the data."""

from __future__ import annotations

from pathlib import Path

import pytest

from privbench.cli import main
from privbench.results.store import ResultStore
from privbench.running import problems


@pytest.fixture
def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    table = tmp_path / "t.csv"
    table.write_text("zip,income\n1,high\n2,low\n1,high\n2,low\n")  # zip says income: 1 bit
    spec = tmp_path / "s.toml"
    spec.write_text(f'mechanisms = ["identity"]\ndatasets = ["csv:path={table},private=income"]\n'
                    'deltas = [1.0]\nbaselines = false\nskip_metrics = ["optimum"]\n')
    db = tmp_path / "r.sqlite"

    def run() -> list[float]:
        monkeypatch.setattr(problems, "_CACHE", type(problems._CACHE)())  # a new process
        assert main(["sweep", str(spec), "--db", str(db), "--resume"]) == 0
        with ResultStore(db, create=False) as store:
            return list(store.frame()["prior_mi_bits"])

    return table, run


def test_an_edited_csv_is_run_again(sweep, capsys) -> None:
    table, run = sweep
    assert run() == pytest.approx([1.0])
    table.write_text("zip,income\n1,high\n1,low\n2,high\n2,low\n")  # now zip says nothing
    capsys.readouterr()
    assert run() == pytest.approx([1.0, 0.0])
    assert "1 stale re-run" in capsys.readouterr().err


def test_an_unchanged_csv_is_not_run_again(sweep, capsys) -> None:
    _, run = sweep
    assert run() == pytest.approx([1.0])
    capsys.readouterr()
    assert run() == pytest.approx([1.0])
    assert "resume: 1 stored, 0 to run" in capsys.readouterr().err
