"""``privbench report [--db PATH] --out DIR``: a static HTML page of the stored runs.

With ``--sweep SPEC.toml`` (repeatable) the sweeps run first, resuming into the same
store, so one command goes from a spec to the report.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from privbench._plumbing.abort import plugin_code
from privbench._plumbing.outdir import OutputFolder
from privbench.cli.sweep_cmd import print_summary
from privbench.host.manager import get_host
from privbench.protocol.errors import PluginError, PrivbenchError, StoreWriteError, ValidationError
from privbench.results.store import DEFAULT_DB, open_existing
from privbench.running.plan import SweepSpec, load_sweep_file
from privbench.running.sweep import sweep


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="write an HTML report (figures + tables) of the stored runs",
        description="Read the results store and write DIR/index.html: every registered "
                    "figure, interactive (plotly, bundled: works offline), with its data as "
                    "DIR/figures/*.csv; --static also writes PNG and PDF files for papers. "
                    "Reads SQLite only, unless --sweep asks to run sweeps into the store first.")
    p.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"results store (default {DEFAULT_DB})")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--reporter", default=None,
                   help="reporter plugin (default: the one that declares itself default)")
    p.add_argument("--sweep", type=Path, action="append", default=[], metavar="SPEC.toml",
                   help="run this sweep first (resuming into --db); repeatable")
    p.add_argument("--keep-stale", action="store_true",
                   help="with --sweep, reuse stored runs made by other code (default: re-run them)")
    p.add_argument("--static", action="store_true",
                   help="also draw every figure to DIR/figures/*.png and *.pdf (matplotlib)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty folder privbench did not write, beside its "
                        "files (none of them is replaced or deleted)")
    p.add_argument("--executor", default=None, help="executor for --sweep (default: the spec's)")
    p.add_argument("--workers", type=int, default=None, help="worker processes for --sweep")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    given = [flag for flag, value in (("--executor", args.executor), ("--workers", args.workers))
             if value is not None]
    if given and not args.sweep:
        raise ValidationError(f"{' and '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to "
                              "--sweep (the sweeps run before the report); without one the "
                              "report only reads the store")
    args.reporter = args.reporter or get_host().default("reporter")
    cls = get_host().get("reporter", args.reporter)  # fail before any sweep runs
    specs = [load_sweep_file(path) for path in args.sweep]  # every file read before any runs
    if not specs:  # a missing, foreign or corrupted store: exit 2 before DIR is made
        open_existing(args.db).close()
    # a folder privbench may not write into fails before any sweep runs, too
    created = _new_folders(args.out)
    OutputFolder(args.out, what=f"report --out {args.out}", force=args.force).close()
    try:
        return _sweep_and_report(args, cls, specs)
    except BaseException:
        for folder in created:  # a failure before the report wrote anything leaves no
            try:                # empty folder of this command behind
                folder.rmdir()
            except OSError:
                break
        raise


def _new_folders(path: Path) -> list[Path]:
    """The folders of ``path`` (itself and its parents) that do not exist yet, deepest first."""
    missing = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    return missing


def _sweep_and_report(args: argparse.Namespace, cls: type, specs: list[SweepSpec]) -> int:
    """Run the sweeps of ``specs`` into the store, then write the report."""
    for spec in specs:  # an invalid sweep raises: exit 2 (3 for the store), no report
        records = sweep(spec, db=args.db, resume=True, executor=args.executor, workers=args.workers,
                        keep_stale=args.keep_stale, progress=True)
        print_summary(spec.name, records, args.db)
    offered = {"static": args.static, "specs": tuple(str(s) for s in args.sweep),
               "force": args.force}
    params = {k: v for k, v in offered.items() if k in cls.param_names()}
    try:
        with plugin_code(f"reporter {args.reporter!r}"):
            host = get_host()
            reporter = cls.create(**params).use(host.figures(), host.outputs(),
                                                host.mechanisms())
            path = reporter.report(args.db, args.out)
    except PrivbenchError:
        raise
    except OSError as exc:  # a full disk, an unwritable folder
        raise StoreWriteError(f"report {args.out}: cannot write: {exc.strerror or exc}"
                              f"{f' ({exc.filename})' if exc.filename else ''}") from None
    except Exception as exc:  # noqa: BLE001 - a reporter plugin's bug, named
        raise PluginError(f"reporter {args.reporter!r} failed: {type(exc).__name__}: "
                          f"{str(exc)[:300]}") from None
    print(f"wrote {path}")
    return 0
