"""The privacy-distortion trade-off (SPPM Figure 2), drawn under every declared privacy notion.

Every output a metric declares with a direction (lower or higher is more private) that
varies across an instance's runs gets its own figure: the notion against the distortion
E[d(B, B̂)], one curve per mechanism. No notion is named here; a metric that declares a
new one gets its figure for free.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import privbench as pb
from privbench.protocol.figure import column, has_values

from .common import aggregate, interval_keys, optimum_band

if TYPE_CHECKING:
    import pandas as pd

#: the output whose optimum I*(D) the ``optimum`` metric certifies (a band is drawn)
CERTIFIED_OUTPUT = "mi_bits"


def spans_decade(values: pd.Series) -> bool:
    """True when the positive values span more than a factor of 10 (use a log axis)."""
    import pandas as pd

    v = pd.to_numeric(values, errors="coerce")
    v = v[v > 0]
    return bool(len(v) >= 2 and float(v.max()) > 10 * float(v.min()))


#: what an infinite value means (LIP / LDP ε, maximal leakage of sparse mappings)
INF_NOTE = ("∞ (not drawn; the legend lists the budgets): the mapping has a zero where another "
            "private value has mass, so a ratio of probabilities is unbounded.")


def _any_inf(runs: pd.DataFrame, name: str) -> bool:
    import numpy as np
    import pandas as pd

    return bool(np.isinf(pd.to_numeric(column(runs, name), errors="coerce")).any())


def _varies(runs: pd.DataFrame, name: str) -> bool:
    import pandas as pd

    values = pd.to_numeric(column(runs, name), errors="coerce").dropna()
    return values.nunique() > 1


class PrivacyDistortion(pb.Figure):
    name = "privacy-distortion"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 (Figure 2)'
    order = 10
    description = "privacy-distortion trade-off under each declared privacy notion (SPPM Figure 2)"
    reads = ("distortion",)

    def applies(self, runs: pd.DataFrame) -> bool:
        return super().applies(runs) and runs["delta"].nunique() >= 2

    def options(self, runs: pd.DataFrame, outputs: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"output": name, "unit": out.unit, "direction": out.direction,
                 "about": out.description, "label": out.display}
                for name, out in outputs.items()
                if out.is_privacy and has_values(runs, name, outputs) and _varies(runs, name)]

    def plot(self, runs: pd.DataFrame, output: str = CERTIFIED_OUTPUT, **_: Any
             ) -> list[dict[str, Any]]:
        import pandas as pd

        pts = aggregate(runs, "distortion", output)
        if pts.empty:
            return []
        log = spans_decade(runs["delta"])
        floor = float(pts.loc[pts["x"] > 0, "x"].min()) / 2 if (pts["x"] > 0).any() else 1.0
        traces = []
        for label, g in pts.groupby("label", sort=True):
            g = g.sort_values(["delta", "x"])
            infinite = g["y"].map(lambda v: math.isinf(v))
            if infinite.any():  # not drawable: said in the legend (see INF_NOTE)
                label = f"{label} (∞ at Δ = {', '.join(f'{d:g}' for d in g.loc[infinite, 'delta'])})"
                g = g[~infinite]
            x = [float(v) if (v > 0 or not log) else floor for v in g["x"]]
            text = [t + (" (E[d] = 0, drawn at the left edge)" if log and v <= 0 else "")
                    for t, v in zip(g["text"], g["x"], strict=True)]
            traces.append({"x": x, "y": [float(v) for v in g["y"]], "label": label, "text": text,
                           **interval_keys(g, "x"), **interval_keys(g, "y")})
        if output == CERTIFIED_OUTPUT:
            band = optimum_band(runs.dropna(subset=["mi_bits", "distortion"]), log=log)
            if band is not None:
                grid, lower, upper = band
                traces.append({"kind": "band", "x": grid.tolist(), "y": upper.tolist(),
                               "y_low": lower.tolist(), "y_high": upper.tolist(),
                               "label": "optimum I*(D), certified band", "color": "#000000"})
        prior = pd.to_numeric(column(runs, output, "prior"), errors="coerce").dropna()
        if not prior.empty:
            traces.append({"kind": "hline", "x": [], "y": [float(prior.iloc[0])],
                           "label": "no mapping (prior)", "color": "#888888", "dash": "dot"})
        return traces

    def get_metadata(self, runs: pd.DataFrame, output: str = CERTIFIED_OUTPUT, unit: str = "",
                     about: str = "", direction: str = "lower", label: str = "", **_: Any
                     ) -> dict[str, Any]:
        log = spans_decade(runs["delta"])
        more = "lower" if direction == "lower" else "higher"
        shown = label or (f"{output} [{unit}]" if unit else output)
        meta = {"title": f"Privacy-distortion trade-off: {shown}",
                "xlabel": "distortion E[d(B, B̂)]" + (" (log)" if log else ""),
                "ylabel": shown, "xlog": log, "ymin": 0,
                "caption": f"{about or output} (output {output}); {more} is more private. "
                           "One point per budget Δ; "
                           "error bars: ± one standard deviation over replicates, or the "
                           "run's 95 % interval where it has one."}
        if _any_inf(runs, output):
            meta["caption"] += " " + INF_NOTE
        if output == CERTIFIED_OUTPUT:
            meta["caption"] += (" Grey: the certified band on the least leakage I*(D) (the "
                                "runs' optimum metric).")
        return meta


class DesignVsHoldout(pb.Figure):
    name = "design-vs-holdout"
    citation = 'Miller, Note on the bias of information estimates, 1955 (the sampling floor)'
    order = 20
    description = "leakage under the design prior and on held-out users, against Δ"
    reads = ("holdout_mi_bits", "mi_bits")

    def applies(self, runs: pd.DataFrame) -> bool:
        return super().applies(runs) and runs["delta"].nunique() >= 2

    def plot(self, runs: pd.DataFrame, **_: Any) -> list[dict[str, Any]]:
        held = aggregate(runs, "delta", "holdout_mi_bits")
        design = aggregate(runs, "delta", "mi_bits")
        traces = []
        for label, g in held.groupby("label", sort=True):
            g = g.sort_values("x")
            traces.append({"x": g["x"].tolist(), "y": g["y"].tolist(), "text": g["text"].tolist(),
                           "label": f"{label}, held out", "style": label, "dash": "solid",
                           "group": label, **interval_keys(g, "y")})
            d = design[design["label"] == label].sort_values("x")
            traces.append({"x": d["x"].tolist(), "y": d["y"].tolist(), "text": d["text"].tolist(),
                           "label": f"{label}, design", "style": label, "dash": "dot",
                           "group": label, "width": 1})
        return traces

    def get_metadata(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any]:
        return {"title": "Design vs held-out leakage", "xlabel": "budget Δ",
                "ylabel": "leakage I(A; B̂) [bits]", "ymin": 0, "xlog": spans_decade(runs["delta"]),
                "caption": "Solid: on users the prior was not estimated from; dotted: under the "
                           "design prior (what papers report). The gap is what a deployer loses."}



@pb.hookimpl
def privbench_register_figures() -> list[type]:
    return [PrivacyDistortion, DesignVsHoldout]
