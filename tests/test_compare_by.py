"""``compare --by OUTPUT`` and ``results --export`` read outputs through their declarations.

A throwaway metric declares outputs on a fresh host, and hand-made records carry their
values, so these tests depend on no particular metric plugin.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

import privbench as pb
from privbench.cli import main
from privbench.results.store import ResultStore


class FakeNotions(pb.Metric):
    name = "fake_notions"
    needs = frozenset({"mapping"})
    default = False
    outputs = (pb.Output("fake_leak", "bits", "lower", "a leakage, not convex"),
               pb.Output("fake_error", "probability", "higher", "an attacker's error"),
               pb.Output("fake_absent", "nats", "lower", "declared, never stored"),
               # an interval is found by its declared relation, not by its name's suffix
               pb.Output("fake_leak_ci95", "bits", "neutral", "95 % interval of fake_leak",
                         of="fake_leak", relation="interval"))


class _Plugin:
    @pb.hookimpl
    def privbench_register_metrics(self):
        return [FakeNotions]


@pytest.fixture
def fake_host(host):
    host.register(_Plugin(), name="fake-notions")
    return host


def _record(mech: str, delta: float, mi: float, **metrics) -> dict:
    return {"mechanism": mech, "dataset": "toy", "params": {}, "dataset_params": {},
            "delta": delta, "status": "ok", "mi_bits": mi, "prior_mi_bits": 1.0,
            "distortion": delta, "n": 4, "metrics": {"dataset_name": "toy", **metrics},
            "run_key": f"{mech}|toy|delta={delta}"}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """a: leak 1.0 -> 0.2 (d 0 -> 2); b: 0.8, 0.7, 0.6 at d = 0, 1, 2; c starts at inf."""
    db = tmp_path / "r.sqlite"
    rows = [("a", 0.0, 0.9, 1.0, 0.1), ("a", 2.0, 0.5, 0.2, 0.4),
            ("b", 0.0, 0.8, 0.8, 0.2), ("b", 1.0, 0.3, 0.7, 0.3), ("b", 2.0, 0.1, 0.6, 0.35),
            ("c", 0.0, 1.0, math.inf, 0.0), ("c", 2.0, 0.6, 0.5, 0.1)]
    with ResultStore(db) as s:
        for mech, d, mi, leak, err in rows:
            s.add(_record(mech, d, mi, fake_leak=leak, fake_error=err))
    return db


def _order(text: str) -> list[str]:
    """Mechanism labels in the order the table lists them."""
    return re.findall(r"^│ (\w)†? ", text, re.M)  # † marks runs without this code's fingerprint


def _cells(text: str, label: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if re.match(rf"│ {label}†? ", ln))
    return [c.strip() for c in line.strip("│").split("│")]


def test_ranking_follows_the_chosen_output_and_its_direction(fake_host, store, capsys) -> None:
    assert main(["compare", "--db", str(store), "--budget", "2"]) == 0
    by_mi = capsys.readouterr().out
    assert _order(by_mi) == ["b", "a", "c"]  # I at Δ<=2: 0.1, 0.5, 0.6
    assert "I at Δ≤2" in by_mi and "excess at Δ=2" in by_mi
    assert main(["compare", "--db", str(store), "--budget", "2", "--by", "fake_leak"]) == 0
    by_leak = capsys.readouterr().out
    assert _order(by_leak) == ["a", "c", "b"]  # 0.2, 0.5, 0.6
    assert "fake_leak at Δ≤2" in by_leak and "excess" not in by_leak
    assert "E[d] for fake_leak≤" in by_leak
    assert main(["compare", "--db", str(store), "--budget", "2", "--by", "fake_error"]) == 0
    by_error = capsys.readouterr().out
    assert _order(by_error) == ["a", "b", "c"]  # higher is more private: 0.4, 0.35, 0.1
    assert "E[d] for fake_error≥" in by_error


def test_a_non_convex_output_is_read_at_measured_points_and_inf_stays_inf(
        fake_host, store, capsys) -> None:
    assert main(["compare", "--db", str(store), "--budget", "1", "--by", "fake_leak",
                 "--target", "0.6", "--reference", "b"]) == 0
    out = capsys.readouterr().out
    # a's segment (0, 1.0) -> (2, 0.2) is not interpolated: at Δ<=1 it has 1.0, not 0.6
    assert _cells(out, "a")[2] == "1"
    assert _cells(out, "c")[2] == "inf"
    # target 0.6: a reaches it only at its measured point d = 2 (not 1.0 by interpolation)
    assert _cells(out, "a")[3] == "2" and _cells(out, "b")[3] == "2"
    assert main(["compare", "--db", str(store), "--budget", "1"]) == 0
    assert _cells(capsys.readouterr().out, "a")[2] == "0.7"  # I(A;B̂) is convex: interpolated


def test_unknown_output_lists_the_declared_ones(fake_host, store, capsys) -> None:
    assert main(["compare", "--db", str(store), "--by", "maximal_leak"]) == 2
    err = capsys.readouterr().err
    assert "unknown output 'maximal_leak'" in err
    for name in ("fake_leak", "fake_error", "mi_bits", "runtime_s"):
        assert name in err


def test_an_output_without_values_says_how_to_get_them(fake_host, store, capsys) -> None:
    assert main(["compare", "--db", str(store), "--by", "fake_absent"]) == 2
    err = capsys.readouterr().err
    assert "has a value of fake_absent" in err and "-M fake_notions" in err


def _rich_store(db: Path) -> None:
    common = {"mechanism": "sppm", "dataset": "census", "status": "ok", "n": 300,
              "distortion": 0.4, "mi_bits": 0.1}
    with ResultStore(db) as s:
        s.add({**common, "params": {"tol": 0.001, "iterations": 10},
               "dataset_params": {"top_k": 300}, "delta": 0.5, "run_key": "k1",
               "metrics": {"fake_leak": 0.25, "fake_leak_ci95": [0.2, 0.3],
                           "trace": [[0.1, 1.0, 0.5]], "solver_note": "undeclared"},
               "provenance": {"git_commit": "abc", "packages": {"numpy": "2.0"}}})
        s.add({**common, "params": {"tol": 0.01}, "dataset_params": {"top_k": "all"},
               "delta": 1.0, "run_key": "k2", "metrics": {"fake_leak": math.inf}})


def test_export_has_a_column_per_parameter_output_and_provenance_entry(
        fake_host, tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    _rich_store(db)
    out = tmp_path / "x.csv"
    assert main(["results", "--db", str(db), "--export", str(out)]) == 0
    df = pd.read_csv(out)
    for col in ("param.tol", "param.iterations", "dataset_param.top_k", "fake_leak",
                "fake_leak_ci95_lo", "fake_leak_ci95_hi", "mi_bits", "metrics_other",
                "provenance.git_commit", "provenance.packages.numpy"):
        assert col in df.columns, col
    assert "params" not in df.columns and "metrics" not in df.columns
    assert "fake_error" not in df.columns  # declared, but no run has it
    assert df["param.tol"].tolist() == [0.001, 0.01]
    assert df["fake_leak"].tolist() == [0.25, math.inf]
    assert df["fake_leak_ci95_hi"].iloc[0] == 0.3
    # a certificate's trace is declared (CERTIFICATE_OUTPUTS): a column; undeclared keys stay
    assert df["trace"].iloc[0] == "[[0.1, 1.0, 0.5]]"
    assert "solver_note" in df["metrics_other"].iloc[0] and "fake_leak" not in df["metrics_other"].iloc[0]
    assert df["dataset_param.top_k"].astype(str).tolist() == ["300", "all"]
    assert "(" in capsys.readouterr().out  # "wrote 2 runs (N columns)"


def test_parquet_export_keeps_types(fake_host, tmp_path) -> None:
    pytest.importorskip("pyarrow")
    db = tmp_path / "r.sqlite"
    _rich_store(db)
    out = tmp_path / "x.parquet"
    assert main(["results", "--db", str(db), "--export", str(out)]) == 0
    df = pd.read_parquet(out)
    assert str(df["param.iterations"].dtype) == "Int64" and df["param.iterations"].iloc[0] == 10
    assert df["dataset_param.top_k"].tolist() == ["300", "all"]  # mixed: text, one type
    assert df["fake_leak"].iloc[1] == math.inf and str(df["n"].dtype) == "Int64"


def test_parquet_without_pyarrow_names_the_extra(fake_host, tmp_path, capsys, monkeypatch) -> None:
    from privbench.cli import results_cmd

    db = tmp_path / "r.sqlite"
    _rich_store(db)
    monkeypatch.setattr(results_cmd, "_have_pyarrow", lambda: False)
    assert main(["results", "--db", str(db), "--export", str(tmp_path / "x.parquet")]) == 2
    assert "pip install 'privbench[parquet]'" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()


def test_pareto_front_orders_by_the_direction_and_keeps_infinity() -> None:
    from privbench.results.pareto import Curve, distortion_for_leakage, leakage_at_distortion

    # higher is more private: (1, 0.3) is dominated by (0.5, 0.4)
    c = Curve.from_points([0.0, 0.5, 1.0, 2.0], [0.1, 0.4, 0.3, 0.6], higher=True)
    assert c.distortion.tolist() == [0.0, 0.5, 2.0] and c.leakage.tolist() == [0.1, 0.4, 0.6]
    assert leakage_at_distortion(c, 1.25) == pytest.approx(0.5)  # interpolated
    assert distortion_for_leakage(c, 0.5) == pytest.approx(1.25)
    step = Curve.from_points([0.0, 2.0], [math.inf, 0.5], interpolate=True)
    assert leakage_at_distortion(step, 1.0) == math.inf  # never inf - inf = nan
    assert distortion_for_leakage(step, 1.0) == 2.0
