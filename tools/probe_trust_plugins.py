"""Hostile plugins of ``tools/probe_trust.py``: copied into each case's folder as
``probe_hostile.py`` and loaded as a user would (``PRIVBENCH_PLUGIN_MODULES``).

``hostile:what=NAME`` misbehaves as NAME says (``exit_in_WHERE`` / ``interrupt_in_WHERE``
for WHERE in init, check_params, skip, repr, run; otherwise a method ``_NAME``); the
metrics write fields they do not own, claim ``mi_bits`` or exit; the reporter fails as
``PROBE_REPORTER`` says.
"""

from __future__ import annotations

import os
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
    try:
        while True:
            try:
                time.sleep(600)
            except BaseException:  # noqa: S110 - the point of this plugin
                pass
    except BaseException:
        _stubborn()


class Hostile(pb.MappingMechanism):
    """Identity, unless ``what`` says how to misbehave."""

    name = "hostile"

    def __init__(self, what: str = "nothing") -> None:
        self.what = what
        _act(what, "init")

    def check_params(self) -> None:
        _act(self.what, "check_params")

    def skip(self, problem):
        _act(self.what, "skip")
        return False, None

    def __repr__(self) -> str:
        _act(self.what, "repr")
        return f"hostile({self.what})"

    def run(self, problem, delta):
        _act(self.what, "run")
        eye = np.eye(problem.n)
        act = getattr(self, f"_{self.what}", None)
        return act(eye) if act is not None else self.result(eye)

    # damaged results
    def _unknown_kind(self, eye):
        return pb.MechanismResult(kind="banana", mapping=eye)

    def _empty_records(self, eye):
        return pb.MechanismResult(kind="records", records=np.empty((0, 3)))

    def _empty_selection(self, eye):
        return pb.MechanismResult(kind="selection", selection=[])

    def _gap_negative(self, eye):
        return self.result(eye, gap_bits=-5.0)

    def _gap_text(self, eye):
        return self.result(eye, gap_bits="lots")

    def _gap_nan(self, eye):
        return self.result(eye, gap_bits=float("nan"))

    def _complex(self, eye):
        return pb.MechanismResult(kind="mapping", mapping=eye * (1 + 0j) + 1e-3j * eye)

    def _self_stats(self, eye):
        stats: dict[str, Any] = {"a": 1}
        stats["me"] = stats
        return self.result(eye, info=stats)

    def _deep_stats(self, eye):
        deep: list[Any] = []
        for _ in range(5000):
            deep = [deep]
        return self.result(eye, info=deep)

    def _nan_mapping(self, eye):
        eye[0, 0] = np.nan
        return self.result(eye)

    def _negative_mapping(self, eye):
        eye[1, 0], eye[0, 0] = -0.5, 1.5
        return self.result(eye)

    def _nan_stats(self, eye):
        return self.result(eye, spread=float("nan"), ratio=float("inf"), parts=[float("-inf"), 1.0])

    def _print(self, eye):
        print("hello from a plugin")
        return self.result(eye)

    def _field_stats(self, eye):
        return self.result(eye, mi_bits=-42.0, status="ok", run_key="forged")

    # shared state, processes, signals
    def _patch_numpy(self, eye):
        np.log2 = lambda x: np.zeros_like(np.asarray(x, dtype=float))
        np.log = lambda x: np.zeros_like(np.asarray(x, dtype=float))
        return self.result(eye)

    def _patch_information(self, eye):
        from privbench.measures import information

        information.mutual_information = lambda *a, **k: 0.0
        return self.result(eye)

    def _fork(self, eye):
        os.fork()  # the child returns into the runner too
        return self.result(eye)

    def _cancel_timer(self, eye):
        import signal

        signal.setitimer(signal.ITIMER_REAL, 0)
        time.sleep(600)

    def _swallow(self, eye):
        _stubborn()

    def _block_alarm(self, eye):
        import signal

        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
        time.sleep(600)

    def _thread(self, eye):
        import threading

        threading.Thread(target=time.sleep, args=(3600,), name="left-behind").start()
        return self.result(eye)

    def _swallow_once(self, eye):
        try:
            time.sleep(3)
        except BaseException:  # noqa: S110 - catches the timeout once
            pass
        time.sleep(0.2)
        return self.result(eye)

    def _sleep(self, eye):
        time.sleep(120)
        return self.result(eye)


class Rogue(pb.Metric):
    """Writes over fields it does not own."""

    name = "probe_rogue"
    default = False
    outputs = (pb.Output("rogue_note", "none"),)

    def compute(self, problem, result, *, delta, seed=None):
        return {"mi_bits": -42.0, "status": "ok", "runtime_s": 0.0, "rogue_note": "here"}


class ClaimsLeakage(pb.Metric):
    """A third-party metric that declares ``mi_bits`` as its own output, wrongly."""

    name = "probe_claims_mi"
    default = False
    outputs = (pb.Output("mi_bits", "bits", "lower"),)

    def compute(self, problem, result, *, delta, seed=None):
        return {"mi_bits": -1.0}


class Exits(pb.Metric):
    name = "probe_exit"
    default = False

    def compute(self, problem, result, *, delta, seed=None):
        sys.exit(5)


class Interrupts(pb.Metric):
    name = "probe_interrupt"
    default = False

    def compute(self, problem, result, *, delta, seed=None):
        raise KeyboardInterrupt


class Fails(pb.Reporter):
    """Fails as ``PROBE_REPORTER`` says: exit, interrupt or raise."""

    name = "probe_reporter"

    def __init__(self) -> None:
        pass

    def report(self, db_path, out_dir):
        how = os.environ.get("PROBE_REPORTER", "raise")
        if how == "exit":
            sys.exit(4)
        if how == "interrupt":
            raise KeyboardInterrupt
        raise RuntimeError("reporter bug")


@pb.hookimpl
def privbench_register_mechanisms():
    return [Hostile]


@pb.hookimpl
def privbench_register_metrics():
    return [Rogue, ClaimsLeakage, Exits, Interrupts]


@pb.hookimpl
def privbench_register_reporters():
    return [Fails]
