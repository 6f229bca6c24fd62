"""Behaviour shared by the real-data adapters: locating files, ``info``, ``fetch``,
the per-attribute leakage table."""

from __future__ import annotations

import csv
import io
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

import privbench as pb
from privbench.protocol.errors import DataError

from . import _files
from ._alphabet import Alphabet, attribute_mutual_information, build_alphabet

if TYPE_CHECKING:
    import pandas as pd


def check_choice(dataset: str, param: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices`` (case-insensitive), else a ValidationError."""
    text = str(value).strip().lower() if isinstance(value, str) else value
    if text not in choices:
        raise pb.ValidationError(
            f"{dataset}: {param} must be one of {', '.join(choices)}; got {value!r}"
        )
    return text


def check_flag(dataset: str, param: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise pb.ValidationError(f"{dataset}: {param} must be true or false; got {value!r}")


_WARNED: set[str] = set()


def _checked_hash(source: _files.Source, member: str, spec: _files.FileSpec) -> str:
    """sha256 of one data file (cached by path, size and mtime); warns once on a mismatch."""
    digest = _files.cached_sha256(source, member)
    official = spec.checksums.get(member)
    where = source.describe(member)
    if official and digest != official and where not in _WARNED:
        _WARNED.add(where)
        warnings.warn(f"{where} is not the official file (sha256 {digest[:12]}..., expected "
                      f"{official[:12]}...): it was edited or truncated; results from it may "
                      "differ from the published ones", UserWarning, stacklevel=3)
    return digest


class FileBackedAdapter(pb.DatasetAdapter):
    """A dataset adapter whose data are official files found by :mod:`._files`.

    Subclasses define ``file_spec()``, and take ``data_dir`` and ``download`` params.

    :param data_dir: a folder holding the data set's files (looked in before
        ``PRIVBENCH_DATA_DIR`` and the download cache; it must exist).
    :param download: fetch the official files into the cache when they are found nowhere
        (``true``/``false``; ``PRIVBENCH_OFFLINE=1`` forbids it whatever this says).
    """

    homepage: ClassVar[str] = ""
    data_dir: Any = None
    download: Any = True

    def file_spec(self) -> _files.FileSpec:
        raise NotImplementedError

    def locate(self, *, progress: bool = True) -> _files.Source:
        """Where the files are (downloading them when allowed); DataError if nowhere.

        Every file is checked against its official sha256: a mismatch (an edited or
        truncated copy) is warned about once per file and process, and the hashes go into
        the problem's ``meta["data_files"]``, hence into each run's provenance.
        """
        download = check_flag(self.name, "download", self.download)
        spec = self.file_spec()
        source = _files.locate(spec, self.data_dir, download=download, progress=progress)
        for member in spec.members:  # before any is hashed or read
            _files.check_file_size(f"{self.name}: {source.describe(member)}", source.size(member))
        source.hashes = {source.describe(m): _checked_hash(source, m, spec) for m in spec.members}
        return source

    def info(self) -> dict[str, Any]:
        """Source, licence, citation, and where the files are (never downloads)."""
        data = super().info()
        data["homepage"] = self.homepage
        try:
            spec = self.file_spec()
        except pb.PrivbenchError as exc:
            data["error"] = str(exc)
            return data
        data["needs"] = list(spec.members)
        data["downloads"] = [{"url": r.url, "sha256": r.sha256, "bytes": r.size}
                             for r in spec.remotes]
        data["cache_dir"] = str(_files.cache_dir())
        try:
            roots = _files.search_roots(self.data_dir)
        except pb.PrivbenchError as exc:
            data["error"] = str(exc)
            return data
        found = None
        for origin, root in roots:
            found = _files.find_in(root, origin, spec)
            if found is not None:
                break
        data["files"] = _files.file_info(found, spec)
        if found is None:
            data["looked_in"] = _files.looked_in(roots, spec)
            data["how_to"] = spec.how_to
        return data

    def fetch(self, force: bool = False, progress: bool = True) -> dict[str, Any]:
        """Download the official files into the cache (verified copies are kept)."""
        spec = self.file_spec()
        try:
            results = _files.fetch(spec, force=force, progress=progress)
        except pb.DataError as exc:  # how to supply the files, once (_files says it offline)
            said = not spec.how_to or spec.how_to in str(exc)
            raise pb.DataError(str(exc) if said else f"{exc}\n{spec.how_to}") from None
        return {"name": self.name, "cache_dir": str(_files.cache_dir()), "files": results,
                "fetched": any(r["downloaded"] for r in results)}


class AttributeTableMixin:
    """``attribute_mi``: the per-attribute I(A; F) table of the SPPM paper (Table 1)."""

    def load(self) -> pb.PrivacyProblem:  # pragma: no cover - provided by the adapter
        raise NotImplementedError

    def attribute_mi(self, problem: pb.PrivacyProblem | None = None, mapping: Any = None,
                     *, scope: str = "alphabet") -> pd.DataFrame:
        """I(A; F) in bits for every public attribute F, one row each.

        :param problem: a problem this adapter loaded (loaded now when omitted).
        :param mapping: optional mapping X; adds ``mi_bits_released`` = I(A; F̂), the
            "after" column of Table 1.
        :param scope: ``alphabet`` uses the prior (users in the alphabet); ``all`` uses
            every user, including those whose profile fell outside ``top_k``.
        """
        problem = problem if problem is not None else self.load()
        scope = check_choice(getattr(self, "name", "dataset"), "scope", scope, ("alphabet", "all"))
        if problem.coding is None:
            raise pb.ValidationError(f"{problem.name} has no coded profile (the 'coding' part)")
        labels = problem.coding.attribute_values
        attrs = tuple(problem.attributes or ())
        if scope == "alphabet":
            return attribute_mutual_information(problem.joint, problem.coding.profile_codes,
                                                attrs, mapping, labels)
        if mapping is not None:
            raise pb.ValidationError("scope='all' cannot use a mapping: users outside the "
                                     "alphabet have no symbol to map")
        codes = problem.coding.record_codes
        full: Alphabet = build_alphabet(codes, problem.records["private"].to_numpy(),
                                        problem.n_private, None, dataset=problem.name)
        return attribute_mutual_information(full.counts.astype(float), full.codes, attrs,
                                            None, labels)


def symbols_from_codes(codes: np.ndarray, labels: list[list[Any]]) -> list[tuple[Any, ...]]:
    """Readable symbols: each profile as a tuple of attribute values."""
    return [tuple(labels[k][int(c)] for k, c in enumerate(row)) for row in codes]


def read_table(text: str, where: str, sep: str, columns: tuple[str, ...], *,
               ints: tuple[str, ...] = (), choices: dict[str, tuple[str, ...]] | None = None) -> pd.DataFrame:
    """A headerless delimited text file as string columns (``ints`` converted to int64).

    Blank lines are skipped; ``sep`` may be several characters (MovieLens 1M's ``::``).
    The C parser reads well-formed files; otherwise a line-by-line scan raises a
    DataError naming the file, the line, the column and what was expected (never the
    value found: a message must not carry a file's contents).
    """
    import pandas as pd

    choices = choices or {}
    lines = text.replace("\r\n", "\n").split("\n")
    keep = np.fromiter((bool(x.strip()) for x in lines), dtype=bool, count=len(lines))
    numbers = np.flatnonzero(keep) + 1
    kept = [x for x, k in zip(lines, keep, strict=True) if k]
    delim = sep if len(sep) == 1 else "\x1f"
    body = "\n".join(kept if len(sep) == 1 else (x.replace(sep, delim) for x in kept))
    expected = len(columns)
    if not kept:
        raise DataError(f"{where}: the file is empty; expected {sep!r}-separated lines of "
                        f"{', '.join(columns)}")
    frame = None
    if kept:
        try:
            frame = pd.read_csv(io.StringIO(body), sep=delim, header=None, dtype=str,
                                na_filter=False, quoting=csv.QUOTE_NONE, engine="c",
                                skip_blank_lines=False)
        except (pd.errors.ParserError, ValueError):
            frame = None
        if frame is not None and (frame.shape != (len(kept), expected)
                                  or frame.isna().to_numpy().any()):
            frame = None
        if frame is not None:
            frame.columns = list(columns)
            converted = {c: pd.to_numeric(frame[c], errors="coerce") for c in ints}
            fine = all(v.notna().all() and (v == v.round()).all() for v in converted.values())
            fine = fine and all(frame[c].isin(allowed).all() for c, allowed in choices.items())
            if fine:
                for c, v in converted.items():
                    frame[c] = v.astype(np.int64)
                frame["line"] = numbers
                return frame
    # slow path: report the first bad line
    for number, line in zip(numbers.tolist(), kept, strict=True):
        fields = line.split(sep)
        if len(fields) != expected:
            raise DataError(
                f"{where}, line {number}: expected {expected} {sep!r}-separated fields "
                f"({', '.join(columns)}); found {len(fields)}"
            )
        for k, col in enumerate(columns):
            value = fields[k].strip()
            if col in ints and not value.lstrip("-").isdigit():
                raise DataError(
                    f"{where}, line {number}: {col} must be an integer (field {k + 1})"
                )
            if col in choices and value not in choices[col]:
                raise DataError(
                    f"{where}, line {number}: {col} must be one of "
                    f"{', '.join(choices[col])} (field {k + 1})"
                )
    raise DataError(f"{where}: cannot be parsed as {sep!r}-separated {', '.join(columns)}")
