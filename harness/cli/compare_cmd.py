"""``privbench compare``: mechanisms side by side at matched distortion and matched leakage.

For every data set in the store, each mechanism's (E[d], I(A; B̂)) points become a Pareto
curve (``privbench.results.pareto``); the table shows the leakage each reaches within the given
budgets, the distortion each needs to bring the leakage below the targets, and that
distortion as a multiple of the reference mechanism's ("expmec needs 8x sppm").
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from privbench.protocol.errors import ValidationError
from privbench.results.fingerprints import FOOTNOTE, MARK, other_code
from privbench.results.pareto import default_targets, pick_reference, summarise
from privbench.results.store import DEFAULT_DB
from privbench.results.views import curves_of, describe_excess, excess_at, load_runs
from privbench.running.fingerprint import current_hash


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="table of mechanisms at matched distortion and leakage")
    p.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"results store (default {DEFAULT_DB})")
    p.add_argument("--dataset", help="only data sets whose name contains this text")
    p.add_argument("--target", type=float, action="append", metavar="BITS",
                   help="leakage target I(A;B̂) <= BITS (repeatable; default 25%% and 10%% of I(A;B))")
    p.add_argument("--budget", type=float, action="append", metavar="DELTA",
                   help="distortion budget (repeatable; default: the middle stored Δ)")
    p.add_argument("--reference", help="mechanism label for ratios (default sppm, else optimal)")
    p.set_defaults(func=run)


#: what an empty cell means, by column kind (each explained under the table)
NOT_REACHED = "not reached"   # E[d] for I<=t: no measured point reaches the target
BELOW_CURVE = "< its min E[d]"  # I at Δ<=b: the mechanism's least distortion exceeds b
NO_RATIO = "n/a"               # ratio: this mechanism or the reference did not reach it
NO_CERTIFICATE = "uncertified"  # excess: no run at that budget, or no optimum certificate


def _f(v: float | None, empty: str) -> str:
    if v is None:
        return empty
    return "inf" if v == float("inf") else f"{v:.4g}"


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    for flag, values in (("--target", args.target), ("--budget", args.budget)):
        for v in values or ():
            if not math.isfinite(v) or v < 0:
                raise ValidationError(f"{flag} must be a finite number >= 0; got {v!r}")
    df = load_runs(args.db)
    ok = df[df["status"] == "ok"] if not df.empty else df
    if args.dataset:
        ok = ok[ok["instance"].str.contains(args.dataset, regex=False)]
    if ok.empty:
        raise ValidationError(f"no ok runs in {args.db}" + (f" matching {args.dataset!r}"
                                                             if args.dataset else ""))
    console = Console()
    if not console.is_terminal:  # piped into a file or README: do not squeeze to 80 columns
        console = Console(width=160)
    for instance, g in ok.groupby("instance", sort=True):
        curves = curves_of(g)
        prior = float(g["prior_mi_bits"].dropna().iloc[0]) if g["prior_mi_bits"].notna().any() else 0.0
        targets = args.target or default_targets(prior)
        deltas = sorted(g["delta"].unique())
        budgets = args.budget or [float(deltas[len(deltas) // 2])]
        ref = args.reference or pick_reference(list(curves))
        if ref not in curves:
            raise ValidationError(f"reference {ref!r} has no runs on {instance}; "
                                  f"have: {', '.join(curves)}")
        rows = summarise(curves, targets=targets, budgets=budgets, reference=ref)
        table = Table(title=escape(f"{instance}: n = {int(g['n'].max())}, I(A;B) = {prior:.4g} bits"))
        table.add_column("mechanism", no_wrap=True, min_width=min(40, max(map(len, curves))))
        table.add_column("points", justify="right")
        for b in budgets:
            table.add_column(escape(f"I at Δ≤{b:g}"), justify="right")
            table.add_column(escape(f"excess at Δ={b:g}"), justify="right")
        for t in targets:
            table.add_column(escape(f"E[d] for I≤{t:g}"), justify="right")
            table.add_column(escape(f"× {ref}"), justify="right")
        other = set(g.loc[other_code(g, current_hash), "label"])
        for r in rows:
            cells = [escape(r.label) + (MARK if r.label in other else ""), str(r.points)]
            for b in budgets:
                cells += [_f(r.leakage_at[b], BELOW_CURVE), _excess_cell(excess_at(g, r.label, b))]
            for t in targets:
                cells += [_f(r.distortion_for[t], NOT_REACHED), _f(r.ratio[t], NO_RATIO)]
            table.add_row(*cells)
        console.print(table)
        for r in rows:
            for t in targets:
                ratio = r.ratio[t]
                if r.label != ref and ratio is not None and ratio != float("inf"):
                    console.print(escape(f"  {r.label} needs {ratio:.2g}x the distortion of {ref} "
                                  f"to bring I(A;B̂) to {t:g} bits"), highlight=False)
        for r in rows:
            for b in budgets:
                excess = excess_at(g, r.label, b)
                if excess is not None and excess["min"] > 1e-3:
                    console.print("  " + escape(describe_excess(r.label, excess, str(instance))),
                                  highlight=False)
        console.print("  [dim]" + escape(
            "'excess at Δ': the run at that budget leaks this much more (bits, a certified "
            "interval) than the least leakage possible at the run's own distortion E[d] (the "
            "optimum metric)") + "[/]", highlight=False)
        _explain_empty_cells(console, rows, budgets, targets, g)
        if other:
            console.print("  [dim]" + escape(FOOTNOTE) + "[/]", highlight=False)
        _note_unconverged(console, g)
    return 0


def _excess_cell(excess: dict[str, float] | None) -> str:
    if excess is None:
        return NO_CERTIFICATE
    if excess["max"] - excess["min"] < 5e-4:
        return f"{0.5 * (excess['min'] + excess['max']):.3g}"
    return f"{excess['min']:.3g}–{excess['max']:.3g}"


def _explain_empty_cells(console: Any, rows: list[Any], budgets: list[float],
                         targets: list[float], runs: Any) -> None:
    """One line per kind of empty cell that occurs, naming the mechanisms."""
    from rich.markup import escape

    kinds = (
        (NOT_REACHED, "no measured budget brings I(A;B̂) to the target",
         [r.label for r in rows for t in targets if r.distortion_for[t] is None]),
        (BELOW_CURVE, "the budget is below the least distortion this mechanism was measured "
                      "at (e.g. a mechanism that exceeds Δ), so it is not comparable there",
         [r.label for r in rows for b in budgets if r.leakage_at[b] is None]),
        (NO_RATIO, "no ratio: this mechanism or the reference does not reach the target",
         [r.label for r in rows for t in targets if r.ratio[t] is None]),
        (NO_CERTIFICATE, "no ok run at that budget, or the optimum metric did not certify it "
                         "(not a mapping, or n above its max_n: -M optimum_large)",
         [r.label for r in rows for b in budgets if excess_at(runs, r.label, b) is None]),
    )
    for cell, meaning, labels in kinds:
        if labels:
            console.print(f"  [dim]'{cell}': {meaning} ({escape(', '.join(sorted(set(labels))))})[/]",
                          highlight=False)


def _note_unconverged(console: Any, runs: Any) -> None:
    """Runs whose mechanism stopped before its tolerance: their points are upper bounds."""
    from rich.markup import escape

    flags = runs["metrics"].map(lambda m: (m or {}).get("converged") if isinstance(m, dict) else None)
    stopped = runs[flags.eq(False)]
    if not stopped.empty:
        labels = ", ".join(sorted(set(stopped["label"])))
        console.print(f"  [yellow]not converged[/] ({len(stopped)} run(s) of "
                      f"{escape(labels)}): stopped before their tolerance; their leakage is "
                      "certified only to within gap_bits", highlight=False)
