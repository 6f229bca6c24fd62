"""Writing into a user's folder without touching what is theirs.

``report --out DIR`` (and a reporter plugin's figure CSVs, PNGs and PDFs) write through an
:class:`OutputFolder`: it keeps ``DIR/.privbench-manifest.json``, the files privbench wrote
there with their sha256, and replaces or removes only those, and only while their content
is still what privbench wrote (a file the user edited since is theirs). A non-empty folder
with no manifest is refused unless ``force`` (then privbench writes beside the foreign
files, never deleting or replacing one). No symbolic link inside the folder is followed,
for a write or a delete: every step opens relative to a directory descriptor with
``O_NOFOLLOW``, and a file is written to a fresh temporary name and renamed over its own,
so a link at a target name is refused, never written through. The folder the user names
is taken as named (it may itself be a link the user chose).

``results --export FILE`` writes one file through :func:`write_export`: an existing
``FILE`` is replaced only when it is a privbench export, never through a link.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from privbench.protocol.errors import ValidationError

__all__ = ["MANIFEST", "OutputFolder", "owned_export", "write_export"]

MANIFEST = ".privbench-manifest.json"
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _clean(rel: str) -> PurePosixPath | None:
    """A relative path inside the folder, or None (absolute, ``..``, empty parts)."""
    p = PurePosixPath(rel)
    if not rel or p.is_absolute() or any(part in ("", ".", "..") for part in p.parts):
        return None
    return p


class OutputFolder:
    """A folder privbench writes into, owning only what its manifest lists.

    :param root: the folder (created if missing).
    :param what: how the user named it, for messages (``report --out DIR``).
    :param force: write into a non-empty folder privbench did not write (beside its
        files, never replacing or deleting one).
    """

    def __init__(self, root: Path, *, what: str, force: bool = False) -> None:
        self.root = Path(root)
        self.what = what
        root_path = self.root
        if root_path.is_symlink() and not root_path.exists():
            raise ValidationError(f"{what}: {root_path} is a broken symbolic link")
        if root_path.exists() and not root_path.is_dir():
            raise ValidationError(f"{what}: {root_path} is not a folder")
        root_path.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(root_path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        self.old = self._read_manifest()
        self.written: dict[str, str] = {}
        self.kept: list[str] = []
        foreign = sorted(n for n in os.listdir(self._fd) if n != MANIFEST)
        if self.old is None and foreign and not force:
            self.close()
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            old_report = "index.html" in foreign and "plotly.min.js" in foreign
            raise ValidationError(
                f"{what}: {root_path} is not empty ({len(foreign)} entries privbench did not "
                f"write: {shown}); choose a new or empty folder, or pass --force to write "
                "beside them (nothing of theirs is replaced or deleted)"
                + ("; a report of a privbench from before output manifests has no list of its "
                   "files: delete that folder's report files yourself, or write to a new folder"
                   if old_report else ""))
        self.old = self.old or {}

    # -- reading and checking ------------------------------------------------------------
    def _read_manifest(self) -> dict[str, str] | None:
        try:
            data = self._read(PurePosixPath(MANIFEST))
        except FileNotFoundError:
            return None
        try:
            files = json.loads(data.decode("utf-8"))["files"]
            return {str(p): str(h) for k, h in files.items() if (p := _clean(str(k)))}
        except (ValueError, KeyError, TypeError, AttributeError):
            return {}  # a damaged manifest owns nothing: every file is then foreign

    @contextlib.contextmanager
    def _dir(self, parts: tuple[str, ...], create: bool) -> Iterator[int]:
        """A descriptor of the folder ``parts`` below the root, no link followed."""
        fds = [self._fd]
        try:
            for i, name in enumerate(parts):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, dir_fd=fds[-1])
                try:
                    fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR) or os.path.islink(self.root.joinpath(*parts[:i + 1])):
                        raise ValidationError(
                            f"{self.what}: {self.root.joinpath(*parts[:i + 1])} is a symbolic "
                            "link or not a folder; privbench does not write or delete through "
                            "links") from None
                    raise
            yield fds[-1]
        finally:
            for fd in fds[1:]:
                os.close(fd)

    def _read(self, rel: PurePosixPath) -> bytes:
        with self._dir(rel.parts[:-1], create=False) as d:
            fd = os.open(rel.name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=d)
            with os.fdopen(fd, "rb") as fh:
                return fh.read()

    def owns(self, rel: str) -> bool:
        """Whether ``rel`` is a regular file privbench wrote here and nobody changed since."""
        p = _clean(rel)
        if p is None:
            return False
        if str(p) in self.written:
            return True
        if str(p) not in self.old:
            return False
        try:
            return _sha(self._read(p)) == self.old[str(p)]
        except OSError:
            return False

    # -- writing -------------------------------------------------------------------------
    def write(self, rel: str, data: bytes | str) -> Path:
        """Write ``data`` to ``rel`` (replacing only a file this folder owns)."""
        p = _clean(rel)
        if p is None:
            raise ValidationError(f"{self.what}: {rel!r} is not a path inside the folder")
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        with self._dir(p.parts[:-1], create=True) as d:
            try:
                st = os.stat(p.name, dir_fd=d, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and (not stat.S_ISREG(st.st_mode) or not self.owns(str(p))):
                kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a file privbench did not write"
                raise ValidationError(
                    f"{self.what}: {self.root / p} exists and is {kind}; privbench does not "
                    "replace it (move it away or choose another folder)")
            tmp = f".{p.name}.privbench-{os.getpid()}-{os.urandom(4).hex()}"
            fd = os.open(tmp, _NEW_FILE, 0o644, dir_fd=d)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(raw)
                os.replace(tmp, p.name, src_dir_fd=d, dst_dir_fd=d)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
                raise
        self.written[str(p)] = _sha(raw)
        self._save({**self.old, **self.written})
        return self.root / p

    @contextlib.contextmanager
    def open(self, rel: str) -> Iterator[io.BytesIO]:
        """A binary buffer written to ``rel`` when the block ends without an error."""
        buf = io.BytesIO()
        yield buf
        self.write(rel, buf.getvalue())

    def _save(self, files: dict[str, str]) -> None:
        body = json.dumps({"privbench": "output folder manifest: files privbench wrote here",
                           "files": dict(sorted(files.items()))}, indent=1)
        tmp = f".manifest.privbench-{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(tmp, _NEW_FILE, 0o644, dir_fd=self._fd)
        with os.fdopen(fd, "wb") as fh:
            fh.write(body.encode("utf-8"))
        os.replace(tmp, MANIFEST, src_dir_fd=self._fd, dst_dir_fd=self._fd)

    def finish(self) -> list[str]:
        """Remove what an earlier run wrote and this one did not (only files still as
        written); returns the files kept because someone changed them."""
        for rel in sorted(set(self.old) - set(self.written)):
            p = PurePosixPath(rel)
            if not self.owns(rel):
                if self._exists(p):
                    self.kept.append(rel)
                continue
            with contextlib.suppress(FileNotFoundError), self._dir(p.parts[:-1], create=False) as d:
                os.unlink(p.name, dir_fd=d)  # unlink never follows a link
        self._save(self.written)
        self.close()
        return self.kept

    def _exists(self, p: PurePosixPath) -> bool:
        try:
            with self._dir(p.parts[:-1], create=False) as d:
                os.stat(p.name, dir_fd=d, follow_symlinks=False)
            return True
        except (OSError, ValidationError):
            return False

    def close(self) -> None:
        """Release the folder's descriptor."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:  # pragma: no cover - a safety net
        with contextlib.suppress(Exception):
            self.close()


#: how a privbench export begins: its CSV header, a Parquet file holding the store's columns
_CSV_HEAD = b"id,run_key,"


def owned_export(path: Path) -> bool:
    """Whether ``path`` is a regular file that a privbench export wrote (so it may be
    replaced): a CSV whose header starts with the store's columns, or a Parquet file
    with a ``run_key`` column."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return False
        head = fh.read(64)
        if head.startswith(_CSV_HEAD):
            return True
        if head.startswith(b"PAR1"):
            fh.seek(0)
            return b"run_key" in fh.read(4 << 20)
    return False


def write_export(path: Path, write: Any, *, what: str) -> None:
    """Write one export file: ``write(file_object)`` fills a temporary file beside
    ``path``, renamed over it; an existing ``path`` that is a link or not a privbench
    export is refused (exit 2), never replaced."""
    path = Path(path)
    if os.path.lexists(path) and not owned_export(path):
        kind = "a symbolic link" if path.is_symlink() else "a file privbench did not write"
        raise ValidationError(f"{what}: {path} exists and is {kind}; privbench does not replace "
                              "it (move it away or choose another name)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.privbench-{os.getpid()}-{os.urandom(4).hex()}")
    fd = os.open(tmp, _NEW_FILE, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
