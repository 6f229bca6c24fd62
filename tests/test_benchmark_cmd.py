"""``privbench benchmark sppm`` prints one record per (m, backend) and the time ratios."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("highspy")


def test_benchmark_sppm_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "privbench.cli", "benchmark", "sppm", "--m", "4", "--m", "5",
         "--lp-backend", "highs", "--lp-backend", "scipy", "--tol", "1e-2", "--json"],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    runs = [r for r in lines if "lp_backend" in r]
    ratios = [r for r in lines if "ratio" in r]
    assert {(r["m"], r["lp_backend"]) for r in runs} == {
        (4, "highs"), (4, "scipy"), (5, "highs"), (5, "scipy")}
    for r in runs:
        assert r["n"] == 2 ** r["m"] and r["delta"] == 2.0 ** (r["m"] - 8)
        assert r["gap_bits"] >= 0 and r["time_s"] > 0 and r["peak_mem_mb"] >= 0
        assert 0 <= r["mi_bits"] <= 1
    assert [r["ratio"] for r in ratios] == ["scipy/highs", "scipy/highs"]
