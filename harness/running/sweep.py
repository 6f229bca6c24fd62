"""A sweep as a library call: plan a grid, run it on an executor, store each record.

``pb.sweep("specs/toy.toml", db="toy.sqlite")`` does what ``privbench sweep`` does and
returns the records; ``privbench sweep``, ``privbench run`` and ``report --sweep`` are thin
layers over :func:`iter_sweep` and :func:`execute_runs`. The store a sweep writes to reaches
the runs as part of their spec (``RunSpec.store``), never through the environment.
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privbench.host.manager import get_host
from privbench.protocol.checks import finite_float
from privbench.protocol.errors import PrivbenchError, StoreWriteError, ValidationError
from privbench.results.store import DEFAULT_DB, ClaimHeartbeat, ResultStore
from privbench.running.fingerprint import run_fingerprint
from privbench.running.plan import (
    DEFAULT_MAX_RUNS,
    SweepSpec,
    check_metric_names,
    check_timeout,
    from_key,
    load_sweep_file,
    plan_runs,
    sweep_spec_from,
)
from privbench.running.progress import RunProgress
from privbench.running.specs import RunSpec, split_spec, typed_params

#: the largest ``max_mem_mb`` (--max-mem) accepted: a pebibyte; ``inf`` or 1e300 are not limits
MAX_MEM_MB = 2.0**30
#: seconds per run when neither the caller nor the spec sets a timeout
DEFAULT_SWEEP_TIMEOUT = 3600.0


def _max_mem(cls: Any, max_mem_mb: float) -> float:
    """``max_mem_mb`` checked against the least an executor's worker needs to start at all
    (``min_max_mem_mb``: RLIMIT_AS counts address space, and a worker with numpy and
    scipy loaded holds ~350 MB of it before its first run)."""
    value = finite_float("--max-mem", max_mem_mb, low=1.0, high=MAX_MEM_MB)
    least = float(getattr(cls, "min_max_mem_mb", 1.0))
    if value < least:
        raise ValidationError(f"--max-mem must be >= {least:g} MB for the {cls.name!r} executor "
                              f"(a worker with numpy and scipy needs that much address space "
                              f"before its first run); got {max_mem_mb:g}")
    return value


def make_executor(name: str, workers: int | None = None, scheduler: str | None = None,
                  max_mem_mb: float | None = None, *, workers_from: str = "--workers") -> Any:
    """The executor plugin ``name``; it may carry parameters like a mechanism
    (``dask:max_pending=64``). ``workers``, ``scheduler`` and ``max_mem_mb`` are refused,
    naming the option, by an executor that does not take them (``workers`` = 1 excepted:
    one at a time is what such an executor does); ``workers_from`` is how the refusal names
    where ``workers`` came from (a sweep file's ``workers =``)."""
    name, raw = split_spec(name, what="executor")
    cls = get_host().get("executor", name)
    params = typed_params(cls, raw)
    if workers is not None and workers < 1:
        raise ValidationError(f"--workers must be an integer >= 1; got {workers}")
    if workers and "workers" in cls.param_names():
        params["workers"] = workers
    elif workers is not None and workers > 1:  # one worker is what such an executor is
        takes = sorted(n for n, c in get_host().executors().items() if "workers" in c.param_names())
        raise ValidationError(f"{workers_from} {workers} needs an executor that runs in worker "
                              f"processes ({', '.join(takes) or 'none installed'}); {name!r} runs "
                              "one run at a time in this process")
    if max_mem_mb is not None:
        if "max_mem_mb" not in cls.param_names():
            raise ValidationError(f"--max-mem needs an executor that runs in worker processes "
                                  f"(process or dask); {name!r} runs in this process")
        params["max_mem_mb"] = _max_mem(cls, max_mem_mb)
    if scheduler:
        if "scheduler" not in cls.param_names():
            takes = sorted(n for n, c in get_host().executors().items()
                           if "scheduler" in c.param_names())
            raise ValidationError(f"--scheduler does not apply to the {name!r} executor "
                                  f"(executors that take one: {', '.join(takes) or 'none'})")
        params["scheduler"] = scheduler
    return cls.create(**params)


def execute_runs(runs: Sequence[RunSpec], *, db: str | Path | None = DEFAULT_DB,
                 executor: str | None = None, workers: int | None = None,
                 scheduler: str | None = None, max_mem_mb: float | None = None,
                 timeout: float | None = None, resume: bool = False, keep_stale: bool = False,
                 sweep_id: str | None = None, progress: bool = False,
                 steal_claims: bool = False) -> Iterator[dict[str, Any]]:
    """Run planned ``runs`` on an executor, storing each record in ``db`` (None: no store)
    as soon as it arrives, and yield it.

    :param resume: skip runs stored by the same code from the same data files, and claim
        the rest so that concurrent sweeps on one store share the work.
    :param keep_stale: with ``resume``, also reuse rows made by other code.
    :param steal_claims: with ``resume``, take over every claim on these runs (claims a
        sweep that is gone left with a fresh lease and a plausible holder).
    """
    # an executor option it refuses is an invalid request: said before the store is created
    make = make_executor(executor or get_host().default("executor"), workers, scheduler, max_mem_mb)
    store = None if db is None else ResultStore(db)
    if store is not None:
        store.check_writable()  # before anything is computed
    sweep_id = sweep_id or uuid.uuid4().hex[:12]
    claim_owner = uuid.uuid4().hex
    finished = False  # an error (or an early close) is the one to report, not the release's
    try:
        todo = list(runs)
        heartbeat: Any = contextlib.nullcontext()
        if resume and store is not None:
            todo = _resume(store, todo, claim_owner, keep_stale=keep_stale, steal=steal_claims)
            heartbeat = ClaimHeartbeat(store.path, claim_owner)
        # plugins may keep a table of their own in the sweep's store (the optimum cache)
        where = str(Path(db).resolve()) if store is not None else None
        with heartbeat, RunProgress(len(todo), enabled=progress) as bar:
            # in-solve progress, on a terminal only: the process and dask executors then
            # forward it from their workers (a manager queue, worker events)
            make.on_progress = bar.solve_update if bar.shows_solves else None
            shipped = [{**r.to_dict(), "store": where} for r in todo]
            for record in make.map_runs(shipped, timeout=timeout):
                if store is not None:
                    _store(store, record, sweep_id)
                bar.advance(record)
                yield record
        finished = True
    finally:
        if store is not None:
            try:
                if resume:
                    store.release(claim_owner)
            except StoreWriteError:
                if finished:
                    raise
            finally:
                store.close()


def _as_spec(spec: SweepSpec | str | Path | dict[str, Any]) -> SweepSpec:
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, dict):
        return sweep_spec_from(spec)  # read as a sweep file is (baselines on by default)
    return load_sweep_file(spec)


@dataclass(frozen=True)
class PlannedSweep:
    """A sweep checked and expanded (:func:`plan_sweep`): its runs and how to run them."""

    spec: SweepSpec
    runs: list[RunSpec]
    executor: str | None
    workers: int | None
    timeout: float


def plan_sweep(spec: SweepSpec | str | Path | dict[str, Any], *, executor: str | None = None,
               workers: int | None = None, scheduler: str | None = None,
               max_mem_mb: float | None = None, timeout: float | None = None,
               skip_metrics: Iterable[str] = (), max_runs: int = DEFAULT_MAX_RUNS
               ) -> PlannedSweep:
    """Everything a sweep checks before its first run, and its runs: the grid (plugins,
    parameters, budgets, seeds; each data set loaded once), the options and the executor
    with its options. ``privbench sweep --dry-run`` stops here; an invalid request raises
    the error the sweep itself would (naming the sweep file and key when it came from one).
    """
    spec = _as_spec(spec)
    spec.max_runs = max_runs
    check_metric_names(list(skip_metrics), "metric to skip")  # --no-metric: not the file's
    spec.skip_metrics = list(dict.fromkeys([*spec.skip_metrics, *skip_metrics]))
    if timeout is not None:
        check_timeout(timeout, what="--timeout")
    if workers is not None and workers < 1:
        raise ValidationError(f"--workers must be an integer >= 1; got {workers}")
    runs = plan_runs(spec)
    name = executor or spec.executor
    if spec.executor and not executor:
        with from_key(spec, "executor"):
            make_executor(spec.executor)  # its name and parameters, as the file gives them
    from_file = workers is None and spec.workers is not None  # the file's workers =
    with from_key(spec, "workers") if from_file else contextlib.nullcontext():
        make_executor(name or get_host().default("executor"), workers or spec.workers,
                      scheduler, max_mem_mb,  # with the command line's options
                      workers_from="workers =" if from_file else "--workers")
    return PlannedSweep(
        spec=spec, runs=runs, executor=name, workers=workers or spec.workers,
        timeout=timeout if timeout is not None else (spec.timeout or DEFAULT_SWEEP_TIMEOUT))


def iter_sweep(spec: SweepSpec | str | Path | dict[str, Any], *,
               db: str | Path | None = DEFAULT_DB, executor: str | None = None,
               workers: int | None = None, scheduler: str | None = None,
               max_mem_mb: float | None = None, timeout: float | None = None,
               resume: bool = False, keep_stale: bool = False,
               skip_metrics: Iterable[str] = (), max_runs: int = DEFAULT_MAX_RUNS,
               progress: bool = False, steal_claims: bool = False) -> Iterator[dict[str, Any]]:
    """:func:`sweep`, yielding each record as it is stored. The whole grid is planned
    and checked first (:func:`plan_sweep`): an invalid request raises before anything runs
    or is stored."""
    plan = plan_sweep(spec, executor=executor, workers=workers, scheduler=scheduler,
                      max_mem_mb=max_mem_mb, timeout=timeout, skip_metrics=skip_metrics,
                      max_runs=max_runs)
    yield from execute_runs(
        plan.runs, db=db, executor=plan.executor, workers=plan.workers, scheduler=scheduler,
        max_mem_mb=max_mem_mb, timeout=plan.timeout, resume=resume, keep_stale=keep_stale,
        sweep_id=plan.spec.name, progress=progress, steal_claims=steal_claims)


def sweep(spec: SweepSpec | str | Path | dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    """Run a sweep from Python and return its records (what ``privbench sweep`` stores).

    ``spec`` is a sweep file's path, its contents as a dict (``mechanisms``, ``datasets``,
    ``deltas``, ...) or a ``SweepSpec``; ``options`` are those of :func:`iter_sweep`:
    ``db`` (None: store nothing), ``executor``, ``workers``, ``resume``, ``timeout``, ...::

        records = pb.sweep("specs/toy.toml", db="toy.sqlite", resume=True)

    The records are those of the runs it ran: with ``resume``, runs already stored are
    skipped and not returned (``pb.load_runs(db)`` reads them all). The process and dask
    executors start workers that import the calling script again: in a script, call it
    under ``if __name__ == "__main__":``.
    """
    return list(iter_sweep(spec, **options))


def _resume(store: ResultStore, runs: list[RunSpec], owner: str, *, keep_stale: bool,
            steal: bool = False) -> list[RunSpec]:
    """The runs of ``runs`` still to do: not stored by the same code (any stored row with
    ``keep_stale``) and not claimed by another live sweep; says what it skips and why."""
    fingerprints = {r.key: run_fingerprint(r)["hash"] for r in runs}
    for key in store.data_changed({r.key: _data_files(r) for r in runs}):
        fingerprints[key] = f"{fingerprints[key]}+other-data"  # matches no stored row: stale
    stored = store.done_keys() & set(fingerprints)
    fresh = stored if keep_stale else store.fresh_keys(fingerprints)
    mine = set(store.claim([r.key for r in runs], owner=owner,
                           fingerprints=None if keep_stale else fingerprints, steal=steal))
    todo = [r for r in runs if r.key in mine]
    stale = len(stored - fresh)
    claimed = len(runs) - len(todo) - len(fresh)
    parts = [f"{len(fresh)} stored"]
    if stale:
        parts.append(f"{stale} stale re-run (made by other code or from other data files; "
                     "--keep-stale keeps them)")
    if claimed > 0:
        parts.append(f"{claimed} claimed by another sweep")
    hint = " (--steal-claims takes over the claims of a sweep that is gone)" if claimed > 0 else ""
    print(f"resume: {', '.join(parts)}, {len(todo)} to run of {len(runs)} in {store.path}{hint}",
          file=sys.stderr)
    return todo


def _data_files(run: RunSpec) -> dict[str, str] | None:
    """The data files (name -> sha256) a run reads now: its data set is loaded (cached
    from the plan) and says so in ``meta["data_files"]``; None when it names none."""
    from privbench.running.problems import load_problem

    try:
        files = load_problem(run.dataset, run.dataset_params).meta.get("data_files")
    except PrivbenchError:
        return None
    return dict(files) if files else None


def _store(store: ResultStore, record: dict[str, Any], sweep_id: str) -> None:
    """Store one record; if the database fails now, the record is saved to a file that the
    error names (:func:`_save_unstored`), so the computed result is not lost."""
    try:
        store.add(record, sweep_id=sweep_id)
    except StoreWriteError as exc:
        raise StoreWriteError(f"{exc}; {_save_unstored(record)}") from None


#: the file name's start of a record the store could not take
UNSTORED_PREFIX = "privbench-unstored-"


def _save_unstored(record: dict[str, Any]) -> str:
    """Write ``record`` (as JSON, provenance included) to a new file in the current folder,
    else in the temporary folder; says where, as a clause of the store's error. Where
    neither can be written, the record is printed on stderr instead."""
    import json
    import os
    import tempfile

    from privbench.running.records import _strict

    text = json.dumps(_strict(record), allow_nan=False, default=str) + "\n"
    for folder in (os.curdir, tempfile.gettempdir()):
        try:
            fd, name = tempfile.mkstemp(prefix=UNSTORED_PREFIX, suffix=".json", dir=folder)
        except OSError:
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(name)
            continue
        return f"the computed record of run {record.get('run_key')} is saved in {name}"
    print(text, end="", file=sys.stderr, flush=True)
    return (f"the computed record of run {record.get('run_key')} is printed above (no file "
            "could be written in the current or the temporary folder)")
