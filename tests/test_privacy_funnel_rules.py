"""privacy_funnel ``rule=paper|ratio`` and the paper's utility constraint, on a hand
example where the two rules choose different merges.

Three public symbols, A binary: p(b) = (.4, .4, .2), p(a=0 | b) = (.9, .5, .1).
d(b1, b2) = 0.1, every other pair 1 (d(b, b) = 0). Δ = 0.2 allows one merge:
  merge {1,2}: adds .4 x .1 = .04 (released as b1 or b2),
  merge {1,3} or {2,3}: adds .2 x 1 = .2 (released as b1 / b2),
and after any merge no other fits (the next adds >= .04 on top of .2, or .2 on top of .04).
The leakage decrease of each merge is computed here from the partitions themselves.
"""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench import metrics as M

P_B = np.array([0.4, 0.4, 0.2])
POST0 = np.array([0.9, 0.5, 0.1])
JOINT = np.vstack([P_B * POST0, P_B * (1 - POST0)])
D = np.array([[0.0, 0.1, 1.0], [0.1, 0.0, 1.0], [1.0, 1.0, 0.0]])


def mi_of_partition(groups: list[list[int]]) -> float:
    """I(A; cluster) in bits, straight from the joint."""
    Q = np.array([JOINT[:, g].sum(axis=1) for g in groups]).T  # (|A|, clusters)
    pa, pc = Q.sum(axis=1, keepdims=True), Q.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(Q > 0, Q * np.log2(Q / (pa * pc)), 0.0)
    return float(t.sum())


def gains() -> dict[tuple[int, int], float]:
    base = mi_of_partition([[0], [1], [2]])
    return {(0, 1): base - mi_of_partition([[0, 1], [2]]),
            (0, 2): base - mi_of_partition([[0, 2], [1]]),
            (1, 2): base - mi_of_partition([[1, 2], [0]])}


def problem() -> pb.PrivacyProblem:
    return pb.PrivacyProblem.from_arrays(joint=JOINT, distortion=D)


def test_the_hand_example_separates_the_rules() -> None:
    g = gains()
    added = {(0, 1): 0.04, (0, 2): 0.2, (1, 2): 0.2}
    best_gain = max(g, key=g.get)
    best_ratio = max(g, key=lambda k: g[k] / added[k])
    assert best_gain == (0, 2) and best_ratio == (0, 1)


def test_rule_ratio_merges_the_best_gain_per_distortion() -> None:
    res = pb.get_mechanism("privacy_funnel", rule="ratio").solve(problem(), 0.2)
    X = res.mapping.toarray()
    assert X[:, 0].tolist() == X[:, 1].tolist() and X[2, 2] == 1  # {b1, b2}, b3 alone
    assert M.mutual_information(problem(), X) == pytest.approx(mi_of_partition([[0, 1], [2]]))
    assert M.expected_distortion(problem(), X) == pytest.approx(0.04)
    default = pb.get_mechanism("privacy_funnel").solve(problem(), 0.2).mapping.toarray()
    assert np.array_equal(default, X)  # ratio stays the default


def test_rule_paper_merges_the_largest_leakage_decrease() -> None:
    res = pb.get_mechanism("privacy_funnel", rule="paper").solve(problem(), 0.2)
    X = res.mapping.toarray()
    assert X[:, 0].tolist() == X[:, 2].tolist() and X[1, 1] == 1  # {b1, b3}, b2 alone
    assert M.mutual_information(problem(), X) == pytest.approx(mi_of_partition([[0, 2], [1]]))
    assert M.expected_distortion(problem(), X) == pytest.approx(0.2)
    # here the paper's rule leaks less than the ratio rule (it spends the whole budget)
    assert mi_of_partition([[0, 2], [1]]) < mi_of_partition([[0, 1], [2]])


def h2(p: float) -> float:
    return float(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)))


def test_the_papers_utility_constraint() -> None:
    # H(Y) after merging {1,3} (masses .6, .4) is h(.4) = 0.971 bits; {1,2} gives h(.2)
    h13, h12 = h2(0.4), h2(0.2)
    loose = pb.get_mechanism("privacy_funnel", rule="paper", min_utility_bits=0.95)
    res = loose.solve(problem(), 0.2)
    assert res.stats["utility_bits"] == pytest.approx(h13) and h13 >= 0.95
    tight = pb.get_mechanism("privacy_funnel", rule="paper", min_utility_bits=1.0)
    res = tight.solve(problem(), 0.2)  # every merge would take H(Y) below 1 bit
    assert np.array_equal(res.mapping.toarray(), np.eye(3))
    assert res.stats["utility_bits"] == pytest.approx(
        float(-(P_B * np.log2(P_B)).sum()))
    # the ratio rule's own choice {b1, b2} leaves H(Y) = h(.2) < .95: it takes {b1, b3}
    ratio = pb.get_mechanism("privacy_funnel", rule="ratio", min_utility_bits=0.95)
    X = ratio.solve(problem(), 0.2).mapping.toarray()
    assert h12 < 0.95 and X[:, 0].tolist() == X[:, 2].tolist() and X[1, 1] == 1
    assert np.array_equal(pb.get_mechanism("privacy_funnel", rule="ratio", min_utility_bits=1.0)
                          .solve(problem(), 0.2).mapping.toarray(), np.eye(3))


@pytest.mark.parametrize("params, message", [
    ({"rule": "greedy"}, "rule must be one of ratio, paper"),
    ({"min_utility_bits": -1}, "min_utility_bits"),
])
def test_bad_parameters(params: dict, message: str) -> None:
    with pytest.raises(pb.ValidationError, match=message):
        pb.get_mechanism("privacy_funnel", **params)


def test_both_rules_keep_the_budget_on_a_random_problem() -> None:
    prob = pb.load_dataset("random", n=30, n_private=3, seed=5, distortion="hamming", bits=5)
    for rule in ("ratio", "paper"):
        for candidates in (4, 1000):
            mech = pb.get_mechanism("privacy_funnel", rule=rule, candidates=candidates)
            res = mech.solve(prob, 0.5)
            assert M.expected_distortion(prob, res.mapping) <= 0.5 + 1e-12
            assert M.mutual_information(prob, res.mapping) <= prob.prior_mi_bits + 1e-12
