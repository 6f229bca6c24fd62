"""SPPM internals against independent computations: pricing, costs, line search."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

import privbench as pb
from privbench.plugins.mechanisms._sppm import leakage, line_pricing, linesearch, pricing


def problems():
    yield pb.load_dataset("synthetic", m=7)
    yield pb.load_dataset("random", n=150, n_private=3, seed=1, distortion="hamming", bits=9)
    yield pb.load_dataset("random", n=120, n_private=2, seed=2, distortion="sq_l2")
    yield pb.load_dataset("random", n=90, n_private=4, seed=3, distortion="random")


@pytest.mark.parametrize("k", [1, 8, 64])
def test_exact_pricing_equals_a_dense_scan(k: int) -> None:
    rng = np.random.default_rng(k)
    for prob in problems():
        n = prob.n
        L = rng.normal(size=(prob.n_private, n)) * 3
        L[:, : n // 4] = math.log(1e-12)  # floored outputs, as in pure posteriors
        empty = np.zeros(n, dtype=bool)
        empty[rng.integers(0, n, 3)] = True
        kappa = rng.random(n)
        D = prob.distortion.to_dense()
        nb, balls = pricing.Neighbours(prob.distortion, k), pricing.Balls(prob.distortion)
        for lam in (0.0, -1e-3, -0.1, -10.0):
            for ec in (None, kappa):
                C = L.T @ prob.joint
                C[empty, :] = 0.0 if ec is None else ec[None, :]
                dense = (C - lam * D * prob.p_b[None, :]).min(axis=0)
                _, v, _ = pricing.price_exact(L, prob.joint, prob.p_b, prob.distortion, nb,
                                              lam, empty, ec, balls=balls)
                np.testing.assert_allclose(v, dense, rtol=1e-12, atol=1e-15)
                _, v_full = pricing.price(L, prob.joint, prob.p_b, prob.distortion, lam, empty,
                                          ec, block_entries=1000)
                np.testing.assert_allclose(v_full, dense, rtol=1e-12, atol=1e-15)


def test_costs_are_the_gradient_and_leakage_is_mutual_information() -> None:
    prob = pb.load_dataset("random", n=12, n_private=3, seed=4)
    rng = np.random.default_rng(0)
    X = rng.random((12, 12))
    X /= X.sum(axis=0)
    rows, cols = np.nonzero(X)
    x = X[rows, cols]
    Q = leakage.output_joint(prob.joint, rows, cols, x, 12)
    f = leakage.leakage_nats(Q, prob.p_a)
    assert f / math.log(2) == pytest.approx(pb.metrics.mutual_information(prob, sp.csc_array(X)),
                                            abs=1e-12)
    L, empty = leakage.decoder_logratios(Q, prob.p_a, eta=0.0)
    c = leakage.pair_costs(L, prob.joint, rows, cols, empty, None)
    # finite differences of I along single entries
    for k in rng.integers(0, rows.size, 5):
        h = 1e-7
        x2 = x.copy()
        x2[k] += h
        f2 = leakage.leakage_nats(leakage.output_joint(prob.joint, rows, cols, x2, 12), prob.p_a)
        assert (f2 - f) / h == pytest.approx(c[k], rel=1e-4, abs=1e-9)
    assert float(c @ x) == pytest.approx(f, abs=1e-12)  # Euler: ⟨C, X⟩ = I(X)


def test_line_search_matches_a_scalar_minimiser() -> None:
    rng = np.random.default_rng(5)
    p_a = np.array([0.3, 0.7])
    for _ in range(20):
        Q = rng.random((2, 6)) * (rng.random((2, 6)) > 0.3)
        Q[:, 0] += 0.1  # every private value keeps some mass
        Q *= (p_a / Q.sum(axis=1))[:, None]
        Q_new = rng.random((2, 6))
        Q_new *= (p_a / Q_new.sum(axis=1))[:, None]
        gmax = float(rng.uniform(0.2, 1.0))
        g, f = linesearch.exact_line_search(Q, Q_new, p_a, gmax)

        def phi(t: float, Q: np.ndarray = Q, Q_new: np.ndarray = Q_new) -> float:
            return leakage.leakage_nats((1 - t) * Q + t * Q_new, p_a)

        ref = minimize_scalar(phi, bounds=(0, gmax), method="bounded",
                              options={"xatol": 1e-12})
        assert f <= min(ref.fun, phi(0.0), phi(gmax)) + 1e-12
        assert 0.0 <= g <= gmax


@pytest.mark.parametrize("block", [1, 5, 32])
def test_line_block_pricing_equals_a_dense_scan(block: int, monkeypatch) -> None:
    """Per-block bounds on a sorted line (squared l2, l2, l1 on scalars) stay exact."""
    monkeypatch.setattr(pricing, "LINE_BLOCK", block)
    rng = np.random.default_rng(block)
    for metric in ("sq_l2", "l2", "l1"):
        n = 97
        points = rng.normal(size=(n, 1)) * 4
        points[10:14] = points[3]  # ties on the line
        dist = pb.FeatureDistortion(points, metric)
        prob = pb.load_dataset("random", n=n, n_private=3, seed=block, distortion="sq_l2")
        P, p_b = prob.joint, prob.p_b
        L = rng.normal(size=(3, n)) * 3
        L[:, rng.integers(0, n, n // 3)] = math.log(1e-12)
        empty = np.zeros(n, dtype=bool)
        empty[rng.integers(0, n, 4)] = True
        L[:, empty] = 0.0
        D = dist.to_dense()
        balls = pricing.Balls(dist)
        assert balls.order is not None and balls.block_rows.shape[1] == block
        for lam in (0.0, -1e-3, -0.1, -10.0):
            for ec in (None, rng.random(n)):
                C = L.T @ P
                C[empty, :] = 0.0 if ec is None else ec[None, :]
                V = C - lam * D * p_b[None, :]
                cols = np.sort(rng.choice(n, 60, replace=False))
                # a poor start (the diagonal) so the blocks do the work
                best_i = cols.copy()
                best_v = V[cols, cols].copy()
                pricing.price_line_blocks(L, P, p_b, dist, balls, lam, empty, ec, cols,
                                          best_i, best_v, chunk_entries=50)
                np.testing.assert_allclose(best_v, V[:, cols].min(axis=0), rtol=1e-12,
                                           atol=1e-15)
                np.testing.assert_allclose(V[best_i, cols], best_v, rtol=1e-12, atol=1e-15)



@pytest.mark.parametrize("block", [1, 5, 32])
@pytest.mark.parametrize("metric", ["sq_l2", "l2", "l1", "hamming"])
def test_line_kernel_pricing_equals_a_dense_scan(block: int, metric: str) -> None:
    """The compiled outward walk over sorted blocks returns the dense minimum, every j."""
    rng = np.random.default_rng(block)
    n = 97
    points = rng.integers(0, 2, size=(n, 1)).astype(float) if metric == "hamming" else \
        rng.normal(size=(n, 1)) * 4
    points[10:14] = points[3]  # ties on the line
    dist = pb.FeatureDistortion(points, metric)
    assert line_pricing.LinePricer.supports(dist)
    pricer = line_pricing.LinePricer(points[:, 0], metric, block, threads=2)
    pricer.min_parallel = 10  # exercise the threaded split on a small line
    prob = pb.load_dataset("random", n=n, n_private=3, seed=block, distortion="sq_l2")
    P, p_b = prob.joint, prob.p_b
    D = dist.to_dense()
    for trial in range(3):
        L = rng.normal(size=(3, n)) * 3
        L[:, rng.integers(0, n, n // 3)] = math.log(1e-12)
        empty = np.zeros(n, dtype=bool)
        empty[rng.integers(0, n, 4 * trial)] = True
        L[:, empty] = 0.0
        for lam in (0.0, -1e-3, -0.1, -10.0, -1e4):
            for ec in (None, rng.random(n) - 0.5):
                C = L.T @ P
                C[empty, :] = 0.0 if ec is None else ec[None, :]
                V = C - lam * D * p_b[None, :]
                best_i, best_v = pricer.price(L, P, p_b, lam, empty, ec)
                np.testing.assert_allclose(best_v, V.min(axis=0), rtol=1e-12, atol=1e-15)
                np.testing.assert_allclose(V[best_i, np.arange(n)], best_v, rtol=1e-12,
                                           atol=1e-15)


def test_line_kernel_is_not_fooled_by_a_far_cheap_output() -> None:
    """One very cheap output far away must still be found (the walk may not stop early)."""
    n = 200
    coord = np.arange(n, dtype=float)
    pricer = line_pricing.LinePricer(coord, "sq_l2", 8)
    P = np.full((1, n), 1.0 / n)
    L = np.zeros((1, n))
    L[0, 180] = -1e6
    best_i, best_v = pricer.price(L, P, np.full(n, 1.0 / n), -1.0, np.zeros(n, bool))
    assert best_i[0] == 180 and best_v[0] == pytest.approx(-1e6 / n + 180**2 / n)
    assert line_pricing.LinePricer.supports(pb.FeatureDistortion(np.eye(3), "hamming")) is False


def test_neighbour_pricing_is_the_minimum_over_each_list() -> None:
    rng = np.random.default_rng(7)
    for prob in problems():
        n = prob.n
        L = rng.normal(size=(prob.n_private, n)) * 3
        empty = np.zeros(n, dtype=bool)
        empty[rng.integers(0, n, 3)] = True
        D = prob.distortion.to_dense()
        nb = pricing.Neighbours(prob.distortion, 16)
        for lam in (0.0, -0.1):
            for ec in (None, rng.random(n)):
                C = L.T @ prob.joint
                C[empty, :] = 0.0 if ec is None else ec[None, :]
                V = C - lam * D * prob.p_b[None, :]
                i, v = pricing.price_neighbours(L, prob.joint, prob.p_b, nb, lam, empty, ec)
                want = np.take_along_axis(V.T, nb.idx, axis=1).min(axis=1)
                np.testing.assert_allclose(v, want, rtol=1e-12, atol=1e-15)
                np.testing.assert_allclose(V[i, np.arange(n)], v, rtol=1e-12, atol=1e-15)


def test_constant_mapping_costs_closed_form_matches_blocks() -> None:
    """E[d] of each constant mapping: the O(n k) squared-l2 identity equals the block sums."""
    from privbench.protocol.feasibility import row_budget_costs as _row_budget_costs

    rng = np.random.default_rng(4)
    points = rng.normal(size=(60, 3)) * 100 + 5e3  # far from 0: cancellation would show
    base = pb.load_dataset("random", n=60, n_private=2, seed=4, distortion="sq_l2")
    prob = pb.PrivacyProblem.from_arrays(joint=base.joint,
                                         distortion=pb.FeatureDistortion(points, "sq_l2"))
    exact = prob.distortion.to_dense() @ prob.p_b
    np.testing.assert_allclose(_row_budget_costs(prob), exact, rtol=1e-12)
    np.testing.assert_allclose(_row_budget_costs(prob, np.array([7, 3])), exact[[7, 3]],
                               rtol=1e-15)


def test_constant_mapping_costs_for_hamming_match_blocks() -> None:
    """The O(n k) Hamming identity (attribute marginals) equals the block sums."""
    from privbench.protocol.feasibility import row_budget_costs as _row_budget_costs

    rng = np.random.default_rng(5)
    points = rng.integers(0, [3, 5, 2, 7], size=(80, 4)).astype(float)
    base = pb.load_dataset("random", n=80, n_private=3, seed=5, distortion="hamming")
    prob = pb.PrivacyProblem.from_arrays(joint=base.joint,
                                         distortion=pb.FeatureDistortion(points, "hamming"))
    exact = prob.distortion.to_dense() @ prob.p_b
    assert np.ptp(exact) > 0.1  # the rows differ: a wrong identity would show
    np.testing.assert_allclose(_row_budget_costs(prob), exact, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(6))
def test_updated_block_tables_equal_a_rebuild(seed: int) -> None:
    """The working set rewrites a few columns of L per iteration and updates the tables in
    place; every table must be the one a rebuild gives, and pricing with them exact."""
    rng = np.random.default_rng(seed)
    n, n_a = int(rng.integers(20, 300)), int(rng.integers(2, 4))
    pricer = line_pricing.LinePricer(rng.permutation(n).astype(float), "sq_l2",
                                     block=int(rng.integers(1, 9)))
    L = rng.normal(size=(n_a, n))
    empty = rng.random(n) < 0.1
    tables = pricer.tables(L, empty)
    for _ in range(5):
        changed = rng.choice(n, size=int(rng.integers(1, n // 3 + 2)), replace=False)
        if rng.random() < 0.5:  # a contiguous stretch of the line, as on the synthetic data
            start = int(rng.integers(0, n))
            changed = pricer.order[start: start + int(rng.integers(1, 40))]
        L[:, changed] = rng.normal(size=(n_a, changed.size)) * rng.uniform(0.1, 5)
        empty[changed] = rng.random(changed.size) < 0.2
        pricer.update_tables(tables, L, empty, pricer.blocks_of(changed))
        for got, want in zip(tables, pricer.tables(L, empty), strict=True):
            np.testing.assert_array_equal(got, want)
    P = rng.random((n_a, n))
    p_b = P.sum(axis=0)
    got = pricer.price(L, P, p_b, -0.3, empty, tables=tables)
    want = pricer.price(L, P, p_b, -0.3, empty)
    np.testing.assert_array_equal(got[1], want[1])
