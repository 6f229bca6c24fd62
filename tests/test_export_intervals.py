"""``results --export`` writes every stored 95 % interval as two numeric columns,
``<output>_ci95_lo`` and ``<output>_ci95_hi`` (docs/cli.md), also for the intervals
the built-in ``bootstrap`` metric declares itself (it once wrote one column of lists)."""

from __future__ import annotations

import csv
from pathlib import Path

from privbench.cli import main
from privbench.results.store import ResultStore


def _store(db: Path) -> None:
    with ResultStore(db) as s:
        s.add({"mechanism": "expmec", "dataset": "census", "params": {},
               "dataset_params": {"top_k": 50}, "delta": 0.3, "status": "ok",
               "mi_bits": 0.15, "distortion": 0.3, "n": 50, "run_key": "k1",
               "metrics": {"maximal_leakage": 0.4,
                           "mi_bits_ci95": [0.1, 0.2], "distortion_ci95": [0.28, 0.31],
                           "maximal_leakage_ci95": [0.35, 0.45],
                           "bootstrap": {"resamples": 20, "samples": {"mi_bits": [0.1] * 20}}}})


def test_export_header_has_lo_and_hi_for_every_declared_interval(host, tmp_path) -> None:
    db, out = tmp_path / "r.sqlite", tmp_path / "x.csv"
    _store(db)
    assert main(["results", "--db", str(db), "--export", str(out)]) == 0
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header, row = rows[0], dict(zip(rows[0], rows[1], strict=True))
    for name in ("mi_bits", "distortion", "maximal_leakage"):
        assert f"{name}_ci95" not in header  # no column holding a list
        lo, hi = header.index(f"{name}_ci95_lo"), header.index(f"{name}_ci95_hi")
        assert lo + 1 == hi and header.index(name) < lo  # value, lo, hi side by side
    assert float(row["mi_bits_ci95_lo"]) == 0.1 and float(row["mi_bits_ci95_hi"]) == 0.2
    assert float(row["maximal_leakage_ci95_hi"]) == 0.45
    assert "mi_bits_ci95" not in (row["metrics_other"] or "")
