"""``optimum``: how far a mapping is from the least leakage possible at its own distortion.

For a mapping X with leakage I_X and distortion D_X, the metric certifies an interval
[L, U] on I*(D_X), the least I(A; B̂) of any mapping with E[d] <= D_X, and reports

* ``optimum_lower_bits`` (L) and ``optimum_upper_bits`` (U);
* ``excess_mi_bits_max`` = I_X - L: X leaks at most this much more than the optimum;
* ``excess_mi_bits_min`` = I_X - U: ... and at least this much more (>= 0, since X
  itself is a mapping at D_X);
* ``optimum_source`` (who certified it: ``anchors``, ``certificate`` (the run's own),
  ``cache`` (earlier runs') or the solver that was run, e.g. ``sppm[mode=dual]``) and
  ``optimum_seconds`` (the solve this run paid for; 0 when no solve was needed).

D_X, not Δ, makes the comparison fair to mechanisms that under-spend their budget and
meaningful for those that ignore it.

It pays for a solve only when it must, trying in order (each a proven bound; they combine
through the monotonicity and convexity of I*, :func:`privbench.measures.optimum.interval`):

1. the anchors (the identity, the cheapest constant output) and X itself;
2. the run's own certificate (:class:`privbench.Certificate`: a certified solver's
   ``lower_bits`` <= I*(Δ), which bounds I*(D_X) from below when D_X <= Δ, I* being
   non-increasing; for D_X > Δ only convexity's weaker extension applies);
3. the certificates earlier runs paid for (:mod:`privbench.plugins.metrics._optimum_cache`,
   shared through the sweep's store); a run's own certificate joins them;
4. a solve at Δ = D_X by the certifier that suits the problem (:func:`choose_certifier`).

Default on for n <= ``max_n`` (5,000); ``-M optimum_large`` certifies larger alphabets.
"""

from __future__ import annotations

import math
import time
from typing import Any

import privbench as pb
from privbench import metrics as M
from privbench.measures.optimum import Bound, anchors, interval
from privbench.plugins.metrics._optimum_cache import OptimumCache
from privbench.protocol.certificate import CERTIFICATE_TOL_BITS, contradiction
from privbench.protocol.plugin import format_label

#: the largest alphabet certified by default (see README "How far from optimal")
DEFAULT_MAX_N = 5000
#: alphabets up to this size are certified by mirror descent (dense n x n, fastest there)
SMALL_N = 150
#: distortions on one numeric feature, where SPPM's pricing walks a line
LINE_METRICS = ("sq_l2", "l2", "l1")


def choose_certifier(problem: pb.PrivacyProblem, tol: float) -> tuple[str, dict[str, Any]]:
    """The solver that certifies I*(D) to ``tol`` bits fastest on this kind of problem.

    From the solver shootout (README): Frank-Wolfe SPPM where its pricing walks a line (one
    numeric feature: squared l2 on the synthetic grid, 0.15-0.56 s to 1e-3 bits at
    n = 1,024-4,096, where the dual mode needs up to 3 s); SPPM's dual mode on Hamming
    profiles and explicit matrices (census, MovieLens, random Hamming: the fastest from
    n = 300 on, and Frank-Wolfe's own bound stays weak there for thousands of steps); mirror
    descent on small alphabets of that kind (n <= SMALL_N), where the shootout found it
    fastest and the metric measured it 1.2-2.9x faster than the dual mode (census top 100,
    the Politics-and-TV surrogate; the dual mode was 1.8x faster at census top 300).
    """
    d = problem.distortion
    if isinstance(d, pb.FeatureDistortion) and d.metric in LINE_METRICS and d.points.shape[1] == 1:
        return "sppm", {"tol": tol}
    if problem.n <= SMALL_N:
        return "mirror_descent", {"tol": tol}
    return "sppm", {"tol": tol, "mode": "dual"}


def own_bound(result: pb.MechanismResult, delta: float, distortion: float, leakage: float
              ) -> Bound | None:
    """The run's own certificate as a bound on I* at Δ (None without one).

    Its ``lower_bits`` bounds I*(Δ) from below; the mapping (E[d] = D_X) bounds I*(Δ) from
    above only when D_X <= Δ. :func:`interval` uses the lower bound at D_X only when
    D_X <= Δ (monotonicity), else through convexity. A certificate that contradicts the
    run (solved at another Δ, or a lower bound above the mapping's own I:
    :func:`privbench.protocol.certificate.contradiction`) is not used, nor cached.
    """
    cert = pb.Certificate.from_stats(result.stats)
    if cert is None or not math.isfinite(delta) or contradiction(result.stats, delta, leakage):
        return None  # a certificate of another problem (the runner marks the run invalid)
    upper = leakage if distortion <= delta else math.inf
    return Bound(float(delta), cert.lower_bits, upper, "certificate")


class OptimumGap(pb.Metric):
    """A certified interval [L, U] on the least leakage at the mapping's distortion, and the excess.

    :param tol: the width U - L (bits) that needs no solve, and the tolerance the default
        certifier is given when one runs.
    :param max_n: the largest alphabet n certified (None: every one); a run on a larger problem
        gets no value (``-M optimum_large`` covers it).
    :param certifier: the mechanism that solves when the bounds at hand are wider than
        ``tol``, as (name, parameters), e.g. ``("sppm", {"mode": "dual", "tol": 1e-4})``;
        default: chosen per problem (SPPM Frank-Wolfe on one numeric feature, mirror descent
        up to 150 symbols, else SPPM's dual mode).
    """

    name = "optimum"
    description = "certified interval on the least leakage at the mapping's distortion; excess"
    needs = frozenset({"mapping"})
    outputs = (
        pb.Output("optimum_lower_bits", "bits", "neutral",
                  "L <= I*(D_X), the least leakage of any mapping with E[d] <= the mapping's own "
                  "distortion D_X (certified)", "Salamatian et al., SPPM (certified gap)"),
        pb.Output("optimum_upper_bits", "bits", "neutral",
                  "U >= I*(D_X): the leakage of a mapping with E[d] <= D_X"),
        pb.Output("excess_mi_bits_max", "bits", "lower",
                  "I(A; B̂) - L: the mapping leaks at most this much more than the optimum at "
                  "its distortion", label="excess over I* (at most)"),
        pb.Output("excess_mi_bits_min", "bits", "lower",
                  "I(A; B̂) - U: ... and at least this much more (>= 0)", label="excess over I* (at least)"),
        pb.Output("optimum_source", "none", "neutral",
                  "who certified the interval: anchors, certificate (the run's own), cache "
                  "(earlier runs) or the solver run"),
        pb.Output("optimum_seconds", "seconds", "neutral",
                  "the solve this run paid for (0 when a certificate was at hand)"),
    )

    def __init__(self, tol: float = 1e-3, max_n: int | None = DEFAULT_MAX_N,
                 certifier: tuple[str, dict[str, Any]] | None = None) -> None:
        self.tol = tol
        self.max_n = max_n
        self.certifier = certifier

    def applies(self, problem, result) -> bool:
        return super().applies(problem, result) and (self.max_n is None or problem.n <= self.max_n)

    def unmet(self, problem: pb.PrivacyProblem) -> str:
        if self.max_n is not None and problem.n > self.max_n:
            return (f"covers alphabets of at most max_n = {self.max_n} symbols, and this one has "
                    f"n = {problem.n} (-M optimum_large covers it)")
        return super().unmet(problem)

    def certify(self, problem: pb.PrivacyProblem, distortion: float, leakage: float,
                own: Bound | None = None) -> tuple[float, float, str, float]:
        """(L, U, source, seconds solved) on I*(distortion), given a mapping of ``leakage``
        and, optionally, the run's own certificate ``own``."""
        cache = OptimumCache(problem)
        known = [*anchors(problem), Bound(distortion, 0.0, leakage, "this mapping")]
        for source, more in (("anchors", []), ("certificate", [own] if own else []),
                             ("cache", cache.certificates())):
            known += more
            lower, upper = interval(known, distortion)
            if upper - lower <= self.tol:
                return lower, upper, source, 0.0
        name, params = self.certifier or choose_certifier(problem, self.tol)
        started = time.perf_counter()
        solved = pb.get_mechanism(name, **params).solve(problem, delta=distortion)
        seconds = time.perf_counter() - started
        label = format_label(name, params)
        cert = pb.Certificate.from_stats(solved.stats)
        bound = Bound(distortion, cert.lower_bits if cert else 0.0,
                      M.mutual_information(problem, solved.mapping), label)
        cache.add(bound, seconds)
        lower, upper = interval([*known, bound], distortion)
        return lower, upper, label, seconds

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        leakage = M.mutual_information(problem, result.mapping)
        distortion = M.expected_distortion(problem, result.mapping)
        own = own_bound(result, float(delta), distortion, leakage)
        # valid for every later run too; a run stopped at its cap without its certificate
        # (converged false) is not kept as a certificate of the optimum for others: its
        # bound joins this run's interval only, which then needs a solve when it is wide
        if own is not None and distortion <= delta and result.stats.get("converged") is not False:
            OptimumCache(problem).add(own, 0.0)
        lower, upper, source, seconds = self.certify(problem, distortion, leakage, own)
        if lower > leakage + CERTIFICATE_TOL_BITS * max(1.0, leakage):
            raise pb.PluginError(f"optimum: the bound {lower:.12g} bits from {source} exceeds the "
                                 f"mapping's own I = {leakage:.12g} bits; no excess reported")
        # rounding between two computations of I may leave lower a hair above leakage
        return {"optimum_lower_bits": min(lower, leakage), "optimum_upper_bits": upper,
                "excess_mi_bits_max": max(leakage - lower, 0.0),
                "excess_mi_bits_min": max(leakage - upper, 0.0),
                "optimum_source": source, "optimum_seconds": seconds}


class OptimumGapLarge(OptimumGap):
    """The same certificate for alphabets above the default's ``max_n`` (opt in: it can take
    minutes on census-scale alphabets).

    :param max_n: not read here: this metric certifies every alphabet above 5,000 symbols (the
        parameter is the default ``optimum`` metric's limit).
    """

    name = "optimum_large"
    description = f"the optimum metric for n > {DEFAULT_MAX_N} (opt-in: -M optimum_large)"
    default = False

    def applies(self, problem, result) -> bool:
        return pb.Metric.applies(self, problem, result) and problem.n > DEFAULT_MAX_N

    def unmet(self, problem: pb.PrivacyProblem) -> str:
        if problem.n <= DEFAULT_MAX_N:
            return (f"covers only alphabets above {DEFAULT_MAX_N} symbols, and this one has "
                    f"n = {problem.n} (the default optimum metric covers it)")
        return pb.Metric.unmet(self, problem)


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [OptimumGap, OptimumGapLarge]
