"""The field's mechanisms: privacy_funnel, watchdog, pram, mondrian, ppan.

Each has a small example worked out by hand in the comments, the conformance checks of
``check_mechanism`` and, for PPAN, the distance to the exact optimum on the toy example.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import privbench as pb
from privbench import metrics as M
from privbench.plugins.mechanisms.mondrian import Mondrian, mondrian_cells
from privbench.plugins.mechanisms.ppan import PPAN
from privbench.plugins.mechanisms.pram import Pram, invariant_matrix
from privbench.plugins.mechanisms.privacy_funnel import PrivacyFunnel
from privbench.plugins.mechanisms.watchdog import Watchdog, log_lifts
from privbench.testing import check_mechanism


def mi_bits(joint_out: list[list[float]]) -> float:
    """I(A; Y) in bits straight from the definition (a hand check, not the library's)."""
    J = np.asarray(joint_out, dtype=float)
    pa, py = J.sum(axis=1), J.sum(axis=0)
    return sum(J[a, y] * math.log2(J[a, y] / (pa[a] * py[y]))
               for a in range(J.shape[0]) for y in range(J.shape[1]) if J[a, y] > 0)


def line_problem(joint) -> pb.PrivacyProblem:
    """Symbols at 0, 1, 2, ... on a line, d = |b̂ - b|."""
    n = np.asarray(joint).shape[1]
    return pb.PrivacyProblem.from_arrays(joint, pb.FeatureDistortion(np.arange(n, dtype=float), "l1"))


def coded_problem(seed: int = 0, users: int = 400, sizes=(3, 2, 4), top: int = 14) -> pb.PrivacyProblem:
    """Users with coded profiles (one attribute per entry of ``sizes``), the ``top`` most
    frequent profiles as the alphabet, Hamming distortion, records and coding parts."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, s, users) for s in sizes])
    private = (rng.random(users) < 0.2 + 0.6 * (codes[:, 0] == 0)).astype(int)
    profiles, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    keep = np.argsort(-counts, kind="stable")[:top]
    where = np.full(len(profiles), -1)
    where[keep] = np.arange(keep.size)
    symbol = where[inverse.reshape(-1)]
    joint = np.zeros((2, keep.size))
    np.add.at(joint, (private[symbol >= 0], symbol[symbol >= 0]), 1.0)
    records = pd.DataFrame({"private": private, "symbol": symbol})
    coding = pb.ProfileCoding([list(range(s)) for s in sizes], profiles[keep], codes)
    return pb.PrivacyProblem.from_arrays(joint, pb.FeatureDistortion(profiles[keep], "hamming"),
                                         records=records, coding=coding, name=f"coded-{seed}")


# ---------------------------------------------------------------- privacy funnel
# p(a, b) = [[.25, .25, 0], [0, .25, .25]]: p(b) = (.25, .5, .25), p(a|b) = (1,0), (.5,.5), (0,1);
# I(A; B) = 1 - .5 h(.5) = .5 bit. d = |b̂ - b| on 0, 1, 2. φ(c) = Σ_a q ln(q / p_c):
# φ(b0) = φ(b2) = 0, φ(b1) = -.5 ln 2.
#   {b0,b1}: q = (.5,.25): φ = .5 ln 2 - .75 ln 3, gain = .75 ln 3 - ln 2 = .1308 nats;
#            representative b1 costs .25 * 1 = .25 (b0: .5, b2: 1)  -> ratio .523
#   {b1,b2}: the mirror image: gain .1308, added .25                -> ratio .523
#   {b0,b2}: q = (.25,.25): gain = .5 ln 2 = .3466; b0, b1, b2 all cost .5 -> ratio .693
# Δ = .5: {b0,b2} first (released as b0, the first of the tie); then {b0,b2} and {b1} have
#         the same p(a|·): no gain left. I = 0, E[d] = .25 * 2 = .5.
# Δ = .3: {b0,b2} does not fit; {b0,b1} and {b1,b2} tie, the lower ids go first: b0 -> b1,
#         E[d] = .25; then {b0,b1} + {b2} would add .25 > .05 left. I = .5 - .1308/ln 2 bits.
# Δ = .2: nothing fits: the identity.
FUNNEL_JOINT = [[0.25, 0.25, 0.0], [0.0, 0.25, 0.25]]


@pytest.mark.parametrize("candidates", [1, 64])
def test_funnel_hand_example(candidates):
    problem = line_problem(FUNNEL_JOINT)
    mech = pb.get_mechanism("privacy_funnel", candidates=candidates)
    X = mech.solve(problem, 0.5).mapping.toarray()
    np.testing.assert_array_equal(X, [[1, 0, 1], [0, 1, 0], [0, 0, 0]])
    assert M.mutual_information(problem, X) == pytest.approx(0.0, abs=1e-12)
    assert M.expected_distortion(problem, X) == pytest.approx(0.5)
    res = mech.solve(problem, 0.3)
    np.testing.assert_array_equal(res.mapping.toarray(), [[0, 0, 0], [1, 1, 0], [0, 0, 1]])
    expected = 0.5 - (0.75 * math.log(3) - math.log(2)) / math.log(2)
    assert expected == pytest.approx(mi_bits([[0.5, 0.0], [0.25, 0.25]]))
    assert M.mutual_information(problem, res.mapping) == pytest.approx(expected)
    assert res.stats["cluster_mi_bits"] == pytest.approx(expected)
    assert M.expected_distortion(problem, res.mapping) == pytest.approx(0.25)
    np.testing.assert_array_equal(mech.solve(problem, 0.2).mapping.toarray(), np.eye(3))


def test_funnel_conformance_and_candidates():
    check_mechanism(PrivacyFunnel)
    # pricing a few candidates a cluster is a heuristic: it never beats the exhaustive greedy
    # by much and must stay deterministic; both keep the budget and data processing
    problem = pb.load_dataset("random", n=40, n_private=3, seed=3, distortion="hamming", bits=6)
    for delta in (0.2, 0.8):
        full = pb.get_mechanism("privacy_funnel", candidates=1000).solve(problem, delta)
        few = pb.get_mechanism("privacy_funnel", candidates=4).solve(problem, delta)
        again = pb.get_mechanism("privacy_funnel", candidates=4).solve(problem, delta)
        assert (few.mapping != again.mapping).nnz == 0
        for res in (full, few):
            assert M.expected_distortion(problem, res.mapping) <= delta + 1e-12
            assert set(res.mapping.data.tolist()) == {1.0}  # deterministic
        assert M.mutual_information(problem, full.mapping) < problem.prior_mi_bits


def test_funnel_refuses_an_impossible_budget():
    problem = pb.PrivacyProblem.from_arrays(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(pb.ValidationError, match="least distortion"):
        pb.get_mechanism("privacy_funnel").solve(problem, 0.5)


# ---------------------------------------------------------------- watchdog
# p(a, b) = [[.4, .1, 0], [.1, .2, .2]]: p(a) = (.5, .5), p(b) = (.5, .3, .2).
# log-lifts: b0: p(a|b0) = (.8, .2) -> max(|ln 1.6|, |ln .4|) = ln 2.5 = .916;
#            b1: (1/3, 2/3) -> ln 1.5 = .405;  b2: (0, 1) -> ∞.
# ε = .5: S = {b0, b2}, b1 released as is; p(a|S) = (.4, .3)/.7: residual lift ln(7/6).
# I(A; B̂) = I over the outputs {S, b1} with joints (.4, .3) and (.1, .2), whatever R is.
# d = |b̂ - b| on 0, 1, 2: uniform R: E[d] = .5 * .5 * 2 + .2 * .5 * 2 = .7;
# medoid: b0 costs .2 * 2 = .4 over S, b2 costs .5 * 2 = 1: all of S -> b0, E[d] = .4;
# prior: R = (5/7, 2/7): E[d] = .5 * 2/7 * 2 + .2 * 5/7 * 2 = 4/7.
WATCHDOG_JOINT = [[0.4, 0.1, 0.0], [0.1, 0.2, 0.2]]


def test_watchdog_hand_example():
    problem = line_problem(WATCHDOG_JOINT)
    np.testing.assert_allclose(log_lifts(problem.joint), [math.log(2.5), math.log(1.5), np.inf])
    expected_mi = mi_bits([[0.4, 0.1], [0.3, 0.2]])
    for rule, distortion in (("uniform", 0.7), ("medoid", 0.4), ("prior", 4 / 7)):
        res = pb.get_mechanism("watchdog", rule=rule).solve(problem, 0.5)
        X = res.mapping.toarray()
        np.testing.assert_allclose(X[:, 1], [0, 1, 0])
        np.testing.assert_allclose(X[:, 0], X[:, 2])
        assert M.mutual_information(problem, X) == pytest.approx(expected_mi, abs=1e-12)
        assert M.expected_distortion(problem, X) == pytest.approx(distortion)
        assert res.stats["randomised"] == 2
        assert res.stats["residual_lift"] == pytest.approx(math.log(7 / 6))
    uniform = pb.get_mechanism("watchdog").solve(problem, 0.5).mapping.toarray()
    np.testing.assert_allclose(uniform[:, 0], [0.5, 0, 0.5])
    # ε = 1: only b2 is risky, and a set of one is released as it is
    X1 = pb.get_mechanism("watchdog").solve(problem, 1.0).mapping.toarray()
    np.testing.assert_array_equal(X1, np.eye(3))
    # ε = 0: every symbol with a lift is randomised: nothing leaks
    X0 = pb.get_mechanism("watchdog").solve(problem, 0.0).mapping
    assert M.mutual_information(problem, X0) == pytest.approx(0.0, abs=1e-12)


def test_watchdog_conformance_and_delta_role():
    check_mechanism(Watchdog)
    assert Watchdog.delta_role == "epsilon" and not Watchdog.respects_budget
    with pytest.raises(pb.ValidationError, match="rule"):
        pb.get_mechanism("watchdog", rule="closest")


# ---------------------------------------------------------------- PRAM
# One attribute, levels with frequencies p = (.75, .25), P's diagonal (.8, .6):
#   P = [[.8, .2], [.4, .6]]; Σ_l p_l P[l, k] = (.7, .3);
#   Q[k, j] = P[j, k] p_j / that = [[6/7, 1/7], [1/2, 1/2]];
#   R = P Q = [[11/14, 3/14], [9/14, 5/14]] (p R = p: .75 * 11/14 + .25 * 9/14 = .75);
#   α = .5: Rs = (R + I)/2 = [[25/28, 3/28], [9/28, 19/28]].
def test_pram_invariant_matrix_by_hand():
    Rs = invariant_matrix(np.array([0.75, 0.25]), np.array([0.8, 0.6]), 0.5)
    np.testing.assert_allclose(Rs, np.array([[25, 3], [9, 19]]) / 28)
    R = invariant_matrix(np.array([0.75, 0.25]), np.array([0.8, 0.6]), 1.0)
    np.testing.assert_allclose(np.array([0.75, 0.25]) @ R, [0.75, 0.25])
    rng = np.random.default_rng(1)
    for L in (1, 3, 6):
        p = rng.dirichlet(np.ones(L))
        R = invariant_matrix(p, rng.uniform(0.3, 1.0, L), rng.random())
        np.testing.assert_allclose(R.sum(axis=1), 1.0)
        np.testing.assert_allclose(p @ R, p, atol=1e-12)  # invariance, any α
    np.testing.assert_allclose(invariant_matrix(np.array([0.5, 0.5]), np.ones(2), 0.7), np.eye(2))


def pram_problem() -> pb.PrivacyProblem:
    """Two binary attributes; the alphabet lacks the profile (1, 0)."""
    profiles = np.array([[0, 0], [0, 1], [1, 1]])
    records = np.array([[0, 0]] * 4 + [[0, 1]] * 3 + [[1, 1]] * 2 + [[1, 0]] * 1)
    symbol = np.array([0] * 4 + [1] * 3 + [2] * 2 + [-1])
    private = np.array([0, 0, 0, 1, 0, 1, 1, 1, 1, 0])
    joint = np.zeros((2, 3))
    np.add.at(joint, (private[symbol >= 0], symbol[symbol >= 0]), 1.0)
    return pb.PrivacyProblem.from_arrays(
        joint, pb.FeatureDistortion(profiles, "hamming"),
        records=pd.DataFrame({"private": private, "symbol": symbol}),
        coding=pb.ProfileCoding([[0, 1], [0, 1]], profiles, records))


def test_pram_kronecker_and_renormalisation_by_hand():
    # attribute frequencies from the ten records: the first is 0 in 7 of 10 -> (.7, .3);
    # the second is 0 in 5 of 10 -> (.5, .5). X[i, j] = Rs1[c_j1, c_i1] Rs2[c_j2, c_i2],
    # renormalised over the three profiles of the alphabet (the fourth, (1, 0), is outside).
    problem = pram_problem()
    res = pb.get_mechanism("pram", pd=0.6, alpha=0.5).solve(problem, 0.0, seed=3)
    d1, d2 = (np.array(d) for d in res.stats["diagonals"])
    assert ((d1 >= 0.6) & (d1 <= 1)).all() and ((d2 >= 0.6) & (d2 <= 1)).all()
    R1 = invariant_matrix(np.array([0.7, 0.3]), d1, 0.5)
    R2 = invariant_matrix(np.array([0.5, 0.5]), d2, 0.5)
    profiles = [(0, 0), (0, 1), (1, 1)]
    raw = np.array([[R1[j[0], i[0]] * R2[j[1], i[1]] for j in profiles] for i in profiles])
    np.testing.assert_allclose(res.mapping.toarray(), raw / raw.sum(axis=0))
    lost = np.array([R1[j[0], 1] * R2[j[1], 0] for j in profiles])  # mass sent to (1, 0)
    np.testing.assert_allclose(1 - raw.sum(axis=0), lost)
    assert res.stats["outside_mass"] == pytest.approx(problem.p_b @ lost)
    # seeded: the same seed, the same mapping; another seed, other diagonals
    again = pb.get_mechanism("pram", pd=0.6, alpha=0.5).solve(problem, 0.0, seed=3)
    assert abs(res.mapping - again.mapping).max() == 0
    other = pb.get_mechanism("pram", pd=0.6, alpha=0.5).solve(problem, 0.0, seed=4)
    assert abs(res.mapping - other.mapping).max() > 0
    # α = 0 or pd = 1 leave every record as it is
    for params in ({"alpha": 0.0}, {"pd": 1.0}):
        X = pb.get_mechanism("pram", **params).solve(problem, 0.0).mapping.toarray()
        np.testing.assert_allclose(X, np.eye(3))


def test_pram_conformance_and_skip():
    check_mechanism(Pram, problems=[coded_problem(0), coded_problem(1)])
    skip, reason = pb.get_mechanism("pram").skip(line_problem(FUNNEL_JOINT))
    assert skip and "coding" in reason
    with pytest.raises(pb.ValidationError, match="pd"):
        pb.get_mechanism("pram", pd=1.5)


# ---------------------------------------------------------------- Mondrian
# One attribute, codes 0..5 with users (3, 1, 1, 1, 1, 3).
# k = 3: the weighted median of all ten is code 2 (cumulative 3, 4, 5 >= 5): {0,1,2} | {3,4,5},
#        five users each. {0,1,2}: median code 0 leaves {1,2} with 2 < 3 users: a cell.
#        {3,4,5}: the median is the last code 5, so the cut is at 4: {3,4} has 2 < 3: a cell.
# k = 2: {0,1,2} splits at 0 into {0} (3) and {1,2} (2); {1,2} at 1 would leave 1: a cell.
#        {3,4,5} splits at 4 into {3,4} (2) and {5} (3). Cells {0}, {1,2}, {3,4}, {5}.
def test_mondrian_cells_by_hand():
    codes = np.arange(6)[:, None]
    counts = np.array([3, 1, 1, 1, 1, 3], dtype=float)
    assert [c.tolist() for c in mondrian_cells(codes, counts, 3)] == [[0, 1, 2], [3, 4, 5]]
    assert [c.tolist() for c in mondrian_cells(codes, counts, 2)] == [[0], [1, 2], [3, 4], [5]]
    assert [c.tolist() for c in mondrian_cells(codes, counts, 11)] == [list(range(6))]
    # two attributes: the first spans 0..3 (normalised width 1), the second 0..1 (also 1);
    # after the cut on the first (the tie goes to the first), each half spans 1/3 of the
    # first and all of the second: the second is cut next.
    grid = np.array(list(itertools.product(range(4), range(2))))
    cells = mondrian_cells(grid, np.ones(8), 2)
    assert [grid[c].tolist() for c in cells] == [
        [[0, 0], [1, 0]], [[0, 1], [1, 1]], [[2, 0], [3, 0]], [[2, 1], [3, 1]]]


def test_mondrian_mapping_by_hand():
    # six profiles on a line, users as above; A is 0 for the first three profiles' users
    # but one: p(a, b) from counts [[3,1,0,0,0,0],[0,0,1,1,1,3]] / 10. k = 3: cells
    # {0,1,2} and {3,4,5}; uniform release: each column of a cell is 1/3 on the cell.
    joint = np.array([[3, 1, 0, 0, 0, 0], [0, 0, 1, 1, 1, 3]], dtype=float)
    symbol = np.repeat(np.arange(6), [3, 1, 1, 1, 1, 3])
    private = np.repeat([0, 0, 1, 1, 1, 1], [3, 1, 1, 1, 1, 3])
    codes = np.arange(6)[:, None]
    problem = pb.PrivacyProblem.from_arrays(
        joint, pb.FeatureDistortion(codes.astype(float), "l1"),
        records=pd.DataFrame({"private": private, "symbol": symbol}),
        coding=pb.ProfileCoding([list(range(6))], codes, codes[symbol]))
    res = pb.get_mechanism("mondrian", k=3).solve(problem, 0.0)
    block = np.full((3, 3), 1 / 3)
    np.testing.assert_allclose(res.mapping.toarray(), np.block([[block, 0 * block], [0 * block, block]]))
    assert M.mutual_information(problem, res.mapping) == pytest.approx(mi_bits([[0.4, 0.0], [0.1, 0.5]]))
    # E[d]: within {0,1,2} each of the three outputs is 1/3: users at 0 pay (0+1+2)/3 = 1,
    # at 1 pay 2/3, at 2 pay 1; the same mirrored: (3*1 + 1*2/3 + 1*1) * 2 / 10
    assert M.expected_distortion(problem, res.mapping) == pytest.approx((3 + 2 / 3 + 1) * 2 / 10)
    assert res.stats["cells"] == 2 and res.stats["smallest_cell_users"] == 5
    prior = pb.get_mechanism("mondrian", k=3, release="prior").solve(problem, 0.0).mapping.toarray()
    np.testing.assert_allclose(prior[:3, 0], [0.6, 0.2, 0.2])


def test_mondrian_conformance_and_skip():
    check_mechanism(Mondrian, problems=[coded_problem(0), coded_problem(2)])
    skip, reason = pb.get_mechanism("mondrian").skip(line_problem(FUNNEL_JOINT))
    assert skip and "coding" in reason


@pytest.mark.realdata
def test_mondrian_census_is_k_anonymous(real_data_dir):
    problem = pb.load_dataset("census", top_k=300, data_dir=str(real_data_dir))
    counts = np.bincount(problem.records["symbol"].to_numpy()[problem.records["symbol"] >= 0],
                         minlength=problem.n)
    for k in (10, 100):
        res = pb.get_mechanism("mondrian", k=k).solve(problem, 0.0)
        X = res.mapping.toarray()
        cells = {tuple(np.flatnonzero(X[:, j])) for j in range(problem.n)}
        assert sum(len(c) for c in cells) == problem.n  # a partition
        assert min(counts[list(c)].sum() for c in cells) >= k


# ---------------------------------------------------------------- PPAN
def test_ppan_conformance():
    check_mechanism(PPAN)


@pytest.mark.slow
def test_ppan_within_0_05_bits_of_the_optimum_on_the_toy_example():
    pytest.importorskip("cvxpy")
    problem = pb.load_dataset("synthetic", m=4)
    for delta in (1.0, 4.0, 16.0):
        best = M.mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
        res = pb.get_mechanism("ppan").solve(problem, delta, seed=0)
        assert M.expected_distortion(problem, res.mapping) <= delta * (1 + 1e-12)
        gap = M.mutual_information(problem, res.mapping) - best
        assert -1e-6 <= gap <= 0.05, (delta, gap)


def test_ppan_budget_is_repaired_and_seeded():
    problem = pb.load_dataset("random", n=10, n_private=2, seed=2)
    mech = pb.get_mechanism("ppan", iterations=5)  # far too short to meet the budget itself
    res = mech.solve(problem, 0.02, seed=1)
    assert M.expected_distortion(problem, res.mapping) <= 0.02 * (1 + 1e-12)
    assert res.stats["repair_weight"] < 1
    again = pb.get_mechanism("ppan", iterations=5).solve(problem, 0.02, seed=1)
    assert abs(res.mapping - again.mapping).max() == 0
    with pytest.raises(pb.ValidationError, match="records"):
        pb.get_mechanism("ppan", source="records").solve(problem, 0.1)


def test_ppan_learns_from_records():
    problem = coded_problem(0)
    res = pb.get_mechanism("ppan", iterations=200).solve(problem, 0.3, seed=0)
    assert res.stats["source"] == "records"
    assert pb.get_mechanism("ppan", iterations=2, source="joint").solve(problem, 0.3).stats["source"] == "joint"
    assert M.expected_distortion(problem, res.mapping) <= 0.3 * (1 + 1e-12)
    assert M.mutual_information(problem, res.mapping) < problem.prior_mi_bits


# ---------------------------------------------------------------- the catalogue sweep
def test_catalogue_spec_runs_every_mapping_mechanism():
    import tomllib
    from pathlib import Path

    spec = tomllib.loads((Path(__file__).parents[1] / "specs" / "catalogue.toml").read_text("utf-8"))
    listed = {entry.split(":")[0] for entry in spec["mechanisms"]}
    ours = {info.name for info in pb.get_host().plugins()
            if info.kind == "mechanism" and info.distribution == "privbench" and info.cls is not None
            and info.cls.output == "mapping"}
    assert {"privacy_funnel", "ppan", "constant", "sppm", "identity"} <= ours  # the filter works
    assert ours - listed == set(), f"mapping mechanisms missing from specs/catalogue.toml: {ours - listed}"
    assert len(spec["deltas"]) == 3
    assert {d.split(":")[0] for d in spec["datasets"]} == {"synthetic", "census", "politics_tv_surrogate"}
