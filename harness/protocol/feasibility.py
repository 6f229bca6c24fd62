"""Repairs that keep a mapping exactly feasible despite solver tolerances.

Shared by every solver of problem (1) (SPPM, the exact optimum, third-party solvers).

LP and conic solvers return points that satisfy constraints to ~1e-9; the runner
marks E[d] > Δ (+1e-9) as invalid and column sums off by > 1e-9 as broken. These
helpers make the arithmetic exact instead of hoping the tolerances line up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from privbench.protocol.problem import PrivacyProblem

#: relative slack on E[d] <= Δ (absolute below Δ = 1): the one budget test of the runner,
#: ``compare``, the report's tables and ``tools/notions_table.py``
BUDGET_TOL = 1e-9


def budget_slack(delta: float) -> float:
    """How far E[d] may exceed ``delta`` and still count as within it: BUDGET_TOL·max(1, Δ)."""
    return BUDGET_TOL * max(1.0, abs(float(delta)))


def within_budget(distortion: float, delta: float) -> bool:
    """E[d] <= Δ up to the runner's tolerance (the same test that marks a run invalid)."""
    return float(distortion) <= float(delta) + budget_slack(delta)


def normalise_columns(cols: np.ndarray, x: np.ndarray, n: int) -> np.ndarray:
    """Clip x at 0 and rescale so the entries of each input column sum to one."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    sums = np.bincount(cols, weights=x, minlength=n)
    if np.any((sums <= 0) & (np.bincount(cols, minlength=n) > 0)):
        raise ValueError("a column of the mapping has no positive entry")
    return x / sums[cols]


def pull_into_budget(a: np.ndarray, x_new: np.ndarray, x_safe: np.ndarray, delta: float
                     ) -> np.ndarray:
    """Mix x_new (an LP point, feasible only to tolerance) with x_safe so that a·x <= Δ.

    ``x_safe`` is a mapping on the same pairs with a·x_safe <= Δ (SPPM's start).
    """
    used = float(a @ x_new)
    if used <= delta:
        return x_new
    used_safe = float(a @ x_safe)
    if used_safe > delta:
        raise ValueError("the fallback mapping does not meet the budget either")
    theta = float(np.nextafter((delta - used_safe) / (used - used_safe), 0.0))
    return theta * x_new + (1.0 - theta) * x_safe


def mix_into_budget(X: np.ndarray, X_safe: np.ndarray, used: float, used_safe: float,
                    delta: float) -> tuple[np.ndarray, float]:
    """Mix a dense X that overshoots Δ with a feasible X_safe: θ X + (1-θ) X_safe <= Δ."""
    if used <= delta:
        return X, 1.0
    if used_safe > delta:
        raise ValueError("the fallback mapping does not meet the budget either")
    theta = (delta - used_safe) / (used - used_safe)
    theta = np.nextafter(theta, 0.0)
    return theta * X + (1.0 - theta) * X_safe, float(theta)


def row_budget_costs(problem: PrivacyProblem, rows: np.ndarray | None = None) -> np.ndarray:
    """E[d] of the constant mapping to each output i: Σ_j p(b_j) d(b̂_i, b_j), in blocks.

    For squared l2 on feature vectors it is ``||x_i - μ||² + Σ_j p_j ||x_j - μ||²`` (μ the
    p-weighted mean), for Hamming ``Σ_t (Σ_j p_j - m_t(x_it))`` (m_t(v) the mass of the
    symbols whose attribute t is v): O(n k) instead of O(n²), up to rounding;
    :func:`constant_output` recomputes the chosen row exactly (``rows``).
    """
    n = problem.n
    dist = problem.distortion
    if rows is not None:
        return dist.block(rows, np.arange(n)) @ problem.p_b
    if getattr(dist, "metric", None) == "sq_l2":
        centred = dist.points - problem.p_b @ dist.points
        sq = (centred * centred).sum(axis=1)
        return sq + problem.p_b @ sq
    if getattr(dist, "metric", None) == "hamming":
        out = np.zeros(n)
        for column in dist.points.T:
            _, value = np.unique(column, return_inverse=True)
            out += problem.p_b.sum() - np.bincount(value, weights=problem.p_b)[value]
        return out
    step = max(1, min(n, 2**22 // max(n, 1)))
    out = np.empty(n)
    cols = np.arange(n)
    for s in range(0, n, step):
        rows_ = np.arange(s, min(n, s + step))
        out[rows_] = dist.block(rows_, cols) @ problem.p_b
    return out


def constant_distortion(problem: PrivacyProblem) -> float:
    """d_const: E[d] of the best constant mapping (what the ``constant`` mechanism releases),
    the natural scale of a budget; the chosen row's sum recomputed exactly."""
    best = int(np.argmin(row_budget_costs(problem)))
    return float(row_budget_costs(problem, np.array([best]))[0])


def constant_output(problem: PrivacyProblem, delta: float) -> int | None:
    """The output i whose constant mapping meets Δ (the cheapest), or None.

    The exact row sum may differ from a Δ computed in another order by an ulp or two: a
    relative 1e-12 stays far inside the runner's budget tolerance (1e-9).
    """
    costs = row_budget_costs(problem)
    best = int(np.argmin(costs))
    if costs[best] <= delta * (1 + 1e-9) \
            and row_budget_costs(problem, np.array([best]))[0] <= delta * (1 + 1e-12):
        return best
    return None
