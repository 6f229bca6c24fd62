"""k-ary randomized response (Warner 1965; Kairouz, Oh, Viswanath 2014): a local-DP baseline.

Keep the true symbol with probability e^ε / (e^ε + n - 1), otherwise release one of the
other n - 1 symbols uniformly: X = (e^ε I + (11ᵀ - I)) / (e^ε + n - 1), ε-local DP.

Given Δ instead of ε, ε is chosen in closed form: with d(b, b) = 0,
E[d] = S / (e^ε + n - 1), S = Σ_j p(b_j) Σ_i d(b̂_i, b_j), so
e^ε = S / Δ - n + 1 (ε = 0, the uniform mapping, when that is <= 1; ε = ∞, the
identity, when Δ = 0). The mapping is dense: alphabets above ``max_n`` are skipped.
"""

from __future__ import annotations

import numpy as np

import privbench as pb


def rr_mapping(n: int, epsilon: float) -> np.ndarray:
    """The k-ary RR matrix for ``n`` symbols (identity at ε = ∞)."""
    if np.isinf(epsilon):
        return np.eye(n)
    # divide by e^ε to stay finite for large ε
    off = 1.0 / (1.0 + (n - 1) * np.exp(-epsilon))
    X = np.full((n, n), np.exp(-epsilon) * off)
    np.fill_diagonal(X, off)
    return X


def mass_weighted_column_sums(problem: pb.PrivacyProblem, *, step: int = 1024) -> float:
    """S = Σ_j p(b_j) Σ_i d(b̂_i, b_j), computed in blocks of columns."""
    n, total = problem.n, 0.0
    rows = np.arange(n)
    for s in range(0, n, step):
        cols = np.arange(s, min(n, s + step))
        total += float(problem.distortion.block(rows, cols).sum(axis=0) @ problem.p_b[cols])
    return total


def epsilon_for_budget(S: float, n: int, delta: float) -> float:
    """The largest ε with E[d] = S / (e^ε + n - 1) <= Δ."""
    if delta <= 0:
        return np.inf if S > 0 else 0.0
    e_eps = S / delta - n + 1
    return float(np.log(e_eps)) if e_eps > 1 else 0.0


class RandomizedResponse(pb.SizeLimited, pb.MappingMechanism):
    """k-ary randomized response over the public alphabet.

    :param epsilon: the local-DP ε >= 0 (``inf``: the identity), used as is whatever Δ (the run
        then promises no budget); default: the largest ε with E[d] <= Δ, in closed form.
    :param max_n: the largest alphabet n it accepts (the mapping is dense n x n); a larger
        problem is skipped.
    """

    name = "randomized_response"
    citation = ('Warner, Randomized response, JASA 1965; Kairouz, Oh, Viswanath, Extremal mechanisms '
                'for local differential privacy, NIPS 2014')
    description = "k-ary randomized response, ε from the budget in closed form (local DP)"
    test_parameters = {"epsilon": [None, 1.0]}

    def __init__(self, epsilon: float | None = None, max_n: int = 8192) -> None:
        self.epsilon = epsilon
        self.max_n = max_n

    @property
    def respects_budget(self) -> bool:  # type: ignore[override]
        return self.epsilon is None

    def check_params(self) -> None:
        eps = self.epsilon
        if eps is not None and (not isinstance(eps, int | float) or isinstance(eps, bool)
                                or np.isnan(eps) or eps < 0):
            raise pb.ValidationError(
                f"randomized_response: epsilon must be a number >= 0; got {eps!r}")
        super().check_params()  # max_n

    def size_reason(self, n: int) -> str:
        """The mapping is dense."""
        return f"randomized_response builds a dense {n} x {n} mapping"

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        n = problem.n
        if self.epsilon is not None:
            eps = float(self.epsilon)
        else:
            problem.require_zero_diagonal("randomized_response with a budget")
            eps = epsilon_for_budget(mass_weighted_column_sums(problem), n, delta)
        X = rr_mapping(n, eps)
        return self.result(X, epsilon=eps if np.isfinite(eps) else None,
                           keep_probability=float(X[0, 0]))


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [RandomizedResponse]
