"""``cvxpy``: the restricted master handed to any LP-capable solver cvxpy knows.

cvxpy's duals are Lagrange multipliers: non-negative for ``a x <= Δ`` and, for the
equalities ``S x == 1``, the y of ``c x + yᵀ(S x - 1)``; both are negated here to meet
the ``privbench.protocol.lp`` convention (reduced cost c - λ a - μ_j, λ <= 0). Rebuilt on every
solve (cold), so it is a reference, not a fast path. Do not pick GLOP or PDLP as the
solver in a process that has highspy loaded (google/or-tools#5246): use the ``glop`` /
``pdlp`` backends instead.
"""

from __future__ import annotations

import numpy as np

import privbench as pb

from ._master import RebuildingBackend, column_matrix


class CvxpyBackend(RebuildingBackend):
    """LP through cvxpy; ``solver`` is any installed cvxpy solver name (default CLARABEL).

    :param solver: the cvxpy solver name (an installed one, case-insensitive: ``CLARABEL``,
        ``HIGHS``, ``SCIPY``, ...; GLOP and PDLP are refused, use the glop / pdlp backends).
    """

    name = "cvxpy"
    citation = 'Diamond and Boyd, CVXPY: a Python-embedded modeling language for convex optimization, JMLR 2016'
    description = "any LP solver cvxpy has (default CLARABEL; HIGHS, SCIPY, ...)"
    requirements = ("cvxpy",)
    extra = "cvxpy"

    def __init__(self, solver: str = "CLARABEL") -> None:
        self.solver = solver

    def start(self, n: int, delta: float) -> None:
        self._refuse_ortools()
        super().start(n, delta)

    def _refuse_ortools(self) -> None:
        solver = str(self.solver).upper()
        if solver in ("GLOP", "PDLP"):
            raise pb.ValidationError(
                f"cvxpy: solver {solver} loads OR-Tools, which cannot share a process with "
                "highspy (google/or-tools#5246); use the glop / pdlp LP backends")

    def solve(self) -> pb.LPSolution:
        import cvxpy as cp

        m = self._m
        A = column_matrix(m.n, m.cols, m.budget).tocsr()
        x = cp.Variable(m.cost.size, nonneg=True)
        budget_row = A[m.n:]
        simplex = A[: m.n]
        cons = [budget_row @ x <= m.delta, simplex @ x == np.ones(m.n)]
        prob = cp.Problem(cp.Minimize(m.cost @ x), cons)
        try:
            prob.solve(solver=str(self.solver).upper())
        except cp.error.SolverError as exc:
            return pb.LPSolution("error", np.zeros(m.cost.size), np.nan, 0.0, np.zeros(m.n), 0,
                                 f"cvxpy: {exc}")
        if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            kind = "infeasible" if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE) \
                else "error"
            return pb.LPSolution(kind, np.zeros(m.cost.size), np.nan, 0.0, np.zeros(m.n), 0,
                                 f"cvxpy: {prob.status}")
        lam = -float(np.atleast_1d(cons[0].dual_value)[0])
        mu = -np.asarray(cons[1].dual_value, dtype=float).ravel()
        return pb.LPSolution("optimal", np.asarray(x.value, dtype=float).ravel(),
                             float(prob.value), min(lam, 0.0), mu, 0, prob.status)

    def solve_lp(self, lp: pb.LinearProgram) -> pb.LPResult:
        """The whole LP as one cvxpy problem (rows with finite bounds only)."""
        import cvxpy as cp

        self._refuse_ortools()
        A = lp.A.tocsr()
        x = cp.Variable(lp.shape[1])
        lo, up = np.asarray(lp.row_lower, float), np.asarray(lp.row_upper, float)
        eq = lo == up
        cons = []
        for mask, make in ((eq, lambda r: A[r] @ x == lo[r]),
                           (~eq & np.isfinite(up), lambda r: A[r] @ x <= up[r]),
                           (~eq & np.isfinite(lo), lambda r: A[r] @ x >= lo[r])):
            if mask.any():
                cons.append(make(mask))
        for bound, make in ((np.asarray(lp.col_lower, float), lambda c, b: x[c] >= b[c]),
                            (np.asarray(lp.col_upper, float), lambda c, b: x[c] <= b[c])):
            finite = np.flatnonzero(np.isfinite(bound))
            if finite.size:
                cons.append(make(finite, bound))
        prob = cp.Problem(cp.Minimize(np.asarray(lp.cost, float) @ x), cons)
        try:
            prob.solve(solver=str(self.solver).upper())
        except cp.error.SolverError as exc:
            return pb.LPResult("error", np.zeros(lp.shape[1]), np.nan, 0, f"cvxpy: {exc}")
        if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            kind = "infeasible" if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE) \
                else "error"
            return pb.LPResult(kind, np.zeros(lp.shape[1]), np.nan, 0, f"cvxpy: {prob.status}")
        return pb.LPResult("optimal", np.asarray(x.value, dtype=float).ravel(), float(prob.value),
                           0, prob.status)


@pb.hookimpl
def privbench_register_lp_backends() -> list[type]:
    return [CvxpyBackend]
