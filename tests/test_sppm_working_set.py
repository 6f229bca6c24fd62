"""SPPM's working-set bursts (``_sppm/working_set.py``): steps of the full problem, an honest
certificate, and a restricted pricing equal to the full one on the inputs it prices."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import mutual_information
from privbench.plugins.mechanisms._sppm import line_pricing, working_set
from privbench.plugins.mechanisms._sppm.leakage import leakage_nats, output_joint

#: the optimum's solver tolerance (bits)
OPT_TOL = 1e-6


@pytest.mark.parametrize("seed", range(4))
def test_pricing_a_subset_of_inputs_equals_the_full_pricing_there(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, n_a = int(rng.integers(30, 200)), int(rng.integers(2, 4))
    pricer = line_pricing.LinePricer(rng.normal(size=n), "sq_l2", block=int(rng.integers(1, 9)))
    L, P = rng.normal(size=(n_a, n)), rng.random((n_a, n))
    empty = rng.random(n) < 0.1
    p_b = P.sum(axis=0)
    full_i, full_v = pricer.price(L, P, p_b, -0.7, empty)
    subset = np.sort(rng.choice(n, size=n // 3, replace=False))
    sub_i, sub_v = pricer.for_inputs(subset).price(L, P[:, subset], p_b[subset], -0.7, empty)
    np.testing.assert_array_equal(sub_v, full_v[subset])
    np.testing.assert_array_equal(sub_i, full_i[subset])


def _line_problem(n: int, seed: int) -> pb.PrivacyProblem:
    return pb.load_dataset("random", n=n, n_private=3, seed=seed, distortion="sq_l2")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bursts_certify_a_gap_the_optimum_confirms(seed: int) -> None:
    """With bursts of 5 steps on the working inputs, the certified gap still bounds the
    distance to an independent optimum (cvxpy), and the lower bound stays below it."""
    problem = _line_problem(24, seed)
    delta = 0.2 * float((problem.distortion.to_dense() @ problem.p_b).min())  # < perfect privacy's
    res = pb.get_mechanism("sppm", tol=1e-4, restricted_steps=5, prune_after=0,
                           mode="frank-wolfe").solve(problem, delta)
    assert res.stats["restricted_iterations"] > 0  # bursts ran
    mi = mutual_information(problem, res.mapping)
    assert res.stats["objective_bits"] == pytest.approx(mi, abs=1e-9)
    opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    assert res.stats["gap_bits"] >= mi - opt - OPT_TOL
    assert res.stats["lower_bits"] <= opt + OPT_TOL
    assert mi - opt <= 1e-4 + OPT_TOL


def test_bursts_and_full_iterations_reach_the_same_optimum() -> None:
    problem = pb.load_dataset("synthetic", m=8)
    delta = 1.0
    got = {rs: pb.get_mechanism("sppm", tol=1e-4, restricted_steps=rs).solve(problem, delta)
           for rs in (0, 20)}
    assert got[20].stats["restricted_iterations"] > 0
    assert got[0].stats["restricted_iterations"] == 0
    mi = {rs: mutual_information(problem, r.mapping) for rs, r in got.items()}
    lower = max(r.stats["lower_bits"] for r in got.values())
    for rs, r in got.items():  # each within its certified gap of the other's lower bound
        assert mi[rs] - lower <= 1e-4
        assert r.stats["converged"]


def test_a_burst_moves_only_working_inputs_within_the_budget(monkeypatch) -> None:
    """Frozen inputs (one pair in V) keep their column; every column stays on the simplex,
    the budget holds and I(A; B̂) does not increase over a burst."""
    problem = pb.load_dataset("synthetic", m=7)
    delta, seen = 0.5, []
    original = working_set.burst

    def checked(setup, state, trace, max_steps, it):
        V = state.V
        counts = np.bincount(V.cols, minlength=V.n)
        frozen_pairs = np.flatnonzero(counts[V.cols] == 1)
        before = state.x[frozen_pairs].copy()
        f0 = leakage_nats(output_joint(problem.joint, V.rows, V.cols, state.x, V.n), problem.p_a)
        taken = original(setup, state, trace, max_steps, it)
        np.testing.assert_array_equal(state.x[frozen_pairs], before)
        sums = np.bincount(V.cols, weights=state.x, minlength=V.n)
        np.testing.assert_allclose(sums, 1.0, atol=1e-12)
        assert np.all(state.x >= 0)
        assert float(V.a @ state.x) <= delta * (1 + 1e-12)
        f1 = leakage_nats(output_joint(problem.joint, V.rows, V.cols, state.x, V.n), problem.p_a)
        assert f1 <= f0 + 1e-12
        seen.append(taken)
        return taken

    monkeypatch.setattr(working_set, "burst", checked)
    res = pb.get_mechanism("sppm", tol=1e-4, restricted_steps=10).solve(problem, delta)
    assert sum(seen) == res.stats["restricted_iterations"] > 0
    assert res.stats["converged"]


def test_restricted_steps_is_checked() -> None:
    with pytest.raises(pb.ValidationError, match="restricted_steps must be an integer >= 0"):
        pb.get_mechanism("sppm", restricted_steps=-1)


def test_pair_index_finds_what_a_dict_finds() -> None:
    from privbench.plugins.mechanisms._sppm.pair_index import PairIndex

    rng = np.random.default_rng(3)
    n = 50
    pairs = np.unique(rng.integers(0, n, size=(400, 2)), axis=0)
    rng.shuffle(pairs)
    index = PairIndex(n, pairs[:100, 0], pairs[:100, 1])
    for start in range(100, pairs.shape[0], 70):  # appended in batches, as V grows
        index.add(pairs[start:start + 70, 0], pairs[start:start + 70, 1], start)
    where = {(int(i), int(j)): k for k, (i, j) in enumerate(pairs)}
    probe = rng.integers(0, n, size=(300, 2))
    want = [where.get((int(i), int(j)), -1) for i, j in probe]
    np.testing.assert_array_equal(index.find(probe[:, 0], probe[:, 1]), want)
    assert len(index) == pairs.shape[0]
