"""``optimal``: the exact convex program (1) of the SPPM paper, through cvxpy.

minimise I(A; B̂) = Σ_{a,i} rel_entr(p(a, b̂_i), p(a) p(b̂_i)) over column-stochastic X
with Σ_ij p(b_j) d(b̂_i, b_j) X[i, j] <= Δ. ``rel_entr`` is jointly convex and
cvxpy hands it to an exponential-cone solver (Clarabel by default). The program has
n² variables, so it is a reference for small alphabets: above ``max_n`` it refuses
(the limit can be raised). The solver's point is repaired to be exactly
column-stochastic and within budget before it is returned.
"""

from __future__ import annotations

import math
import numbers
import time

import numpy as np

import privbench as pb

from ._sppm.feasible import mix_into_budget
from ._sppm.leakage import leakage_nats

LN2 = math.log(2.0)


class Optimal(pb.MappingMechanism):
    """Exact optimum of problem (1) with cvxpy; dense n x n, for n <= ``max_n``."""

    name = "optimal"
    description = "exact convex program (1) via cvxpy (Clarabel); small alphabets only"
    requirements = ("cvxpy",)
    extra = "cvxpy"
    parameters = {"solver": ["CLARABEL"]}
    test_parameters = {"solver": ["CLARABEL"]}

    def __init__(self, solver: str = "CLARABEL", max_n: int = 300, verbose: bool = False) -> None:
        self.solver = solver
        self.max_n = max_n
        self.verbose = verbose

    def _refusal(self, n: int) -> str | None:
        if not isinstance(self.max_n, numbers.Integral) or self.max_n < 1:
            raise pb.ValidationError(f"optimal: max_n must be a positive integer; got "
                                     f"{self.max_n!r}")
        if n > self.max_n:
            return (f"optimal solves a dense convex program with n² = {n * n} variables; "
                    f"n = {n} exceeds max_n = {self.max_n} (raise it with optimal:max_n={n} "
                    "if you have the memory and time, or use sppm)")
        return None

    def skip(self, problem: pb.PrivacyProblem) -> tuple[bool, str | None]:
        reason = self._refusal(problem.n)
        return (reason is not None), reason

    def solve(self, problem: pb.PrivacyProblem, delta: float, *, seed: int | None = None
              ) -> pb.MechanismResult:
        import cvxpy as cp

        delta = problem.check_delta(delta)
        reason = self._refusal(problem.n)
        if reason:
            raise pb.ValidationError(reason)
        solver = str(self.solver).upper()
        if solver not in cp.installed_solvers():
            raise pb.ValidationError(f"optimal: solver {self.solver!r} is not installed; "
                                     f"cvxpy has {', '.join(cp.installed_solvers())}")
        n = problem.n
        D = problem.distortion.to_dense()
        cost = D * problem.p_b[None, :]  # cost[i, j] = p(b_j) d(b̂_i, b_j)
        identity_cost = float(np.trace(cost))
        if identity_cost > delta:
            raise pb.ValidationError(f"optimal: the identity mapping needs E[d] = "
                                     f"{identity_cost:.6g} > delta = {delta:g}")
        live = problem.p_a > 0
        P = problem.joint[live]
        p_a = problem.p_a[live]
        X = cp.Variable((n, n), nonneg=True)
        Q = P @ X.T
        q = cp.sum(Q, axis=0)
        T = p_a.reshape(-1, 1) @ cp.reshape(q, (1, n), order="C")
        objective = cp.Minimize(cp.sum(cp.rel_entr(Q, T)))
        constraints = [cp.sum(X, axis=0) == 1, cp.sum(cp.multiply(cost, X)) <= delta]
        prob = cp.Problem(objective, constraints)
        t = time.perf_counter()
        try:
            prob.solve(solver=solver, verbose=bool(self.verbose))
        except cp.error.SolverError as exc:
            raise pb.PrivbenchError(f"optimal: solver {solver} failed: {exc}") from None
        elapsed = time.perf_counter() - t
        if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or X.value is None:
            raise pb.PrivbenchError(f"optimal: solver {solver} ended with status {prob.status}")
        Xv = np.maximum(np.asarray(X.value, dtype=float), 0.0)
        sums = Xv.sum(axis=0)
        bad = sums <= 0
        Xv[:, bad] = np.eye(n)[:, bad]
        Xv /= Xv.sum(axis=0, keepdims=True)
        used = float(np.sum(cost * Xv))
        Xv, theta = mix_into_budget(Xv, np.eye(n), used, identity_cost, delta)
        Qv = Xv @ problem.joint.T
        value = leakage_nats(Qv.T, problem.p_a) / LN2
        return self.result(Xv, solver=solver, solver_status=prob.status,
                           solver_objective_bits=float(prob.value) / LN2,
                           objective_bits=value, repair_theta=theta, solve_time_s=elapsed)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Optimal]
