"""The README's main job: ``optimal`` on specs/toy.toml is certified at every budget.

Its own decoder bound once left a gap of 0.012 bits at Δ = 4 and 16 (outputs the optimum
leaves unused were decoded as p(a)), and at Δ = 256 Clarabel ended "inaccurate" (the
budget is exactly the perfect-privacy LP's least E[d]) and SCS took 14-29 s. Checked
against independent numbers: SPPM's certified leakage at the same budget (no valid lower
bound can exceed a feasible mapping's leakage) and the ``perfect_privacy`` plugin's LP.
"""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import expected_distortion, mutual_information

pytest.importorskip("cvxpy")
pytestmark = pytest.mark.slow  # ~20 solves of n = 64, 4-9 s

TOY_DELTAS = (0.25, 1.0, 4.0, 16.0, 64.0, 256.0)  # specs/toy.toml
TOL_BITS = 1e-4  # the tolerance the README quotes for the main job


@pytest.fixture(scope="module")
def toy() -> pb.PrivacyProblem:
    return pb.load_dataset("synthetic", m=6)


@pytest.fixture(scope="module")
def solved(toy) -> dict[float, pb.MechanismResult]:
    mech = pb.get_mechanism("optimal")
    return {d: mech.solve(toy, delta=d) for d in TOY_DELTAS}


@pytest.mark.parametrize("delta", TOY_DELTAS)
def test_optimal_reaches_its_tolerance_at_every_toy_budget(solved, delta) -> None:
    stats = solved[delta].stats
    assert stats["converged"] is True and stats["solver_status"] == "optimal"
    assert stats["gap_bits"] <= TOL_BITS, (delta, stats["gap_bits"])


@pytest.mark.parametrize("delta", (4.0, 16.0, 64.0))
def test_the_refined_bound_never_exceeds_a_feasible_mapping(toy, solved, delta) -> None:
    sppm = pb.get_mechanism("sppm", mode="optimal", tol=1e-6, iterations=2000)
    other = sppm.solve(toy, delta=delta)
    assert expected_distortion(toy, other.mapping) <= delta * (1 + 1e-9)
    feasible = mutual_information(toy, other.mapping)
    lower = solved[delta].stats["lower_bits"]
    assert lower <= feasible + 1e-9
    assert solved[delta].stats["objective_bits"] - lower <= TOL_BITS


def test_at_the_perfect_privacy_budget_the_lp_answers_exactly(toy, solved) -> None:
    res = solved[256.0]
    assert res.stats["solver_used"] == "perfect_privacy_lp"
    least = pb.get_mechanism("perfect_privacy").solve(toy, delta=256.0)
    assert expected_distortion(toy, least.mapping) == pytest.approx(256.0, rel=1e-7)
    X = res.mapping.toarray() if hasattr(res.mapping, "toarray") else np.asarray(res.mapping)
    W = (X @ np.asarray(toy.joint).T).T / toy.p_a[:, None]  # p(b̂ | a), one row per a
    assert np.abs(W - W[0]).max() <= 1e-7
    assert expected_distortion(toy, res.mapping) <= 256.0 * (1 + 1e-12)
    assert mutual_information(toy, res.mapping) <= 1e-9
