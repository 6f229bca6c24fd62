"""The csv adapter's malformed lines: each error names the file's own line (the header is
line 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

import privbench as pb
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
