"""``privbench report [--db PATH] --out DIR``: a static HTML page of the stored runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..host import get_host
from ..store import DEFAULT_DB


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="write an HTML report (figures + tables) of the stored runs",
        description="Read the results store and write DIR/index.html with every figure "
                    "embedded, plus DIR/figures/*.png. Reads SQLite only; runs nothing.")
    p.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"results store (default {DEFAULT_DB})")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--reporter", default="html", help="reporter plugin (default html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cls = get_host().get("reporter", args.reporter)
    path = cls.create().report(args.db, args.out)
    print(f"wrote {path}")
    return 0
