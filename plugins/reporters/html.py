"""``html`` reporter: one self-contained static page with the papers' figures and tables.

Per data set: the privacy-distortion curves (SPPM Figure 2), ROC curves at three budgets
for each stored attack (Figures 3-4), mapping behaviour (5), runtime vs alphabet size
(6), support-size histogram (7), the per-feature leakage table (Table 1), recommendation
RMSE (quantized-mapping Table I) when measured, a trade-off summary, and the run table
with provenance. Images are embedded as base64 PNG (readable without a server) and also
written to ``figures/`` beside ``index.html`` for reuse in documents.
"""

from __future__ import annotations

import base64
import html
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import privbench as pb
from privbench import curves_of, default_targets, load_runs, pick_reference, summarise

from . import _figures as figs
from . import _holdout_figures as held
from . import _solver_figures as solvers

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{border-bottom:2px solid #446}h2{margin-top:2em;border-bottom:1px solid #aab}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}
td,th{border:1px solid #ccd;padding:3px 7px;text-align:right}th{background:#eef}
td.l,th.l{text-align:left}figure{display:inline-block;margin:.5em}
img{max-width:100%;border:1px solid #ddd}.note{color:#666;font-size:13px}
.bad{color:#a00}details{margin:.5em 0}
"""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "data"


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    if isinstance(value, float | np.floating):
        return f"{value:.{digits}g}"
    return html.escape(str(value))


def _table(header: list[str], rows: list[list[Any]], left: int = 1) -> str:
    head = "".join(f'<th class="{"l" if i < left else ""}">{html.escape(h)}</th>'
                   for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{_num(v)}</td>'
                         for i, v in enumerate(r)) + "</tr>"
        for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


class _Page:
    """Collects HTML parts and figures, embedding each PNG and writing it to disk."""

    def __init__(self, out_dir: Path) -> None:
        self.parts: list[str] = []
        self.fig_dir = out_dir / "figures"
        self.fig_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.fig_dir.glob("*-fig[0-9]*.png"):  # a previous report's figures
            stale.unlink()
        self.figures: list[Path] = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def figure(self, png: bytes | None, name: str, caption: str) -> None:
        if png is None:
            return
        path = self.fig_dir / f"{name}.png"
        path.write_bytes(png)
        self.figures.append(path)
        data = base64.b64encode(png).decode("ascii")
        self.add(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
                 f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _tradeoff_section(page: _Page, ok: pd.DataFrame) -> None:
    curves = curves_of(ok)
    if len(curves) < 1:
        return
    prior = ok["prior_mi_bits"].dropna()
    targets = default_targets(float(prior.iloc[0])) if not prior.empty else []
    budgets = figs.informative_budgets(ok)
    ref = pick_reference(list(curves))
    rows = summarise(curves, targets=targets, budgets=budgets, reference=ref)
    header = (["mechanism", "points"] + [f"I at Δ≤{b:g}" for b in budgets]
              + [f"E[d] for I≤{t:g}" for t in targets] + [f"× {ref} (I≤{t:g})" for t in targets])
    body = [[r.label, r.points, *r.leakage_at.values(), *r.distortion_for.values(),
             *r.ratio.values()] for r in rows]
    page.add("<h3>Trade-off summary</h3><p class=note>Read off each mechanism's Pareto curve, "
             "linear between measured points (time-sharing); '-' = not reached in the measured "
             "range.</p>" + _table(header, body))


def _table1_section(page: _Page, ok: pd.DataFrame) -> None:
    rows = ok.assign(fmi=figs._metric(ok, "feature_mi"))
    rows = rows[rows["fmi"].map(lambda v: bool(v))]
    if rows.empty or len(next(iter(rows["fmi"]))) < 2:
        return
    budgets = figs.informative_budgets(rows)
    delta = budgets[len(budgets) // 2]
    at = rows[np.isclose(rows["delta"], delta)].groupby("label").tail(1)
    labels = [lab for lab in at["label"] if lab != "identity"]
    if not labels:
        return
    fmi = {r["label"]: r["fmi"] for _, r in at.iterrows()}
    features = list(fmi[labels[0]])
    body = [[f, f"{fmi[labels[0]][f]['before']:.4f}",
             *(f"{fmi[lab][f]['after']:.4f}" for lab in labels)] for f in features]
    page.add(f"<h3>Table 1: I(A; F) per public feature, before and after (Δ = {delta:g})</h3>"
             + _table(["feature F", "before"] + [f"after {lab}" for lab in labels], body))


def _rmse_section(page: _Page, ok: pd.DataFrame) -> None:
    rows = ok.assign(r1=figs._metric(ok, "rmse_original"), r2=figs._metric(ok, "rmse_released"))
    rows = rows[rows["r1"].notna()]
    if rows.empty:
        return
    # the identity releases the original ratings at every budget: one row says it all
    rows = pd.concat([rows[rows["mechanism"] != "identity"],
                      rows[rows["mechanism"] == "identity"].head(1)])
    body = []
    for _, r in rows.sort_values(["label", "delta"]).iterrows():
        body.append([f"{r['label']} Δ={r['delta']:g}", "RMSE1 (original)", *r["r1"],
                     float(np.mean(r["r1"]))])
        body.append(["", "RMSE2 (released)", *r["r2"], float(np.mean(r["r2"]))])
    k = len(rows.iloc[0]["r1"])
    page.add("<h3>Recommendation RMSE (quantized-mapping paper, Table I)</h3>"
             + _table(["run", "", *(f"set {i + 1}" for i in range(k)), "mean"], body, left=2))


def _run_table(page: _Page, df: pd.DataFrame) -> None:
    cols = ["label", "instance", "delta", "status", "mi_bits", "prior_mi_bits", "distortion",
            "runtime_s", "n", "nnz", "support_max", "gap_bits"]
    body = []
    for _, r in df.sort_values(["instance", "label", "delta"]).iterrows():
        prov = r["provenance"] or {}
        converged = (r["metrics"] or {}).get("converged") if isinstance(r["metrics"], dict) else None
        body.append([*(r[c] if not (isinstance(r[c], float) and np.isnan(r[c])) else None
                       for c in cols),
                     {True: "yes", False: "NO"}.get(converged, "-"),
                     (prov.get("git_commit") or "-")[:12], prov.get("privbench"), r["created_at"],
                     r["error"][:120] if isinstance(r["error"], str) else ""])
    page.add("<details><summary>All runs with provenance</summary>"
             + _table(cols + ["converged", "git commit", "privbench", "created", "error"], body,
                      left=2)
             + "</details>")


def _flatten(data: Any, prefix: str = "") -> dict[str, str]:
    """{"packages": {"numpy": "2.4"}} -> {"packages.numpy": "2.4"}: one row per value."""
    if not isinstance(data, dict):
        return {prefix: "" if data is None else str(data)}
    out: dict[str, str] = {}
    for key in sorted(data):
        out.update(_flatten(data[key], f"{prefix}.{key}" if prefix else str(key)))
    return out


def _provenance_block(df: pd.DataFrame) -> str:
    """Provenance as a table: one row per field, one column per distinct combination
    (software and machine) among the runs, with how many runs share it."""
    combos: dict[str, tuple[dict[str, str], int]] = {}
    for p in df["provenance"]:
        flat = _flatten({k: v for k, v in (p or {}).items() if k != "data_files"})
        key = json.dumps(flat, sort_keys=True)
        combos[key] = (flat, combos.get(key, (flat, 0))[1] + 1)
    columns = list(combos.values())
    fields = sorted({f for flat, _ in columns for f in flat})
    body = [[f, *(flat.get(f, "-") for flat, _ in columns)] for f in fields]
    header = ["field", *(f"{count} run{'s' if count != 1 else ''}" for _, count in columns)]
    return "<h2>Provenance</h2>" + _table(header, body, left=len(header))


def build_report(db_path: Path, out_dir: Path) -> tuple[Path, list[Path]]:
    """Write ``index.html`` and ``figures/*.png``; returns the page and the figure files."""
    df = load_runs(db_path)
    if "label" in df:  # one look per label across every figure of the report
        figs.assign_styles([str(x) for x in df["label"].dropna().unique()])
    out_dir.mkdir(parents=True, exist_ok=True)
    page = _Page(out_dir)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    page.add(f"<h1>privbench report</h1><p class=note>{len(df)} runs from "
             f"<code>{html.escape(str(db_path))}</code>, generated {stamp} by privbench "
             f"{html.escape(pb.__version__)}.</p>")
    if df.empty:
        page.add("<p>No runs stored yet.</p>")
    ok_all = df[df["status"] == "ok"]
    counts = df["status"].value_counts().to_dict()
    page.add("<p>Status: " + ", ".join(f"{v} {html.escape(k)}" for k, v in sorted(counts.items()))
             + "</p>")
    toc: list[str] = []
    toc_at = len(page.parts)
    for adapter, runs in df.groupby("dataset", sort=True):
        ok = ok_all[ok_all["dataset"] == adapter]
        if "surrogate" in adapter:
            page.add(f"<h2>{html.escape(adapter)} <span class=bad>(surrogate data)</span></h2>")
        else:
            page.add(f"<h2>{html.escape(adapter)}</h2>")
        page.figure(figs.runtime_vs_size(ok, adapter), f"{_slug(adapter)}-fig6-runtime",
                    f"Figure 6 analogue: runtime vs alphabet size, {adapter}")
        for instance, g in ok.groupby("instance", sort=True):
            slug = _slug(instance)
            n = int(g["n"].dropna().iloc[0]) if g["n"].notna().any() else None
            prior = g["prior_mi_bits"].dropna()
            toc.append(f'<li><a href="#{slug}">{html.escape(instance)}</a></li>')
            page.add(f'<h3 id="{slug}">{html.escape(instance)}</h3><p class=note>n = {n}, I(A;B) = '
                     f"{_num(float(prior.iloc[0]) if not prior.empty else None)} bits, "
                     f"{len(g)} ok runs</p>")
            if g["delta"].nunique() >= 2:  # a single budget (a scaling sweep) has no curve
                page.figure(figs.privacy_distortion(g, instance), f"{slug}-fig2-tradeoff",
                            f"Figure 2 analogue: privacy-distortion, {instance}. Grey: the "
                            "certified band on the least leakage I*(D) (the runs' optimum "
                            "metric; between two certified distortions only monotonicity and "
                            "convexity bound it, hence the steps)")
                page.add(excess_note(g, instance))
                for kind, png in figs.roc_panels(g, instance):
                    page.figure(png, f"{slug}-fig3-roc-{kind}",
                                f"Figures 3-4 analogue: ROC ({kind}) at three budgets, {instance}")
                page.figure(figs.mapping_behaviour(g, instance), f"{slug}-fig5-behaviour",
                            f"Figure 5 analogue: mapping behaviour, {instance}")
            page.figure(figs.support_histogram(g, instance), f"{slug}-fig7-support",
                        f"Figure 7 analogue: support sizes, {instance}")
            page.figure(held.design_vs_holdout(g, instance), f"{slug}-holdout",
                        f"Held-out users: design vs held-out leakage against Δ, {instance}")
            _tradeoff_section(page, g)
            _table1_section(page, g)
            _rmse_section(page, g)
        for base, png in held.learning_curves(ok):
            page.figure(png, f"{_slug(base)}-learning-curve",
                        f"Learning curve: held-out leakage against design size, {base}")
        bad = runs[runs["status"] != "ok"]
        if not bad.empty:
            page.add(f"<p class=bad>{len(bad)} run(s) of {html.escape(adapter)} not ok: "
                     + html.escape("; ".join(f"{r.label} Δ={r.delta:g}: {r.status} {r.error or ''}"
                                             for r in bad.head(5).itertuples())) + "</p>")
    if solvers.add_section(page, df, out_dir):  # only when some run has a solver trace
        toc.append('<li><a href="#solvers">solver shootout</a></li>')
    if toc:
        page.parts.insert(toc_at, f"<ul>{''.join(toc)}<li><a href=#runs>all runs</a></li></ul>")
    if not df.empty:
        page.add("<h2 id=runs>Runs</h2>")
        _run_table(page, df)
        page.add(_provenance_block(df))
    doc = ("<!doctype html><html lang=en><head><meta charset=utf-8>"
           "<title>privbench report</title>"
           f"<style>{CSS}</style></head><body>{''.join(page.parts)}</body></html>")
    index = out_dir / "index.html"
    index.write_text(doc, encoding="utf-8")
    return index, page.figures


class HtmlReporter(pb.Reporter):
    name = "html"
    description = "static HTML page with the papers' figures and tables (embedded PNG)"
    requirements = ("matplotlib",)
    extra = "plot"

    def report(self, db_path: Path, out_dir: Path) -> Path:
        return build_report(Path(db_path), Path(out_dir))[0]


@pb.hookimpl
def privbench_register_reporters() -> list[type]:
    return [HtmlReporter]


def excess_note(g: Any, instance: str) -> str:
    """Each mechanism's certified excess leakage at the middle budget, as sentences."""
    from privbench import describe_excess, excess_at

    deltas = sorted(g["delta"].dropna().unique())
    if not deltas:
        return ""
    middle = float(deltas[len(deltas) // 2])
    lines = [describe_excess(label, excess, instance) for label in sorted(g["label"].unique())
             if (excess := excess_at(g, label, middle)) is not None]
    if not lines:
        return ""
    return (f"<p class=note>At Δ = {middle:g}: " + "; ".join(html.escape(x) for x in lines)
            + ".</p>")
