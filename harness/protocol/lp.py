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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

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
        raise NotImplementedError

    def close(self) -> None:
        """Release solver resources (worker processes, models)."""
        return None

    def __enter__(self) -> LPBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
