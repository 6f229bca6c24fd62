"""Bad requests are exit 2 at plan time, naming the culprit; nothing computed."""

from __future__ import annotations

import sqlite3
import zipfile

import pytest

from privbench.cli import main

RUN = ["run", "-m", "identity", "--delta", "1"]


@pytest.mark.parametrize(("args", "message"), [
    (["-d", "synthetic:m=2", "--seed", "12345678901234567890123"], "seed must be an integer in"),
    (["-d", "synthetic:m=2", "--seed", "-1"], "seed must be an integer in"),
    (["-d", "random:n=1000000000"], "random: n must be an integer in [1, 20,000]"),
    (["-d", "random:seed=-1"], "random: seed must be an integer in"),
    (["-d", "synthetic:m=2", "--executor", "process", "--max-mem", "inf"], "--max-mem must be a finite"),
    (["-d", "synthetic:m=2", "--executor", "process", "--max-mem", "1e300"], "--max-mem must be <="),
])
def test_bad_values_are_refused_before_anything_runs(tmp_path, capsys, args, message) -> None:
    db = tmp_path / "r.sqlite"
    assert main([*RUN, *args, "--db", str(db)]) == 2
    assert message in capsys.readouterr().err
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_a_bad_separator_is_refused(tmp_path, capsys) -> None:
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,x\n2,y\n")
    assert main([*RUN, "-d", f"csv:path={table},private=b,sep=ab", "--no-store"]) == 2
    assert "sep must be one character" in capsys.readouterr().err


def test_a_table_above_the_size_limit_is_refused(tmp_path, capsys, monkeypatch) -> None:
    table = tmp_path / "t.csv"
    table.write_text("a,b\n" + "1,x\n2,y\n" * 100)
    monkeypatch.setenv("PRIVBENCH_MAX_UNZIPPED_BYTES", "100")
    assert main([*RUN, "-d", f"csv:path={table},private=b", "--no-store"]) == 2
    assert "above the limit" in capsys.readouterr().err


def test_a_corrupt_zip_is_a_clear_error(tmp_path, capsys, monkeypatch) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    row = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
           "White, Male, 2174, 0, 40, United-States, <=50K\n")
    with zipfile.ZipFile(folder / "adult.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("adult.data", row * 2000)
        z.writestr("adult.test", "|x\n" + row.replace("K\n", "K.\n") * 2000)
    data = bytearray((folder / "adult.zip").read_bytes())
    data[200:400] = bytes(b ^ 0x5A for b in data[200:400])
    (folder / "adult.zip").write_bytes(bytes(data))
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path / "cache"))
    assert main([*RUN, "-d", f"census:data_dir={folder}", "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "adult.zip" in err and "Traceback" not in err


def test_an_adapter_bug_is_a_bad_request_naming_the_data_set(tmp_path, capsys, monkeypatch) -> None:
    from privbench.datasets.synthetic import Synthetic

    def broken(self):
        raise ZeroDivisionError("adapter bug")

    monkeypatch.setattr(Synthetic, "load", broken)
    from privbench.running import problems

    monkeypatch.setattr(problems, "_CACHE", type(problems._CACHE)())
    assert main([*RUN, "-d", "synthetic:m=7", "--no-store"]) == 2
    assert "dataset 'synthetic:m=7' cannot be loaded: ZeroDivisionError" in capsys.readouterr().err

