"""csv adapter: bring-your-own table, bucketing, distortions and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main as cli_main
from privbench.datasets.csv_table import CSVTable

TABLE = """age,education,hours,income
23,HS,40,low
45,BA,50,high
31,BA,40,low
52,MS,60,high
23,HS,40,low
67,?,10,low
41,BA,45,high
38,HS,40,low
29,MS,38,low
33,BA,40,high
"""


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(TABLE)
    return path


def test_hamming_over_all_other_columns(table: Path) -> None:
    problem = CSVTable(path=str(table), private="income").load()
    assert problem.attributes == ("age", "education", "hours")
    assert problem.private_labels == ("high", "low")
    assert problem.meta["rows_dropped"] == 1  # the '?' education
    assert len(problem.records) == 9
    assert problem.n == 8  # (23, HS, 40) appears twice
    assert problem.symbols[0] == ("23", "HS", "40")  # categories as written (Hamming)
    assert problem.joint[:, 0] * 9 == pytest.approx([0, 2])
    assert problem.distortion.name == "hamming"
    D = problem.distortion.to_dense()
    assert np.all(np.diag(D) == 0) and D.max() == 3
    assert problem.features.shape[0] == 9 and (problem.features.sum(axis=1) == 3).all()
    assert problem.name == "csv[people.csv]"


def test_bucketing_and_numeric_distortions(table: Path) -> None:
    binned = CSVTable(path=str(table), private="income", public="age;education",
                      bins="age:2").load()
    ages = {s[0] for s in binned.symbols}
    assert len(ages) == 2  # two quantile buckets
    l2 = CSVTable(path=str(table), private="income", public=["age", "hours"], bins=2,
                  bin_strategy="uniform", distortion="l2").load()
    points = l2.distortion.points
    assert points.shape == (l2.n, 2)
    assert set(np.round(points[:, 0], 3)) == {33.978, 56.0}  # bucket midpoints of pd.cut
    raw = CSVTable(path=str(table), private="income", public="hours", distortion="sq_l2").load()
    # only the used columns count for missing values: the row with "?" education stays
    assert sorted(raw.distortion.points[:, 0]) == [10, 38, 40, 45, 50, 60]
    j = list(raw.distortion.points[:, 0]).index(40)
    k = list(raw.distortion.points[:, 0]).index(50)
    assert raw.distortion.to_dense()[j, k] == 100


def test_missing_keep_and_top_k(table: Path) -> None:
    kept = CSVTable(path=str(table), private="income", public="education",
                    missing="keep").load()
    assert ("<missing>",) in kept.symbols and len(kept.records) == 10
    top = CSVTable(path=str(table), private="income", top_k=2).load()
    assert top.n == 2 and (top.records["symbol"] == -1).sum() == 9 - 3


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"private": "salary"}, pb.ValidationError, r"unknown private column 'salary'.*columns: age"),
    ({"private": "income", "public": "age;weight"}, pb.ValidationError,
     r"unknown public column\(s\) weight"),
    ({"private": "income", "public": "income"}, pb.ValidationError,
     "both private and public"),
    ({"private": "income", "public": "education", "distortion": "l1"}, pb.ValidationError,
     r"distortion=l1 needs numeric public columns, but 'education' has"),
    ({"private": "income", "bins": "education:3"}, pb.ValidationError,
     "bins given for column 'education', which is not numeric"),
    ({"private": "income", "bins": "age:1"}, pb.ValidationError, "must be an integer >= 2"),
    ({"private": "income", "bins": "age"}, pb.ValidationError, "must read column:number"),
    ({"private": "income", "missing": "error"}, pb.DataError,
     r"people.csv, line 7: missing value in column 'education'"),
    ({"private": "income", "distortion": "manhattan"}, pb.ValidationError,
     "distortion must be one of hamming, l1, l2, sq_l2"),
    ({}, pb.ValidationError, "private=COLUMN is required"),
])
def test_bad_parameters(table: Path, params: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        CSVTable(path=str(table), **params).load()


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(pb.ValidationError, match="path=FILE is required"):
        CSVTable(private="x").load()
    with pytest.raises(pb.DataError, match="does not exist"):
        CSVTable(path=str(tmp_path / "none.csv"), private="x").load()
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(pb.DataError, match="is empty"):
        CSVTable(path=str(empty), private="x").load()
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(pb.DataError, match=r"ragged.csv: Expected 2 fields in line 3, saw 3"):
        CSVTable(path=str(ragged), private="b").load()
    one = tmp_path / "one.csv"
    one.write_text("a,b\n1,x\n2,x\n")
    with pytest.raises(pb.DataError, match="private column 'b' takes one value only"):
        CSVTable(path=str(one), private="b").load()
    holes = tmp_path / "holes.csv"
    holes.write_text("a,b\n?,x\nNA,y\n")
    with pytest.raises(pb.DataError, match="no rows left .* the public alphabet is empty"):
        CSVTable(path=str(holes), private="b").load()
    latin = tmp_path / "latin.csv"
    latin.write_bytes("a,b\ncafé,x\nthé,y\n".encode("latin-1"))
    with pytest.raises(pb.DataError, match="not valid utf-8 text"):
        CSVTable(path=str(latin), private="b").load()
    assert CSVTable(path=str(latin), private="b", encoding="latin-1").load().n == 2


def test_cli_run_on_a_csv(table: Path, capsys, host) -> None:
    code = cli_main(["run", "-m", "expmec", "-d",
                     f"csv:path={table},private=income,public=[age;education],bins=age:3",
                     "--delta", "0.2", "--json", "--no-store"])
    assert code == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["status"] == "ok" and record["n"] >= 2
