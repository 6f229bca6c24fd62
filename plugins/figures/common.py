"""What the built-in figures share: one look per label, budget picking, replicates.

The looks (colour, marker, dash) are assigned once per report by :func:`assign_styles`
and read by both renderers through :func:`style`, so a label looks the same in every
figure. Figure numbers refer to the SPPM paper.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: attack keys drawn as ROC curves, in order, with their titles
ROC_KINDS = (("nb", "Naive Bayes"), ("lr", "Logistic regression"),
             ("posterior", "Bayes-optimal (exact posterior)"))


#: one look per mechanism across every figure (others get matplotlib's cycle)
STYLES = {
    "sppm": {"color": "#d62728"}, "optimal": {"color": "#000000", "ls": ":", "marker": "X"},
    "expmec": {"color": "#1f77b4"}, "quantized": {"color": "#2ca02c"},
    "identity": {"color": "#7f7f7f", "ls": ":"},
    "randomized_response": {"color": "#9467bd"},
}


#: colours for mechanisms without an entry in STYLES (picked by a stable hash of the name)
PALETTE = ("#8c564b", "#e377c2", "#bcbd22", "#17becf", "#ff7f0e", "#393b79", "#637939",
           "#843c39", "#7b4173", "#3182bd")
#: markers and line styles that tell the parameter variants of one mechanism apart
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")


#: label -> look, for every label of the report being drawn (see ``assign_styles``)
_ASSIGNED: dict[str, dict[str, Any]] = {}


def _stable_hash(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode("utf-8"))


def _base_look(base: str, color: str | None = None) -> dict[str, Any]:
    out = dict(STYLES.get(base, {}))
    out.setdefault("color", color or PALETTE[_stable_hash(base) % len(PALETTE)])
    out.setdefault("marker", "o")
    return out


def _extra_colours(count: int) -> list[str]:
    """``count`` more colours after PALETTE: hues a golden angle apart, in three
    lightnesses, so a report with more mechanisms than PALETTE still tells them apart."""
    import colorsys

    out = []
    for k in range(count):
        r, g, b = colorsys.hls_to_rgb((0.11 + 0.381966 * k) % 1.0, (0.35, 0.5, 0.65)[k % 3], 0.7)
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return out


def mechanism_colours(bases: list[str]) -> dict[str, str]:
    """One colour per mechanism, never one colour for two: STYLES' colour, else the
    PALETTE colour its name hashes to, else (taken) the next free one of PALETTE and
    then of :func:`_extra_colours`."""
    colours = {b: STYLES[b]["color"] for b in bases if "color" in STYLES.get(b, {})}
    taken = set(colours.values())
    spare = [c for c in (*PALETTE, *_extra_colours(len(bases) + len(taken))) if c not in taken]
    for base in sorted(set(bases) - set(colours)):
        preferred = PALETTE[_stable_hash(base) % len(PALETTE)]
        colour = preferred if preferred not in taken else next(c for c in spare if c not in taken)
        colours[base] = colour
        taken.add(colour)
    return colours


def assign_styles(labels: list[str]) -> None:
    """Give every label of a report its look before any figure is drawn: each mechanism
    its own colour (:func:`mechanism_colours`); its parameter variants, in sorted order,
    take distinct markers and line styles. The same label then looks the same in every
    figure."""
    _ASSIGNED.clear()
    variants: dict[str, list[str]] = {}
    for label in sorted(set(labels)):
        variants.setdefault(label.split("[", 1)[0], []).append(label)
    colours = mechanism_colours(list(variants))
    for base, group in variants.items():
        look = _base_look(base, colours[base])
        for k, label in enumerate(v for v in group if v != base):
            _ASSIGNED[label] = {**look, "marker": MARKERS[(k + 1) % len(MARKERS)],
                                "ls": LINESTYLES[((k + 1) // len(MARKERS) + 1) % len(LINESTYLES)]}
        if base in group:
            _ASSIGNED[base] = look


def style(label: str) -> dict[str, Any]:
    """Colour, marker and line style of a curve label (:func:`assign_styles`; a label
    not assigned gets its mechanism's look)."""
    return dict(_ASSIGNED.get(label) or _base_look(label.split("[", 1)[0]))


def distinct_styles(labels: list[str]) -> bool:
    """True when no two of ``labels`` share colour, marker and line style."""
    looks = [tuple(sorted(style(label).items())) for label in labels]
    return len(set(looks)) == len(looks)


def pick_budgets(deltas: list[float], count: int = 3) -> list[float]:
    """Small, middle and large budgets among the stored ones (0 left out when possible)."""
    d = sorted(set(float(x) for x in deltas))
    if len([x for x in d if x > 0]) >= count:
        d = [x for x in d if x > 0]
    if len(d) <= count:
        return d
    return [d[0], d[len(d) // 2], d[-1]]


def released_unchanged(runs: pd.DataFrame) -> pd.Series:
    """True for the runs whose release changed nothing the distortion sees (E[d(B, B̂)] =
    0: the identity, or any mechanism at a budget where it keeps the data). Tables and
    figures about what a mechanism changed leave them out, or show one row, by this
    measured fact rather than by a mechanism's name."""
    import pandas as pd

    from privbench.protocol.figure import column

    d = pd.to_numeric(column(runs, "distortion"), errors="coerce")
    return (d.abs() <= 1e-12).fillna(False).astype(bool)


def informative_budgets(df: pd.DataFrame, count: int = 3, floor: float = 0.1) -> list[float]:
    """Three budgets that show the trade-off: the smallest stored Δ, the first Δ at which
    the best mechanism is down to ``floor`` x I(A; B) (or the largest Δ), and between them
    the Δ at which the best mechanism is closest to half of I(A; B).

    The papers pick their ROC budgets the same way: nearly no distortion, enough for
    near-perfect privacy, and something in between (SPPM section 4.3).
    """
    d = sorted(set(float(x) for x in df["delta"]))
    prior = df["prior_mi_bits"].dropna()
    if len(d) <= count or prior.empty or not df["mi_bits"].notna().any():
        return pick_budgets(d, count)
    half = 0.5 * float(prior.iloc[0])
    best = df.groupby("delta")["mi_bits"].min().dropna()
    low = best[best <= floor * 2 * half]
    hi = float(low.index.min()) if not low.empty else d[-1]
    inner = best[(best.index > d[0]) & (best.index < hi)]
    if inner.empty:
        return pick_budgets([x for x in d if x <= hi], count)
    mid = float((inner - half).abs().idxmin())
    return [d[0], mid, hi]


def optimum_band(df: pd.DataFrame, points: int = 200, log: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The certified band on I*(D) that the runs' ``optimum`` metrics imply, on a grid of D
    between the least and largest certified distortion (None without two certificates).

    The grid holds every certified distortion itself (the band is exact there) and is
    spaced for the axis it is drawn on: geometric from the least positive distortion when
    ``log`` (D = 0 has no place on a log axis; a linear grid would leave the first decades
    with no sample and draw the band flat across them)."""
    import pandas as pd

    from privbench.measures.optimum import Bound, interval
    from privbench.protocol.figure import column

    lower = pd.to_numeric(column(df, "optimum_lower_bits"), errors="coerce")
    upper = pd.to_numeric(column(df, "optimum_upper_bits"), errors="coerce")
    certs = [Bound(float(d), float(lo), float(hi))
             for d, lo, hi in zip(df["distortion"], lower, upper, strict=True)
             if not (math.isnan(lo) or math.isnan(hi))]
    if len({c.distortion for c in certs}) < 2:
        return None
    known = np.array(sorted({c.distortion for c in certs}))
    if log:
        known = known[known > 0]
        if known.size < 2:
            return None
        grid = np.geomspace(known[0], known[-1], points)
    else:
        grid = np.linspace(known[0], known[-1], points)
    grid = np.union1d(grid, known)
    bounds = np.array([interval(certs, d) for d in grid])
    keep = np.isfinite(bounds).all(axis=1)
    return grid[keep], bounds[keep, 0], bounds[keep, 1]




def run_key(row: Any) -> str:
    """The run's key as the store has it (falls back to label and Δ)."""
    key = row.get("run_key") if hasattr(row, "get") else None
    return str(key) if key else f"{row['label']} Δ={row['delta']:g}"


def _spread(values: pd.Series) -> float:
    """The sample sd of replicates; NaN (no error bar) when any is inf or NaN: inf - inf has
    no spread to draw (and numpy warned "invalid value" 23-32 times per report)."""
    v = values.to_numpy(dtype=float)
    return float(np.std(v, ddof=1)) if v.size > 1 and np.isfinite(v).all() else math.nan


def aggregate(runs: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """One point per (label, Δ): the mean over replicates (runs that differ only by seed)
    with ± one standard deviation as the interval, or a single run's declared interval
    (``relation="interval"``, e.g. the bootstrap's ``mi_bits_ci95``) where it has one.
    Columns: label, delta, x, y, x_low, x_high, y_low, y_high (NaN without an interval),
    n (replicates) and text (hover)."""
    import pandas as pd

    from privbench.protocol.figure import column
    from privbench.protocol.outputs import interval_of

    frame = runs.assign(_x=pd.to_numeric(column(runs, x), errors="coerce"),
                        _y=pd.to_numeric(column(runs, y), errors="coerce")).dropna(subset=["_x", "_y"])
    rows = []
    for (label, delta), g in frame.groupby(["label", "delta"], sort=True):
        keys = [run_key(r) for _, r in g.iterrows()]
        point = {"label": label, "delta": float(delta), "x": g["_x"].mean(), "y": g["_y"].mean(),
                 "n": len(g), "x_low": np.nan, "x_high": np.nan, "y_low": np.nan, "y_high": np.nan}
        if len(g) > 1:
            sx, sy = _spread(g["_x"]), _spread(g["_y"])
            point.update(x_low=point["x"] - sx, x_high=point["x"] + sx,
                         y_low=point["y"] - sy, y_high=point["y"] + sy)
            text = f"{label} Δ={delta:g}: mean ± sd of {len(g)} replicates ({', '.join(keys[:3])}" \
                   + (", ..." if len(keys) > 3 else "") + ")"
        else:
            for axis, name in (("x", x), ("y", y)):
                ci = interval_of(g, name).iloc[0]  # the output's declared interval
                if ci is not None:
                    point[f"{axis}_low"], point[f"{axis}_high"] = ci
            text = keys[0]
        point["text"] = text
        rows.append(point)
    return pd.DataFrame(rows, columns=["label", "delta", "x", "y", "x_low", "x_high", "y_low",
                                       "y_high", "n", "text"])


def interval_keys(points: pd.DataFrame, axis: str) -> dict[str, list[float | None]]:
    """``{axis}_low``/``{axis}_high`` lists for a trace when any point has an interval."""
    import pandas as pd

    low, high = points[f"{axis}_low"], points[f"{axis}_high"]
    if not (low.notna() | high.notna()).any():
        return {}
    def clean(s: pd.Series) -> list[float | None]:
        return [None if pd.isna(v) else float(v) for v in s]
    return {f"{axis}_low": clean(low), f"{axis}_high": clean(high)}
