"""How mappings behave and what they cost: ROC curves of the attacks (SPPM Figures 3-4),
mapping behaviour (5), runtime against alphabet size (6) and support sizes (7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb
from privbench.protocol.figure import column, has_values

from .common import ROC_KINDS, informative_budgets, released_unchanged, run_key

if TYPE_CHECKING:
    import pandas as pd


def at_middle_budget(rows: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    """The middle of the informative budgets (where the trade-off is halfway) and the rows
    at it: the budget the papers' single-budget figures (5, 7) are drawn at."""
    budgets = informative_budgets(rows)
    delta = budgets[len(budgets) // 2]
    return delta, rows[np.isclose(rows["delta"], delta)]


class RocCurves(pb.Figure):
    name = "roc"
    citation = 'Fawcett, An introduction to ROC analysis, Pattern Recogn. Lett. 2006'
    order = 30
    description = "ROC curves of each stored attack at three budgets (SPPM Figures 3-4)"

    def applies(self, runs: pd.DataFrame) -> bool:
        return not runs.empty and runs["delta"].nunique() >= 2

    def options(self, runs: pd.DataFrame, outputs: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"attack": kind, "title": title} for kind, title in ROC_KINDS
                if has_values(runs, f"{kind}_roc")]

    def plot(self, runs: pd.DataFrame, attack: str = "posterior", **_: Any) -> list[dict[str, Any]]:
        rocs = runs.assign(roc=column(runs, f"{attack}_roc"), auc=column(runs, f"{attack}_auc"))
        rocs = rocs[rocs["roc"].notna()]
        traces = []
        for delta in informative_budgets(rocs):
            panel = f"Δ = {delta:g}"
            at = rocs[np.isclose(rocs["delta"], delta)]
            for label, g in at.groupby("label", sort=True):
                r = g.iloc[-1]
                fpr, tpr = list(r["roc"]["fpr"]), list(r["roc"]["tpr"])
                traces.append({"x": fpr, "y": tpr, "label": label, "panel": panel, "mode": "lines",
                               "text": [f"{run_key(r)} (AUC {r['auc']:.4f})"] * len(fpr)})
            traces.append({"x": [0, 1], "y": [0, 1], "label": "chance", "panel": panel,
                           "mode": "lines", "color": "#999999", "dash": "dot", "width": 1,
                           "showlegend": False})
        return traces

    def get_metadata(self, runs: pd.DataFrame, attack: str = "posterior", title: str = "",
                     **_: Any) -> dict[str, Any]:
        return {"title": f"ROC, {title or attack}", "xlabel": "false positive rate",
                "ylabel": "true positive rate", "caption": "At the smallest budget, the one "
                "where the best mechanism is halfway to private, and the first where it is "
                "nearly private (SPPM section 4.3). Hover shows each run's AUC."}


class MappingBehaviour(pb.Figure):
    name = "mapping-behaviour"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 (mapping behaviour)'
    order = 40
    description = "P(mapped to the k-th closest symbol), mean ± standard error (SPPM Figure 5)"
    reads = ("behaviour_mean",)

    def applies(self, runs: pd.DataFrame) -> bool:
        return super().applies(runs) and runs["delta"].nunique() >= 2

    def _at(self, runs: pd.DataFrame) -> tuple[float, pd.DataFrame]:
        rows = runs.assign(mean=column(runs, "behaviour_mean"), se=column(runs, "behaviour_se"))
        return at_middle_budget(rows[rows["mean"].notna()])

    def plot(self, runs: pd.DataFrame, **_: Any) -> list[dict[str, Any]]:
        _, at = self._at(runs)
        traces = []
        for label, g in at.groupby("label", sort=True):
            r = g.iloc[-1]
            mean = np.asarray(r["mean"], dtype=float)
            se = np.asarray(r["se"] if r["se"] is not None else np.zeros_like(mean), dtype=float)
            traces.append({"x": list(range(1, len(mean) + 1)), "y": mean.tolist(), "label": label,
                           "y_low": (mean - se).tolist(), "y_high": (mean + se).tolist(),
                           "text": [run_key(r)] * len(mean)})
        return traces

    def get_metadata(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any]:
        delta, _ = self._at(runs)
        return {"title": f"Mapping behaviour at Δ = {delta:g}", "xlabel": "k (1 = the symbol itself)",
                "ylabel": "P(b̂ = k-th closest symbol to b)",
                "caption": "Error bars: ± one standard error over symbols."}


class SupportSizes(pb.Figure):
    name = "support-sizes"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 (support sizes)'
    order = 50
    description = "how many symbols have a support of each size, sparse mappings (SPPM Figure 7)"
    reads = ("support_hist",)

    def _at(self, runs: pd.DataFrame) -> tuple[float, pd.DataFrame]:
        rows = runs.assign(hist=column(runs, "support_hist"))
        rows = rows[rows["hist"].notna() & (rows["support_max"] < rows["n"])
                    & ~released_unchanged(rows)]  # dense or unchanged: nothing to show
        return at_middle_budget(rows) if not rows.empty else (0.0, rows)

    def plot(self, runs: pd.DataFrame, **_: Any) -> list[dict[str, Any]]:
        _, at = self._at(runs)
        traces = []
        for label, g in at.groupby("label", sort=True):
            r = g.iloc[-1]
            hist = {int(k): int(v) for k, v in r["hist"].items()}
            sizes = sorted(hist)
            traces.append({"kind": "bar", "x": sizes, "y": [hist[s] for s in sizes],
                           "label": f"{label} (max {max(sizes)})", "style": label,
                           "text": [run_key(r)] * len(sizes)})
        return traces

    def get_metadata(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any]:
        delta, at = self._at(runs)
        n = int(at["n"].iloc[0]) if not at.empty else 0
        return {"title": f"Support sizes at Δ = {delta:g} (n = {n})",
                "xlabel": "support size of p(b̂ | b)", "ylabel": "number of symbols b"}


class RuntimeVsSize(pb.Figure):
    name = "runtime-vs-size"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 (runtime against n)'
    order = 60
    description = "median runtime against alphabet size n, per mechanism (SPPM Figure 6)"
    reads = ("runtime_s", "n")
    scope = "dataset"

    def applies(self, runs: pd.DataFrame) -> bool:
        return super().applies(runs) and runs.dropna(subset=["runtime_s", "n"])["n"].nunique() >= 3

    def plot(self, runs: pd.DataFrame, **_: Any) -> list[dict[str, Any]]:
        pts = runs.dropna(subset=["runtime_s", "n"])
        traces = []
        for label, g in pts.groupby("label", sort=True):
            med = g.groupby("n")["runtime_s"].agg(["median", "count"]).sort_index()
            traces.append({"x": [int(v) for v in med.index], "y": med["median"].tolist(),
                           "label": label, "text": [f"{label}: median of {c} runs"
                                                    for c in med["count"]]})
        return traces

    def get_metadata(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any]:
        return {"title": "Runtime vs alphabet size", "xlabel": "alphabet size n",
                "ylabel": "runtime [s] (median over budgets)", "xlog": True, "ylog": True}


@pb.hookimpl
def privbench_register_figures() -> list[type]:
    return [RocCurves, MappingBehaviour, SupportSizes, RuntimeVsSize]
