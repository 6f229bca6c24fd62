"""Where a plugin may keep what it derives from runs: the results store of the sweep.

A plugin that caches across runs (the ``optimum`` metric shares its certificates this
way) keeps a table of its own in the store the current sweep writes to. The CLI names
that store to every run, in its own process and in worker processes, through the
environment variable ``PRIVBENCH_STORE``; outside a sweep there is none.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the environment variable naming the results store of the running sweep
STORE_ENV = "PRIVBENCH_STORE"


def sweep_store() -> Path | None:
    """The SQLite file the running sweep stores its records in; None outside a sweep
    (a plugin then keeps its cache in its own process only)."""
    value = os.environ.get(STORE_ENV)
    return Path(value) if value else None
