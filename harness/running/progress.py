"""Progress for long work: a rich bar with ETA on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any

from privbench.protocol.plugin import format_label


def _describe(record: dict[str, Any]) -> str:
    status = record.get("status")
    # the parameters the user gave (never every default), and the data set's
    mech = format_label(record.get("mechanism"), record.get("params"))
    data = format_label(record.get("dataset"), record.get("dataset_params"))
    fraction = (record.get("metrics") or {}).get("relative_delta")
    if fraction is not None and isinstance(record.get("delta"), int | float):
        # a relative budget: Δ is d_const's multiple, its digits say nothing; the fraction does
        text = f"{status:<7} {mech} on {data} delta={record['delta']:.6g} ({fraction:g} x d_const)"
    else:
        text = f"{status:<7} {mech} on {data} delta={record.get('delta')}"
    if record.get("seed") is not None:  # replicates differ only by it: name the run whole
        text += f" seed={record['seed']}"
    if isinstance(record.get("runtime_s"), int | float):
        text += f" ({record['runtime_s']:.2g} s)"
    if record.get("error"):
        text += f": {record['error']}"
    return text


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 2 min``: what a person reads in a progress line."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def solve_text(fields: dict[str, Any], elapsed: float) -> str:
    """``iteration 120, gap 3.1e-03 bits, 2.4 s`` from a mechanism's report fields."""
    parts = []
    if fields.get("iteration") is not None:
        parts.append(f"iteration {fields['iteration']}")
    if fields.get("gap_bits") is not None:
        parts.append(f"gap {float(fields['gap_bits']):.2g} bits")
    parts.append(f"{elapsed:.1f} s")
    return ", ".join(parts)


class RunProgress:
    """``with RunProgress(total) as p: p.advance(record)``."""

    def __init__(self, total: int, *, label: str = "runs", stream: Any = None,
                 enabled: bool = True) -> None:
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.done = 0
        self._rich: Any = None
        self._solve_started: float | None = None
        self._started = time.monotonic()  # its own clock: solves time with perf_counter

    def timing(self) -> str:
        """``elapsed 12 s, ETA 40 s`` (the mean time per finished run times those left);
        just the elapsed time once every run is done or for a single run."""
        elapsed = time.monotonic() - self._started
        text = f"elapsed {_duration(elapsed)}"
        if 0 < self.done < self.total:
            text += f", ETA {_duration(elapsed / self.done * (self.total - self.done))}"
        return text

    def __enter__(self) -> RunProgress:
        self._started = time.monotonic()
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

    @property
    def shows_solves(self) -> bool:
        """True when a terminal bar shows progress inside a solve (``solve_update``)."""
        return self._rich is not None

    #: a solve reports nothing until it has run this long (short solves stay quiet)
    SOLVE_QUIET_S = 2.0

    def solve_update(self, **fields: Any) -> None:
        """Progress inside one solve (``context.report``): on a terminal, after
        ``SOLVE_QUIET_S`` seconds, the bar's text shows the iteration, the certified gap
        and the elapsed time; otherwise nothing."""
        now = time.perf_counter()
        if self._solve_started is None:
            self._solve_started = now
        elapsed = now - self._solve_started
        if self._rich is None or elapsed < self.SOLVE_QUIET_S:
            return
        self._rich.update(self._task, description=f"{self.label}: {solve_text(fields, elapsed)}")

    def advance(self, record: dict[str, Any]) -> None:
        self.done += 1
        self._solve_started = None
        if self._rich is not None:
            self._rich.update(self._task, description=self.label)
        if not self.enabled:
            return
        line = f"[{self.done}/{self.total}] {_describe(record)}"
        if self._rich is None and self.total > 1:  # the bar shows both on a terminal
            line += f"; {self.timing()}"
        if self._rich is not None:
            if record.get("status") not in ("ok", "skip"):
                self._rich.console.print(f"[red]{line}")
            self._rich.advance(self._task)
        else:
            print(line, file=self.stream, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._rich is not None:
            self._rich.stop()
