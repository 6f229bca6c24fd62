"""``privbench results``: show stored runs; export them to CSV or Parquet."""

from __future__ import annotations

import argparse
import errno
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privbench.protocol.errors import PrivbenchError, StoreWriteError, ValidationError
from privbench.results.store import DEFAULT_DB, open_existing
from privbench.running.records import STATUSES

if TYPE_CHECKING:
    import pandas as pd


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="show or export stored runs")
    p.add_argument("--db", type=Path, default=DEFAULT_DB,
                   help=f"results store to read (default {DEFAULT_DB})")
    p.add_argument("--status", choices=STATUSES, help="only runs with this status")
    p.add_argument("--mechanism", help="only runs of this mechanism")
    p.add_argument("--dataset", help="only runs on this dataset")
    p.add_argument("--latest", action="store_true", help="only the last run of each run key")
    p.add_argument("--limit", type=int, default=50, help="rows to show (0 = all)")
    p.add_argument("--export", type=Path, metavar="FILE.csv|FILE.parquet",
                   help="write the selected runs to CSV or Parquet: one column per "
                        "parameter (param.K, dataset_param.K), per declared output and per "
                        "provenance entry")
    p.set_defaults(func=run)


#: errors of the disk rather than of the path asked for (full, over quota, failing)
_DISK_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def _have_pyarrow() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def _export(df: pd.DataFrame, out: Path) -> int:
    """Write the runs as one flat table (see :mod:`privbench.results.export`)."""
    from privbench._plumbing.outdir import write_export
    from privbench.host.manager import get_host
    from privbench.results.export import export_frame

    if out.suffix not in (".csv", ".parquet"):
        raise ValidationError(f"--export {out}: expected a .csv or .parquet file name")
    if out.suffix == ".parquet" and not _have_pyarrow():
        raise ValidationError(f"--export {out}: Parquet export needs pyarrow, which is not "
                              "installed: pip install 'privbench[parquet]' (or export to .csv)")
    flat = export_frame(df, get_host().outputs())
    def fill(fh: Any) -> None:
        if out.suffix == ".csv":
            flat.to_csv(fh, index=False)
        else:
            flat.to_parquet(fh, index=False)

    try:  # an existing file is replaced only when it is a privbench export, never via a link
        write_export(out, fill, what="--export")
    except OSError as exc:
        message = f"--export {out}: cannot write: {exc.strerror or exc}"
        if exc.errno in _DISK_FAILURES:  # the request was fine, the disk was not: exit 3
            raise StoreWriteError(message) from None
        raise PrivbenchError(message) from None  # a folder in the way: the request (exit 2)
    print(f"wrote {len(flat)} runs ({flat.shape[1]} columns) to {out}")
    return 0


#: values of a column listed when a filter matched no run
SHOWN_VALUES = 12
_PLURAL = {"status": "statuses", "mechanism": "mechanisms", "dataset": "datasets"}


def _nothing_shown(stored: pd.DataFrame, args: argparse.Namespace) -> str:
    """Why no run is selected: the store holds none, or the filters match none (with the
    values each filtered column holds)."""
    if stored.empty:
        return f"{args.db} holds no runs"
    asked = [(col, getattr(args, col)) for col in ("status", "mechanism", "dataset")
             if getattr(args, col)]
    held = []
    for col, _ in asked:
        values = sorted(map(str, stored[col].dropna().unique()))
        more = ", ..." if len(values) > SHOWN_VALUES else ""
        held.append(f"{_PLURAL[col]}: {', '.join(values[:SHOWN_VALUES])}{more}")
    runs = f"{len(stored)} run{'s' if len(stored) != 1 else ''}"
    latest = " (the latest of each run key)" if args.latest else ""
    return (f"no runs match {' '.join(f'--{col} {value}' for col, value in asked)} "
            f"({args.db} holds {runs}{latest}; {'; '.join(held)})")


def run(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise ValidationError(f"--limit must be >= 0 (0 = all); got {args.limit}")
    with open_existing(args.db) as store:
        stored = store.frame(latest=args.latest)
    df = stored
    for col in ("status", "mechanism", "dataset"):
        value = getattr(args, col)
        if value:
            df = df[df[col] == value]
    if df.empty:  # said on stderr, so that an empty table never passes for a listing
        print(f"privbench results: {_nothing_shown(stored, args)}", file=sys.stderr)
    if args.export:
        return _export(df, args.export)
    if df.empty:
        return 0
    from privbench.cli.common import print_table
    from privbench.results.fingerprints import footnote, other_code
    from privbench.running.fingerprint import current_hash

    shown = df if args.limit == 0 else df.tail(args.limit)
    marked = other_code(shown, current_hash)
    print_table([{**r, "other_code": m} for r, m in zip(shown.to_dict("records"), marked,
                                                         strict=True)],
                title=f"runs in {args.db}")
    if len(shown) < len(df):
        print(f"showing the last {len(shown)} of {len(df)} runs in {args.db} "
              "(--limit N shows more, --limit 0 all)")
    if (note := footnote(marked)) is not None:
        print(note)
    return 0
