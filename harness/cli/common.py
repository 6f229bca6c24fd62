"""Helpers shared by sub-commands: store options, executing runs, printing tables."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from privbench.host.manager import get_host
from privbench.protocol.checks import finite_float
from privbench.protocol.errors import StoreWriteError, ValidationError
from privbench.protocol.plugin import format_label
from privbench.protocol.shared import STORE_ENV
from privbench.results.fingerprints import MARK
from privbench.results.store import DEFAULT_DB, ClaimHeartbeat, ResultStore
from privbench.running.fingerprint import run_fingerprint
from privbench.running.progress import RunProgress
from privbench.running.specs import RunSpec, parse_spec


def add_store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=Path, default=DEFAULT_DB,
                   help=f"SQLite results store (default {DEFAULT_DB})")
    p.add_argument("--no-store", action="store_true", help="do not write results to the store")
    p.add_argument("--workers", type=int, default=None, help="worker processes (process executor)")
    p.add_argument("--max-mem", type=float, default=None, metavar="MB",
                   help="memory limit per worker (process: RLIMIT_AS; dask: the workers' "
                        "memory limit); a run above it is stored as an error")


#: the largest --max-mem (MB) accepted: a pebibyte; `inf` or 1e300 are not limits
MAX_MEM_MB = 2.0**30


def _max_mem(cls: Any, max_mem_mb: float) -> float:
    """--max-mem checked against the least an executor's worker needs to start at all
    (``min_max_mem_mb``: RLIMIT_AS counts address space, and a worker with numpy and
    scipy loaded holds ~350 MB of it before its first run)."""
    value = finite_float("--max-mem", max_mem_mb, low=1.0, high=MAX_MEM_MB)
    least = float(getattr(cls, "min_max_mem_mb", 1.0))
    if value < least:
        raise ValidationError(f"--max-mem must be >= {least:g} MB for the {cls.name!r} executor "
                              f"(a worker with numpy and scipy needs that much address space "
                              f"before its first run); got {max_mem_mb:g}")
    return value


def make_executor(name: str, workers: int | None, scheduler: str | None = None,
                  max_mem_mb: float | None = None) -> Any:
    """``name`` may carry parameters like a mechanism: ``dask:max_pending=64``."""
    name, params = parse_spec(name, what="executor")
    cls = get_host().get("executor", name)
    if workers and "workers" in cls.param_names():
        params["workers"] = workers
    if max_mem_mb is not None:
        if "max_mem_mb" not in cls.param_names():
            raise ValidationError(f"--max-mem needs an executor that runs in worker processes "
                                  f"(process or dask); {name!r} runs in this process")
        params["max_mem_mb"] = _max_mem(cls, max_mem_mb)
    if scheduler:
        if "scheduler" not in cls.param_names():
            raise ValidationError(f"--scheduler does not apply to the {name!r} executor "
                                  "(use --executor dask)")
        params["scheduler"] = scheduler
    return cls.create(**params)


def execute(runs: Sequence[RunSpec], args: argparse.Namespace, *, progress: bool = True,
            timeout: float | None = None, resume: bool = False, sweep_id: str | None = None
            ) -> Iterator[dict[str, Any]]:
    """Run ``runs`` on the chosen executor, storing each record as soon as it arrives."""
    store = None if getattr(args, "no_store", False) else ResultStore(args.db)
    store_before = os.environ.get(STORE_ENV)
    if store is not None:
        store.check_writable()  # before anything is computed
        # plugins may keep a table of their own in the sweep's store (workers inherit it)
        os.environ[STORE_ENV] = str(Path(args.db).resolve())
    executor = make_executor(getattr(args, "executor", None) or "local",
                             getattr(args, "workers", None), getattr(args, "scheduler", None),
                             getattr(args, "max_mem", None))
    sweep_id = sweep_id or uuid.uuid4().hex[:12]
    claim_owner = uuid.uuid4().hex
    try:
        todo = list(runs)
        heartbeat: Any = contextlib.nullcontext()
        if resume and store is not None:
            todo = _resume(store, todo, claim_owner, keep_stale=getattr(args, "keep_stale", False))
            heartbeat = ClaimHeartbeat(store.path, claim_owner)
        timeout = timeout if timeout is not None else getattr(args, "timeout", None)
        with heartbeat, RunProgress(len(todo), enabled=progress) as bar:
            # in-solve progress, on a terminal only: the process and dask executors then
            # forward it from their workers (a manager queue, worker events)
            executor.on_progress = bar.solve_update if bar.shows_solves else None
            for record in executor.map_runs([r.to_dict() for r in todo], timeout=timeout):
                if store is not None:
                    _store(store, record, sweep_id)
                bar.advance(record)
                yield record
    finally:
        if store is not None:
            if resume:
                store.release(claim_owner)
            store.close()
        if store_before is None:
            os.environ.pop(STORE_ENV, None)
        else:
            os.environ[STORE_ENV] = store_before


def _resume(store: ResultStore, runs: list[RunSpec], owner: str, *, keep_stale: bool
            ) -> list[RunSpec]:
    """The runs of ``runs`` still to do: not stored by the same code (any stored row with
    ``keep_stale``) and not claimed by another live sweep; says what it skips and why."""
    import sys

    fingerprints = {r.key: run_fingerprint(r)["hash"] for r in runs}
    for key in store.data_changed({r.key: _data_files(r) for r in runs}):
        fingerprints[key] = f"{fingerprints[key]}+other-data"  # matches no stored row: stale
    stored = store.done_keys() & set(fingerprints)
    fresh = stored if keep_stale else store.fresh_keys(fingerprints)
    mine = set(store.claim([r.key for r in runs], owner=owner,
                           fingerprints=None if keep_stale else fingerprints))
    todo = [r for r in runs if r.key in mine]
    stale = len(stored - fresh)
    claimed = len(runs) - len(todo) - len(fresh)
    parts = [f"{len(fresh)} stored"]
    if stale:
        parts.append(f"{stale} stale re-run (made by other code or from other data files; "
                     "--keep-stale keeps them)")
    if claimed > 0:
        parts.append(f"{claimed} claimed by another sweep")
    print(f"resume: {', '.join(parts)}, {len(todo)} to run of {len(runs)} in {store.path}",
          file=sys.stderr)
    return todo


def _data_files(run: RunSpec) -> dict[str, str] | None:
    """The data files (name -> sha256) a run reads now: its data set is loaded (cached
    from the plan) and says so in ``meta["data_files"]``; None when it names none."""
    from privbench.protocol.errors import PrivbenchError
    from privbench.running.problems import load_problem

    try:
        files = load_problem(run.dataset, run.dataset_params).meta.get("data_files")
    except PrivbenchError:
        return None
    return dict(files) if files else None


def _store(store: ResultStore, record: dict[str, Any], sweep_id: str) -> None:
    """Store one record; if the database fails now, print the record so it is not lost."""
    import sys

    from privbench.running.records import record_json

    try:
        store.add(record, sweep_id=sweep_id)
    except StoreWriteError:
        print(record_json(record), file=sys.stderr, flush=True)
        raise


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
    metrics = record.get("metrics") or {}
    value = metrics.get("converged") if isinstance(metrics, dict) else None
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
        console.print("* stopped before its tolerance (metrics.converged = false): the gap is "
                      "certified but larger than asked; raise the mechanism's iterations or see its modes",
                      highlight=False)
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
