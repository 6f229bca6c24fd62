"""UCI Adult ("census") as in the SPPM paper, section 4.1.

Public B = the profile of seven attributes (age by decade, education, marital-status,
occupation, race, sex, native-country); private A = income > 50K. The alphabet is the
``top_k`` most probable profiles (300 in the paper; ``all`` keeps every profile) and the
distortion is the Hamming distance over the seven attributes.

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
    """Sorted distinct values (age decades numerically), ``?`` last."""
    import pandas as pd

    distinct = [v for v in pd.unique(values) if v != MISSING]
    key = (lambda v: int(v.split("-")[0])) if values.name == "age_decade" else str
    out = sorted(distinct, key=key)
    return out + ([MISSING] if (values == MISSING).any() else [])


class Census(RowSampledMixin, AttributeTableMixin, FileBackedAdapter):
    name = "census"
    description = ("UCI Adult: 7 public attributes, private income > 50K, top-K profiles, "
                   "Hamming distortion")
    source = "UCI Machine Learning Repository, data set 2 (Adult / Census Income)"
    homepage = "https://archive.ics.uci.edu/dataset/2/adult"
    licence = "CC BY 4.0"
    citation = ("Becker, B. and Kohavi, R. (1996). Adult. UCI Machine Learning Repository. "
                "https://doi.org/10.24432/C5XW20")
    test_parameters = {"top_k": [20]}

    def __init__(self, top_k: int | str = 300, split: str = "both", missing: str = "drop",
                 data_dir: str | None = None, download: bool = True, **sampling: Any) -> None:
        self.top_k = top_k
        self.split = split
        self.missing = missing
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

    def load(self) -> pb.PrivacyProblem:
        import pandas as pd

        top_k = parse_top_k(self.top_k, dataset=self.name)
        missing = check_choice(self.name, "missing", self.missing, ("drop", "keep"))
        sampling = self.sampling()
        frame, source = self.read_frame()
        frame.insert(0, "age_decade", age_decade(frame["age"]))
        public = frame[list(ATTRIBUTES)]
        has_missing = (public == MISSING).any(axis=1).to_numpy()
        dropped = int(has_missing.sum())
        if missing == "drop":
            frame = frame.loc[~has_missing].reset_index(drop=True)
        labels = [_categories(frame[a]) for a in ATTRIBUTES]
        codes = np.column_stack([
            pd.Categorical(frame[a], categories=labels[k]).codes for k, a in enumerate(ATTRIBUTES)
        ]) if len(frame) else np.zeros((0, len(ATTRIBUTES)), dtype=np.int64)
        private = (frame["income"] == ">50K").to_numpy().astype(np.int64)
        if len(frame) and len(np.unique(private)) < 2:
            raise pb.DataError(
                f"census: every row kept has income {PRIVATE_LABELS[int(private[0])]}; the "
                "private attribute needs at least two values for there to be anything to "
                "protect")
        sampled = sample_alphabet(codes, private, 2, top_k, sampling, dataset=self.name)
        alphabet, design = sampled.alphabet, sampled.design
        if alphabet.counts.sum() == 0:
            raise pb.DataError("census: the alphabet is empty after filtering")
        records = frame.iloc[design].reset_index(drop=True)
        records["private"] = private[design]
        records["symbol"] = alphabet.symbol
        split = check_choice(self.name, "split", self.split, tuple(SPLITS))
        name = f"census[top_k={top_k if top_k is not None else 'all'}"
        name += (f",split={split}" if split != "both" else "") + (
            f",missing={missing}" if missing != "drop" else "") + sampling.label() + "]"
        joint = sampled.joint
        features = one_hot(codes, [len(v) for v in labels])
        meta: dict[str, Any] = {
            "source": source.to_dict()["location"], "origin": source.origin,
            "files": ", ".join(source.describe(m) for m in source.paths),
            "data_files": dict(source.hashes),
            "split": split, "missing": missing, "top_k": top_k if top_k is not None else "all",
            "rows_read": int(len(has_missing)),
            "rows_with_missing": dropped,
            "rows_dropped": dropped if missing == "drop" else 0,
            **prior_summary(joint, alphabet),
            **sampled.meta(),
        }
        return pb.PrivacyProblem.from_arrays(
            joint=joint,
            distortion=pb.FeatureDistortion(alphabet.codes, "hamming"),
            symbols=symbols_from_codes(alphabet.codes, labels),
            attributes=ATTRIBUTES,
            private_labels=PRIVATE_LABELS,
            records=records,
            features=features[design],
            name=name,
            meta=meta,
            coding=pb.ProfileCoding(labels, alphabet.codes, codes[design]),
            holdout=sampled.holdout_part(frame, private, features),
        )


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [Census]
