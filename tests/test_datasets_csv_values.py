"""The csv adapter reads categories as written and never echoes a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main
from privbench.datasets.csv_table import CSVTable


def _table(tmp_path: Path, text: str) -> str:
    path = tmp_path / "t.csv"
    path.write_text(text)
    return str(path)


def test_zip_codes_are_categories_as_written_under_hamming(tmp_path) -> None:
    path = _table(tmp_path, "zip,income\n02134,high\n2134,low\n02134,high\n2134,low\n")
    problem = CSVTable(path=path, private="income").load()
    assert problem.n == 2 and sorted(problem.symbols) == [("02134",), ("2134",)]
    assert problem.prior_mi_bits == pytest.approx(1.0)  # zip decides income


def test_numbers_where_a_numeric_distortion_asks(tmp_path) -> None:
    path = _table(tmp_path, "age,income\n02,high\n2,low\n10,high\n")
    problem = CSVTable(path=path, private="income", distortion="l1").load()
    assert problem.n == 2  # 02 and 2 are one number under l1
    assert problem.distortion.to_dense().max() == pytest.approx(8.0)


def test_missing_kept_is_its_own_category_not_infs(tmp_path) -> None:
    path = _table(tmp_path, "x,income\ninf,high\n,low\ninf,high\n,low\n1,low\n")
    problem = CSVTable(path=path, private="income", missing="keep").load()
    assert problem.n == 3
    assert sorted(problem.symbols, key=str) == sorted([("1",), ("inf",), ("<missing>",)], key=str)
    assert problem.prior_mi_bits > 0.9  # inf -> high, missing -> low: kept apart


def test_a_duplicated_header_is_refused_naming_it(tmp_path) -> None:
    path = _table(tmp_path, "p,p,income\n1,2,high\n3,4,low\n")
    with pytest.raises(pb.DataError, match="duplicate column name.*'p'"):
        CSVTable(path=path, private="income").load()


def test_a_million_distinct_values_do_not_build_a_dense_one_hot(tmp_path, monkeypatch) -> None:
    from privbench.datasets import csv_table

    monkeypatch.setattr(csv_table, "MAX_ONE_HOT_CELLS", 100)
    rows = "\n".join(f"id{i},{'high' if i % 2 else 'low'}" for i in range(200))
    path = _table(tmp_path, "user,income\n" + rows + "\n")
    problem = CSVTable(path=path, private="income", top_k=10).load()
    assert problem.n == 10 and problem.features is None  # 200 x 200 cells > the limit
    assert np.isclose(problem.joint.sum(), 1.0)


def test_an_environment_file_is_never_echoed(tmp_path, capsys) -> None:
    environ = tmp_path / "environ"  # what /proc/self/environ holds: NUL-separated pairs
    environ.write_bytes(b"HOME=/root\0API_TOKEN=s3cr3t-value\0PATH=/bin\0")
    for spec in (f"csv:path={environ},private=x", "csv:path=/proc/self/environ,private=x"):
        code = main(["run", "-m", "identity", "-d", spec, "--delta", "1", "--no-store"])
        err = capsys.readouterr().err
        assert code == 2 and "environ" in err and "not a text table" in err
        assert "s3cr3t-value" not in err and "HOME=" not in err and "PATH" not in err


def test_a_header_that_is_no_header_is_not_echoed(tmp_path) -> None:
    path = _table(tmp_path, "x" * 500 + "secret,b\n1,2\n")
    with pytest.raises(pb.ValidationError) as info:
        CSVTable(path=path, private="income").load()
    assert "secret" not in str(info.value)
    assert "does not look like a header" in str(info.value)


def test_an_unknown_column_lists_the_header_names(tmp_path) -> None:
    path = _table(tmp_path, "a,b\n1,2\n3,4\n")
    with pytest.raises(pb.ValidationError, match="columns: a, b"):
        CSVTable(path=path, private="x").load()


SECRET = "SECRET-7f3a9c"


@pytest.mark.parametrize(("text", "params", "message"), [
    ("age,income\n,high\n30,high\nSECRET-7f3a9c,low\n", {"distortion": "l1"},
     "'age' has text (first on line 4)"),  # a dropped row before it: still the file's line
    ("age,income\n30,high\nSECRET-7f3a9c,low\n", {"bins": "age:2"},
     "which is not numeric (first on line 3)"),
    ("age,income\n30,SECRET-7f3a9c\n40,SECRET-7f3a9c\n", {}, "takes one value only"),
])
def test_csv_errors_name_the_line_never_the_cell(tmp_path, capsys, text, params, message) -> None:
    path = _table(tmp_path, text)
    extra = "".join(f",{k}={v}" for k, v in params.items())
    code = main(["run", "-m", "identity", "-d", f"csv:path={path},private=income{extra}",
                 "--delta", "1", "--no-store"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and str(path) in err
    assert SECRET not in err and "Traceback" not in err


@pytest.mark.parametrize(("line", "message"), [
    ("1|SECRET-7f3a9c|M", "line 2: age must be an integer (field 2)"),
    ("1|24|SECRET-7f3a9c", "line 2: gender must be one of F, M (field 3)"),
])
def test_table_errors_name_the_field_never_the_value(line, message) -> None:
    """The reader behind MovieLens and politics_tv."""
    from privbench.datasets._common import read_table

    with pytest.raises(pb.DataError) as info:
        read_table(f"0|30|F\n{line}\n", "u.user", "|", ("user_id", "age", "gender"),
                   ints=("user_id", "age"), choices={"gender": ("F", "M")})
    assert message in str(info.value) and SECRET not in str(info.value)


@pytest.mark.parametrize(("field", "message"), [
    (0, "line 1: column 'age' must be an integer (field 1)"),
    (14, "line 1: income must be <=50K or >50K (a trailing dot is allowed; field 15)"),
])
def test_census_errors_name_the_field_never_the_value(field, message) -> None:
    from privbench.datasets import census

    fields = ["39", "State-gov", "77516", "Bachelors", "13", "Never-married", "Adm-clerical",
              "Not-in-family", "White", "Male", "2174", "0", "40", "United-States", "<=50K"]
    fields[field] = SECRET
    with pytest.raises(pb.DataError) as info:
        census.parse_adult(", ".join(fields) + "\n", "adult.data")
    assert message in str(info.value) and SECRET not in str(info.value)


def test_movielens_errors_never_echo_an_id_or_a_rating(tmp_path) -> None:
    from privbench.datasets import movielens

    folder = tmp_path / "ml-100k"
    folder.mkdir()
    (folder / "u.genre").write_text("unknown|0\nAction|1\n")
    (folder / "u.item").write_text("1|Heat (1995)|01-Jan-1995||http://x|0|1\n"
                                   "2|Heat (1996)|01-Jan-1996||http://x|1|0\n")
    (folder / "u.user").write_text("1|24|M|writer|85711\n2|53|F|other|94043\n")
    (folder / "u.data").write_text("1\t1\t5\t874965758\n987654321\t2\t4\t874965759\n")
    with pytest.raises(pb.DataError) as info:
        movielens.MovieLens(top_genres=2, data_dir=str(tmp_path)).load()
    assert "u.data, line 2: its user_id is not in" in str(info.value)
    assert "987654321" not in str(info.value)
    (folder / "u.data").write_text("1\t1\t5\t874965758\n2\t2\t987654321\t874965759\n")
    with pytest.raises(pb.DataError) as info:
        movielens.MovieLens(top_genres=2, data_dir=str(tmp_path)).load()
    assert "u.data, line 2: rating must be 1..5" in str(info.value)
    assert "987654321" not in str(info.value)
