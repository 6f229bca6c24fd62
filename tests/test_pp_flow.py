"""The min-cost-flow first master of the perfect-privacy LP (|A| = 2, ``_pp_flow``).

The flow is an exact reformulation of the perfect-privacy LP when d is a metric and every
partner is offered: its mapping must reach the whole LP's optimum (HiGHS) to 1e-6 relative
and be perfectly private up to the 1e-9 rounding of the charges. With a non-metric d it is
a feasible point, so never below the optimum. The column generation seeded by it must agree
with the whole LP and with the unseeded run, and every returned mapping meet its rows to 1e-9.
"""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.plugins.mechanisms import _lp_colgen, _pp_flow

pytest.importorskip("ortools")
pytest.importorskip("highspy")


def optimum(problem: pb.PrivacyProblem) -> float:
    """perfect_privacy's optimum from the whole LP (HiGHS)."""
    mech = pb.get_mechanism("perfect_privacy", solver="full", max_n=problem.n)
    mech.prepare(problem, pb.RunContext(seed=0))
    return float(mech.run(problem, 0.0).stats["lp_objective"])


def flow_point(problem: pb.PrivacyProblem) -> tuple[float, float, float]:
    """E[d] of the flow's mapping, its largest |W(·|a_1) - W(·|a_0)| and column-sum error."""
    data = _lp_colgen.Problem(problem)
    X = _pp_flow.flow_mapping(data)
    assert X is not None
    X = X.toarray()
    W = data.cond @ X.T
    return (float((X * data.dcost).sum()), float(np.abs(W[1] - W[0]).max()),
            float(np.abs(X.sum(axis=0) - 1.0).max()))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_with_every_partner_the_flow_is_the_optimum_on_a_metric(monkeypatch, seed: int) -> None:
    """Hamming is a metric: the path through one end's own symbol is the cheapest, so the
    transport over all pairs is the LP (caught: each arc's output swapped to the other
    end, E[d] 2.2-2.3x the optimum; the mass not divided by |c_j|, not private)."""
    monkeypatch.setattr(_pp_flow, "SEED_PARTNERS", 10**6)
    problem = pb.load_dataset("random", n=150, distortion="hamming", bits=12, seed=seed)
    value, dependence, sums = flow_point(problem)
    assert value == pytest.approx(optimum(problem), rel=1e-6)
    assert dependence <= 1e-8 and sums <= 1e-3


def test_on_a_non_metric_distortion_the_flow_is_feasible_and_no_better(monkeypatch) -> None:
    """Squared l2 breaks the triangle inequality: the flow is an upper bound (synthetic
    m = 6: its E[d] is above the optimum), still perfectly private."""
    monkeypatch.setattr(_pp_flow, "SEED_PARTNERS", 10**6)
    problem = pb.load_dataset("synthetic", m=6)
    value, dependence, sums = flow_point(problem)
    best = optimum(problem)
    assert value >= best * (1 - 1e-9)
    assert dependence <= 1e-12 and sums <= 1e-12


def test_the_seed_applies_only_with_two_private_values() -> None:
    three = pb.PrivacyProblem.from_arrays(np.full((3, 4), 1 / 12), np.ones((4, 4)) - np.eye(4))
    assert _pp_flow.seed_pairs(_lp_colgen.Problem(three)) is None
    two = pb.load_dataset("synthetic", m=3)
    pairs = _pp_flow.seed_pairs(_lp_colgen.Problem(two))
    assert pairs is not None and pairs[0].size >= two.n


@pytest.mark.parametrize("partners", [3, 24])
@pytest.mark.parametrize("seed", [4, 5])
def test_the_seeded_column_generation_agrees_with_the_whole_lp(monkeypatch, partners: int,
                                                               seed: int) -> None:
    """Few partners give a seed far from the optimum: the column generation must still
    reach the whole LP's optimum, prove it, and return a perfectly private mapping; and
    the run without the seed must give the same value."""
    monkeypatch.setattr(_pp_flow, "SEED_PARTNERS", partners)
    monkeypatch.setattr(_lp_colgen, "SEED_MIN_M", 0)  # here n = 200
    used: list[bool] = []
    original = _lp_colgen.ColumnGeneration.seed_from_flow

    def spy(self):
        out = original(self)
        used.append(out)
        return out

    monkeypatch.setattr(_lp_colgen.ColumnGeneration, "seed_from_flow", spy)
    problem = pb.load_dataset("random", n=200, distortion="hamming", bits=12, seed=seed)
    mech = pb.get_mechanism("perfect_privacy", max_n=problem.n)
    mech.prepare(problem, pb.RunContext(seed=0))
    res = mech.run(problem, 0.0)
    assert used == [True]
    want = optimum(problem)
    assert res.stats["lp_objective"] == pytest.approx(want, rel=1e-6)
    assert res.stats["lp_bound"] <= want * (1 + 1e-9) and res.stats["lp_gap"] <= 1e-6
    X = res.mapping.toarray()
    W = problem.joint / problem.p_a[:, None] @ X.T
    assert np.abs(W[1] - W[0]).max() <= 1e-9
    monkeypatch.setattr(_pp_flow, "seed_pairs", lambda data: None)
    plain = mech.run(problem, 0.0)
    assert used[-1] is False
    assert plain.stats["lp_objective"] == pytest.approx(res.stats["lp_objective"], rel=1e-6)


def test_small_problems_seed_perfect_privacy_from_a_narrow_flow(monkeypatch) -> None:
    """Below SEED_MIN_M live columns the perfect-privacy LP starts from a flow over
    SMALL_SEED_PARTNERS partners per column (random Hamming n = 600: 53 ms CPU against 83
    from the 16 nearest; with 300 partners 294), LIP and LDP from the nearest outputs
    (their flow seed only from SEED_MIN_M); perfect privacy still meets the whole LP."""
    pytest.importorskip("ortools")
    problem = pb.load_dataset("random", n=200, distortion="hamming", bits=12, seed=4)
    data = _lp_colgen.Problem(problem)
    offered: list[int | None] = []
    original = _pp_flow.seed_pairs
    monkeypatch.setattr(_pp_flow, "seed_pairs",
                        lambda d, partners=None: offered.append(partners) or original(d, partners))
    cg = _lp_colgen.ColumnGeneration(data, _lp_colgen.private_lp(data))
    cg.initial_pairs()
    assert offered == [_lp_colgen.SMALL_SEED_PARTNERS]
    assert cg.pairs_i.size < 4 * data.m  # the flow's support, each nearest and the constant
    for notion in ("lip", "ldp"):
        lp = pb.get_mechanism("lip_optimal", notion=notion, max_n=problem.n).sparse_lp(data, 1.0)
        cg = _lp_colgen.ColumnGeneration(data, lp)
        cg.seed_from_flow = lambda: pytest.fail("the flow seed ran below SEED_MIN_M")
        cg.initial_pairs()
        assert cg.pairs_i.size > 12 * data.m
    mech = pb.get_mechanism("perfect_privacy", max_n=problem.n)
    mech.prepare(problem, pb.RunContext(seed=0))
    res = mech.run(problem, 0.0)
    assert res.stats["lp_objective"] == pytest.approx(optimum(problem), rel=1e-6)
    assert res.stats["lp_gap"] <= 1e-6 and offered[-1] == _lp_colgen.SMALL_SEED_PARTNERS


def test_the_private_phase_does_not_pay_for_the_flow(monkeypatch) -> None:
    """maxleak_optimal's private phase stops at the first perfect-privacy master within Δ,
    so it starts from the nearest outputs, not from the flow (random Hamming n = 4,096 at
    0.1 d_const: 2.2 s CPU against 8.2 s); its answer is still the floor."""
    monkeypatch.setattr(_lp_colgen, "SEED_MIN_M", 0)
    calls: list[str] = []
    monkeypatch.setattr(_lp_colgen.ColumnGeneration, "seed_from_flow",
                        lambda self: calls.append(self.lp.objective) or False)
    problem = pb.load_dataset("random", n=120, distortion="hamming", bits=12, seed=3)
    D, p = problem.distortion.to_dense(), problem.p_b
    least, const = float((D * p).min(axis=0).sum()), float((D @ p).min())
    mech = pb.get_mechanism("maxleak_optimal", max_n=problem.n)
    mech.prepare(problem, pb.RunContext(seed=0))
    res = mech.run(problem, least + 0.3 * (const - least))
    assert res.stats["lp_private_phase"] is True and res.stats["lp_objective"] == pytest.approx(1.0)
    assert calls == []
    pp = pb.get_mechanism("perfect_privacy", max_n=problem.n)
    pp.prepare(problem, pb.RunContext(seed=0))
    pp.run(problem, 0.0)
    assert calls == ["distortion"]  # perfect_privacy itself does
