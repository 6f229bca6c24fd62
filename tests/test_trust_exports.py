"""A file privbench cannot write is exit 3 with one line, for every command that writes
one (issue 32, found by tools/probe_trust.py io/full_disk_export)."""

from __future__ import annotations

from pathlib import Path

import pytest

from privbench.cli import main


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_an_export_to_a_full_disk_is_exit_3(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--db", str(db)]) == 0
    full = tmp_path / "full.csv"
    full.symlink_to("/dev/full")  # every write: ENOSPC
    capsys.readouterr()
    assert main(["results", "--db", str(db), "--export", str(full)]) == 3
    err = capsys.readouterr().err
    assert "full.csv" in err and "No space left on device" in err and "Traceback" not in err
