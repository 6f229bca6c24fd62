"""Bookkeeping shared by LP backends: the restricted master as plain arrays.

Backends that cannot add columns to a live model (scipy, cvxpy, the OR-Tools worker
between processes) keep the master here and rebuild from it; all of them use
:func:`column_matrix` so the constraint matrix is built one way.
Rows 0..n-1 are the simplex rows (= 1), row n is the budget row (<= Δ).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench._plumbing.buffers import GrowingArrays


def check_columns(n: int, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate one add_columns call and return int64/float64 copies."""
    cols = np.asarray(cols, dtype=np.int64).ravel()
    cost = np.asarray(cost, dtype=float).ravel()
    budget = np.asarray(budget, dtype=float).ravel()
    if not (cols.shape == cost.shape == budget.shape):
        raise ValueError(f"add_columns: lengths differ ({cols.size}, {cost.size}, {budget.size})")
    if cols.size and (cols.min() < 0 or cols.max() >= n):
        raise ValueError(f"add_columns: input index out of range 0..{n - 1}")
    if not (np.all(np.isfinite(cost)) and np.all(np.isfinite(budget))):
        raise ValueError("add_columns: costs and budget coefficients must be finite")
    return cols, cost, budget


def column_matrix(n: int, cols: np.ndarray, budget: np.ndarray) -> sp.csc_array:
    """The (n + 1) x K constraint matrix: a one in row j_k, a_k in the budget row."""
    k = cols.size
    rows = np.empty(2 * k, dtype=np.int64)
    rows[0::2] = cols
    rows[1::2] = n
    vals = np.empty(2 * k)
    vals[0::2] = 1.0
    vals[1::2] = budget
    indptr = np.arange(0, 2 * k + 1, 2, dtype=np.int64)
    A = sp.csc_array((vals, rows, indptr), shape=(n + 1, k))
    A.eliminate_zeros()
    return A


class MasterArrays:
    """The restricted master's data, grown by add_columns, costs replaced by set_costs.

    The arrays live in buffers that double when full (SPPM adds a few hundred columns to
    a master of ~10^5-10^6 per iteration: concatenating would copy all of them each time);
    ``cols``, ``cost`` and ``budget`` are views of the filled part. ``counts[j]`` is the
    number of columns of input j, kept as columns arrive.
    """

    def __init__(self, n: int, delta: float) -> None:
        self.n = int(n)
        self.delta = float(delta)
        self._arrays = GrowingArrays(cols=np.zeros(0, dtype=np.int64), cost=np.zeros(0),
                                     budget=np.zeros(0))
        self.counts = np.zeros(self.n, dtype=np.int64)

    @property
    def size(self) -> int:
        return self._arrays.size

    @property
    def cols(self) -> np.ndarray:
        return self._arrays.view("cols")

    @property
    def cost(self) -> np.ndarray:
        return self._arrays.view("cost")

    @property
    def budget(self) -> np.ndarray:
        return self._arrays.view("budget")

    def add(self, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray) -> None:
        cols, cost, budget = check_columns(self.n, cols, cost, budget)
        self._arrays.append(cols=cols, cost=cost, budget=budget)
        self.counts += np.bincount(cols, minlength=self.n)

    def set_costs(self, cost: np.ndarray) -> None:
        cost = np.asarray(cost, dtype=float).ravel()
        if cost.shape != (self.size,):
            raise ValueError(f"set_costs: got {cost.size} costs for {self.size} columns")
        self.cost[:] = cost

    def uncovered_rows(self) -> np.ndarray:
        """Simplex rows with no column yet (the master would be infeasible)."""
        return np.flatnonzero(self.counts == 0)


class RebuildingBackend(pb.LPBackend):
    """Base of backends that rebuild the LP from :class:`MasterArrays` on every solve.

    Subclasses implement ``solve`` from ``self._m``; ``start`` may be extended to
    check options before the master is created.
    """

    def start(self, n: int, delta: float) -> None:
        self._m = MasterArrays(n, delta)

    def add_columns(self, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray) -> None:
        self._m.add(cols, cost, budget)

    def set_costs(self, cost: np.ndarray) -> None:
        self._m.set_costs(cost)
