"""Resource limits, big files and unusable folders give results or one-line errors (issue 32)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from privbench.cli import main

TESTS = Path(__file__).resolve().parent


def test_max_mem_900_runs_with_one_blas_thread_per_worker() -> None:
    """RLIMIT_AS and one OpenBLAS thread per core (~80 MB of address space each) left a
    900 MB worker without room; under --max-mem the worker's BLAS/OpenMP use one thread."""
    env = {**os.environ, "PYTHONPATH": str(TESTS), "PRIVBENCH_PLUGIN_MODULES": "hostile_plugins"}
    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m",
                          "hostile_returns:what=blas_threads", "-m", "expmec", "-d",
                          "synthetic:m=8", "--delta", "0.5", "--executor", "process",
                          "--workers", "1", "--max-mem", "900", "--timeout", "240",
                          "--no-store", "--json"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    records = {r["mechanism"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert {r["status"] for r in records.values()} == {"ok"}, out.stdout[-2000:]
    stats = records["hostile_returns"]["metrics"]
    assert stats["blas_threads"] == 1 and stats["omp_env"] == "1"
    assert records["expmec"]["mi_bits"] > 0.1


def test_max_mem_below_what_a_worker_needs_is_refused(capsys) -> None:
    code = main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--no-store",
                 "--executor", "process", "--max-mem", "300"])
    err = capsys.readouterr().err
    assert code == 2 and "--max-mem must be >= 512 MB" in err and "got 300" in err
