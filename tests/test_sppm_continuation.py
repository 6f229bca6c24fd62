"""SPPM's dual mode started from a coarse solve on a line (:mod:`._sppm.continuation`):
the coarse problem, the seed pairs, and certified intervals that hold cvxpy's optimum."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import mutual_information
from privbench.plugins.mechanisms._sppm import continuation

from .test_sppm_curve import OPT_TOL, d_const, optimum_bits


def test_the_coarse_problem_merges_neighbours_on_the_coordinate() -> None:
    """Groups are FACTOR neighbours in coordinate order (symbols given out of order here),
    their joint the members' sum, their coordinate the p_b-weighted mean."""
    rng = np.random.default_rng(3)
    n = 10
    x = rng.permutation(n).astype(float) * 1.5
    joint = rng.random((3, n))
    problem = pb.PrivacyProblem.from_arrays(joint, pb.FeatureDistortion(x[:, None], "sq_l2"))
    coarse, order, group = continuation.coarsen(problem)
    assert np.all(np.diff(x[order]) > 0)
    assert coarse.n == 3 and np.array_equal(np.bincount(group), [4, 4, 2])
    for g in range(3):
        members = group == g
        assert np.allclose(coarse.joint[:, g], problem.joint[:, members].sum(axis=1))
        w = problem.p_b[members]
        assert coarse.distortion.points[g, 0] == pytest.approx(w @ x[members] / w.sum())
    assert np.all(np.diff(coarse.distortion.points[:, 0]) > 0)


def test_seed_pairs_cover_each_fine_input_s_coarse_support() -> None:
    """Coarse pair (I, J) with mass seeds (i, j) for every member j of J and every i within
    MARGIN ranks of I's members; pairs without mass seed nothing."""
    n = 16
    order = np.arange(n)[::-1].copy()  # coordinate order reversed: ranks differ from ids
    group = np.empty(n, dtype=np.int64)
    group[order] = np.arange(n) // continuation.FACTOR
    rows, cols = continuation.seed_pairs(order, group, np.array([1, 3]), np.array([2, 0]),
                                         np.array([0.5, 1e-9]), n)
    got = set(zip(rows.tolist(), cols.tolist(), strict=True))
    m, f = continuation.MARGIN, continuation.FACTOR
    want = {(int(order[r]), int(order[c])) for c in range(2 * f, 3 * f)
            for r in range(f - m, 2 * f + m)}
    assert got == want


def test_only_long_lines_start_from_a_coarse_solve() -> None:
    assert continuation.applies(pb.load_dataset("synthetic", m=9))
    assert not continuation.applies(pb.load_dataset("synthetic", m=8))
    hamming = pb.PrivacyProblem.from_arrays(
        np.ones((2, 600)), pb.FeatureDistortion(np.arange(600.0)[:, None] % 2, "hamming"))
    assert not continuation.applies(hamming)


@pytest.mark.slow
@pytest.mark.parametrize("relative", [0.01, 0.03, 0.1, 0.3, 0.6])
def test_a_warm_started_certificate_holds_the_optimum(monkeypatch, relative: float) -> None:
    """synthetic m = 7 with continuation from n = 32 (the level n = 32, then 128): the default
    run takes the dual mode from a coarse start, certifies 1e-3 bits, and [I - gap, I] holds
    cvxpy's optimum (the bound is an exact price over all n² pairs, whatever the start).
    At 0.01 d_const that start does not hold (gap 0.90 bits after its rounds, as on
    synthetic m = 9 and 11): ``auto`` falls back to Frank-Wolfe, which certifies."""
    pytest.importorskip("cvxpy")
    monkeypatch.setattr(continuation, "COARSE_FROM", 32)
    problem = pb.load_dataset("synthetic", m=7)
    delta = relative * d_const(problem)
    res = pb.get_mechanism("sppm").solve(problem, delta)
    s = res.stats
    if relative == 0.01:
        assert s["mode"] == "frank-wolfe" and "coarse start" in s["auto_fallback"]
    else:
        assert s["mode"] == "dual" and [lv["n"] for lv in s["coarse_levels"]] == [32]
        assert "auto_fallback" not in s
    mi = mutual_information(problem, res.mapping)
    opt = optimum_bits(problem, delta)
    assert s["converged"] and s["gap_bits"] <= 1e-3, (s["stop_reason"], s["gap_bits"])
    assert s["objective_bits"] == pytest.approx(mi, abs=1e-9)
    assert s["lower_bits"] <= opt + OPT_TOL
    assert mi >= opt - OPT_TOL
