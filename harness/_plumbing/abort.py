"""Plugin code may not end privbench: ``sys.exit()`` or ``KeyboardInterrupt`` raised by a
plugin's ``__init__``, ``check_params``, ``skip``, ``repr``, hook, metric or reporter
becomes :class:`PluginAbort` naming the plugin. A genuine Ctrl-C (a SIGINT seen by the
handler installed here) still stops privbench.

Nor may anything keep privbench from stopping: after a Ctrl-C or SIGTERM, a watchdog
gives the unwinding ``SHUTDOWN_GRACE_S`` seconds (a plugin that catches the interrupt and
carries on, a worker pool whose shutdown deadlocks); then it kills the child processes
and ends privbench with the signal's status.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

from privbench.protocol.errors import aborts_of
from privbench.protocol.errors import user_interrupted as _user_interrupted

#: set when privbench was asked to stop with SIGTERM (``kill PID``, a job scheduler)
terminated = threading.Event()


#: seconds privbench may take to stop after a Ctrl-C or SIGTERM before the watchdog ends it
SHUTDOWN_GRACE_S = 30.0
_watchdog = threading.Event()


def _on_sigint(signum: int, frame: object) -> None:
    _user_interrupted.set()
    _start_shutdown_watchdog(130, "interrupted")
    raise KeyboardInterrupt


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like a Ctrl-C, so that ``finally`` blocks stop worker pools and
    close the store, instead of the process vanishing and leaving its workers running."""
    terminated.set()
    _user_interrupted.set()
    _start_shutdown_watchdog(143, "terminated (SIGTERM)")
    raise KeyboardInterrupt


def _grace_seconds() -> float:
    try:  # a test shortens it; anything unreadable keeps the default
        return max(float(os.environ.get("PRIVBENCH_SHUTDOWN_GRACE_S", SHUTDOWN_GRACE_S)), 0.0)
    except ValueError:
        return SHUTDOWN_GRACE_S


def _start_shutdown_watchdog(status: int, what: str) -> None:
    """Once per process: if privbench is still here ``SHUTDOWN_GRACE_S`` later, kill its
    child processes (worker pools, their grandchildren) and exit with ``status``."""
    if _watchdog.is_set():
        return
    _watchdog.set()
    grace = _grace_seconds()

    def last_resort() -> None:
        time.sleep(grace)
        _kill_children()
        sys.stderr.write(f"privbench: {what}; stopping took over {grace:g} s, so worker "
                         "processes were killed; runs stored so far are kept\n")
        sys.stderr.flush()
        os._exit(status)

    threading.Thread(target=last_resort, name="privbench-shutdown-watchdog", daemon=True).start()


def _kill_children() -> None:
    """SIGKILL every descendant (psutil when installed: a Dask nanny's worker too)."""
    try:
        import psutil

        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
    except ImportError:
        import multiprocessing

        for child in multiprocessing.active_children():
            with contextlib.suppress(OSError):
                child.kill()


def handle_sigterm() -> None:
    """Install the SIGTERM handler (main thread only; the CLI calls it)."""
    if _main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def handle_sigint() -> None:
    """Install the SIGINT handler for the whole process (the ``privbench`` command, not
    :func:`privbench.cli.main` called in-process): every Ctrl-C starts the watchdog."""
    if _main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def plugin_code(what: str) -> Iterator[None]:
    """Turn ``SystemExit``/``KeyboardInterrupt`` raised by plugin code into :class:`PluginAbort`.

    A genuine Ctrl-C (SIGINT seen by the handler installed here) propagates unchanged.
    """
    previous = signal.getsignal(signal.SIGINT) if _main_thread() else None
    installed = previous in (signal.default_int_handler, _on_sigint)
    if installed:
        signal.signal(signal.SIGINT, _on_sigint)
        _user_interrupted.clear()
    try:
        with aborts_of(what):
            yield
    finally:
        if installed:
            signal.signal(signal.SIGINT, previous)
