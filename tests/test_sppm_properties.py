"""SPPM invariants on random problems (hypothesis) and across LP backends."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privbench as pb
from privbench.measures.information import expected_distortion, mutual_information

pytest.importorskip("highspy")

OPT_TOL = 1e-6


def perfect_privacy_budget(problem: pb.PrivacyProblem) -> float:
    return float((problem.distortion.to_dense() @ problem.p_b).min())


def check_mapping(problem: pb.PrivacyProblem, res: pb.MechanismResult, delta: float) -> float:
    X = pb.validate_mapping(res.mapping, problem.n)
    assert expected_distortion(problem, X) <= delta + 1e-9
    mi = mutual_information(problem, X)
    assert -1e-12 <= mi <= problem.prior_mi_bits + 1e-12
    return mi


@st.composite
def problems(draw):
    n = draw(st.integers(2, 7))
    k = draw(st.integers(2, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(n * k, draw(st.sampled_from([0.3, 1.0, 5.0])))).reshape(k, n)
    if draw(st.booleans()):
        joint[:, rng.integers(n)] = 0.0  # a public symbol that never occurs
        if joint.sum() == 0:
            joint[0, 0] = 1.0
    D = rng.random((n, n)) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    np.fill_diagonal(D, 0.0)
    problem = pb.PrivacyProblem.from_arrays(joint, D)
    frac = draw(st.sampled_from([0.0, 0.02, 0.2, 0.6, 1.0]))
    return problem, frac * perfect_privacy_budget(problem)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_sppm_invariants_and_certificate(case) -> None:
    problem, delta = case
    res = pb.get_mechanism("sppm", tol=1e-5, iterations=150).solve(problem, delta)
    mi = check_mapping(problem, res, delta)  # stochastic, E[d] <= Δ, 0 <= I <= I(A;B)
    trace = np.array(res.stats["objective_trace_bits"])
    assert np.all(np.diff(trace) <= 1e-12)
    mi_opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    assert mi >= mi_opt - OPT_TOL
    assert res.stats["gap_bits"] >= mi - mi_opt - OPT_TOL


@pytest.mark.parametrize("backend", ["mckp", "scipy", "glop", "pdlp", "cvxpy"])
def test_every_lp_backend_gives_the_same_result(backend: str) -> None:
    try:
        pb.get_lp_backend(backend)
    except pb.PluginError as exc:
        pytest.skip(str(exc))
    problem = pb.load_dataset("random", n=10, n_private=3, seed=4, distortion="hamming")
    delta = 0.2 * perfect_privacy_budget(problem)
    ref = pb.get_mechanism("sppm", tol=1e-4, iterations=60, lp_backend="highs").solve(
        problem, delta)
    res = pb.get_mechanism("sppm", tol=1e-4, iterations=60, lp_backend=backend).solve(
        problem, delta)
    mi = check_mapping(problem, res, delta)
    mi_ref = ref.stats["objective_bits"]
    assert abs(mi - mi_ref) <= max(res.stats["gap_bits"], ref.stats["gap_bits"]) + 1e-7
    assert abs(mi - mi_ref) <= 1e-3


def test_pairwise_variant_certifies_the_same_optimum() -> None:
    problem = pb.load_dataset("random", n=14, n_private=2, seed=9, distortion="hamming")
    delta = 0.2 * perfect_privacy_budget(problem)
    res = pb.get_mechanism("sppm", tol=1e-5, iterations=300, variant="pairwise").solve(
        problem, delta)
    mi = check_mapping(problem, res, delta)
    mi_opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    # at its certified gap (not a blanket 1e-3), and never below the optimum
    assert mi_opt - OPT_TOL <= mi <= mi_opt + res.stats["gap_bits"] + OPT_TOL
    assert res.stats["gap_bits"] >= mi - mi_opt - OPT_TOL


