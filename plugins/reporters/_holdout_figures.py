"""Figures of held-out evaluation (data sets with ``holdout=F``): how much of a mapping's
privacy survives on users the prior was not estimated from, and how much data it needs.

Same conventions as :mod:`._figures`: the ``ok`` runs as a DataFrame, PNG bytes or None.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privbench.protocol.plugin import format_label

from ._figures import _metric, _plt, _png, pick_budgets, style


def with_holdout(df: pd.DataFrame) -> pd.DataFrame:
    """The runs that carry held-out leakage, with ``holdout_mi_bits`` and ``design_users``
    as columns."""
    out = df.assign(holdout_mi_bits=_metric(df, "holdout_mi_bits"),
                    design_users=_metric(df, "design_users"))
    return out[out["holdout_mi_bits"].notna() & out["mi_bits"].notna()]


def design_vs_holdout(df: pd.DataFrame, title: str) -> bytes | None:
    """I(A; B̂) against Δ per mechanism: under the design prior (the number every paper
    reports, dotted) and on the held-out users (solid). The gap is what a deployer loses."""
    pts = with_holdout(df)
    if pts.empty or pts["delta"].nunique() < 2:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, g in pts.groupby("label", sort=True):
        g = g.sort_values("delta")
        look = style(label)
        ax.plot(g["delta"], g["holdout_mi_bits"], ms=3, label=f"{label}, held out",
                **{**look, "ls": "-"})
        ax.plot(g["delta"], g["mi_bits"], ms=2, lw=1, alpha=0.7, label=f"{label}, design",
                **{**look, "ls": ":"})
    ax.set_xlabel("budget Δ")
    ax.set_ylabel("leakage I(A; B̂) [bits]")
    ax.set_title(f"Design vs held-out leakage: {title}", fontsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _png(fig)


def _base_instance(dataset: str, params: dict | None) -> str:
    """The data set without its design size: the runs of one learning curve."""
    rest = {k: v for k, v in (params or {}).items() if k != "design_fraction"}
    return format_label(dataset, rest)


def learning_curves(df: pd.DataFrame) -> list[tuple[str, bytes]]:
    """Held-out leakage against the number of design users, one panel per budget (three
    at most), one line per mechanism; the design leakage dotted. One figure per data set
    whose runs vary ``design_fraction``."""
    pts = with_holdout(df)
    if pts.empty:
        return []
    pts = pts.assign(base=[_base_instance(d, p) for d, p in
                           zip(pts["dataset"], pts["dataset_params"], strict=True)])
    out = []
    for base, g in pts.groupby("base", sort=True):
        g = g[g["design_users"].notna()]
        if g["design_users"].nunique() < 2:
            continue
        budgets = pick_budgets(list(g["delta"]))
        plt = _plt()
        fig, axes = plt.subplots(1, len(budgets), figsize=(4.2 * len(budgets), 3.6),
                                 squeeze=False, sharey=True)
        for ax, delta in zip(axes[0], budgets, strict=True):
            at = g[np.isclose(g["delta"], delta)]
            for label, h in at.groupby("label", sort=True):
                h = h.sort_values("design_users")
                look = style(label)
                ax.plot(h["design_users"], h["holdout_mi_bits"], ms=3, label=label,
                        **{**look, "ls": "-"})
                ax.plot(h["design_users"], h["mi_bits"], ms=2, lw=1, alpha=0.6,
                        **{**look, "ls": ":"})
            ax.set_xscale("log")
            ax.set_xlabel("design users")
            ax.set_title(f"Δ = {delta:g}", fontsize=9)
            ax.grid(alpha=0.3, which="both")
        axes[0][0].set_ylabel("held-out I(A; B̂) [bits] (dotted: design)")
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"Learning curve: {base}", fontsize=9)
        out.append((base, _png(fig)))
    return out
