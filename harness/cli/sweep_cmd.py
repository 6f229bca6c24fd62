"""``privbench sweep SPEC.toml``: a grid of runs, stored as they finish."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from privbench.cli.common import add_store_args, check_full
from privbench.protocol.errors import ValidationError
from privbench.running.plan import DEFAULT_MAX_RUNS, load_sweep_file
from privbench.running.records import declared_units, metric_failure_lines, record_json
from privbench.running.runner import legacy_notes
from privbench.running.specs import parse_spec
from privbench.running.sweep import iter_sweep, plan_sweep


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="run a grid of mechanisms x datasets x budgets x seeds",
        description="Run every combination in SPEC.toml (keys: mechanisms, datasets, deltas; "
                    "optional seeds, lp_backends, metrics, skip_metrics, timeout, executor, "
                    "workers).")
    p.add_argument("spec", type=Path, metavar="SPEC.toml",
                   help="the grid: mechanisms, datasets, deltas (NAME:k=v strings), optional "
                        "seeds, lp_backends, metrics, timeout (docs/cli.md)")
    p.add_argument("--executor", default=None, help="local, process, dask; NAME:k=v,... sets executor parameters "
                        "(default: the spec's, else the executor that declares itself default)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="Dask scheduler to run on (dask executor; default: a local cluster)")
    p.add_argument("--resume", action="store_true",
                   help="skip runs already stored with status ok/invalid/skip by the same code "
                        "(a row made by other code is stale: re-run)")
    p.add_argument("--keep-stale", action="store_true",
                   help="with --resume, also reuse rows made by other code (other plugin "
                        "or privbench source)")
    p.add_argument("--steal-claims", action="store_true",
                   help="with --resume, take over the runs other sweeps claimed (when you know "
                        "those sweeps are gone; a claim otherwise lapses 5 minutes after its "
                        "last renewal)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (overrides spec)")
    p.add_argument("--no-metric", action="append", default=[], metavar="NAME",
                   help="do not compute this default metric (repeatable; adds to the spec's "
                        "skip_metrics)")
    p.add_argument("--json", action="store_true", help="also print each record as a JSON line "
                   "(bulky values left out and listed under 'omitted'; --full keeps them)")
    p.add_argument("--full", action="store_true",
                   help="with --json: the whole record, per-resample arrays included")
    p.add_argument("--dry-run", action="store_true",
                   help="check the sweep as it would be checked before its first run (each "
                        "data set loaded once) and list its runs, without running or storing "
                        "any")
    p.add_argument("--max-runs", type=int, default=DEFAULT_MAX_RUNS, metavar="N",
                   help=f"refuse a grid of more runs than this (default {DEFAULT_MAX_RUNS:,})")
    add_store_args(p)
    p.set_defaults(func=run)


def summary_line(name: str, records: list[dict[str, Any]], db: Path | None) -> str:
    """"sweep NAME: 3 ok, 1 timeout; results in DB": what a finished sweep prints."""
    counts: dict[str, int] = {}
    for record in records:
        counts[record["status"]] = counts.get(record["status"], 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to do"
    return f"sweep {name}: {summary}; results in {db if db is not None else '(not stored)'}"


def print_summary(name: str, records: list[dict[str, Any]], db: Path | None) -> None:
    """What a finished sweep prints on stderr (``sweep`` and ``report --sweep``): the
    summary line, then one line per metric that failed on some runs."""
    print(summary_line(name, records, db), file=sys.stderr)
    for line in metric_failure_lines(r.get("metric_errors") for r in records):
        print(line, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.steal_claims and not args.resume:
        raise ValidationError("--steal-claims needs --resume (it takes over claims of runs "
                              "a resumed sweep would otherwise leave to another sweep)")
    check_full(args)
    spec = load_sweep_file(args.spec)  # read once: planned, run, named in the summary
    if args.dry_run:  # every check the sweep makes before its first run (data sets loaded)
        plan = plan_sweep(spec, executor=args.executor, workers=args.workers,
                          scheduler=args.scheduler, max_mem_mb=args.max_mem,
                          timeout=args.timeout, skip_metrics=args.no_metric,
                          max_runs=args.max_runs)
        for r in plan.runs:
            print(r.key)
        return 0
    done: list[dict[str, Any]] = []
    units = declared_units() if args.json else None
    records = iter_sweep(
        spec, db=None if args.no_store else args.db, executor=args.executor,
        workers=args.workers, scheduler=args.scheduler, max_mem_mb=args.max_mem,
        timeout=args.timeout, resume=args.resume, keep_stale=args.keep_stale,
        skip_metrics=args.no_metric, max_runs=args.max_runs, progress=True,
        steal_claims=args.steal_claims)
    for record in records:
        done.append({"status": record["status"], "metric_errors": record.get("metric_errors")})
        if args.json:
            print(record_json(record, units, full=args.full), flush=True)
    print_summary(spec.name, done, None if args.no_store else args.db)
    for line in legacy_notes(parse_spec(text, what="mechanism")[0] for text in spec.mechanisms):
        print(f"deprecated: {line}", file=sys.stderr)  # once per class (planned: names known)
    return 0
