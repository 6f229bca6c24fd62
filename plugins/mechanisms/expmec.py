"""The exponential mechanism p(b̂ | b) ∝ exp(-β d(b̂, b)) (SPPM paper, section 4.2).

Given Δ, β is found by root finding on E[d](β) = Δ (E[d] decreases in β); with
``beta`` set, that β is used as is. It satisfies ε-local differential privacy with
ε = 2 β d_max, which is reported as ``epsilon``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import privbench as pb


def exponential_mapping(D: np.ndarray, beta: float) -> np.ndarray:
    """Column-stochastic X with X[:, j] ∝ exp(-β D[:, j]) (stabilised per column)."""
    shifted = D - D.min(axis=0, keepdims=True)
    W = np.exp(-beta * shifted)
    return W / W.sum(axis=0, keepdims=True)


def expected_distortion_dense(D: np.ndarray, X: np.ndarray, p_b: np.ndarray) -> float:
    return float(np.sum(p_b * np.sum(X * D, axis=0)))


def solve_beta(D: np.ndarray, p_b: np.ndarray, delta: float, *, xtol: float = 1e-12) -> float:
    """Smallest β with E[d](β) <= Δ (np.inf when only β = ∞ meets it)."""
    def excess(beta: float) -> float:
        return expected_distortion_dense(D, exponential_mapping(D, beta), p_b) - delta

    if excess(0.0) <= 0:
        return 0.0
    if delta <= 0:
        return np.inf  # only the β -> ∞ limit (a nearest-symbol mapping) has E[d] = 0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e12:
            return np.inf
    lo = hi / 2.0 if hi > 1.0 else 0.0
    from scipy.optimize import brentq  # imported where used: plugin listing stays light

    beta = float(brentq(excess, lo, hi, xtol=xtol, rtol=1e-14, maxiter=500))
    # the root may sit a hair on the infeasible side: nudge β up until E[d] <= Δ
    step = 1e-12
    while excess(beta) > 0:
        beta = max(beta, 1e-300) * (1 + step)
        step *= 10
    return beta


class ExponentialMechanism(pb.SizeLimited, pb.MappingMechanism):
    """ExpMec: a dense mapping; refuses alphabets above ``max_n`` (n x n memory).

    :param beta: the inverse temperature β >= 0, used as is whatever Δ (the run then promises
        no budget); default: the smallest β with E[d] <= Δ, by root finding.
    :param max_n: the largest alphabet n it accepts (the mapping is a dense n x n array); a
        larger problem is skipped.
    """

    name = "expmec"
    citation = ('McSherry and Talwar, Mechanism design via differential privacy, FOCS 2007; compared '
                'in Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI '
                '2014')
    description = "exponential mechanism, β calibrated to the budget (local DP baseline)"
    test_parameters = {"beta": [None, 0.5]}

    def __init__(self, beta: float | None = None, max_n: int = 8192) -> None:
        self.beta = beta
        self.max_n = max_n

    @property
    def respects_budget(self) -> bool:  # type: ignore[override]
        return self.beta is None

    def check_params(self) -> None:
        beta = self.beta
        if beta is not None and (not isinstance(beta, int | float) or isinstance(beta, bool)
                                 or not np.isfinite(beta) or beta < 0):
            raise pb.ValidationError(f"expmec: beta must be a finite number >= 0; got {beta!r}")
        super().check_params()  # max_n

    def size_reason(self, n: int) -> str:
        """The mapping is dense."""
        return f"expmec builds a dense {n} x {n} mapping"

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        D = problem.distortion.to_dense(force=problem.n <= self.max_n)
        stats: dict[str, Any] = {}
        if self.beta is not None:
            beta = float(self.beta)
        else:
            problem.require_zero_diagonal("expmec with a budget")
            beta = solve_beta(D, problem.p_b, delta)
        if np.isinf(beta):
            # ties at distance 0 share the mass, as the β -> ∞ limit does
            zero = D <= 0
            X = zero / zero.sum(axis=0, keepdims=True)
        else:
            X = exponential_mapping(D, beta)
        d_max = float(D.max()) if D.size else 0.0
        stats["beta"] = beta if np.isfinite(beta) else None
        stats["epsilon"] = 2.0 * beta * d_max if np.isfinite(beta) else None
        stats["d_max"] = d_max
        return self.result(X, **stats)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [ExponentialMechanism]
