"""Whether this process still deserves trust as a worker for more runs.

A run that changed shared modules (restored in place, see ``privbench.running.isolation``)
or forked marks the process tainted; an executor with disposable workers (``process``)
asks :func:`take_taint` after each run and retires a tainted worker, so later runs start
in a fresh interpreter whatever the in-place restore missed.
"""

from __future__ import annotations

import os

_tainted = False


def mark_tainted() -> None:
    """Note that a run left this process in a state later runs should not inherit."""
    global _tainted
    _tainted = True


def take_taint() -> bool:
    """Whether a run since the last call tainted this process (the mark is cleared)."""
    global _tainted
    tainted, _tainted = _tainted, False
    return tainted


os.register_at_fork(after_in_parent=mark_tainted)
