"""SPPM's time to a certified gap against alphabet size (log-log), for ``privbench benchmark``.

Drawn next to the two references the issue asks for: the SPPM paper's claim ("within a
few minutes" for alphabets of tens of thousands, L = 100 iterations, no certificate)
and the exact solver's limit (the paper's CVX solve stops at 4,096 symbols; the dense
``optimal`` mechanism's measured times, if given, show why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the paper's claim, as a box: n in [10^4, 10^5), "a few minutes" read as 1-5 minutes
PAPER_CLAIM = {"n": (1e4, 1e5), "seconds": (60.0, 300.0)}
#: the largest alphabet the paper solves exactly with CVX
PAPER_EXACT_LIMIT = 4096


def sppm_scaling_figure(rows: list[dict[str, Any]], exact_rows: list[dict[str, Any]],
                        path: str | Path) -> Path:
    """Write the figure to ``path`` (PNG) from ``privbench benchmark`` records."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    synthetic = [r for r in rows if r["problem"].startswith("synthetic:")]
    for key in dict.fromkeys((r["lp_backend"], r["mode"]) for r in synthetic):
        pts = sorted((r["n"], r["time_s"], r["gap_bits"]) for r in synthetic
                     if (r["lp_backend"], r["mode"]) == key)
        tol = next(r["tol_bits"] for r in synthetic if (r["lp_backend"], r["mode"]) == key)
        label = f"SPPM ({key[0]}, {key[1]}), certified gap ≤ {tol:g} bits"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label)
    for r in rows:
        if not r["problem"].startswith("synthetic:"):
            ax.plot(r["n"], r["time_s"], "s", ms=7,
                    label=f"SPPM on {r['problem']} (gap {r['gap_bits']:.1e} bits)")
    if exact_rows:
        pts = sorted((r["n"], r["time_s"]) for r in exact_rows)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "^--", color="0.35",
                label="exact convex program, dense (cvxpy + Clarabel)")
    (n0, n1), (t0, t1) = PAPER_CLAIM["n"], PAPER_CLAIM["seconds"]
    ax.add_patch(Rectangle((n0, t0), n1 - n0, t1 - t0, color="tab:red", alpha=0.15,
                           label='paper: "a few minutes", n ~ 10⁴–10⁵, L = 100, no certificate'))
    ax.axvline(PAPER_EXACT_LIMIT, color="tab:red", ls=":", lw=1.2,
               label=f"paper's exact (CVX) solve stops at n = {PAPER_EXACT_LIMIT:,}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("alphabet size n (synthetic data set, Δ = n / 256)")
    ax.set_ylabel("wall time (s), 2-core machine")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
