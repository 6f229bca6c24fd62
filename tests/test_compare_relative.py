"""``compare --relative-budget F``: budgets as fractions of each data set's d_const, read
off the runs stored at relative budgets (``run --relative-delta``, ``relative_deltas``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main

#: the toy example's d_const (the best constant output's E[d]): 5.5
SPEC = {"mechanisms": ["expmec", "sppm"], "datasets": ["synthetic:m=3"],
        "relative_deltas": [0.25, 0.5], "baselines": False}


@pytest.fixture(scope="module")
def relative_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("rel") / "r.sqlite"
    pb.sweep(SPEC, db=db)
    return db


def _tables(text: str) -> list[str]:
    """The lines after the relative budget's own line (the tables and their notes)."""
    return [line for line in text.splitlines() if not line.startswith("--relative-budget on")]


def test_a_stored_fraction_compares_as_its_stored_budget(relative_store: Path, capsys) -> None:
    assert main(["compare", "--db", str(relative_store), "--relative-budget", "0.5"]) == 0
    relative = capsys.readouterr().out
    assert "d_const = 5.5: F 0.5 -> Δ 2.75" in relative
    assert main(["compare", "--db", str(relative_store), "--budget", "2.75"]) == 0
    absolute = capsys.readouterr().out
    assert _tables(relative) == _tables(absolute)
    assert "ranked by I at Δ≤2.75" in relative


def test_a_fraction_not_stored_is_scaled_by_d_const(relative_store: Path, capsys) -> None:
    assert main(["compare", "--db", str(relative_store), "--relative-budget", "0.4",
                 "--relative-budget", "0.25"]) == 0
    out = capsys.readouterr().out
    assert "F 0.4 -> Δ 2.2, F 0.25 -> Δ 1.375" in out
    assert "ranked by I at Δ≤2.2" in out  # the first one ranks


def test_absolute_runs_only_or_both_flags_are_refused(relative_store: Path, tmp_path: Path,
                                                       capsys) -> None:
    absolute = tmp_path / "a.sqlite"
    spec = {k: v for k, v in SPEC.items() if k != "relative_deltas"}
    pb.sweep({**spec, "deltas": [1.0, 2.0]}, db=absolute)
    assert main(["compare", "--db", str(absolute), "--relative-budget", "0.5"]) == 2
    assert "no run in" in capsys.readouterr().err
    assert main(["compare", "--db", str(relative_store), "--relative-budget", "0.5",
                 "--budget", "1"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["compare", "--db", str(relative_store), "--relative-budget", "nan"]) == 2
    assert "--relative-budget must be a finite number" in capsys.readouterr().err
