"""A trace's look (colour, marker, dash, width) in one vocabulary for both renderers.

Figures name looks in matplotlib's terms (markers ``o s ^ D v P X * < > x``; dashes
``solid dash dot dashdot`` or ``- -- : -.``); a trace without explicit ones takes its
label's look from :func:`privbench.plugins.figures.common.style`.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from privbench.plugins.figures.common import style

DASHES = {"-": "solid", "--": "dash", ":": "dot", "-.": "dashdot", "solid": "solid",
          "dash": "dash", "dot": "dot", "dashdot": "dashdot"}
MPL_DASHES = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-."}
PLOTLY_MARKERS = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond",
                  "v": "triangle-down", "P": "cross", "X": "x", "*": "star", "<": "triangle-left",
                  ">": "triangle-right", "x": "x"}


def look(trace: dict[str, Any]) -> dict[str, Any]:
    """color (hex), marker (matplotlib letter), dash (plotly name), width, size."""
    base = style(str(trace.get("style") or trace.get("label", "")))
    return {"color": trace.get("color") or base.get("color", "#333333"),
            "marker": trace.get("marker") or base.get("marker", "o"),
            "dash": DASHES.get(str(trace.get("dash") or base.get("ls", "-")), "solid"),
            "width": float(trace.get("width", 2.0)), "size": float(trace.get("size", 7.0))}


def panels(traces: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Traces grouped by ``panel``, panels in the order they first appear."""
    order = list(dict.fromkeys(str(t.get("panel", "")) for t in traces))
    ranked = sorted(traces, key=lambda t: order.index(str(t.get("panel", ""))))
    return [(name, list(group)) for name, group in
            groupby(ranked, key=lambda t: str(t.get("panel", "")))]


def extent(traces: list[dict[str, Any]], axis: str, log: bool) -> tuple[float, float] | None:
    """The range of ``axis`` over the data traces (for horizontal/vertical lines)."""
    values = [float(v) for t in traces if t.get("kind", "line") not in ("hline", "vline")
              for v in t.get(axis, []) if v is not None and (not log or float(v) > 0)]
    return (min(values), max(values)) if values else None
