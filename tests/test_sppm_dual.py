"""SPPM's dual mode: smoothed dual ascent on V with exact pricing (``_sppm.dual_mode``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize as so

import privbench as pb
from privbench.measures.information import mutual_information
from privbench.plugins.mechanisms._sppm.dual_mode import RestrictedDual

from .test_sppm import OPT_TOL, check_mapping, perfect_privacy_budget

LN2 = math.log(2.0)


def dense_bound(problem: pb.PrivacyProblem, L: np.ndarray, nu: float, delta: float) -> float:
    """-ν Δ + Σ_j min_i (c_ij + ν p_j d_ij) over all n² pairs, densely (nats)."""
    C = L.T @ problem.joint
    A = problem.distortion.to_dense() * problem.p_b[None, :]
    return float((C + nu * A).min(axis=0).sum() - nu * delta)


@pytest.mark.parametrize(("kind", "n_private", "seed", "frac"),
                         [("hamming", 2, 3, 0.1), ("sq_l2", 2, 4, 0.3), ("random", 3, 5, 0.2),
                          ("hamming", 4, 6, 0.05)])
def test_dual_mode_matches_the_optimum_and_its_bound_is_valid(kind: str, n_private: int,
                                                              seed: int, frac: float) -> None:
    problem = pb.load_dataset("random", n=18, n_private=n_private, seed=seed, distortion=kind)
    delta = frac * perfect_privacy_budget(problem)
    res = pb.get_mechanism("sppm", mode="dual", tol=1e-4, warmup=5).solve(problem, delta)
    mi = check_mapping(problem, res, delta)  # feasible, column-stochastic, I as reported
    mi_opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    assert res.stats["converged"] and res.stats["gap_bits"] < 1e-4
    assert res.stats["polish"]  # the dual rounds ran (5 FW steps do not reach 1e-4)
    assert mi_opt - OPT_TOL <= mi <= mi_opt + 1e-4
    assert res.stats["lower_bits"] <= mi_opt + OPT_TOL
    assert res.stats["gap_bits"] >= mi - mi_opt - OPT_TOL


def test_restricted_dual_gradient_matches_finite_differences() -> None:
    problem = pb.load_dataset("random", n=9, n_private=3, seed=2, distortion="hamming")
    rng = np.random.default_rng(0)
    rows, cols = np.nonzero(rng.random((9, 9)) < 0.5)
    rows, cols = np.concatenate([rows, np.arange(9)]), np.concatenate([cols, np.arange(9)])
    keep = np.unique(rows * 9 + cols)
    dual = RestrictedDual(problem, 0.4, keep // 9, keep % 9)
    par = np.concatenate([rng.normal(size=2 * 9), [math.log(0.3)]])
    for tau in (1e-1, 1e-2):
        err = so.check_grad(lambda p, t=tau: dual.objective(p, t)[0],
                            lambda p, t=tau: dual.objective(p, t)[1], par, epsilon=1e-7)
        assert err < 1e-5 * max(1.0, np.abs(dual.objective(par, tau)[1]).max())


def test_soft_min_over_all_pairs_is_a_lower_bound_and_tends_to_the_hard_one() -> None:
    """With V = every pair, the smoothed dual is below the hard dual, by at most τ log n."""
    problem = pb.load_dataset("random", n=12, n_private=2, seed=9, distortion="sq_l2")
    n = problem.n
    rows, cols = np.divmod(np.arange(n * n), n)
    dual = RestrictedDual(problem, 0.5, rows, cols)
    rng = np.random.default_rng(1)
    theta = rng.normal(size=(1, n))
    nu = 0.7
    hard = dense_bound(problem, dual.full_L(theta), nu, 0.5)
    for tau in (1e-1, 1e-2, 1e-4):
        soft, _, _ = dual.evaluate(theta, nu, tau)
        assert soft <= hard + 1e-12
        assert hard - soft <= tau * math.log(n) + 1e-12


def test_minima_over_v_equal_a_dense_minimum_on_v() -> None:
    problem = pb.load_dataset("random", n=10, n_private=2, seed=4, distortion="random")
    rng = np.random.default_rng(3)
    mask = rng.random((10, 10)) < 0.4
    mask[np.arange(10), np.arange(10)] = True
    rows, cols = np.nonzero(mask)
    dual = RestrictedDual(problem, 0.3, rows, cols)
    theta = rng.normal(size=(1, 10))
    L = dual.full_L(theta)
    nu = 0.25
    C = L.T @ problem.joint + nu * problem.distortion.to_dense() * problem.p_b[None, :]
    expect = np.where(mask, C, np.inf).min(axis=0)
    np.testing.assert_allclose(dual.minima(dual.L_of(theta), nu), expect, rtol=1e-12, atol=1e-15)


def test_violators_are_exactly_the_cheaper_pairs_outside_v() -> None:
    problem = pb.load_dataset("random", n=16, n_private=2, seed=5, distortion="hamming")
    n = problem.n
    dual = RestrictedDual(problem, 0.3, np.arange(n), np.arange(n))  # V = identity
    rng = np.random.default_rng(2)
    theta = rng.normal(size=(1, n)) * 2
    L, nu = dual.full_L(theta), 0.05
    v_min = dual.minima(dual.L_of(theta), nu)
    inputs = np.arange(n)
    new_r, new_c = dual.violators(L, nu, inputs, v_min)
    C = L.T @ problem.joint + nu * problem.distortion.to_dense() * problem.p_b[None, :]
    expect = {(i, j) for i in range(n) for j in range(n)
              if i != j and C[i, j] < v_min[j] - 1e-12}
    got = set(zip(new_r.tolist(), new_c.tolist(), strict=True))
    assert got == expect and expect  # some pair violates, and exactly those are found


def test_violators_keep_the_most_violating_pairs_per_input(monkeypatch) -> None:
    """With a cap of CAP pairs per input, each input keeps its CAP cheapest violators (the
    ones already in V never count)."""
    import privbench.plugins.mechanisms._sppm.dual_mode as dual_mode

    monkeypatch.setattr(dual_mode, "CAP", 3)
    problem = pb.load_dataset("random", n=20, n_private=2, seed=15, distortion="hamming")
    n = problem.n
    keep = np.arange(n) != 4  # V = the identity and every pair of output 4 but (4, 4)
    rows = np.concatenate([np.arange(n), np.full(n - 1, 4)[: keep.sum()]])
    cols = np.concatenate([np.arange(n), np.flatnonzero(keep)])
    dual = RestrictedDual(problem, 0.3, rows, cols)
    rng = np.random.default_rng(8)
    theta = rng.normal(size=(1, n)) * 2
    L, nu = dual.full_L(theta), 0.02
    v_min = dual.minima(dual.L_of(theta), nu)
    new_r, new_c = dual.violators(L, nu, np.arange(n), v_min)
    C = L.T @ problem.joint + nu * problem.distortion.to_dense() * problem.p_b[None, :]
    in_v = np.zeros((n, n), dtype=bool)
    in_v[dual.rows, dual.cols] = True
    expect = set()
    for j in range(n):
        worse = np.flatnonzero(C[:, j] < v_min[j] - 1e-12)
        top = worse[np.argsort(C[worse, j], kind="stable")][:3]
        expect |= {(int(i), j) for i in top if not in_v[i, j]}
    got = set(zip(new_r.tolist(), new_c.tolist(), strict=True))
    assert got == expect
    assert max(np.bincount(new_c, minlength=n)) <= 3 < max(
        np.count_nonzero(C[:, j] < v_min[j] - 1e-12) for j in range(n))  # the cap bites


def test_census_like_problem_certifies_where_frank_wolfe_alone_does_not() -> None:
    """Rare, pure profiles (census at top_k = all): FW's own bound stays at 0 for long."""
    problem = pb.load_dataset("random", n=300, n_private=2, seed=21, distortion="hamming",
                              bits=9, concentration=0.05)
    delta = 0.3
    fw = pb.get_mechanism("sppm", mode="frank-wolfe", tol=1e-3, iterations=100).solve(problem,
                                                                               delta)
    dual = pb.get_mechanism("sppm", mode="dual", tol=1e-3, warmup=100).solve(problem, delta)
    check_mapping(problem, dual, delta)
    assert fw.stats["gap_bits"] > 1e-3  # the premise: FW alone is not there yet
    assert dual.stats["converged"] and dual.stats["gap_bits"] < 1e-3
    assert dual.stats["objective_bits"] <= fw.stats["objective_bits"] + 1e-12
    assert dual.stats["lower_bits"] >= fw.stats["lower_bits"]


def test_primal_spends_at_most_the_budget() -> None:
    """The soft assignment is moved to the ν that meets Δ, from either side of it."""
    problem = pb.load_dataset("random", n=12, n_private=2, seed=7, distortion="hamming")
    n = problem.n
    rows, cols = np.divmod(np.arange(n * n), n)
    delta = 0.2
    dual = RestrictedDual(problem, delta, rows, cols)
    theta = np.random.default_rng(5).normal(size=(1, n)) * 3
    a = problem.p_b[dual.cols] * dual.d
    for nu in (1e-4, 1e-2, 10.0):
        mi, x = dual.primal(theta, nu, 1e-2)
        assert math.isfinite(mi) and float(a @ x) <= delta
        np.testing.assert_allclose(np.bincount(dual.cols, weights=x, minlength=n), 1.0)
    assert float(a @ dual.soft_mapping(theta, 1e-4, 1e-2)[0]) > delta  # the search was needed


def test_zero_probability_symbols_and_empty_outputs() -> None:
    """Inputs that never occur get a soft assignment too; unused outputs can be chosen."""
    rng = np.random.default_rng(3)
    joint = rng.dirichlet(np.ones(2 * 9)).reshape(2, 9)
    joint[:, [2, 5]] = 0.0
    D = rng.random((9, 9))
    np.fill_diagonal(D, 0.0)
    D[2, :] = 0.05
    D[2, 2] = 0.0
    problem = pb.PrivacyProblem.from_arrays(joint, D)
    for delta in (0.02, 0.2):
        res = pb.get_mechanism("sppm", mode="dual", warmup=2, tol=1e-5).solve(problem, delta)
        mi = check_mapping(problem, res, delta)
        mi_opt = mutual_information(problem,
                                    pb.get_mechanism("optimal").solve(problem, delta).mapping)
        assert res.stats["converged"] and mi <= mi_opt + 1e-5
        assert res.stats["lower_bits"] <= mi_opt + OPT_TOL


@pytest.mark.realdata
@pytest.mark.slow
def test_real_census_top2000_is_certified(real_data_dir) -> None:
    """Census with 2,000 profiles: Frank-Wolfe alone needs ~4,000 iterations for 1e-3 bits."""
    problem = pb.load_dataset("census", top_k=2000, data_dir=str(real_data_dir))
    res = pb.get_mechanism("sppm", mode="dual", tol=1e-3).solve(problem, 0.5)
    check_mapping(problem, res, 0.5)
    assert res.stats["converged"] and res.stats["gap_bits"] < 1e-3
    assert res.stats["iterations"] <= 100  # the warm-up only
    assert 0.0 < res.stats["lower_bits"] <= res.stats["objective_bits"]


def test_warmup_is_validated() -> None:
    problem = pb.load_dataset("random", n=6, seed=1)
    with pytest.raises(pb.ValidationError, match="warmup"):
        pb.get_mechanism("sppm", mode="dual", warmup=-1).solve(problem, 0.1)


def _full_pass(dual: RestrictedDual, theta: np.ndarray, nu: float, tau: float
               ) -> tuple[float, np.ndarray, float]:
    """The smoothed dual over every pair of V (W widened to V), at (θ, ν)."""
    dual.focus_all()
    value, grad, used = dual.evaluate(theta, nu, tau)
    return value, grad.copy(), used


def test_the_working_pairs_give_the_pass_over_v_once_widened() -> None:
    """W (pairs near their input's minimum) gives V's smoothed dual where :meth:`widen`
    finds nothing missing, and :meth:`widen` does find the pairs a far move makes count."""
    problem = pb.load_dataset("random", n=40, n_private=3, seed=8, distortion="hamming")
    n = problem.n
    rows, cols = np.divmod(np.arange(n * n), n)
    dual = RestrictedDual(problem, 0.3, rows, cols)
    rng = np.random.default_rng(4)
    theta, nu, tau = rng.normal(size=(2, n)), 0.2, 1e-3
    full = _full_pass(dual, theta, nu, tau)
    dual.focus(theta, nu, tau)
    assert dual.sel.size < rows.size  # the shortcut is taken: W is a strict part of V
    assert dual.widen(theta, nu, tau) == 0
    value, grad, used = dual.evaluate(theta, nu, tau)
    assert value == pytest.approx(full[0], rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(grad, full[1], rtol=1e-10, atol=1e-15)
    assert used == pytest.approx(full[2], rel=1e-10, abs=1e-15)
    far = theta + 3.0 * rng.normal(size=theta.shape)  # other outputs become the cheapest
    over = dual.evaluate(far, nu, tau)[0]
    assert over > _full_pass(dual, far, nu, tau)[0] + 1e-9  # W alone over-states the dual
    dual.focus(theta, nu, tau)
    assert dual.widen(far, nu, tau) > 0
    assert dual.widen(far, nu, tau) == 0  # widened once, nothing is missing any more
    assert dual.evaluate(far, nu, tau)[0] == pytest.approx(_full_pass(dual, far, nu, tau)[0],
                                                           rel=1e-12, abs=1e-15)


def test_a_split_pass_equals_one_pass_and_threads_do_not_change_it(monkeypatch) -> None:
    """Two input ranges (one per thread) give the one-range pass's value, gradient and
    E[d] up to rounding, and the same bits on one thread or two."""
    import privbench.plugins.mechanisms._sppm.dual_mode as dual_mode

    problem = pb.load_dataset("random", n=40, n_private=3, seed=12, distortion="hamming")
    n = problem.n
    rows, cols = np.divmod(np.arange(n * n), n)
    rng = np.random.default_rng(6)
    par = np.concatenate([rng.normal(size=2 * n), [math.log(0.3)]])
    whole = RestrictedDual(problem, 0.3, rows, cols)
    assert len(whole.ranges) == 1
    monkeypatch.setattr(dual_mode, "SPLIT_PAIRS", 100)
    split = [RestrictedDual(problem, 0.3, rows, cols, threads=t) for t in (1, 2)]
    for tau in (1e-1, 1e-3):
        ref = whole.objective(par, tau)
        one, two = (d.objective(par, tau) for d in split)
        assert len(split[0].ranges) == 2
        assert one[0] == pytest.approx(ref[0], rel=1e-13)
        np.testing.assert_allclose(one[1], ref[1], rtol=1e-12, atol=1e-16)
        assert one[0] == two[0] and np.array_equal(one[1], two[1])
        np.testing.assert_array_equal(split[0].w, split[1].w)
    split[1].close()


def test_the_pass_exponential_matches_numpy_to_a_few_ulps() -> None:
    """The pass's polynomial e^x over its whole range [-CUTOFF, 0], to a few ulps (its
    weights feed the ascent direction and the primal point, never a bound)."""
    import numba

    import privbench.plugins.mechanisms._sppm.dual_mode as dual_mode

    @numba.njit
    def exps(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = dual_mode._exp(x[i])
        return out

    rng = np.random.default_rng(0)
    x = np.concatenate([-np.linspace(0.0, dual_mode.CUTOFF, 100_001),
                        -rng.uniform(0.0, dual_mode.CUTOFF, 50_000), [-1e-300, -0.5 * LN2]])
    rel = np.abs(exps(x) - np.exp(x)) / np.exp(x)
    assert rel.max() < 1e-14


def test_dual_rounds_stop_once_a_primal_point_is_below_tol_whatever_the_dual_bound() -> None:
    """I* >= 0 certifies for free: with a pricing whose bound stays far below 0 (valid:
    every minimum lowered by 1 nat), the rounds stop at the first primal point with
    I <= tol, and the bound they return is 0, not the negative dual value."""
    from privbench.plugins.mechanisms._sppm.dual_mode import dual_rounds

    problem = pb.load_dataset("random", n=18, n_private=2, seed=3, distortion="hamming")
    n = problem.n
    delta = 0.98 * perfect_privacy_budget(problem)
    rows, cols = np.divmod(np.arange(n * n), n)
    A = problem.distortion.to_dense() * problem.p_b[None, :]

    def weak_price(L: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
        C = L.T @ problem.joint - lam * A
        return C.argmin(axis=0), C.min(axis=0) - 1.0

    x = (rows == cols).astype(float)
    log: list[dict] = []
    *_, lb, stop, _ = dual_rounds(problem, delta, rows, cols, x, 1.0, weak_price, 1e-3, 20, log)
    assert stop == "tolerance (dual mode)"
    assert lb == 0.0 and all(r["lower_bound_bits"] == 0.0 for r in log)
    assert log[-1]["objective_bits"] <= 1e-3 and len(log) < 20


def test_dual_rounds_interrupted_leave_no_pass_thread(monkeypatch) -> None:
    """A run stopped inside the rounds (its time limit raises in the main thread, here the
    pricing raises) shuts the split pass's thread down: the benchmark's timed-out
    ``sppm_dual`` peer left ``sppm-dual_0`` running and privbench warned at exit."""
    import threading

    import privbench.plugins.mechanisms._sppm.dual_mode as dual_mode

    class Stopped(Exception):
        pass

    def alive() -> list[str]:
        return [t.name for t in threading.enumerate()
                if t.name.startswith("sppm-dual") and t.is_alive()]

    assert alive() == []
    monkeypatch.setattr(dual_mode, "SPLIT_PAIRS", 100)  # two ranges: the pass uses its pool
    problem = pb.load_dataset("random", n=40, n_private=3, seed=12, distortion="hamming")
    n = problem.n
    rows, cols = np.divmod(np.arange(n * n), n)
    started: list[str] = []

    def price(L: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
        started.extend(alive())  # the ascent before the first pricing ran on two threads
        raise Stopped

    with pytest.raises(Stopped):
        dual_mode.dual_rounds(problem, 0.3, rows, cols, (rows == cols).astype(float), 1.0,
                              price, 1e-3, 5, [], threads=2)
    assert started and alive() == []
