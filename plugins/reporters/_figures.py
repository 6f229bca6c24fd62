"""The papers' figures drawn from stored runs (matplotlib, Agg backend, PNG bytes).

Each function takes the ``ok`` runs of one data set as a DataFrame (columns of the
store plus ``label``) and returns PNG bytes, or None when the runs hold nothing to
draw. Figure numbers refer to the SPPM paper.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: attack keys drawn as ROC curves, in order, with their titles
ROC_KINDS = (("nb", "Naive Bayes"), ("lr", "Logistic regression"),
             ("posterior", "Bayes-optimal (exact posterior)"))


#: one look per mechanism across every figure (others get matplotlib's cycle)
STYLES = {
    "sppm": {"color": "#d62728"}, "optimal": {"color": "#000000", "ls": "--"},
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


def _base_look(base: str) -> dict[str, Any]:
    out = dict(STYLES.get(base, {}))
    out.setdefault("color", PALETTE[_stable_hash(base) % len(PALETTE)])
    out.setdefault("marker", "o")
    return out


def assign_styles(labels: list[str]) -> None:
    """Give every label of a report its look before any figure is drawn: a mechanism
    keeps its colour; its parameter variants, in sorted order, take distinct markers and
    line styles. The same label then looks the same in every figure."""
    _ASSIGNED.clear()
    variants: dict[str, list[str]] = {}
    for label in sorted(set(labels)):
        variants.setdefault(label.split("[", 1)[0], []).append(label)
    for base, group in variants.items():
        for k, label in enumerate(v for v in group if v != base):
            _ASSIGNED[label] = {**_base_look(base), "marker": MARKERS[(k + 1) % len(MARKERS)],
                                "ls": LINESTYLES[((k + 1) // len(MARKERS) + 1) % len(LINESTYLES)]}
        if base in group:
            _ASSIGNED[base] = _base_look(base)


def style(label: str) -> dict[str, Any]:
    """Colour, marker and line style of a curve label (:func:`assign_styles`; a label
    not assigned gets its mechanism's look)."""
    return dict(_ASSIGNED.get(label) or _base_look(label.split("[", 1)[0]))


def distinct_styles(labels: list[str]) -> bool:
    """True when no two of ``labels`` share colour, marker and line style."""
    looks = [tuple(sorted(style(label).items())) for label in labels]
    return len(set(looks)) == len(looks)


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def _metric(df: pd.DataFrame, key: str) -> pd.Series:
    return df["metrics"].map(lambda m: (m or {}).get(key))


def pick_budgets(deltas: list[float], count: int = 3) -> list[float]:
    """Small, middle and large budgets among the stored ones (0 left out when possible)."""
    d = sorted(set(float(x) for x in deltas))
    if len([x for x in d if x > 0]) >= count:
        d = [x for x in d if x > 0]
    if len(d) <= count:
        return d
    return [d[0], d[len(d) // 2], d[-1]]


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


def optimum_band(df: pd.DataFrame, points: int = 200
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The certified band on I*(D) that the runs' ``optimum`` metrics imply, on a grid of D
    between the least and largest certified distortion (None without two certificates)."""
    from privbench.protocol.optimum import Bound, interval

    certs = []
    for _, row in df.iterrows():
        m = row["metrics"] if isinstance(row["metrics"], dict) else {}
        if m.get("optimum_lower_bits") is not None and m.get("optimum_upper_bits") is not None:
            certs.append(Bound(float(row["distortion"]), float(m["optimum_lower_bits"]),
                                     float(m["optimum_upper_bits"])))
    if len({c.distortion for c in certs}) < 2:
        return None
    grid = np.linspace(min(c.distortion for c in certs), max(c.distortion for c in certs), points)
    bounds = np.array([interval(certs, d) for d in grid])
    keep = np.isfinite(bounds).all(axis=1)
    return grid[keep], bounds[keep, 0], bounds[keep, 1]


def privacy_distortion(df: pd.DataFrame, title: str) -> bytes | None:
    """Figure 2: I(A; B̂) against E[d] for every mechanism, with the prior leakage and the
    certified band on the optimum I*(D) (issue 16)."""
    pts = df.dropna(subset=["mi_bits", "distortion"])
    if pts.empty:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, g in pts.groupby("label", sort=True):
        g = g.sort_values(["delta", "distortion"])
        ax.plot(g["distortion"], g["mi_bits"], ms=3, label=label, **style(label))
    band = optimum_band(pts)
    if band is not None:
        grid, lower, upper = band
        ax.fill_between(grid, lower, upper, color="black", alpha=0.18, lw=0,
                        label="optimum I*(D), certified band")
        ax.plot(grid, upper, color="black", lw=0.8)
    prior = pts["prior_mi_bits"].dropna()
    if not prior.empty:
        ax.axhline(float(prior.iloc[0]), color="grey", ls=":", lw=1, label="I(A;B), no mapping")
    if not prior.empty:  # zoom on where the mechanisms differ: until all but one are ~private
        done = [g["distortion"][g["mi_bits"] <= 0.02 * float(prior.iloc[0])].min()
                for _, g in pts.groupby("label")]
        done = sorted(x for x in done if np.isfinite(x))
        if len(done) >= 2 and done[-1] > 0:
            ax.set_xlim(0, 1.15 * done[-1])
    ax.set_xlabel("distortion E[d(B, B̂)]")
    ax.set_ylabel("leakage I(A; B̂) [bits]")
    ax.set_title(f"Privacy-distortion trade-off: {title}")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def roc_panels(df: pd.DataFrame, title: str) -> list[tuple[str, bytes]]:
    """Figures 3 and 4: ROC curves of each stored attack at three budgets."""
    out = []
    for kind, name in ROC_KINDS:
        rocs = df.assign(roc=_metric(df, f"{kind}_roc"), auc=_metric(df, f"{kind}_auc"))
        rocs = rocs[rocs["roc"].notna()]
        if rocs.empty:
            continue
        budgets = informative_budgets(rocs)
        plt = _plt()
        fig, axes = plt.subplots(1, len(budgets), figsize=(4.6 * len(budgets), 4.4), squeeze=False)
        for ax, delta in zip(axes[0], budgets, strict=True):
            at = rocs[np.isclose(rocs["delta"], delta)]
            for label, g in at.groupby("label", sort=True):
                r = g.iloc[-1]
                ax.plot(r["roc"]["fpr"], r["roc"]["tpr"], label=f"{label} (AUC {r['auc']:.3f})",
                        **style(label))
            ax.plot([0, 1], [0, 1], color="grey", ls=":", lw=1)
            ax.set_title(f"Δ = {delta:g}")
            ax.set_xlabel("false positive rate")
            ax.set_ylabel("true positive rate")
            ax.set_aspect("equal")
            ax.legend(fontsize=6.5, loc="lower right", framealpha=0.8)
        fig.suptitle(f"ROC, {name}: {title}")
        out.append((kind, _png(fig)))
    return out


def mapping_behaviour(df: pd.DataFrame, title: str) -> bytes | None:
    """Figure 5: P(mapped to the k-th closest symbol), mean ± standard error, mid budget."""
    rows = df.assign(mean=_metric(df, "behaviour_mean"), se=_metric(df, "behaviour_se"))
    rows = rows[rows["mean"].notna()]
    if rows.empty:
        return None
    budgets = informative_budgets(rows)
    delta = budgets[len(budgets) // 2]
    at = rows[np.isclose(rows["delta"], delta)]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, g in at.groupby("label", sort=True):
        r = g.iloc[-1]
        k = np.arange(1, len(r["mean"]) + 1)
        ax.errorbar(k, r["mean"], yerr=r["se"], ms=3, capsize=2, label=label,
                    **style(label))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("k (1 = the symbol itself)")
    ax.set_ylabel("P(b̂ = k-th closest symbol to b)")
    ax.set_title(f"Mapping behaviour at Δ = {delta:g}: {title}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def runtime_vs_size(df: pd.DataFrame, title: str) -> bytes | None:
    """Figure 6: median runtime against alphabet size n, per mechanism (log-log)."""
    pts = df.dropna(subset=["runtime_s", "n"])
    if pts.empty or pts["n"].nunique() < 3:  # two sizes make no scaling curve
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, g in pts.groupby("label", sort=True):
        med = g.groupby("n")["runtime_s"].median().sort_index()
        ax.plot(med.index, med.to_numpy(), ms=3, label=label, **style(label))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("alphabet size n")
    ax.set_ylabel("runtime [s] (median over budgets)")
    ax.set_title(f"Runtime vs alphabet size: {title}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _png(fig)


def support_histogram(df: pd.DataFrame, title: str) -> bytes | None:
    """Figure 7: how many symbols have a support of each size, sparse mappings at mid budget."""
    rows = df.assign(hist=_metric(df, "support_hist"))
    # dense mappings (support n) and the identity (support 1) say nothing here
    rows = rows[rows["hist"].notna() & (rows["support_max"] < rows["n"])
                & (rows["mechanism"] != "identity")]
    if rows.empty:
        return None
    budgets = informative_budgets(rows)
    delta = budgets[len(budgets) // 2]
    at = rows[np.isclose(rows["delta"], delta)]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = list(at.groupby("label", sort=True))
    width = 0.8 / max(1, len(groups))
    for g_idx, (label, g) in enumerate(groups):
        hist = {int(k): int(v) for k, v in g.iloc[-1]["hist"].items()}
        sizes = np.array(sorted(hist))
        ax.bar(sizes + (g_idx - (len(groups) - 1) / 2) * width, [hist[s] for s in sizes],
               width=width, label=f"{label} (max {sizes.max()})",
               color=style(label).get("color"))
    ax.set_xlabel("support size of p(b̂ | b)")
    ax.set_ylabel("number of symbols b")
    ax.set_title(f"Support sizes at Δ = {delta:g}: {title} (n = {int(at['n'].iloc[0])})")
    ax.legend(fontsize=8)
    return _png(fig)
