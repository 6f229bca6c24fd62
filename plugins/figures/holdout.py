"""Learning curves of held-out evaluation (data sets with ``holdout=F``): how much data a
mapping's privacy needs. One figure per data set whose runs vary ``design_fraction``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb
from privbench.protocol.figure import column
from privbench.protocol.plugin import format_label

from .common import pick_budgets, run_key

if TYPE_CHECKING:
    import pandas as pd


def _base_instance(dataset: str, params: dict | None) -> str:
    """The data set without its design size: the runs of one learning curve."""
    rest = {k: v for k, v in (params or {}).items() if k != "design_fraction"}
    return format_label(dataset, rest)


def with_holdout(df: pd.DataFrame) -> pd.DataFrame:
    """The runs that carry held-out leakage, with ``holdout_mi_bits``, ``design_users``
    and ``base`` (the instance without its design size) as columns."""
    import pandas as pd

    out = df.assign(holdout_mi_bits=pd.to_numeric(column(df, "holdout_mi_bits"), errors="coerce"),
                    design_users=pd.to_numeric(column(df, "design_users"), errors="coerce"))
    out = out[out["holdout_mi_bits"].notna() & out["mi_bits"].notna() & out["design_users"].notna()]
    return out.assign(base=[_base_instance(d, p) for d, p in
                            zip(out["dataset"], out["dataset_params"], strict=True)])


class LearningCurve(pb.Figure):
    name = "learning-curve"
    citation = "none: privbench's held-out study"
    order = 70
    description = "held-out leakage against the number of design users, one panel per budget"
    reads = ("holdout_mi_bits", "design_users")
    scope = "dataset"

    def options(self, runs: pd.DataFrame, outputs: dict[str, Any]) -> list[dict[str, Any]]:
        pts = with_holdout(runs)
        return [{"base": base} for base, g in pts.groupby("base", sort=True)
                if g["design_users"].nunique() >= 2]

    def plot(self, runs: pd.DataFrame, base: str = "", **_: Any) -> list[dict[str, Any]]:
        g = with_holdout(runs)
        g = g[g["base"] == base]
        traces = []
        for delta in pick_budgets(list(g["delta"])):
            at = g[np.isclose(g["delta"], delta)]
            for label, h in at.groupby("label", sort=True):
                h = h.sort_values("design_users")
                text = [run_key(r) for _, r in h.iterrows()]
                common = {"x": h["design_users"].tolist(), "text": text, "style": label,
                          "panel": f"Δ = {delta:g}", "group": label}
                traces.append({**common, "y": h["holdout_mi_bits"].tolist(), "label": label,
                               "dash": "solid"})
                traces.append({**common, "y": h["mi_bits"].astype(float).tolist(),
                               "label": f"{label}, design", "dash": "dot", "width": 1,
                               "showlegend": False})
        return traces

    def get_metadata(self, runs: pd.DataFrame, base: str = "", **_: Any) -> dict[str, Any]:
        return {"title": f"Learning curve: held-out leakage against design size, {base}",
                "xlabel": "design users", "ylabel": "held-out I(A; B̂) [bits] (dotted: design)",
                "xlog": True, "caption": "One panel per budget; solid: held-out users, dotted: "
                                         "the design prior."}


@pb.hookimpl
def privbench_register_figures() -> list[type]:
    return [LearningCurve]
