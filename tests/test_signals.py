"""SIGTERM to a process-pool run: a message, the workers stopped, no orphans."""

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
#: the helper plugins the tests load by module name (PRIVBENCH_PLUGIN_MODULES)
PLUGINS = TESTS / "plugins"


@pytest.mark.slow
def test_sigterm_stops_the_pool_and_says_so(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "faulty_plugins",
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
    gone, alive = psutil.wait_procs(workers, timeout=120)  # a hang guard, generous
    assert not alive, f"orphaned workers: {[p.pid for p in alive]}"


@pytest.mark.slow
def test_max_mem_under_dask_fails_only_the_hungry_run(tmp_path) -> None:
    """The Dask nanny's memory limit (--max-mem) stops a run that grows past it; the
    other run of the sweep is stored ok."""
    pytest.importorskip("distributed")
    import sqlite3

    (tmp_path / "grow_plugin.py").write_text(
        "import time, numpy as np, scipy.sparse as sp, privbench as pb\n"
        "class Grow(pb.MappingMechanism):\n"
        "    name = 'grow'\n"
        "    def __init__(self):\n        pass\n"
        "    def run(self, problem, delta):\n"
        "        blocks = []\n"
        "        for _ in range(40):  # 40 x 50 MB, touched, slowly: the nanny sees it\n"
        "            blocks.append(np.ones(50 * 2**20 // 8))\n"
        "            time.sleep(0.2)\n"
        "        return self.result(sp.identity(problem.n, format='csc'))\n"
        "@pb.hookimpl\n"
        "def privbench_register_mechanisms():\n    return [Grow]\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PRIVBENCH_PLUGIN_MODULES": "grow_plugin"}
    db = tmp_path / "r.sqlite"
    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m", "grow", "-m", "identity",
                          "-d", "synthetic:m=3", "--delta", "1", "--executor", "dask:retries=0",
                          "--workers", "1", "--max-mem", "500", "--timeout", "120", "--db",
                          str(db)], env=env, capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = dict(sqlite3.connect(db).execute("SELECT mechanism, status FROM runs").fetchall())
    assert rows == {"grow": "error", "identity": "ok"}, out.stderr[-2000:]
