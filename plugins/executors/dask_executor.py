"""The ``dask`` executor: runs on a Dask cluster, an existing one or a local one.

``privbench sweep SPEC --executor dask --scheduler tcp://HOST:PORT`` connects to a
running scheduler; without ``--scheduler`` a ``distributed.LocalCluster`` of worker
processes is started on loopback for the duration of the sweep.

Each run is shipped as plain data (the ``pb.RunSpec`` dict) to :func:`run_on_worker`, a
top-level function of this module, so workers need privbench (and the plugins the
sweep uses) installed, nothing else. Records come back with ``as_completed`` and are
stored as they arrive, so a sweep interrupted at any point keeps every finished run.

Failure semantics, matching the ``process`` executor where Dask allows:

* a run that raises, fails validation or times out gives a record with that status
  (``pb.execute_run`` never raises);
* a worker that dies mid-run (segfault, OOM kill, node loss) gets the run re-submitted
  ``retries`` times (default 1), then it is recorded as ``error`` with the reason. The
  local cluster's scheduler is told not to re-run anything itself; an external
  scheduler re-runs a task up to its own ``distributed.scheduler.allowed-failures``
  (Dask's default: 3) before privbench hears of it, and those re-runs count;
* runs are submitted one per worker thread at a time (``max_pending`` overrides), so a
  worker that dies holds only the run that killed it: Dask counts a death against every
  task queued on the worker, which would make innocent runs pay for a crashing one.
  On an adaptive cluster that starts from zero workers set ``max_pending`` to the size
  you want it to grow to (``--executor dask:max_pending=64``);
* the per-run timeout is enforced inside the worker by raising an exception in the
  run's thread, again every second. Like the ``local`` executor's SIGALRM it interrupts
  Python code, not a long call inside a C extension (an LP solve), which ends its call
  first. A run still going ``max(GIVE_UP_S, timeout)`` past its limit (it swallows every
  raise) is given up: the task returns a ``timeout`` record and the client restarts that
  worker, so one hostile run cannot hold the sweep.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from typing import Any

import privbench as pb
from privbench.protocol.executor import run_label

#: how often an ignored timeout is raised again in the run's thread (seconds)
REARM_S = 1.0
#: how often a run whose worker died is submitted again before it is recorded as an error
DEFAULT_RETRIES = 1
#: how long past its limit (at least; or the limit itself when longer) a run that swallows
#: or blocks every raise of its timeout may go on before it is given up (the local
#: executor's ``ESCALATE_S``)
GIVE_UP_S = 60.0
#: key under a record's ``metrics`` naming the worker whose run was given up (popped by
#: the client, which restarts that worker)
_RESTART_KEY = "_dask_restart_worker"



class _Watchdog:
    """Raise :class:`pb.RunTimeout` in one thread after ``seconds`` unless disarmed first.

    Worker threads cannot use SIGALRM, so the exception is injected with
    ``PyThreadState_SetAsyncExc``; the lock makes disarm-then-fire impossible.
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.thread_id = threading.get_ident()
        self.fired = False
        self._done = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def _fire(self) -> None:
        """Raise the timeout in the run's thread, again every second until the run ends:
        a run that catches it once is not let go (the local executor's rule)."""
        if self._stop.wait(self.seconds):
            return
        while True:
            with self._lock:
                if self._done:
                    return
                self.fired = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self.thread_id), ctypes.py_object(pb.RunTimeout))
            if self._stop.wait(REARM_S):
                return

    def __enter__(self) -> _Watchdog:
        if self.seconds and self.seconds > 0:
            self._timer = threading.Thread(target=self._fire, daemon=True,
                                           name="privbench-dask-timeout")
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._done = True
        self._stop.set()


def run_on_worker(spec: dict[str, Any], timeout: float | None = None,
                  progress_topic: str | None = None, give_up_s: float = GIVE_UP_S) -> dict[str, Any]:
    """Execute one run on a Dask worker; plain dict in, plain dict out. With a
    ``progress_topic`` the mechanism's progress reports are logged as worker events
    under it, which the client subscribes to. A run still going ``max(give_up_s,
    timeout)`` past its limit is given up (a timeout record naming its worker)."""
    message = f"run exceeded its time limit of {timeout:g} s" if timeout else "run timed out"
    forward = None
    if progress_topic:
        from distributed import get_worker

        worker = get_worker()
        forward = pb.ProgressForwarder(lambda fields: worker.log_event(progress_topic, fields),
                                       run_label(spec))
    grace = max(give_up_s, timeout or 0.0)
    outcome = _run_guarded(spec, timeout, forward, grace)
    if outcome is None:  # it swallowed every timeout: its thread is left to the restart
        record = pb.failed_record(spec, "timeout", f"{message}; it ignored the timeout for {grace:g} s "
                                  "more (it catches or blocks it): given up, its worker restarted")
        record.setdefault("metrics", {})[_RESTART_KEY] = _worker_address()
        return record
    record, watch = outcome
    if watch is None:
        return record
    if watch.fired and record.get("status") == "timeout" and not record.get("error"):
        record["error"] = message
    elif watch.fired and record.get("status") not in ("timeout", "error"):
        # it ran past its limit and caught the timeout: not a result within the limit
        record.update(status="timeout", error=f"{message} (the run caught the timeout and "
                      "went on; its numbers are not kept as a result)")
    record.setdefault("metrics", {})["executor"] = "dask"
    return record


def _run_guarded(spec: dict[str, Any], timeout: float | None, forward: Any, grace: float
                 ) -> tuple[dict[str, Any], _Watchdog | None] | None:
    """Execute the run in a thread of its own under the repeating timeout; None when it is
    still going ``grace`` s past its limit (the task returns anyway, so one hostile run
    cannot hold the sweep forever)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            with _Watchdog(timeout) as watch:
                box["watch"] = watch
                box["record"] = pb.execute_run(spec, timeout=None, on_progress=forward)
        except pb.RunTimeout:
            box["record"] = pb.failed_record(spec, "timeout", f"run exceeded its time limit of {timeout:g} s")
            box["watch"] = None
        except BaseException as exc:  # noqa: BLE001 - execute_run never raises; just in case
            box["record"] = pb.failed_record(spec, "error", f"{type(exc).__name__}: {exc}")
            box["watch"] = None

    thread = threading.Thread(target=target, daemon=True, name="privbench-dask-run")
    thread.start()
    thread.join(timeout + grace if timeout else None)
    if "record" not in box:
        return None
    return box["record"], box.get("watch")


def _worker_address() -> str | None:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):  # called outside a worker (tests)
        return None


def _restart(client: Any, record: dict[str, Any]) -> None:
    """Restart the worker a given-up run is still stuck on (its thread cannot be stopped)."""
    address = record.get("metrics", {}).pop(_RESTART_KEY, None)
    if not address:
        return
    try:
        client.restart_workers([address], timeout=120)
    except Exception as exc:  # noqa: BLE001 - no nanny (an external worker): say so, go on
        print(f"dask: could not restart worker {address} (a run is stuck on it): {exc}",
              file=sys.stderr)


def _lost_worker_text(attempts: int, exc: BaseException) -> str:
    last = getattr(getattr(exc, "last_worker", None), "address", "?")
    return (f"worker lost mid-run {attempts} times (crash, out-of-memory kill or lost node); "
            f"last on {last}")


class DaskExecutor(pb.Executor):
    """Ship runs to a Dask cluster and stream their records back as they finish.

    :param scheduler: the address of a running Dask scheduler, ``tcp://HOST:PORT``
        (``--scheduler``); default: a local cluster of worker processes on loopback.
    :param workers: the local cluster's worker processes (``--workers``; default: the CPU
        count; not read with ``scheduler``).
    :param threads_per_worker: the local cluster's threads per worker (an integer >= 1).
    :param retries: how often a run whose worker died is submitted again before it is
        recorded as an error (an integer >= 0).
    :param max_pending: the runs in flight at most (default: one per worker thread); set it on
        an adaptive cluster that starts from zero workers.
    :param max_mem_mb: the local cluster's memory limit per worker in MB (``--max-mem``; its
        nanny restarts a worker above it, failing that run); default: Dask's ``auto``.
    """

    name = "dask"
    citation = 'Rocklin, Dask: parallel computation with blocked algorithms and task scheduling, SciPy 2015'
    description = "Dask cluster (--scheduler tcp://HOST:PORT, or a LocalCluster on loopback)"
    requirements = ("distributed",)
    extra = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None,
                 threads_per_worker: int = 1, retries: int = DEFAULT_RETRIES,
                 max_pending: int | None = None, max_mem_mb: float | None = None) -> None:
        self.scheduler = scheduler
        self.workers = workers
        self.threads_per_worker = threads_per_worker
        self.retries = retries
        self.max_pending = max_pending
        self.max_mem_mb = max_mem_mb

    def _validate(self) -> None:
        if self.scheduler is not None and not isinstance(self.scheduler, str):
            raise pb.ValidationError(f"dask: scheduler must be an address like tcp://HOST:PORT; "
                                     f"got {self.scheduler!r}")
        for name in ("workers", "threads_per_worker", "retries", "max_pending"):
            value = getattr(self, name)
            least = 0 if name == "retries" else 1
            if value is not None and (not isinstance(value, int) or value < least):
                raise pb.ValidationError(f"dask: {name} must be an integer >= {least}; "
                                         f"got {value!r}")

    def _client(self, stack: ExitStack) -> tuple[Any, int]:
        """Connect (or start a local cluster); returns the client and the number of
        attempts the scheduler itself makes before it reports a lost worker."""
        from distributed import Client, LocalCluster

        if self.scheduler:
            try:
                client = stack.enter_context(Client(self.scheduler, timeout="30s"))
            except OSError as exc:
                raise pb.PrivbenchError(
                    f"dask: cannot reach scheduler {self.scheduler}: {exc}") from None
            try:
                allowed = int(client.run_on_scheduler(_allowed_failures))
            except Exception:  # noqa: BLE001 - assume Dask's default
                allowed = 3
            if allowed > self.retries:
                print(f"dask: scheduler {self.scheduler} re-runs a task up to {allowed} times "
                      "when its worker dies (distributed.scheduler.allowed-failures); "
                      f"privbench adds no retries of its own", file=sys.stderr)
            return client, allowed + 1
        # the scheduler gives up at the first loss; map_runs decides about retries
        cluster = stack.enter_context(LocalCluster(
            n_workers=int(self.workers or os.cpu_count() or 1),
            threads_per_worker=self.threads_per_worker, processes=True, host="127.0.0.1",
            # no dashboard; its bare HTTP server (health, metrics) on a free port, so two
            # sweeps (or a sweep beside a user's cluster) do not fight over :8787
            dashboard_address=None,
            scheduler_kwargs={"allowed_failures": 0, "dashboard_address": "127.0.0.1:0"},
            # the nanny restarts a worker above it: that run fails, the sweep goes on
            memory_limit=f"{self.max_mem_mb}MB" if self.max_mem_mb else "auto",
        ))
        return stack.enter_context(Client(cluster)), 1

    def map_runs(self, specs: Iterable[dict[str, Any]], *, timeout: float | None
                 ) -> Iterator[dict[str, Any]]:
        from distributed import KilledWorker, as_completed

        self._validate()
        specs = list(specs)
        if not specs:
            return
        with ExitStack() as stack:
            client, per_kill = self._client(stack)
            batch = uuid.uuid4().hex[:8]
            topic = self._subscribe(client, stack, f"privbench-progress-{batch}")
            queue: list[tuple[int, int]] = [(i, 0) for i in reversed(range(len(specs)))]
            futures: dict[Any, tuple[int, int]] = {}
            stream = as_completed()

            def top_up() -> None:
                """Keep one run per worker thread in flight (re-read as workers come and go)."""
                window = self.max_pending or sum(client.nthreads().values())
                while queue and len(futures) < max(1, window):
                    i, attempts = queue.pop()
                    future = client.submit(run_on_worker, specs[i], timeout, topic, GIVE_UP_S, pure=False,
                                           key=f"privbench-run-{batch}-{i}-{attempts}")
                    futures[future] = (i, attempts)
                    stream.add(future)

            top_up()
            for future in stream:
                i, attempts = futures.pop(future)
                record = None
                if future.status == "finished":
                    record = future.result()
                elif future.status == "error":
                    exc = future.exception()
                    if isinstance(exc, KilledWorker):
                        attempts += per_kill
                        if attempts <= self.retries:
                            queue.append((i, attempts))  # next in line: retried first
                        else:
                            record = pb.failed_record(specs[i], "error",
                                                   _lost_worker_text(attempts, exc))
                    else:  # e.g. privbench missing or different on the worker
                        record = pb.failed_record(specs[i], "error", f"dask task failed: "
                                               f"{type(exc).__name__}: {exc}")
                else:  # cancelled: the scheduler went away or someone cancelled the key
                    record = pb.failed_record(specs[i], "error", f"dask task {future.status}")
                future.release()
                if record is not None:
                    _restart(client, record)
                top_up()
                if record is not None:
                    yield record

    def _subscribe(self, client: Any, stack: ExitStack, topic: str) -> str | None:
        """Hand the workers' progress events under ``topic`` to ``on_progress``; None
        (workers send nothing) when nobody listens."""
        listener = self.on_progress
        if listener is None:
            return None

        def handler(event: tuple[float, dict[str, Any]]) -> None:
            try:
                listener(**event[1])
            except Exception:  # noqa: BLE001 - a display problem never stops the sweep
                pass

        client.subscribe_topic(topic, handler)
        stack.callback(client.unsubscribe_topic, topic)
        return topic

    def map_tasks(self, func: Any, items: Iterable[Any]) -> list[Any]:
        self._validate()
        with ExitStack() as stack:
            client, _ = self._client(stack)
            return client.gather(client.map(func, list(items), pure=False))


def _allowed_failures(dask_scheduler: Any) -> int:
    return dask_scheduler.allowed_failures


@pb.hookimpl
def privbench_register_executors() -> list[type]:
    return [DaskExecutor]
