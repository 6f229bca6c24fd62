"""Trace data -> matplotlib (PNG/PDF) for papers: ``privbench report --static`` and
``privbench benchmark --plot``. Same looks as the HTML figures; panels side by side."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .looks import MPL_DASHES, extent, look, panels


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _arr(values: Any) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in (values or [])], dtype=float)


def _draw(ax: Any, trace: dict[str, Any], meta: dict[str, Any], group: list[dict[str, Any]]) -> None:
    lk = look(trace)
    kind = trace.get("kind", "line")
    label = None if trace.get("showlegend", True) is False else trace.get("label")
    ls = MPL_DASHES.get(lk["dash"], "-")
    if kind == "hline":
        ax.axhline(float(trace["y"][0]), color=lk["color"], ls=ls, lw=1, label=label)
        return
    if kind == "vline":
        ax.axvline(float(trace["x"][0]), color=lk["color"], ls=ls, lw=1.2, label=label)
        return
    x, y = _arr(trace.get("x")), _arr(trace.get("y"))
    if kind == "band":
        ax.fill_between(x, _arr(trace.get("y_low")), _arr(trace.get("y_high")), color=lk["color"],
                        alpha=0.18, lw=0, label=label)
        return
    if kind == "bar":
        bars = [t for t in group if t.get("kind") == "bar"]
        width = 0.8 / max(1, len(bars))
        offset = (bars.index(trace) - (len(bars) - 1) / 2) * width
        ax.bar(x + offset, y, width=width, color=lk["color"], label=label)
        return
    mode = trace.get("mode", "lines+markers")
    kw = {"color": lk["color"], "label": label, "lw": lk["width"] * 0.75,
          "ls": ls if "lines" in mode else "none",
          "marker": lk["marker"] if "markers" in mode else None, "ms": lk["size"] * 0.5}
    if trace.get("step"):
        kw["drawstyle"] = "steps-post"
    yerr = _err(trace, "y", y)
    xerr = _err(trace, "x", x)
    if yerr is not None or xerr is not None:
        ax.errorbar(x, y, yerr=yerr, xerr=xerr, capsize=2, **kw)
    else:
        ax.plot(x, y, **kw)


def _err(trace: dict[str, Any], axis: str, v: np.ndarray) -> np.ndarray | None:
    low, high = trace.get(f"{axis}_low"), trace.get(f"{axis}_high")
    if low is None and high is None:
        return None
    lo = _arr(low) if low is not None else v
    hi = _arr(high) if high is not None else v
    return np.nan_to_num(np.vstack([np.maximum(v - lo, 0), np.maximum(hi - v, 0)]))


def render(traces: list[dict[str, Any]], meta: dict[str, Any]) -> Any:
    """A matplotlib figure: one axes per panel, at most three per row."""
    plt = _plt()
    groups = panels(traces) or [("", [])]
    cols = min(3, len(groups))
    rows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False)
    for ax, (name, group) in zip(axes.flat, groups, strict=False):
        for trace in group:
            _draw(ax, trace, meta, group)
        if meta.get("xlog"):
            ax.set_xscale("log")
        if meta.get("ylog"):
            ax.set_yscale("log")
        elif meta.get("ymin") == 0 and extent(group, "y", False) is not None:
            ax.set_ylim(bottom=0)
        ax.set_xlabel(meta.get("xlabel", ""))
        ax.set_ylabel(meta.get("ylabel", ""))
        ax.set_title(name if len(groups) > 1 else meta.get("title", ""), fontsize=9)
        ax.grid(alpha=0.3, which="both")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    if len(groups) > 1:
        fig.suptitle(meta.get("title", ""), fontsize=10)
    fig.tight_layout()
    return fig


def render_bytes(traces: list[dict[str, Any]], meta: dict[str, Any], fmt: str) -> bytes:
    """The figure as the bytes of a ``fmt`` file (png, pdf, svg), for a caller that
    writes it itself (the report's output folder)."""
    import io

    fig = render(traces, meta)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt, dpi=130, bbox_inches="tight")
    finally:
        _plt().close(fig)
    return buf.getvalue()


def render_file(traces: list[dict[str, Any]], meta: dict[str, Any], path: Path) -> Path:
    """Write the figure to ``path`` (format from its suffix: .png, .pdf, .svg)."""
    fig = render(traces, meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    _plt().close(fig)
    return path
