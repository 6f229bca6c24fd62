"""The exact optimum of problem (1): independent checks and the size limit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

import privbench as pb
from privbench.metrics import expected_distortion, mutual_information, mutual_information_of_joint

pytest.importorskip("cvxpy")


def brute_force(joint: np.ndarray, D: np.ndarray, delta: float) -> float:
    """min I by SLSQP directly on X (convex there, so local = global), for tiny n."""
    n = joint.shape[1]
    p_b = joint.sum(axis=0)
    A = (D * p_b[None, :]).ravel()

    def mi(v: np.ndarray) -> float:
        return mutual_information_of_joint(joint @ np.clip(v.reshape(n, n), 0, None).T)

    cons = [{"type": "ineq", "fun": lambda v: delta - A @ v},
            {"type": "eq", "fun": lambda v: v.reshape(n, n).sum(axis=0) - 1.0}]
    best = np.inf
    for start in (np.eye(n), np.full((n, n), 1.0 / n)):
        x0 = start.ravel() if A @ start.ravel() <= delta else np.eye(n).ravel()
        res = minimize(mi, x0, constraints=cons, bounds=[(0, 1)] * n * n, method="SLSQP",
                       options={"ftol": 1e-14, "maxiter": 1000})
        if A @ res.x <= delta + 1e-9:
            best = min(best, res.fun)
    return best


@pytest.mark.parametrize("delta", [0.05, 0.15])
def test_matches_an_independent_brute_force(delta: float) -> None:
    joint = np.array([[0.30, 0.15, 0.05], [0.05, 0.15, 0.30]])
    D = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    problem = pb.PrivacyProblem.from_arrays(joint, D)
    res = pb.get_mechanism("optimal").solve(problem, delta)
    X = pb.validate_mapping(res.mapping, 3)
    assert expected_distortion(problem, X) <= delta + 1e-9
    mi = mutual_information(problem, X)
    assert mi == pytest.approx(brute_force(joint, D, delta), abs=2e-5)
    assert res.stats["objective_bits"] == pytest.approx(mi, abs=1e-12)


@pytest.mark.parametrize("kind", ["random", "hamming", "sq_l2"])
def test_never_worse_than_another_feasible_mechanism(kind: str) -> None:
    problem = pb.load_dataset("random", n=15, n_private=3, seed=21, distortion=kind)
    for delta in (0.02, 0.3):
        opt = pb.get_mechanism("optimal").solve(problem, delta)
        exp = pb.get_mechanism("expmec").solve(problem, delta)
        assert expected_distortion(problem, opt.mapping) <= delta + 1e-9
        assert mutual_information(problem, opt.mapping) <= \
            mutual_information(problem, exp.mapping) + 1e-7
        assert mutual_information(problem, opt.mapping) <= problem.prior_mi_bits + 1e-12


def test_refuses_above_max_n_with_a_way_out() -> None:
    problem = pb.load_dataset("random", n=6, n_private=2, seed=0)
    mech = pb.get_mechanism("optimal", max_n=5)
    skip, reason = mech.skip(problem)
    assert skip and "max_n = 5" in reason and "optimal:max_n=6" in reason
    with pytest.raises(pb.ValidationError, match="max_n"):
        mech.solve(problem, 0.1)
    raised = pb.get_mechanism("optimal", max_n=6)
    assert raised.skip(problem) == (False, None)
    pb.validate_mapping(raised.solve(problem, 0.1).mapping, 6)


def test_other_solver_and_unknown_solver() -> None:
    problem = pb.load_dataset("random", n=6, n_private=2, seed=3, distortion="hamming")
    a = pb.get_mechanism("optimal").solve(problem, 0.3)
    b = pb.get_mechanism("optimal", solver="SCS").solve(problem, 0.3)
    assert mutual_information(problem, b.mapping) == pytest.approx(
        mutual_information(problem, a.mapping), abs=1e-3)
    with pytest.raises(pb.ValidationError, match="NO_SUCH"):
        pb.get_mechanism("optimal", solver="NO_SUCH").solve(problem, 0.3)


def test_zero_budget_and_perfect_privacy() -> None:
    problem = pb.load_dataset("random", n=8, n_private=2, seed=5, distortion="random")
    res0 = pb.get_mechanism("optimal").solve(problem, 0.0)
    assert expected_distortion(problem, res0.mapping) <= 1e-9
    assert mutual_information(problem, res0.mapping) == pytest.approx(problem.prior_mi_bits,
                                                                       abs=1e-6)
    big = float((problem.distortion.to_dense() @ problem.p_b).min())
    res = pb.get_mechanism("optimal").solve(problem, big)
    assert mutual_information(problem, res.mapping) <= 1e-6
