"""``optimal``: the exact convex program (1) of the SPPM paper, through cvxpy.

minimise I(A; B̂) = Σ_{a,i} rel_entr(p(a, b̂_i), p(a) p(b̂_i)) over column-stochastic X
with Σ_ij p(b_j) d(b̂_i, b_j) X[i, j] <= Δ. ``rel_entr`` is jointly convex and
cvxpy hands it to an exponential-cone solver (Clarabel by default). The program has
n² variables, so it is a reference for small alphabets: above ``max_n`` it refuses
(the limit can be raised). The solver's point is repaired to be exactly
column-stochastic and within budget before it is returned.

Robustness: the joint is scaled so the cone entries are O(1) (unscaled, Clarabel stalls
with InsufficientProgress on census-like data); a budget that affords a constant output
is answered in closed form (I = 0); if the chosen solver fails or is only
``optimal_inaccurate``, a chain of fallbacks runs (Clarabel with cautious settings, the
unscaled program, then other installed exponential-cone solvers: ECOS, SCS) and the
repaired candidate with the least true I is returned. Stats record ``solver_used``,
``solver_status`` (inaccurate stays inaccurate), every attempt, and the certificate of
:class:`privbench.Certificate` (``objective_bits`` is the true I(A; B̂) of the returned
mapping; ``converged`` is the solver's status ``optimal``). ``fallback=False`` tries the solver once.

Certified: when the first solve is not ``optimal``, the perfect-privacy LP (HiGHS) is tried
before any fallback: if a mapping with B̂ independent of A fits in Δ, it is the optimum
(I* = 0). Where the decoder bound leaves more than ``REFINE_ABOVE_BITS``, unused outputs
get decoders of their own (:func:`refined_lower_bound`). On specs/toy.toml every budget
ends ``optimal`` with gap_bits <= 1.7e-5 (was 0.012 at Δ = 4 and 16, and "inaccurate"
after 14-29 s of SCS at Δ = 256; tests/test_optimal_certified.py).
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

import privbench as pb
from privbench.measures.information import leakage_nats
from privbench.protocol.feasibility import constant_output, mix_into_budget

LN2 = math.log(2.0)
#: solvers this process has already set up (see ``Optimal.prepare``)
_WARMED: set[str] = set()


class Optimal(pb.SizeLimited, pb.MappingMechanism):
    """Exact optimum of problem (1) with cvxpy; dense n x n, for n <= ``max_n``.

    :param solver: the cvxpy exponential-cone solver tried first (an installed one, e.g.
        ``CLARABEL``, ``ECOS``, ``SCS``; case-insensitive).
    :param max_n: the largest alphabet n it solves (the program has n² variables); a larger
        problem is skipped.
    :param verbose: let the solver print its progress (to stderr).
    :param fallback: when the first solve is not ``optimal``, try the fallback chain
        (cautious Clarabel, the unscaled program, the other installed solvers) and keep the
        best; ``false`` solves once.
    """

    name = "optimal"
    citation = ('Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 '
                '(problem (1)); Calmon and Fawaz, Privacy against statistical inference, Allerton '
                '2012; Diamond and Boyd, CVXPY, JMLR 2016')
    reference_rank = 1  # exact, but small alphabets only
    description = "exact convex program (1) via cvxpy (Clarabel); small alphabets only"
    requirements = ("cvxpy",)
    extra = "cvxpy"
    test_parameters = {"solver": ["CLARABEL"]}

    def __init__(self, solver: str = "CLARABEL", max_n: int = 300, verbose: bool = False,
                 fallback: bool = True) -> None:
        self.solver = solver
        self.fallback = fallback
        self.max_n = max_n
        self.verbose = verbose

    def check_params(self) -> None:
        """max_n (:class:`pb.SizeLimited`), then the solver: a name cvxpy has installed."""
        super().check_params()
        if not isinstance(self.solver, str):
            raise pb.ValidationError(f"optimal: solver must be a cvxpy solver name; got {self.solver!r}")
        import cvxpy as cp  # only here and in run: listing plugins stays light

        if self.solver.upper() not in cp.installed_solvers():
            raise pb.ValidationError(f"optimal: solver {self.solver!r} is not installed; "
                                     f"cvxpy has {', '.join(cp.installed_solvers())}")

    size_advice = "or use sppm"

    def size_reason(self, n: int) -> str:
        """The program has n² variables."""
        return f"optimal solves a dense convex program with n² = {n ** 2} variables"

    def prepare(self, problem: pb.PrivacyProblem, context: pb.RunContext) -> None:
        """Import cvxpy and let it set up its solver once (a 2-symbol program), untimed."""
        super().prepare(problem, context)
        if str(self.solver).upper() not in _WARMED:
            tiny = pb.PrivacyProblem.from_arrays([[0.4, 0.1], [0.1, 0.4]], [[0.0, 1.0], [1.0, 0.0]])
            self._solve(tiny, 0.1)
            _WARMED.add(str(self.solver).upper())

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        """Solve, then certify: the stats carry a :class:`privbench.Certificate`.

        Its ``lower_bits`` is :func:`~privbench.measures.optimum.decoder_lower_bound` at Δ from the
        returned mapping's posterior, so the solver shootout compares every solver on a
        certified gap. The trace's seconds run until that certificate exists (solve plus
        certificate; ``trace_lower_s`` says how long the certificate took), as for every
        solver of the shootout. The bound is loose (up to ~0.1 bits) where the optimum
        leaves outputs unused; see its docstring.
        """
        from privbench.measures.optimum import decoder_lower_bound

        t0 = time.perf_counter()
        result = self._solve(problem, delta)
        solved = time.perf_counter()
        upper = float(result.stats["objective_bits"])
        closed = result.stats["solver_used"] in ("closed_form", "perfect_privacy_lp")
        lower = 0.0 if closed or upper <= 0 else decoder_lower_bound(problem, result.mapping,
                                                                       delta)
        if not closed and upper - lower > REFINE_ABOVE_BITS:
            lower = max(lower, refined_lower_bound(problem, result.mapping, delta,
                                                   upper - REFINE_ABOVE_BITS))
        done = time.perf_counter()
        status = str(result.stats["solver_status"])
        cert = pb.Certificate.of(upper, lower, "perfect privacy (closed form)" if closed
                                 else f"solver status: {status}",
                                 trace=[[round(done - t0, 6), upper, lower]],
                                 converged=status == "optimal", delta=delta)
        result.stats.update(cert.to_stats(), trace_lower_s=done - solved)
        return result

    def _solve(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        import cvxpy as cp

        solver = str(self.solver).upper()
        n = problem.n
        D = problem.distortion.to_dense()
        cost = D * problem.p_b[None, :]  # cost[i, j] = p(b_j) d(b̂_i, b_j)
        identity_cost = float(np.trace(cost))
        if identity_cost > delta:
            raise pb.ValidationError(f"optimal: the identity mapping needs E[d] = "
                                     f"{identity_cost:.6g} > delta = {delta:g}")
        # perfect privacy: a constant output within Δ has I = 0, which is optimal
        k = constant_output(problem, delta)
        if k is not None:
            Xc = np.zeros((n, n))
            Xc[k, :] = 1.0
            return self.result(Xc, solver=solver, solver_used="closed_form",
                               solver_status="optimal", solver_objective_bits=0.0,
                               objective_bits=0.0, repair_theta=1.0, solve_time_s=0.0,
                               attempts=[])
        t0 = time.perf_counter()
        attempts: list[dict] = []
        best: tuple[float, np.ndarray, float, dict] | None = None
        for name, scaled, opts in self._chain(solver, cp.installed_solvers()):
            if len(attempts) == 1 and self.fallback:  # the first solve was not "optimal"
                free = _perfectly_private(problem, cost, identity_cost, delta)
                if free is not None:
                    Xp, theta, value = free
                    attempts.insert(0, {"solver": "perfect_privacy_lp", "scaled": False,
                                        "status": "optimal", "objective_bits": value})
                    return self.result(Xp, solver=solver, solver_used="perfect_privacy_lp",
                                       solver_status="optimal", solver_objective_bits=0.0,
                                       objective_bits=value, repair_theta=theta,
                                       solve_time_s=time.perf_counter() - t0,
                                       attempts=attempts)
            attempt = {"solver": name, "scaled": scaled}
            X, status, obj, elapsed, err = _solve_once(problem, cost, delta, name, scaled,
                                                        opts, bool(self.verbose))
            attempt.update(status=status, time_s=round(elapsed, 4))
            if err:
                attempt["error"] = err
            attempts.append(attempt)
            if X is None:
                continue
            Xv, theta = _repair(X, cost, identity_cost, delta)
            value = leakage_nats((Xv @ problem.joint.T).T, problem.p_a) / LN2
            attempt["objective_bits"] = value
            info = {"solver_used": name, "solver_status": status, "scaled": scaled,
                    "solver_objective_bits": obj, "repair_theta": theta}
            if best is None or value < best[0]:
                best = (value, Xv, theta, info)
            if status == "optimal":
                break
        elapsed = time.perf_counter() - t0
        if best is None:
            summary = "; ".join(f"{a['solver']}{'(scaled)' if a['scaled'] else ''}: "
                                f"{a.get('error') or a['status']}" for a in attempts)
            raise pb.PrivbenchError(f"optimal: every solver attempt failed ({summary})")
        value, Xv, _theta, info = best
        return self.result(Xv, solver=solver, objective_bits=value, solve_time_s=elapsed,
                           attempts=attempts, **info)

    def _chain(self, solver: str, installed: list[str]) -> list[tuple[str, bool, dict]]:
        """Attempts in order: the chosen solver on the scaled program, then fallbacks."""
        chain = [(solver, True, _SOLVER_OPTIONS.get(solver, {}))]
        if not self.fallback:
            return chain
        if solver == "CLARABEL":
            chain.append(("CLARABEL", True, _CLARABEL_ROBUST))
        chain.append((solver, False, _SOLVER_OPTIONS.get(solver, {})))
        for other in _FALLBACKS:
            if other != solver and other in installed:
                chain.append((other, True, _SOLVER_OPTIONS.get(other, {})))
        return chain


# Solver options. Clarabel's defaults first; a second Clarabel try with a more cautious
# step and stronger static regularisation; SCS (first-order) last, at tight tolerance.
_SOLVER_OPTIONS: dict[str, dict] = {
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 20000},
}
_CLARABEL_ROBUST = {"max_iter": 500, "max_step_fraction": 0.9,
                    "static_regularization_constant": 1e-7, "tol_feas": 1e-8}
# Exponential-cone solvers only; never GLOP/PDLP (OR-Tools cannot share a process with
# highspy), and those are LP solvers anyway.
_FALLBACKS = ("CLARABEL", "ECOS", "SCS")


def _solve_once(problem: pb.PrivacyProblem, cost: np.ndarray, delta: float, solver: str,
                scaled: bool, opts: dict, verbose: bool
                ) -> tuple[np.ndarray | None, str, float | None, float, str | None]:
    """One cvxpy solve of problem (1); returns (X or None, status, objective bits, time, error).

    Scaling: the joint is multiplied by s = (number of non-zero cells), so the typical
    p(a, b̂) handed to the exponential cones is O(1) instead of O(1/(|A| n)); the
    objective is then s·I and is divided back. Without it Clarabel stalls
    (InsufficientProgress) on census-like data. Columns j with p(b_j) = 0 influence
    neither the objective nor the budget; they are fixed to the identity and left out.
    """
    import cvxpy as cp

    n = problem.n
    live_a = problem.p_a > 0
    live_b = problem.p_b > 0
    P = problem.joint[np.ix_(live_a, live_b)]
    p_a = problem.p_a[live_a]
    c = cost[:, live_b]
    m = int(live_b.sum())
    s = float(np.count_nonzero(P)) if scaled else 1.0
    X = cp.Variable((n, m), nonneg=True)
    Q = (s * P) @ X.T
    q = cp.sum(Q, axis=0)
    T = p_a.reshape(-1, 1) @ cp.reshape(q, (1, n), order="C")
    objective = cp.Minimize(cp.sum(cp.rel_entr(Q, T)))
    constraints = [cp.sum(X, axis=0) == 1, cp.sum(cp.multiply(c, X)) <= delta]
    prob = cp.Problem(objective, constraints)
    t = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "solution may be inaccurate": kept as status
            prob.solve(solver=solver, verbose=verbose, **opts)
    except (cp.error.SolverError, ValueError, TypeError) as exc:
        return None, "solver_error", None, time.perf_counter() - t, str(exc).split("\n")[0]
    elapsed = time.perf_counter() - t
    status = str(prob.status)
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or X.value is None:
        return None, status, None, elapsed, None
    full = np.eye(n)
    full[:, live_b] = np.asarray(X.value, dtype=float)
    return full, status, float(prob.value) / s / LN2, elapsed, None


#: the solve's own decoder bound is refined when it leaves more than this gap (bits)
REFINE_ABOVE_BITS = 1e-5
#: thresholds (share of the busiest output's mass) below which an output counts as unused
UNUSED_SHARES = (1e-6, 1e-4, 1e-3)
#: at most this many unused outputs get a decoder of their own (one small solve each)
REFINE_MAX_OUTPUTS = 128


def refined_lower_bound(problem: pb.PrivacyProblem, mapping, delta: float,
                        enough: float) -> float:
    """A tighter certified lower bound (bits) where the optimum leaves outputs unused.

    Why: :func:`~privbench.measures.optimum.decoder_lower_bound` decodes an unused output as
    p(a), which lost 0.012 bits at Δ = 4 and 16 on the toy (n = 64) although Clarabel's
    point is within 3e-5 bits of I*. Here each unused output gets the decoder r that best
    meets the targets τ of :func:`~privbench.measures.optimum.unused_output_targets`
    (maximise Σ_j min(Σ_a p(a, b_j) log r_a - τ_ij, 0) over the simplex, a small exponential-
    cone program), and the bound of the whole decoder is computed exactly: valid whatever
    r the small solves return. Stops at the first threshold whose bound reaches ``enough``.
    """
    import cvxpy as cp

    from privbench.measures.optimum import decoder_bound, unused_output_targets

    P = np.asarray(problem.joint, dtype=float)
    X = mapping.toarray() if hasattr(mapping, "toarray") else np.asarray(mapping, dtype=float)
    Q = (X @ P.T).T
    q = Q.sum(axis=0)
    live = problem.p_a > 0
    best = 0.0
    for share in UNUSED_SHARES:
        used = q >= share * float(q.max())
        if used.all() or (~used).sum() > REFINE_MAX_OUTPUTS:
            continue
        post = np.where(used[None, :], Q / np.where(used, q, 1.0)[None, :],
                        problem.p_a[:, None])
        _nu, _m, tau = unused_output_targets(problem, post, used, delta)
        for i in np.flatnonzero(~used):
            r = cp.Variable(int(live.sum()), nonneg=True)
            slack = cp.minimum(P[live].T @ cp.log(r) - tau[i], 0.0)
            try:
                # an inaccurate r is harmless here (the bound is exact whatever r is): no
                # "Solution may be inaccurate" warning on the user's terminal
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                    cp.Problem(cp.Maximize(cp.sum(slack)), [cp.sum(r) == 1]).solve(solver="CLARABEL")
            except cp.error.SolverError:
                continue
            if r.value is not None and np.isfinite(r.value).all() and r.value.sum() > 0:
                post[live, i] = np.maximum(r.value, 0.0) / np.maximum(r.value, 0.0).sum()
        best = max(best, decoder_bound(problem, post, delta))
        if best >= enough:
            break
    return best


def _perfectly_private(problem: pb.PrivacyProblem, cost: np.ndarray, identity_cost: float,
                       delta: float) -> tuple[np.ndarray, float, float] | None:
    """The least-E[d] mapping with B̂ independent of A (the ``perfect_privacy`` LP, HiGHS),
    when it fits in Δ: then I* = 0 and it is the optimum, exactly. Why: at such Δ the
    optimum sits on the boundary of the cones and Clarabel ends "inaccurate" (the toy at
    Δ = 256, where this LP's least E[d] is 256 exactly; SCS then took 14-29 s).
    Returns (X, repair θ, I bits) or None (LP failed, or its E[d] exceeds Δ)."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n = problem.n
    live = problem.p_a > 0
    cond = np.asarray(problem.joint, dtype=float)[live] / problem.p_a[live][:, None]
    rows = [sp.kron(sp.identity(n), np.ones((1, n)))]  # x = X in column order
    for a in range(1, cond.shape[0]):  # W(i | a) = W(i | a_0); the last output's row is implied
        rows.append(sp.kron((cond[a] - cond[0])[None, :], sp.identity(n)).tocsr()[: n - 1])
    A = sp.vstack(rows).tocsr()
    b = np.r_[np.ones(n), np.zeros(A.shape[0] - n)]
    res = linprog(cost.T.ravel(), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    if res.status != 0 or res.fun > delta * (1 + 1e-9) + 1e-12:
        return None
    Xv, theta = _repair(res.x.reshape(n, n).T, cost, identity_cost, delta)
    value = leakage_nats((Xv @ problem.joint.T).T, problem.p_a) / LN2
    return Xv, theta, max(value, 0.0)


def _repair(X: np.ndarray, cost: np.ndarray, identity_cost: float, delta: float
            ) -> tuple[np.ndarray, float]:
    """Clip, renormalise columns, and mix with the identity just enough to meet Δ."""
    n = X.shape[0]
    Xv = np.where(np.isfinite(X), np.maximum(X, 0.0), 0.0)
    sums = Xv.sum(axis=0)
    bad = sums <= 0
    Xv[:, bad] = np.eye(n)[:, bad]
    Xv /= Xv.sum(axis=0, keepdims=True)
    used = float(np.sum(cost * Xv))
    return mix_into_budget(Xv, np.eye(n), used, identity_cost, delta)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Optimal]
