"""Exceptions with messages a user can act on.

Every error names the thing that was wrong (file, line, parameter) and what was
expected, so the CLI can print it verbatim and exit non-zero.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


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


class StoreWriteError(PrivbenchError):
    """The results database cannot take a record (read-only, corrupted, disk full): the
    CLI prints the computed record and exits 3, so the result is not lost."""


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
