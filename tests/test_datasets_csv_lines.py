"""The csv adapter's malformed lines: each error names the file's own line (the header is
line 1), and a line with too few fields is refused as one with too many is."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.datasets.csv_table import CSVTable

NOTE = "(line numbers count the header as line 1)"


def _table(tmp_path: Path, text: str) -> str:
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())
    return str(path)


@pytest.mark.parametrize(("text", "message"), [
    # the auditor's file: the unclosed quote is on line 2, not "row 1"
    ('age,income\n1,"x,hi\n', "EOF inside string starting at line 2"),
    ("age,income\n" + "30,low\n" * 49 + '1,"x,hi\n', "EOF inside string starting at line 51"),
    ('age,income\r\n30,low\r\n1,"x,hi\r\n', "EOF inside string starting at line 3"),
    # pandas counts no line inside a quoted field: two of them put it two lines short
    ('age,income\n30,"lo\nw\nest"\n40,high\n1,"x,hi\n', "EOF inside string starting at line 6"),
    ('"age\nin years",income\n30,low\n1,"x\n', "EOF inside string starting at line 4"),
    ("age,income\n\n\n30,low\n1,\"x,hi\n", "EOF inside string starting at line 5"),
    ("age,income\n30,low\n40,high,extra\n", "Expected 2 fields in line 3, saw 3"),
    ('age,income\n30,"lo\nw"\n\n40,high,extra\n', "Expected 2 fields in line 5, saw 3"),
])
def test_a_parse_error_names_the_files_line(tmp_path, text, message) -> None:
    path = _table(tmp_path, text)
    with pytest.raises(pb.DataError) as info:
        CSVTable(path=path, private="income").load()
    assert str(info.value) == f"csv: {path}: {message} {NOTE}"


SHORT = "name,age,city,income\na,30,x,lo\nb,40,y,hi\nn,33\nc,50,z,lo\nd,20,x,hi\n"


def test_a_line_with_too_few_fields_is_refused_on_the_command_line(tmp_path, capsys) -> None:
    path = _table(tmp_path, SHORT)
    code = main(["run", "-m", "expmec", "-d", f"csv:path={path},private=income", "--delta",
                 "0.5", "--no-store"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"csv: {path}: Expected 4 fields in line 4, saw 2 {NOTE}" in err


@pytest.mark.parametrize(("text", "message"), [
    ("a,b,c\n1,2,3\nn\n", "Expected 3 fields in line 3, saw 1"),
    ("a,b,c\n1,2,3\n4,5\n", "Expected 3 fields in line 3, saw 2"),
    ("a,b,c\n1,2,3\n4,5,\n6,7\n", "Expected 3 fields in line 4, saw 2"),  # 4,5, has three
    ('a,b,c\n1,"x\ny",3\n\n4,5\n', "Expected 3 fields in line 5, saw 2"),
    ("a,b,c\n1," + '"' + "x" * 200_000 + '"' + ",3\n4,5\n", "Expected 3 fields in line 3, saw 2"),
    ("a\tb\tc\n1\t2\t3\n4\t5\n", "Expected 3 fields in line 3, saw 2"),
])
def test_a_short_line_names_line_and_counts(tmp_path, text, message) -> None:
    path = _table(tmp_path, text)
    sep = "tab" if "\t" in text else ","
    limit = csv.field_size_limit()
    with pytest.raises(pb.DataError) as info:
        CSVTable(path=path, private="c", sep=sep).load()
    assert str(info.value) == f"csv: {path}: {message} {NOTE}"
    assert csv.field_size_limit() == limit  # raised for the scan only


def test_empty_and_marked_values_still_follow_the_missing_rule(tmp_path) -> None:
    """Every line has its four fields: empty, NA and ? are missing values (dropped), and
    blank lines are skipped, as before."""
    text = ("name,age,city,income\na,30,x,lo\nb,40,y,hi\nn,33,,\nm,NA,?,lo\n\n   \n"
            "c,50,z,lo\nd,20,x,hi\n")
    problem = CSVTable(path=_table(tmp_path, text), private="income").load()
    assert problem.meta["rows_dropped"] == 2
    assert len(problem.records) == 4
    assert CSVTable(path=_table(tmp_path, text), private="income", missing="keep").load() \
        .meta["rows_dropped"] == 1  # n,33,, has no income: dropped whatever `missing` says
    with pytest.raises(pb.DataError, match=r"line 4: missing value in column 'income'"):
        CSVTable(path=_table(tmp_path, text), private="income", missing="error").load()
