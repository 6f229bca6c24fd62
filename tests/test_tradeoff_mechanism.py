"""The tradeoff mechanism: the slides' example, C(n, p) counting, v and h, seeds, executors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import privbench as pb
from privbench.plugins.mechanisms._tradeoff import (
    SLIDES_TABLE,
    admissible_partitions,
    count_partitions,
    sample_fraction,
)
from privbench.plugins.mechanisms.tradeoff import parse_combinations

pytest.importorskip("sklearn")

SLIDES_ATTRIBUTES = ["age", "workclass", "marital-status", "race"]
# "Overall methodology, step 1" of the slides, verbatim
SLIDES_PARTITIONS = [{"age", "marital-status"}, {"age", "race"}, {"workclass", "marital-status"},
                     {"workclass", "race"}, {"marital-status", "race"}]


def problem_with_records(frame: pd.DataFrame) -> pb.PrivacyProblem:
    return pb.PrivacyProblem.from_arrays(np.ones((2, 2)), np.ones((2, 2)) - np.eye(2),
                                         records=frame, name="table")


def test_slides_example_lists_exactly_the_admissible_partitions():
    parts = admissible_partitions(SLIDES_ATTRIBUTES, 2, pe=[("age", "workclass")])
    assert [set(p) for p in parts] == SLIDES_PARTITIONS


def test_slides_example_through_the_mechanism():
    res = pb.get_mechanism("tradeoff", table="slides", p=2, pe="age+workclass").solve(
        pb.load_dataset("synthetic", m=2), 0.0, seed=0)
    listed = [frozenset(r["attributes"]) for r in res.selection]
    assert len(listed) == 5 and set(listed) == set(map(frozenset, SLIDES_PARTITIONS))
    assert res.stats["n_candidates"] == 6 and res.stats["n_admissible"] == 5
    scores = [r["score"] for r in res.selection]
    assert scores == sorted(scores, reverse=True)  # accuracy: best first
    assert all(0 <= s <= 1 for s in scores)
    assert [r["rank"] for r in res.selection] == [1, 2, 3, 4, 5]
    assert res.stats["n_rows_used"] == 12


@pytest.mark.parametrize("n,p", [(4, 1), (4, 2), (6, 3), (7, 7), (9, 4)])
def test_counting_without_exceptions_is_n_choose_p(n, p):
    attrs = [f"a{i}" for i in range(n)]
    assert len(admissible_partitions(attrs, p)) == math.comb(n, p) == count_partitions(n, p)


def test_exceptions_remove_the_expected_number():
    attrs = [f"a{i}" for i in range(7)]
    # partitions of size 3 containing both a0 and a1: C(5, 1) = 5
    assert len(admissible_partitions(attrs, 3, pe=[("a0", "a1")])) == math.comb(7, 3) - 5
    # utility exception: must contain a2 and a3 -> C(5, 1)
    ue = admissible_partitions(attrs, 3, ue=[("a2", "a3")])
    assert len(ue) == 5 and all({"a2", "a3"} <= set(p) for p in ue)
    # any-of two UE combinations: inclusion-exclusion 5 + 5 - 1
    assert len(admissible_partitions(attrs, 3, ue=[("a2", "a3"), ("a3", "a4")],
                                     ue_mode="any")) == 9
    # a single-attribute privacy exception bans the attribute outright
    assert all("a6" not in p for p in admissible_partitions(attrs, 2, pe=[("a6",)]))


def test_sample_fraction_honours_the_expense():
    rng = np.random.default_rng(0)
    for count, frac in [(10, 0.5), (10, 0.01), (21, 1 / 3), (7, 1.0), (1000, 0.1)]:
        idx = sample_fraction(count, frac, rng)
        assert len(idx) == max(1, math.ceil(frac * count - 1e-9))
        assert len(set(idx.tolist())) == len(idx) and idx.max() < count


def census_like(rows: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"a{i}": rng.choice(["x", "y", "z"], size=rows) for i in range(5)})
    frame["num"] = rng.normal(size=rows)
    frame["private"] = ((frame["a0"] == "x") ^ (rng.random(rows) < 0.2)).astype(int)
    return frame


def test_v_and_h_are_honoured_and_seeds_reproduce():
    problem = problem_with_records(census_like())
    mech = pb.get_mechanism("tradeoff", p=2, v=0.4, h=0.25, folds=3)
    a = mech.solve(problem, 0.0, seed=11)
    assert a.stats["n_candidates"] == 15 and a.stats["n_admissible"] == 15
    assert a.stats["n_evaluated"] == 6  # ceil(0.4 * 15)
    assert a.stats["n_rows_used"] == 100  # ceil(0.25 * 400)
    assert all(r["rows"] == 100 for r in a.selection)
    b = mech.solve(problem, 0.0, seed=11)
    assert a.stats["ranking"] == b.stats["ranking"]
    c = mech.solve(problem, 0.0, seed=12)
    assert c.stats["ranking"] != a.stats["ranking"]


def test_informative_attribute_ranks_first_and_fpr_is_ascending():
    problem = problem_with_records(census_like(rows=300))
    res = pb.get_mechanism("tradeoff", p=1, folds=3, objective="logistic_regression").solve(
        problem, 0)
    assert res.selection[0]["attributes"] == ["a0"]
    assert res.selection[0]["score"] > 0.7
    fpr = pb.get_mechanism("tradeoff", p=1, metric="fpr", objective="decision_tree").solve(
        problem, 0)
    scores = [r["score"] for r in fpr.selection]
    assert scores == sorted(scores)
    auc = pb.get_mechanism("tradeoff", p=1, metric="auc").solve(problem, 0)
    assert auc.selection[0]["attributes"] == ["a0"] and auc.selection[0]["score"] > 0.7


@pytest.mark.slow
def test_process_executor_gives_the_same_ranking():
    problem = problem_with_records(census_like(rows=200))
    local = pb.get_mechanism("tradeoff", p=2, folds=3).solve(problem, 0.0, seed=1)
    pooled = pb.get_mechanism("tradeoff", p=2, folds=3, executor="process",
                              workers=2).solve(problem, 0.0, seed=1)
    assert local.stats["ranking"] == pooled.stats["ranking"]


def test_parsing_and_errors():
    assert parse_combinations("age+workclass;race+sex", "pe") == [("age", "workclass"),
                                                                   ("race", "sex")]
    assert parse_combinations([["age", "workclass"]], "pe") == [("age", "workclass")]
    assert parse_combinations(["age", "workclass"], "pe") == [("age", "workclass")]
    problem = pb.load_dataset("synthetic", m=2)
    slides = {"table": "slides"}
    with pytest.raises(pb.ValidationError, match="p must be"):
        pb.get_mechanism("tradeoff", p=5, **slides).solve(problem, 0)
    with pytest.raises(pb.ValidationError, match="unknown attribute"):
        pb.get_mechanism("tradeoff", pe="age+salary", **slides).solve(problem, 0)
    with pytest.raises(pb.ValidationError, match="v must be"):
        pb.get_mechanism("tradeoff", v=0, **slides).solve(problem, 0)
    with pytest.raises(pb.ValidationError, match="objective"):
        pb.get_mechanism("tradeoff", objective="svm", **slides).solve(problem, 0)
    with pytest.raises(pb.ValidationError, match="no admissible"):
        pb.get_mechanism("tradeoff", p=1, pe="age;workclass;marital-status;race",
                         **slides).solve(problem, 0)
    with pytest.raises(pb.ValidationError, match="larger than p"):
        pb.get_mechanism("tradeoff", p=1, ue="age+race", **slides).solve(problem, 0)
    skip, reason = pb.get_mechanism("tradeoff").skip(problem)
    assert skip and "records" in reason


def test_slides_table_is_table1():
    assert SLIDES_TABLE.shape == (12, 5)
    assert (SLIDES_TABLE["class"] == ">50K").sum() == 5


@pytest.mark.realdata
def test_census(real_data_dir):
    problem = pb.load_dataset("census", data_dir=str(real_data_dir))
    res = pb.get_mechanism("tradeoff", p=2, h=0.05, pe="age_decade+sex").solve(problem, 0, seed=0)
    assert res.stats["n_candidates"] == 21 and res.stats["n_admissible"] == 20
    assert res.stats["positive_class"] == ">50K"
    assert 0.7 < res.stats["best_score"] <= 1.0
