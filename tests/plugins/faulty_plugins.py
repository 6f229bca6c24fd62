"""Misbehaving mechanisms for isolation tests (loaded with PRIVBENCH_PLUGIN_MODULES)."""

from __future__ import annotations

import os
import time

import numpy as np

import privbench as pb


class _Base(pb.MappingMechanism):
    def __init__(self) -> None:
        pass


class Crash(_Base):
    name = "faulty_crash"

    def solve(self, problem, delta, *, seed=None):
        raise RuntimeError("deliberate failure")


class Hang(_Base):
    name = "faulty_hang"

    def solve(self, problem, delta, *, seed=None):
        time.sleep(600)


class Invalid(_Base):
    name = "faulty_invalid"

    def solve(self, problem, delta, *, seed=None):
        return self.result(2.0 * np.eye(problem.n))


class OverBudget(_Base):
    name = "faulty_over_budget"

    def solve(self, problem, delta, *, seed=None):
        X = np.zeros((problem.n, problem.n))
        X[-1, :] = 1.0  # everything to the last symbol: large distortion
        return self.result(X)


class Die(_Base):
    name = "faulty_die"

    def solve(self, problem, delta, *, seed=None):
        os._exit(3)


class Slow(_Base):
    """Identity after a pause: lets a test kill a sweep while runs are in flight."""

    name = "faulty_slow"

    def solve(self, problem, delta, *, seed=None):
        time.sleep(float(os.environ.get("FAULTY_SLOW_S", "0.3")))
        return self.result(np.eye(problem.n))


class Deaf(_Base):
    """Catches every KeyboardInterrupt and keeps going: a Ctrl-C alone cannot stop it."""

    name = "faulty_deaf"

    def solve(self, problem, delta, *, seed=None):
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                time.sleep(0.05)
            except KeyboardInterrupt:
                pass
        return self.result(np.eye(problem.n))


@pb.hookimpl
def privbench_register_mechanisms():
    return [Crash, Hang, Invalid, OverBudget, Die, Slow, Deaf]
