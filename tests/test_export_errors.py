"""A file privbench cannot write is exit 3 with one line, for every command that writes
one (found by tools/probe_trust.py io/full_disk_export)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from privbench.cli import main


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_an_export_to_a_full_disk_is_exit_3(tmp_path, capsys, monkeypatch) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--db", str(db)]) == 0
    full = tmp_path / "full.csv"
    from privbench._plumbing import outdir

    # the export's temporary file is /dev/full: every write is ENOSPC (a symlink to it is
    # refused now: privbench never writes through a link, tests/test_outdir_ownership.py)
    real_fdopen = outdir.os.fdopen

    def full_disk(fd: int, *args, **kwargs):
        os.close(fd)
        return real_fdopen(os.open("/dev/full", os.O_WRONLY), *args, **kwargs)

    monkeypatch.setattr(outdir.os, "fdopen", full_disk)
    capsys.readouterr()
    assert main(["results", "--db", str(db), "--export", str(full)]) == 3
    err = capsys.readouterr().err
    assert "full.csv" in err and "No space left on device" in err and "Traceback" not in err
    assert not full.exists() and not list(tmp_path.glob(".full.csv.*"))  # no half file left
