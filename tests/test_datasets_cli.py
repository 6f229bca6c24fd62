"""``privbench data list|info|fetch``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from privbench.cli import main as cli_main
from privbench.datasets import _files, census

ADULT = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
         "White, Male, 2174, 0, 40, United-States, <=50K\n")


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, host) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")
    return cache


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list(capsys) -> None:
    code, out, _ = run(capsys, "data", "list", "--json")
    names = {d["name"] for d in json.loads(out)}
    assert code == 0
    assert {"census", "movielens", "politics_tv", "politics_tv_surrogate", "csv"} <= names


def test_info_found(capsys, tmp_path: Path) -> None:
    folder = tmp_path / "data" / "adult"
    folder.mkdir(parents=True)
    (folder / "adult.data").write_text(ADULT)
    (folder / "adult.test").write_text("|1x3 Cross validator\n")
    code, out, _ = run(capsys, "data", "info", f"census:data_dir={tmp_path / 'data'}", "--json")
    info = json.loads(out)
    assert code == 0
    assert info["licence"] == "CC BY 4.0" and "Kohavi" in info["citation"]
    assert info["files"]["found"] is True and info["files"]["origin"] == "data_dir"
    entry = info["files"]["files"]["adult.data"]
    assert entry["bytes"] == len(ADULT) and entry["official_sha256"] is False
    code, out, _ = run(capsys, "data", "info", f"census:data_dir={tmp_path / 'data'}")
    assert code == 0 and "sha256 differs from the official file" in out


def test_info_not_found_never_downloads(capsys, isolated: Path) -> None:
    code, out, _ = run(capsys, "data", "info", "movielens:variant=1m")
    assert code == 0
    assert "files not found" in out and "looked in cache" in out
    assert "ml-1m.zip" in out
    assert not isolated.exists()


def test_info_of_generated_datasets(capsys) -> None:
    code, out, _ = run(capsys, "data", "info", "politics_tv_surrogate", "--json")
    info = json.loads(out)
    assert code == 0 and info["surrogate"] is True
    assert info["calibration"]["target_top5_binary_mi_bits"] == 0.191


def test_fetch_downloads_into_cache(capsys, tmp_path: Path, monkeypatch, isolated: Path) -> None:
    monkeypatch.delenv("PRIVBENCH_OFFLINE")  # served from a local file:// URL
    served = tmp_path / "adult.data"
    served.write_text(ADULT)
    remote = _files.Remote(url=served.as_uri(), sha256=hashlib.sha256(ADULT.encode()).hexdigest(),
                           cache_name="adult/adult.data")
    monkeypatch.setitem(census.REMOTES, "adult.data", remote)
    code, out, _ = run(capsys, "data", "fetch", "census:split=train")
    assert code == 0 and "downloaded" in out
    assert (isolated / "adult" / "adult.data").read_text() == ADULT
    code, out, _ = run(capsys, "data", "fetch", "census:split=train", "--json")
    assert json.loads(out)["fetched"] is False


def test_fetch_failure_exits_2_and_caches_nothing(capsys, tmp_path: Path, monkeypatch,
                                                  isolated: Path) -> None:
    monkeypatch.delenv("PRIVBENCH_OFFLINE")  # served from a local file:// URL
    served = tmp_path / "adult.data"
    served.write_text(ADULT)
    remote = _files.Remote(url=served.as_uri(), sha256="f" * 64, cache_name="adult/adult.data")
    monkeypatch.setitem(census.REMOTES, "adult.data", remote)
    code, _, err = run(capsys, "data", "fetch", "census:split=train")
    assert code == 2
    assert "checksum mismatch" in err and "privbench data fetch census" in err
    assert not isolated.exists()


def test_fetch_nothing_to_download(capsys) -> None:
    code, out, _ = run(capsys, "data", "fetch", "synthetic")
    assert code == 0 and "nothing to download" in out


def test_unknown_dataset_and_bad_parameter(capsys) -> None:
    code, _, err = run(capsys, "data", "info", "imdb")
    assert code == 2 and "unknown dataset 'imdb'" in err
    code, _, err = run(capsys, "data", "info", "census:colour=red")
    assert code == 2 and "unknown parameter(s) colour" in err


@pytest.mark.parametrize("name", ["census", "movielens"])
def test_fetch_offline_says_how_to_supply_the_files_once(capsys, name: str) -> None:
    code, out, err = run(capsys, "data", "fetch", name)
    assert code == 2 and "downloads are disabled (PRIVBENCH_OFFLINE is set)" in err
    assert err.count("To supply the files") == 1


@pytest.mark.parametrize("spec", [
    "census:top_k=abc", "census:missing=bogus", "census:bins=[age]", "movielens:top_genres=0",
    "movielens:top_k=0", "synthetic:m=99", "random:distortion=manhattan",
    "politics_tv_surrogate:ratings=likes", "politics_tv:distortion=manhattan",
    "csv:path=t.csv,private=income,top_k=abc", "csv:distortion=manhattan",
    "csv:missing=ignore", "csv:bin_strategy=kmeans",
])
def test_info_refuses_a_value_run_refuses_with_its_message(capsys, spec: str) -> None:
    """`data info` checks the values that need no data as `run` does: exit 2, the same
    message (and never reads or downloads a file for it)."""
    code, _, err = run(capsys, "run", "-m", "expmec", "-d", spec, "--delta", "0.5",
                       "--no-store")
    assert code == 2 and err.startswith("privbench run: error: Error creating dataset")
    for command in ("info", "fetch"):
        code, out, info_err = run(capsys, "data", command, spec)
        assert code == 2 and out == ""
        assert info_err.removeprefix("privbench data: ") == err.removeprefix("privbench run: ")
