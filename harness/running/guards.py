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
from collections.abc import Iterator

from privbench.protocol.abort import plugin_code
from privbench.protocol.errors import PluginAbort

#: how often an ignored timeout is raised again
REARM_S = 1.0

__all__ = ["PluginAbort", "RunTimeout", "plugin_code", "time_limit"]


class RunTimeout(BaseException):
    """Raised inside a run when its time budget is exhausted (not an ``Exception``)."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the body after ``seconds`` (SIGALRM; main thread only, else no limit)."""
    if not seconds or not _main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise RunTimeout(f"run exceeded its time limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, REARM_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
