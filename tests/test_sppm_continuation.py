"""SPPM started from a coarse solve on a line (:mod:`._sppm.continuation`): the coarse
problem, the seed pairs, the prolonged mapping, and certified intervals that hold cvxpy's
optimum for the dual mode and for Frank-Wolfe so started."""

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
@pytest.mark.parametrize("relative", [0.03, 0.1, 0.3, 0.6])
def test_a_warm_started_certificate_holds_the_optimum(monkeypatch, relative: float) -> None:
    """synthetic m = 7 with continuation from n = 32 (the level n = 32, then 128): the default
    run takes the dual mode from a coarse start, certifies 1e-3 bits, and [I - gap, I] holds
    cvxpy's optimum (the bound is an exact price over all n² pairs, whatever the start)."""
    pytest.importorskip("cvxpy")
    monkeypatch.setattr(continuation, "COARSE_FROM", 32)
    problem = pb.load_dataset("synthetic", m=7)
    delta = relative * d_const(problem)
    res = pb.get_mechanism("sppm").solve(problem, delta)
    s = res.stats
    assert s["mode"] == "dual" and [lv["n"] for lv in s["coarse_levels"]] == [32]
    assert "auto_fallback" not in s
    check_interval(problem, delta, res)


def check_interval(problem: pb.PrivacyProblem, delta: float, res: pb.MechanismResult) -> None:
    """Certified to 1e-3 bits, and [I - gap, I] holds cvxpy's optimum."""
    s = res.stats
    mi = mutual_information(problem, res.mapping)
    opt = optimum_bits(problem, delta)
    assert s["converged"] and s["gap_bits"] <= 1e-3, (s["stop_reason"], s["gap_bits"])
    assert s["objective_bits"] == pytest.approx(mi, abs=1e-9)
    assert s["lower_bits"] <= opt + OPT_TOL
    assert mi >= opt - OPT_TOL


@pytest.mark.slow
def test_a_dual_start_that_does_not_hold_falls_back_to_frank_wolfe(monkeypatch) -> None:
    """At 0.01 d_const (auto takes Frank-Wolfe there; the dual mode's threshold is lowered
    here) the coarse dual start on m = 7 does not hold (gap ~0.9 bits after its rounds, as
    on synthetic m = 9 and 11): auto falls back to Frank-Wolfe, from the coarse mapping,
    which certifies and holds cvxpy's optimum (fails without the fallback)."""
    pytest.importorskip("cvxpy")
    from privbench.plugins.mechanisms._sppm import modes

    monkeypatch.setattr(continuation, "COARSE_FROM", 32)
    monkeypatch.setattr(modes, "AUTO_LINE_DUAL_FROM", 0.01)
    problem = pb.load_dataset("synthetic", m=7)
    delta = 0.01 * d_const(problem)
    res = pb.get_mechanism("sppm").solve(problem, delta)
    s = res.stats
    assert s["mode"] == "frank-wolfe" and "coarse start" in s["auto_fallback"]
    assert [lv["n"] for lv in s["coarse_levels"]] == [32]
    check_interval(problem, delta, res)


def test_a_prolonged_mapping_shifts_each_group_and_keeps_its_columns_and_cost() -> None:
    """Coarse pair (I, J) sends the k-th member of J to the k-th member of I with J's mass
    on I: fine columns sum to one, and on evenly spaced symbols with equal weights the
    fine E[d] equals the coarse one (a shift by 4 (I - J) symbols costs what the group
    means' distance does)."""
    n = 16
    points = np.arange(n, dtype=float)[::-1].copy()  # coordinate order reversed
    problem = pb.PrivacyProblem.from_arrays(np.full((2, n), 1.0 / (2 * n)),
                                            pb.FeatureDistortion(points[:, None], "sq_l2"))
    coarse, order, group = continuation.coarsen(problem)
    # coarse mapping: J=0 stays (0.7) or moves to I=1 (0.3); J=1,2,3 stay
    rows_c, cols_c = np.array([0, 1, 1, 2, 3]), np.array([0, 0, 1, 2, 3])
    x_c = np.array([0.7, 0.3, 1.0, 1.0, 1.0])
    rows, cols, x = continuation.prolong_mapping(order, group, rows_c, cols_c, x_c, n)
    assert np.allclose(np.bincount(cols, weights=x, minlength=n), 1.0)
    got = {(int(r), int(c)): v for r, c, v in zip(rows, cols, x, strict=True)}
    for k in range(continuation.FACTOR):
        j = int(order[k])  # the k-th member of coarse input 0
        assert got[(j, j)] == pytest.approx(0.7)
        assert got[(int(order[continuation.FACTOR + k]), j)] == pytest.approx(0.3)
    fine_used = float(np.sum(x * problem.p_b[cols] * problem.distortion.pairs(rows, cols)))
    coarse_used = float(np.sum(x_c * coarse.p_b[cols_c] * coarse.distortion.pairs(rows_c, cols_c)))
    assert fine_used == pytest.approx(coarse_used, rel=1e-12)


def test_a_prolonged_mapping_that_overspends_is_mixed_into_the_budget(monkeypatch) -> None:
    """Off evenly spaced symbols a shifted mapping can spend more than the coarse one (here
    a prolonged start that sends half of every input to the line's far end): Frank-Wolfe's
    start is mixed with the default X0 to spend at most (1 - BUDGET_MARGIN) Δ, columns on
    the simplex (fails if the mix is dropped)."""
    from privbench.plugins.mechanisms._sppm import solve

    problem = pb.load_dataset("synthetic", m=9)
    n, delta = problem.n, 1e-3 * d_const(problem)
    far = np.r_[np.arange(n), np.full(n, n - 1)]
    monkeypatch.setattr(continuation, "coarse_mapping", lambda p, d, s: (
        far, np.r_[np.arange(n), np.arange(n)], np.full(2 * n, 0.5), [{"n": n // 4}]))
    raw = 0.5 * float(problem.p_b @ problem.distortion.pairs(far[n:], np.arange(n)))
    assert raw > 100 * delta  # the case the mix is for
    rows, cols, x, levels = solve._coarse_mapping(problem, delta, pb.get_lp_backend("mckp"),
                                                solve.DEFAULT_SETTINGS)
    used = float(np.sum(x * problem.p_b[cols] * problem.distortion.pairs(rows, cols)))
    assert delta * (1 - 2e-9) <= used <= delta * (1 - solve.BUDGET_MARGIN) * (1 + 1e-12)
    assert np.allclose(np.bincount(cols, weights=x, minlength=n), 1.0)
    assert x.min() >= 0 and levels == [{"n": n // 4}]


@pytest.mark.slow
@pytest.mark.parametrize("m", [6, 7])
@pytest.mark.parametrize("relative", [1e-4, 1e-3, 0.01])
def test_frank_wolfe_from_a_prolonged_coarse_mapping_holds_the_optimum(
        monkeypatch, m: int, relative: float) -> None:
    """Below AUTO_LINE_DUAL_FROM the default run is Frank-Wolfe from the coarse level's
    prolonged mapping (COARSE_FROM lowered to 32: m = 6 from n = 16, m = 7 from n = 32):
    it certifies 1e-3 bits and [I - gap, I] holds cvxpy's optimum."""
    pytest.importorskip("cvxpy")
    from privbench.plugins.mechanisms._sppm import modes

    monkeypatch.setattr(continuation, "COARSE_FROM", 32)
    problem = pb.load_dataset("synthetic", m=m)
    delta = relative * d_const(problem)
    assert relative < modes.AUTO_LINE_DUAL_FROM
    res = pb.get_mechanism("sppm").solve(problem, delta)
    s = res.stats
    assert s["mode"] == "frank-wolfe" and [lv["n"] for lv in s["coarse_levels"]] == [problem.n // 4]
    assert "auto_fallback" not in s
    check_interval(problem, delta, res)


@pytest.mark.parametrize("mode", ["dual", "frank-wolfe"])
def test_coarse_start_false_runs_without_a_coarse_solve(monkeypatch, mode: str) -> None:
    """``coarse_start=False`` (the benchmark's ``sppm mode=dual`` peer) never solves a
    coarse level; the same run with the default does (fails if the switch is ignored)."""
    monkeypatch.setattr(continuation, "COARSE_FROM", 32)
    calls: list[int] = []
    for name in ("coarse_start", "coarse_mapping"):
        original = getattr(continuation, name)

        def counted(problem, *args, _original=original, **kwargs):
            calls.append(problem.n)
            return _original(problem, *args, **kwargs)

        monkeypatch.setattr(continuation, name, counted)
    problem = pb.load_dataset("synthetic", m=6)
    delta = 0.3 * d_const(problem)
    params = dict(mode=mode, tol=1e-2, polish_rounds=3, iterations=300)
    cold = pb.get_mechanism("sppm", coarse_start=False, **params).solve(problem, delta)
    assert calls == [] and cold.stats["coarse_levels"] is None
    warm = pb.get_mechanism("sppm", **params).solve(problem, delta)
    assert calls == [64] and [lv["n"] for lv in warm.stats["coarse_levels"]] == [16]


def test_coarse_start_must_be_a_bool() -> None:
    with pytest.raises(pb.ValidationError, match="coarse_start must be true or false"):
        pb.get_mechanism("sppm", coarse_start="no")


def test_the_warm_round_cap_is_the_fine_level_s_only(monkeypatch) -> None:
    """auto gives a dual run from a coarse start WARM_ROUNDS rounds before it falls back,
    but its coarse levels keep ``polish_rounds``: with the cap on them the coarsest cold
    dual level of synthetic m = 12 at 0.6 d_const stopped at a gap of 0.13 bits and the
    run fell back to Frank-Wolfe (77-130 s instead of ~2 s)."""
    from privbench.plugins.mechanisms._sppm import solve

    monkeypatch.setattr(continuation, "COARSE_FROM", 32)
    seen: list[tuple[int, int, int | None]] = []
    original = solve._solve_state

    def recorded(problem, delta, backend, o, x0, on_iteration, t_total, fine_rounds=None):
        seen.append((problem.n, o.polish_rounds, fine_rounds))
        return original(problem, delta, backend, o, x0, on_iteration, t_total, fine_rounds)

    monkeypatch.setattr(solve, "_solve_state", recorded)
    problem = pb.load_dataset("synthetic", m=7)
    res = pb.get_mechanism("sppm").solve(problem, 0.3 * d_const(problem))
    assert res.stats["mode"] == "dual" and res.stats["converged"]
    assert seen[-2:] == [(128, 20, solve.WARM_ROUNDS), (32, 20, None)]  # after prepare's
