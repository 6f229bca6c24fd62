"""The ``process`` executor: a pool of worker processes (pebble).

Each run executes in a spawned worker; a run that exceeds its timeout has its worker
killed and replaced, a worker that dies (segfault, os._exit, OOM kill) fails only its
own run. Workers are reused between runs, so dataset loading is cached per worker.
"""

from __future__ import annotations

import multiprocessing
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

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers

    def map_runs(self, specs: Iterable[dict[str, Any]], *, timeout: float | None
                 ) -> Iterator[dict[str, Any]]:
        from pebble import ProcessExpired, ProcessPool

        workers = int(self.workers or os.cpu_count() or 1)
        pool = ProcessPool(max_workers=workers, context=multiprocessing.get_context("spawn"))
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
                    record = pb.failed_record(spec, "error", f"worker process died (exit code {exc.exitcode})")
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
        from pebble import ProcessPool

        workers = int(self.workers or os.cpu_count() or 1)
        with ProcessPool(max_workers=workers, context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(func, list(items)).result())


@pb.hookimpl
def privbench_register_executors() -> list[type]:
    return [ProcessExecutor]
