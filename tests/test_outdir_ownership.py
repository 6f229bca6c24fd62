"""privbench writes only what it owns: ``report --out``, its figure
files and ``results --export`` replace or remove only files privbench wrote, refuse a
non-empty folder it did not write (``--force`` writes beside), and follow no link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privbench._plumbing.outdir import MANIFEST, OutputFolder
from privbench.cli import main

pytest.importorskip("plotly")
pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("store") / "r.sqlite"
    assert main(["run", "-m", "identity", "-m", "expmec", "-d", "synthetic:m=2", "--delta", "0.5",
                 "--delta", "2", "--no-metric", "optimum", "--no-metric", "mapping_behaviour",
                 "--db", str(db)]) == 0
    return db


def report(store: Path, out: Path, *extra: str) -> int:
    return main(["report", "--db", str(store), "--out", str(out), *extra])


def test_a_users_files_in_the_report_folder_are_never_deleted(store, tmp_path, capsys) -> None:
    out = tmp_path / "site"
    assert report(store, out) == 0
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures and (out / MANIFEST).is_file()
    mine = {out / "figures" / "fig1.pdf": b"%PDF my paper", out / "notes.txt": b"mine"}
    for path, data in mine.items():
        path.write_bytes(data)
    stale = out / "figures" / figures[0]
    manifest = json.loads((out / MANIFEST).read_text())
    # a file an earlier report wrote and this one does not write again is removed
    (out / "figures" / "old-figure.csv").write_text("x\n")
    manifest["files"]["figures/old-figure.csv"] = __import__("hashlib").sha256(b"x\n").hexdigest()
    (out / MANIFEST).write_text(json.dumps(manifest))
    assert report(store, out) == 0
    assert all(p.read_bytes() == d for p, d in mine.items())  # was: fig1.pdf deleted
    assert not (out / "figures" / "old-figure.csv").exists() and stale.exists()


def test_a_folder_privbench_did_not_write_is_refused_and_force_writes_beside(store, tmp_path, capsys
                                                                              ) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "index.html").write_text("my own page")
    (out / "chapter.tex").write_text("text")
    capsys.readouterr()
    assert report(store, out) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--force" in err and str(out) in err
    assert (out / "index.html").read_text() == "my own page"
    assert not (out / "figures").exists()
    # --force writes beside the foreign files, but never replaces one: index.html is in the way
    assert report(store, out, "--force") == 2
    assert "index.html exists and is a file privbench did not write" in capsys.readouterr().err
    assert (out / "index.html").read_text() == "my own page"
    (out / "index.html").unlink()
    assert report(store, out, "--force") == 0
    assert (out / "chapter.tex").read_text() == "text" and "<html" in (out / "index.html").read_text()


def test_a_report_follows_no_symlink(store, tmp_path, capsys) -> None:
    out = tmp_path / "site"
    assert report(store, out) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.csv").write_text("precious")
    (elsewhere / "page.html").write_text("precious")
    # DIR/figures a link to another folder: its files were deleted, now refused
    figures = out / "figures"
    for p in figures.iterdir():
        p.unlink()
    figures.rmdir()
    figures.symlink_to(elsewhere, target_is_directory=True)
    capsys.readouterr()
    assert report(store, out) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["data.csv", "page.html"]
    assert (elsewhere / "data.csv").read_text() == "precious"
    figures.unlink()
    assert report(store, out) == 0
    # DIR/index.html a link: its target was overwritten, now refused
    (out / "index.html").unlink()
    (out / "index.html").symlink_to(elsewhere / "page.html")
    assert report(store, out) == 2
    assert (elsewhere / "page.html").read_text() == "precious"


def test_a_user_edit_of_a_written_file_makes_it_theirs(tmp_path) -> None:
    folder = OutputFolder(tmp_path / "o", what="test")
    folder.write("a/x.csv", "1\n")
    folder.write("y.txt", "2\n")
    folder.finish()
    (tmp_path / "o" / "y.txt").write_text("edited\n")
    again = OutputFolder(tmp_path / "o", what="test")
    again.write("a/x.csv", "3\n")  # its own file: replaced
    with pytest.raises(ValueError, match="did not write"):
        again.write("y.txt", "4\n")
    assert again.finish() == ["y.txt"]  # not removed either
    assert (tmp_path / "o" / "y.txt").read_text() == "edited\n"
    with pytest.raises(ValueError, match="not a path inside"):
        OutputFolder(tmp_path / "o", what="test").write("../escape.txt", "x")
    # a forged manifest naming a path outside the folder owns nothing
    (tmp_path / "o" / MANIFEST).write_text(json.dumps({"files": {"../victim": "0" * 64}}))
    (tmp_path / "victim").write_text("v")
    OutputFolder(tmp_path / "o", what="test").finish()
    assert (tmp_path / "victim").read_text() == "v"


def test_export_replaces_only_its_own_file_and_no_link(store, tmp_path, capsys) -> None:
    out = tmp_path / "runs.csv"
    assert main(["results", "--db", str(store), "--export", str(out)]) == 0
    first = out.read_text()
    assert main(["results", "--db", str(store), "--export", str(out)]) == 0  # its own: replaced
    assert out.read_text() == first
    mine = tmp_path / "budget.csv"
    mine.write_text("month,amount\n1,2\n")
    capsys.readouterr()
    assert main(["results", "--db", str(store), "--export", str(mine)]) == 2
    assert "did not write" in capsys.readouterr().err and mine.read_text() == "month,amount\n1,2\n"
    link = tmp_path / "link.csv"
    link.symlink_to(out)  # a link to a privbench export: still not followed
    assert main(["results", "--db", str(store), "--export", str(link)]) == 2
    assert "symbolic link" in capsys.readouterr().err and link.is_symlink()
