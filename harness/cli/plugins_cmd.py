"""``privbench plugins [--json]``: every plugin with kind, name, version, distribution, status."""

from __future__ import annotations

import argparse
import json

from privbench.host.manager import get_host


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plugins", help="list mechanisms, LP backends, datasets, metrics, ...")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rows = get_host().plugins()
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="privbench plugins")
    for col in ("kind", "name", "version", "distribution", "status", "reason"):
        table.add_column(col, overflow="fold")
    colour = {"ok": "green", "unavailable": "yellow", "broken": "red"}
    for r in rows:
        table.add_row(r.kind, r.name, r.version, r.distribution,
                      f"[{colour.get(r.status, 'white')}]{r.status}", r.reason)
    Console().print(table)
    return 0
