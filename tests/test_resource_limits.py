"""Resource limits, big files and unusable folders give results or one-line errors."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from privbench.cli import main

TESTS = Path(__file__).resolve().parent
#: the helper plugins the tests load by module name (PRIVBENCH_PLUGIN_MODULES)
PLUGINS = TESTS / "plugins"


@pytest.mark.slow
def test_max_mem_900_runs_with_one_blas_thread_per_worker() -> None:
    """RLIMIT_AS and one OpenBLAS thread per core (~80 MB of address space each) left a
    900 MB worker without room; under --max-mem the worker's BLAS/OpenMP use one thread."""
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PRIVBENCH_PLUGIN_MODULES": "hostile_plugins"}
    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m",
                          "hostile_returns:what=blas_threads", "-m", "expmec", "-d",
                          "synthetic:m=8", "--delta", "0.5", "--executor", "process",
                          "--workers", "1", "--max-mem", "900", "--timeout", "240",
                          "--no-store", "--json"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    records = {r["mechanism"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert {r["status"] for r in records.values()} == {"ok"}, out.stdout[-2000:]
    stats = records["hostile_returns"]["metrics"]
    assert stats["blas_threads"] == 1 and stats["omp_env"] == "1"
    assert records["expmec"]["mi_bits"] > 0.1


def test_max_mem_below_what_a_worker_needs_is_refused(capsys) -> None:
    code = main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "--no-store",
                 "--executor", "process", "--max-mem", "300"])
    err = capsys.readouterr().err
    assert code == 2 and "--max-mem must be >= 512 MB" in err and "got 300" in err


def _huge(path: Path) -> Path:
    """A 3 GB file that takes no disk (sparse): reading it would take seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["truncate", "-s", "3G", str(path)], check=True)
    return path


@pytest.mark.parametrize(("dataset", "files", "huge"), [
    ("census", {"adult.test": "|x\n"}, "adult/adult.data"),
    ("movielens:variant=100k", {"ml-100k/u.item": "", "ml-100k/u.user": "",
                                "ml-100k/u.genre": ""}, "ml-100k/u.data"),
])
def test_a_3gb_data_file_is_refused_at_plan_time_unread(tmp_path, monkeypatch, capsys, dataset,
                                                          files, huge) -> None:
    from privbench.datasets import _files

    touched: list[str] = []  # the file is neither hashed nor read
    monkeypatch.setattr(_files, "sha256_of", lambda path: touched.append(str(path)) or "0")
    monkeypatch.setattr(_files.Source, "read_bytes", lambda self, m: touched.append(m) or b"")
    data = tmp_path / "data"
    big = _huge(data / huge)
    for name, text in files.items():
        target = data / (name if "/" in name else Path(huge).parent / name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(data))
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")
    db = tmp_path / "r.sqlite"
    code = main(["run", "-m", "identity", "-d", dataset, "--delta", "1", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert str(big) in err and "3,072 MiB, above the limit of 512 MiB" in err
    assert "PRIVBENCH_MAX_UNZIPPED_BYTES" in err and "Traceback" not in err
    assert touched == []
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_a_3gb_survey_is_refused_unread(tmp_path, capsys) -> None:
    big = _huge(tmp_path / "survey.csv")
    code = main(["run", "-m", "identity", "-d", f"politics_tv:path={big}", "--delta", "1",
                 "--no-store"])
    err = capsys.readouterr().err
    assert code == 2 and str(big) in err and "above the limit of 512 MiB" in err


@pytest.fixture
def unusable_cache(tmp_path, monkeypatch, request):
    """PRIVBENCH_CACHE_DIR naming a file, or a folder nobody may write (read-only for
    root too: the file system's refusal is what mkstemp reports); no data folder."""
    import tempfile

    if request.param == "file":
        cache = tmp_path / "cache-file"
        cache.write_text("not a folder")
    else:
        cache = tmp_path / "read-only"
        cache.mkdir()
        cache.chmod(0o555)
        real = tempfile.mkstemp

        def refuse(*args, dir=None, **kwargs):  # noqa: A002 - mkstemp's own name
            if dir is not None and str(dir).startswith(str(cache)):
                raise PermissionError(13, "Permission denied", str(dir))
            return real(*args, dir=dir, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    yield cache
    if cache.is_dir():
        cache.chmod(0o755)  # so that pytest can remove it


@pytest.mark.parametrize("unusable_cache", ["file", "read-only"], indirect=True)
def test_an_unusable_cache_folder_online_is_one_line_naming_it(unusable_cache, monkeypatch,
                                                                capsys) -> None:
    import urllib.request

    def no_network(*args, **kwargs):
        raise AssertionError("the network was touched")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "0")
    problem = "is not a folder" if unusable_cache.is_file() else "cannot be written"
    named = f"the cache folder {unusable_cache} (PRIVBENCH_CACHE_DIR) {problem}"
    code = main(["run", "-m", "identity", "-d", "census", "--delta", "1", "--no-store"])
    err = capsys.readouterr().err
    assert code == 2 and named in err and "Traceback" not in err, err
    assert main(["data", "fetch", "census"]) == 2
    err = capsys.readouterr().err
    assert named in err and "internal error" not in err and "Traceback" not in err


def test_a_cache_file_offline_is_named_as_not_a_folder(tmp_path, monkeypatch, capsys) -> None:
    cache = tmp_path / "cache-file"
    cache.write_text("not a folder")
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")
    code = main(["run", "-m", "identity", "-d", "census", "--delta", "1", "--no-store"])
    err = capsys.readouterr().err
    assert code == 2 and f"cache: {cache} (not a folder)" in err and "Traceback" not in err
