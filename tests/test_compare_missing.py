"""``compare --by OUTPUT`` when no stored run has the output: the message names the real
reason (docs/cli.md): the data sets lack what the metric needs, the metric was left out,
the runs predate it, or the output is an interval that is no number to rank by."""

from __future__ import annotations

from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.results.store import ResultStore


def _run(db: Path, dataset: str) -> None:
    assert main(["run", "-m", "identity", "-d", dataset, "--delta", "0.5", "--db", str(db),
                 "--no-metric", "optimum", "--no-metric", "bootstrap"]) == 0


def _compare_error(db: Path, by: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--by", by]) == 2
    return " ".join(capsys.readouterr().err.split())


def test_a_data_set_without_the_part_a_metric_needs_is_named(host, tmp_path, capsys) -> None:
    db = tmp_path / "toy.sqlite"
    _run(db, "synthetic:m=3")
    err = _compare_error(db, "holdout_mi_bits", capsys)
    assert "declared by metric 'holdout_leakage'" in err
    assert "on synthetic[m=3] it needs the problem part 'holdout'" in err
    assert "synthetic takes no holdout parameter" in err and "-d census:holdout=..." in err
    assert "run them again" not in err and "stored before" not in err


def test_a_data_set_that_takes_the_part_as_a_parameter_is_told_to_pass_it(host, tmp_path,
                                                                          capsys) -> None:
    db = tmp_path / "tv.sqlite"
    _run(db, "politics_tv_surrogate")
    err = _compare_error(db, "holdout_mi_bits", capsys)
    assert "it needs the problem part 'holdout'" in err
    assert "pass holdout=... to politics_tv_surrogate" in err


def test_a_left_out_metric_and_an_interval_are_said_as_such(host, tmp_path, capsys) -> None:
    db = tmp_path / "toy.sqlite"
    _run(db, "synthetic:m=3")
    err = _compare_error(db, "excess_mi_bits_max", capsys)
    assert "it was left out (--no-metric optimum" in err and "run them again" not in err
    err = _compare_error(db, "mi_bits_ci95", capsys)
    assert "it is the interval [lo, hi] of mi_bits" in err and "--by mi_bits" in err


def test_the_old_hint_stays_where_it_is_true(host, tmp_path, capsys) -> None:
    """Runs whose code did not compute the metric (no fingerprint names it): stored before
    it was installed; the data set cannot be loaded here, so nothing else is claimed."""
    db = tmp_path / "old.sqlite"
    with ResultStore(db) as store:
        store.add({"mechanism": "identity", "dataset": "gone", "params": {},
                   "dataset_params": {}, "delta": 0.5, "status": "ok", "mi_bits": 1.0,
                   "distortion": 0.0, "n": 4, "run_key": "identity|gone|0.5"})
    err = _compare_error(db, "holdout_mi_bits", capsys)
    assert "runs stored before it was installed lack it; run them again" in err


def test_bootstrap_says_it_needs_the_users(host) -> None:
    problem = pb.load_dataset("synthetic", m=3)
    cls = pb.get_host().get("metric", "bootstrap")
    assert "needs the users behind p(A, B)" in cls().unmet(problem)
    assert pb.get_host().get("metric", "holdout_leakage")().unmet(problem).startswith(
        "needs the problem part 'holdout'")
    assert pb.get_host().get("metric", "leakage")().unmet(problem) == ""
