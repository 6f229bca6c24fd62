"""Hostile plugins for the trust tests (loaded with PRIVBENCH_PLUGIN_MODULES=hostile_plugins).

Each returns or does one thing a careless or malicious plugin could, selected by its
``what`` parameter, so one class covers a family of cases.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

import privbench as pb


def _act(what: str, where: str) -> None:
    if what == f"exit_in_{where}":
        sys.exit(7)
    if what == f"interrupt_in_{where}":
        raise KeyboardInterrupt


def _stubborn() -> None:
    """Swallow every timeout, even one raised between two iterations of the loop."""
    import time

    try:
        while True:
            try:
                time.sleep(600)
            except BaseException:  # noqa: BLE001, S110 - the point of this plugin
                pass
    except BaseException:  # noqa: BLE001
        _stubborn()


class Returns(pb.MappingMechanism):
    """Identity, but its result is damaged as ``what`` says."""

    name = "hostile_returns"

    def __init__(self, what: str = "nothing", value: Any = None) -> None:
        self.what = what
        self.value = value
        _act(what, "init")

    def check_params(self) -> None:
        _act(self.what, "check_params")

    def skip(self, problem):
        _act(self.what, "skip")
        return False, None

    def __repr__(self) -> str:
        _act(self.what, "repr")
        return super().__repr__()

    def run(self, problem, delta):
        eye = np.eye(problem.n)
        what = self.what
        if what == "unknown_kind":
            return pb.MechanismResult(kind="banana", mapping=eye)
        if what == "empty_records":
            return pb.MechanismResult(kind="records", records=np.empty((0, 3)))
        if what == "empty_selection":
            return pb.MechanismResult(kind="selection", selection=[])
        if what == "gap":
            return self.result(eye, gap_bits=self.value)
        if what == "self_stats":
            stats: dict[str, Any] = {"a": 1}
            stats["me"] = stats
            return self.result(eye, info=stats)
        if what == "deep_stats":
            deep: list[Any] = []
            for _ in range(5000):
                deep = [deep]
            return self.result(eye, info=deep)
        if what == "patch_numpy":
            np.log2 = lambda x: np.zeros_like(np.asarray(x, dtype=float))  # noqa: ARG005
            return self.result(eye)
        if what == "patch_information":
            from privbench.measures import information

            information.mutual_information = lambda *a, **k: 0.0
            return self.result(eye)
        if what == "patch":  # value: "module:attr" or "module:Class.attr", made to return 0
            import importlib
            import json

            result = self.result(eye)  # before the patch (it may be this very method)
            module, _, path = str(self.value).partition(":")
            owner = importlib.import_module(module)
            *outer, attr = path.split(".")
            for name in outer:
                owner = getattr(owner, name)
            setattr(owner, attr, lambda *a, **k: 0)  # noqa: ARG005
            json.privbench_hostile_marker = True  # in a module no snapshot watches
            return result
        if what == "whoami":  # the worker's pid and what an earlier run left in it
            import json
            import os

            return self.result(eye, pid=os.getpid(),
                               marker=getattr(json, "privbench_hostile_marker", False))
        if what == "fork":
            import os

            os.fork()  # the child returns into the runner too
            return self.result(eye)
        if what == "cancel_timer":
            import signal
            import time

            signal.setitimer(signal.ITIMER_REAL, 0)
            time.sleep(600)
        if what == "swallow_timeout":
            _stubborn()
        if what == "leave_thread":
            import threading
            import time

            threading.Thread(target=time.sleep, args=(3600,), name="left-behind").start()
            return self.result(eye)
        if what == "swallow_once":
            import time

            try:
                time.sleep(2.5)
            except BaseException:  # noqa: BLE001, S110 - catches the timeout once
                pass
            time.sleep(0.2)
            return self.result(eye)
        if what == "block_alarm":
            import signal
            import time

            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
            time.sleep(600)
        if what == "blas_threads":  # what the worker's BLAS and OpenMP are allowed
            import os

            from threadpoolctl import threadpool_info

            threads = max((p["num_threads"] for p in threadpool_info()), default=1)
            return self.result(eye, blas_threads=threads,
                               omp_env=os.environ.get("OMP_NUM_THREADS"))
        if what == "complex":
            return pb.MechanismResult(kind="mapping", mapping=eye * (1 + 0j) + 1e-3j * eye)
        return self.result(eye)


class Rogue(pb.Metric):
    """Writes over fields it does not own (only when requested: -M hostile_rogue)."""

    name = "hostile_rogue"
    default = False
    outputs = (pb.Output("rogue_note", "none"),)  # only this one is its own

    def compute(self, problem, result, *, delta, seed=None):
        return {"mi_bits": -42.0, "status": "ok", "runtime_s": 0.0, "rogue_note": "here"}


class Exits(pb.Metric):
    name = "hostile_exits"
    default = False

    def compute(self, problem, result, *, delta, seed=None):
        sys.exit(5)


class SlowMetric(pb.Metric):
    """Takes ``SLOW_METRIC_S`` seconds (only when requested: -M hostile_slow_metric)."""

    name = "hostile_slow_metric"
    default = False

    def compute(self, problem, result, *, delta, seed=None):
        time.sleep(SLOW_METRIC_S)
        return {"slow_note": "done"}


SLOW_METRIC_S = 3.0


class Promises(pb.MappingMechanism):
    """Identity (or uniform with ``what="keeps"``), promising what ``what`` says."""

    name = "hostile_promise"
    delta_role = "epsilon"
    respects_budget = False

    def __init__(self, what: str = "lip") -> None:
        self.what = what

    def promises(self, delta):
        return {"lip": {"lip_epsilon": delta}, "keeps": {"lip_epsilon": delta, "mi_bits": 0.0},
                "independent": {"mi_bits": 0.0}, "unknown": {"smoothness": 1.0},
                "not_dict": [("lip_epsilon", delta)]}[self.what]

    def run(self, problem, delta):
        n = problem.n
        return self.result(np.full((n, n), 1.0 / n) if self.what == "keeps" else np.eye(n))


class SlowPrepare(pb.MappingMechanism):
    """Identity after a ``prepare`` of ``prepare_s`` seconds (a cold numba cache) and a
    run of ``run_s`` seconds."""

    name = "hostile_slow_prepare"

    def __init__(self, prepare_s: float = 0.0, run_s: float = 0.0) -> None:
        self.prepare_s = prepare_s
        self.run_s = run_s

    def prepare(self, problem, context):
        super().prepare(problem, context)
        time.sleep(self.prepare_s)

    def run(self, problem, delta):
        time.sleep(self.run_s)
        return self.result(np.eye(problem.n))


@pb.hookimpl
def privbench_register_mechanisms():
    return [Returns, Promises, SlowPrepare]




class Raises(pb.Reporter):
    """A reporter that fails as PRIVBENCH_HOSTILE_REPORTER says (exit, raise, disk full)."""

    name = "hostile_reporter"

    def __init__(self) -> None:
        pass

    def report(self, db_path, out_dir):
        import errno
        import os

        how = os.environ.get("PRIVBENCH_HOSTILE_REPORTER", "raise")
        if how == "exit":
            sys.exit(4)
        if how == "full":
            raise OSError(errno.ENOSPC, "No space left on device", str(out_dir / "index.html"))
        raise RuntimeError("reporter bug")


@pb.hookimpl
def privbench_register_reporters():
    return [Raises]


class Claims(pb.Metric):
    """Declares the built-in ``mi_bits`` and sorts before ``leakage`` (-M aaa_hostile_claim)."""

    name = "aaa_hostile_claim"
    default = False
    outputs = (pb.Output("mi_bits", "nats", "higher", "a forged leakage"),)

    def compute(self, problem, result, *, delta, seed=None):
        return {"mi_bits": 0.0}


@pb.hookimpl
def privbench_register_metrics():
    return [Rogue, Exits, Claims, SlowMetric]
