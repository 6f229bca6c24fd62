"""The compiled Hamming pricing kernel against a dense scan: same minimum, every input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbench as pb
from privbench.plugins.mechanisms._sppm.hamming_pricing import HammingPricer

LAMS = (0.0, -1e-3, -0.1, -10.0, -1e4)


def _joint(rng: np.random.Generator, n_a: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    P = rng.random((n_a, n)) ** 3
    P /= P.sum()
    return P, P.sum(axis=0)


def _check(points: np.ndarray, rng: np.random.Generator, block: int, superblock: int,
           n_a: int = 3, threads: int = 1, trials: int = 2, cost_bin: float | None = 8.0,
           levels: int | None = None, lists_after: int | None = None) -> None:
    n = points.shape[0]
    dist = pb.FeatureDistortion(points, "hamming")
    assert HammingPricer.supports(dist)
    D = dist.to_dense()
    pricer = HammingPricer(points, threads=threads, block=block, superblock=superblock,
                           cost_bin=cost_bin, levels=levels, lists_after=lists_after)
    # exercise the threaded splits on small problems
    pricer.min_parallel = pricer.levels_min_parallel = pricer.rest_min_parallel = 10
    P, p_b = _joint(rng, n_a, n)
    try:
        for trial in range(trials):
            L = rng.normal(size=(n_a, n)) * 3
            L[:, rng.integers(0, n, n // 3)] = math.log(1e-12)  # floored outputs
            L[rng.integers(0, n_a, n), np.arange(n)] = math.log(1e-12)
            empty = np.zeros(n, dtype=bool)
            empty[rng.integers(0, n, 3 * trial)] = True
            L[:, empty] = 0.0
            for lam in LAMS:
                for ec in (None, rng.random(n) - 0.5):
                    C = L.T @ P
                    C[empty, :] = 0.0 if ec is None else ec[None, :]
                    V = C - lam * D * p_b[None, :]
                    best_i, best_v = pricer.price(L, P, p_b, lam, empty, ec)
                    assert best_i.dtype == np.int64 and best_i.shape == (n,)
                    np.testing.assert_allclose(best_v, V.min(axis=0), rtol=1e-12, atol=1e-15)
                    np.testing.assert_allclose(V[best_i, np.arange(n)], best_v, rtol=1e-12, atol=1e-15)
    finally:
        pricer.close()


@pytest.mark.parametrize("cost_bin", [None, 0.5, 8.0])
@pytest.mark.parametrize(("block", "superblock"), [(1, 1), (4, 3), (8, 64), (16, 32)])
def test_categorical_profiles_equal_a_dense_scan(block: int, superblock: int, cost_bin: float | None) -> None:
    """Census-like categories (up to 40 values, skewed, many duplicates), odd code values."""
    rng = np.random.default_rng(block)
    n = 400
    cols = []
    for card in (8, 3, 40, 5, 2):
        p = rng.random(card) ** 4
        cols.append(rng.choice(card, size=n, p=p / p.sum()))
    points = np.stack(cols, axis=1).astype(float)
    points[:, 1] = points[:, 1] * 7 + 100  # codes need not be 0 .. card - 1
    points[20:30] = points[5]  # duplicate profiles
    _check(points, rng, block, superblock, cost_bin=cost_bin)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k", [2, 9, 18])
def test_binary_profiles_equal_a_dense_scan(k: int, threads: int) -> None:
    """MovieLens-like 0/1 profiles, sparse, with duplicates; threaded split too."""
    rng = np.random.default_rng(k + 100 * threads)
    n = 300
    points = (rng.random((n, k)) < rng.random(k) * 0.5).astype(float)
    _check(points, rng, block=8, superblock=4, n_a=4, threads=threads)


def test_random_dataset_joint_and_two_private_values() -> None:
    rng = np.random.default_rng(3)
    prob = pb.load_dataset("random", n=250, n_private=2, seed=3, distortion="sq_l2")
    points = rng.integers(0, 6, size=(prob.n, 3)).astype(float)
    dist = pb.FeatureDistortion(points, "hamming")
    D = dist.to_dense()
    pricer = HammingPricer(points, block=8, superblock=8)
    L = rng.normal(size=(2, prob.n))
    for lam in LAMS:
        V = L.T @ prob.joint - lam * D * prob.p_b[None, :]
        best_i, best_v = pricer.price(L, prob.joint, prob.p_b, lam, np.zeros(prob.n, bool))
        np.testing.assert_allclose(best_v, V.min(axis=0), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(V[best_i, np.arange(prob.n)], best_v, rtol=1e-12, atol=1e-15)


def test_negative_empty_cost_and_mostly_empty_outputs() -> None:
    """Empty outputs priced at a negative cost win unless the distortion forbids it."""
    rng = np.random.default_rng(11)
    n = 200
    points = rng.integers(0, 4, size=(n, 4)).astype(float)
    D = pb.FeatureDistortion(points, "hamming").to_dense()
    P, p_b = _joint(rng, 3, n)
    L = rng.normal(size=(3, n))
    pricer = HammingPricer(points, block=4, superblock=4)
    for frac in (0.1, 0.9, 1.0):
        empty = rng.random(n) < frac
        ec = -rng.random(n) * 1e-2
        for lam in LAMS:
            C = L.T @ P
            C[empty, :] = ec[None, :]
            V = C - lam * D * p_b[None, :]
            best_i, best_v = pricer.price(L, P, p_b, lam, empty, ec)
            np.testing.assert_allclose(best_v, V.min(axis=0), rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(V[best_i, np.arange(n)], best_v, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("cost_bin", [None, 8.0])
def test_a_far_cheap_output_is_found(cost_bin: float | None) -> None:
    """One very cheap output at maximal Hamming distance must still win (pruning is not fooled).

    The far cluster fills whole blocks of its own, so only a valid distance bound lets the
    cheap output through: with the bound doubled the scan would skip it.
    """
    rng = np.random.default_rng(5)
    n, k = 512, 6
    points = rng.integers(0, 3, size=(n, k)).astype(float)
    points[-16:] = 7.0  # values no other profile has in any attribute: d = k to everyone else
    D = pb.FeatureDistortion(points, "hamming").to_dense()
    P = np.full((1, n), 1.0 / n)
    p_b = P[0].copy()
    L = np.zeros((1, n))
    L[0, -1] = -1e3
    pricer = HammingPricer(points, block=8, superblock=4, cost_bin=cost_bin)
    best_i, best_v = pricer.price(L, P, p_b, -120.0, np.zeros(n, bool))
    assert np.all(best_i == n - 1)
    np.testing.assert_allclose(best_v[:-16], (-1e3 + 120.0 * k) / n, rtol=1e-12)
    np.testing.assert_allclose(best_v[-16:], -1e3 / n, rtol=1e-12)
    # a weight that makes it just not worth it: everyone else keeps a d = 0 output
    lam = -(1e3 + 1.0) / k
    best_i, best_v = pricer.price(L, P, p_b, lam, np.zeros(n, bool))
    V = L.T @ P - lam * D * p_b[None, :]
    np.testing.assert_allclose(best_v, V.min(axis=0), rtol=1e-12, atol=1e-15)
    assert not np.any(best_i[:-16] == n - 1)


def test_supports() -> None:
    pts = np.array([[0.0, 1.0], [2.0, 3.0]])
    assert HammingPricer.supports(pb.FeatureDistortion(pts, "hamming"))
    assert not HammingPricer.supports(pb.FeatureDistortion(pts, "l1"))
    assert not HammingPricer.supports(pb.FeatureDistortion(pts[:, :1], "hamming"))  # 1-D: LinePricer
    assert not HammingPricer.supports(pb.FeatureDistortion(pts + 0.5, "hamming"))
    assert not HammingPricer.supports(pb.FeatureDistortion(-pts, "hamming"))
    many = np.stack([np.arange(65.0), np.zeros(65)], axis=1)
    assert not HammingPricer.supports(pb.FeatureDistortion(many, "hamming"))
    assert HammingPricer.supports(pb.FeatureDistortion(many[:64], "hamming"))
    assert not HammingPricer.supports(pb.MatrixDistortion(np.ones((2, 2))))


def _census_like(rng: np.random.Generator, n: int) -> np.ndarray:
    cols = []
    for card in (8, 3, 40, 5, 2):
        p = rng.random(card) ** 4
        cols.append(rng.choice(card, size=n, p=p / p.sum()))
    points = np.stack(cols, axis=1).astype(float)
    points[20:30] = points[5]  # duplicate profiles: several outputs at distance 0
    return points


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("levels", [0, 1, 2, 3])
def test_level_lists_then_branch_and_bound_equal_a_dense_scan(levels: int, threads: int) -> None:
    """Every call priced over the level lists first (from the first call on), the rest by
    the branch and bound from the lists' best: the dense minimum, whatever the depth."""
    rng = np.random.default_rng(40 + levels)
    _check(_census_like(rng, 400), rng, block=8, superblock=4, threads=threads, trials=3,
           levels=levels, lists_after=1)


def test_level_lists_hold_exactly_the_outputs_at_each_distance() -> None:
    rng = np.random.default_rng(7)
    points = _census_like(rng, 300)
    D = pb.FeatureDistortion(points, "hamming").to_dense()
    pricer = HammingPricer(points, levels=2)
    starts, nbr = pricer._level_lists()
    for j in range(points.shape[0]):
        for h in range(3):
            got = np.sort(nbr[starts[3 * j + h]: starts[3 * j + h + 1]])
            np.testing.assert_array_equal(got, np.flatnonzero(D[:, j] == h))


def test_lists_are_built_only_from_the_lists_after_th_call_and_not_when_too_large(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that prices once or twice does not pay for the lists; lists beyond the size
    limit are not built and the branch and bound prices everything, still exactly."""
    import privbench.plugins.mechanisms._sppm.hamming_pricing as hp

    rng = np.random.default_rng(8)
    points = _census_like(rng, 200)
    P, p_b = _joint(rng, 2, 200)
    L = rng.normal(size=(2, 200))
    empty = np.zeros(200, dtype=bool)
    pricer = HammingPricer(points, lists_after=3)
    for call in range(1, 4):
        pricer.price(L, P, p_b, -0.1, empty)
        assert (pricer._lists is not None) == (call >= 3)
    monkeypatch.setattr(hp, "LIST_PAIRS_PER_INPUT", 1)
    small = HammingPricer(points, lists_after=1)
    V = L.T @ P + 0.1 * pb.FeatureDistortion(points, "hamming").to_dense() * p_b[None, :]
    _, best_v = small.price(L, P, p_b, -0.1, empty)
    assert small._lists is False
    np.testing.assert_allclose(best_v, V.min(axis=0), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("levels", [1, 2])
def test_a_far_cheap_output_is_found_past_the_lists(levels: int) -> None:
    """The cheapest output lies beyond every input's lists (distance k): the lists' bound
    must send every input on to the branch and bound, which finds it."""
    rng = np.random.default_rng(5)
    n, k = 512, 6
    points = rng.integers(0, 3, size=(n, k)).astype(float)
    points[-16:] = 7.0
    P = np.full((1, n), 1.0 / n)
    L = np.zeros((1, n))
    L[0, -1] = -1e3
    pricer = HammingPricer(points, block=8, superblock=4, levels=levels, lists_after=1)
    best_i, best_v = pricer.price(L, P, P[0].copy(), -120.0, np.zeros(n, bool))
    assert np.all(best_i == n - 1)
    np.testing.assert_allclose(best_v[:-16], (-1e3 + 120.0 * k) / n, rtol=1e-12)
