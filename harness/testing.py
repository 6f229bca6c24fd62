"""Conformance checks for plugin authors (like sklearn's ``check_estimator``).

``check_mechanism(MyMechanism)`` runs a mapping mechanism on small seeded problems
and asserts the invariants every mapping must satisfy: an (n, n) column-stochastic
non-negative mapping, E[d(B, B̂)] <= Δ (when the mechanism promises it) and
0 <= I(A; B̂) <= I(A; B) (data processing).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from privbench.protocol import information as M
from privbench.protocol.errors import PrivbenchError
from privbench.protocol.mechanism import MAPPING, Mechanism, validate_mapping
from privbench.protocol.problem import PrivacyProblem

__all__ = ["check_mechanism", "small_problems"]


def small_problems(seed: int = 0) -> list[PrivacyProblem]:
    """A few seeded problems: random zero-diagonal D, Hamming profiles, squared l2."""
    rng = np.random.default_rng(seed)
    problems = []
    for n, k in ((6, 2), (9, 3)):
        joint = rng.dirichlet(np.ones(n * k)).reshape(k, n)
        D = rng.random((n, n))
        np.fill_diagonal(D, 0.0)
        problems.append(PrivacyProblem.from_arrays(joint, D, name=f"check-random-{n}x{k}"))
    codes = np.array(list(itertools.product([0, 1], repeat=3)), dtype=float)
    joint = rng.dirichlet(np.ones(16)).reshape(2, 8)
    from privbench.protocol.distortion import FeatureDistortion

    problems.append(PrivacyProblem.from_arrays(joint, FeatureDistortion(codes, "hamming"),
                                               name="check-hamming-8"))
    pts = np.arange(8, dtype=float)
    problems.append(PrivacyProblem.from_arrays(joint[::-1], FeatureDistortion(pts, "sq_l2"),
                                               name="check-sql2-8"))
    return problems


def _budgets(problem: PrivacyProblem) -> list[float]:
    D = problem.distortion.to_dense()
    avg = float(np.sum(problem.p_b * D.mean(axis=0)))  # distortion of a uniform mapping
    return [0.0, 0.05 * avg, 0.3 * avg, 2.0 * avg]


def check_mechanism(cls: type[Mechanism], params: dict[str, Any] | None = None,
                    *, atol_bits: float = 1e-9) -> list[dict[str, Any]]:
    """Run ``cls(**params)`` on :func:`small_problems` at several budgets; assert invariants.

    :returns: one summary dict per (problem, Δ) checked.
    :raises AssertionError: naming the problem, Δ and the broken invariant.
    """
    mech = cls(**(params or {}))
    if mech.output != MAPPING:
        raise PrivbenchError(f"check_mechanism checks mapping mechanisms; {cls.name} is {mech.output}")
    summaries = []
    for problem in small_problems():
        skip, _ = mech.skip(problem)
        if skip:
            continue
        for delta in _budgets(problem):
            where = f"{cls.name} on {problem.name} at delta={delta:.4g}"
            res = mech.solve(problem, delta, seed=0)
            try:
                X = validate_mapping(res.mapping, problem.n)
            except PrivbenchError as exc:
                raise AssertionError(f"{where}: {exc}") from None
            mi = M.mutual_information(problem, X)
            dist = M.expected_distortion(problem, X)
            assert mi >= -atol_bits, f"{where}: I(A;B̂) = {mi} < 0"
            assert mi <= problem.prior_mi_bits + atol_bits, (
                f"{where}: I(A;B̂) = {mi} exceeds I(A;B) = {problem.prior_mi_bits} (data processing)")
            if getattr(mech, "respects_budget", False):
                assert dist <= delta + 1e-9 * max(1.0, delta), (
                    f"{where}: E[d] = {dist} exceeds the budget")
            summaries.append({"problem": problem.name, "delta": delta, "mi_bits": mi,
                              "distortion": dist})
    if not summaries:
        raise AssertionError(f"{cls.name} skipped every check problem")
    return summaries
