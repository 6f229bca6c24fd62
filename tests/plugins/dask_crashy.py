"""Test-only mechanisms for the executors: one that kills the process running it, one
that reports progress from inside its solve.

Loaded in the test process and in Dask workers through ``PRIVBENCH_PLUGIN_MODULES``
(the workers find it on ``PYTHONPATH``). Every attempt appends a line to a marker file,
so the tests can count how often the scheduler re-ran a run.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import privbench as pb


class Crashy(pb.MappingMechanism):
    """``mode``: ok (identity), die (always kill the worker), die_once (kill it once),
    spin (loop in Python until interrupted)."""

    name = "crashy"

    def __init__(self, mode: str = "ok", marker: str = "") -> None:
        self.mode = mode
        self.marker = marker

    def solve(self, problem: pb.PrivacyProblem, delta: float, *, seed: int | None = None
              ) -> pb.MechanismResult:
        attempts = 0
        if self.marker:
            path = Path(f"{self.marker}-{problem.n}-{delta}")
            with path.open("a") as fh:
                fh.write("attempt\n")
            attempts = len(path.read_text().splitlines())
        while self.mode == "spin":
            time.sleep(0.01)
        if self.mode == "die" or (self.mode == "die_once" and attempts == 1):
            os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
        return self.result(sp.identity(problem.n, format="csc"))


class Chatty(pb.MappingMechanism):
    """Reports ``steps`` iterations, ``pause`` seconds apart, from inside its solve (as a
    long solver does through ``context.report``), then releases the identity."""

    name = "chatty"

    def __init__(self, steps: int = 4, pause: float = 0.4) -> None:
        self.steps = steps
        self.pause = pause

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        for k in range(1, self.steps + 1):
            self.context.report(iteration=k, gap_bits=np.float64(1.0 / k))  # numpy: plain on the way
            time.sleep(self.pause)
        return self.result(sp.identity(problem.n, format="csc"))


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Crashy, Chatty]
