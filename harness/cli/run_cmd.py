"""``privbench run``: one mechanism on one dataset at one or more budgets."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from privbench.cli.common import add_store_args, check_full, execute, print_table
from privbench.protocol.errors import ValidationError
from privbench.protocol.plugin import format_label
from privbench.running.plan import SweepSpec, check_fractions, check_timeout, plan_runs
from privbench.running.records import declared_units, metric_failure_lines, record_json
from privbench.running.runner import legacy_notes


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run mechanisms on data sets at budgets",
                       description="Run every MECH on every DATASET at each --delta and "
                                   "--relative-delta (a small sweep) and print the results.")
    p.add_argument("-m", "--mechanism", required=True, action="append", metavar="MECH[:k=v,...]",
                   help="mechanism (repeat for several)")
    p.add_argument("-d", "--dataset", required=True, action="append", metavar="DATASET[:k=v,...]",
                   help="data set (repeat for several)")
    p.add_argument("--delta", type=float, action="append", default=[],
                   help="distortion budget Δ >= 0 (repeat for several)")
    p.add_argument("--relative-delta", type=float, action="append", default=[], metavar="F",
                   help="budget relative to each data set: Δ = F x d_const, the least expected "
                        "distortion of a constant mapping (repeat for several; F >= 0, stored "
                        "as metrics.relative_delta)")
    p.add_argument("--lp-backend", help="LP backend for mechanisms that solve LPs")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the run (random mechanisms, sampled data, attacks); part of "
                        "the run key")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per run, its metrics included "
                   "(default 3600; prepare has its own)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="timed solves per run after one untimed prepare; runtime_s is their median")
    p.add_argument("-M", "--metric", action="append", default=[],
                   help="also compute this non-default metric (repeatable)")
    p.add_argument("--no-metric", action="append", default=[], metavar="NAME",
                   help="do not compute this default metric (repeatable; e.g. optimum: "
                        "docs/metrics-cost.md)")
    p.add_argument("--json", action="store_true", help="one JSON object per run on stdout "
                   "(bulky values such as per-resample arrays left out and listed under "
                   "'omitted'; --full keeps them)")
    p.add_argument("--full", action="store_true",
                   help="with --json: the whole record, per-resample arrays included")
    p.add_argument("--executor", default=None,
                   help="executor plugin (default: the one that declares itself default; "
                        "`privbench plugins` lists them)")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 1 when any run fails (error/timeout/invalid)")
    add_store_args(p)
    p.set_defaults(func=run)


#: metrics beyond the three slowest are named when they took at least this (seconds)
SHOWN_METRIC_S = 0.1


def metric_seconds_line(records: list[dict[str, Any]]) -> str | None:
    """What the metrics took against the solves, summed over ``records`` (None: no metric ran)."""
    totals: dict[str, float] = {}
    solve = 0.0
    for r in records:
        for name, seconds in ((r.get("metrics") or {}).get("metric_seconds") or {}).items():
            totals[name] = totals.get(name, 0.0) + float(seconds)
        solve += float(r.get("runtime_s") or 0.0)
    if not totals:
        return None
    runs = f"{len(records)} runs" if len(records) != 1 else "1 run"
    slowest = sorted(totals.items(), key=lambda kv: -kv[1])
    shown = [(name, t) for k, (name, t) in enumerate(slowest) if k < 3 or t >= SHOWN_METRIC_S]
    parts = [f"{name} {t:.3g} s" for name, t in shown]
    rest = slowest[len(shown):]
    if rest:
        parts.append(f"{len(rest)} others {sum(t for _, t in rest):.2g} s")
    return (f"metrics took {sum(totals.values()):.3g} s over {runs} (solves {solve:.3g} s): "
            f"{', '.join(parts)}; per run and metric: --json metrics.metric_seconds; "
            "switch one off: --no-metric NAME")


def d_const_lines(records: list[dict[str, Any]]) -> list[str]:
    """One line per data set run at relative budgets: the d_const that scaled them."""
    scales: dict[str, float] = {}
    for r in records:
        f = (r.get("metrics") or {}).get("relative_delta")
        if f:  # Δ = f x d_const, so d_const = Δ / f (f = 0 says nothing)
            scales.setdefault(format_label(r.get("dataset"), r.get("dataset_params")),
                              float(r["delta"]) / float(f))
    return [f"--relative-delta on {data}: Δ = F x d_const, d_const = {scale:.6g}"
            for data, scale in scales.items()]


def print_metric_seconds(records: list[dict[str, Any]]) -> None:
    line = metric_seconds_line(records)
    if line:
        from rich.console import Console

        Console().print(line, highlight=False)


def run(args: argparse.Namespace) -> int:
    if not args.delta and not args.relative_delta:
        raise ValidationError("no budget given; pass --delta X or --relative-delta F (one or "
                              "more)")
    spec = SweepSpec(
        mechanisms=args.mechanism, datasets=args.dataset, deltas=args.delta,
        relative_deltas=check_fractions(args.relative_delta, "--relative-delta"),
        seeds=[args.seed], lp_backends=[args.lp_backend] if args.lp_backend else [],
        metrics=args.metric, skip_metrics=args.no_metric, timeout=args.timeout, repeat=args.repeat,
    )
    check_timeout(args.timeout, what="--timeout")
    check_full(args)
    if args.workers is not None and args.workers < 1:
        raise ValidationError(f"--workers must be an integer >= 1; got {args.workers}")
    runs = plan_runs(spec, strict_lp=True)
    for line in legacy_notes(r.mechanism for r in runs):
        print(f"deprecated: {line}", file=sys.stderr)  # once per class, before the runs
    records: list[dict[str, Any]] = []
    units = declared_units() if args.json else None
    for record in execute(runs, args, progress=not args.json):
        records.append(record)
        if args.json:
            print(record_json(record, units, full=args.full), flush=True)
    if not args.json:
        print_table(records)
        for line in d_const_lines(records):
            print(line)
        print_metric_seconds(records)
    for line in metric_failure_lines(r.get("metric_errors") for r in records):
        print(line, file=sys.stderr)  # a failed metric is said, even with --json
    failed = [r for r in records if r["status"] in ("error", "timeout", "invalid")]
    return 1 if (args.strict and failed) else 0
