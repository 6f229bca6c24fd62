"""SIGTERM to a process-pool run: a message, the workers stopped, no orphans (issue 32)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

TESTS = Path(__file__).resolve().parent


@pytest.mark.slow
def test_sigterm_stops_the_pool_and_says_so(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(TESTS), "PRIVBENCH_PLUGIN_MODULES": "faulty_plugins",
           "FAULTY_SLOW_S": "60"}
    db = tmp_path / "r.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "privbench", "run", "-m", "faulty_slow", "-d", "synthetic:m=2",
         "--delta", "0.5", "--delta", "1", "--executor", "process", "--workers", "2",
         "--db", str(db)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = [c for c in parent.children(recursive=True) if "python" in c.name().lower()]
    assert workers, "the pool never started"
    time.sleep(3)  # the workers are inside their (60 s) runs
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err.decode()[-2000:]
    assert b"terminated (SIGTERM)" in err and b"Traceback" not in err
    gone, alive = psutil.wait_procs(workers, timeout=20)
    assert not alive, f"orphaned workers: {[p.pid for p in alive]}"
