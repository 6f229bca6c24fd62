"""``privbench sweep SPEC.toml``: a grid of runs, stored as they finish."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from privbench.cli.common import add_store_args, execute
from privbench.protocol.errors import ValidationError
from privbench.running.plan import DEFAULT_MAX_RUNS, check_timeout, load_sweep_file, plan_runs
from privbench.running.records import declared_units, record_json


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
                        "(default: spec or local)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="Dask scheduler to run on (dask executor; default: a local cluster)")
    p.add_argument("--resume", action="store_true",
                   help="skip runs already stored with status ok/invalid/skip by the same code "
                        "(a row made by other code is stale: re-run)")
    p.add_argument("--keep-stale", action="store_true",
                   help="with --resume, also reuse rows made by other code (other plugin "
                        "or privbench source)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (overrides spec)")
    p.add_argument("--no-metric", action="append", default=[], metavar="NAME",
                   help="do not compute this default metric (repeatable; adds to the spec's "
                        "skip_metrics)")
    p.add_argument("--json", action="store_true", help="also print each record as a JSON line")
    p.add_argument("--dry-run", action="store_true", help="list the runs without executing them")
    p.add_argument("--max-runs", type=int, default=DEFAULT_MAX_RUNS, metavar="N",
                   help=f"refuse a grid of more runs than this (default {DEFAULT_MAX_RUNS:,})")
    add_store_args(p)
    p.set_defaults(func=run)


def request(spec: Path, **options: Any) -> argparse.Namespace:
    """The arguments of ``privbench sweep SPEC`` with ``options`` set (``db``, ``resume``,
    ``executor``, ...), every other one at its default: for a command that runs a sweep
    itself (``report --sweep``) without re-entering the command line."""
    parser = argparse.ArgumentParser(prog="privbench")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["sweep", str(spec)])
    unknown = sorted(set(options) - set(vars(args)))
    if unknown:
        raise ValueError(f"not options of sweep: {', '.join(unknown)}")
    for key, value in options.items():
        setattr(args, key, value)
    return args


def run(args: argparse.Namespace) -> int:
    spec = load_sweep_file(args.spec)
    spec.max_runs = args.max_runs
    spec.skip_metrics = list(dict.fromkeys([*spec.skip_metrics, *args.no_metric]))
    if args.timeout is not None:
        check_timeout(args.timeout, what="--timeout")
    if args.workers is not None and args.workers < 1:
        raise ValidationError(f"--workers must be an integer >= 1; got {args.workers}")
    runs = plan_runs(spec, load_datasets=not args.dry_run)  # listing runs needs no data
    if args.dry_run:
        for r in runs:
            print(r.key)
        return 0
    args.executor = args.executor or spec.executor or "local"
    args.workers = args.workers or spec.workers
    timeout = args.timeout if args.timeout is not None else (spec.timeout or 3600.0)
    counts: dict[str, int] = {}
    units = declared_units() if args.json else None
    for record in execute(runs, args, timeout=timeout, resume=args.resume, sweep_id=spec.name):
        counts[record["status"]] = counts.get(record["status"], 0) + 1
        if args.json:
            print(record_json(record, units), flush=True)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to do"
    import sys
    print(f"sweep {spec.name}: {summary}; results in {args.db}", file=sys.stderr)
    return 0
