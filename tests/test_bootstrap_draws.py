"""Paired draws are keyed by the data's hash: runs on the same users share a key (and are
compared resample by resample); runs on different users never do, even when their cell
counts coincide."""

from __future__ import annotations

import numpy as np
import pandas as pd

import privbench as pb
from privbench.plugins.metrics import bootstrap as bs
from privbench.results.significance import paired_difference


def _problem(private: np.ndarray, symbol: np.ndarray, n_private: int, n: int,
             **extra: np.ndarray) -> pb.PrivacyProblem:
    joint = np.zeros((n_private, n))
    inside = symbol >= 0  # -1: a user outside the alphabet
    np.add.at(joint, (private[inside], symbol[inside]), 1.0)
    records = pd.DataFrame({"private": private, "symbol": symbol, **extra})
    return pb.PrivacyProblem.from_arrays(joint, 1.0 - np.eye(n), records=records)


def _boot(problem: pb.PrivacyProblem, seed: int = 0) -> dict:
    mapping = np.full((problem.n, problem.n), 1.0 / problem.n)
    mapping[:, 0] = np.eye(problem.n)[:, 0]  # leaks a little, so the values vary
    return bs.BootstrapIntervals(seed=seed).compute(
        problem, pb.MechanismResult("mapping", mapping=mapping), delta=0.0)


def test_same_users_share_a_key_and_pair() -> None:
    rng = np.random.default_rng(5)
    private, symbol = rng.integers(0, 2, 400), rng.integers(0, 4, 400)
    a, b = _boot(_problem(private, symbol, 2, 4)), _boot(_problem(private, symbol, 2, 4))
    assert a["bootstrap"]["key"] == b["bootstrap"]["key"]
    assert paired_difference(a, b, "mi_bits") is not None
    assert _boot(_problem(private, symbol, 2, 4), seed=1)["bootstrap"]["key"] != a["bootstrap"]["key"]


def test_other_users_never_share_a_key() -> None:
    """Two samples of users (another data seed) give other draws: no pairing."""
    rng = np.random.default_rng(6)
    first = _problem(rng.integers(0, 2, 400), rng.integers(0, 4, 400), 2, 4)
    second = _problem(rng.integers(0, 2, 400), rng.integers(0, 4, 400), 2, 4)
    a, b = _boot(first), _boot(second)
    assert a["bootstrap"]["key"] != b["bootstrap"]["key"]
    assert paired_difference(a, b, "mi_bits") is None


def test_equal_cell_counts_of_other_data_do_not_pair() -> None:
    """|A| = 2 over 5 symbols and |A| = 3 over 3 symbols both have 12 cells (one outside
    column each); with the same counts in the same order, a key of the counts alone would
    pair them, and so would one of the (private, symbol) codes of users who differ in
    what else was recorded about them."""
    counts = np.arange(1, 13)
    wide = np.repeat(np.arange(12), counts)
    p1, s1 = wide // 6, wide % 6
    p2, s2 = wide // 4, wide % 4
    # the last column of each is 'outside the alphabet'
    one = _problem(p1, np.where(s1 < 5, s1, -1), 2, 5)
    two = _problem(p2, np.where(s2 < 3, s2, -1), 3, 3)
    assert np.array_equal(bs.user_cells(one), bs.user_cells(two))
    assert bs.data_hash(one) != bs.data_hash(two)
    # the same coded users with another recorded attribute are other people
    rng = np.random.default_rng(7)
    private, symbol = rng.integers(0, 2, 300), rng.integers(0, 4, 300)
    young = _problem(private, symbol, 2, 4, age=np.full(300, 20))
    old = _problem(private, symbol, 2, 4, age=np.full(300, 70))
    assert _boot(young)["bootstrap"]["key"] != _boot(old)["bootstrap"]["key"]
