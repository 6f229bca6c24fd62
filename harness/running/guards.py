"""Guards around plugin code: a time limit it cannot swallow, exits it cannot take.

A plugin's ``except Exception`` must not eat the run's timeout, so :class:`RunTimeout`
derives from ``BaseException`` and the alarm re-fires every second until the run
unwinds (a plugin catching ``BaseException`` once still gets stopped). ``sys.exit()`` or
``KeyboardInterrupt`` raised by plugin code fail that run only; a Ctrl-C from the user
(a real SIGINT) still stops the sweep.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

from privbench._plumbing.abort import plugin_code
from privbench.protocol.errors import PluginAbort

#: how often an ignored timeout is raised again
REARM_S = 1.0
#: how long past its limit (at least; or the limit itself when longer) a run may go on
#: before privbench gives up on unwinding it and ends
ESCALATE_S = 60.0

__all__ = ["Limit", "PluginAbort", "RunTimeout", "plugin_code", "time_limit", "timeout_behind"]


class RunTimeout(BaseException):
    """Raised inside a run when its time budget is exhausted (not an ``Exception``)."""


def timeout_behind(exc: BaseException) -> RunTimeout | None:
    """The :class:`RunTimeout` ``exc`` is, or was raised from or while handling
    (``__cause__`` / ``__context__``), else None.

    The timeout arrives asynchronously (SIGALRM here, ``PyThreadState_SetAsyncExc`` under
    Dask) and may land inside a compiled function: numba's dispatcher then returns with the
    exception set and CPython raises ``SystemError: CPUDispatcher(...) returned a result
    with an exception set`` from it. That run timed out; it did not fail.
    """
    seen: set[int] = set()
    chain: list[BaseException | None] = [exc]
    while chain:
        current = chain.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, RunTimeout):
            return current
        chain += [current.__cause__, current.__context__]
    return None


class Limit:
    """What :func:`time_limit` yields: ``fired`` turns true once the timeout was raised,
    so a run that caught it and returned anyway is known to have gone past its limit.

    :meth:`restart` gives the timed part of a run its whole limit again once the
    mechanism's untimed set-up (``prepare``: numba compiling its kernels on a fresh
    clone, tables built once) is done, so set-up and run are each limited to ``seconds``:
    a 0.04 s solve is not stored as a timeout because its first process compiled for a
    minute, and a set-up that hangs is still stopped.
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.fired = False
        self.phase = "run"
        self.deadline = time.monotonic() + seconds if seconds else float("inf")
        self._armed = False

    @property
    def message(self) -> str:
        where = " while preparing (prepare: set-up, compiling)" if self.phase == "prepare" else ""
        if self.phase.startswith("metric "):  # the solve had finished: say what did not
            where = (f" while computing {self.phase}, after the mechanism's run had finished "
                     f"(--no-metric {self.phase[len('metric '):]} leaves it out)")
        return f"run exceeded its time limit of {self.seconds:g} s{where}"

    def restart(self, phase: str = "run") -> None:
        """Start the limit afresh for the next phase (see the class doc)."""
        self.phase = phase
        if not self._armed or self.fired or not self.seconds:
            return
        self.deadline = time.monotonic() + self.seconds
        signal.setitimer(signal.ITIMER_REAL, self.seconds, REARM_S)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[Limit]:
    """Interrupt the body after ``seconds`` (SIGALRM; main thread only, else no limit).

    Two clocks raise the timeout, so a plugin that cancels one (``setitimer(0)``) still
    meets the other: the interval timer, and a watchdog thread that sends SIGALRM to the
    main thread. A run still going ``max(ESCALATE_S, seconds)`` past its limit (it
    swallows every re-raise, blocks SIGALRM, or sits in a C call) cannot be unwound in this
    process: privbench says so and ends (exit 124), keeping the runs stored so far;
    ``--executor process`` kills such a run's worker instead.
    """
    limit = Limit(seconds)
    if not seconds or not _main_thread() or not hasattr(signal, "setitimer"):
        yield limit
        return

    def on_alarm(signum: int, frame: object) -> None:
        again = limit.fired  # a re-raise: the code running at the first one caught it
        limit.fired = True
        raise RunTimeout(limit.message + (" (the run caught the timeout and went on)"
                                          if again else ""))

    previous = signal.signal(signal.SIGALRM, on_alarm)
    limit.deadline = time.monotonic() + seconds
    signal.setitimer(signal.ITIMER_REAL, seconds, REARM_S)
    limit._armed = True
    stop = threading.Event()
    main_id = threading.main_thread().ident

    grace = max(ESCALATE_S, seconds)

    def watchdog() -> None:
        while True:
            late = time.monotonic() - limit.deadline
            if late < REARM_S / 2:  # not yet due (a restart moves the deadline on)
                if stop.wait(REARM_S / 2 - late):
                    return
                continue
            if late > grace:
                _give_up(seconds, grace)
            if main_id is not None:
                signal.pthread_kill(main_id, signal.SIGALRM)
            if stop.wait(REARM_S):
                return

    guard = threading.Thread(target=watchdog, name="privbench-timeout", daemon=True)
    guard.start()
    try:
        yield limit
    finally:
        stop.set()
        guard.join()  # no SIGALRM from it after the handler is restored
        limit._armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _give_up(seconds: float, grace: float) -> None:
    """The last resort against a run that swallows its timeout: one line, then exit."""
    import os
    import sys

    sys.stderr.write(f"privbench: a run ignored its time limit of {seconds:g} s for "
                     f"{grace:g} s more (it catches or blocks the timeout); stopping here. Runs "
                     "stored so far are kept; run such plugins with --executor process.\n")
    sys.stderr.flush()
    os._exit(124)
