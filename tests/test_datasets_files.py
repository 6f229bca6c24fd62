"""Locating data files (data_dir -> PRIVBENCH_DATA_DIR -> cache -> download) and the
checksummed, atomic download: never a partial or unverified file in the cache."""

from __future__ import annotations

import hashlib
import http.server
import io
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import privbench as pb
from privbench.datasets import _files, census
from privbench.datasets import movielens as ml

CONTENT = b"39, State-gov, 77516\n" * 2000
SHA = hashlib.sha256(CONTENT).hexdigest()


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    monkeypatch.delenv("PRIVBENCH_OFFLINE", raising=False)
    return cache


def spec(remotes: tuple[_files.Remote, ...] = ()) -> _files.FileSpec:
    return _files.FileSpec(dataset="demo", members=("a.txt", "b.txt"), folders=("demo",),
                           archives=("demo.zip",), remotes=remotes, how_to="Put them somewhere.")


def put(folder: Path, text: str = "x") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("a.txt", "b.txt"):
        (folder / name).write_text(f"{text}:{name}")
    return folder


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


# -- where files are found -----------------------------------------------------------

def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path) -> None:
    explicit, env = put(tmp_path / "explicit", "e"), put(tmp_path / "env" / "demo", "v")
    put(isolated / "demo", "c")
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(tmp_path / "env"))
    found = _files.locate(spec(), explicit)
    assert (found.origin, found.location) == ("data_dir", explicit)
    found = _files.locate(spec(), None)
    assert (found.origin, found.location) == ("PRIVBENCH_DATA_DIR", env)
    monkeypatch.delenv("PRIVBENCH_DATA_DIR")
    found = _files.locate(spec(), None)
    assert found.origin == "cache" and found.read_bytes("a.txt") == b"c:a.txt"
    # a data_dir without the files falls through to the next place
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _files.locate(spec(), empty).origin == "cache"


@pytest.mark.parametrize("layout", ["flat", "sub", "extracted", "zip", "zip_in_sub"])
def test_layouts(tmp_path: Path, layout: str) -> None:
    root = tmp_path / "root"
    if layout == "flat":
        put(root)
    elif layout == "sub":
        put(root / "demo")
    elif layout == "extracted":  # demo.zip extracted into a folder named demo/
        put(root / "demo" / "demo")
    else:
        target = root / ("demo" if layout == "zip_in_sub" else "") / "demo.zip"
        target.parent.mkdir(parents=True)
        with zipfile.ZipFile(target, "w") as zf:
            for name in ("a.txt", "b.txt"):
                zf.writestr(f"demo/{name}", f"x:{name}")
            zf.writestr("demo/README", "readme")
    found = _files.locate(spec(), root, download=False)
    assert found.read_bytes("b.txt") == b"x:b.txt"
    if layout.startswith("zip"):
        assert found.kind == "zip" and found.describe("a.txt").endswith("demo.zip!demo/a.txt")


def test_partial_folder_is_not_used(tmp_path: Path) -> None:
    root = put(tmp_path / "root")
    (root / "b.txt").unlink()
    with pytest.raises(pb.DataError, match="a.txt, b.txt not found; this data set cannot be downloaded"):
        _files.locate(spec(), root, download=False)


def test_unreadable_member_is_a_data_error(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    bad = root / "demo.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("a.txt", "a")
        zf.writestr("b.txt", "b")
    found = _files.locate(spec(), root, download=False)
    bad.write_bytes(b"not a zip any more")
    with pytest.raises(pb.DataError, match=r"cannot read .*demo.zip!b.txt"):
        found.read_bytes("b.txt")


def test_non_utf8_text_names_the_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    put(root)
    (root / "a.txt").write_bytes(b"ok\nok\ncaf\xe9\n")
    found = _files.locate(spec(), root, download=False)
    with pytest.raises(pb.DataError, match=r"a.txt, line 3: not valid utf-8"):
        _files.read_text(found, "a.txt")
    assert _files.read_text(found, "a.txt", "latin-1").endswith("café\n")


# -- downloads -----------------------------------------------------------------------

def test_download_from_file_url(tmp_path: Path, capsys) -> None:
    src = tmp_path / "served.txt"
    src.write_bytes(CONTENT)
    target = tmp_path / "cache" / "x" / "served.txt"
    remote = _files.Remote(url=src.as_uri(), sha256=SHA, cache_name="x/served.txt",
                           size=len(CONTENT))
    _files.download(remote, target, progress=True)
    assert target.read_bytes() == CONTENT
    assert leftovers(target.parent) == [target]  # no temporary file left
    assert "served.txt" in capsys.readouterr().err  # the rich progress bar, on stderr


def test_checksum_mismatch_saves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "served.txt"
    src.write_bytes(CONTENT)
    target = tmp_path / "cache" / "x" / "served.txt"
    remote = _files.Remote(url=src.as_uri(), sha256="0" * 64, cache_name="x/served.txt")
    with pytest.raises(pb.DataError, match=r"checksum mismatch for file://.*expected sha256 "
                                           r"0{64}, got " + SHA):
        _files.download(remote, target, progress=False)
    assert not target.exists() and leftovers(tmp_path / "cache") == []
    assert not (tmp_path / "cache").exists()  # the folders it made are gone too


def test_existing_file_untouched_by_failed_download(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "served.txt"
    target.parent.mkdir()
    target.write_bytes(b"old")
    remote = _files.Remote(url=(tmp_path / "missing").as_uri(), sha256=SHA, cache_name="s")
    with pytest.raises(pb.DataError, match="cannot download"):
        _files.download(remote, target, progress=False)
    assert target.read_bytes() == b"old" and leftovers(target.parent) == [target]


class _Truncating(http.server.BaseHTTPRequestHandler):
    """Announces the whole file, sends a third of it, then drops the connection."""

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.send_response(200)
        self.send_header("Content-Length", str(len(CONTENT)))
        self.end_headers()
        self.wfile.write(CONTENT[: len(CONTENT) // 3])
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class _Whole(_Truncating):
    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", str(len(CONTENT)))
        self.end_headers()
        self.wfile.write(CONTENT)


@pytest.fixture
def server() -> Iterator[callable]:
    servers = []

    def start(handler: type) -> str:
        srv = http.server.HTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/file.txt"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def test_interrupted_http_download_leaves_no_partial_file(tmp_path: Path, server) -> None:
    url = server(_Truncating)
    target = tmp_path / "cache" / "file.txt"
    remote = _files.Remote(url=url, sha256=SHA, cache_name="file.txt")
    with pytest.raises(pb.DataError, match=r"download of http://127.0.0.1:\d+/file.txt"):
        _files.download(remote, target, progress=False)
    assert leftovers(tmp_path / "cache") == []


def test_http_download_ok(tmp_path: Path, server) -> None:
    url = server(_Whole)
    target = tmp_path / "cache" / "file.txt"
    _files.download(_files.Remote(url=url, sha256=SHA, cache_name="file.txt"), target,
                    progress=False)
    assert target.read_bytes() == CONTENT


def test_failure_inside_the_stream_cleans_up(tmp_path: Path) -> None:
    class Response:
        headers = {"Content-Length": str(len(CONTENT))}

        def __init__(self) -> None:
            self.calls = 0

        def __enter__(self) -> Response:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def read(self, n: int) -> bytes:
            self.calls += 1
            if self.calls > 2:
                raise ConnectionResetError("connection reset by peer")
            return CONTENT[:n]

    target = tmp_path / "cache" / "file.txt"
    with pytest.raises(pb.DataError, match="failed after .* bytes: connection reset"):
        _files.download(_files.Remote(url="https://example.invalid/f", sha256=SHA,
                                      cache_name="file.txt"),
                        target, progress=False, opener=lambda url, timeout: Response())
    assert leftovers(tmp_path / "cache") == []


def test_keyboard_interrupt_cleans_up(tmp_path: Path) -> None:
    def opener(url: str, timeout: float) -> io.BytesIO:
        class Stream(io.BytesIO):
            headers = None

            def read(self, n: int = -1) -> bytes:
                raise KeyboardInterrupt

        return Stream(CONTENT)

    target = tmp_path / "cache" / "file.txt"
    with pytest.raises(KeyboardInterrupt):
        _files.download(_files.Remote(url="x", sha256=SHA, cache_name="f"), target,
                        progress=False, opener=opener)
    assert leftovers(tmp_path / "cache") == []


# -- adapters download into the cache -------------------------------------------------

ADULT_TRAIN = (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K\n"
    "31, Private, 45781, Masters, 14, Never-married, Prof-specialty, Not-in-family, White, "
    "Female, 14084, 0, 50, United-States, >50K\n")
ADULT_TEST = (
    "|1x3 Cross validator\n"
    "44, Private, 160323, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, "
    "Male, 7688, 0, 40, United-States, >50K.\n")


def _serve_adult(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, corrupt: bool = False
                 ) -> None:
    """Point census' remotes at local file:// copies of official-format files."""
    served = tmp_path / "served"
    served.mkdir()
    remotes = {}
    for name, text in (("adult.data", ADULT_TRAIN), ("adult.test", ADULT_TEST)):
        data = text.encode("latin-1")
        (served / name).write_bytes(data + (b"tampered" if corrupt else b""))
        remotes[name] = _files.Remote(url=(served / name).as_uri(),
                                      sha256=hashlib.sha256(data).hexdigest(),
                                      cache_name=f"adult/{name}")
    monkeypatch.setattr(census, "REMOTES", remotes)


def test_census_downloads_then_uses_cache(tmp_path: Path, monkeypatch, isolated: Path) -> None:
    _serve_adult(tmp_path, monkeypatch)
    problem = census.Census(top_k="all").load()
    assert problem.meta["origin"] == "cache"
    assert sorted(p.name for p in leftovers(isolated)) == ["adult.data", "adult.test"]
    # second load: from the cache, even with downloads disabled
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")
    again = census.Census(top_k="all").load()
    assert (again.joint == problem.joint).all()
    # a cached file that no longer matches its sha256 is refused, not used
    (isolated / "adult" / "adult.test").write_text("|1x3 Cross validator\n")
    with pytest.raises(pb.DataError, match="does not match the official sha256"):
        census.Census(top_k="all").load()


def test_census_checksum_mismatch_caches_nothing(tmp_path: Path, monkeypatch, isolated: Path) -> None:
    _serve_adult(tmp_path, monkeypatch, corrupt=True)
    with pytest.raises(pb.DataError, match="checksum mismatch") as info:
        census.Census().load()
    assert "Looked in" in str(info.value)
    assert leftovers(isolated) == []
    with pytest.raises(pb.DataError, match="checksum mismatch"):
        census.Census().fetch(progress=False)
    assert leftovers(isolated) == []


def test_fetch_reports_and_skips_verified_copies(tmp_path: Path, monkeypatch, isolated: Path) -> None:
    _serve_adult(tmp_path, monkeypatch)
    first = census.Census().fetch(progress=False)
    assert first["fetched"] and all(f["downloaded"] for f in first["files"])
    second = census.Census().fetch(progress=False)
    assert not second["fetched"]
    assert census.Census().fetch(force=True, progress=False)["fetched"]


def test_no_network_error_says_where_it_looked(monkeypatch, isolated: Path) -> None:
    def no_network(url: str, timeout: float) -> None:
        raise OSError("Name or service not known")

    import urllib.request  # what the download opens with, imported when it downloads

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    with pytest.raises(pb.DataError) as info:
        ml.MovieLens().load()
    text = str(info.value)
    assert "download failed: cannot download https://files.grouplens.org" in text
    assert "Name or service not known" in text and str(isolated) in text
    assert "pass data_dir=FOLDER or set PRIVBENCH_DATA_DIR=FOLDER" in text
    assert leftovers(isolated) == []
