"""Executor and reporter base classes.

An executor takes runs as plain data (``RunSpec.to_dict()``) and yields one finished
run record (a dict) per run as soon as it is done, in any order. It must isolate runs:
an exception, a crash or a timeout becomes that run's status, never the sweep's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from .parametrized import Parametrized


class Executor(Parametrized):
    kind: ClassVar[str] = "executor"

    def map_runs(
        self, specs: Iterable[dict[str, Any]], *, timeout: float | None
    ) -> Iterator[dict[str, Any]]:
        raise NotImplementedError


class Reporter(Parametrized):
    """Turns a results store into files (HTML, images, tables)."""

    kind: ClassVar[str] = "reporter"

    def report(self, db_path: Path, out_dir: Path) -> Path:
        raise NotImplementedError
