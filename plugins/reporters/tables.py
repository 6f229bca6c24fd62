"""The report's tables as plain data (``{"title", "note", "header", "rows", "left"}``), which
the template draws as sortable, filterable HTML: the trade-off summary, Table 1 (per-feature
leakage), recommendation RMSE, all runs, and provenance."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb
from privbench.plugins.figures.common import informative_budgets, released_unchanged
from privbench.protocol.figure import column

if TYPE_CHECKING:
    import pandas as pd

Table = dict[str, Any]


def cell(value: Any, digits: int = 4) -> str:
    """A value as table text: floats to ``digits`` significant digits, missing as '-'."""
    if value is None or (isinstance(value, float | np.floating) and not np.isfinite(value)):
        return "-"
    if isinstance(value, float | np.floating):
        return f"{value:.{digits}g}"
    return str(value)


def table(title: str, header: list[str], rows: list[list[Any]], note: str = "", left: int = 1,
          table_id: str = "") -> Table:
    return {"title": title, "note": note, "header": header, "left": left, "id": table_id,
            "rows": [[cell(v) for v in r] for r in rows]}


def tradeoff_summary(ok: pd.DataFrame) -> Table | None:
    curves = pb.curves_of(ok)
    if len(curves) < 1:
        return None
    prior = ok["prior_mi_bits"].dropna()
    targets = pb.default_targets(float(prior.iloc[0])) if not prior.empty else []
    # ranked at the budget `privbench compare` ranks at by default (the middle stored Δ),
    # so the report and the terminal agree on the order (and both say which Δ)
    deltas = sorted(float(d) for d in ok["delta"].unique())
    rank_at = deltas[len(deltas) // 2]
    budgets = sorted(set(informative_budgets(ok)) | {rank_at})
    stopped = {label for label, flag in zip(ok["label"], column(ok, "converged"), strict=True)
               if flag is False}
    ref = pb.pick_reference([c for c in curves if c not in stopped] or list(curves))
    rows = pb.rank_rows(pb.summarise(curves, targets=targets, budgets=budgets, reference=ref),
                        rank_at)
    header = (["mechanism", "points"] + [f"I at Δ≤{b:g}" for b in budgets]
              + [f"E[d] for I≤{t:g}" for t in targets] + [f"× {ref} (I≤{t:g})" for t in targets])
    ref_gap = pb.certified_gap(ok, ref) if ref is not None else None
    body = [[r.label + (" *" if r.label in stopped else ""), r.points, *r.leakage_at.values(),
             *r.distortion_for.values(),
             *("see note" if pb.below_chord(v, ref_gap) else v for v in r.ratio.values())]
            for r in rows]
    note = (f"Ranked by I at Δ≤{rank_at:g} (the middle stored budget, where privbench compare "
            "ranks too), most private first. Read off each mechanism's Pareto curve, linear "
            "between measured points (time-sharing); '-' = not reached in the measured range.")
    if any(pb.below_chord(v, ref_gap) for r in rows for v in r.ratio.values()):
        note += (f" 'see note': a ratio below 1 against {ref}, which certifies its points "
                 "optimal, would come from where its curve was sampled (the straight segment "
                 "between two measured points, above the optimum's curve, or its least "
                 f"measured distortion), not a finding: measure {ref} at more budgets.")
    if stopped:
        note += (" * not certified: a run stopped at its cap without its certificate (gap in "
                 "the runs table); its values are upper bounds, not final.")
    return table("Trade-off summary", header, body, note=note)


def feature_leakage(ok: pd.DataFrame) -> Table | None:
    """SPPM Table 1: I(A; F) per public feature before and after, at the middle budget."""
    rows = ok.assign(fmi=column(ok, "feature_mi"))
    rows = rows[rows["fmi"].map(lambda v: bool(v))]
    if rows.empty or len(next(iter(rows["fmi"]))) < 2:
        return None
    budgets = informative_budgets(rows)
    delta = budgets[len(budgets) // 2]
    at = rows[np.isclose(rows["delta"], delta)].groupby("label").tail(1)
    # a release that changed nothing (the identity) has "after" = "before": no column
    labels = list(at.loc[~released_unchanged(at), "label"])
    if not labels:
        return None
    fmi = {r["label"]: r["fmi"] for _, r in at.iterrows()}
    features = list(fmi[labels[0]])
    body = [[f, f"{fmi[labels[0]][f]['before']:.4f}",
             *(f"{fmi[lab][f]['after']:.4f}" for lab in labels)] for f in features]
    return table(f"Table 1: I(A; F) per public feature, before and after (Δ = {delta:g})",
                 ["feature F", "before"] + [f"after {lab}" for lab in labels], body)


def recommendation_rmse(ok: pd.DataFrame) -> Table | None:
    """The quantized-mapping paper's Table I: RMSE of recommendations per test set."""
    import pandas as pd

    rows = ok.assign(r1=column(ok, "rmse_original"), r2=column(ok, "rmse_released"))
    rows = rows[rows["r1"].notna()]
    if rows.empty:
        return None
    # a release that changed nothing (the identity, at every budget) gives the original
    # ratings: one row per mechanism says it all
    same = released_unchanged(rows)
    rows = pd.concat([rows[~same], rows[same].groupby("label").head(1)])
    body = []
    for _, r in rows.sort_values(["label", "delta"]).iterrows():
        body.append([f"{r['label']} Δ={r['delta']:g}", "RMSE1 (original)", *r["r1"],
                     float(np.mean(r["r1"]))])
        body.append(["", "RMSE2 (released)", *r["r2"], float(np.mean(r["r2"]))])
    k = len(rows.iloc[0]["r1"])
    return table("Recommendation RMSE (quantized-mapping paper, Table I)",
                 ["run", "", *(f"set {i + 1}" for i in range(k)), "mean"], body, left=2)


RUN_COLUMNS = ["label", "instance", "delta", "status", "mi_bits", "prior_mi_bits", "distortion",
               "runtime_s", "n", "nnz", "support_max", "gap_bits"]


def certified_cell(run: pd.Series) -> str:
    """'yes', 'no (gap 0.246 bits)' for a run stopped at its cap without its certificate
    (``metrics.converged`` false), or '-' for a mechanism that certifies nothing."""
    converged = pb.output_of(run, "converged")
    if converged is None:
        return "-"
    if converged:
        return "yes"
    gap = run.get("gap_bits")
    ok = isinstance(gap, int | float) and np.isfinite(gap)
    return f"no (gap {gap:.3g} bits)" if ok else "no"


def run_table(df: pd.DataFrame) -> Table:
    body = []
    for _, r in df.sort_values(["instance", "label", "delta"]).iterrows():
        prov = r["provenance"] or {}
        body.append([*(r[c] if not (isinstance(r[c], float) and np.isnan(r[c])) else None
                       for c in RUN_COLUMNS),
                     certified_cell(r),
                     (prov.get("git_commit") or "-")[:12], prov.get("privbench"), r["created_at"],
                     r["error"][:120] if isinstance(r["error"], str) else ""])
    return table("All runs with provenance",
                 RUN_COLUMNS + ["certified", "git commit", "privbench", "created", "error"], body,
                 left=2, table_id="runs-table")


def _flatten(data: Any, prefix: str = "") -> dict[str, str]:
    """{"packages": {"numpy": "2.4"}} -> {"packages.numpy": "2.4"}: one row per value."""
    if isinstance(data, list) and any(isinstance(v, dict) for v in data):  # e.g. plugin lists
        return {prefix: "; ".join(" ".join(f"{k}={v[k]}" for k in sorted(v)) if isinstance(v, dict)
                                  else str(v) for v in data)}
    if not isinstance(data, dict):
        return {prefix: "" if data is None else str(data)}
    out: dict[str, str] = {}
    for key in sorted(data):
        out.update(_flatten(data[key], f"{prefix}.{key}" if prefix else str(key)))
    return out


def provenance(df: pd.DataFrame) -> Table:
    """One row per field, one column per distinct combination (software and machine)
    among the runs, with how many runs share it."""
    combos: dict[str, tuple[dict[str, str], int]] = {}
    for p in df["provenance"]:
        flat = _flatten({k: v for k, v in (p or {}).items() if k != "data_files"})
        key = json.dumps(flat, sort_keys=True)
        combos[key] = (flat, combos.get(key, (flat, 0))[1] + 1)
    columns = list(combos.values())
    fields = sorted({f for flat, _ in columns for f in flat})
    body = [[f, *(flat.get(f, "-") for flat, _ in columns)] for f in fields]
    header = ["field", *(f"{count} run{'s' if count != 1 else ''}" for _, count in columns)]
    return table("Provenance", header, body, left=len(header), table_id="provenance")
