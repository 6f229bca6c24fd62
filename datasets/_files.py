"""Finding, verifying and downloading the files of real data sets.

A real adapter looks, in order, in: its ``data_dir`` parameter, ``$PRIVBENCH_DATA_DIR``,
the user cache (``$PRIVBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/privbench``, else
``~/.cache/privbench``), and finally downloads the official files into the cache.
In every folder it accepts the files directly, in a sub-folder named after the data set
(``adult/``, ``ml-100k/``: the layout of ``../shared/data``), in the folder an official
archive extracts to (``ml-100k/ml-100k/``), or inside the official zip archive itself.

Downloads stream into a temporary file beside the target, are checked against a
sha256 published for the official file, and are renamed into place only when the
checksum matches: no half-written or unverified file is ever used or left behind.
Files found in the cache are checked against the same sha256 on every load (they are
small); files in a user's folder are used as they are and ``info`` says whether they
match the official checksums.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privbench._plumbing.env import env_flag
from privbench.protocol.errors import DataError, ValidationError

DATA_ENV = "PRIVBENCH_DATA_DIR"
CACHE_ENV = "PRIVBENCH_CACHE_DIR"
#: set to 1 to forbid downloads (CI, air-gapped machines)
OFFLINE_ENV = "PRIVBENCH_OFFLINE"
#: the largest file read out of a zip, or csv table read, in bytes (the official data
#: files are < 30 MB)
MAX_MEMBER_ENV = "PRIVBENCH_MAX_UNZIPPED_BYTES"
DEFAULT_MAX_MEMBER = 512 * 2**20


def max_member_bytes() -> int:
    """The unzip limit: ``PRIVBENCH_MAX_UNZIPPED_BYTES`` or 512 MiB."""
    text = os.environ.get(MAX_MEMBER_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_MEMBER
    try:
        return max(1, int(text))
    except ValueError:
        raise DataError(f"{MAX_MEMBER_ENV} must be a number of bytes; got {text!r}") from None


def check_file_size(where: str, size: int) -> None:
    """A data file is read into memory whole: one above the limit is refused by its size
    alone (a 3 GB file is never opened, let alone hashed or parsed)."""
    limit = max_member_bytes()
    if size > limit:
        raise DataError(f"{where} is {size / 2**20:,.0f} MiB, above the limit of "
                        f"{limit / 2**20:,.0f} MiB for a data file read into memory; raise "
                        f"{MAX_MEMBER_ENV} (bytes) if the machine can hold it")


CHUNK = 1 << 16
TIMEOUT_S = 60.0


def cache_dir() -> Path:
    """The user cache folder for downloaded archives (not created here)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "privbench"


def usable_cache_dir() -> Path:
    """The cache folder, checked before anything is downloaded into it: a folder (or
    one that can be made: its nearest existing parent is) where a file can be written;
    DataError naming it (and where it came from) otherwise. Nothing is left behind."""
    root = cache_dir()
    named = f"the cache folder {root}" + (f" ({CACHE_ENV})" if os.environ.get(CACHE_ENV) else "")
    advice = (f"set {CACHE_ENV} to a folder you can write, or supply the files yourself "
              f"(data_dir= or {DATA_ENV})")
    existing = next(p for p in (root, *root.parents) if p.exists())
    if not existing.is_dir():
        raise DataError(f"{named} is not a folder; {advice}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".privbench-write-test.", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise DataError(f"{named} cannot be written ({exc.strerror or exc}); {advice}") from None
    return root


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Remote:
    """One official file: where to download it, its sha256, and its name in the cache."""

    url: str
    sha256: str
    cache_name: str  # relative path under the cache folder, e.g. "adult/adult.data"
    size: int | None = None


@dataclass(frozen=True)
class FileSpec:
    """What a data set needs and where its official copies live.

    ``members`` are the file names the parser reads; ``folders`` the sub-folder names
    the files may sit in; ``archives`` the zip names that may hold them (at any
    prefix inside the zip); ``remotes`` what ``fetch`` downloads into the cache.
    ``checksums`` maps member names to official sha256s (reported by ``info``).
    """

    dataset: str
    members: tuple[str, ...]
    folders: tuple[str, ...] = ()
    archives: tuple[str, ...] = ()
    remotes: tuple[Remote, ...] = ()
    checksums: dict[str, str] = field(default_factory=dict)
    how_to: str = ""


class Source:
    """A located copy of a data set: a folder or a zip archive with every member."""

    def __init__(self, kind: str, location: Path, paths: dict[str, str], origin: str) -> None:
        self.kind = kind  # "folder" | "zip"
        self.location = location
        self.paths = paths  # member -> path (folder) or name inside the zip
        self.origin = origin  # "data_dir" | "PRIVBENCH_DATA_DIR" | "cache"
        #: display path -> sha256 of every member (set by the adapter's locate)
        self.hashes: dict[str, str] = {}

    def describe(self, member: str) -> str:
        """A readable path for error messages: ``/x/adult.data`` or ``/x/a.zip!a/u.data``."""
        if self.kind == "zip":
            return f"{self.location}!{self.paths[member]}"
        return self.paths[member]

    def read_bytes(self, member: str) -> bytes:
        try:
            if self.kind == "zip":
                with zipfile.ZipFile(self.location) as zf:
                    info = zf.getinfo(self.paths[member])
                    limit = max_member_bytes()
                    if info.file_size > limit:  # a zip bomb must not fill the memory
                        raise DataError(
                            f"{self.describe(member)} unpacks to {info.file_size:,} bytes, more "
                            f"than the limit of {limit:,} ({MAX_MEMBER_ENV} to change it)")
                    return zf.read(info)
            return Path(self.paths[member]).read_bytes()
        except (OSError, zipfile.BadZipFile, KeyError) as exc:
            raise DataError(f"cannot read {self.describe(member)}: {exc}") from None

    def size(self, member: str) -> int:
        if self.kind == "zip":
            with zipfile.ZipFile(self.location) as zf:
                return zf.getinfo(self.paths[member]).file_size
        return Path(self.paths[member]).stat().st_size

    def sha256(self, member: str) -> str:
        if self.kind == "zip":
            return hashlib.sha256(self.read_bytes(member)).hexdigest()
        return sha256_of(Path(self.paths[member]))

    def stamp(self, member: str) -> tuple[str, int, int]:
        """(path, size, mtime) of the file holding ``member``: what the hash cache keys on."""
        path = Path(self.location) if self.kind == "zip" else Path(self.paths[member])
        st = path.stat()
        return f"{path}!{member}", st.st_size, st.st_mtime_ns

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "location": str(self.location), "origin": self.origin,
                "files": {m: self.describe(m) for m in self.paths}}


_HASHES: dict[tuple[str, int, int], str] = {}


def cached_sha256(source: Source, member: str) -> str:
    """sha256 of a member, computed once per process per unchanged file."""
    key = source.stamp(member)
    if key not in _HASHES:
        _HASHES[key] = source.sha256(member)
    return _HASHES[key]


def search_roots(data_dir: str | os.PathLike[str] | None) -> list[tuple[str, Path]]:
    """(origin, folder) in lookup order; a given ``data_dir`` must exist."""
    roots: list[tuple[str, Path]] = []
    if data_dir is not None and str(data_dir) != "":
        path = Path(data_dir).expanduser()
        if not path.is_dir():
            raise ValidationError(
                f"data_dir {str(data_dir)!r} is not an existing folder; expected a folder "
                "holding the data set's files"
            )
        roots.append(("data_dir", path))
    env = os.environ.get(DATA_ENV)
    if env:
        roots.append((DATA_ENV, Path(env).expanduser()))
    roots.append(("cache", cache_dir()))
    return roots


def _candidate_folders(root: Path, spec: FileSpec) -> Iterator[Path]:
    yield root
    for sub in spec.folders:
        yield root / sub
        yield root / sub / sub  # an official archive extracted into a folder of its name


def _candidate_archives(root: Path, spec: FileSpec) -> Iterator[Path]:
    for name in spec.archives:
        yield root / name
        for sub in spec.folders:
            yield root / sub / name


def _zip_members(archive: Path, members: Sequence[str]) -> dict[str, str] | None:
    try:
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
    except (OSError, zipfile.BadZipFile):
        return None
    found: dict[str, str] = {}
    for member in members:
        hits = sorted((n for n in names if n == member or n.endswith("/" + member)),
                      key=lambda n: (n.count("/"), n))
        if not hits:
            return None
        found[member] = hits[0]
    return found


def find_in(root: Path, origin: str, spec: FileSpec) -> Source | None:
    """The first folder or archive under ``root`` holding every member, else None."""
    if not root.is_dir():
        return None
    for folder in _candidate_folders(root, spec):
        paths = {m: folder / m for m in spec.members}
        if all(p.is_file() for p in paths.values()):
            return Source("folder", folder, {m: str(p) for m, p in paths.items()}, origin)
    for archive in _candidate_archives(root, spec):
        if archive.is_file():
            inside = _zip_members(archive, spec.members)
            if inside is not None:
                return Source("zip", archive, inside, origin)
    return None


def looked_in(roots: Sequence[tuple[str, Path]], spec: FileSpec) -> list[str]:
    """Human-readable list of every place searched (for 'not found' errors)."""
    lines = []
    for origin, root in roots:
        if root.exists() and not root.is_dir():
            lines.append(f"{origin}: {root} (not a folder)")
            continue
        where = ", ".join(str(p) for p in _candidate_folders(root, spec))
        zips = ", ".join(str(p) for p in _candidate_archives(root, spec))
        lines.append(f"{origin}: {where}" + (f"; archives {zips}" if zips else ""))
    return lines


def verify_cached(source: Source, spec: FileSpec) -> None:
    """Cache entries must match the official sha256 (they were verified when written)."""
    if source.origin != "cache":
        return
    expected = {r.cache_name: r.sha256 for r in spec.remotes}
    files = ([str(source.location)] if source.kind == "zip"
             else list(source.paths.values()))
    root = cache_dir()
    for path in files:
        try:
            rel = Path(path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        want = expected.get(rel)
        if want is None:
            continue
        got = sha256_of(Path(path))
        if got != want:
            raise DataError(
                f"cached file {path} does not match the official sha256 (expected {want}, "
                f"got {got}); delete it and supply the files again. {spec.how_to}"
            )


def offline() -> bool:
    """PRIVBENCH_OFFLINE, strictly: an unknown value is refused, never read as online."""
    return env_flag(OFFLINE_ENV)


def locate(spec: FileSpec, data_dir: str | os.PathLike[str] | None = None, *,
           download: bool = True, progress: bool = True) -> Source:
    """Find the files of ``spec`` (see module docstring), downloading them if allowed.

    :raises DataError: when they are nowhere and cannot be downloaded; the message
        lists every place searched and how to supply the files.
    """
    roots = search_roots(data_dir)
    for origin, root in roots:
        found = find_in(root, origin, spec)
        if found is not None:
            verify_cached(found, spec)
            return found
    problem = ""
    if download and spec.remotes and not offline():
        try:
            fetch(spec, progress=progress)
        except DataError as exc:
            problem = f"download failed: {exc}"
        else:
            found = find_in(cache_dir(), "cache", spec)
            if found is not None:
                return found
            problem = "download finished but the files were not found in the archive"
    elif not spec.remotes:
        problem = "this data set cannot be downloaded"
    else:
        problem = ("downloads are disabled (" + (f"{OFFLINE_ENV} is set" if offline()
                                                 else "download=false") + ")")
    searched = "\n  ".join(looked_in(roots, spec))
    raise DataError(
        f"{spec.dataset}: files {', '.join(spec.members)} not found; {problem}.\n"
        f"Looked in:\n  {searched}\n{spec.how_to}".rstrip()
    )


def fetch(spec: FileSpec, *, force: bool = False, progress: bool = True,
          opener: Callable[..., Any] | None = None) -> list[dict[str, Any]]:
    """Download every remote of ``spec`` into the cache (skipping verified copies)."""
    if not spec.remotes:
        raise DataError(f"{spec.dataset}: nothing to download; {spec.how_to}".rstrip("; "))
    if offline():
        raise DataError(f"{spec.dataset}: downloads are disabled ({OFFLINE_ENV} is set); "
                        f"{spec.how_to}".rstrip("; "))
    done = []
    root = usable_cache_dir()
    for remote in spec.remotes:
        target = root / remote.cache_name
        if not force and target.is_file() and sha256_of(target) == remote.sha256:
            done.append({"file": str(target), "url": remote.url, "downloaded": False,
                         "reason": "already in the cache with the official sha256"})
            continue
        download(remote, target, progress=progress, opener=opener)
        done.append({"file": str(target), "url": remote.url, "downloaded": True,
                     "sha256": remote.sha256})
    return done


def _progress_bar(total: int | None, label: str, enabled: bool) -> Any:
    if not enabled:
        return None
    import rich.progress as rp
    from rich.console import Console

    bar = rp.Progress(rp.TextColumn("[bold]{task.description}"), rp.BarColumn(),
                      rp.DownloadColumn(), rp.TransferSpeedColumn(), rp.TimeRemainingColumn(),
                      console=Console(stderr=True), transient=False)
    bar.start()
    bar.add_task(label, total=total)
    return bar


def _part_file(target: Path) -> tuple[int, Path]:
    """The temporary file a download streams into, beside ``target`` (folders made)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:  # a file where the folder belongs, a read-only folder
        raise DataError(f"cannot write in {target.parent} ({exc.strerror or exc}); set "
                        f"{CACHE_ENV} to a folder you can write") from None
    return fd, Path(name)


def download(remote: Remote, target: Path, *, progress: bool = True,
             opener: Callable[..., Any] | None = None) -> Path:
    """Stream ``remote.url`` to ``target`` with a progress bar and a sha256 check.

    The bytes go to a temporary file in the target's folder, which is renamed over
    ``target`` only after the checksum matched; on any failure (network, disk, size or
    checksum) the temporary file is removed and ``target`` is left untouched.

    :param opener: ``urllib.request.urlopen``-like callable (tests inject one).
    :raises DataError: naming the URL and what went wrong.
    """
    import http.client
    import urllib.error
    import urllib.request

    opener = opener or urllib.request.urlopen
    made = [d for d in (target.parent, *target.parent.parents) if not d.exists()]
    fd, tmp = _part_file(target)
    digest = hashlib.sha256()
    received = 0
    bar = None
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                response = opener(remote.url, timeout=TIMEOUT_S)
            except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
                raise DataError(f"cannot download {remote.url}: {exc}") from None
            with response:
                length = response.headers.get("Content-Length") if hasattr(
                    response, "headers") and response.headers else None
                total = int(length) if length and str(length).isdigit() else remote.size
                bar = _progress_bar(total, target.name, progress)
                while True:
                    try:
                        chunk = response.read(CHUNK)
                    except (OSError, ValueError, http.client.HTTPException) as exc:
                        # IncompleteRead, connection reset, timeout
                        raise DataError(
                            f"download of {remote.url} failed after {received} bytes: {exc}"
                        ) from None
                    if not chunk:
                        break
                    out.write(chunk)
                    digest.update(chunk)
                    received += len(chunk)
                    if bar is not None:
                        bar.update(bar.task_ids[0], completed=received)
            out.flush()
            os.fsync(out.fileno())
        if total is not None and length and received != total:
            raise DataError(
                f"download of {remote.url} stopped after {received} of {total} bytes; "
                "nothing was saved"
            )
        if remote.size is not None and received != remote.size:
            raise DataError(
                f"download of {remote.url} is {received} bytes; expected {remote.size}"
                " (interrupted?); nothing was saved"
            )
        got = digest.hexdigest()
        if got != remote.sha256:
            raise DataError(
                f"checksum mismatch for {remote.url}: expected sha256 {remote.sha256}, got "
                f"{got}; nothing was saved"
            )
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        for folder in made:  # folders this call created, innermost first
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    finally:
        if bar is not None:
            bar.stop()
    return target


def read_text(source: Source, member: str, encoding: str = "utf-8") -> str:
    """A member decoded as text; a decoding error names the file and line."""
    raw = source.read_bytes(member)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(
            f"{source.describe(member)}, line {line}: not valid {encoding} text ({exc.reason})"
        ) from None



def file_info(source: Source | None, spec: FileSpec, *, checksums: bool = True
              ) -> dict[str, Any]:
    """Where the files were found, their sizes and whether they match the official ones."""
    if source is None:
        return {"found": False}
    files = {}
    for member in spec.members:
        entry: dict[str, Any] = {"path": source.describe(member), "bytes": source.size(member)}
        want = spec.checksums.get(member)
        if checksums and want:
            entry["official_sha256"] = source.sha256(member) == want
        files[member] = entry
    return {"found": True, **source.to_dict(), "files": files}
