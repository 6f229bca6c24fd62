"""The ``process`` executor: a pool of worker processes (pebble).

Each run executes in a spawned worker; a run that exceeds its timeout has its worker
killed and replaced, a worker that dies (segfault, os._exit, OOM kill) fails only its
own run. Workers are reused between runs, so dataset loading is cached per worker.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import as_completed
from typing import Any

import privbench as pb
from privbench._plumbing.taint import take_taint
from privbench.protocol.executor import run_label


class ProcessExecutor(pb.Executor):
    """Runs in a pool of spawned worker processes: hard timeouts, crash isolation.

    :param workers: the worker processes (``--workers``; default: the machine's CPU count).
    :param max_mem_mb: each worker's address-space limit in MB (RLIMIT_AS, ``--max-mem``; at
        least 512): a run above it fails as an error, the sweep goes on.
    """

    name = "process"
    citation = "none: privbench's process pool (pebble)"
    description = "process pool with hard timeouts and crash isolation"
    requirements = ("pebble",)
    #: the least --max-mem (MB): a worker reserves ~350 MB of address space importing
    #: numpy, scipy and privbench, and the default metrics (numba) need ~700 MB in all
    min_max_mem_mb = 512

    def __init__(self, workers: int | None = None, max_mem_mb: float | None = None) -> None:
        self.workers = workers
        self.max_mem_mb = max_mem_mb

    def check_params(self) -> None:
        if self.max_mem_mb is not None and not (
                isinstance(self.max_mem_mb, int | float) and self.max_mem_mb > 0):
            raise pb.ValidationError(f"process: max_mem_mb must be a number > 0; got {self.max_mem_mb!r}")

    def _pool(self, workers: int) -> Any:
        import multiprocessing

        from pebble import ProcessPool

        limit = int(self.max_mem_mb * 2**20) if self.max_mem_mb else None
        return ProcessPool(max_workers=workers, context=multiprocessing.get_context("spawn"),
                           initializer=_limit_memory if limit else None,
                           initargs=(limit,) if limit else ())

    def map_runs(self, specs: Iterable[dict[str, Any]], *, timeout: float | None
                 ) -> Iterator[dict[str, Any]]:
        from pebble import ProcessExpired

        workers = int(self.workers or os.cpu_count() or 1)
        stack = contextlib.ExitStack()
        channel = stack.enter_context(_progress_channel(self.on_progress))
        pool = self._pool(workers)
        finished = False
        try:
            futures = {pool.schedule(run_in_worker, args=[spec, channel], timeout=timeout): spec
                       for spec in specs}
            for future in as_completed(futures):
                spec = futures[future]
                try:
                    record = future.result()
                except FutureTimeout:
                    record = pb.failed_record(spec, "timeout", f"run exceeded its time limit of {timeout:g} s")
                except ProcessExpired as exc:
                    limit = f" (memory limit {self.max_mem_mb:g} MB?)" if self.max_mem_mb else ""
                    record = pb.failed_record(spec, "error", f"worker process died (exit code "
                                              f"{exc.exitcode}){limit}")
                except Exception as exc:  # noqa: BLE001
                    record = pb.failed_record(spec, "error", f"{type(exc).__name__}: {exc}")
                yield record
            finished = True
        finally:
            # interrupted (Ctrl-C, the consumer failed or stopped early): kill the workers
            # now instead of waiting for every queued run, as ``with pool`` would
            if finished:
                pool.close()
            else:
                pool.stop()
            pool.join()
            stack.close()

    def map_tasks(self, func: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        workers = int(self.workers or os.cpu_count() or 1)
        with self._pool(workers) as pool:
            return list(pool.map(func, list(items)).result())


def run_in_worker(spec: dict[str, Any], channel: Any = None) -> dict[str, Any]:
    """Execute one run in a worker; its progress reports go to ``channel`` (a manager
    queue) when the parent shows them. A run that changed shared modules or forked
    retires its worker once the record is sent (its restore may miss what it changed)."""
    if channel is None:
        record = pb.execute_run(spec)
    else:
        record = pb.execute_run(spec, on_progress=pb.ProgressForwarder(channel.put,
                                                                       run_label(spec)))
    if take_taint():
        _retire_after_reply()
    return record


def _retire_after_reply() -> None:
    """End this worker when it next asks pebble for a task: by then its record is sent,
    it holds no channel lock and has taken no task; pebble starts a fresh worker."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "process_tasks":
        frame = frame.f_back
    channel = frame.f_locals.get("channel") if frame is not None else None
    if channel is None:  # not under pebble's worker loop (a direct call)
        return

    def _exit(*_: Any) -> bool:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    channel.poll = _exit


@contextlib.contextmanager
def _progress_channel(on_progress: Callable[..., None] | None) -> Iterator[Any]:
    """A queue the workers put progress into and a thread that hands it to
    ``on_progress``; None (no manager process started) when nobody listens."""
    if on_progress is None:
        yield None
        return
    import multiprocessing

    manager = multiprocessing.get_context("spawn").Manager()
    channel = manager.Queue()
    stop = threading.Event()

    def drain() -> None:
        while True:
            try:
                fields = channel.get(timeout=0.1)
            except queue.Empty:
                if stop.is_set():
                    return
                continue
            except (EOFError, OSError):  # the manager went away
                return
            try:
                on_progress(**fields)
            except Exception:  # noqa: BLE001 - a display problem never stops the sweep
                pass

    thread = threading.Thread(target=drain, name="privbench-progress", daemon=True)
    thread.start()
    try:
        yield channel
    finally:
        stop.set()
        thread.join(timeout=5)
        manager.shutdown()


#: thread-count variables read by BLAS/OpenMP libraries when they load
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS", "NUMBA_NUM_THREADS")


def _limit_memory(limit_bytes: int) -> None:
    """Worker initializer: cap the address space, so a run that needs more memory fails
    with MemoryError (stored as that run's error) instead of taking the machine down.

    BLAS and OpenMP first go down to one thread: each extra OpenBLAS thread reserves
    ~80 MB of address space (its buffer, stack and malloc arena) on first use, so with
    one thread per core a many-core machine exhausts a few hundred MB of limit inside
    BLAS itself. Libraries loaded later read the environment; loaded ones are set now.
    """
    import resource

    from threadpoolctl import threadpool_limits

    for name in _THREAD_VARS:
        os.environ[name] = "1"
    threadpool_limits(limits=1)  # not a context: it holds for the worker's life
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


@pb.hookimpl
def privbench_register_executors() -> list[type]:
    return [ProcessExecutor]
