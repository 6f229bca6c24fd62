"""Executor and reporter base classes.

An executor takes runs as plain data (``RunSpec.to_dict()``) and yields one finished
run record (a dict) per run as soon as it is done, in any order. It must isolate runs:
an exception, a crash or a timeout becomes that run's status, never the sweep's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from privbench.protocol.plugin import Parametrized


class Executor(Parametrized):
    """Required: ``map_runs``. Optional: ``map_tasks`` for generic parallel work.

    ``on_progress`` is set by the CLI before ``map_runs`` on executors that run in the
    CLI's process (``local``): it receives a mechanism's in-solve progress reports.
    """

    kind: ClassVar[str] = "executor"
    on_progress: Callable[..., None] | None = None

    def map_runs(
        self, specs: Iterable[dict[str, Any]], *, timeout: float | None
    ) -> Iterator[dict[str, Any]]:
        """Run every spec (a :meth:`RunSpec.to_dict` dict) and yield one record per run as
        it finishes, in any order; never raise for a run's own failure (use
        ``pb.execute_run``, which records it, and ``pb.failed_record`` for a run that
        produced none, e.g. a dead worker or a ``timeout`` in seconds enforced from outside)."""
        raise NotImplementedError

    def map_tasks(self, func: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """Apply a picklable top-level ``func`` to every item; results in input order.

        Mechanisms that fan out internally (the trade-off model's one classification
        per partition) use this, so the user's choice of executor decides where the
        work runs. The default runs in process.
        """
        return [func(item) for item in items]


class Reporter(Parametrized):
    """Turns a results store into files (HTML, images, tables)."""

    kind: ClassVar[str] = "reporter"

    def report(self, db_path: Path, out_dir: Path) -> Path:
        """Read the results store ``db_path`` (never write it) and write files under
        ``out_dir``; return the main file (e.g. ``index.html``)."""
        raise NotImplementedError
