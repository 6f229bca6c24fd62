"""Trace data -> plotly figure JSON (one figure per panel) for the HTML report.

Hover shows the trace's label, its hover text (the run key) and the exact values; the
legend sits below the plot area, so it never covers data; dashed and marked lines stay
visible where series overlap.
"""

from __future__ import annotations

import math
from typing import Any

from .looks import PLOTLY_MARKERS, extent, look, panels

#: pixels per panel (plot area) and per legend row
PANEL_HEIGHT = 430
LEGEND_ROW = 22


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _nums(values: Any) -> list[float | None]:
    return [_num(v) for v in (values or [])]


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    if len(h) != 6:
        return f"rgba(0,0,0,{alpha})"
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{alpha})"


def _errors(trace: dict[str, Any], axis: str, values: list[float | None]) -> dict[str, Any]:
    low, high = trace.get(f"{axis}_low"), trace.get(f"{axis}_high")
    if low is None and high is None:
        return {}
    low, high = _nums(low or [None] * len(values)), _nums(high or [None] * len(values))
    plus = [None if h is None or v is None else max(h - v, 0.0) for h, v in zip(high, values, strict=False)]
    minus = [None if lo is None or v is None else max(v - lo, 0.0)
             for lo, v in zip(low, values, strict=False)]
    return {f"error_{axis}": {"type": "data", "symmetric": False, "array": plus,
                              "arrayminus": minus, "thickness": 1.2, "width": 3}}


def _hover(meta: dict[str, Any]) -> str:
    x, y = meta.get("xlabel", "x"), meta.get("ylabel", "y")
    return (f"<b>%{{fullData.name}}</b><br>%{{text}}<br>{x} = %{{x:.6g}}<br>{y} = %{{y:.6g}}"
            "<extra></extra>")


def _trace(trace: dict[str, Any], meta: dict[str, Any], siblings: list[dict[str, Any]]
           ) -> list[dict[str, Any]]:
    lk = look(trace)
    kind = trace.get("kind", "line")
    label = str(trace.get("label", ""))
    common = {"name": label, "legendgroup": str(trace.get("group", label)),
              "showlegend": bool(trace.get("showlegend", True))}
    x, y = _nums(trace.get("x")), _nums(trace.get("y"))
    if kind in ("hline", "vline"):
        axis = "x" if kind == "hline" else "y"
        span = extent(siblings, axis, bool(meta.get(f"{axis}log"))) or (0.0, 1.0)
        at = (y if kind == "hline" else x)[0]
        xs, ys = (list(span), [at, at]) if kind == "hline" else ([at, at], list(span))
        return [{**common, "type": "scatter", "mode": "lines", "x": xs, "y": ys,
                 "line": {"color": lk["color"], "dash": lk["dash"], "width": 1.2},
                 "hovertemplate": f"<b>{label}</b><br>{at:.6g}<extra></extra>"}]
    text = [str(t) for t in trace.get("text", [label] * len(x))]
    if kind == "band":
        low, high = _nums(trace.get("y_low")), _nums(trace.get("y_high"))
        edge = {"type": "scatter", "mode": "lines", "x": x, "hoverinfo": "skip",
                "line": {"width": 0.6, "color": lk["color"]}}
        return [{**edge, **common, "showlegend": False, "y": low},
                {**edge, **common, "y": high, "fill": "tonexty",
                 "fillcolor": _rgba(lk["color"], 0.18)}]
    if kind == "bar":
        return [{**common, "type": "bar", "x": x, "y": y, "text": text, "textposition": "none",
                 "marker": {"color": lk["color"]}, "hovertemplate": _hover(meta)}]
    mode = trace.get("mode", "lines+markers")
    out = {**common, "type": "scatter", "mode": mode, "x": x, "y": y, "text": text,
           "hovertemplate": _hover(meta),
           "line": {"color": lk["color"], "dash": lk["dash"], "width": lk["width"],
                    "shape": "hv" if trace.get("step") else "linear"},
           "marker": {"symbol": PLOTLY_MARKERS.get(lk["marker"], "circle"), "size": lk["size"],
                      "color": lk["color"], "line": {"width": 1, "color": "#ffffff"}},
           **_errors(trace, "x", x), **_errors(trace, "y", y)}
    return [out]


def _widths(group: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines drawn earlier are wider, so a series that coincides with a later one (SPPM
    on the optimum) still shows around it; explicit widths are kept."""
    lines = [id(t) for t in group if t.get("kind", "line") == "line" and "width" not in t]
    out = []
    for t in group:
        if id(t) in lines and len(lines) > 1:
            k = lines.index(id(t))
            t = {**t, "width": 1.5 + 3.5 * (len(lines) - 1 - k) / (len(lines) - 1)}
        out.append(t)
    return out


def _axis(meta: dict[str, Any], axis: str) -> dict[str, Any]:
    log = bool(meta.get(f"{axis}log"))
    out: dict[str, Any] = {"title": {"text": meta.get(f"{axis}label", "")},
                           "type": "log" if log else "linear", "zeroline": False,
                           "gridcolor": "#e5e5e5", "showline": True, "linecolor": "#888",
                           "mirror": True}
    if axis == "y" and meta.get("ymin") == 0 and not log:
        out["rangemode"] = "tozero"
    if axis == "x" and meta.get("xrange") and not log:
        out["range"] = list(meta["xrange"])
    return out


def to_plotly(traces: list[dict[str, Any]], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """One plotly figure (``{"data", "layout"}``) per panel of the traces."""
    figures = []
    groups = panels(traces)
    for name, group in groups:
        data = [p for t in _widths(group) for p in _trace(t, meta, group)]
        entries = sum(1 for d in data if d.get("showlegend", True))
        rows = math.ceil(entries / 3) if entries else 0
        title = name if len(groups) > 1 else ""  # the page heads a single panel
        # the toolbar stands upright in the right margin, never over a panel's title
        layout = {"title": {"text": title, "font": {"size": 14}, "x": 0, "xanchor": "left",
                            "xref": "paper"},
                  "modebar": {"orientation": "v"},
                  "xaxis": _axis(meta, "x"), "yaxis": _axis(meta, "y"),
                  "height": PANEL_HEIGHT + LEGEND_ROW * rows, "hovermode": "closest",
                  "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.16,
                             "yanchor": "top", "font": {"size": 11}},
                  "margin": {"l": 70, "r": 40, "t": 50 if title else 30,
                             "b": 70 + LEGEND_ROW * rows},
                  "plot_bgcolor": "#ffffff", "paper_bgcolor": "#ffffff"}
        if any(t.get("kind") == "bar" for t in group):
            layout["barmode"] = "group"
        figures.append({"panel": name, "data": data, "layout": layout})
    return figures
