"""Certified bounds on I*(D), the least leakage any mapping can have with E[d] <= D.

Used to say how far any mapping is from the optimum (the ``optimum`` metric) and to
certify solvers that carry no certificate of their own (``metrics.trace``).

Three facts, all exact:

* **Decoder bound** (Gibbs' inequality). For any decoder r(a | b̂) and any mapping X,
  I(A; B̂) >= Σ_ij X[i, j] c^r[i, j] with c^r[i, j] = Σ_a p(a, b_j) log(r(a | b̂_i) / p(a)).
  Minimising the right side over the mappings with E[d] <= D and dualising the budget
  (ν >= 0) gives, for every r and ν, I*(D) >= Σ_j min_i (c^r[i, j] + ν p(b_j) d_ij) - ν D.
  The best decoder is the posterior of an optimal mapping (then the bound is tight), so
  the posterior of a good mapping gives a good bound: :func:`decoder_lower_bound`.
* **Monotone**: I*(D) is non-increasing in D, so a lower bound at D' >= D holds at D and
  an upper bound (a mapping) at D' <= D holds at D.
* **Convex**: mixing two mappings column by column mixes their distortions linearly and
  their leakage at most linearly (I is convex in X), so upper bounds interpolate.

:func:`interval` combines bounds already certified (:class:`Bound`) into an
interval at any D; the anchors are the identity-like mapping (leakage I(A; B) at the
least distortion the diagonal allows) and the best constant output (leakage 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from privbench.protocol.certificate import floored_posterior
from privbench.protocol.feasibility import row_budget_costs

if TYPE_CHECKING:
    from privbench.protocol.problem import PrivacyProblem

LN2 = math.log(2.0)
#: shares of the busiest output's mass below which an output decodes as p(a); the bound
#: takes the best of these decoders (which is best depends on the solver's rounding)
BARELY_USED = (0.0, 1e-9, 1e-6)
#: entries of c^r and of the weighted distortion kept in memory at once (both dense)
BLOCK_ENTRIES = 2**22


@dataclass(frozen=True)
class Bound:
    """``lower_bits <= I*(distortion) <= upper_bits``; ``upper_bits`` is the leakage of a
    mapping with E[d] <= ``distortion``. ``source`` says who certified it."""

    distortion: float
    lower_bits: float
    upper_bits: float
    source: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The bound as plain data (distortion, lower_bits, upper_bits, source), e.g. for JSON."""
        return {"distortion": self.distortion, "lower_bits": self.lower_bits,
                "upper_bits": self.upper_bits, "source": self.source}


def anchors(problem: PrivacyProblem) -> list[Bound]:
    """The two mappings every problem has: the identity (I(A; B), at E[d] = Σ p_j d_jj) and
    the cheapest constant output (0 bits, at its distortion; I* is 0 from there on)."""
    diagonal = float(problem.p_b @ problem.distortion.diagonal())
    constant = float(np.min(row_budget_costs(problem)))
    return [Bound(diagonal, 0.0, float(problem.prior_mi_bits), "identity mapping"),
            Bound(constant, 0.0, 0.0, "constant output")]


def interval(certificates: Iterable[Bound], distortion: float) -> tuple[float, float]:
    """The tightest (lower, upper) bits on I*(``distortion``) the certificates imply.

    Lower: the largest lower bound certified at a distortion >= D (monotonicity), and 0;
    or, from a lower bound L at d_c < D and an upper bound U at d_b < d_c, the extension of
    their chord (convexity: I* lies above every chord's extension beyond it),
    I*(D) >= (L (D - d_b) - U (D - d_c)) / (d_c - d_b), which keeps a bound certified at a
    budget just below D (rounding) almost whole and fades as D moves away from it.
    Upper: the least upper bound at a distortion <= D, or the chord between one below
    and one above D (convexity). ``inf`` when nothing bounds it from above.
    """
    certs = list(certificates)
    D = float(distortion)
    lower = max([0.0] + [c.lower_bits for c in certs if c.distortion >= D])
    below = [c for c in certs if c.distortion <= D]
    above = [c for c in certs if c.distortion > D]
    for c in below:
        if c.distortion < D and c.lower_bits > lower:
            for b in certs:
                if b.distortion < c.distortion and math.isfinite(b.upper_bits):
                    lower = max(lower, (c.lower_bits * (D - b.distortion) - b.upper_bits
                                        * (D - c.distortion)) / (c.distortion - b.distortion))
    upper = min([math.inf] + [c.upper_bits for c in below])
    for lo in below:
        for hi in above:
            theta = (hi.distortion - D) / (hi.distortion - lo.distortion)
            upper = min(upper, theta * lo.upper_bits + (1.0 - theta) * hi.upper_bits)
    if any(c.source == "constant output" and c.distortion <= D for c in certs):
        lower = upper = 0.0
    return lower, max(upper, lower) if math.isfinite(upper) else upper


def _logratios(problem: PrivacyProblem, post: np.ndarray) -> np.ndarray:
    """log(r / p(a)) of decoders ``post`` (|A| x outputs), floored towards p(a)."""
    p_a = problem.p_a
    live = p_a > 0
    L = np.zeros((p_a.size, post.shape[1]))
    r = floored_posterior(post[live], p_a[live])
    L[live] = np.log(r) - np.log(p_a[live])[:, None]
    return L


def _posterior(problem: PrivacyProblem, mapping: Any, barely: float) -> np.ndarray:
    """The posterior p(a | b̂_i) of ``mapping``; p(a) at outputs with less than ``barely``
    times the busiest output's mass (their posterior may be rounding noise, and a
    confident decoder there makes them cheap for the inputs it gets wrong)."""
    X = sp.csc_array(mapping)
    Q = np.asarray((X @ np.asarray(problem.joint, dtype=float).T).T)
    q = Q.sum(axis=0)
    used = (q > 0) & (q >= barely * float(q.max()))
    return np.where(used[None, :], Q / np.where(used, q, 1.0)[None, :], problem.p_a[:, None])


class _Lagrangian:
    """h(ν) = Σ_j min_i (c[i, j] + ν w[i, j]), w = p(b_j) d_ij, over all n² pairs, in blocks.

    Small problems keep the dense blocks; larger ones recompute them per evaluation.
    """

    def __init__(self, problem: PrivacyProblem, L: np.ndarray) -> None:
        self.problem, self.L = problem, L
        n = problem.n
        self.step = max(1, min(n, BLOCK_ENTRIES // max(n, 1)))
        self.cached: list[tuple[np.ndarray, np.ndarray]] | None = None
        if n * n <= 4 * BLOCK_ENTRIES:
            self.cached = [self._block(s) for s in range(0, n, self.step)]

    def _block(self, start: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.problem.n
        cols = np.arange(start, min(n, start + self.step))
        P = np.asarray(self.problem.joint, dtype=float)[:, cols]
        C = self.L.T @ P
        W = self.problem.distortion.block(np.arange(n), cols) * self.problem.p_b[cols][None, :]
        return C, W

    def blocks(self) -> Iterable[tuple[np.ndarray, np.ndarray]]:
        if self.cached is not None:
            yield from self.cached
        else:
            for s in range(0, self.problem.n, self.step):
                yield self._block(s)

    def __call__(self, nu: float) -> tuple[float, float]:
        """h(ν) and its slope (E[d] of the minimising assignment, ties to least distortion)."""
        value = slope = 0.0
        for C, W in self.blocks():
            total = C + nu * W
            best = total.min(axis=0)
            tie = total <= best[None, :] + 1e-12 * (1.0 + np.abs(best[None, :]))
            value += float(best.sum())
            slope += float(np.where(tie, W, np.inf).min(axis=0).sum())
        return value, slope


#: bisection on ν stops once concavity proves no ν beats the best value found by more
#: than this (nats): g lies below its tangent lines at the bracket's two ends
ASCENT_TOL = 1e-10


def _maximise(h: _Lagrangian, D: float, iterations: int) -> tuple[float, float]:
    """max over ν >= 0 of g(ν) = h(ν) - ν D (nats) and its ν, by bisection on the slope.

    g is concave and piecewise linear; its slope at ν is h's supergradient minus D. Between
    lo (slope > 0) and hi (slope <= 0) the tangent lines at both ends bound g from above,
    so bisection stops once their crossing is within ``ASCENT_TOL`` of the best value
    (the best value is what the bound uses; any ν gives a valid bound).
    """
    value, slope = h(0.0)
    best, best_nu = value, 0.0
    if slope <= D:  # the unconstrained minimiser already meets the budget
        return best, best_nu
    lo, g_lo, s_lo = 0.0, value, slope - D
    hi = 1.0
    for _ in range(200):  # find hi with slope(hi) <= D
        value, slope = h(hi)
        if value - hi * D > best:
            best, best_nu = value - hi * D, hi
        if slope <= D:
            break
        lo, g_lo, s_lo = hi, value - hi * D, slope - D
        hi = hi * 4.0
    g_hi, s_hi = value - hi * D, slope - D
    for _ in range(iterations):
        if s_lo - s_hi > 0:  # the tangents at lo and hi cross at ν*; g <= their value there
            nu_star = (g_hi - g_lo + s_lo * lo - s_hi * hi) / (s_lo - s_hi)
            if g_lo + s_lo * (nu_star - lo) - best <= ASCENT_TOL * max(1.0, abs(best)):
                break
        mid = 0.5 * (lo + hi)
        value, slope = h(mid)
        if value - mid * D > best:
            best, best_nu = value - mid * D, mid
        if slope > D:
            lo, g_lo, s_lo = mid, value - mid * D, slope - D
        else:
            hi, g_hi, s_hi = mid, value - mid * D, slope - D
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return best, best_nu


def decoder_lower_bound(problem: PrivacyProblem, mapping: Any, distortion: float,
                        *, iterations: int = 60) -> float:
    """A certified lower bound (bits) on I*(``distortion``) from the posterior of ``mapping``.

    Maximises the concave g(ν) = h(ν) - ν D over ν >= 0 by bisection on its slope, for
    each decoder of ``BARELY_USED``, and keeps the best;
    O(|A| n²) work per evaluation (dense blocks; meant for n up to a few thousand).
    Always valid; tight only for mappings whose outputs all carry mass. An output the
    mapping (barely) leaves unused decodes as p(a) (cost 0), and where the optimum leaves
    outputs unused no single decoder there may price them right: measured on Clarabel's
    optimum of random n = 20..60 problems, 4e-6 bits below it with full support but 0.05
    to 0.12 bits with unused outputs. Solvers that need a tight bound at such points use a
    dual of their own (SPPM, ``smoothed_dual``) or the ``optimum`` metric's SPPM certificate.
    """
    D = float(distortion)
    best = max(_maximise(_Lagrangian(problem, _logratios(problem, _posterior(problem, mapping, t))),
                         D, iterations)[0] for t in BARELY_USED)
    return max(best / LN2, 0.0)


def decoder_bound(problem: PrivacyProblem, decoders: np.ndarray, distortion: float,
                  *, iterations: int = 60) -> float:
    """The certified lower bound (bits) on I*(``distortion``) of one decoder matrix.

    ``decoders`` is |A| x n, column i a distribution r(a | b̂_i) (floored towards p(a)
    here, as in :func:`decoder_lower_bound`). Valid for *any* decoders, so a caller may
    choose them however it likes (e.g. :func:`unused_output_targets` then a small solve)
    and the bound stays certified.
    """
    L = _logratios(problem, np.asarray(decoders, dtype=float))
    return max(_maximise(_Lagrangian(problem, L), float(distortion), iterations)[0] / LN2, 0.0)


class _Masked:
    """h(ν) over the outputs in ``used`` only (dense; for the small problems that need it)."""

    def __init__(self, C: np.ndarray, W: np.ndarray) -> None:
        self.C, self.W = C, W

    def __call__(self, nu: float) -> tuple[float, float]:
        total = self.C + nu * self.W
        best = total.min(axis=0)
        tie = total <= best[None, :] + 1e-12 * (1.0 + np.abs(best[None, :]))
        return float(best.sum()), float(np.where(tie, self.W, np.inf).min(axis=0).sum())


def unused_output_targets(problem: PrivacyProblem, decoders: np.ndarray, used: np.ndarray,
                          distortion: float, *, iterations: int = 60
                          ) -> tuple[float, np.ndarray, np.ndarray]:
    """What a decoder at an unused output must achieve for the bound to stay tight.

    Why: the decoder bound is tight only if every output is priced right, and an output
    the optimum leaves unused has no posterior (p(a) there loses 0.01-0.5 bits). With the
    bound restricted to the ``used`` outputs maximised at ν, column j's value is m_j;
    an unused output i costs nothing as long as Σ_a p(a, b_j) log r(a | b̂_i) >= τ[i, j]
    for every j. Returns (ν, m, τ) with τ of shape (n, n) (rows: outputs), dense O(n²).
    """
    P = np.asarray(problem.joint, dtype=float)
    C = _logratios(problem, np.asarray(decoders, dtype=float)).T @ P
    W = problem.distortion.to_dense() * problem.p_b[None, :]
    Cu = np.where(np.asarray(used, dtype=bool)[:, None], C, np.inf)
    _, nu = _maximise(_Masked(Cu, W), float(distortion), iterations)
    m = (Cu + nu * W).min(axis=0)
    p_a = problem.p_a
    logp = np.where(p_a > 0, np.log(np.where(p_a > 0, p_a, 1.0)), 0.0)
    tau = m[None, :] - nu * W + (logp @ P)[None, :]
    return nu, m, tau
