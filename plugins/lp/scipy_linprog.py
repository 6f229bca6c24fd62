"""``scipy``: ``scipy.optimize.linprog(method="highs")``, rebuilt and solved from scratch.

The baseline that the warm-started ``highs`` backend is measured against: linprog
cannot keep a basis between calls. Its marginals are ∂objective/∂rhs, which is the
``privbench.protocol.lp`` convention (λ <= 0 for the budget row).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._master import RebuildingBackend, column_matrix


class ScipyLinprogBackend(RebuildingBackend):
    """Cold solves with scipy's bundled HiGHS (dual simplex by default).

    :param method: ``scipy.optimize.linprog``'s ``method``: ``highs`` (HiGHS chooses),
        ``highs-ds`` (dual simplex) or ``highs-ipm`` (interior point).
    """

    name = "scipy"
    citation = 'Virtanen et al., SciPy 1.0, Nature Methods 2020'
    description = "scipy.optimize.linprog(method='highs'), cold re-solves (baseline)"
    requirements = ("scipy",)

    def __init__(self, method: str = "highs") -> None:
        self.method = method

    def solve(self) -> pb.LPSolution:
        from scipy.optimize import linprog

        m = self._m
        A = column_matrix(m.n, m.cols, m.budget).tocsr()
        res = linprog(m.cost, A_ub=A[m.n:], b_ub=[m.delta], A_eq=A[: m.n], b_eq=np.ones(m.n),
                      bounds=(0, None), method=self.method)
        iters = int(getattr(res, "nit", 0) or 0)
        if res.status != 0:
            kind = "infeasible" if res.status == 2 else "error"
            return pb.LPSolution(kind, np.zeros(m.cost.size), np.nan, 0.0, np.zeros(m.n), iters,
                                 f"linprog: {res.message}")
        lam = float(res.ineqlin.marginals[0])
        return pb.LPSolution("optimal", np.asarray(res.x, dtype=float), float(res.fun),
                             min(lam, 0.0), np.asarray(res.eqlin.marginals, dtype=float), iters)

    def solve_lp(self, lp: pb.LinearProgram) -> pb.LPResult:
        """linprog on the LP split into equality rows and (both-sided) inequality rows."""
        from scipy.optimize import linprog

        A = lp.A.tocsr()
        lo, up = np.asarray(lp.row_lower, float), np.asarray(lp.row_upper, float)
        eq = lo == up
        has_up = ~eq & np.isfinite(up)
        has_lo = ~eq & np.isfinite(lo)
        A_ub = sp.vstack([A[has_up], -A[has_lo]]).tocsr()
        b_ub = np.concatenate([up[has_up], -lo[has_lo]])
        bounds = np.column_stack([lp.col_lower, lp.col_upper]).astype(float)
        res = linprog(lp.cost, A_ub=A_ub if A_ub.shape[0] else None,
                      b_ub=b_ub if b_ub.size else None, A_eq=A[eq] if eq.any() else None,
                      b_eq=lo[eq] if eq.any() else None, bounds=bounds, method=self.method)
        iters = int(getattr(res, "nit", 0) or 0)
        if res.status != 0:
            kind = "infeasible" if res.status == 2 else "error"
            return pb.LPResult(kind, np.zeros(lp.shape[1]), np.nan, iters, f"linprog: {res.message}")
        return pb.LPResult("optimal", np.asarray(res.x, dtype=float), float(res.fun), iters)


@pb.hookimpl
def privbench_register_lp_backends() -> list[type]:
    return [ScipyLinprogBackend]
