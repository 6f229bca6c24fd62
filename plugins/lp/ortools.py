"""``glop`` and ``pdlp``: OR-Tools LP solvers, run in a worker subprocess.

OR-Tools 9.15 and highspy >= 1.15 both ship ``libhighs.so.1`` and cannot be loaded
into one process (google/or-tools#5246). So this module never imports OR-Tools: each
backend starts ``_ortools_worker.py`` as a separate interpreter and talks to it over
pipes. The host process may have highspy loaded (a sweep over ``highs`` and ``glop``
does). The worker keeps one pywraplp model, so GLOP can reuse its basis between
solves. PDLP is a first-order method: its solutions are accurate to its tolerances
only (SPPM repairs the primal and certifies its gap from the duals alone).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import privbench as pb

from ._master import check_columns

WORKER = Path(__file__).with_name("_ortools_worker.py")


class _WorkerBackend(pb.LPBackend):
    """A restricted master living in an OR-Tools worker process."""

    requirements = ("ortools",)
    extra = "ortools"
    solver_id: ClassVar[str] = ""

    def _params(self) -> str:
        return ""

    def _call(self, command: str, payload: Any = None) -> Any:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise RuntimeError(f"{self.name}: OR-Tools worker is not running")
        assert proc.stdin is not None and proc.stdout is not None
        try:
            pickle.dump((command, payload), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
            ok, reply = pickle.load(proc.stdout)
        except (EOFError, BrokenPipeError, OSError) as exc:
            code = proc.poll()
            raise RuntimeError(f"{self.name}: OR-Tools worker died (exit status {code}): "
                               f"{exc}") from None
        if not ok:
            raise RuntimeError(f"{self.name}: {reply}")
        return reply

    def start(self, n: int, delta: float) -> None:
        self.close()
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._n = int(n)
        self._k = 0
        self._call("start", (self.solver_id, self._n, float(delta), self._params()))

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
        proc = getattr(self, "_proc", None)
        self._proc = None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                pickle.dump(("close", None), proc.stdin)  # type: ignore[arg-type]
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()

    def __del__(self) -> None:
        self.close()


class GlopBackend(_WorkerBackend):
    """GLOP (primal/dual simplex) in a worker process; the model persists across solves."""

    name = "glop"
    description = "OR-Tools GLOP simplex, in a worker process (cannot share one with highspy)"
    solver_id = "GLOP"

    def __init__(self) -> None:
        pass


class PdlpBackend(_WorkerBackend):
    """PDLP (first-order primal-dual) in a worker process, to ``tolerance``."""

    name = "pdlp"
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
