"""The ``local`` executor: runs one after another in this process.

Timeouts use SIGALRM, which interrupts Python code (and sleeps) but not a long call
inside a C extension; use the ``process`` executor for hard isolation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import privbench as pb


class LocalExecutor(pb.Executor):
    name = "local"
    citation = 'none: runs in this process (privbench)'
    description = "sequential, in process (SIGALRM timeouts)"
    default = True  # the executor used when none is named

    def __init__(self) -> None:
        pass

    def map_runs(self, specs: Iterable[dict[str, Any]], *, timeout: float | None
                 ) -> Iterator[dict[str, Any]]:
        for spec in specs:
            yield pb.execute_run(spec, timeout=timeout, on_progress=self.on_progress)


@pb.hookimpl
def privbench_register_executors() -> list[type]:
    return [LocalExecutor]
