"""Where a plugin may keep what it derives from runs: the results store of the sweep.

A plugin that caches across runs (the ``optimum`` metric shares its certificates this
way) keeps a table of its own in the store the current sweep writes to. The sweep names
that store in each run's spec (``RunSpec.store``); the runner makes it current for the
run's duration, in its own process and in worker processes alike. Outside a sweep there
is none.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path

_STORE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("privbench_store", default=None)


def sweep_store() -> Path | None:
    """The SQLite file the running sweep stores its records in; None outside a sweep
    (a plugin then keeps its cache in its own process only)."""
    return _STORE.get()


@contextlib.contextmanager
def using_store(path: str | Path | None) -> Iterator[None]:
    """Make ``path`` the current sweep's store while a run executes (None: no store)."""
    token = _STORE.set(Path(path) if path else None)
    try:
        yield
    finally:
        _STORE.reset(token)
