"""Exceptions with messages a user can act on.

Every error names the thing that was wrong (file, line, parameter) and what was
expected, so the CLI can print it verbatim and exit non-zero.
"""

from __future__ import annotations

import contextlib
import difflib
import threading
from collections.abc import Iterable, Iterator


class PrivbenchError(Exception):
    """Base class of every error privbench raises on purpose."""


class ValidationError(PrivbenchError, ValueError):
    """An input (prior, distortion, budget, parameter) is not acceptable."""


class InvalidMappingError(ValidationError):
    """A mechanism returned a mapping that is not a valid conditional pmf."""


class PluginError(PrivbenchError):
    """A plugin is unknown, broken, unavailable or could not be created."""


class DataError(PrivbenchError):
    """A dataset file is missing, unreadable or malformed."""


class PluginAbort(PrivbenchError):
    """Plugin code raised ``SystemExit`` or ``KeyboardInterrupt`` (not a user's Ctrl-C):
    that run, or that plugin, fails; privbench goes on."""


#: set when the user really pressed Ctrl-C (by privbench's SIGINT handler,
#: :mod:`privbench._plumbing.abort`), so that :func:`aborts_of` lets that one through
user_interrupted = threading.Event()


@contextlib.contextmanager
def aborts_of(what: str) -> Iterator[None]:
    """Turn ``SystemExit``/``KeyboardInterrupt`` raised by plugin code (``what``: the
    plugin, as a message names it) into :class:`PluginAbort`; a KeyboardInterrupt that
    privbench's handler saw as the user's Ctrl-C (:data:`user_interrupted`) propagates.
    The guard itself, without signal handling: ``privbench._plumbing.abort.plugin_code``
    adds the handler around it."""
    try:
        yield
    except SystemExit as exc:
        raise PluginAbort(f"{what} called sys.exit({exc.code!r})") from None
    except KeyboardInterrupt:
        if user_interrupted.is_set():
            raise
        raise PluginAbort(f"{what} raised KeyboardInterrupt") from None


class StoreWriteError(PrivbenchError):
    """The results database cannot take a record (read-only, corrupted, disk full): the
    CLI exits 3 with one line; a record computed before the failure is saved to a file
    that line names, so the result is not lost."""


class StoreReadError(PrivbenchError):
    """The results database cannot be read (a corrupted page, a table that is not
    privbench's): the CLI prints one line and exits 3."""


def did_you_mean(name: object, candidates: Iterable[str]) -> str:
    """``" (did you mean 'sppm'?)"`` for the closest of ``candidates`` (difflib), or ``""``.

    Why: an unknown name was answered with a list of up to ~95 names and no pointer; every
    place a user types a name (outputs, mechanisms, data sets, metrics, plugins) adds this
    before that list.
    """
    close = difflib.get_close_matches(str(name), sorted(set(candidates)), n=2, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
