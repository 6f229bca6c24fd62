"""The ``process`` executor: a pool of worker processes (pebble).

Each run executes in a spawned worker; a run that exceeds its timeout has its worker
killed and replaced, a worker that dies (segfault, os._exit, OOM kill) fails only its
own run. Workers are reused between runs, so dataset loading is cached per worker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import as_completed
from typing import Any

import privbench as pb


class ProcessExecutor(pb.Executor):
    name = "process"
    description = "process pool with hard timeouts and crash isolation"
    requirements = ("pebble",)

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
        pool = self._pool(workers)
        finished = False
        try:
            futures = {pool.schedule(pb.execute_run, args=[spec], timeout=timeout): spec
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

    def map_tasks(self, func: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        workers = int(self.workers or os.cpu_count() or 1)
        with self._pool(workers) as pool:
            return list(pool.map(func, list(items)).result())


def _limit_memory(limit_bytes: int) -> None:
    """Worker initializer: cap the address space, so a run that needs more memory fails
    with MemoryError (stored as that run's error) instead of taking the machine down."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


@pb.hookimpl
def privbench_register_executors() -> list[type]:
    return [ProcessExecutor]
