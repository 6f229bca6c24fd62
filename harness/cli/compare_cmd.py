"""``privbench compare``: mechanisms side by side at matched distortion and matched privacy.

For every data set in the store, each mechanism's (E[d], value) points under one declared
output (``--by``, default ``mi_bits`` = I(A; B̂)) become a Pareto curve
(``privbench.results.pareto``); the table ranks the mechanisms by the value each reaches
within the first budget (most private first, as the output's declared direction says), and
shows the distortion each needs to reach the targets and that distortion as a multiple of
the reference mechanism's ("expmec needs 8x sppm").
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privbench.api import pick_reference
from privbench.cli._compare_uncertainty import uncertainty_tables
from privbench.protocol.errors import ValidationError, did_you_mean
from privbench.protocol.metric import Output
from privbench.protocol.outputs import outputs_of
from privbench.protocol.plugin import format_label
from privbench.results.fingerprints import FOOTNOTE, MARK, other_code
from privbench.results.pareto import (
    Curve,
    MechanismSummary,
    default_targets,
    distortion_for_leakage,
    rank_rows,
    reaching_points,
    summarise,
)
from privbench.results.significance import collapse_replicates
from privbench.results.store import DEFAULT_DB
from privbench.results.verdicts import below_chord, certified_gap
from privbench.results.views import (
    DEFAULT_OUTPUT,
    DELTA_ROLE_NOTE,
    curves_of,
    delta_role_labels,
    describe_excess,
    excess_at,
    load_runs,
    mechanism_notes,
    output_values,
    resolve_output,
    short_labels,
)
from privbench.running.fingerprint import current_hash
from privbench.running.records import metric_failure_lines


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="rank mechanisms at matched distortion and privacy",
                       description="For each data set in the store, rank the mechanisms by a "
                                   "declared output within distortion budgets, and give the "
                                   "distortion each needs to reach privacy targets.")
    p.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"results store (default {DEFAULT_DB})")
    p.add_argument("--by", default=DEFAULT_OUTPUT, metavar="OUTPUT",
                   help=f"declared output to rank and compare by (default {DEFAULT_OUTPUT}; its "
                        "direction says which way is more private; `privbench plugins info "
                        "METRIC` lists a metric's outputs)")
    p.add_argument("--dataset", help="only data sets whose name contains this text")
    p.add_argument("--target", type=float, action="append", metavar="VALUE",
                   help="privacy target, e.g. I(A;B̂) <= VALUE bits (repeatable; default 25%% "
                        "and 10%% of the value without a mechanism)")
    p.add_argument("--budget", type=float, action="append", metavar="DELTA",
                   help="distortion budget (repeatable; default: the middle stored Δ); the "
                        "first one ranks the mechanisms")
    p.add_argument("--relative-budget", type=float, action="append", metavar="F",
                   help="distortion budget relative to each data set, Δ = F x d_const "
                        "(repeatable, instead of --budget; read off the stored runs' "
                        "metrics.relative_delta: runs made with --relative-delta or "
                        "relative_deltas)")
    p.add_argument("--min-diff", type=float, default=0.0, metavar="X",
                   help="practical floor: a difference smaller than X (in the output's unit) "
                        "is 'equal within resolution', never 'significant' (default 0: only "
                        "the numeric floor and the certified gaps; docs/error-bars.md)")
    p.add_argument("--reference", help="mechanism label for ratios (default: the best-ranked mechanism that declares "
                   "itself a reference, i.e. certifies the optimum; else the first)")
    p.set_defaults(func=run)


#: what an empty cell means, by column kind (each explained under the table)
NOT_REACHED = "not reached"   # E[d] for I<=t: no measured point reaches the target
BELOW_CURVE = "< its min E[d]"  # I at Δ<=b: the mechanism's least distortion exceeds b
NO_RATIO = "n/a"               # ratio: this mechanism or the reference did not reach it
NO_CERTIFICATE = "uncertified"  # excess: no run at that budget, or no optimum certificate
BELOW_CHORD = "see note"       # ratio: < 1 against a certified optimum (its chord; explained)
#: after a label with a run that stopped at its cap without its certificate
UNCERTIFIED_MARK = "*"

#: short names for outputs whose usual symbol is not their name: (column, sentence, prior)
SYMBOLS = {"mi_bits": ("I", "I(A;B̂)", "I(A;B)")}
#: units printed after a value ("probability", "count", "none" go without)
SPOKEN_UNITS = ("bits", "nats", "guesses", "seconds", "megabytes")


@dataclass(frozen=True)
class Notion:
    """How one output reads in the table and in the sentences below it."""

    output: Output
    symbol: str  # column headers ("I")
    phrase: str  # sentences ("I(A;B̂)")
    prior: str   # the value without a mechanism ("I(A;B)")
    unit: str    # " bits", or "" for unitless outputs
    op: str      # "≤" (lower is more private) or "≥" (higher is)

    @classmethod
    def of(cls, out: Output) -> Notion:
        shown = out.label or out.name  # the declared label ("LIP ε"), else the name
        symbol, phrase, prior = SYMBOLS.get(out.name, (shown, shown,
                                                       f"{shown} without a mechanism"))
        unit = f" {out.unit}" if out.unit in SPOKEN_UNITS else ""
        return cls(out, symbol, phrase, prior, unit, "≥" if out.direction == "higher" else "≤")

    @property
    def certified(self) -> bool:
        """The optimum metric certifies the least I(A; B̂): excess columns only then."""
        return self.output.name == DEFAULT_OUTPUT


def _f(v: float | None, empty: str) -> str:
    if v is None:
        return empty
    return ("inf" if v > 0 else "-inf") if math.isinf(v) else f"{v:.4g}"


def _check_request(args: argparse.Namespace) -> Output:
    """Validate the thresholds and resolve ``--by`` (exit 2 naming the known outputs)."""
    relative = getattr(args, "relative_budget", None)
    if args.budget and relative:
        raise ValidationError("give --budget or --relative-budget, not both")
    for flag, values in (("--target", args.target), ("--budget", args.budget),
                         ("--relative-budget", relative),
                         ("--min-diff", [getattr(args, "min_diff", 0.0)])):
        for v in values or ():
            if not math.isfinite(v) or v < 0:
                raise ValidationError(f"{flag} must be a finite number >= 0; got {v!r}")
    from privbench.host.manager import get_host

    try:
        out = resolve_output(args.by, get_host().outputs())
    except ValidationError as exc:
        raise ValidationError(f"--by: {exc}") from None
    if out.relation == "interval" or out.payload:
        what = (f"the interval [lo, hi] of {out.of}" if out.relation == "interval"
                else f"a structured value ({out.payload})")
        better = f"; --by {out.of} ranks by {out.of} itself" if out.of else ""
        raise ValidationError(f"--by {out.name}: it is {what}, not one number to rank by{better}")
    if out.name == "distortion":
        raise ValidationError("--by distortion: distortion is the axis every curve is drawn "
                              "along; choose a privacy output (see `privbench plugins info`)")
    return out


#: data sets loaded at most to say why a metric has no value on them (only on that error)
MAX_EXPLAINED_DATASETS = 8
#: distinct reasons named at most in that error
MAX_CAUSES = 4


def _data_unmet(cls: type, runs: pd.DataFrame) -> dict[str, tuple[str, list[str]]]:
    """Per data set of ``runs`` (its label), what it lacks for metric ``cls``: (the metric's
    ``unmet`` clause, the parts of its ``needs`` missing). Data sets that meet its needs, or
    that cannot be loaded here (files absent, a plugin gone), are left out."""
    import warnings

    from privbench._plumbing.abort import plugin_code
    from privbench.running.problems import load_problem

    found: dict[str, tuple[str, list[str]]] = {}
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, params in zip(runs["dataset"], runs["dataset_params"], strict=True):
        params = params if isinstance(params, dict) else {}
        seen.setdefault(format_label(name, params), (str(name), params))
    for label, (name, params) in list(seen.items())[:MAX_EXPLAINED_DATASETS]:
        try:
            with warnings.catch_warnings(), plugin_code(f"dataset {name!r}"):
                warnings.simplefilter("ignore")
                problem = load_problem(name, params)
                why = cls().unmet(problem)
        except Exception:  # noqa: BLE001 - only an explanation: unknown, not an error
            continue
        if why:
            found[label] = (str(why), problem.missing_parts(cls.needs))
    return found


def _part_hint(part: str, datasets: set[str]) -> str:
    """How to get part ``part``: the data sets of ``datasets`` (names) that take a parameter
    of that name, else the data sets that do ('' when none does)."""
    from privbench.host.manager import get_host

    takers = sorted(n for n, c in get_host().datasets().items() if part in c.param_names())
    mine = sorted(datasets & set(takers))
    if mine:
        return f"pass {part}=... to {', '.join(mine)} (`privbench plugins info {mine[0]}`)"
    if not takers:
        return ""
    return (f"{', '.join(sorted(datasets))} take{'s' if len(datasets) == 1 else ''} no {part} "
            f"parameter; {', '.join(takers)} do (-d {takers[0]}:{part}=...)")


def _asked(run_provenance: Any, metric: str) -> bool:
    """Whether the run was made with ``metric`` among the metrics it computes (its code
    fingerprint lists every default or requested metric that was installed)."""
    fingerprint = run_provenance.get("fingerprint") if isinstance(run_provenance, dict) else None
    plugins = fingerprint.get("plugins") if isinstance(fingerprint, dict) else None
    return any(isinstance(p, dict) and p.get("kind") == "metric" and p.get("name") == metric
               for p in plugins or ())


def _no_values(out: Output, db: Path, dataset: str | None, runs: pd.DataFrame) -> str:
    """Why no run of ``runs`` has a value of ``out``, and how to get one: the declaring
    metric failed, its needs are not met by the runs' data sets (what they lack), it was
    left out (--no-metric), it is not a default metric (-M), the runs predate it, or their
    results do not meet its needs."""
    from privbench.host.manager import get_host

    owners = [cls for cls in get_host().metrics().values()
              if any(o.name == out.name for o in getattr(cls, "outputs", ()))]
    where = f" matching {dataset!r}" if dataset else ""
    head = f"no ok run in {db}{where} has a value of {out.name}"
    stored = outputs_of(runs, out.name)
    if stored.notna().any():  # values, but none of them a number (a trace, a text)
        sample = repr(stored[stored.notna()].iloc[0])
        return (f"{head} that is a number: its values ({out.description}; e.g. {sample[:60]}) "
                "are not one number to rank by")
    if not owners:
        return head
    m = owners[0]
    unmet = _data_unmet(m, runs)
    causes: dict[str, int] = {}
    parts: dict[str, set[str]] = {}
    for run in runs.to_dict("records"):
        label = format_label(run.get("dataset"), run.get("dataset_params"))
        errors = run.get("metric_errors") if isinstance(run.get("metric_errors"), dict) else {}
        skipped = (run.get("metrics") or {}).get("metrics_skipped") or () \
            if isinstance(run.get("metrics"), dict) else ()
        if errors.get(m.name):
            cause = f"it failed: {str(errors[m.name])[:200]}"
        elif label in unmet:
            why, missing = unmet[label]
            cause = f"on {label} it {why}"
            for part in missing:
                parts.setdefault(part, set()).add(str(run.get("dataset")))
        elif m.name in skipped:
            cause = f"it was left out (--no-metric {m.name} or the sweep's skip_metrics)"
        elif not _asked(run.get("provenance"), m.name):
            cause = ("it is a default metric: runs stored before it was installed lack it; "
                     "run them again" if m.default
                     else f"it is not a default metric: run again with -M {m.name}")
        else:
            cause = (f"it did not apply to the runs' results (it needs "
                     f"{', '.join(sorted(m.needs))}: a mechanism that releases what it reads)")
        causes[cause] = causes.get(cause, 0) + 1
    shown = [c if len(causes) == 1 else f"{c} ({k} of {len(runs)} runs)"
             for c, k in list(causes.items())[:MAX_CAUSES]]
    if len(causes) > MAX_CAUSES:
        shown.append(f"{len(causes) - MAX_CAUSES} other reasons")
    hints = [h for part, names in sorted(parts.items()) if (h := _part_hint(part, names))]
    return f"{head} (declared by metric {m.name!r}): " + "; ".join(shown + hints)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    out = _check_request(args)
    df = load_runs(args.db)
    ok = df[df["status"] == "ok"] if not df.empty else df
    if args.dataset:
        ok = ok[ok["instance"].str.contains(args.dataset, regex=False)]
    if ok.empty:
        raise ValidationError(f"no ok runs in {args.db}" + (f" matching {args.dataset!r}"
                                                             if args.dataset else ""))
    if not output_values(ok, out.name).notna().any():
        raise ValidationError(_no_values(out, args.db, args.dataset, ok))
    # replicates (run seeds, data-set seeds) become one mean point each, with their sd
    ok = collapse_replicates(ok, [out.name])
    short = short_labels(ok)
    if args.reference:
        args.reference = short.get(args.reference, args.reference)
    ok = ok.assign(label=ok["label"].map(short))
    marked = delta_role_labels(ok, _delta_roles())
    ok = ok.assign(label=ok["label"].map(marked))
    if args.reference:
        args.reference = marked.get(args.reference, args.reference)
    console = Console()
    if not console.is_terminal:  # piped into a file or README: do not squeeze to 80 columns
        console = Console(width=160)
    notion = Notion.of(out)
    if out.direction == "neutral":
        console.print(f"[dim]{out.name} is neutral (neither more nor less private): ranked "
                      "lowest first[/]", highlight=False)
    if getattr(args, "relative_budget", None) and d_const_of(ok) is None:
        raise ValidationError(f"--relative-budget: no run in {args.db} was made at a relative "
                              "budget (metrics.relative_delta: `privbench run --relative-delta "
                              "F`, or relative_deltas in a sweep file); pass --budget DELTA")
    for instance, g in ok.groupby("instance", sort=True):
        if not output_values(g, out.name).notna().any():
            console.print(f"[dim]{instance}: no ok run has {out.name}[/]", highlight=False)
            continue
        budgets = None
        if getattr(args, "relative_budget", None):
            scaled = relative_budgets(g, args.relative_budget)
            if scaled is None:
                console.print(f"[dim]{escape(str(instance))}: no run at a relative budget "
                              "(metrics.relative_delta), so no d_const to scale "
                              "--relative-budget by; pass --budget DELTA[/]", highlight=False)
                continue
            scale, budgets = scaled
            console.print(f"--relative-budget on {escape(str(instance))}: Δ = F x d_const, "
                          f"d_const = {scale:.6g}: "
                          + ", ".join(f"F {f:g} -> Δ {b:.6g}" for f, b in
                                      zip(args.relative_budget, budgets, strict=True)),
                          highlight=False)
        _compare_instance(console, args, str(instance), g, notion, budgets)
    shown = df if not args.dataset or df.empty else \
        df[df["instance"].str.contains(args.dataset, regex=False)]
    for line in metric_failure_lines(shown["metric_errors"] if "metric_errors" in shown else []):
        console.print("[yellow]" + escape(line) + "[/]", highlight=False)
    _legend(console, short)
    _role_and_mechanism_notes(console, ok, marked)
    return 0


def _delta_roles() -> dict[str, str]:
    from privbench.host.manager import get_host

    return {name: getattr(cls, "delta_role", "budget")
            for name, cls in get_host().mechanisms().items()}


def _role_and_mechanism_notes(console: Any, ok: pd.DataFrame, marked: dict[str, str]) -> None:
    """What Δ means where it is not a budget, and what mechanisms say about their runs."""
    from rich.markup import escape

    if any(m != label for label, m in marked.items()):
        console.print("  [dim]" + escape(DELTA_ROLE_NOTE) + "[/]", highlight=False)
    for label, note in mechanism_notes(ok).items():
        console.print("  " + escape(f"{label}: {note}"), highlight=False)


def _legend(console: Any, shown: dict[str, str]) -> None:
    """The full run key of every label shown shortened (nothing read is cut for good)."""
    from rich.markup import escape

    cut = sorted((s, full) for full, s in shown.items() if s != full)
    if cut:
        console.print("  [dim]labels, in full:[/]", highlight=False)
    for s, full in cut:
        console.print("  [dim]" + escape(f"  {s} = {full}") + "[/]", highlight=False)


def _prior(runs: pd.DataFrame, out: Output) -> float | None:
    """The value without a mechanism, when a metric declares one (``relation="prior"``)."""
    values = output_values(runs, out.name, "prior").dropna()
    return float(values.iloc[0]) if not values.empty else None


def _default_targets(curves: dict[str, Curve], prior: float | None, out: Output) -> list[float]:
    """25 % and 10 % of the value without a mechanism; without one, 25 % and 10 % of the way
    down from the largest measured value to the least (an output with a floor, such as
    MAP accuracy's prior max_a p(a) = 0.651 on census, once got targets 0.2 and 0.08 that
    no mechanism can reach); for an output where higher is more private, 75 % and 90 % of
    the way from the least measured value to the largest."""
    measured = np.concatenate([c.leakage for c in curves.values()]) if curves else np.array([])
    measured = measured[np.isfinite(measured)]
    if out.direction != "higher" and prior is not None:
        return default_targets(prior)
    if not measured.size:
        return []
    lo, hi = float(measured.min()), float(measured.max())
    fractions = (0.75, 0.9) if out.direction == "higher" else (0.25, 0.1)
    return [float(f"{lo + f * (hi - lo):.3g}") for f in fractions]


def _fractions(g: pd.DataFrame) -> pd.Series:
    """Each run's budget as a fraction of d_const (NaN where it was given absolutely)."""
    return g["metrics"].map(lambda m: (m or {}).get("relative_delta") if isinstance(m, dict)
                            else None).astype(float)


def d_const_of(g: pd.DataFrame) -> float | None:
    """The data set's d_const as its runs at relative budgets imply it (Δ / F)."""
    f = _fractions(g)
    used = (f > 0) & g["delta"].notna()
    return float((g["delta"][used] / f[used]).median()) if used.any() else None


def relative_budgets(g: pd.DataFrame, fractions: list[float]
                     ) -> tuple[float, list[float]] | None:
    """(d_const, Δ for each fraction F of it): the stored Δ of the runs made at F (so that
    the excess and interval columns, which read runs at exactly that Δ, find them), else
    F x d_const; None when no run carries a fraction."""
    scale = d_const_of(g)
    if scale is None:
        return None
    f = _fractions(g)
    out = []
    for fraction in fractions:
        at = g["delta"][np.isclose(f, fraction, rtol=1e-12, atol=0.0)]
        out.append(float(at.iloc[0]) if len(at) else fraction * scale)
    return scale, out


def _compare_instance(console: Any, args: argparse.Namespace, instance: str, g: pd.DataFrame,
                      notion: Notion, budgets: list[float] | None = None) -> None:
    """The table of one data set, then the sentences that read it."""
    from rich.markup import escape

    out = notion.output
    curves = curves_of(g, out)
    prior = _prior(g, out)
    targets = args.target or _default_targets(curves, prior, out)
    deltas = sorted(g["delta"].unique())
    budgets = budgets or args.budget or [float(deltas[len(deltas) // 2])]
    # the reference for ratios is never a curve with a run stopped uncertified, if avoidable
    final = [label for label in curves if label not in set(_unconverged(g)["label"])]
    ref = args.reference or pick_reference(final or list(curves))
    if ref not in curves:
        raise ValidationError(f"reference {ref!r}{did_you_mean(ref, curves)} has no runs with "
                              f"{out.name} on {instance}; "
                              f"have: {', '.join(curves)}")
    rows = rank_rows(summarise(curves, targets=targets, budgets=budgets, reference=ref),
                     budgets[0], higher=out.direction == "higher")
    for table in _table(instance, g, rows, curves, budgets, targets, ref, notion, prior,
                        console.width):
        title, table.title = table.title, None  # printed as text: it wraps; a title is cut
        console.print(title, highlight=False)
        console.print(table)
    verb = "raise" if out.direction == "higher" else "bring"
    ref_gap = certified_gap(g, ref) if notion.certified else None
    for r in rows:
        for t in targets:
            ratio = r.ratio[t]
            if r.label == ref or ratio is None or ratio == float("inf"):
                continue
            if below_chord(ratio, ref_gap):
                console.print(escape("  " + _chord_note(r, ref, t, curves[ref], ref_gap, notion)),
                              highlight=False)
                continue
            console.print(escape(f"  {r.label} needs {ratio:.2g}x the distortion of {ref} "
                          f"to {verb} {notion.phrase} to {t:g}{notion.unit}"), highlight=False)
    if notion.certified:
        for r in rows:
            for b in budgets:
                excess = excess_at(g, r.label, b)
                if excess is not None and excess["min"] > 1e-3:
                    console.print("  " + escape(describe_excess(r.label, excess, instance)),
                                  highlight=False)
        console.print("  [dim]" + escape(
            "'excess at Δ': the run at that budget leaks this much more (bits, a certified "
            "interval) than the least leakage possible at the run's own distortion E[d] (the "
            "optimum metric)") + "[/]", highlight=False)
    _explain_empty_cells(console, rows, budgets, targets, g, notion)
    for table in uncertainty_tables(g, budgets, out, instance, getattr(args, "min_diff", 0.0)):
        console.print(table)
    if set(g.loc[other_code(g, current_hash), "label"]):
        console.print("  [dim]" + escape(FOOTNOTE) + "[/]", highlight=False)
    _note_unconverged(console, g)


def _chord_note(r: MechanismSummary, ref: str, t: float, ref_curve: Curve, gap: float | None,
                notion: Notion) -> str:
    """Why no ratio is printed where it would claim to beat a certified optimum: the
    reference's E[d] for the target is read at a measured point or on the straight segment
    between two, and the optimum's convex curve can reach the target with less."""
    need = r.distortion_for[t]
    return (f"{r.label}: no ratio to {ref} for {notion.phrase} {notion.op} {t:g}: it gets there "
            f"at E[d] = {_f(need, '?')}, less than {ref}, {_where_read(ref_curve, t, ref)}; "
            f"{ref} certifies its points optimal to {gap:.3g} bits, and the optimum's curve "
            f"can reach the target with less distortion than that, so the ratio would be "
            f"{ref}'s sampling of the curve, not a finding. Measure {ref} at "
            f"Δ = {_f(need, '?')} for a ratio")


def _where_read(curve: Curve, target: float, ref: str) -> str:
    """Where ``curve`` reaches ``target`` (:func:`reaching_points`): its least measured
    point, one measured point, or a segment between two."""
    where = reaching_points(curve, target)
    if where is None:
        return "which does not reach it"
    (i, j), d = where, curve.distortion
    if j == 0:
        only = " (its only point)" if len(curve) == 1 else ""
        return (f"which reaches it at its least measured distortion, E[d] = {d[0]:.4g}{only}: "
                f"{ref} was not measured below it")
    if i == j:
        return f"which reaches it at its measured point E[d] = {d[j]:.4g}"
    at = distortion_for_leakage(curve, target)
    return (f"which reaches it at E[d] = {_f(at, '?')}, read on the straight segment between "
            f"its measured points E[d] = {d[i]:.4g} and {d[j]:.4g}")


def _table(instance: str, g: pd.DataFrame, rows: list[MechanismSummary],
           curves: dict[str, Curve], budgets: list[float], targets: list[float], ref: str,
           notion: Notion, prior: float | None, width: int | None = None) -> list[Any]:
    """The instance's table; split in two (budgets, then targets, each with the mechanism
    column) when it cannot fit ``width`` columns even with every cell folded."""
    from rich.markup import escape

    title = f"{instance}: n = {int(g['n'].max())}"
    if prior is not None:
        title += f", {notion.prior} = {prior:.4g}{notion.unit}"
    first = "lowest first" if notion.output.direction == "neutral" else "most private first"
    title += f"; ranked by {notion.symbol} at Δ≤{budgets[0]:g}, {first}"
    heads = ["mechanism", "points"]
    for b in budgets:
        heads.append(f"{notion.symbol} at Δ≤{b:g}")
        if notion.certified:
            heads.append(f"excess at Δ={b:g}")
    split = len(heads)
    for t in targets:
        heads += [f"E[d] for {notion.symbol}{notion.op}{t:g}", f"× {ref}"]
    other = set(g.loc[other_code(g, current_hash), "label"])
    uncertified = set(_unconverged(g)["label"])
    ref_gap = certified_gap(g, ref) if notion.certified else None
    body = []
    for r in rows:
        cells = [escape(r.label) + (MARK if r.label in other else "")
                 + (UNCERTIFIED_MARK if r.label in uncertified else ""), str(r.points)]
        for b in budgets:
            cells.append(escape(_f(r.leakage_at[b], BELOW_CURVE)))
            if notion.certified:
                cells.append(_excess_cell(excess_at(g, r.label, b)))
        for t in targets:
            ratio = BELOW_CHORD if below_chord(r.ratio[t], ref_gap) else _f(r.ratio[t], NO_RATIO)
            cells += [_f(r.distortion_for[t], NOT_REACHED), ratio]
        body.append(cells)
    whole = _rich_table(title, heads, body, range(len(heads)), min(12, max(map(len, curves))))
    if width is None or split == len(heads) or _min_width(whole) <= width:
        return [whole]
    mech = min(12, max(map(len, curves)))
    return [_rich_table(title, heads, body, range(split), mech),
            _rich_table("(continued) the distortion each needs to reach a target", heads, body,
                        [0, *range(split, len(heads))], mech)]


def _rich_table(title: str, heads: list[str], body: list[list[str]], keep: Any,
                mech_width: int) -> Any:
    """A rich table of the columns ``keep``; cells fold (wrap), never cut."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title))
    keep = list(keep)
    for i in keep:
        if i == 0:
            table.add_column(heads[0], overflow="fold", min_width=mech_width)
        else:
            table.add_column(escape(heads[i]), justify="right", overflow="fold")
    for cells in body:
        table.add_row(*(cells[i] for i in keep))
    return table


def _min_width(table: Any) -> int:
    """The least width ``table`` can be drawn in without cropping."""
    from rich.console import Console

    console = Console(width=1000)
    return console.measure(table).minimum


def _excess_cell(excess: dict[str, float] | None) -> str:
    if excess is None:
        return NO_CERTIFICATE
    if excess["max"] - excess["min"] < 5e-4:
        return f"{0.5 * (excess['min'] + excess['max']):.3g}"
    return f"{excess['min']:.3g}–{excess['max']:.3g}"


def _explain_empty_cells(console: Any, rows: list[Any], budgets: list[float],
                         targets: list[float], runs: Any, notion: Notion) -> None:
    """One line per kind of empty cell that occurs, naming the mechanisms."""
    from rich.markup import escape

    verb = "raises" if notion.output.direction == "higher" else "brings"
    kinds = (
        (NOT_REACHED, f"no measured budget {verb} {notion.phrase} to the target",
         [r.label for r in rows for t in targets if r.distortion_for[t] is None]),
        (BELOW_CURVE, "the budget is below the least distortion this mechanism was measured "
                      "at (e.g. a mechanism that exceeds Δ), so it is not comparable there",
         [r.label for r in rows for b in budgets if r.leakage_at[b] is None]),
        (NO_RATIO, "no ratio: this mechanism or the reference does not reach the target",
         [r.label for r in rows for t in targets if r.ratio[t] is None]),
        (NO_CERTIFICATE, "no ok run at that budget, or the optimum metric did not certify it "
                         "(not a mapping, or n above its max_n: -M optimum_large)",
         [r.label for r in rows for b in budgets
          if notion.certified and excess_at(runs, r.label, b) is None]),
    )
    for cell, meaning, labels in kinds:
        if labels:
            console.print(f"  [dim]'{escape(cell)}': {escape(meaning)} "
                          f"({escape(', '.join(sorted(set(labels))))})[/]",
                          highlight=False)


def _unconverged(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs whose mechanism stopped at its cap without its certificate
    (``metrics.converged`` false)."""
    flags = outputs_of(runs, "converged").map(lambda v: v is False).astype(bool)
    return runs[flags]


def _note_unconverged(console: Any, runs: Any) -> None:
    """Runs whose mechanism stopped before its tolerance: their points are upper bounds."""
    from rich.markup import escape

    stopped = _unconverged(runs)
    if not stopped.empty:
        labels = ", ".join(sorted(set(stopped["label"])))
        gaps = pd.to_numeric(stopped["gap_bits"], errors="coerce").dropna()
        gap = f", gap up to {gaps.max():.3g} bits" if not gaps.empty else ""
        console.print(f"  {UNCERTIFIED_MARK} [yellow]not certified[/] ({len(stopped)} run(s) of "
                      f"{escape(labels)}{gap}): stopped at their cap before their tolerance; "
                      "their values are upper bounds, not final: the verdicts never call them "
                      "significantly less private", highlight=False)
