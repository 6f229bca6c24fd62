"""SPPM's projected L-BFGS (``_sppm.lbfgs``), against independent optima."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.optimize as so

from privbench.plugins.mechanisms._sppm import lbfgs


def _quadratic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(n, n))
    return B @ B.T / n + 0.1 * np.eye(n), rng.normal(size=n) * 3


def test_box_constrained_quadratic_matches_cvxpy() -> None:
    """½ xᵀAx - bᵀx on a box, with several bounds active at the optimum."""
    n = 40
    A, b = _quadratic(n, 0)
    lo, hi = np.full(n, -1.0), np.full(n, 1.5)
    x = cp.Variable(n)
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(A)) - b @ x),
               [x >= lo, x <= hi]).solve()
    expect = x.value
    active = np.count_nonzero((expect < lo + 1e-6) | (expect > hi - 1e-6))
    assert active >= 3  # the bounds matter

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        return 0.5 * z @ A @ z - b @ z, A @ z - b

    res = lbfgs.minimize(fun, np.zeros(n), lo, hi, gtol=1e-9, ftol=0.0)
    assert res.message != "line search failed" and res.nit < 1000
    assert np.all(res.x >= lo) and np.all(res.x <= hi)
    np.testing.assert_allclose(res.x, expect, atol=1e-5)
    assert res.fun <= fun(expect)[0] + 1e-9


def test_rosenbrock_reaches_the_minimum_as_scipy_does() -> None:
    """A non-convex valley (curvature pairs with s·y <= 0 are skipped, not stored)."""
    x0 = np.full(10, -1.2)
    lo, hi = np.full(10, -5.0), np.full(10, 5.0)
    fun = lambda z: (so.rosen(z), so.rosen_der(z))  # noqa: E731
    res = lbfgs.minimize(fun, x0, lo, hi, gtol=1e-8, ftol=0.0)
    ref = so.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)))
    np.testing.assert_allclose(res.x, np.ones(10), atol=1e-5)
    assert res.fun <= ref.fun + 1e-10


def test_memory_carries_over_between_calls() -> None:
    """A second call from the end point with the same memory stops at once; from a
    nearby point, with the old pairs, it reaches the same optimum as a cold start."""
    n = 60
    A, b = _quadratic(n, 3)
    lo, hi = np.full(n, -10.0), np.full(n, 10.0)

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        return 0.5 * z @ A @ z - b @ z, A @ z - b

    memory = lbfgs.Memory(n)
    first = lbfgs.minimize(fun, np.zeros(n), lo, hi, memory, gtol=1e-6, ftol=0.0)
    assert first.message == "projected gradient below gtol"
    assert memory.count == lbfgs.MEMORY
    again = lbfgs.minimize(fun, first.x, lo, hi, memory, gtol=1e-6, ftol=0.0)
    assert again.nfev == 1 and again.nit == 0
    shifted = first.x + 1e-3 * np.random.default_rng(1).normal(size=n)
    warm = lbfgs.minimize(fun, shifted, lo, hi, memory, gtol=1e-6, ftol=0.0)
    cold = lbfgs.minimize(fun, shifted, lo, hi, None, gtol=1e-6, ftol=0.0)
    np.testing.assert_allclose(warm.x, cold.x, atol=1e-4)
    np.testing.assert_allclose(warm.x, first.x, atol=1e-4)


def test_iteration_cap_and_start_outside_the_box() -> None:
    n = 5
    lo, hi = np.zeros(n), np.ones(n)
    fun = lambda z: (float(np.sum((z - 3.0) ** 2)), 2.0 * (z - 3.0))  # noqa: E731
    res = lbfgs.minimize(fun, np.full(n, -4.0), lo, hi, maxiter=1)
    assert res.nit == 1 and np.all((res.x >= 0) & (res.x <= 1))
    res = lbfgs.minimize(fun, np.full(n, -4.0), lo, hi)
    np.testing.assert_allclose(res.x, hi)


def test_more_curvature_pairs_converge_faster_on_a_badly_scaled_quadratic() -> None:
    """Curvatures spread over five orders (as the dual mode's outputs' masses on census):
    with 50 pairs (the dual mode's ``LBFGS_MEMORY``) the minimiser (A⁻¹b, inside the box)
    is reached in fewer iterations than with 10 (fails when a memory larger than
    ``MEMORY`` keeps 10 pairs)."""
    n = 120
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    scales = np.logspace(-5, 0, n)
    A = (Q * scales) @ Q.T * 0.2 + np.diag(scales) * 0.8  # coupled, badly scaled, PD
    b = rng.normal(size=n) * scales
    lo, hi = np.full(n, -50.0), np.full(n, 50.0)
    expect = np.linalg.solve(A, b)
    assert np.all((expect > lo) & (expect < hi))
    best = 0.5 * expect @ A @ expect - b @ expect

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        return 0.5 * z @ A @ z - b @ z, A @ z - b

    runs = {m: lbfgs.minimize(fun, np.zeros(n), lo, hi, lbfgs.Memory(n, m), maxiter=20000,
                              gtol=1e-8, ftol=0.0) for m in (10, 50)}
    for res in runs.values():
        assert res.fun <= best + 1e-9 * max(1.0, abs(best)), res.message
        np.testing.assert_allclose(A @ res.x, b, atol=1e-6)
    assert runs[50].nit < 0.85 * runs[10].nit, {m: r.nit for m, r in runs.items()}
