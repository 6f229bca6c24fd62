"""``privbench results``: show stored runs; export them to CSV or Parquet."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from privbench.protocol.errors import PrivbenchError, ValidationError
from privbench.results.store import DEFAULT_DB, open_existing
from privbench.running.records import STATUSES


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="show or export stored runs")
    p.add_argument("--db", type=Path, default=DEFAULT_DB)
    p.add_argument("--status", choices=STATUSES, help="only runs with this status")
    p.add_argument("--mechanism", help="only runs of this mechanism")
    p.add_argument("--dataset", help="only runs on this dataset")
    p.add_argument("--latest", action="store_true", help="only the last run of each run key")
    p.add_argument("--limit", type=int, default=50, help="rows to show (0 = all)")
    p.add_argument("--export", type=Path, metavar="FILE.csv|FILE.parquet",
                   help="write the selected runs to CSV or Parquet")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise ValidationError(f"--limit must be >= 0 (0 = all); got {args.limit}")
    with open_existing(args.db) as store:
        df = store.frame(latest=args.latest)
    for col in ("status", "mechanism", "dataset"):
        value = getattr(args, col)
        if value:
            df = df[df[col] == value]
    if args.export:
        out = args.export
        flat = df.copy()
        for col in ("params", "dataset_params", "metrics", "provenance"):
            flat[col] = flat[col].map(lambda v: json.dumps(v, sort_keys=True))
        for col in ("seed", "n", "nnz", "support_max"):  # integers, not 16.0 (NULLs -> float)
            if col in flat:
                flat[col] = flat[col].astype("Int64")
        if out.suffix not in (".csv", ".parquet"):
            raise ValidationError(f"--export {out}: expected a .csv or .parquet file name")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            if out.suffix == ".csv":
                flat.to_csv(out, index=False)
            else:
                flat.to_parquet(out, index=False)
        except ImportError:
            raise ValidationError("Parquet export needs pyarrow: pip install 'privbench[parquet]'") from None
        except OSError as exc:
            raise PrivbenchError(f"--export {out}: cannot write: {exc.strerror or exc}") from None
        print(f"wrote {len(flat)} runs to {out}")
        return 0
    from privbench.cli.common import print_table
    from privbench.results.fingerprints import footnote, other_code
    from privbench.running.fingerprint import current_hash

    shown = df if args.limit == 0 else df.tail(args.limit)
    marked = other_code(shown, current_hash)
    print_table([{**r, "other_code": m} for r, m in zip(shown.to_dict("records"), marked,
                                                         strict=True)],
                title=f"{len(df)} runs in {args.db}")
    if (note := footnote(marked)) is not None:
        print(note)
    return 0
