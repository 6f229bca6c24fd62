"""``html`` reporter: one Jinja2 page that draws every registered figure with plotly.

The page (``templates/report.html.j2``) loops over blocks: per data set and instance,
every figure plugin (``privbench_register_figures``) whose ``reads`` the runs hold, then
the tables. Figures are plain trace data rendered by
:mod:`privbench.plugins._render.render_plotly`; plotly.js is copied beside ``index.html``,
so the page works offline and from ``file://``. Each figure's data is written to
``figures/<id>.csv`` and linked; with ``static=True`` every figure is also drawn by
matplotlib to ``figures/<id>.png`` and ``.pdf`` for papers. A table figure (``type =
"table"``) is shown as a table, its rows written to ``figures/<id>.csv`` and ``.md``. The
reporter knows figures only through the protocol: it imports no figure plugin.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb
from privbench._plumbing.outdir import OutputFolder
from privbench.plugins._render.render_plotly import to_plotly
from privbench.plugins.figures import common

from . import tables

if TYPE_CHECKING:
    import pandas as pd

Block = dict[str, Any]
#: trace keys written to a figure's CSV, per point
CSV_KEYS = ("x", "y", "x_low", "x_high", "y_low", "y_high", "text")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "data"


def plotly_js() -> Path:
    """plotly.min.js as shipped inside the plotly Python package."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.exists():
        raise pb.PluginError(f"plotly.min.js not found in the plotly package ({path})")
    return path


class _Figures:
    """Draws every applicable registered figure on a set of runs into blocks, writing
    each figure's CSV (and PNG/PDF when static)."""

    def __init__(self, figures: dict[str, type], outputs: dict[str, Any], folder: OutputFolder,
                 static: bool) -> None:
        self.figures = [cls.create() for cls in sorted(figures.values(),
                                                        key=lambda c: (c.order, c.name))]
        self.outputs = outputs
        self.folder = folder
        self.fig_dir = folder.root / "figures"
        self.static = static
        self.files: list[Path] = []
        self.ids: set[str] = set()

    def blocks(self, scope: str, runs: pd.DataFrame, where: str) -> list[Block]:
        out = []
        for fig in self.figures:
            if fig.scope != scope:
                continue
            try:
                variants = fig.options(runs, self.outputs) if fig.applies(runs) else []
            except Exception as exc:  # noqa: BLE001 - a figure that fails fails its own block
                out.append({"type": "error", "text": f"figure {fig.name!r} failed on {where}: "
                                                     f"{type(exc).__name__}: {exc}"})
                continue
            for options in variants:
                block = self._draw(fig, runs, options, where)
                if block is not None:
                    out.append(block)
        return out

    def _draw(self, fig: pb.Figure, runs: pd.DataFrame, options: dict[str, Any], where: str
              ) -> Block | None:
        """One figure's block; whatever the figure returns or raises, only this block fails
        (with the reason on the page), and no file of it is written."""
        if getattr(fig, "type", "plot") == "table":
            return self._draw_table(fig, runs, options, where)
        try:
            traces = fig.plot(runs, **options)
            if not traces:
                return None
            traces = checked_traces(traces)
            meta = _metadata(fig, runs, options)
            figures = finite_json(to_plotly(traces, meta))
            csv_text = _csv_text(traces)
            title, caption = str(meta.get("title", fig.name)), str(meta.get("caption", ""))
            images = {}
            if self.static:
                from privbench.plugins._render.render_static import render_bytes

                images = {ext: render_bytes(traces, meta, ext) for ext in ("png", "pdf")}
        except Exception as exc:  # noqa: BLE001 - a figure that fails fails its own block
            return _failed(fig, where, exc)
        fid = self._id(fig, options, where)
        csv_path = self.folder.write(f"figures/{fid}.csv", csv_text)
        self.files.append(csv_path)
        self.files += [self.folder.write(f"figures/{fid}.{ext}", data) for ext, data in images.items()]
        panels = [{"div": f"{fid}-{k}", "figure": f} for k, f in enumerate(figures)]
        return {"type": "figure", "id": fid, "name": fig.name, "title": title,
                "caption": caption, "panels": panels, "csv": f"figures/{csv_path.name}"}

    def _id(self, fig: pb.Figure, options: dict[str, Any], where: str) -> str:
        fid = _slug("-".join([where, fig.name, *(str(v) for k, v in sorted(options.items())
                                                 if k in ("output", "attack", "base", "instance"))]))
        while fid in self.ids:
            fid += "-x"
        self.ids.add(fid)
        return fid

    def _draw_table(self, fig: pb.Figure, runs: pd.DataFrame, options: dict[str, Any],
                    where: str) -> Block | None:
        """A table figure's block (``type = "table"``): the rows as a page table, CSV and
        Markdown; a malformed table fails only this block."""
        try:
            t = fig.table(runs, **options)
            if not t:
                return None
            t = checked_table(t)
            meta = _metadata(fig, runs, options)
        except Exception as exc:  # noqa: BLE001 - a figure that fails fails its own block
            return _failed(fig, where, exc)
        fid = self._id(fig, options, where)
        self.files.append(self.folder.write(f"figures/{fid}.csv", _table_csv(t)))
        self.files.append(self.folder.write(f"figures/{fid}.md", _table_markdown(t)))
        return {"type": "figure-table", "id": fid, "name": fig.name,
                "title": str(meta.get("title", fig.name)), "caption": str(meta.get("caption", "")),
                "table": t, "csv": f"figures/{fid}.csv", "md": f"figures/{fid}.md"}


def checked_table(t: Any) -> dict[str, Any]:
    """A table figure's table checked before it is shown: ``header`` a list, ``rows`` a list
    of lists as long as it, ``titles``/``bad`` (optional) of the rows' shape; cells as text
    (numbers formatted), else a TypeError or ValueError saying what is wrong."""
    if not isinstance(t, dict) or not isinstance(t.get("header"), list | tuple) \
            or not isinstance(t.get("rows"), list | tuple):
        raise TypeError("table returned no dict with a 'header' list and a 'rows' list")
    header = [str(h) for h in t["header"]]
    rows = [[tables.cell(v) for v in r] for r in t["rows"]]
    shape = [len(header)] * len(rows)
    extra = {key: [list(r) for r in t[key]] for key in ("titles", "bad") if t.get(key) is not None}
    for key, grid in [("rows", rows), *extra.items()]:
        if [len(r) for r in grid] != shape:
            raise ValueError(f"table {key!r} is not {len(rows)} rows of {len(header)} cells")
    titles = [[None if v is None else str(v) for v in r] for r in extra.get("titles", [])]
    bad = [[bool(v) for v in r] for r in extra.get("bad", [])]
    return {"header": header, "rows": rows, "left": int(t.get("left", 1)), "titles": titles,
            "bad": bad, "title": "", "id": ""}


def _table_csv(t: dict[str, Any]) -> str:
    fh = io.StringIO(newline="")
    w = csv.writer(fh)
    w.writerows([t["header"], *t["rows"]])
    return fh.getvalue()


def _table_markdown(t: dict[str, Any]) -> str:
    """The table as Markdown, to paste into a document (a ``|`` in a cell becomes ``/``)."""
    lines = ["| " + " | ".join(t["header"]) + " |", "|" + "---|" * len(t["header"])]
    lines += ["| " + " | ".join(str(v).replace("|", "/") for v in r) + " |" for r in t["rows"]]
    return "\n".join(lines) + "\n"



#: the most points one figure may draw (10^6 points make a page no browser shows)
MAX_POINTS = 200_000
#: trace keys that hold one value per point
POINT_KEYS = ("x", "y", "x_low", "x_high", "y_low", "y_high", "text")


def checked_traces(traces: Any) -> list[dict[str, Any]]:
    """A figure's traces checked before anything draws them: a list of dicts whose
    per-point keys are sequences (not text), whose sizes and widths are finite numbers
    > 0, and at most :data:`MAX_POINTS` points in all; else a ValueError or TypeError
    saying which trace and key."""
    if not isinstance(traces, list | tuple):
        raise TypeError(f"plot returned {type(traces).__name__}; expected a list of trace dicts")
    out, points = [], 0
    for k, trace in enumerate(traces):
        if not isinstance(trace, dict):
            raise TypeError(f"trace {k} is {type(trace).__name__}; expected a dict")
        trace = dict(trace)
        for key in POINT_KEYS:
            value = trace.get(key)
            if value is None:
                continue
            if isinstance(value, str | bytes | dict) or not hasattr(value, "__len__"):
                raise TypeError(f"trace {k} ({str(trace.get('label', ''))[:40]}): {key} is "
                                f"{type(value).__name__} {str(value)[:20]!r}; expected a list")
            trace[key] = list(value)
        for key in ("size", "width"):
            if key in trace:
                try:
                    number = float(trace[key])
                except (TypeError, ValueError):
                    number = math.nan
                if not (math.isfinite(number) and number > 0):
                    raise ValueError(f"trace {k} ({str(trace.get('label', ''))[:40]}): {key} = "
                                     f"{str(trace[key])[:20]!r} is not a finite number > 0")
        points += max(len(trace.get("x") or []), len(trace.get("y") or []))
        if points > MAX_POINTS:
            raise ValueError(f"the figure has more than {MAX_POINTS:,} points; the report draws "
                             "at most that many per figure")
        out.append(trace)
    return out


def finite_json(value: Any) -> Any:
    """``value`` with every NaN or infinite float made None, so the page's JSON stays JSON
    (``NaN`` makes ``JSON.parse`` throw, which blanked every plot)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    if isinstance(value, np.generic):
        return finite_json(value.item())
    return value


def _csv_text(traces: list[dict[str, Any]]) -> str:
    fh = io.StringIO(newline="")
    w = csv.writer(fh)
    w.writerow(["panel", "label", "kind", *CSV_KEYS])
    for t in traces:
        xs, ys = list(t.get("x") or []), list(t.get("y") or [])
        for i in range(max(len(xs), len(ys))):
            w.writerow([t.get("panel", ""), t.get("label", ""), t.get("kind", "line"),
                        *((t.get(k) or [None] * (i + 1))[i]
                          if i < len(t.get(k) or []) else "" for k in CSV_KEYS)])
    return fh.getvalue()


def _excess_note(g: pd.DataFrame, instance: str) -> str:
    """Each mechanism's certified excess leakage at the middle budget, as sentences."""
    deltas = sorted(g["delta"].dropna().unique())
    if not deltas:
        return ""
    middle = float(deltas[len(deltas) // 2])
    lines = [pb.describe_excess(label, excess, instance) for label in sorted(g["label"].unique())
             if (excess := pb.excess_at(g, label, middle)) is not None]
    return f"At Δ = {middle:g}: " + "; ".join(lines) + "." if lines else ""


def _instance_blocks(figs: _Figures, g: pd.DataFrame, instance: str) -> list[Block]:
    n = int(g["n"].dropna().iloc[0]) if g["n"].notna().any() else None
    prior = g["prior_mi_bits"].dropna()
    blocks: list[Block] = [
        {"type": "heading", "level": 3, "id": _slug(instance), "text": instance},
        {"type": "note", "text": f"n = {n}, I(A;B) = "
                                 f"{tables.cell(float(prior.iloc[0]) if not prior.empty else None)}"
                                 f" bits, {len(g)} ok runs"}]
    blocks += figs.blocks("instance", g, instance)
    if note := _excess_note(g, instance):
        blocks.append({"type": "note", "text": note})
    for make in (tables.tradeoff_summary, tables.feature_leakage, tables.recommendation_rmse):
        if (t := make(g)) is not None:
            blocks.append({"type": "table", **t})
    return blocks


def _blocks(figs: _Figures, df: pd.DataFrame) -> tuple[list[Block], list[tuple[str, str]]]:
    blocks: list[Block] = []
    toc: list[tuple[str, str]] = []
    ok_all = df[df["status"] == "ok"]
    for adapter, runs in df.groupby("dataset", sort=True):
        ok = ok_all[ok_all["dataset"] == adapter]
        blocks.append({"type": "heading", "level": 2, "id": _slug(f"ds-{adapter}"), "text": adapter,
                       "surrogate": "surrogate" in adapter})
        blocks += figs.blocks("dataset", ok, adapter)
        for instance, g in ok.groupby("instance", sort=True):
            toc.append((_slug(instance), instance))
            blocks += _instance_blocks(figs, g, instance)
        bad = runs[runs["status"] != "ok"]
        if not bad.empty:
            blocks.append({"type": "bad", "text": f"{len(bad)} run(s) of {adapter} not ok: " + "; ".join(
                f"{r.label} Δ={r.delta:g}: {r.status} {r.error or ''}" for r in bad.head(5).itertuples())})
    blocks += _store_blocks(figs, df, toc)
    return blocks, toc


def _store_blocks(figs: _Figures, df: pd.DataFrame, toc: list[tuple[str, str]]) -> list[Block]:
    """The figures (and table figures) over the whole store."""
    store = figs.blocks("store", df, "store")
    if not store:
        return []
    toc.append(("store", "whole store"))
    return [{"type": "heading", "level": 2, "id": "store", "text": "The whole store"}, *store]


def _render(context: dict[str, Any]) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("privbench.plugins.reporters", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    # |tojson never writes NaN or Infinity (JSON.parse would throw on the whole page)
    env.policies["json.dumps_function"] = lambda obj, **kw: json.dumps(
        finite_json(obj), allow_nan=False, **kw)
    return env.get_template("report.html.j2").render(**context)


def _echo_spec(path: Path, mechanisms: dict[str, type]) -> dict[str, Any]:
    """The spec as written, and what the sweep added to it (the baselines, unless
    ``baselines = false``), so the echo shows what ran."""
    import tomllib

    text = path.read_text(encoding="utf-8")
    echo: dict[str, Any] = {"name": path.name, "text": text, "added": []}
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return echo  # the sweep that used it already read it; the text is what matters
    if data.get("baselines", True) is not True or not isinstance(data.get("mechanisms"), list):
        return echo
    named = {str(m).split(":")[0].split("[")[0].strip() for m in data["mechanisms"]}
    echo["added"] = sorted(name for name, cls in mechanisms.items()
                           if getattr(cls, "baseline", False) and name not in named)
    return echo


def build_report(db_path: Path, out_dir: Path, *, static: bool = False,
                 specs: tuple[str, ...] = (), figures: dict[str, type] | None = None,
                 outputs: dict[str, Any] | None = None, force: bool = False,
                 mechanisms: dict[str, type] | None = None) -> tuple[Path, list[Path]]:
    """Write ``index.html``, ``plotly.min.js`` and ``figures/*.csv`` (and ``*.png``/``*.pdf``
    when ``static``); returns the page and the figure files. Only files an earlier report
    wrote are replaced or removed; a non-empty folder privbench did not write is refused
    unless ``force`` (see :class:`privbench._plumbing.outdir.OutputFolder`)."""
    df = pb.load_runs(db_path)
    if "instance" in df:  # data-set seeds are replicates of one instance (figures: mean ± sd)
        df["instance"] = df["instance"].map(pb.replicate_group)
    shortened: list[tuple[str, str]] = []
    notes: list[str] = []
    if "label" in df and not df.empty:  # name + the parameters that differ; hover: full key
        short = pb.short_labels(df)
        shortened = sorted((s, full) for full, s in short.items() if s != full)
        df["label"] = df["label"].map(short)
        roles = {name: getattr(cls, "delta_role", "budget")
                 for name, cls in (mechanisms or {}).items()}
        marked = pb.delta_role_labels(df, roles)
        df["label"] = df["label"].map(marked)
        if any(m != label for label, m in marked.items()):
            notes.append(pb.DELTA_ROLE_NOTE)
        notes += [f"{label}: {note}" for label, note in pb.mechanism_notes(df).items()]
    if "label" in df:  # one look per label across every figure of the report
        common.assign_styles([str(x) for x in df["label"].dropna().unique()])
    # only what an earlier report wrote is replaced or removed (the folder's manifest)
    folder = OutputFolder(out_dir, what=f"report --out {out_dir}", force=force)
    figs = _Figures(figures or {}, outputs or {}, folder, static)
    blocks, toc = _blocks(figs, df) if not df.empty else ([], [])
    folder.write("plotly.min.js", plotly_js().read_bytes())
    context = {
        "db": str(db_path), "stamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "version": pb.__version__, "n_runs": len(df),
        "status": sorted(df["status"].value_counts().to_dict().items()) if not df.empty else [],
        "specs": [_echo_spec(Path(s), mechanisms or {}) for s in specs],
        "toc": toc, "blocks": blocks, "shortened": shortened, "label_notes": notes,
        "runs": tables.run_table(df) if not df.empty else None,
        "provenance": tables.provenance(df) if not df.empty else None,
        "plots": {p["div"]: p["figure"] for b in blocks if b["type"] == "figure" for p in b["panels"]},
    }
    index = folder.write("index.html", _render(context))
    for kept in folder.finish():
        print(f"report: kept {out_dir / kept}: changed since privbench wrote it", file=sys.stderr)
    return index, figs.files


class HtmlReporter(pb.Reporter):
    """One Jinja2 page that draws every registered figure with plotly (works offline).

    :param static: also draw every figure with matplotlib to ``figures/<id>.png`` and ``.pdf``
        (``privbench report --static``).
    :param specs: sweep files whose text the page echoes, with the baselines the sweep added
        (``privbench report --sweep`` passes its files).
    :param force: write into a non-empty folder privbench did not write, beside its files,
        replacing or deleting none of them (``--force``).
    """

    name = "html"
    citation = "none: privbench's report (plotly.js, Jinja2)"
    description = "interactive HTML page (plotly, offline) with every registered figure and table"
    default = True  # the reporter `privbench report` uses when none is named
    requirements = ("jinja2", "plotly")
    extra = "plot"

    def __init__(self, static: bool = False, specs: tuple = (), force: bool = False) -> None:
        self.static = static
        self.specs = specs
        self.force = force

    def report(self, db_path: Path, out_dir: Path) -> Path:
        return build_report(Path(db_path), Path(out_dir), static=bool(self.static),
                            specs=tuple(str(s) for s in self.specs), figures=self.figures_,
                            outputs=self.outputs_, force=bool(self.force),
                            mechanisms=getattr(self, "mechanisms_", {}))[0]


@pb.hookimpl
def privbench_register_reporters() -> list[type]:
    return [HtmlReporter]


def _metadata(fig: pb.Figure, runs: pd.DataFrame, options: dict[str, Any]) -> dict[str, Any]:
    """The figure's metadata, which must be a dict (plots and tables alike)."""
    meta = fig.get_metadata(runs, **options)
    if not isinstance(meta, dict):
        raise TypeError(f"get_metadata returned {type(meta).__name__}; expected a dict")
    return meta


def _failed(fig: pb.Figure, where: str, exc: Exception) -> Block:
    """The block that stands for a figure that failed: the reason, on the page."""
    return {"type": "error", "text": f"figure {fig.name!r} failed on {where}: "
                                     f"{type(exc).__name__}: {str(exc)[:500]}"}
