"""census ``private=``/``public=``/``bins=`` and movielens ``private=gender|age|occupation``:
other private attributes from the same files, the paper's problems unchanged bit for bit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.datasets import census
from privbench.datasets import movielens as ml

from .test_datasets_census import write_adult
from .test_datasets_movielens import write_1m, write_100k


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")


def problem_hash(problem: pb.PrivacyProblem) -> str:
    """The joint, the dense distortion, the symbols, the labels and the name, hashed."""
    d = hashlib.sha256()
    d.update(np.ascontiguousarray(np.asarray(problem.joint, dtype=np.float64)).tobytes())
    d.update(np.ascontiguousarray(problem.distortion.to_dense(), dtype=np.float64).tobytes())
    d.update(json.dumps([list(map(str, s)) for s in problem.symbols]).encode())
    d.update(json.dumps([str(x) for x in problem.private_labels] + [problem.name]).encode())
    return d.hexdigest()[:16]


# hashes computed on main at 1900e28, before private=/public= existed (the same function)
PAPER = {("census", ()): "37dd044df03ca025", ("census", (("top_k", 20),)): "c3cd4af6d91ed204",
         ("movielens", ()): "b254804a362f0550"}


@pytest.mark.realdata
@pytest.mark.parametrize("name, params", list(PAPER))
def test_the_papers_problems_are_unchanged_bit_for_bit(real_data_dir: Path, name: str,
                                                       params: tuple) -> None:
    problem = pb.load_dataset(name, data_dir=str(real_data_dir), **dict(params))
    assert problem_hash(problem) == PAPER[(name, params)]
    # naming the defaults explicitly builds the same problem
    explicit = {"census": {"private": "income", "public": list(census.ATTRIBUTES)},
                "movielens": {"private": "gender"}}[name]
    again = pb.load_dataset(name, data_dir=str(real_data_dir), **dict(params), **explicit)
    assert np.array_equal(again.joint, problem.joint)


def test_census_private_marital_status_counts_by_hand(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    problem = census.Census(private="marital-status", public=["sex", "race"], top_k="all",
                            data_dir=str(folder)).load()
    assert problem.private_labels == ("Divorced", "Married-civ-spouse", "Never-married")
    assert tuple(problem.attributes) == ("sex", "race")
    # 11 rows; income is not used, so no row is dropped ('?' are in unused columns)
    assert problem.meta["n_users"] == 11
    P = np.rint(problem.joint * 11)
    col = {s: j for j, s in enumerate(problem.symbols)}
    # (Male, White): Divorced 2 (rows 3 and test 2), Married-civ 3, Never-married 2
    assert P[:, col[("Male", "White")]].tolist() == [2, 3, 2]
    assert P[:, col[("Female", "White")]].tolist() == [0, 0, 1]
    assert problem.name == "census[top_k=all,private=marital-status,public=[sex,race]]"
    assert problem.meta["private"] == "marital-status"


def test_census_income_can_be_public_and_default_public_drops_the_private(tmp_path) -> None:
    folder = write_adult(tmp_path / "d")
    p = census.Census(private="race", top_k="all", data_dir=str(folder)).load()
    assert "race" not in p.attributes and len(p.attributes) == 6
    q = census.Census(private="sex", public="income,race", top_k="all", data_dir=str(folder)).load()
    assert tuple(q.attributes) == ("income", "race")
    # a missing private value drops the row: occupation '?' on one training row
    r = census.Census(private="occupation", public=["sex"], top_k="all",
                      data_dir=str(folder)).load()
    assert r.meta["n_users"] == 10 and r.meta["rows_missing_private"] == 1


def test_census_bins_bucket_a_numeric_attribute(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    p = census.Census(private="sex", public=["age", "race"], bins="age:2", top_k="all",
                      data_dir=str(folder)).load()
    ages = sorted({s[0] for s in p.symbols})
    assert len(ages) == 2 and all(a.startswith("(") for a in ages)  # two age intervals
    unbinned = census.Census(private="sex", public=["age"], top_k="all",
                             data_dir=str(folder)).load()
    assert unbinned.n == 10  # 11 users, ages 38 twice


@pytest.mark.parametrize("params, message", [
    ({"private": "salary"}, "unknown attribute.*'salary'.*marital-status"),
    ({"private": "sex", "public": ["sex", "race"]}, "cannot be both private and public"),
    ({"private": "sex", "public": ["race", "race"]}, "public names race twice"),
    ({"private": "sex", "public": ["colour"]}, "unknown attribute.*'colour'.*in public"),
    ({"private": 3}, "private must be one attribute name"),
])
def test_census_bad_choices_are_refused_with_the_valid_names(params, message) -> None:
    with pytest.raises(pb.ValidationError, match=message):
        pb.get_dataset("census", **params)


def test_census_bins_on_a_text_attribute_is_refused(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    with pytest.raises(pb.ValidationError, match="bins given for 'race', which is not numeric"):
        census.Census(private="sex", public=["race"], bins="race:2",
                      data_dir=str(folder)).load()


def test_movielens_age_groups_on_100k_ages() -> None:
    ages = np.array([1, 17, 18, 24, 25, 34, 35, 44, 45, 49, 50, 55, 56, 73])
    assert [ml.AGE_GROUPS[g] for g in ml.age_group(ages)] == [
        "Under 18", "Under 18", "18-24", "18-24", "25-34", "25-34", "35-44", "35-44",
        "45-49", "45-49", "50-55", "50-55", "56+", "56+"]
    # 1M stores the group's lower bound: the same groups
    assert ml.age_group(np.array([1, 18, 25, 35, 45, 50, 56])).tolist() == list(range(7))


def test_movielens_private_age_and_occupation(tmp_path: Path) -> None:
    write_100k(tmp_path / "ml-100k")  # ages 24, 53, 23, 33; occupations technician, other, writer, other
    age = ml.MovieLens(top_genres=2, private="age", data_dir=str(tmp_path)).load()
    assert age.private_labels == ml.AGE_GROUPS
    assert np.rint(age.joint.sum(axis=1) * 4).tolist() == [0, 2, 1, 0, 0, 1, 0]
    assert age.name.endswith(",private=age]")
    occ = ml.MovieLens(top_genres=2, private="occupation", data_dir=str(tmp_path)).load()
    assert occ.private_labels == ("other", "technician", "writer")
    assert np.rint(occ.joint.sum(axis=1) * 4).tolist() == [2, 1, 1]
    with pytest.raises(pb.ValidationError, match="private must be one of gender, age, occupation"):
        pb.get_dataset("movielens", private="zip")


def test_movielens_1m_occupation_codes_are_named(tmp_path: Path) -> None:
    write_1m(tmp_path / "ml-1m")
    occ = ml.MovieLens(variant="1m", top_genres=2, private="occupation",
                       data_dir=str(tmp_path)).load()
    assert set(occ.private_labels) <= set(ml.OCCUPATIONS_1M)


@pytest.mark.realdata
def test_real_many_valued_problems(real_data_dir: Path) -> None:
    marital = pb.load_dataset("census", private="marital-status", data_dir=str(real_data_dir))
    assert marital.joint.shape == (7, 300)
    age = pb.load_dataset("movielens", private="age", data_dir=str(real_data_dir))
    assert age.joint.shape == (7, 489) and age.meta["n_users"] == 943
    # 100K's ages in the 1M groups: 18-24 and 25-34 are the big ones
    assert np.argmax(age.joint.sum(axis=1)) == 2
    occ = pb.load_dataset("movielens", private="occupation", data_dir=str(real_data_dir))
    assert occ.joint.shape[0] == 21
