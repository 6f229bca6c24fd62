"""UCI Adult ("census") as in the SPPM paper, section 4.1.

Public B = the profile of seven attributes (age by decade, education, marital-status,
occupation, race, sex, native-country); private A = income > 50K. The alphabet is the
``top_k`` most probable profiles (300 in the paper; ``all`` keeps every profile) and the
distortion is the Hamming distance over the seven attributes.

Other problems from the same file: ``private=`` names any Adult attribute as the UCI
documentation spells it (``marital-status``, ``race``, ``occupation``, ``education``,
``relationship``, ``workclass``, ``sex``, ...; ``age_decade`` for age by decade) and
``public=[...]`` the released ones (default: the paper's seven, less the private one).
Numeric attributes (``age``, ``education-num``, ``capital-gain``, ``capital-loss``,
``hours-per-week``, ``fnlwgt``) can be bucketed as the csv adapter does, with
``bins=[age:5,hours-per-week:4]`` (equal-count buckets). Rows with a missing value (``?``)
in the private attribute are always dropped. With the defaults the problem is the
paper's, bit for bit.

Files: ``adult.data`` and/or ``adult.test`` in the official format (comma-and-space
separated, no header, ``?`` for a missing value; ``adult.test`` starts with
``|1x3 Cross validator`` and its labels end in a dot). Rows with a missing public
attribute are dropped (``missing=drop``, the default) or kept with ``?`` as a value of
its own (``missing=keep``); missing values in columns that are not used never matter.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb

from . import _files
from ._alphabet import one_hot, parse_top_k, prior_summary
from ._common import AttributeTableMixin, FileBackedAdapter, check_choice, symbols_from_codes
from ._sampling import RowSampledMixin, sample_alphabet

if TYPE_CHECKING:
    import pandas as pd

#: the 15 columns of adult.data / adult.test (adult.names)
COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income")
INT_COLUMNS = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
               "hours-per-week")
#: public attributes, in the order of the SPPM paper's Table 1
ATTRIBUTES = ("age_decade", "education", "marital-status", "occupation", "race", "sex",
              "native-country")
PRIVATE_LABELS = ("<=50K", ">50K")
MISSING = "?"
#: the attributes ``private=`` / ``public=`` may name: the file's columns, and age by decade
CHOOSABLE = ("age_decade", *COLUMNS)

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult"
SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}
SIZES = {"adult.data": 3974305, "adult.test": 2003153}
REMOTES = {
    name: _files.Remote(url=f"{UCI}/{name}", sha256=SHA256[name], cache_name=f"adult/{name}",
                        size=SIZES[name])
    for name in SHA256
}
SPLITS = {"both": ("adult.data", "adult.test"), "train": ("adult.data",), "test": ("adult.test",)}
HOW_TO = (
    "To supply the files: put adult.data and adult.test (UCI Adult, "
    "https://archive.ics.uci.edu/dataset/2/adult) in a folder and pass data_dir=FOLDER or "
    "set PRIVBENCH_DATA_DIR=FOLDER (the folder may hold them in an adult/ sub-folder or as "
    "adult.zip), or run `privbench data fetch census` where there is internet access."
)


def parse_adult(text: str, where: str) -> pd.DataFrame:
    """Rows of an adult.data / adult.test file; a malformed line names file and line.

    Skips blank lines and lines starting with ``|`` (adult.test's first line); strips
    the trailing dot of adult.test's labels. Returns the 15 columns plus ``line``.
    Parsed by pandas' C reader; when anything looks wrong the file is scanned line by
    line to report the first bad line.
    """
    import pandas as pd

    lines = text.split("\n")
    keep = np.fromiter((bool(x.strip()) and not x.lstrip().startswith("|") for x in lines),
                       dtype=bool, count=len(lines))
    numbers = np.flatnonzero(keep) + 1
    body = "\n".join(x for x, k in zip(lines, keep, strict=True) if k)
    try:
        frame = pd.read_csv(io.StringIO(body), header=None, names=list(COLUMNS), dtype=str,
                            skipinitialspace=True, skip_blank_lines=False, na_filter=False,
                            engine="c")
    except (pd.errors.ParserError, ValueError):
        _scan_adult(lines, where)
        raise pb.DataError(f"{where}: not in the UCI Adult format") from None
    frame = frame.apply(lambda col: col.str.strip()).astype(object)
    frame["income"] = frame["income"].str.rstrip(".")
    ints = {c: pd.to_numeric(frame[c], errors="coerce") for c in INT_COLUMNS}
    ok = (len(frame) == numbers.size and frame["income"].isin(PRIVATE_LABELS).all()
          and frame["native-country"].ne("").all()
          and all((v.notna() | (frame[c] == MISSING)).all() for c, v in ints.items()))
    if not ok:
        _scan_adult(lines, where)
        raise pb.DataError(f"{where}: not in the UCI Adult format")
    for c, v in ints.items():
        frame[c] = v.astype("Int64")
    frame["line"] = numbers.astype(np.int64)
    return frame


def _scan_adult(lines: list[str], where: str) -> None:
    """Raise a DataError for the first malformed line (the slow path of parse_adult)."""
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(COLUMNS):
            raise pb.DataError(
                f"{where}, line {number}: expected {len(COLUMNS)} comma-separated fields "
                f"(UCI Adult format: {', '.join(COLUMNS)}); found {len(fields)}"
            )
        if fields[-1].rstrip(".") not in PRIVATE_LABELS:
            raise pb.DataError(
                f"{where}, line {number}: income must be <=50K or >50K (a trailing dot is "
                f"allowed; field {len(COLUMNS)})"
            )
        for col in INT_COLUMNS:
            value = fields[COLUMNS.index(col)]
            if value != MISSING and not value.lstrip("-").isdigit():
                raise pb.DataError(
                    f"{where}, line {number}: column {col!r} must be an integer "
                    f"(field {COLUMNS.index(col) + 1})"
                )


def age_decade(age: pd.Series) -> pd.Series:
    """17 -> '10-19', 42 -> '40-49'; missing ages stay missing."""
    import pandas as pd

    decade = (age // 10) * 10
    return decade.map(lambda d: MISSING if pd.isna(d) else f"{int(d)}-{int(d) + 9}")


def _categories(values: pd.Series) -> list[str]:
    """Sorted distinct values (age decades, integers and buckets numerically), ``?`` last."""
    import pandas as pd

    distinct = [v for v in pd.unique(values) if v != MISSING]
    if values.name == "age_decade":
        def key(v: str) -> Any:
            return int(v.split("-")[0])
    elif values.name in INT_COLUMNS:
        def key(v: str) -> Any:  # "37", or a bucket "(36.0, 45.0]"
            return float(v.lstrip("([").split(",")[0])
    else:
        key = str
    out = sorted(distinct, key=key)
    return out + ([MISSING] if (values == MISSING).any() else [])


def _names(value: Any, param: str) -> list[str]:
    """Attribute names from a list or a ``;``/``,``-separated string, checked against
    :data:`CHOOSABLE` (an unknown name lists the valid ones)."""
    if isinstance(value, str):
        items = value.replace(";", ",").split(",")
    elif isinstance(value, list | tuple):
        items = [str(v) for v in value]
    else:
        raise pb.ValidationError(f"census: {param} must be an attribute name or a list of "
                                 f"names; got {value!r}")
    names = [v.strip() for v in items if v.strip()]
    unknown = [v for v in names if v not in CHOOSABLE]
    if unknown or not names:
        raise pb.ValidationError(
            f"census: unknown attribute(s) {', '.join(map(repr, unknown)) or '(none named)'} "
            f"in {param}; Adult's attributes (as in adult.names): {', '.join(CHOOSABLE)}")
    return names


def choose_attributes(private: Any, public: Any) -> tuple[str, tuple[str, ...]]:
    """The private attribute and the public ones (the paper's seven, less the private one
    and, for ``age``, less age by decade, when ``public`` is not given)."""
    if not isinstance(private, str) or not private.strip():
        raise pb.ValidationError(f"census: private must be one attribute name; got {private!r}")
    (chosen,) = _names(private.strip(), "private")
    if public is None:
        skip = {chosen, "age_decade"} if chosen == "age" else {chosen}
        names = [a for a in ATTRIBUTES if a not in skip]
    else:
        names = _names(public, "public")
    dup = sorted({a for a in names if names.count(a) > 1})
    if dup:
        raise pb.ValidationError(f"census: public names {', '.join(dup)} twice")
    if chosen in names:
        raise pb.ValidationError(f"census: {chosen!r} cannot be both private and public")
    return chosen, tuple(names)


def attribute_column(frame: pd.DataFrame, name: str, n_bins: int | None) -> pd.Series:
    """One attribute as strings (``?`` where missing); ``n_bins`` equal-count buckets of a
    numeric attribute (pandas' qcut, duplicate edges dropped), labelled by interval."""
    import pandas as pd

    if name == "age_decade":
        out = age_decade(frame["age"])
    elif n_bins is not None:
        if name not in INT_COLUMNS:
            raise pb.ValidationError(f"census: bins given for {name!r}, which is not numeric "
                                     f"(numeric: {', '.join(INT_COLUMNS)})")
        cut = pd.qcut(frame[name].astype(float), q=n_bins, duplicates="drop")
        out = cut.astype(str).where(cut.notna(), MISSING)
    elif name in INT_COLUMNS:
        out = frame[name].map(lambda v: MISSING if pd.isna(v) else str(int(v)))
    else:
        out = frame[name]
    return out.astype(object).rename(name)


class Census(RowSampledMixin, AttributeTableMixin, FileBackedAdapter):
    """UCI Adult ("census") as in the SPPM paper, section 4.1.

    :param top_k: the alphabet B: the top_k most frequent public profiles among the design
        users (an integer >= 1; 300 in the paper), or ``all`` for every profile; users with
        another profile are outside the problem.
    :param split: which official file to read: ``both`` (adult.data and adult.test, 48,842
        rows), ``train`` (adult.data) or ``test`` (adult.test).
    :param missing: rows with a missing (``?``) public attribute: ``drop`` them (the paper's
        choice) or ``keep`` ``?`` as a value of its own.
    :param private: the private attribute A, as the UCI documentation spells it (``income``:
        > 50K or not, the paper's; ``sex``, ``race``, ``marital-status``, ``age_decade``, ...).
    :param public: the released attributes, a list such as ``[education,sex]`` (default: the
        paper's seven, less the private one).
    :param bins: equal-count buckets for numeric attributes: ``[age:5,hours-per-week:4]`` (each
        at least 2), or one integer for every numeric attribute used (default: none, each
        value its own category).
    """

    name = "census"
    description = ("UCI Adult: 7 public attributes, private income > 50K, top-K profiles, "
                   "Hamming distortion")
    source = "UCI Machine Learning Repository, data set 2 (Adult / Census Income)"
    homepage = "https://archive.ics.uci.edu/dataset/2/adult"
    licence = "CC BY 4.0"
    citation = ("Becker, B. and Kohavi, R. (1996). Adult. UCI Machine Learning Repository. "
                "https://doi.org/10.24432/C5XW20")
    test_parameters = {"top_k": [20]}

    def __init__(self, top_k: int | str | None = 300, split: str = "both", missing: str = "drop",
                 private: str = "income", public: list[str] | str | None = None,
                 bins: Any = None, data_dir: str | None = None, download: bool = True,
                 **sampling: Any) -> None:
        self.top_k = top_k
        self.split = split
        self.missing = missing
        self.private = private
        self.public = public
        self.bins = bins
        self.data_dir = data_dir
        self.download = download
        super().__init__(**sampling)

    def file_spec(self) -> _files.FileSpec:
        split = check_choice(self.name, "split", self.split, tuple(SPLITS))
        members = SPLITS[split]
        return _files.FileSpec(
            dataset=self.name, members=members, folders=("adult",), archives=("adult.zip",),
            remotes=tuple(REMOTES[m] for m in members),
            checksums={m: SHA256[m] for m in members}, how_to=HOW_TO,
        )

    def read_frame(self) -> tuple[pd.DataFrame, _files.Source]:
        """Every row of the chosen files, with ``split`` and ``line`` columns."""
        import pandas as pd

        source = self.locate()
        parts = []
        for member in source.paths:
            text = _files.read_text(source, member, encoding="latin-1")
            frame = parse_adult(text, source.describe(member))
            frame.insert(len(COLUMNS), "split", "train" if member == "adult.data" else "test")
            parts.append(frame)
        frame = pd.concat(parts, ignore_index=True)
        if frame.empty:
            raise pb.DataError(
                f"census: no data rows in {', '.join(source.describe(m) for m in source.paths)}"
            )
        return frame, source

    def check_params(self) -> None:
        private, public = choose_attributes(self.private, self.public)
        # the values that need no data, checked as the adapter is created (so that
        # `data info` refuses them as `run` does); load() checks them again
        parse_top_k(self.top_k, dataset=self.name)
        check_choice(self.name, "missing", self.missing, ("drop", "keep"))
        from .csv_table import _bins

        _bins(self.bins, [*public, private], dataset=self.name)
        super().check_params()

    def _columns(self, frame: pd.DataFrame, private: str, public: tuple[str, ...]
                 ) -> pd.DataFrame:
        """The chosen attributes as strings (``?`` where missing), bucketed per ``bins``."""
        import pandas as pd

        from .csv_table import _bins

        bins = _bins(self.bins, [*public, private], dataset=self.name)
        if "*" in bins:
            bins = {c: bins["*"] for c in (*public, private) if c in INT_COLUMNS}
        return pd.concat([attribute_column(frame, c, bins.get(c)) for c in (*public, private)],
                         axis=1)

    def _private(self, frame: pd.DataFrame, chosen: pd.Series
                 ) -> tuple[np.ndarray, tuple[str, ...]]:
        """Private value indices and labels (income: the paper's two, in its order)."""
        import pandas as pd

        if chosen.name == "income":
            private, labels = (chosen == ">50K").to_numpy().astype(np.int64), PRIVATE_LABELS
        else:
            labels = tuple(_categories(chosen))
            private = pd.Categorical(chosen, categories=list(labels)).codes.astype(np.int64)
        if len(frame) and len(np.unique(private)) < 2:
            raise pb.DataError(
                f"census: every row kept has {chosen.name} {labels[int(private[0])]}; the "
                "private attribute needs at least two values for there to be anything to "
                "protect")
        return private, labels

    def _label(self, top_k: int | None, split: str, missing: str, private: str,
               public: tuple[str, ...], sampling: Any) -> str:
        """The problem's name: only the parameters that differ from the paper's."""
        name = f"census[top_k={top_k if top_k is not None else 'all'}"
        name += (f",split={split}" if split != "both" else "") + (
            f",missing={missing}" if missing != "drop" else "")
        if private != "income":
            name += f",private={private}"
        if public != choose_attributes(private, None)[1]:
            name += f",public=[{','.join(public)}]"
        if self.bins is not None:
            name += f",bins={self.bins}"
        return name + sampling.label() + "]"

    def load(self) -> pb.PrivacyProblem:
        import pandas as pd

        top_k = parse_top_k(self.top_k, dataset=self.name)
        missing = check_choice(self.name, "missing", self.missing, ("drop", "keep"))
        private_name, attributes = choose_attributes(self.private, self.public)
        sampling = self.sampling()
        frame, source = self.read_frame()
        frame.insert(0, "age_decade", age_decade(frame["age"]))
        chosen = self._columns(frame, private_name, attributes)
        rows_read = len(frame)
        no_private = (chosen[private_name] == MISSING).to_numpy()
        frame, chosen = frame.loc[~no_private], chosen.loc[~no_private]
        has_missing = (chosen[list(attributes)] == MISSING).any(axis=1).to_numpy()
        dropped = int(has_missing.sum())
        if missing == "drop":
            frame = frame.loc[~has_missing].reset_index(drop=True)
            chosen = chosen.loc[~has_missing].reset_index(drop=True)
        labels = [_categories(chosen[a]) for a in attributes]
        codes = np.column_stack([
            pd.Categorical(chosen[a], categories=labels[k]).codes for k, a in enumerate(attributes)
        ]) if len(frame) else np.zeros((0, len(attributes)), dtype=np.int64)
        private, private_labels = self._private(frame, chosen[private_name])
        sampled = sample_alphabet(codes, private, len(private_labels), top_k, sampling,
                                  dataset=self.name)
        alphabet, design = sampled.alphabet, sampled.design
        if alphabet.counts.sum() == 0:
            raise pb.DataError("census: the alphabet is empty after filtering")
        records = frame.iloc[design].reset_index(drop=True)
        records["private"] = private[design]
        records["symbol"] = alphabet.symbol
        split = check_choice(self.name, "split", self.split, tuple(SPLITS))
        joint = sampled.joint
        features = one_hot(codes, [len(v) for v in labels])
        meta: dict[str, Any] = {
            "source": source.to_dict()["location"], "origin": source.origin,
            "files": ", ".join(source.describe(m) for m in source.paths),
            "data_files": dict(source.hashes),
            "split": split, "missing": missing, "top_k": top_k if top_k is not None else "all",
            "rows_read": rows_read,
            "rows_with_missing": dropped,
            "rows_dropped": dropped if missing == "drop" else 0,
            **prior_summary(joint, alphabet),
            **sampled.meta(),
        }
        if private_name != "income" or self.public is not None or self.bins is not None:
            meta.update(private=private_name, public=", ".join(attributes),
                        rows_missing_private=int(no_private.sum()))
        return pb.PrivacyProblem.from_arrays(
            joint=joint,
            distortion=pb.FeatureDistortion(alphabet.codes, "hamming"),
            symbols=symbols_from_codes(alphabet.codes, labels),
            attributes=attributes,
            private_labels=private_labels,
            records=records,
            features=features[design],
            name=self._label(top_k, split, missing, private_name, attributes, sampling),
            meta=meta,
            coding=pb.ProfileCoding(labels, alphabet.codes, codes[design]),
            holdout=sampled.holdout_part(frame, private, features),
        )


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [Census]
