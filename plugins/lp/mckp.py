"""``mckp``: the restricted master solved exactly by its multiple-choice knapsack structure.

No general LP solver: one budget row plus one simplex row per input is the LP
relaxation of a multiple-choice knapsack problem, solved in closed form by lower
convex hulls and a greedy on slopes (:mod:`._mckp_kernel`). Exact (the returned duals
prove optimality), O(|V| log |V|) per solve, no basis to keep.
"""

from __future__ import annotations

import numpy as np

import privbench as pb

from ._master import MasterArrays


class MCKPBackend(pb.LPBackend):
    """Exact greedy on the lower hulls; the column order is rebuilt only when columns grow."""

    name = "mckp"
    citation = ('Kellerer, Pferschy, Pisinger, Knapsack Problems, Springer 2004 (multiple-choice '
                'knapsack); Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving '
                'Mappings, UAI 2014')
    description = "exact multiple-choice knapsack LP (hulls + greedy), O(|V| log |V|), numba"
    requirements = ("numba",)

    def start(self, n: int, delta: float) -> None:
        self._m = MasterArrays(n, delta)
        self._order: tuple[np.ndarray, np.ndarray] | None = None
        self._sorted: np.ndarray | None = None  # order of the columns sorted so far

    def add_columns(self, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray) -> None:
        before = self._m.size
        self._m.add(cols, cost, budget)
        if self._m.size > before:
            self._order = None

    def set_costs(self, cost: np.ndarray) -> None:
        self._m.set_costs(cost)

    def solve(self) -> pb.LPSolution:
        m = self._m
        missing = m.uncovered_rows() if self._order is None else np.zeros(0, dtype=np.int64)
        if missing.size:
            return pb.LPSolution("infeasible", np.zeros(m.cost.size), np.nan, 0.0, np.zeros(m.n),
                                 0, f"mckp: inputs without a column: {missing[:5].tolist()}")
        if self._order is None:
            from ._mckp_kernel import group_order  # numba: imported where it is used

            self._order = group_order(m.cols, m.budget, m.n, self._sorted, m.counts)
            self._sorted = self._order[0]
        from ._mckp_kernel import OPTIMAL, solve_mckp

        status, x, lam, mu, objective = solve_mckp(m.cost, m.budget, *self._order, m.delta)
        if status != OPTIMAL:
            return pb.LPSolution("infeasible", x, np.nan, 0.0, mu, 0,
                                 "mckp: the least-budget columns exceed the budget")
        return pb.LPSolution("optimal", x, objective, lam, mu, 0)


@pb.hookimpl
def privbench_register_lp_backends() -> list[type]:
    return [MCKPBackend]
