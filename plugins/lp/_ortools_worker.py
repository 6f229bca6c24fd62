"""OR-Tools LP worker: a separate interpreter that owns a pywraplp model.

Run as a script (``python _ortools_worker.py``), never imported into the host
process: OR-Tools 9.15 and highspy >= 1.15 both ship ``libhighs.so.1`` and cannot be
loaded into one process (google/or-tools#5246). Requests and replies are pickled
``(command, payload)`` tuples on stdin and ``(ok, reply, cpu_seconds)`` on the original
stdout, ``cpu_seconds`` being this process's CPU time so far (the host counts the CPU
time of its solves wherever they ran); the solver's own output goes to stderr so it
cannot corrupt the stream. One worker serves many masters in turn (``start`` replaces
the model, ``reset`` drops it), so a solve never pays for starting an interpreter or
importing OR-Tools. Only numpy and OR-Tools are imported.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from typing import Any

# this file's folder holds privbench's own ``ortools.py``: keep it off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402


class Master:
    """The restricted master of ``privbench.protocol.lp`` as a live pywraplp model."""

    def __init__(self, solver_id: str, n: int, delta: float, params: str) -> None:
        from ortools.linear_solver import pywraplp

        self.solver = pywraplp.Solver.CreateSolver(solver_id)
        if self.solver is None:
            raise RuntimeError(f"OR-Tools has no solver {solver_id!r}")
        if params and not self.solver.SetSolverSpecificParametersAsString(params):
            raise RuntimeError(f"OR-Tools rejected parameters for {solver_id}: {params!r}")
        inf = self.solver.infinity()
        self.inf = inf
        self.rows = [self.solver.Constraint(1.0, 1.0) for _ in range(n)]
        self.budget = self.solver.Constraint(-inf, float(delta))
        self.objective = self.solver.Objective()
        self.objective.SetMinimization()
        self.vars: list[Any] = []

    def add(self, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray) -> None:
        for j, c, a in zip(cols.tolist(), cost.tolist(), budget.tolist(), strict=True):
            v = self.solver.NumVar(0.0, self.inf, "")
            self.rows[j].SetCoefficient(v, 1.0)
            if a != 0.0:
                self.budget.SetCoefficient(v, a)
            self.objective.SetCoefficient(v, c)
            self.vars.append(v)

    def set_costs(self, cost: np.ndarray) -> None:
        for v, c in zip(self.vars, cost.tolist(), strict=True):
            self.objective.SetCoefficient(v, c)

    def solve(self) -> dict[str, Any]:
        from ortools.linear_solver import pywraplp

        status = self.solver.Solve()
        iters = int(self.solver.iterations())
        if status not in (pywraplp.Solver.OPTIMAL,):
            kind = "infeasible" if status == pywraplp.Solver.INFEASIBLE else "error"
            return {"status": kind, "iterations": iters, "message": f"OR-Tools status {status}"}
        return {
            "status": "optimal",
            "x": np.array([v.solution_value() for v in self.vars]),
            "objective": self.objective.Value(),
            "budget_dual": self.budget.dual_value(),
            "simplex_duals": np.array([r.dual_value() for r in self.rows]),
            "iterations": iters,
        }


def main() -> int:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the solver prints goes to stderr
    inp = sys.stdin.buffer
    master: Master | None = None
    while True:
        try:
            command, payload = pickle.load(inp)
        except EOFError:
            return 0
        try:
            if command == "start":
                master = Master(*payload)
                reply: Any = None
            elif command == "add":
                assert master is not None
                master.add(*payload)
                reply = None
            elif command == "reset":
                master = None
                reply = None
            elif command == "costs":
                assert master is not None
                master.set_costs(payload)
                reply = None
            elif command == "solve":
                assert master is not None
                reply = master.solve()
            elif command == "close":
                return 0
            else:
                raise ValueError(f"unknown command {command!r}")
            pickle.dump((True, reply, time.process_time()), out,
                        protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - reported to the host process
            pickle.dump((False, f"{type(exc).__name__}: {exc}", time.process_time()), out,
                        protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
