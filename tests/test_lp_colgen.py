"""Column generation (``solver="colgen"``) against the whole LP (HiGHS) and cvxpy.

On random problems with zeros in the prior (dead public symbols, a private value of
probability 0) and in the distortion (off-diagonal zeros), on the synthetic example and on
census, the column-generation optimum must agree with HiGHS on the whole LP and with a
cvxpy program written from the definitions to 1e-6 relative; its bound must be a bound
(never above the optimum) within 1e-6 of it; the returned mappings must meet their
constraints to 1e-9.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbench as pb
from privbench.plugins.mechanisms import _lp_colgen

cp = pytest.importorskip("cvxpy")
pytest.importorskip("highspy")

#: (label, mechanism, params, budget kind)
LPS = (("maxleak", "maxleak_optimal", {}, "budget"), ("map", "map_optimal", {}, "budget"),
       ("lip", "lip_optimal", {"notion": "lip"}, "eps"),
       ("ldp", "lip_optimal", {"notion": "ldp"}, "eps"),
       ("pp", "perfect_privacy", {}, "unused"))
REL = 1e-6
#: below this an optimum is zero (zero distortions): cvxpy's own accuracy is ~1e-11
ZERO = 1e-10


def zeros_instance(seed: int) -> pb.PrivacyProblem:
    """n in 25..45, |A| = 3 with one private value of probability 0, two dead public
    symbols, and a distortion with off-diagonal zeros (duplicated symbols)."""
    rng = np.random.default_rng(7000 + seed)
    n = int(rng.integers(25, 46))
    joint = rng.dirichlet(np.full(2 * n, 0.5)).reshape(2, n)
    joint[:, rng.choice(n, 2, replace=False)] = 0.0
    joint = np.vstack([joint, np.zeros(n)]) / joint.sum()
    D = rng.integers(0, 4, size=(n, n)).astype(float) * rng.choice([1.0, 2.5])
    np.fill_diagonal(D, 0.0)
    return pb.PrivacyProblem.from_arrays(joint, D, name=f"colgen-zeros-{seed}")


def budget(kind: str, problem: pb.PrivacyProblem, level: int) -> float:
    """A Δ between the least and the constant distortion, or an ε (nats)."""
    if kind == "eps":
        return (0.1, 1.0, 4.0)[level]
    if kind == "unused":
        return 0.0
    D, p = problem.distortion.to_dense(), problem.p_b
    least, const = float((D * p).min(axis=0).sum()), float((D @ p).min())
    return least + (0.01, 0.1, 0.3)[level] * (const - least)


def cvxpy_optimum(label: str, problem: pb.PrivacyProblem, delta: float) -> float:
    """The LP's optimum from the definitions (X an n x n variable), Clarabel."""
    live = problem.p_a > 0
    n, joint, D, p = problem.n, problem.joint[live], problem.distortion.to_dense(), problem.p_b
    cond = joint / problem.p_a[live][:, None]
    X = cp.Variable((n, n), nonneg=True)
    W, q = cond @ X.T, X @ p
    dist = cp.sum(cp.multiply(D * p[None, :], X))
    cons = [cp.sum(X, axis=0) == 1]
    if label in ("maxleak", "map"):
        rows = cond if label == "maxleak" else joint
        objective, cons = cp.sum(cp.max(rows @ X.T, axis=0)), cons + [dist <= delta]
    else:
        objective = dist
        k = W.shape[0]
        if label == "pp":
            cons += [W[a, :] == W[0, :] for a in range(1, k)]
        elif label == "lip":
            for a in range(k):
                cons += [W[a, :] <= math.exp(delta) * q, W[a, :] >= math.exp(-delta) * q]
        else:
            cons += [W[a, :] <= math.exp(delta) * W[b, :] for a in range(k) for b in range(k)
                     if a != b]
    prob = cp.Problem(cp.Minimize(objective), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert prob.status == cp.OPTIMAL
    return float(prob.value)


def solve(mechanism: str, params: dict, problem: pb.PrivacyProblem, delta: float,
          solver: str) -> pb.MechanismResult:
    mech = pb.get_mechanism(mechanism, solver=solver, max_n=problem.n, **params)
    mech.prepare(problem, pb.RunContext(seed=0))
    return mech.run(problem, delta)


def meets_constraints(label: str, problem: pb.PrivacyProblem, X: np.ndarray, delta: float
                      ) -> None:
    """The promises of each LP, to 1e-9."""
    assert X.min() >= 0.0
    np.testing.assert_allclose(X.sum(axis=0), 1.0, atol=1e-12)
    live = problem.p_a > 0
    cond = problem.joint[live] / problem.p_a[live][:, None]
    W, q = cond @ X.T, X @ problem.p_b
    if label in ("maxleak", "map"):
        used = float(np.sum(problem.distortion.to_dense() * problem.p_b[None, :] * X))
        assert used <= delta * (1 + 1e-12) + 1e-15
    elif label == "pp":
        assert np.abs(W - W[0]).max() <= 1e-9
    elif label == "lip":
        assert (W <= math.exp(delta) * q + 1e-9).all() and (W >= math.exp(-delta) * q - 1e-9).all()
    else:
        assert (W[:, None, :] <= math.exp(delta) * W[None, :, :] + 1e-9).all()


def agree(label: str, mechanism: str, params: dict, problem: pb.PrivacyProblem, delta: float,
          with_cvxpy: bool = True) -> None:
    new = solve(mechanism, params, problem, delta, "colgen")
    old = solve(mechanism, params, problem, delta, "full")
    obj, bound, ref = new.stats["lp_objective"], new.stats["lp_bound"], old.stats["lp_objective"]
    assert abs(obj - ref) <= REL * abs(ref) + ZERO, (label, obj, ref)
    assert bound <= ref + 1e-9 * abs(ref) + 1e-14, (label, bound, ref)  # never above the optimum
    assert new.stats["lp_gap"] <= REL and new.stats["converged"] is True
    if with_cvxpy:
        want = cvxpy_optimum(label, problem, delta)
        assert abs(obj - want) <= REL * abs(want) + ZERO, (label, obj, want)
    meets_constraints(label, problem, new.mapping.toarray(), delta)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("label,mechanism,params,kind", LPS, ids=[r[0] for r in LPS])
def test_colgen_agrees_with_highs_and_cvxpy_on_problems_with_zeros(
        label: str, mechanism: str, params: dict, kind: str, seed: int) -> None:
    problem = zeros_instance(seed)
    agree(label, mechanism, params, problem, budget(kind, problem, seed))


@pytest.mark.parametrize("level", range(3))
@pytest.mark.parametrize("label,mechanism,params,kind", LPS, ids=[r[0] for r in LPS])
def test_colgen_agrees_on_the_synthetic_example(label: str, mechanism: str, params: dict,
                                                kind: str, level: int) -> None:
    problem = pb.load_dataset("synthetic", m=5)
    agree(label, mechanism, params, problem, budget(kind, problem, level), with_cvxpy=level == 1)


@pytest.mark.realdata
@pytest.mark.parametrize("label,mechanism,params,kind", LPS, ids=[r[0] for r in LPS])
def test_colgen_agrees_on_census(label: str, mechanism: str, params: dict, kind: str) -> None:
    try:
        problem = pb.load_dataset("census", top_k=60)
    except pb.PrivbenchError as exc:  # no data: skip, as every realdata test
        pytest.skip(str(exc))
    for level in range(3) if kind != "unused" else range(1):
        agree(label, mechanism, params, problem, budget(kind, problem, level),
              with_cvxpy=level == 1)


@pytest.mark.slow
@pytest.mark.parametrize("label,mechanism,params,kind", LPS, ids=[r[0] for r in LPS])
def test_colgen_agrees_with_the_whole_lp_at_n_300(label: str, mechanism: str, params: dict,
                                                 kind: str) -> None:
    problem = pb.load_dataset("random", n=300, distortion="hamming", bits=12, seed=1)
    agree(label, mechanism, params, problem, budget(kind, problem, 0), with_cvxpy=False)


@pytest.mark.parametrize("label,mechanism", [("maxleak", "maxleak_optimal"), ("map", "map_optimal")])
def test_a_perfectly_private_optimum_is_found_by_the_private_phase(label: str,
                                                                   mechanism: str) -> None:
    """At 0.3 d_const on random Hamming the optimum is the floor (a perfectly private
    mapping meets the budget; perfect_privacy's E[d] is 0.82, Δ 1.62): the private phase
    returns one, agreeing with HiGHS's whole LP and cvxpy, its own objective (computed
    from the mapping) the reported one, within Δ without the budget mix; at 0.1 (Δ = 0.54)
    and 0.01 d_const none fits the budget and the epigraph LP goes on (n = 4,096 at 0.1
    d_const is the case the phase is for: 287 s -> 17 s)."""
    problem = pb.load_dataset("random", n=120, distortion="hamming", bits=12, seed=3)
    for level, private in ((2, True), (1, False), (0, False)):
        delta = budget("budget", problem, level)
        agree(label, mechanism, {}, problem, delta, with_cvxpy=level != 0)
        res = solve(mechanism, {}, problem, delta, "colgen")
        assert res.stats["lp_private_phase"] is private, level
        if private:
            X = res.mapping.toarray()
            W = (problem.joint if label == "map" else problem.joint / problem.p_a[:, None]) @ X.T
            assert abs(W.max(axis=0).sum() - res.stats["lp_objective"]) <= 1e-9
            assert res.stats["lp_objective"] == pytest.approx(res.stats["lp_bound"], rel=1e-9)
            assert res.stats["budget_theta"] == 1.0


@pytest.mark.parametrize("label,mechanism,params,kind", LPS, ids=[r[0] for r in LPS])
def test_the_interior_point_first_master_agrees(monkeypatch, label: str, mechanism: str,
                                                params: dict, kind: str) -> None:
    """Large first masters (IPM_COLUMNS columns and more) are solved by HiGHS's interior
    point method and crossover: forced here on small problems, the optimum still agrees."""
    monkeypatch.setattr(_lp_colgen, "IPM_COLUMNS", 0)
    seen: dict[int, list[int]] = {}
    original = _lp_colgen.ColumnGeneration.solve_master

    def spy(self):
        out = original(self)
        seen.setdefault(id(self), []).append(self.h.getInfo().ipm_iteration_count)
        return out

    monkeypatch.setattr(_lp_colgen.ColumnGeneration, "solve_master", spy)
    problem = zeros_instance(1)
    agree(label, mechanism, params, problem, budget(kind, problem, 1), with_cvxpy=False)
    for counts in seen.values():  # each master's first solve by IPM, the later ones not
        assert counts[0] > 0 and not any(counts[1:]), counts


@pytest.mark.parametrize("epsilon,kept", [(0.1, 2), (1.0, 1), (4.0, 0)])
def test_lip_leaves_out_only_the_upper_rows_the_lower_rows_imply(epsilon: float,
                                                                 kept: int) -> None:
    """p(a) = 0.6, 0.3, 0.1: the upper row of a is implied iff p(a) >= 1 / (1 + e^ε)
    (0.475 at ε = 0.1, 0.269 at 1, 0.018 at 4), so 2, 1 and 0 of the three upper rows stay
    per output; the smaller master still agrees with HiGHS's whole LP and cvxpy (with
    every upper row left out the optimum falls: 0.347 against 0.387 at ε = 0.1)."""
    from privbench.plugins.mechanisms.lip_optimal import implied_upper

    rng = np.random.default_rng(43)
    n = 30
    joint = rng.dirichlet(np.full(n, 0.4), size=3) * np.array([0.6, 0.3, 0.1])[:, None]
    D = rng.integers(1, 4, size=(n, n)).astype(float)  # no zero off the diagonal: E[d] > 0
    np.fill_diagonal(D, 0.0)
    problem = pb.PrivacyProblem.from_arrays(joint, D, name="lip-implied-rows")
    assert implied_upper(problem.p_a, epsilon).sum() == 3 - kept
    data = _lp_colgen.Problem(problem)
    lp = pb.get_mechanism("lip_optimal", max_n=n).sparse_lp(data, epsilon)
    assert sum(f.coef.shape[0] for f in lp.families) == 3 + kept
    agree("lip", "lip_optimal", {"notion": "lip"}, problem, epsilon)


def three_private_values(seed: int) -> pb.PrivacyProblem:
    """n = 40 with |A| = 3, every private value of positive probability (no flow seed)."""
    rng = np.random.default_rng(8000 + seed)
    joint = rng.dirichlet(np.full(120, 0.5)).reshape(3, 40)
    D = rng.integers(0, 4, size=(40, 40)).astype(float)
    np.fill_diagonal(D, 0.0)
    return pb.PrivacyProblem.from_arrays(joint, D, name=f"colgen-three-{seed}")


@pytest.mark.parametrize("level", range(3))
@pytest.mark.parametrize("label,mechanism,params,kind", LPS[2:4], ids=["lip", "ldp"])
def test_lip_and_ldp_start_from_the_perfect_privacy_flow_with_two_private_values(
        monkeypatch, label: str, mechanism: str, params: dict, kind: str, level: int) -> None:
    """A perfectly private mapping meets LIP and LDP at every ε, so with |A| = 2 (here a
    third of probability 0) the first master is the min-cost flow's support (census top
    5,000, LIP at ε = 0.1: 18 rounds against 81) up to ε = 2; with |A| = 3 the nearest
    outputs. Both agree with HiGHS's whole LP and cvxpy."""
    pytest.importorskip("ortools")
    from privbench.plugins.mechanisms import lip_optimal

    small = _lp_colgen.Problem(zeros_instance(level))
    mech = pb.get_mechanism(mechanism, max_n=small.n, **params)
    assert mech.sparse_lp(small, 0.1).flow_seed is False  # below SEED_MIN_LIVE live columns
    monkeypatch.setattr(_lp_colgen, "SEED_MIN_M", 0)  # it applies from m = 5,000 otherwise
    monkeypatch.setattr(lip_optimal, "SEED_MIN_LIVE", 0)
    used: list[bool] = []
    original = _lp_colgen.ColumnGeneration.seed_from_flow

    def spy(self):
        used.append(original(self))
        return used[-1]

    monkeypatch.setattr(_lp_colgen.ColumnGeneration, "seed_from_flow", spy)
    two = level < 2  # ε = 0.1 and 1; at ε = 4 (> SEED_MAX_EPSILON) the nearest outputs
    for problem, seeded in ((zeros_instance(level), True), (three_private_values(level), False)):
        used.clear()
        agree(label, mechanism, params, problem, budget(kind, problem, level))
        assert used == ([seeded] if two else []), (problem.name, used)


def test_large_distortion_lps_re_solve_by_the_primal_simplex(monkeypatch) -> None:
    """From PRIMAL_MIN_M live columns (here 0) the LIP, LDP and perfect-privacy masters
    re-solve by the primal simplex too (census top 5,000, LIP at ε = 0.1: 22.9 s against
    34.3 s in the re-solves); the optimum still agrees with the whole LP and cvxpy."""
    monkeypatch.setattr(_lp_colgen, "PRIMAL_MIN_M", 0)
    seen: list[list[int]] = []
    original = _lp_colgen.ColumnGeneration.solve_master

    def spy(self):
        if "_spy_token" not in vars(self):
            self._spy_token = len(seen)
            seen.append([])
        seen[self._spy_token].append(self.h.getOptionValue("simplex_strategy")[1])
        return original(self)

    monkeypatch.setattr(_lp_colgen.ColumnGeneration, "solve_master", spy)
    problem = pb.load_dataset("random", n=150, distortion="hamming", bits=12, seed=2)
    for label, mechanism, params, kind in LPS[2:]:
        agree(label, mechanism, params, problem, budget(kind, problem, 0))
    assert len(seen) == 3 and all(len(s) > 1 for s in seen), seen
    assert all(s[0] != _lp_colgen.PRIMAL_SIMPLEX and set(s[1:]) == {_lp_colgen.PRIMAL_SIMPLEX}
               for s in seen), seen


def test_lip_first_master_takes_the_nearest_partners_that_lean_the_other_way(monkeypatch
                                                                              ) -> None:
    """The partner seed against a brute force: for each column j the PARTNERS outputs i
    of least d(b̂_i, b_j) among those whose symbol's posterior p(a | b_i) - p(a) has a
    negative inner product with b_j's (a dead output symbol has none); LIP's first master
    holds them and the PARTNERS_NEAREST nearest outputs (at ε = 0.1, as LDP's; not at
    ε = 1), and still agrees with the whole LP (LIP and LDP)."""
    problem = zeros_instance(2)  # dead public symbols, a dead private value
    data = _lp_colgen.Problem(problem)
    mech = pb.get_mechanism("lip_optimal", max_n=problem.n)
    ldp = pb.get_mechanism("lip_optimal", notion="ldp", max_n=problem.n)
    assert ldp.sparse_lp(data, 0.1).partner_seed
    for m in (mech, ldp):  # only at small ε (PARTNER_MAX_EPSILON)
        assert not m.sparse_lp(data, 1.0).partner_seed
    lp = mech.sparse_lp(data, 0.1)
    assert lp.partner_seed
    cg = _lp_colgen.ColumnGeneration(data, lp)
    rows, cols = cg.partner_pairs(_lp_colgen.PARTNERS)
    live_a = problem.p_a > 0
    post = problem.joint[live_a] / np.where(problem.p_b > 0, problem.p_b, 1.0)
    dev = np.where(problem.p_b > 0, post - problem.p_a[live_a][:, None], 0.0)
    D = problem.distortion.to_dense()
    for jj, j in enumerate(data.live):
        opposed = np.flatnonzero(dev[:, j] @ dev < 0)
        got = np.sort(rows[cols == jj])
        assert got.size == min(_lp_colgen.PARTNERS, opposed.size) and np.isin(got, opposed).all()
        # the farthest taken is no farther than the nearest left out (ties either way)
        rest = np.setdiff1d(opposed, got)
        assert rest.size == 0 or D[got, j].max() <= D[rest, j].min()
    cg.initial_pairs()
    assert cg.in_master[rows, cols].all()
    assert cg.in_master[data.dcost.argmin(axis=0), np.arange(data.m)].all()
    agree("lip", "lip_optimal", {"notion": "lip"}, problem, 0.1)
    agree("ldp", "lip_optimal", {"notion": "ldp"}, problem, 0.1)


def test_the_bound_is_below_every_feasible_point_and_stops_the_loop() -> None:
    """After one round the gap is open on this instance, the bound already below the
    optimum; the loop closes it, and a run cut to one round says it did not converge."""
    problem = pb.load_dataset("random", n=150, distortion="hamming", bits=12, seed=2)
    mech = pb.get_mechanism("lip_optimal", max_n=problem.n)
    data = _lp_colgen.Problem(problem)
    lp = mech.sparse_lp(data, 0.1)
    one = _lp_colgen.ColumnGeneration(data, lp, max_rounds=1).run()
    full = _lp_colgen.ColumnGeneration(data, lp).run()
    assert one.converged is False and one.gap > REL
    assert one.bound <= full.objective * (1 + 1e-9)
    assert full.converged and full.gap <= REL and full.rounds > 1


def test_bad_solver_and_tol_are_refused_naming_them() -> None:
    with pytest.raises(pb.ValidationError, match="solver must be one of colgen, full"):
        pb.get_mechanism("maxleak_optimal", solver="pdlp")
    with pytest.raises(pb.ValidationError, match="tol must be a number in"):
        pb.get_mechanism("perfect_privacy", tol=0.0)
    assert pb.get_mechanism("map_optimal").max_n == 10000
    assert pb.get_mechanism("map_optimal", solver="full").max_n == 400


def test_the_catalogue_benchmark_reports_cpu_time_and_both_ratios(capsys) -> None:
    """``benchmark catalogue --full``: each row carries the solve's CPU seconds (the fair
    measure on a loaded machine) and the full LP's row both ratios and the agreement."""
    import json

    from privbench.cli import main

    capsys.readouterr()
    code = main(["benchmark", "catalogue", "--json", "--dataset",
                 "random:n=40,distortion=hamming,bits=12,seed=1", "--full", "40",
                 "--repeat", "1", "--mechanism", "perfect_privacy"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code in (0, None) and [r["solver"] for r in rows] == ["colgen", "full"]
    assert all(r["status"] == "ok" and r["cpu_s"] > 0 for r in rows)
    full = rows[1]
    assert full["cpu_ratio"] == pytest.approx(full["cpu_s"] / rows[0]["cpu_s"])
    assert full["agree"] <= 1e-9


def test_the_catalogue_benchmark_takes_medians_of_alternating_pairs(capsys, monkeypatch) -> None:
    """``--repeat K``: K (colgen, full) pairs run alternating; each row's times are the
    medians and the ratio is the median of the pairs' ratios, not a ratio of medians and
    not one pair's (times stubbed so the medians are known)."""
    import json

    from privbench.cli import main
    from privbench.plugins.mechanisms import _catalogue_benchmark as bench

    times = iter([1.0, 30.0, 2.0, 10.0, 4.0, 40.0])  # pairs (1, 30), (2, 10), (4, 40)
    order: list[str] = []
    real = bench.one_run

    def timed(label, mechanism, params, instance, delta, store):
        row = real(label, mechanism, params, instance, delta, store)
        order.append(params["solver"])
        row["time_s"] = row["cpu_s"] = next(times)
        return row

    monkeypatch.setattr(bench, "one_run", timed)
    capsys.readouterr()
    code = main(["benchmark", "catalogue", "--json", "--dataset",
                 "random:n=30,distortion=hamming,bits=12,seed=1", "--full", "30",
                 "--repeat", "3", "--mechanism", "perfect_privacy"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code in (0, None) and order == ["colgen", "full"] * 3
    assert rows[0]["time_s"] == 2.0 and rows[1]["time_s"] == 30.0
    # the median pair's ratio: not the first pair's (30), not the ratio of medians (15)
    assert rows[1]["ratios"] == [30.0, 5.0, 10.0] and rows[1]["ratio"] == 10.0
    assert main(["benchmark", "catalogue", "--repeat", "0", "--dataset", "synthetic:m=2"]) == 2
    assert "--repeat must be at least 1; got 0" in capsys.readouterr().err


def test_the_epigraph_lps_re_solve_by_the_primal_simplex(monkeypatch) -> None:
    """After the first solve the maximal-leakage and Bayes masters continue by the primal
    simplex (new columns keep the basis primal feasible; 5x fewer iterations on synthetic
    m = 10 at 0.3 d_const), the distortion LPs by HiGHS's choice; the optimum agrees either
    way (the agreement tests above run every re-solve this way)."""
    seen: dict[tuple[str, int], list[int]] = {}
    original = _lp_colgen.ColumnGeneration.solve_master

    def spy(self):  # the strategy each solve of each master runs with
        # a token of our own per master: id() is reused once a master is freed, which
        # merged two masters' solves into one list (a flaky failure in the full suite)
        if "_spy_token" not in vars(self):
            self._spy_token = len(seen)
            seen[(self.lp.objective, self._spy_token)] = []
        seen[(self.lp.objective, self._spy_token)].append(
            self.h.getOptionValue("simplex_strategy")[1])
        return original(self)

    monkeypatch.setattr(_lp_colgen.ColumnGeneration, "solve_master", spy)
    problem = pb.load_dataset("synthetic", m=5)
    for label, mechanism, params, kind in LPS[:2] + LPS[4:]:
        agree(label, mechanism, params, problem, budget(kind, problem, 2), with_cvxpy=False)
    kinds = {kind for kind, _ in seen}
    assert kinds == {"epigraph", "distortion"}, kinds
    for (kind, _), strategies in seen.items():
        assert strategies[0] != _lp_colgen.PRIMAL_SIMPLEX
        assert all((s == _lp_colgen.PRIMAL_SIMPLEX) == (kind == "epigraph")
                   for s in strategies[1:]), (kind, strategies)
    assert any(len(v) > 1 for (kind, _), v in seen.items() if kind == "epigraph")
