"""SPPM's compiled per-iteration kernels agree with the plain numpy definitions.

Each kernel replaced a numpy expression in the Frank-Wolfe loop for speed; the numpy
expression is kept here as the reference, on random sparse problems with the edge
cases the loop meets (private values with p(a) = 0, outputs with no mass, zeros in x).
"""

from __future__ import annotations

import numpy as np
import pytest

from privbench.plugins.mechanisms._sppm import columns, leakage, linesearch
from privbench.protocol.certificate import POSTERIOR_FLOOR
from privbench.protocol.feasibility import normalise_columns as numpy_normalise


def _random_pairs(rng: np.random.Generator, n_a: int = 3, n: int = 40, k: int = 150):
    P = rng.random((n_a, n)) * (rng.random((n_a, n)) > 0.3)
    P[0, 0] = 1.0
    P /= P.sum()
    rows = rng.integers(0, n, k)
    cols = np.concatenate([np.arange(n), rng.integers(0, n, k - n)])
    x = rng.random(k) * (rng.random(k) > 0.4)
    x[:n] += 0.01  # every input column keeps a positive entry
    return P, rows, cols, x, n


def _numpy_output_joint(P, rows, cols, x, n):
    Q = np.empty((P.shape[0], n))
    for a in range(P.shape[0]):
        Q[a] = np.bincount(rows, weights=P[a, cols] * x, minlength=n)
    return np.maximum(Q, 0.0)


def _numpy_decoder(Q, p_a, eta):
    q = Q.sum(axis=0)
    empty = q <= 0
    post = Q / np.where(empty, 1.0, q)[None, :]
    live = p_a > 0
    L = np.zeros_like(Q)
    L[live] = np.log((1.0 - eta) * post[live] + eta * p_a[live, None]) - np.log(p_a[live])[:, None]
    L[:, empty] = 0.0
    return L, empty


@pytest.mark.parametrize("seed", range(8))
def test_output_joint_equals_bincount(seed: int) -> None:
    P, rows, cols, x, n = _random_pairs(np.random.default_rng(seed))
    got = leakage.output_joint(P, rows, cols, x, n)
    np.testing.assert_array_equal(got, _numpy_output_joint(P, rows, cols, x, n))


@pytest.mark.parametrize("seed", range(8))
def test_decoder_logratios_equal_the_numpy_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    Q = rng.random((3, 30)) * (rng.random((3, 30)) > 0.4)
    Q[:, :3] = 0.0  # outputs with no mass
    p_a = rng.random(3)
    if seed % 2:
        p_a[1], Q[1] = 0.0, 0.0  # a private value that never occurs
    p_a /= p_a.sum()
    L, empty = leakage.decoder_logratios(Q, p_a, POSTERIOR_FLOOR)
    L_ref, empty_ref = _numpy_decoder(Q, p_a, POSTERIOR_FLOOR)
    np.testing.assert_array_equal(empty, empty_ref)
    np.testing.assert_allclose(L, L_ref, rtol=0, atol=1e-13)


@pytest.mark.parametrize("seed", range(8))
def test_compiled_normalise_columns_equals_the_protocol_one(seed: int) -> None:
    _, _, cols, x, n = _random_pairs(np.random.default_rng(seed))
    x = x - 0.001  # some entries below zero are clipped
    x[:n] = np.abs(x[:n]) + 0.01
    np.testing.assert_allclose(columns.normalise_columns(cols, x, n),
                               numpy_normalise(cols, x, n), rtol=1e-15, atol=0)


def test_compiled_normalise_columns_refuses_a_column_without_mass() -> None:
    with pytest.raises(ValueError, match="no positive entry"):
        columns.normalise_columns(np.array([0, 0, 1]), np.array([0.5, 0.5, 0.0]), 2)


@pytest.mark.parametrize("seed", range(12))
def test_line_search_value_is_the_leakage_at_the_step(seed: int) -> None:
    """φ(γ*) is computed on the moving columns only; it must equal I at the new point,
    and γ* must be no worse than a fine grid (convexity makes the grid a fair check)."""
    rng = np.random.default_rng(seed)
    P, rows, cols, x, n = _random_pairs(rng)
    p_a = P.sum(axis=1)
    x = numpy_normalise(cols, x, n)
    x_new = x.copy()
    touched = rng.integers(0, n, 4)  # a step that moves a few inputs only
    for j in touched:
        at = np.flatnonzero(cols == j)
        x_new[at] = rng.dirichlet(np.ones(at.size))
    Q = leakage.output_joint(P, rows, cols, x, n)
    Q_new = leakage.output_joint(P, rows, cols, x_new, n)
    f0 = leakage.leakage_nats(Q, p_a)
    gamma, f = linesearch.exact_line_search(Q, Q_new, p_a, 1.0, f0=f0)
    assert f == pytest.approx(leakage.leakage_nats((1 - gamma) * Q + gamma * Q_new, p_a),
                              abs=1e-13)
    grid = [leakage.leakage_nats((1 - t) * Q + t * Q_new, p_a) for t in np.linspace(0, 1, 201)]
    assert f <= min(grid) + 1e-12
    assert f <= f0
