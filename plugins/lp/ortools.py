"""``glop`` and ``pdlp``: OR-Tools LP solvers, run in a worker subprocess.

OR-Tools 9.15 and highspy >= 1.15 both ship ``libhighs.so.1`` and cannot be loaded
into one process (google/or-tools#5246). So this module never imports OR-Tools: each
backend talks to ``_ortools_worker.py``, a separate interpreter, over pipes. The host
process may have highspy loaded (a sweep over ``highs`` and ``glop`` does). The worker
keeps one pywraplp model, so GLOP can reuse its basis between solves. PDLP is a
first-order method: its solutions are accurate to its tolerances only (SPPM repairs
the primal and certifies its gap from the duals alone).

Workers outlive a solve: ``close`` hands the worker back to a small per-process pool
and the next ``start`` takes it, so starting an interpreter and importing OR-Tools
(about 0.4 s here) is paid once per process, in the mechanism's untimed warm-up, not in
every timed solve (nor in every restart of the master when SPPM prunes). Every reply
carries the worker's CPU time, which is added to ``privbench._plumbing.clock``: the
solve-time benchmarks count the worker's work as the solve's own.
"""

from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import privbench as pb
from privbench._plumbing.clock import add_helper_cpu_seconds

from ._master import check_columns

WORKER = Path(__file__).with_name("_ortools_worker.py")
#: idle workers kept for the next ``start`` (a sweep solves with one backend at a time)
MAX_IDLE_WORKERS = 2


class _Worker:
    """One OR-Tools interpreter and its pipes; counts its CPU time as this process's."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # the process that owns the pipes (not a forked child)
        self.proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.cpu_seen = 0.0
        #: a request is out and its reply not read: a call was interrupted (a run's
        #: timeout), so the pipe is out of step and the worker must not be reused
        self.pending = False

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None and not self.pending

    def call(self, who: str, command: str, payload: Any = None) -> Any:
        proc = self.proc
        if not self.alive():
            raise RuntimeError(f"{who}: OR-Tools worker is not running")
        assert proc.stdin is not None and proc.stdout is not None
        self.pending = True
        try:
            pickle.dump((command, payload), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
            ok, reply, cpu = pickle.load(proc.stdout)
            self.pending = False
        except (EOFError, BrokenPipeError, OSError) as exc:
            code = proc.poll()
            raise RuntimeError(f"{who}: OR-Tools worker died (exit status {code}): "
                               f"{exc}") from None
        add_helper_cpu_seconds(cpu - self.cpu_seen)
        self.cpu_seen = cpu
        if not ok:
            raise RuntimeError(f"{who}: {reply}")
        return reply

    def stop(self) -> None:
        proc = self.proc
        if self.pid == os.getpid() and proc.poll() is None:
            try:
                if self.pending:  # busy with an abandoned request: do not wait for it
                    raise OSError("abandoned request")
                pickle.dump(("close", None), proc.stdin)  # type: ignore[arg-type]
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()


_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def _take_worker() -> _Worker:
    """An idle worker of this process, or a new one."""
    with _idle_lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive():
                return worker
    return _Worker()


def _give_back(worker: _Worker) -> None:
    """Drop the worker's model and keep it for the next ``start`` (or stop it)."""
    try:
        worker.call("ortools", "reset")
    except RuntimeError:
        worker.stop()
        return
    with _idle_lock:
        if len(_idle) < MAX_IDLE_WORKERS:
            _idle.append(worker)
            return
    worker.stop()


def stop_idle_workers() -> None:
    """Stop the pooled workers (registered to run at exit)."""
    with _idle_lock:
        workers = list(_idle)
        _idle.clear()
    for worker in workers:
        worker.stop()


atexit.register(stop_idle_workers)
# a forked child (process executor) must not talk to its parent's workers
os.register_at_fork(after_in_child=_idle.clear)


class _WorkerBackend(pb.LPBackend):
    """A restricted master living in an OR-Tools worker process."""

    requirements = ("ortools",)
    extra = "ortools"
    solver_id: ClassVar[str] = ""

    def _params(self) -> str:
        return ""

    def _call(self, command: str, payload: Any = None) -> Any:
        worker = getattr(self, "_worker", None)
        if worker is None:
            raise RuntimeError(f"{self.name}: OR-Tools worker is not running")
        return worker.call(self.name, command, payload)

    def start(self, n: int, delta: float) -> None:
        params = self._params()  # a bad parameter fails before a worker is taken
        self.close()
        self._worker: _Worker | None = _take_worker()
        self._n = int(n)
        self._k = 0
        self._call("start", (self.solver_id, self._n, float(delta), params))

    def add_columns(self, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray) -> None:
        cols, cost, budget = check_columns(self._n, cols, cost, budget)
        if cols.size:
            self._call("add", (cols, cost, budget))
            self._k += cols.size

    def set_costs(self, cost: np.ndarray) -> None:
        cost = np.asarray(cost, dtype=float).ravel()
        if cost.size != self._k:
            raise ValueError(f"set_costs: got {cost.size} costs for {self._k} columns")
        self._call("costs", cost)

    def solve(self) -> pb.LPSolution:
        r = self._call("solve")
        if r["status"] != "optimal":
            return pb.LPSolution(r["status"], np.zeros(self._k), np.nan, 0.0, np.zeros(self._n),
                                 r["iterations"], r.get("message", ""))
        return pb.LPSolution("optimal", r["x"], float(r["objective"]),
                             min(float(r["budget_dual"]), 0.0), r["simplex_duals"],
                             r["iterations"])

    def close(self) -> None:
        """Hand the worker back to the pool (its model dropped) for the next ``start``."""
        worker = getattr(self, "_worker", None)
        self._worker = None
        if worker is None:
            return
        if worker.alive():
            _give_back(worker)
        else:
            worker.stop()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the pool may be gone
            pass


class GlopBackend(_WorkerBackend):
    """GLOP (primal/dual simplex) in a worker process; the model persists across solves."""

    name = "glop"
    citation = 'Perron and Furnon, OR-Tools (Glop), Google'
    description = "OR-Tools GLOP simplex, in a worker process (cannot share one with highspy)"
    solver_id = "GLOP"

    def __init__(self) -> None:
        pass


class PdlpBackend(_WorkerBackend):
    """PDLP (first-order primal-dual) in a worker process, to ``tolerance``.

    :param tolerance: PDLP's relative and absolute optimality tolerance (its
        ``eps_optimal_relative`` and ``eps_optimal_absolute``; > 0).
    """

    name = "pdlp"
    citation = ('Applegate et al., Practical large-scale linear programming using primal-dual hybrid '
                'gradient, NeurIPS 2021; OR-Tools')
    description = "OR-Tools PDLP first-order LP solver, in a worker process"
    solver_id = "PDLP"

    def __init__(self, tolerance: float = 1e-8) -> None:
        self.tolerance = tolerance

    def _params(self) -> str:
        eps = float(self.tolerance)
        if not eps > 0:
            raise pb.ValidationError(f"pdlp: tolerance must be > 0; got {self.tolerance!r}")
        return ("termination_criteria { simple_optimality_criteria { "
                f"eps_optimal_relative: {eps!r} eps_optimal_absolute: {eps!r} }} }}")


@pb.hookimpl
def privbench_register_lp_backends() -> list[type]:
    return [GlopBackend, PdlpBackend]
