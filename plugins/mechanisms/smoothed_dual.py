"""``smoothed_dual``: the entropy-smoothed dual of problem (1) over all n² pairs, certified.

Problem (1): minimise I(A; B̂) over column-stochastic X with E[d] <= Δ. For every
decoder r(a | b̂) and ν >= 0 (Gibbs' inequality, I(X) = max_r Σ_ij X_ij c^r_ij, then
Lagrangian duality and Sion's minimax theorem: the objective is linear in X on a compact
convex set and concave in (r, ν))

    LB(r, ν) = -ν Δ + Σ_j min_i [c^r_ij + ν p(b_j) d_ij],
    c^r_ij = Σ_a p(a, b_j) log(r(a | b̂_i) / p(a)),

is a lower bound on the optimum, and max over (r, ν) equals it. LB is concave but not
smooth (a sum of minima). Following Nesterov (2005), "Smooth minimization of non-smooth
functions" (Math. Program. 103, 127-152), each min_i is replaced by the soft-min at
temperature τ, -τ log Σ_i exp(-·/τ) (per unit of input mass), which is smooth, below the
min by at most τ log n, and whose maximiser tends to LB's as τ -> 0. L-BFGS-B maximises
it over the decoder logits and log ν at decreasing τ (continuation, each stage warm
started from the last).

This is SPPM's ``dual`` mode (``_sppm.dual_mode``) without its active set: no
Frank-Wolfe warm-up and no column generation, the soft-min runs densely over every pair
(numba, O(|A| n²) per evaluation, parallel over inputs). That costs n² per evaluation
but needs no pricing and never misses a pair; hence ``max_n``.

Per stage it returns two certified numbers:

* U: the soft assignment (x_ij ∝ exp(-ĉ_ij / τ)) is the minimiser of I + τ Σ_j p_j
  Σ_i x_ij log x_ij on the budget, a primal point; a 1-D search on ν makes it spend
  exactly Δ (or less), and U is its true I(A; B̂);
* L: the exact hard-min LB(r, ν), computed in the same pass as every evaluation (the
  best over all evaluations is kept; the soft value itself is never reported).

It stops once U - L <= ``tol`` bits, or after ``max_rounds`` stages or ``max_seconds``.
"""

from __future__ import annotations

import math
import numbers
import time
from typing import Any

import numpy as np

import privbench as pb
from privbench._plumbing.blas import one_blas_thread
from privbench.measures.information import leakage_nats
from privbench.protocol.checks import finite_float, positive_int
from privbench.protocol.feasibility import constant_output, mix_into_budget

LN2 = math.log(2.0)
#: mapping entries below this are dropped from the returned mapping (then renormalised)
DUST = 1e-14


class SmoothedDual(pb.SizeLimited, pb.MappingMechanism):
    """Dense entropy-smoothed dual ascent (continuation on τ) with a certified gap ``gap_bits``.

    Parameters
    ----------
    tol : stop once U - L (the returned mapping's I minus the certified lower bound) is at
        most this (bits; default 1e-3).
    tau_start : the first temperature (nats per unit of input mass; default 1e-2).
    tau_ratio : each stage's τ is the last one times this (in (0, 1); default 0.3).
    max_rounds : τ stages at most (default 30).
    max_seconds : stop once the solver has run this long (seconds; default 600): a stage
        still running ends at its best point so far, whose primal point and bounds count.
    lbfgs_iterations : L-BFGS-B iterations per stage at most (default 3000).
    threads : threads for the dense passes when n >= 1024 (0 = numba's default, every core
        this process may use; 1 = serial; below n = 1024 they are always serial).
    max_n : refuse larger alphabets (default 4096): every evaluation costs |A| n² and the
        solver keeps two dense n x n arrays (at 4096, 268 MB); beyond, use ``sppm``.
    """

    name = "smoothed_dual"
    citation = 'Nesterov, Smooth minimization of non-smooth functions, Math. Program. 2005'
    description = "dense entropy-smoothed dual of (1) (Nesterov 2005), certified gap (gap_bits)"
    test_parameters = {"max_rounds": [3, 30]}

    def __init__(self, tol: float = 1e-3, tau_start: float = 1e-2, tau_ratio: float = 0.3,
                 max_rounds: int = 30, max_seconds: float = 600.0, lbfgs_iterations: int = 3000,
                 threads: int = 0, max_n: int = 4096) -> None:
        self.tol = tol
        self.tau_start = tau_start
        self.tau_ratio = tau_ratio
        self.max_rounds = max_rounds
        self.max_seconds = max_seconds
        self.lbfgs_iterations = lbfgs_iterations
        self.threads = threads
        self.max_n = max_n

    def check_params(self) -> None:
        finite_float(f"{self.name}: tol", self.tol, low=0.0)
        finite_float(f"{self.name}: tau_start", self.tau_start, low=0.0, strict_low=True)
        ratio = finite_float(f"{self.name}: tau_ratio", self.tau_ratio, low=0.0, strict_low=True)
        if ratio >= 1.0:
            raise pb.ValidationError(f"{self.name}: tau_ratio must be < 1 (τ must decrease); "
                                     f"got {self.tau_ratio!r}")
        finite_float(f"{self.name}: max_seconds", self.max_seconds, low=0.0, strict_low=True)
        super().check_params()  # max_n
        for name, low in (("max_rounds", 1), ("lbfgs_iterations", 1), ("threads", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                positive_int(f"{self.name}: {name}", value, minimum=low)  # raises, naming it

    size_advice = "or use sppm, which is sparse"

    def size_reason(self, n: int) -> str:
        """Every pair, densely."""
        return (f"smoothed_dual evaluates all n² = {n ** 2} pairs densely (|A| n² work per "
                "evaluation, two n x n arrays)")

    def prepare(self, problem: pb.PrivacyProblem, context: pb.RunContext) -> None:
        """Compile the numba kernels once per process on 3-symbol arrays, untimed (the
        kernels only ever see private float64 copies, so one specialisation serves all)."""
        super().prepare(problem, context)
        from privbench.plugins.mechanisms._dense_dual import compile_once

        compile_once()

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        t0 = time.perf_counter()
        n = problem.n
        D = problem.distortion.to_dense()
        k = constant_output(problem, delta)
        if k is not None:  # a constant output meets Δ: I = 0, certified by I >= 0
            X = np.zeros((n, n))
            X[k, :] = 1.0
            cert = pb.Certificate.of(0.0, 0.0, "perfect privacy (a constant output meets the "
                                     "budget)", trace=[[time.perf_counter() - t0, 0.0, 0.0]],
                                     converged=True, delta=delta)
            return self.result(X, **cert.to_stats(), budget_dual=0.0, rounds=0, evaluations=0)
        safe = D.argmin(axis=0)  # each input's least-distortion output
        safe_used = float(problem.p_b @ D[safe, np.arange(n)])
        if safe_used > delta:
            raise pb.ValidationError(f"{self.name}: no mapping meets delta = {delta:g}: "
                                     f"the least possible E[d] is {safe_used:.6g}")
        ties = (D[:, problem.p_b > 0] == D[safe, np.arange(n)][None, problem.p_b > 0]).sum(axis=0)
        if delta <= safe_used and np.all(ties == 1):  # the only feasible mapping
            X = np.zeros((n, n))
            X[safe, np.arange(n)] = 1.0
            bits = leakage_nats((X @ problem.joint.T).T, problem.p_a) / LN2
            cert = pb.Certificate.of(bits, bits, "the least-distortion mapping is the only "
                                     "feasible one", converged=True, delta=delta,
                                     trace=[[time.perf_counter() - t0, bits, bits]])
            return self.result(X, **cert.to_stats(), budget_dual=None, rounds=0, evaluations=0)
        import numba

        threads = numba.get_num_threads()
        if int(self.threads) > 1:
            numba.set_num_threads(min(int(self.threads), numba.config.NUMBA_NUM_THREADS))
        try:
            with one_blas_thread():
                return self._solve(problem, float(delta), D, safe, safe_used, t0)
        finally:
            numba.set_num_threads(threads)

    def _solve(self, problem: pb.PrivacyProblem, delta: float, D: np.ndarray, safe: np.ndarray,
               safe_used: float, t0: float) -> pb.MechanismResult:
        import numba
        import scipy.optimize as so

        from privbench.plugins.mechanisms._dense_dual import (
            LOG_NU_RANGE,
            LOGIT_BOUND,
            PARALLEL_MIN_N,
            DenseDual,
            OutOfTime,
        )

        n = problem.n
        dual = DenseDual(problem, delta, D, parallel=n >= PARALLEL_MIN_N
                         and int(self.threads) != 1 and numba.get_num_threads() > 1)
        tol, deadline = float(self.tol), t0 + float(self.max_seconds)
        progress = self.context.throttled()
        theta = dual.start()
        tau = float(self.tau_start)
        # ν's first estimate: the budget slope of an average input (the curve's chord),
        # then the ν at which the start decoder's soft assignment spends Δ
        log_nu = math.log(max(problem.prior_mi_bits * LN2, 1e-3) / max(float(
            (D @ problem.p_b).min()), 1e-300))
        found = dual.budget_nu(theta, log_nu, tau)
        log_nu = found if math.isfinite(found) else log_nu + LOG_NU_RANGE / 2
        nu_bounds = (log_nu - LOG_NU_RANGE, log_nu + LOG_NU_RANGE)
        bounds = [(-LOGIT_BOUND, LOGIT_BOUND)] * theta.size + [nu_bounds]
        best_ub, best_WT = math.inf, None
        trace: list[list[float]] = []
        stages: list[dict[str, Any]] = []
        stop = "rounds exhausted"
        par = np.concatenate([theta.ravel(), [log_nu]])
        best_par: list[Any] = [math.inf, par]  # the best smoothed point of the stage

        def fun(x: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
            if time.perf_counter() >= deadline:
                raise OutOfTime
            value, grad = dual.objective(x, tau)
            if value < best_par[0]:
                best_par[:] = [value, x.copy()]
            return value, grad

        for rnd in range(int(self.max_rounds)):
            best_par[0] = math.inf
            try:
                res = so.minimize(fun, par, args=(tau,), jac=True, method="L-BFGS-B",
                                  bounds=bounds, options={"maxiter": int(self.lbfgs_iterations),
                                                          "maxcor": 20})
                par, nit, nfev = res.x, int(res.nit), int(res.nfev)
            except OutOfTime:  # max_seconds inside a stage: its best point so far
                par, nit, nfev = best_par[1], -1, -1
            theta, log_nu = par[:-1].reshape(theta.shape), float(par[-1])
            ub, WT = dual.primal(theta, log_nu, tau)
            if ub < best_ub:
                best_ub, best_WT = ub, WT
                dual.posterior_bound(WT, math.exp(log_nu))
            seconds = time.perf_counter() - t0
            upper, lower = best_ub / LN2, dual.best_lb / LN2
            trace.append([seconds, upper, lower])
            stages.append({"tau": tau, "iterations": nit, "evaluations": nfev,
                           "upper_bits": upper, "lower_bits": lower, "seconds": seconds})
            progress(stage=rnd, tau=tau, upper_bits=upper, lower_bits=lower,
                     gap_bits=upper - lower)
            if upper - lower <= tol:
                stop = "tolerance"
                break
            if time.perf_counter() >= deadline:
                stop = "max_seconds"
                break
            tau *= float(self.tau_ratio)
        X, repair = _finish(best_WT, D, problem.p_b, safe, safe_used, delta)
        ub_bits = leakage_nats((X @ problem.joint.T).T, problem.p_a) / LN2
        lb_bits = dual.best_lb / LN2
        cert = pb.Certificate.of(ub_bits, lb_bits, stop, trace=trace,
                                 converged=max(ub_bits - lb_bits, 0.0) <= tol, delta=delta)
        return self.result(X, **cert.to_stats(), budget_dual=dual.best_nu, rounds=len(stages),
                           stages=stages, evaluations=dual.evaluations, repair_theta=repair,
                           tau_final=tau)


def _finish(WT: np.ndarray | None, D: np.ndarray, p_b: np.ndarray, safe: np.ndarray,
            safe_used: float, delta: float) -> tuple[np.ndarray, float]:
    """The best soft assignment as an exactly column-stochastic X within Δ.

    Dust (< ``DUST``) is dropped and columns renormalised; if that (or rounding) spends
    more than Δ, X is mixed with each input's least-distortion output just enough.
    """
    n = D.shape[0]
    X_safe = np.zeros((n, n))
    X_safe[safe, np.arange(n)] = 1.0
    if WT is None:
        return X_safe, 0.0
    X = np.where(WT.T < DUST, 0.0, WT.T)
    X /= X.sum(axis=0, keepdims=True)
    used = float(p_b @ (D * X).sum(axis=0))
    X, theta = mix_into_budget(X, X_safe, used, safe_used, delta)
    return X, theta


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [SmoothedDual]
