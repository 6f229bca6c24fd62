"""Third-party-style mechanisms for the lifecycle tests (PRIVBENCH_PLUGIN_MODULES)."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

import privbench as pb


class Nearest(pb.MappingMechanism):
    """Identity with a weight; rejects negative weights; counts its lifecycle calls."""

    name = "nearest"
    test_parameters = {"weight": [1.0, 2.0]}
    calls: list[str] = []

    def __init__(self, weight: float = 1.0, prepare_s: float = 0.0) -> None:
        self.weight = weight
        self.prepare_s = prepare_s

    def check_params(self) -> None:
        if self.weight < 0:
            raise pb.ValidationError(f"nearest: weight must be >= 0; got {self.weight!r}")

    def prepare(self, problem: pb.PrivacyProblem, context: pb.RunContext) -> None:
        super().prepare(problem, context)
        Nearest.calls.append("prepare")
        time.sleep(self.prepare_s)

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        Nearest.calls.append("run")
        self.context_.report(iteration=1, gap_bits=0.0)
        return self.result(sp.identity(problem.n, format="csc"),
                           runtime_s=123.0, nnz=-1, mi_bits=9.0, gap_bits=0.0,
                           seed_seen=self.context_.seed, odd=object(), array=np.arange(3))


class Vandal(pb.MappingMechanism):
    """Writes into the problem it is given (must not reach any other run)."""

    name = "vandal"

    def __init__(self) -> None:
        pass

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        dist = problem.distortion
        for target in (problem.joint, problem.p_b, getattr(dist, "points", dist.to_dense())):
            try:
                target.flags.writeable = True  # an array that owns its memory allows this
            except ValueError:
                pass  # immutable memory: the flag cannot be switched back
            try:
                target[...] = 1.0 / target.size
            except ValueError:
                pass  # read-only: the write is refused
        dist.metric = "hamming"  # rebinding an attribute of the run's own distortion object
        try:
            object.__setattr__(problem, "joint", np.full_like(problem.joint, 1.0 / problem.joint.size))
        except AttributeError:
            pass
        return self.result(sp.identity(problem.n, format="csc"))


class Legacy(pb.MappingMechanism):
    """Written against the old protocol: solve(problem, delta, *, seed=None)."""

    name = "legacy"

    def __init__(self) -> None:
        pass

    def solve(self, problem, delta, *, seed=None):
        return self.result(sp.identity(problem.n, format="csc"), seed_seen=seed)


class Exiter(pb.MappingMechanism):
    name = "exiter"

    def __init__(self, how: str = "exit") -> None:
        self.how = how

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        if self.how == "exit":
            raise SystemExit(3)
        raise KeyboardInterrupt


class Swallower(pb.MappingMechanism):
    """Catches everything around its work: must still be stopped by the timeout."""

    name = "swallower"

    def __init__(self) -> None:
        pass

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                time.sleep(0.05)
            except Exception:  # noqa: BLE001, S110 - the point of this plugin
                pass
        return self.result(sp.identity(problem.n, format="csc"))


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Nearest, Vandal, Legacy, Exiter, Swallower]
