"""``mirror_descent``: entropic mirror descent (Blahut-Arimoto-style multiplicative
updates) on the columns of X, every iterate within the budget, certified by the harness.

Problem (1): minimise I(A; B̂) over column-stochastic X with E[d] <= Δ. Which part
follows which paper:

* **The update** is entropic mirror descent / exponentiated gradient (Beck & Teboulle,
  "Mirror descent and nonlinear projected subgradient methods for convex optimization",
  Oper. Res. Lett. 31, 2003) with the mirror map h(X) = Σ_j p(b_j) Σ_i X_ij log X_ij::

      X_new[:, j] ∝ X[:, j] · exp(-η (g[:, j] / p(b_j) + ν D[:, j]))

  g the gradient of I (nats), g[i, j] = Σ_a p(a, b_j) log(p(a | b̂_i) / p(a)). With η = 1
  this is the Blahut-Arimoto iteration (Blahut, IEEE Trans. IT 18, 1972; Arimoto, same
  volume): when A = B, g[i, j] / p(b_j) = log(X_ij / p(b̂_i)) and the step is exactly
  Blahut's rate-distortion update X_new[i, j] ∝ p(b̂_i) exp(-ν d_ij); here A is only
  correlated with B and the step reweights each column by the exponentiated posterior
  information density instead.
* **The budget** is not a fixed slope s as in Blahut's rate-distortion algorithm: the
  multiplier ν >= 0 is found at *every* iteration by a 1-D root search so that the new
  iterate has E[d] = Δ exactly (or ν = 0 when the unconstrained step already meets it),
  as in the constrained Blahut-Arimoto algorithm of Chen, Kwan et al. (2023), which
  finds its multiplier by 1-D root finding on a monotone function. E[d](ν) decreases
  in ν (its slope is -η Σ_j p_j Var_j(D)), so the search here is Newton in log ν,
  safeguarded by a bracket (bisection in log ν when a Newton step leaves it). The
  step is then exactly the Bregman projection of the mirror step onto {columns on the
  simplex, E[d] <= Δ}: a Bregman proximal gradient step.
* **Step size.** I is 1-smooth relative to h: its Bregman divergence is
  KL(Q'||Q) - KL(q'||q) <= KL(Q'||Q) <= Σ_j p_j KL(X'_j || X_j) (Q = p(a, b̂), q = p(b̂),
  data processing), so η = 1 guarantees descent and I(X_k) - I* <= D_h(X*, X_0) / k
  (Bauschke, Bolte & Teboulle 2017; Lu, Freund & Nesterov 2018). That bound is loose,
  but not by much: a fixed η = 4 never converged on census top 100 (Δ = 0.3; the gap
  stalled at 0.28 bits), while η = 2 took about half the iterations of η = 1. So
  ``step = "adaptive"`` (default) multiplies η by 1.25 after a step that passes the
  relative-smoothness test I(X') <= I(X) + <g, X' - X> + D_h(X', X) / η, and halves it
  (never below 1, where the test provably holds) after one that fails; a failed step
  that still lowers I is kept (only a step that does not descend is redone), so a
  failure costs no extra work. Measured (one thread, iterations to a 1e-3-bit gap,
  checked every 10): census top 100 at Δ = 0.3: η = 1: 110, adaptive: 50; random
  n = 1000 Hamming at Δ = 0.3: η = 1: 140, adaptive: 50 (2.1 s against 3.1 s).
  ``step = "fixed"`` keeps η = ``eta``.

The iterate is kept as log X, so an entry that becomes tiny is never an exact zero and
can grow back (multiplicative updates cannot revive zeros). The start is the mirror
step from the uniform mapping: the exponential mechanism X ∝ exp(-ν D) calibrated to Δ,
strictly positive. Zero-probability cases follow ``_sppm/leakage.py``: the posterior is
floored towards p(a) (``POSTERIOR_FLOOR`` of :mod:`privbench.protocol.certificate`) before
its logarithm, and an output with no mass at all (underflow) gets the gradient's limit κ_j.
Columns with p(b_j) = 0 are the identity and take no part.

Certificate: every ``check_every`` iterations the harness's decoder bound
(:func:`privbench.measures.optimum.decoder_lower_bound`) at the iterate gives L <= I*(Δ);
the iterate gives U = I(X) >= I*(Δ). The solver stops at U - L <= ``tol``. ``trace``
records ``[seconds, upper_bits, lower_bits]``, the seconds counted from the solve's start,
certificates included: the stopping rule needs them, and a gap is certified only once
they are computed (stat ``certify_s`` says how much of the time they took: 48-67 %, median
55 %, on the shootout's instances; see the README's solver shootout).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import privbench as pb
from privbench.protocol.certificate import floored_posterior
from privbench.protocol.checks import finite_float, one_of, positive_int
from privbench.protocol.feasibility import constant_output, mix_into_budget

LN2 = math.log(2.0)
#: the root search accepts E[d] in [Δ (1 - BUDGET_RTOL), Δ]; the slack costs at most
#: ν Δ BUDGET_RTOL nats of leakage (~1e-6 bits on the test problems), and saves a Newton step
BUDGET_RTOL = 1e-5
STEPS = ("adaptive", "fixed")
#: exponents below this are taken as exp = 0 (e^-500 ~ 7e-218: products stay clear of
#: subnormals, and glibc's exp is slow for large negative arguments)
UNDERFLOW = -500.0
#: the adaptive rule's factors on η after an accepted step and after a failed test
GROW, SHRINK = 1.25, 0.5
#: keep a step that fails the test but still lowers I (then only η shrinks)
LENIENT = True
#: the largest η the adaptive rule tries
ETA_MAX = 1e6

_KERNELS: dict[str, Callable[..., Any]] = {}


def _kernels() -> dict[str, Callable[..., Any]]:
    """Compile (once per process) the fused per-column kernels; numba imported lazily so
    that listing plugins stays light."""
    if _KERNELS:
        return _KERNELS
    import numba

    @numba.njit(parallel=True, cache=True)
    def evaluate(G, D, a, p, out_log, out_X):  # pragma: no cover - compiled
        """Write log X and X for the column-normalised X ∝ exp(G - a D) (rows are columns
        of X; entries below e^UNDERFLOW are 0 in X, their log stays finite) and return
        E[d] and dE/da. One fused pass family: the search's last evaluation is the step."""
        m, n = G.shape
        e = np.empty(m)
        v = np.empty(m)
        for j in numba.prange(m):
            top = -np.inf
            for i in range(n):
                t = G[j, i] - a * D[j, i]
                out_log[j, i] = t
                top = max(top, t)
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            for i in range(n):
                u = out_log[j, i] - top
                w = math.exp(u) if u > UNDERFLOW else 0.0  # below: exp's slow path
                out_X[j, i] = w
                s0 += w
                s1 += w * D[j, i]
                s2 += w * D[j, i] * D[j, i]
            shift = top + math.log(s0)
            inv = 1.0 / s0
            for i in range(n):
                out_log[j, i] -= shift
                out_X[j, i] *= inv
            mean = s1 * inv
            e[j] = p[j] * mean
            v[j] = p[j] * max(s2 * inv - mean * mean, 0.0)
        return e.sum(), -v.sum()

    @numba.njit(parallel=True, cache=True)
    def output_joint(XT, P):  # pragma: no cover - compiled
        """Q[a, i] = Σ_j P[a, j] X[i, j], in column blocks (no BLAS: OpenBLAS threads and
        numba's OpenMP threads slow each other down by 10x when they alternate)."""
        m, n = XT.shape
        k = P.shape[0]
        Q = np.zeros((k, n))
        width = 64
        for c in numba.prange((n + width - 1) // width):
            lo = c * width
            hi = min(n, lo + width)
            for j in range(m):
                x = XT[j]
                for a in range(k):
                    w = P[a, j]
                    if w != 0.0:
                        for i in range(lo, hi):
                            Q[a, i] += w * x[i]
        return Q

    @numba.njit(parallel=True, cache=True)
    def mirror_base(logXT, Pc, L, eta):  # pragma: no cover - compiled
        """log X - η g / p_j, g[i, j] / p_j = Σ_a p(a | b_j) L[a, i] (rows are columns of X)."""
        out = np.empty_like(logXT)
        k = Pc.shape[0]
        for j in numba.prange(logXT.shape[0]):
            for i in range(logXT.shape[1]):
                g = 0.0
                for a in range(k):
                    g += Pc[a, j] * L[a, i]
                out[j, i] = logXT[j, i] - eta * g
        return out

    _KERNELS["evaluate"] = evaluate
    _KERNELS["output_joint"] = output_joint
    _KERNELS["mirror_base"] = mirror_base
    return _KERNELS


class MirrorDescent(pb.SizeLimited, pb.MappingMechanism):
    """Entropic mirror descent with a per-iteration budget multiplier; dense n x n.

    Parameters
    ----------
    iterations : mirror steps at most.
    tol : stop once the certified gap U - L (bits) is at most this.
    check_every : iterations between certificates (each costs ~60 O(|A| n²) passes,
        counted in the solve's time and reported as ``certify_s``).
    eta : the first step size (η = 1 is Blahut-Arimoto's, and provably descends).
    step : ``adaptive`` (double η after accepted steps, halve on a failed descent
        test, never below 1) or ``fixed`` (η = ``eta`` throughout).
    max_seconds : stop after this many seconds of the solve, certificates included (None: no
        limit).
    max_n : refuse larger alphabets (the iterate and the distortion are dense n x n).
    threads : numba threads for the O(n²) kernels (1, the default; 0 = numba's default,
        every core). On the 2-core machine these were measured on, with other jobs
        running, two threads made census top 100 ~100x slower than one (OpenMP
        barriers on an oversubscribed machine) and n = 1000 ~2x slower.
    """

    name = "mirror_descent"
    citation = ('Beck and Teboulle, Mirror descent and nonlinear projected subgradient methods, Oper.'
                ' Res. Lett. 2003; Blahut 1972; Arimoto 1972; Chen et al., arXiv:2305.02650, 2023')
    description = "entropic mirror descent (constrained Blahut-Arimoto), certified gap"
    test_parameters = {"step": ["adaptive", "fixed"], "iterations": [200]}

    def __init__(self, iterations: int = 20000, tol: float = 1e-3, check_every: int = 10,
                 eta: float = 1.0, step: str = "adaptive", max_seconds: float | None = None,
                 max_n: int = 4096, threads: int = 1) -> None:
        self.iterations = iterations
        self.tol = tol
        self.check_every = check_every
        self.eta = eta
        self.step = step
        self.max_seconds = max_seconds
        self.max_n = max_n
        self.threads = threads

    def check_params(self) -> None:
        """Refuse bad parameters at plan time, naming the parameter."""
        positive_int("mirror_descent: iterations", self.iterations, minimum=0)
        finite_float("mirror_descent: tol", self.tol, low=0.0)
        positive_int("mirror_descent: check_every", self.check_every)
        finite_float("mirror_descent: eta", self.eta, low=0.0, strict_low=True)
        one_of("mirror_descent: step", self.step, STEPS)
        if self.max_seconds is not None:
            finite_float("mirror_descent: max_seconds", self.max_seconds, low=0.0)
        super().check_params()  # max_n
        positive_int("mirror_descent: threads", self.threads, minimum=0)

    size_advice = "or use sppm"

    def size_reason(self, n: int) -> str:
        """Three dense n x n arrays, O(|A| n²) a step."""
        return (f"mirror_descent keeps dense {n} x {n} arrays (the iterate, D and the gradient: "
                f"~{3 * 8 * n ** 2 / 2**20:.0f} MB) and every step costs O(|A| n²)")

    def prepare(self, problem: pb.PrivacyProblem, context: pb.RunContext) -> None:
        """Compile the kernels on a tiny problem, untimed."""
        super().prepare(problem, context)
        k = _kernels()
        G = np.zeros((2, 2))
        k["evaluate"](G, G + 1.0, 0.5, np.ones(2), np.empty((2, 2)), np.empty((2, 2)))
        L = k["output_joint"](G, np.ones((1, 2)))
        k["mirror_base"](G, np.ones((1, 2)), L, 1.0)

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        import numba

        before = numba.get_num_threads()
        wanted = numba.config.NUMBA_NUM_THREADS if self.threads == 0 \
            else min(int(self.threads), numba.config.NUMBA_NUM_THREADS)
        numba.set_num_threads(wanted)
        try:
            return _Solver(self, problem, float(delta)).solve()
        finally:
            numba.set_num_threads(before)


class _Solver:
    """One solve; arrays are stored transposed (row j = column j of X) for the kernels."""

    def __init__(self, mech: MirrorDescent, problem: pb.PrivacyProblem, delta: float) -> None:
        self.mech, self.problem, self.delta = mech, problem, delta
        self.k = _kernels()
        self.report = mech.context.throttled()

    # -- pieces --------------------------------------------------------------------------
    def _search(self, G: np.ndarray, a0: float) -> float:
        """The least a = η ν >= 0 with E[d] of X ∝ exp(G - a D) at most Δ; leaves that X
        (and its log) in ``self.buf_X`` (``self.buf_log``).

        Newton in log a from the previous multiplier, inside a bracket [lo, hi]
        (E(lo) > Δ >= E(hi)); a step leaving it bisects in log a instead. Accepts
        E[d] in [Δ (1 - BUDGET_RTOL), Δ].
        """
        D, p, delta = self.DT, self.pl, self.delta
        out_log, out_X = self.buf_log, self.buf_X

        def at(a: float) -> tuple[float, float]:
            self.evaluations += 1
            return self.k["evaluate"](G, D, a, p, out_log, out_X)

        target = delta * (1.0 - 0.5 * BUDGET_RTOL)
        ok_low = delta * (1.0 - BUDGET_RTOL)
        lo, hi = 0.0, math.inf
        if a0 <= 0 and at(0.0)[0] <= delta:
            return 0.0
        a = a0 if a0 > 0 else 1.0 / self.scale
        checked_zero = a0 <= 0
        for _ in range(200):
            e, de = at(a)
            if e > delta:
                lo = a
            else:
                hi = a
                if e >= ok_low:
                    return a
            # Newton on φ(t) = E(e^t) - target, t = log a: dφ/dt = a E'(a)
            slope = a * de
            t_new = math.log(a) - (e - target) / slope if slope < 0 else math.nan
            if lo > 0 and math.isfinite(hi):
                if hi - lo <= 1e-15 * hi:
                    break
                inside = math.isfinite(t_new) and math.log(lo) < t_new < math.log(hi)
                a = math.exp(t_new) if inside else math.sqrt(lo * hi)
            elif math.isfinite(hi):  # no lower end yet (lo = 0): at most 16x down
                far = not math.isfinite(t_new) or t_new < math.log(hi) - 2.77
                if far and not checked_zero:  # maybe ν = 0 meets the budget already
                    checked_zero = True
                    if at(0.0)[0] <= delta:
                        return 0.0
                a = math.exp(max(t_new, math.log(hi) - 2.77)) if math.isfinite(t_new) else hi / 16
            else:  # no upper end yet: at most 16x up
                a = math.exp(min(t_new, math.log(lo) + 2.77)) if math.isfinite(t_new) else lo * 16
        if not math.isfinite(hi):
            raise pb.PrivbenchError("mirror_descent: no multiplier meets the budget")
        at(hi)
        return hi

    def _at_zero(self, G: np.ndarray) -> float:
        """The step without a budget term (Δ at the least distortion: the support is
        already restricted to the cheapest outputs)."""
        self.k["evaluate"](G, self.DT, 0.0, self.pl, self.buf_log, self.buf_X)
        return 0.0

    def _posterior_logs(self, XT: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Q = p(a, b̂), L = log(r(a | b̂_i) / p(a)) and the outputs with no mass, at X.

        r is the posterior floored towards p(a) (:func:`~privbench.protocol.certificate.floored_posterior`).
        """
        Q = self.k["output_joint"](XT, self.Pl)
        q = Q.sum(axis=0)
        empty = q <= 0
        post = Q / np.where(empty, 1.0, q)[None, :]
        L = np.zeros_like(Q)
        la = self.live_a
        r = floored_posterior(post[la], self.p_a[la])
        L[la] = np.log(r) - np.log(self.p_a[la])[:, None]
        return Q, L, empty

    def _base(self, logXT: np.ndarray, L: np.ndarray, empty: np.ndarray, eta: float
              ) -> np.ndarray:
        """log X - η g / p_j, the exponent of the mirror step before the budget term."""
        base = self.k["mirror_base"](logXT, self.Pc, L, eta)
        if empty.any():  # outputs with no mass: the gradient's limit κ_j (leakage.py)
            base[:, empty] = logXT[:, empty] - eta * self.kappa_over_p[:, None]
        return base

    def _model(self, logXT: np.ndarray, XT: np.ndarray, base: np.ndarray,
               new_logXT: np.ndarray, new_XT: np.ndarray, eta: float) -> float:
        """<g, X' - X> + D_h(X', X) / η (nats), g / p_j = (log X - base) / η."""
        live = new_XT > 0
        with np.errstate(invalid="ignore"):
            grad = np.where(np.isfinite(base), (logXT - base) / eta, 0.0)
            diff = np.where(live, new_logXT - logXT, 0.0)
        per_col = np.sum(grad * (new_XT - XT) + new_XT * diff / eta, axis=1)
        return float(self.pl @ per_col)

    def _bits(self, Q: np.ndarray) -> float:
        from privbench.measures.information import leakage_nats

        return leakage_nats(Q, self.p_a) / LN2

    def _full(self, XT: np.ndarray) -> np.ndarray:
        X = np.eye(self.problem.n)
        X[:, self.live_b] = XT.T
        return X

    # -- the solve -----------------------------------------------------------------------
    def _trivial(self, D: np.ndarray, least: float, t_start: float) -> pb.MechanismResult | None:
        """Refuse an infeasible Δ; answer a Δ a constant output meets (I = 0, certified)."""
        mech, problem, delta = self.mech, self.problem, self.delta
        if least > delta * (1.0 + 1e-12):
            raise pb.ValidationError(f"mirror_descent: no mapping meets the budget: the least "
                                     f"possible E[d] is {least:.6g} > delta = {delta:g}")
        k = constant_output(problem, delta)
        if k is None:
            return None
        X = np.zeros((problem.n, problem.n))
        X[k, :] = 1.0
        cert = pb.Certificate.of(0.0, 0.0, "perfect privacy (a constant output meets the budget)",
                                 trace=[[time.perf_counter() - t_start, 0.0, 0.0]], converged=True,
                                 delta=delta)
        return mech.result(X, **cert.to_stats(), iterations=0, budget_dual=0.0, eta=None,
                           search_evaluations=0)

    def _setup(self, D: np.ndarray, colmin: np.ndarray, least: float) -> np.ndarray | None:
        """The kernels' arrays (live columns only, transposed); the mask of allowed outputs
        when Δ is the least distortion (only each column's cheapest), else None."""
        problem = self.problem
        self.live_b = problem.p_b > 0
        self.p_a = problem.p_a
        self.live_a = self.p_a > 0
        P = np.asarray(problem.joint, dtype=float)
        self.Pl = np.ascontiguousarray(P[:, self.live_b])
        self.pl = np.ascontiguousarray(problem.p_b[self.live_b])
        self.Pc = self.Pl / self.pl[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.Pl / (self.p_a[:, None] * self.pl[None, :])
            terms = np.where(self.Pl > 0, self.Pc * np.log(np.where(self.Pl > 0, ratio, 1.0)), 0.0)
        self.kappa_over_p = terms.sum(axis=0)
        self.DT = np.ascontiguousarray(D[:, self.live_b].T)
        positive = self.DT[self.DT > 0]
        self.scale = float(np.median(positive)) if positive.size else 1.0
        self.evaluations = 0
        if self.delta > least * (1.0 + 1e-12):
            return None
        mask_T = self.DT <= colmin[self.live_b][:, None]
        self.DT = np.where(mask_T, self.DT, 0.0)
        return mask_T

    def _new_buffers(self) -> None:
        self.buf_log, self.buf_X = np.empty_like(self.DT), np.empty_like(self.DT)

    def _budgeted(self, G: np.ndarray, a0: float) -> float:
        """The budget-respecting step from exponent ``G`` into the buffers; its a = η ν."""
        return self._search(G, a0) if self.mask_T is None else self._at_zero(G)

    def _accept(self, logXT: np.ndarray, XT: np.ndarray) -> _Iterate:
        """The iterate at (log X, X): its posterior logs and leakage (bits)."""
        Q, L, empty = self._posterior_logs(XT)
        return _Iterate(logXT, XT, L, empty, self._bits(Q))

    def _step(self, it: _Iterate, eta: float, guess: float
              ) -> tuple[_Iterate, float, float, float, int]:
        """One mirror step from ``it``: (new iterate, a = η ν, the η taken, the next η, how
        many step tests failed).

        With ``step = adaptive`` a step failing the relative-smoothness test
        f' <= f + <g, X' - X> + D_h(X', X) / η (nats; it holds at η <= 1) halves η; the
        step is kept if it still descends (LENIENT), else redone with the shorter η.
        """
        failed = 0
        while True:
            base = self._base(it.logXT, it.L, it.empty, eta)
            a = self._budgeted(base, guess * eta)
            new = self._accept(self.buf_log, self.buf_X)
            if self.mech.step != "adaptive":
                return new, a, eta, eta, failed
            if eta <= 1.0 or new.f * LN2 <= it.f * LN2 + self._model(
                    it.logXT, it.XT, base, new.logXT, new.XT, eta) + 1e-15:
                return new, a, eta, min(GROW * eta, ETA_MAX), failed
            failed += 1
            shorter = max(1.0, eta * SHRINK)
            if new.f < it.f or not LENIENT:  # a descent all the same: keep it
                return new, a, eta, shorter, failed
            eta = shorter  # no descent: redo the step with the shorter η

    def _repaired(self, XT: np.ndarray, D: np.ndarray, colmin: np.ndarray
                  ) -> tuple[np.ndarray, float]:
        """X with exact column sums and E[d] <= Δ (mixed with the least-distortion mapping)."""
        cost = D * self.problem.p_b[None, :]
        X = self._full(XT)
        X = np.where(np.isfinite(X), np.maximum(X, 0.0), 0.0)
        X /= X.sum(axis=0, keepdims=True)
        safe = (D <= colmin[None, :]).astype(float)
        safe /= safe.sum(axis=0, keepdims=True)
        return mix_into_budget(X, safe, float(np.sum(cost * X)), float(np.sum(cost * safe)),
                               self.delta)

    def solve(self) -> pb.MechanismResult:
        mech, problem, delta = self.mech, self.problem, self.delta
        clock = _SolverClock()
        D = np.asarray(problem.distortion.to_dense(force=True), dtype=float)
        colmin = D.min(axis=0)
        least = float(problem.p_b @ colmin)
        done = self._trivial(D, least, clock.started)
        if done is not None:
            return done
        self.mask_T = mask_T = self._setup(D, colmin, least)
        G0 = np.zeros_like(self.DT)
        if mask_T is not None:
            G0[~mask_T] = -np.inf
        self._new_buffers()
        nu = self._budgeted(G0, 0.0)
        it = self._accept(self.buf_log, self.buf_X)
        self._new_buffers()
        cert = _Certifier(problem, delta, self._full, clock)
        eta, nu_prev, k, failed_tests, stop = float(mech.eta), 0.0, 0, 0, "iterations"
        converged = cert.gap(it) <= mech.tol
        if converged:
            stop = "tolerance"
        while not converged and k < mech.iterations:
            if mech.max_seconds is not None and clock.seconds() >= mech.max_seconds:
                stop = "max_seconds"
                break
            # warm start: ν extrapolated geometrically from the last two steps
            guess = nu * min(2.0, max(0.5, nu / nu_prev)) if nu > 0 and nu_prev > 0 else nu
            new, a, taken, next_eta, failed = self._step(it, eta, guess)
            failed_tests += failed
            nu_prev, nu = nu, a / taken
            self.buf_log, self.buf_X = it.logXT, it.XT  # the old iterate's arrays are reused
            it, eta, k = new, next_eta, k + 1
            if k % mech.check_every == 0 or k == mech.iterations:
                gap = cert.gap(it)
                self.report(iteration=k, gap_bits=gap, upper_bits=it.f, eta=eta)
                if gap <= mech.tol:
                    converged, stop = True, "tolerance"
        if not converged and cert.trace[-1][1] != it.f:
            cert.gap(it)
        X, theta = self._repaired(it.XT, D, colmin)
        upper = self._bits((X @ np.asarray(problem.joint, dtype=float).T).T)
        if theta < 1.0:  # the returned mapping moved: certify it
            cert.raise_lower(X)
        solver_s = clock.seconds()
        cert.trace.append([solver_s, upper, cert.best_lower])
        done = pb.Certificate.of(upper, cert.best_lower, stop, trace=cert.trace,
                                 converged=max(upper - cert.best_lower, 0.0) <= mech.tol, delta=delta)
        return mech.result(X, **done.to_stats(), iterations=k, budget_dual=nu, eta=eta,
                           failed_step_tests=failed_tests, search_evaluations=self.evaluations,
                           repair_theta=float(theta), solve_time_s=solver_s,
                           certify_s=clock.certify_s)


@dataclass
class _Iterate:
    """log X and X (transposed, live columns), the posterior logs L, the outputs without
    mass and the leakage f (bits)."""

    logXT: np.ndarray
    XT: np.ndarray
    L: np.ndarray
    empty: np.ndarray
    f: float


class _SolverClock:
    """Seconds since the solve started, and how many of them went to certificates."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.certify_s = 0.0

    def seconds(self) -> float:
        return time.perf_counter() - self.started

    @contextlib.contextmanager
    def certifying(self) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.certify_s += time.perf_counter() - t


class _Certifier:
    """The harness's decoder bound at iterates and the trace it writes."""

    def __init__(self, problem: pb.PrivacyProblem, delta: float,
                 full: Callable[[np.ndarray], np.ndarray], clock: _SolverClock) -> None:
        self.problem, self.delta, self.full, self.clock = problem, delta, full, clock
        self.best_lower = 0.0
        self.trace: list[list[float]] = []

    def raise_lower(self, X: np.ndarray) -> None:
        from privbench.measures.optimum import decoder_lower_bound

        with self.clock.certifying():
            self.best_lower = max(self.best_lower,
                                  decoder_lower_bound(self.problem, X, self.delta))

    def gap(self, it: _Iterate) -> float:
        """Certify the iterate; append ``[seconds, U, best L]``; return U - L."""
        self.raise_lower(self.full(it.XT))
        self.trace.append([self.clock.seconds(), it.f, self.best_lower])
        return it.f - self.best_lower


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [MirrorDescent]
