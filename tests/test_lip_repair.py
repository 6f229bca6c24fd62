"""``lip_optimal``'s ε repair with a sparse perfectly private V (``_pp_pieces``).

The pieces must be perfectly private rows summing to the all-ones row; the mixer a
column-stochastic mapping that is 0 outside the broken outputs and positive on each; the
repaired mapping must meet ε to the runner's tolerance with the least θ (a slightly smaller
θ breaks it), and stay sparse where the old uniform V took |B| · n entries.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.measures import notions
from privbench.plugins.mechanisms import lip_optimal as lip
from privbench.plugins.mechanisms._pp_pieces import pieces, private_mixer

PROMISE = 1e-9  # the runner's relative tolerance (absolute below 1)


def random_problem(k: int, n: int, seed: int, dead: int = 0) -> pb.PrivacyProblem:
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(k * n, 0.4)).reshape(k, n)
    if dead:
        joint[:, rng.choice(n, dead, replace=False)] = 0.0
        joint /= joint.sum()
    D = rng.integers(0, 5, size=(n, n)).astype(float)
    np.fill_diagonal(D, 0.0)
    return pb.PrivacyProblem.from_arrays(joint, D, name=f"repair-{k}-{n}-{seed}")


def live_arrays(problem: pb.PrivacyProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    live = np.flatnonzero(problem.p_b > 0)
    return problem.joint[:, live] / problem.p_a[:, None], problem.p_b[live], live


@pytest.mark.parametrize("k", [2, 3, 5])
def test_pieces_are_perfectly_private_and_sum_to_ones(k: int) -> None:
    cond, p, _ = live_arrays(random_problem(k, 300, seed=k))
    S = pieces(cond, p)
    assert S.data.min() > 0
    np.testing.assert_allclose(S.sum(axis=0), 1.0, atol=1e-13)
    mass = S @ p
    # every row: Σ_j s_j p(b_j | a) = Σ_j s_j p(b_j) for every a, relative to its mass
    assert (np.abs(S @ cond.T - mass[:, None]) <= 1e-10 * mass[:, None]).all()
    # mostly at most 2^(k-1) symbols per piece (rounding leftovers are folded into one
    # piece per stage, which later stages split): sparse, not |B| x n
    support = np.diff(S.indptr)
    assert np.median(support) <= 2 ** (k - 1) and S.nnz <= 2 ** k * 300
    assert S.shape[0] >= 300 // 2 ** (k - 1)  # many pieces: sparse rows to deal out


def test_mixer_is_stochastic_private_and_only_on_the_outputs() -> None:
    problem = random_problem(2, 400, seed=3, dead=5)
    cond, p, live = live_arrays(problem)
    outputs = np.sort(np.random.default_rng(0).choice(400, 150, replace=False))
    V = private_mixer(cond, p, live, problem.n, outputs).toarray()
    assert V.min() >= 0
    np.testing.assert_allclose(V.sum(axis=0), 1.0, atol=1e-13)
    others = np.setdiff1d(np.arange(400), outputs)
    assert not V[others].any()
    W, q = cond @ V[:, live].T, V[:, live] @ p
    assert (q[outputs] > 0).all()
    assert np.abs(W[:, outputs] - q[outputs]).max() <= 1e-10 * q[outputs].min()
    # sparse: about two symbols per piece, not |B| · n
    assert np.count_nonzero(V) <= 2 * problem.n + 10


@pytest.mark.parametrize("notion", ["lip", "ldp"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_repair_meets_epsilon_with_the_least_theta_and_stays_sparse(notion: str,
                                                                    epsilon: float) -> None:
    """X = the LP's optimum with a hair of the identity (which breaks ε at every output)."""
    problem = random_problem(2, 300, seed=11, dead=3)
    base = pb.get_mechanism("lip_optimal", notion=notion, max_n=300, lp_backend="highs")
    base.prepare(problem, pb.RunContext(seed=0))
    X0 = sp.csc_array(super(lip.LipOptimal, base).run(problem, epsilon).mapping)  # unrepaired
    X = sp.csc_array((1 - 1e-7) * X0 + 1e-7 * sp.identity(300, format="csc"))
    measure = notions.lip_epsilon if notion == "lip" else notions.ldp_epsilon_private
    assert measure(problem, X) > epsilon + 1e-3  # it is broken, at many outputs
    fixed, theta = lip.repair(problem, X, epsilon, notion)
    tol = PROMISE * max(epsilon, 1.0)
    assert measure(problem, fixed) <= epsilon + tol
    assert measure(problem, fixed) <= epsilon + tol
    assert 0 < theta < 1e-3
    np.testing.assert_allclose(fixed.sum(axis=0), 1.0, atol=1e-13)
    assert fixed.nnz <= X.nnz + 2 * problem.n + 10  # sparse V
    # the least θ: a mix with 1 % less of V still breaks ε
    V = (fixed - (1 - theta) * X) / theta
    less = sp.csc_array((1 - 0.99 * theta) * X + 0.99 * theta * V)
    assert measure(problem, less) > epsilon + tol


def test_repair_leaves_a_mapping_that_meets_epsilon_alone() -> None:
    problem = random_problem(2, 60, seed=2)
    X = sp.csc_array(np.full((60, 60), 1 / 60))  # perfectly private
    fixed, theta = lip.repair(problem, X, 0.5, "lip")
    assert theta == 0.0 and fixed is X


@pytest.mark.parametrize("notion", ["lip", "ldp"])
@pytest.mark.parametrize("k", [3, 4])
def test_repair_with_more_private_values_and_at_epsilon_zero(k: int, notion: str) -> None:
    """With ε = 0 only a mix near V itself meets the rows (V is perfectly private)."""
    problem = random_problem(k, 120, seed=20 + k, dead=2)
    measure = notions.lip_epsilon if notion == "lip" else notions.ldp_epsilon_private
    X = sp.csc_array(np.eye(120) * 0.01 + 0.99 / 120)
    for eps in (0.0, 0.01):
        assert measure(problem, X) > eps + 1e-3
        fixed, theta = lip.repair(problem, X, eps, notion)
        assert measure(problem, fixed) <= eps + PROMISE
        assert 0 < theta <= 1 and math.isfinite(theta)
        np.testing.assert_allclose(fixed.sum(axis=0), 1.0, atol=1e-13)
