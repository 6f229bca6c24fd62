"""Plugin code may not end privbench: ``sys.exit()`` or ``KeyboardInterrupt`` raised by a
plugin's ``__init__``, ``check_params``, ``skip``, ``repr``, hook, metric or reporter
becomes :class:`PluginAbort` naming the plugin. A genuine Ctrl-C (a SIGINT seen by the
handler installed here) still stops privbench.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from privbench.protocol.errors import PluginAbort

_user_interrupted = threading.Event()
#: set when privbench was asked to stop with SIGTERM (``kill PID``, a job scheduler)
terminated = threading.Event()


def _on_sigint(signum: int, frame: object) -> None:
    _user_interrupted.set()
    raise KeyboardInterrupt


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like a Ctrl-C, so that ``finally`` blocks stop worker pools and
    close the store, instead of the process vanishing and leaving its workers running."""
    terminated.set()
    _user_interrupted.set()
    raise KeyboardInterrupt


def handle_sigterm() -> None:
    """Install the SIGTERM handler (main thread only; the CLI calls it)."""
    if _main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def plugin_code(what: str) -> Iterator[None]:
    """Turn ``SystemExit``/``KeyboardInterrupt`` raised by plugin code into :class:`PluginAbort`.

    A genuine Ctrl-C (SIGINT seen by the handler installed here) propagates unchanged.
    """
    installed = _main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if installed:
        signal.signal(signal.SIGINT, _on_sigint)
        _user_interrupted.clear()
    try:
        yield
    except SystemExit as exc:
        raise PluginAbort(f"{what} called sys.exit({exc.code!r})") from None
    except KeyboardInterrupt:
        if _user_interrupted.is_set():
            raise
        raise PluginAbort(f"{what} raised KeyboardInterrupt") from None
    finally:
        if installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
