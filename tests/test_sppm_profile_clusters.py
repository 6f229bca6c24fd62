"""SPPM's start from clustered profiles (:mod:`._sppm.profile_clusters`): the clusters,
the coarse problem as an exact restriction (the prolonged mapping keeps I and E[d]), the
choice of K, the switches, and certified intervals that hold cvxpy's optimum whether the
start certifies or ``auto`` falls back to the plain dual mode."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.measures.information import mutual_information
from privbench.plugins.mechanisms._sppm import profile_clusters as pc

from .test_sppm_curve import OPT_TOL, d_const, optimum_bits


def census_like(seed: int = 0, sizes: tuple[int, ...] = (3, 4, 3, 2)) -> pb.PrivacyProblem:
    """Every profile of 4 attributes (72), skewed masses, a binary private attribute whose
    posterior follows the attributes: a small census under Hamming."""
    rng = np.random.default_rng(seed)
    points = np.array(list(itertools.product(*[range(s) for s in sizes])), dtype=float)
    n = points.shape[0]
    p_b = rng.dirichlet(np.full(n, 0.3))
    score = points @ rng.normal(size=points.shape[1])
    post = 1 / (1 + np.exp(-(score - np.median(score)) - rng.normal(0, 0.5, n)))
    return pb.PrivacyProblem.from_arrays(np.vstack([p_b * post, p_b * (1 - post)]),
                                         pb.FeatureDistortion(points, "hamming"))


@pytest.fixture
def small(monkeypatch) -> pb.PrivacyProblem:
    """:func:`census_like` with the start's limits scaled to n = 72."""
    monkeypatch.setattr(pc, "CLUSTER_FROM", 32)
    monkeypatch.setattr(pc, "LADDER", (6, 12, 24, 36))
    return census_like()


def test_every_profile_joins_a_nearest_centre(small) -> None:
    """Centres are the K heaviest profiles (and the best constant output), each its own
    cluster's; every profile is at the least Hamming distance of any centre (brute force
    over the dense matrix)."""
    groups = pc.cluster(small, 10)
    heavy = set(np.argsort(-small.p_b)[:10].tolist())
    assert heavy <= set(groups.centres.tolist()) and groups.centres.size <= 11
    assert np.array_equal(groups.label[groups.centres], np.arange(groups.centres.size))
    D = small.distortion.to_dense()
    nearest = D[groups.centres].min(axis=0)
    assert np.array_equal(D[groups.centres[groups.label], np.arange(small.n)], nearest)
    order, first = groups.members()
    assert np.array_equal(np.sort(order), np.arange(small.n))
    for c in range(groups.centres.size):  # each cluster's members, the heaviest first
        mem = order[first[c]: first[c + 1]]
        assert np.all(groups.label[mem] == c) and np.all(np.diff(small.p_b[mem]) <= 0)


def test_the_coarse_problem_is_an_exact_restriction(small) -> None:
    """A random coarse mapping, prolonged, has the coarse I(A; B̂) and E[d] on the fine
    problem (computed independently: the fine mapping as a dense matrix, the dense
    distortion): the coarse distortion is each cluster's expected distance from the
    centre, not the centres' distance."""
    groups = pc.cluster(small, 12)
    coarse = pc.coarsen(small, groups)
    k = coarse.n
    rng = np.random.default_rng(1)
    Xc = rng.random((k, k)) * (rng.random((k, k)) < 0.3) + np.eye(k) * 1e-3
    Xc /= Xc.sum(axis=0)
    rows, cols, x = pc.prolong_mapping(groups, *np.nonzero(Xc), Xc[np.nonzero(Xc)])
    X = sp.coo_array((x, (rows, cols)), shape=(small.n, small.n)).toarray()
    assert np.allclose(X.sum(axis=0), 1.0)
    assert mutual_information(small, X) == pytest.approx(mutual_information(coarse, Xc),
                                                         abs=1e-12)
    used_fine = float(np.sum(X * small.distortion.to_dense() * small.p_b[None, :]))
    used_coarse = float(np.sum(Xc * coarse.distortion.to_dense() * coarse.p_b[None, :]))
    assert used_fine == pytest.approx(used_coarse, rel=1e-12)


def test_k_is_the_first_of_the_ladder_whose_spread_fits_the_budget(small) -> None:
    """clusters_for: the chosen K's spread (every profile at its nearest centre among the K
    heaviest, brute force) is at most SPREAD Δ, the previous rung's is not; None when no
    rung fits (a small budget)."""
    D = small.distortion.to_dense()
    heavy = np.argsort(-small.p_b, kind="stable")
    spread = {k: float(small.p_b @ D[heavy[:k]].min(axis=0)) for k in pc.LADDER}
    dc = d_const(small)
    chosen = []
    for relative in (0.01, 0.1, 0.3, 0.6):
        delta = relative * dc
        k = pc.clusters_for(small, delta)
        fits = [rung for rung in pc.LADDER if spread[rung] <= pc.SPREAD * delta]
        assert k == (fits[0] if fits else None)
        chosen.append(k)
    assert chosen[0] is None and chosen[-1] is not None and chosen[-1] < pc.LADDER[-1]


def test_only_many_hamming_profiles_start_from_clusters(small) -> None:
    assert pc.applies(small)
    assert not pc.applies(census_like(sizes=(2, 2, 2)))  # 8 profiles
    assert not pc.applies(pb.load_dataset("synthetic", m=7))  # a line


def _spied(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = pc.coarse_start

    def counted(problem, *args, **kwargs):
        calls.append(problem.n)
        return original(problem, *args, **kwargs)

    monkeypatch.setattr(pc, "coarse_start", counted)
    return calls


def test_coarse_start_false_and_the_switch_never_cluster(small, monkeypatch) -> None:
    """``coarse_start=False`` (the benchmark's ``sppm mode=dual`` peer) and ``mode=dual``
    never start from clusters, nor ``auto`` with the switch off; ``auto`` does (fails if
    either switch is ignored)."""
    calls = _spied(monkeypatch)
    delta = 0.6 * d_const(small)
    for params in ({"coarse_start": False}, {"mode": "dual"}):
        res = pb.get_mechanism("sppm", **params).solve(small, delta)
        assert calls == [] and res.stats["coarse_levels"] is None
    monkeypatch.setattr(pc, "START", False)
    assert pb.get_mechanism("sppm").solve(small, delta).stats["coarse_levels"] is None
    assert calls == []
    monkeypatch.setattr(pc, "START", True)
    res = pb.get_mechanism("sppm").solve(small, delta)
    assert calls == [small.n] and res.stats["coarse_levels"][0]["n"] <= 13


@pytest.mark.parametrize("relative", [0.3, 0.45, 0.6])
def test_a_clustered_start_certifies_and_holds_the_optimum(small, monkeypatch,
                                                           relative: float) -> None:
    """Where I* is ~0 the prolonged coarse mapping certifies by itself (one exact pricing):
    no fallback, and [I - gap, I] holds cvxpy's optimum on the fine problem."""
    pytest.importorskip("cvxpy")
    calls = _spied(monkeypatch)
    delta = relative * d_const(small)
    res = pb.get_mechanism("sppm").solve(small, delta)
    s = res.stats
    assert calls == [small.n] and s["coarse_levels"] and "auto_fallback" not in s
    assert s["iterations"] == 0
    # what the run did, in its own fields: auto's dual mode, stopped by the clustered start
    assert s["mode"] == "dual" and "clustered start" in s["stop_reason"]
    check_interval(small, delta, res)


@pytest.mark.parametrize("relative", [0.3, 0.6])
def test_the_coarse_level_warms_up_briefly_and_stops_at_its_share(small, relative: float) -> None:
    """The coarse level runs COARSE_WARMUP Frank-Wolfe steps (not the fine dual mode's 100)
    and stops once its I is below TOL_SHARE x tol, which the fine run's gap then is."""
    delta = relative * d_const(small)
    res = pb.get_mechanism("sppm").solve(small, delta)
    s = res.stats
    (level,) = s["coarse_levels"]
    assert level["iterations"] <= pc.COARSE_WARMUP
    assert level["objective_bits"] <= pc.TOL_SHARE * 1e-3
    assert s["converged"] and s["gap_bits"] <= pc.TOL_SHARE * 1e-3 * (1 + 1e-9)


@pytest.mark.parametrize("relative", [0.1, 0.2])
def test_a_clustered_start_that_does_not_hold_falls_back(small, monkeypatch,
                                                          relative: float) -> None:
    """At 0.1 / 0.2 d_const a K fits the budget but the restriction's I is far above tol:
    ``auto`` falls back to the plain dual mode (saying so), which certifies and holds
    cvxpy's optimum (fails when the start's uncertified outcome is returned)."""
    pytest.importorskip("cvxpy")
    calls = _spied(monkeypatch)
    delta = relative * d_const(small)
    res = pb.get_mechanism("sppm").solve(small, delta)
    s = res.stats
    assert calls == [small.n] and "clustered profiles" in s["auto_fallback"]
    assert s["mode"] == "dual" and s["coarse_levels"] is None
    check_interval(small, delta, res)


def check_interval(problem: pb.PrivacyProblem, delta: float, res: pb.MechanismResult) -> None:
    """Certified to 1e-3 bits, within the budget, and [I - gap, I] holds cvxpy's optimum."""
    s = res.stats
    mi = mutual_information(problem, res.mapping)
    opt = optimum_bits(problem, delta)
    X = sp.coo_array(res.mapping)
    used = float(np.sum(X.data * problem.p_b[X.col] * problem.distortion.pairs(X.row, X.col)))
    assert used <= delta * (1 + 1e-12)
    assert s["converged"] and s["gap_bits"] <= 1e-3, (s["stop_reason"], s["gap_bits"])
    assert s["objective_bits"] == pytest.approx(mi, abs=1e-9)
    assert s["lower_bits"] <= opt + OPT_TOL
    assert mi >= opt - OPT_TOL
