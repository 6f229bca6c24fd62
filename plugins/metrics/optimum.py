"""``optimum``: how far a mapping is from the least leakage possible at its own distortion.

For a mapping X with leakage I_X and distortion D_X, the metric certifies an interval
[L, U] on I*(D_X), the least I(A; B̂) of any mapping with E[d] <= D_X, and reports

* ``optimum_lower_bits`` (L) and ``optimum_upper_bits`` (U);
* ``excess_mi_bits_max`` = I_X - L: X leaks at most this much more than the optimum;
* ``excess_mi_bits_min`` = I_X - U: ... and at least this much more (>= 0, since X
  itself is a mapping at D_X);
* ``optimum_source`` (who certified it: ``sppm``, ``cache`` or the anchors) and
  ``optimum_seconds`` (the solve this run paid for; 0 when earlier runs' certificates
  already pinned I*(D_X) within ``tol``).

D_X, not Δ, makes the comparison fair to mechanisms that under-spend their budget and
meaningful for those that ignore it. Certificates come from SPPM at Δ = D_X (its
certified Frank-Wolfe gap) and are shared through :mod:`privbench.plugins.metrics._optimum_cache`
and the monotonicity and convexity of I* (:mod:`privbench.protocol.optimum`).

Default on for n <= ``max_n`` (5,000); ``-M optimum_large`` certifies larger alphabets.
"""

from __future__ import annotations

import time
from typing import Any

import privbench as pb
from privbench import metrics as M
from privbench.plugins.metrics._optimum_cache import OptimumCache
from privbench.protocol.optimum import Bound, anchors, interval

#: the largest alphabet certified by default (see README "How far from optimal")
DEFAULT_MAX_N = 5000


class OptimumGap(pb.Metric):
    name = "optimum"
    description = "certified interval on the least leakage at the mapping's distortion; excess"
    needs = frozenset({"mapping"})

    def __init__(self, tol: float = 1e-3, max_n: int | None = DEFAULT_MAX_N,
                 sppm: dict[str, Any] | None = None) -> None:
        self.tol = tol
        self.max_n = max_n
        self.sppm = {"tol": tol, "mode": "dual"} if sppm is None else sppm

    def applies(self, problem, result) -> bool:
        return super().applies(problem, result) and (self.max_n is None or problem.n <= self.max_n)

    def certify(self, problem: pb.PrivacyProblem, distortion: float, leakage: float
                ) -> tuple[float, float, str, float]:
        """(L, U, source, seconds solved) on I*(distortion), given a mapping of ``leakage``."""
        cache = OptimumCache(problem)
        own = Bound(distortion, 0.0, leakage, "this mapping")
        lower, upper = interval([*anchors(problem), own], distortion)
        if upper - lower <= self.tol:
            return lower, upper, "anchors", 0.0
        known = anchors(problem) + cache.certificates()
        lower, upper = interval([*known, own], distortion)
        if upper - lower <= self.tol:
            return lower, upper, "cache", 0.0
        started = time.perf_counter()
        solved = pb.get_mechanism("sppm", **self.sppm).solve(problem, delta=distortion)
        seconds = time.perf_counter() - started
        cert = Bound(distortion, float(solved.stats["lower_bits"]),
                           M.mutual_information(problem, solved.mapping), "sppm")
        cache.add(cert, seconds)
        lower, upper = interval([*known, own, cert], distortion)
        return lower, upper, "sppm", seconds

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        leakage = M.mutual_information(problem, result.mapping)
        distortion = M.expected_distortion(problem, result.mapping)
        lower, upper, source, seconds = self.certify(problem, distortion, leakage)
        return {"optimum_lower_bits": lower, "optimum_upper_bits": upper,
                "excess_mi_bits_max": leakage - lower, "excess_mi_bits_min": leakage - upper,
                "optimum_source": source, "optimum_seconds": seconds}


class OptimumGapLarge(OptimumGap):
    """The same certificate for alphabets above the default's ``max_n`` (opt in: it can take
    minutes on census-scale alphabets)."""

    name = "optimum_large"
    description = f"the optimum metric for n > {DEFAULT_MAX_N} (opt-in: -M optimum_large)"
    default = False

    def applies(self, problem, result) -> bool:
        return pb.Metric.applies(self, problem, result) and problem.n > DEFAULT_MAX_N


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [OptimumGap, OptimumGapLarge]
