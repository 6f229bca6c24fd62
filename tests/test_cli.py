"""The CLI contracts (docs/cli.md): JSON fields, exit codes, sweeps, results export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from privbench.cli import main

CONTRACT = {"mechanism", "dataset", "params", "delta", "status", "error", "mi_bits",
            "prior_mi_bits", "distortion", "runtime_s", "peak_mem_mb", "n", "nnz",
            "support_max", "gap_bits", "metrics"}


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_run_expmec_contract(capsys: pytest.CaptureFixture[str], db_path: Path) -> None:
    rc = main(["run", "-m", "expmec", "-d", "synthetic:m=6", "--delta", "1.0", "--json",
               "--db", str(db_path)])
    assert rc == 0
    (record,) = _json_lines(capsys.readouterr().out)
    assert CONTRACT <= set(record)
    assert record["status"] == "ok" and record["n"] == 64
    assert record["mi_bits"] < record["prior_mi_bits"] == pytest.approx(1.0)
    assert record["distortion"] <= 1.0 + 1e-9
    assert record["gap_bits"] is None and isinstance(record["metrics"], dict)
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("ok",)]


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["-m", "nope", "-d", "synthetic", "--delta", "1"], "unknown mechanism 'nope'"),
        (["-m", "expmec", "-d", "nope", "--delta", "1"], "unknown dataset 'nope'"),
        (["-m", "expmec:bogus=1", "-d", "synthetic", "--delta", "1"], "unknown parameter(s) bogus"),
        (["-m", "expmec", "-d", "synthetic:q=1", "--delta", "1"], "unknown parameter(s) q"),
        (["-m", "expmec", "-d", "synthetic", "--delta", "-1"], "delta must be a finite number"),
        (["-m", "expmec", "-d", "synthetic", "--delta", "1", "-M", "nope"], "unknown metric"),
        (["-m", "expmec:beta", "-d", "synthetic", "--delta", "1"], "expected key=value"),
        (["-m", "expmec", "-d", "synthetic", "--delta", "1", "--lp-backend", "x"], "lp_backend"),
    ],
)
def test_invalid_requests_exit_nonzero(argv, reason, capsys, db_path: Path) -> None:
    assert main(["run", *argv, "--db", str(db_path)]) == 2
    err = capsys.readouterr().err
    assert reason in err
    assert not db_path.exists()  # nothing ran, nothing stored


def test_several_deltas_and_strict(capsys, db_path: Path) -> None:
    rc = main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "0", "--delta", "2",
               "--json", "--db", str(db_path), "--strict"])
    assert rc == 0
    records = _json_lines(capsys.readouterr().out)
    assert [r["delta"] for r in records] == [0.0, 2.0]
    assert all(r["mi_bits"] == pytest.approx(1.0) and r["distortion"] == 0 for r in records)


@pytest.mark.parametrize("status", ["error", "timeout", "invalid"])
def test_strict_fails_on_a_failed_run_and_only_with_strict(tmp_path, capsys, status) -> None:
    """--strict exits 1 when a run failed; the same request without it exits 0."""
    from privbench.running import runner

    real = runner._execute

    def failing(spec, record, on_progress):
        if spec.mechanism == "expmec":
            raise {"error": RuntimeError("boom"), "timeout": runner.RunTimeout("slow"),
                   "invalid": runner.InvalidMappingError("bad column")}[status]
        return real(spec, record, on_progress)

    runner._execute = failing
    try:
        argv = ["run", "-m", "identity", "-m", "expmec", "-d", "synthetic:m=3", "--delta", "1",
                "--no-store"]
        assert main(argv) == 0
        assert main([*argv, "--strict"]) == 1
    finally:
        runner._execute = real
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--no-store",
                 "--strict"]) == 0


def test_sweep_grid_resume_and_export(tmp_path: Path, capsys, db_path: Path) -> None:
    spec = tmp_path / "grid.toml"
    spec.write_text('mechanisms = ["identity", "expmec"]\ndatasets = ["synthetic:m=3", '
                    '"random:n=6,seed=2"]\ndeltas = [0.5, 1.0]\nseeds = [1, 2]\n'
                    "baselines = false\n")
    assert main(["sweep", str(spec), "--db", str(db_path)]) == 0
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs WHERE status='ok'").fetchone()[0] == 16
    assert main(["sweep", str(spec), "--db", str(db_path), "--resume"]) == 0
    assert "resume: 16 stored, 0 to run of 16" in capsys.readouterr().err
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 16
    csv = tmp_path / "out.csv"
    assert main(["results", "--db", str(db_path), "--export", str(csv)]) == 0
    df = pd.read_csv(csv)
    assert len(df) == 16 and set(df["mechanism"]) == {"identity", "expmec"}
    pq = tmp_path / "out.parquet"
    assert main(["results", "--db", str(db_path), "--export", str(pq), "--status", "ok"]) == 0
    assert len(pd.read_parquet(pq)) == 16
    assert main(["results", "--db", str(db_path), "--limit", "3"]) == 0


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('mechanisms = ["identity"]\ndeltas = [1]\n', "missing required key 'datasets'"),
        ('mechanisms = ["identity"]\ndatasets = ["synthetic"]\ndeltas = []\n', "'deltas' must be"),
        ('mechanisms = ["identity"]\ndatasets = ["synthetic"]\ndeltas = [1]\ncolour = 1\n',
         "unknown key(s) colour"),
        ("mechanisms = [\n", "not valid TOML"),
        ('mechanisms = ["identity"]\ndatasets = ["synthetic"]\ndeltas = [-1]\n', "delta must be"),
    ],
)
def test_bad_sweep_files(tmp_path: Path, content: str, reason: str, capsys, db_path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(content)
    assert main(["sweep", str(spec), "--db", str(db_path)]) == 2
    err = capsys.readouterr().err
    assert reason in err


def test_results_on_missing_db(tmp_path: Path, capsys) -> None:
    assert main(["results", "--db", str(tmp_path / "none.sqlite")]) == 2
    assert "no results database" in capsys.readouterr().err


def test_plugins_json(capsys) -> None:
    assert main(["plugins", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    # seven kinds of plugin under the six `kind` values of the JSON contract (docs/cli.md):
    # figures are reporters with role "figure"
    kinds = {"mechanism", "lp_backend", "dataset", "metric", "executor", "reporter"}
    assert {r["kind"] for r in rows} == kinds  # every kind listed: an empty list fails
    assert {r["name"] for r in rows if r["role"] == "figure"} >= {"privacy-distortion"}
    assert all(r["kind"] == "reporter" for r in rows if r["role"] == "figure")
    names = {r["name"] for r in rows}
    assert {"sppm", "optimal", "expmec", "census", "mckp", "local", "html", "privacy-distortion"} <= names
    assert all(r["kind"] in kinds for r in rows)
    assert all(r["status"] in {"ok", "unavailable", "broken"} for r in rows)


def test_corrupt_database_is_reported_and_left_alone(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "notes.sqlite"
    bad.write_text("these are my notes, not a database\n" * 50)
    before = bad.read_bytes()
    rc = main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--db", str(bad)])
    assert rc == 2
    assert "cannot open results database" in capsys.readouterr().err
    assert bad.read_bytes() == before
