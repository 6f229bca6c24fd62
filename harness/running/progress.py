"""Progress for long work: a rich bar with ETA on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from typing import Any

from privbench.protocol.plugin import format_label


def _describe(record: dict[str, Any]) -> str:
    status = record.get("status")
    # the parameters the user gave (never every default), and the data set's
    mech = format_label(record.get("mechanism"), record.get("params"))
    data = format_label(record.get("dataset"), record.get("dataset_params"))
    text = f"{status:<7} {mech} on {data} delta={record.get('delta')}"
    if record.get("error"):
        text += f": {record['error']}"
    return text


class RunProgress:
    """``with RunProgress(total) as p: p.advance(record)``."""

    def __init__(self, total: int, *, label: str = "runs", stream: Any = None,
                 enabled: bool = True) -> None:
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.done = 0
        self._rich = None

    def __enter__(self) -> RunProgress:
        if self.enabled and self.stream.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._rich = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(file=self.stream), transient=False,
            )
            self._rich.start()
            self._task = self._rich.add_task(self.label, total=self.total)
        return self

    def advance(self, record: dict[str, Any]) -> None:
        self.done += 1
        if not self.enabled:
            return
        line = f"[{self.done}/{self.total}] {_describe(record)}"
        if self._rich is not None:
            if record.get("status") not in ("ok", "skip"):
                self._rich.console.print(f"[red]{line}")
            self._rich.advance(self._task)
        else:
            print(line, file=self.stream, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._rich is not None:
            self._rich.stop()
