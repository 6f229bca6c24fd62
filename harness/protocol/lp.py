"""The LP backend protocol: an incremental restricted master problem.

SPPM's linearised step is the LP (SPPM paper, problem (4)) over the active columns
k = 1..K, each column a pair (i_k, j_k) = (output b̂_i, input b_j)::

    minimise    Σ_k c_k x_k
    subject to  Σ_k a_k x_k <= Δ                  (budget row, a_k = p(b_j) d(b̂_i, b_j))
                Σ_{k: j_k = j} x_k = 1   for all j (simplex rows)
                x >= 0

Sign convention (one for all backends): duals y satisfy reduced cost
``r_k = c_k - λ a_k - μ_{j_k}``, so at an optimum r_k >= 0 for every column, the
budget dual λ <= 0 and the simplex duals μ_j are free. A column (i, j) outside the
master prices out (improves the LP) iff ``c_ij - λ a_ij - μ_j < 0``.

Columns only ever grow; costs change every Frank-Wolfe iteration. Backends that can
warm start (highspy) keep their basis across ``solve`` calls.

One-shot LPs (optional): mechanisms whose LP is not a restricted master (extra rows
such as t_b̂ >= W(b̂|a), extra variables) hand a whole :class:`LinearProgram` to
:meth:`LPBackend.solve_lp`; a backend that implements it says so through
:meth:`LPBackend.solves_lp`. Only primal values are returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from privbench.protocol.plugin import Parametrized


@dataclass
class LPSolution:
    """Primal and dual solution of the restricted master.

    :param status: ``optimal``, ``infeasible`` or ``error``
    :param x: value of every column, in the order columns were added
    :param budget_dual: λ (<= 0), see the module docstring
    :param simplex_duals: μ_j for j in range(n)
    """

    status: str
    x: np.ndarray
    objective: float
    budget_dual: float
    simplex_duals: np.ndarray
    iterations: int = 0
    message: str = ""


@dataclass(frozen=True)
class LinearProgram:
    """minimise cost·x subject to row_lower <= A x <= row_upper, col_lower <= x <= col_upper.

    ``A`` is scipy.sparse (rows x columns); infinite bounds are ``±np.inf``; an equality
    row has ``row_lower == row_upper``.
    """

    cost: np.ndarray
    A: sp.csr_array
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of the constraint matrix."""
        return self.A.shape


@dataclass
class LPResult:
    """Primal solution of a one-shot :class:`LinearProgram`.

    :param status: ``optimal``, ``infeasible`` or ``error`` (then ``x`` is meaningless)
    :param x: value of every column
    :param objective: cost·x
    :param message: the solver's own words, for errors
    """

    status: str
    x: np.ndarray
    objective: float
    iterations: int = 0
    message: str = ""


class LPBackend(Parametrized):
    """Base of LP backend plugins. Required: start, add_columns, set_costs, solve."""

    kind: ClassVar[str] = "lp_backend"

    def start(self, n: int, delta: float) -> None:
        """Create an empty master with n simplex rows and budget Δ."""
        raise NotImplementedError

    def add_columns(self, cols: np.ndarray, cost: np.ndarray, budget: np.ndarray) -> None:
        """Append columns: input index j, objective c, budget coefficient a (all length m)."""
        raise NotImplementedError

    def set_costs(self, cost: np.ndarray) -> None:
        """Replace the objective of all columns (length = number of columns added)."""
        raise NotImplementedError

    def solve(self) -> LPSolution:
        """Solve the current master to optimality: the primal values of the columns and the
        duals λ (budget row, <= 0) and μ_j (simplex rows), in the module's sign convention."""
        raise NotImplementedError

    def solve_lp(self, lp: LinearProgram) -> LPResult:
        """Solve one whole LP from scratch (optional; see :meth:`solves_lp`)."""
        raise NotImplementedError(f"LP backend {self.name!r} solves restricted masters only")

    @classmethod
    def solves_lp(cls) -> bool:
        """True when the backend implements :meth:`solve_lp` (one-shot general LPs)."""
        return cls.solve_lp is not LPBackend.solve_lp

    def close(self) -> None:
        """Release solver resources (worker processes, models)."""
        return None

    def __enter__(self) -> LPBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
