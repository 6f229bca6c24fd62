"""SPPM's time to a certified gap against alphabet size (log-log), for ``privbench benchmark``.

Drawn next to the two references the issue asks for: the SPPM paper's claim ("within a
few minutes" for alphabets of tens of thousands, L = 100 iterations, no certificate)
and the exact solver's limit (the paper's CVX solve stops at 4,096 symbols; the dense
``optimal`` mechanism's measured times, if given, show why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

import privbench as pb

#: the paper's claim, as a box: n in [10^4, 10^5), "a few minutes" read as 1-5 minutes
PAPER_CLAIM = {"n": (1e4, 1e5), "seconds": (60.0, 300.0)}
#: the largest alphabet the paper solves exactly with CVX
PAPER_EXACT_LIMIT = 4096


class SppmScaling(pb.Figure):
    """Drawn from ``privbench benchmark`` records (``problem``, ``n``, ``time_s``,
    ``gap_bits``, ``tol_bits``, ``lp_backend``, ``mode``), not from stored runs, so it is
    not registered with the reports; ``benchmark --plot`` renders it statically."""

    name = "sppm-scaling"
    description = "SPPM's time to a certified gap against alphabet size, with the paper's claim"

    def plot(self, runs: pd.DataFrame, exact: pd.DataFrame | None = None, **_: Any
             ) -> list[dict[str, Any]]:
        traces: list[dict[str, Any]] = []
        synthetic = runs[runs["problem"].str.startswith("synthetic:")]
        for (backend, mode), g in synthetic.groupby(["lp_backend", "mode"], sort=False):
            g = g.sort_values("n")
            traces.append({"x": g["n"].tolist(), "y": g["time_s"].tolist(),
                           "label": f"SPPM ({backend}, {mode}), certified gap ≤ "
                                    f"{g['tol_bits'].iloc[0]:g} bits",
                           "text": [f"gap {v:.1e} bits" for v in g["gap_bits"]]})
        for r in runs[~runs["problem"].str.startswith("synthetic:")].itertuples():
            traces.append({"x": [r.n], "y": [r.time_s], "mode": "markers", "marker": "s", "size": 9,
                           "label": f"SPPM on {r.problem} (gap {r.gap_bits:.1e} bits)"})
        if exact is not None and not exact.empty:
            e = exact.sort_values("n")
            traces.append({"x": e["n"].tolist(), "y": e["time_s"].tolist(), "marker": "^",
                           "dash": "dash", "color": "#595959",
                           "label": "exact convex program, dense (cvxpy + Clarabel)"})
        (n0, n1), (t0, t1) = PAPER_CLAIM["n"], PAPER_CLAIM["seconds"]
        traces.append({"kind": "band", "x": [n0, n1], "y": [t1, t1], "y_low": [t0, t0],
                       "y_high": [t1, t1], "color": "#d62728",
                       "label": 'paper: "a few minutes", n ~ 10⁴–10⁵, L = 100, no certificate'})
        traces.append({"kind": "vline", "x": [PAPER_EXACT_LIMIT], "y": [], "color": "#d62728",
                       "dash": "dot", "label": f"paper's exact (CVX) solve stops at n = "
                                               f"{PAPER_EXACT_LIMIT:,}"})
        return traces

    def get_metadata(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any]:
        return {"title": "SPPM: time to a certified gap against alphabet size",
                "xlabel": "alphabet size n (synthetic data set, Δ = n / 256)",
                "ylabel": "wall time (s)", "xlog": True, "ylog": True}


def sppm_scaling_figure(rows: list[dict[str, Any]], exact_rows: list[dict[str, Any]],
                        path: str | Path) -> Path:
    """Write the figure to ``path`` (PNG or PDF, from the suffix) from ``privbench
    benchmark`` records."""
    from privbench.plugins._render.render_static import render_file

    fig = SppmScaling()
    runs = pd.DataFrame(rows)
    exact = pd.DataFrame(exact_rows) if exact_rows else None
    return render_file(fig.plot(runs, exact=exact), fig.get_metadata(runs), Path(path))
