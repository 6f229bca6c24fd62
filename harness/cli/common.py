"""Helpers shared by sub-commands: store options, runs executed with the command line's
options (:mod:`privbench.running.sweep` does the work), printing tables."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from privbench.protocol.errors import ValidationError
from privbench.protocol.outputs import output_of
from privbench.protocol.plugin import format_label
from privbench.results.fingerprints import MARK
from privbench.results.store import DEFAULT_DB
from privbench.running.specs import RunSpec
from privbench.running.sweep import execute_runs


def add_store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=Path, default=DEFAULT_DB,
                   help=f"SQLite results store (default {DEFAULT_DB})")
    p.add_argument("--no-store", action="store_true", help="do not write results to the store")
    p.add_argument("--workers", type=int, default=None, help="worker processes (process executor)")
    p.add_argument("--max-mem", type=float, default=None, metavar="MB",
                   help="memory limit per worker (process: RLIMIT_AS; dask: the workers' "
                        "memory limit); a run above it is stored as an error")


def check_full(args: argparse.Namespace) -> None:
    """``--full`` shapes the ``--json`` lines: refused without them (it would do nothing)."""
    if getattr(args, "full", False) and not getattr(args, "json", False):
        raise ValidationError("--full needs --json (it keeps the bulky values of each JSON "
                              "line; the table prints none of them)")


def execute(runs: Sequence[RunSpec], args: argparse.Namespace, *, progress: bool = True,
            timeout: float | None = None, resume: bool = False, sweep_id: str | None = None
            ) -> Iterator[dict[str, Any]]:
    """The command line's options for :func:`privbench.running.sweep.execute_runs`."""
    return execute_runs(
        runs, db=None if getattr(args, "no_store", False) else args.db,
        executor=getattr(args, "executor", None), workers=getattr(args, "workers", None),
        scheduler=getattr(args, "scheduler", None), max_mem_mb=getattr(args, "max_mem", None),
        timeout=timeout if timeout is not None else getattr(args, "timeout", None),
        resume=resume, keep_stale=getattr(args, "keep_stale", False), sweep_id=sweep_id,
        progress=progress)


def _missing(value: Any) -> bool:
    """None, or the NaN pandas puts in an empty cell of a stored run."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _fmt(value: Any, digits: int = 4) -> str:
    if _missing(value):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


#: (record field, column header) of the run table after the two name columns
TABLE_NUMBERS = (("delta", "Δ"), ("status", "status"), ("mi_bits", "I bits"),
                 ("distortion", "E\\[d]"), ("gap_bits", "gap"), ("runtime_s", "time s"))


def _converged(record: dict[str, Any]) -> bool | None:
    """The mechanism's own convergence flag (None when it reports none)."""
    value = output_of(record, "converged")
    return bool(value) if value is not None else None


def print_table(records: Sequence[dict[str, Any]], title: str = "runs") -> None:
    """One table per data set, titled with the number of runs it shows ("12 runs in
    r.sqlite on synthetic[m=3]"), so that the names and six numbers stay readable at 80
    columns; errors are listed below in full."""
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(format_label(r.get("dataset"), r.get("dataset_params")), []).append(r)
    unconverged = False
    for data, rows in groups.items():
        noun = title if len(rows) != 1 or not title.startswith("runs") else "run" + title[4:]
        table, flagged = _run_table(f"{len(rows)} {noun} on {data}", rows)
        unconverged |= flagged
        console.print(table)
    if unconverged:
        console.print("* not certified: stopped before its tolerance (metrics.converged = false); "
                      "its I is within `gap` bits of the optimum, not final; raise the mechanism's "
                      "iterations or see its modes", highlight=False)
    for r in records:
        if not _missing(r.get("error")) and r.get("error"):
            console.print(f"[red]{escape(str(r.get('status')))}[/]: {escape(str(r.get('error')))}",
                          highlight=False)


def _run_table(title: str, records: Sequence[dict[str, Any]]) -> tuple[Any, bool]:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("mechanism", overflow="fold", ratio=1)
    for key, header in TABLE_NUMBERS:
        table.add_column(header, no_wrap=True, justify="left" if key == "status" else "right")
    unconverged = False
    for r in records:
        # the parameters the user gave, not every default (those are in metrics.mechanism_repr)
        status = str(r.get("status"))
        if _converged(r) is False:
            status, unconverged = status + "*", True
        if r.get("other_code") is True:  # results: made by other code than the installed one
            status += MARK
        cells = [status if key == "status" else _fmt(r.get(key), 3) for key, _ in TABLE_NUMBERS]
        table.add_row(escape(format_label(r.get("mechanism"), r.get("params"))), *cells)
    return table, unconverged
