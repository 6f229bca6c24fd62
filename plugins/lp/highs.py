"""``highs``: HiGHS through highspy, one persistent model warm-started across solves.

The model is built once; ``add_columns`` appends to it and ``set_costs`` changes the
objective in place, so HiGHS keeps its basis. Re-solves use primal simplex: after a
cost change or new columns the old basis is still primal feasible, and primal
simplex from it takes a few pivots where a cold solve takes thousands. The first
solve starts from a crash basis (one basic column per simplex row, the one with the
smallest budget coefficient, plus the budget slack), which for SPPM's diagonal start
is the identity mapping. HiGHS' row duals already follow ``privbench.protocol.lp``'s sign
convention (reduced cost c - Aᵀy).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

import privbench as pb

from ._master import check_columns

_INF = 1e30


def quiet_highs(highspy: Any) -> Any:
    """A new ``highspy.Highs()`` without its start-up banner on stdout.

    highspy >= 1.8 prints the banner from C++ on the first construction in a process,
    before any option can be set, which breaks ``--json`` output; fd 1 is pointed at
    /dev/null for the construction only.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def usable_threads(highspy: Any, threads: int) -> int:
    """``threads`` for HiGHS's ``threads`` option if this process's HiGHS can run with it,
    else 0 (run on the scheduler as it is).

    HiGHS starts one task scheduler per process, sized by the ``threads`` option of the
    first model run (0: its default count); a later model asking for another count fails
    its run (``HighsStatus.kError``, model status Not Set: "Option 'threads' is set to 1
    but the scheduler has already been initialized to use 2 threads"), e.g. after cvxpy
    solved with HiGHS at its default in the same interpreter. An empty model with the
    option is run once to find out (0.4 ms). Where no scheduler runs yet, the probe
    starts it with ``threads``, as the caller's own first run would: the CLI's runs are
    unchanged. ``Highs.resetGlobalScheduler`` would restore the count, but under every
    other HiGHS model of the process (another thread's included).
    """
    if int(threads) == 0:
        return 0
    probe = quiet_highs(highspy)
    probe.setOptionValue("output_flag", False)
    probe.setOptionValue("threads", int(threads))
    return int(threads) if probe.run() != highspy.HighsStatus.kError else 0


class HighsBackend(pb.LPBackend):
    """Persistent highspy model, primal simplex warm starts, presolve off.

    :param threads: HiGHS' ``threads`` option: the threads it may use (1: serial).
    :param simplex_strategy: HiGHS' ``simplex_strategy`` for the restricted masters (0 lets it
        choose, 1-3 dual simplex variants, 4 primal simplex, the default; whole LPs let HiGHS
        choose).
    :param warm: keep the basis between solves of the restricted master (``false`` clears it
        before each solve, as a cold solve would: a measurement aid).
    """

    name = "highs"
    citation = 'Huangfu and Hall, Parallelizing the dual revised simplex method, Math. Prog. Comp. 2018'
    description = "HiGHS via highspy: persistent model, warm-started primal simplex"
    requirements = ("highspy",)
    extra = "highs"

    def __init__(self, threads: int = 1, simplex_strategy: int = 4, warm: bool = True) -> None:
        self.threads = threads
        self.simplex_strategy = simplex_strategy
        self.warm = warm

    def start(self, n: int, delta: float) -> None:
        import highspy

        self._hs = highspy
        h = quiet_highs(highspy)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")
        h.setOptionValue("threads", usable_threads(highspy, int(self.threads)))
        h.setOptionValue("simplex_strategy", int(self.simplex_strategy))
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        h.setOptionValue("dual_feasibility_tolerance", 1e-9)
        lower = np.concatenate([np.ones(n), [-_INF]])
        upper = np.concatenate([np.ones(n), [float(delta)]])
        h.addRows(n + 1, lower, upper, 0, np.zeros(0, np.int32), np.zeros(0, np.int32),
                  np.zeros(0))
        self._h = h
        self._n = int(n)
        self._k = 0
        self._cols = np.zeros(0, dtype=np.int64)
        self._budget = np.zeros(0)
        self._solved = False

    def add_columns(self, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray) -> None:
        cols, cost, budget = check_columns(self._n, cols, cost, budget)
        m = cols.size
        if m == 0:
            return
        nz = budget != 0
        counts = 1 + nz.astype(np.int32)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
        indices = np.empty(int(counts.sum()), dtype=np.int32)
        values = np.empty(indices.size)
        indices[starts] = cols
        values[starts] = 1.0
        second = starts[nz] + 1
        indices[second] = self._n
        values[second] = budget[nz]
        self._h.addCols(m, cost, np.zeros(m), np.full(m, _INF), indices.size, starts, indices,
                        values)
        self._cols = np.concatenate([self._cols, cols])
        self._budget = np.concatenate([self._budget, budget])
        self._k += m

    def set_costs(self, cost: np.ndarray) -> None:
        cost = np.asarray(cost, dtype=float).ravel()
        if cost.size != self._k:
            raise ValueError(f"set_costs: got {cost.size} costs for {self._k} columns")
        self._h.changeColsCost(self._k, np.arange(self._k, dtype=np.int32), cost)

    def _crash_basis(self) -> None:
        """Basic: per simplex row the column with the least budget use, and the budget slack."""
        hs, n = self._hs, self._n
        order = np.lexsort((self._budget, self._cols))
        first = order[np.concatenate([[True], self._cols[order][1:] != self._cols[order][:-1]])]
        if first.size != n:
            return  # some row has no column: let HiGHS report infeasibility
        basis = hs.HighsBasis()
        col_status = [hs.HighsBasisStatus.kLower] * self._k
        for k in first.tolist():
            col_status[k] = hs.HighsBasisStatus.kBasic
        row_status = [hs.HighsBasisStatus.kLower] * n + [hs.HighsBasisStatus.kBasic]
        basis.col_status = col_status
        basis.row_status = row_status
        basis.valid = True
        basis.alien = False
        self._h.setBasis(basis)

    def solve(self) -> pb.LPSolution:
        if not self.warm:  # measurement aid: forget the basis, as a cold solve would
            self._h.clearSolver()
        elif not self._solved:
            self._crash_basis()
        self._solved = True
        self._h.run()
        status = self._h.getModelStatus()
        info = self._h.getInfo()
        iters = int(info.simplex_iteration_count)
        if status != self._hs.HighsModelStatus.kOptimal:
            text = self._h.modelStatusToString(status)
            kind = "infeasible" if status == self._hs.HighsModelStatus.kInfeasible else "error"
            return pb.LPSolution(kind, np.zeros(self._k), np.nan, 0.0, np.zeros(self._n),
                                 iters, f"HiGHS: {text}")
        sol = self._h.getSolution()
        x = np.asarray(sol.col_value, dtype=float)
        y = np.asarray(sol.row_dual, dtype=float)
        return pb.LPSolution("optimal", x, float(info.objective_function_value),
                             float(min(y[self._n], 0.0)), y[: self._n].copy(), iters)

    def solve_lp(self, lp: pb.LinearProgram) -> pb.LPResult:
        """One cold solve of a whole LP (presolve on, HiGHS chooses simplex or IPM)."""
        import highspy

        h = quiet_highs(highspy)
        for key, value in (("output_flag", False),
                           ("threads", usable_threads(highspy, int(self.threads))),
                           ("primal_feasibility_tolerance", 1e-9),
                           ("dual_feasibility_tolerance", 1e-9)):
            h.setOptionValue(key, value)
        rows, cols = lp.shape
        inf = highspy.kHighsInf
        h.addCols(cols, np.asarray(lp.cost, float), _clip_inf(lp.col_lower, inf),
                  _clip_inf(lp.col_upper, inf), 0, np.zeros(0, np.int32), np.zeros(0, np.int32),
                  np.zeros(0))
        A = lp.A.tocsr()
        h.addRows(rows, _clip_inf(lp.row_lower, inf), _clip_inf(lp.row_upper, inf), A.nnz,
                  A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32),
                  A.data.astype(float))
        h.run()
        status = h.getModelStatus()
        info = h.getInfo()
        iters = int(info.simplex_iteration_count) + int(info.ipm_iteration_count)
        if status != highspy.HighsModelStatus.kOptimal:
            kind = "infeasible" if status == highspy.HighsModelStatus.kInfeasible else "error"
            return pb.LPResult(kind, np.zeros(cols), np.nan, iters,
                               f"HiGHS: {h.modelStatusToString(status)}")
        x = np.asarray(h.getSolution().col_value, dtype=float)
        return pb.LPResult("optimal", x, float(info.objective_function_value), iters)

    def close(self) -> None:
        self._h = None  # type: ignore[assignment]


def _clip_inf(bound: np.ndarray, inf: float) -> np.ndarray:
    """Bounds with ±np.inf replaced by HiGHS' own infinity."""
    return np.clip(np.asarray(bound, dtype=float), -inf, inf)


@pb.hookimpl
def privbench_register_lp_backends() -> list[type]:
    return [HighsBackend]
