"""``privbench plugins [--json]``: every plugin with kind, name, version, distribution, status;
``privbench plugins info NAME``: one plugin's description, citation, parameters and, for a
metric, its declared outputs."""

from __future__ import annotations

import argparse
import json
import shutil
import textwrap
from typing import Any

from privbench.host.manager import LISTED_KIND, PluginInfo, get_host
from privbench.protocol.errors import ValidationError, did_you_mean

#: what ``plugins info --kind`` takes: a listed kind, or the role ``figure`` (figures are
#: listed as kind ``reporter``, role ``figure``; docs/cli.md)
KIND_CHOICES = tuple(dict.fromkeys([*LISTED_KIND.values(), *LISTED_KIND]))


def _shown_kind(kind: str, role: str) -> str:
    """``reporter (figure)`` for a figure, the kind alone for every other plugin."""
    return kind if role == kind else f"{kind} ({role})"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plugins", help="list mechanisms, LP backends, datasets, metrics, ...",
                       description="List every plugin; `privbench plugins info NAME` describes "
                                   "one (parameters with their defaults, a metric's outputs).")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(func=run)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    info = actions.add_parser("info", help="one plugin: description, citation, parameters, outputs",
                              description="Describe a plugin: kind, description, citation, "
                                          "parameters (type, default, help) and, for a metric, "
                                          "its declared outputs (unit, direction).")
    info.add_argument("name", metavar="NAME", help="plugin name, as `privbench plugins` lists it")
    info.add_argument("--kind", choices=KIND_CHOICES,
                      help="only the plugin of this kind (when a name is used by several "
                           "kinds); reporter includes the figures, figure only them")
    info.add_argument("--json", action="store_true", help="print a JSON array of descriptions")
    info.set_defaults(func=run_info)


def run(args: argparse.Namespace) -> int:
    rows = get_host().plugins()
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=1))
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="privbench plugins")
    for col in ("kind", "name", "version", "distribution", "status", "reason"):
        table.add_column(col, overflow="fold")
    colour = {"ok": "green", "unavailable": "yellow", "broken": "red"}
    for r in rows:
        # escape: rich reads [ortools] in "pip install 'privbench[ortools]'" as markup
        table.add_row(_shown_kind(r.listed_kind, r.kind), escape(r.name), escape(r.version), escape(r.distribution),
                      f"[{colour.get(r.status, 'white')}]{escape(r.status)}", escape(r.reason))
    Console().print(table)
    print("details of one plugin: privbench plugins info NAME")
    return 0


def find(name: str, kind: str | None = None) -> list[PluginInfo]:
    """The plugins called ``name`` (of ``kind``: a listed kind, ``reporter`` taking in the
    figures, or the role ``figure``); exit 2 naming the known ones if none."""
    rows = [r for r in get_host().plugins() if kind in (None, r.kind, r.listed_kind)]
    found = [r for r in rows if r.name == name]
    if not found:
        known = sorted({r.name for r in rows})
        what = f"{kind} plugin" if kind else "plugin"
        raise ValidationError(f"unknown {what} {name!r}{did_you_mean(name, known)}; "
                              f"known: {', '.join(known)}")
    return found


def run_info(args: argparse.Namespace) -> int:
    from privbench.host.describe import describe

    found = [describe(r) for r in find(args.name, args.kind)]
    if args.json:
        print(json.dumps(found, indent=1, default=repr))
        return 0
    if len(found) > 1:
        print(f"{len(found)} plugins are called {args.name!r} "
              f"({', '.join(d['kind'] for d in found)}); --kind picks one\n")
    for k, data in enumerate(found):
        if k:
            print()
        _print_info(data)
    return 0


def _default(p: dict[str, Any]) -> str:
    return "required" if p["required"] else repr(p["default"])


def _print_info(data: dict[str, Any]) -> None:
    """Plain text, one fact a line (no rich markup: names and defaults print as they are)."""

    kind = data["kind"] if data.get("role", data["kind"]) == data["kind"] \
        else f"{data['kind']}, role {data['role']}"
    print(f"{data['name']} ({kind}, {data['status']}) from {data['distribution']} "
          f"{data['version']}")
    if data["reason"]:
        print(f"  {data['reason']}")
    for key in ("description", "citation"):
        if data.get(key):
            print(f"{key}: {data[key]}")
    if data.get("about") and data["about"] != data.get("description"):
        print(f"about: {data['about'].replace('``', '')}")
    if "class" in data:
        print(f"class: {data['class']}")
    params = data.get("parameters") or []
    if params:
        print("parameters (NAME:k=v,... on the command line):")
        width = max(len(p["name"]) for p in params)
        columns = max(60, shutil.get_terminal_size((80, 24)).columns)
        for p in params:  # the whole doc, wrapped (once cut at its first sentence)
            head = f"  {p['name']:<{width}}  {p['type'] or '-'} = {_default(p)}"
            doc = " ".join(str(p["doc"] or "").split())
            print("\n".join(textwrap.wrap(doc, columns, initial_indent=head + "  ",
                                           subsequent_indent=" " * 6)) if doc else head)
    elif data.get("class"):
        print("parameters: none")
    if data["kind"] == "metric":
        print(f"computed: {'by default' if data['default'] else 'when named (-M ' + data['name'] + ')'}"
              f"; needs {', '.join(data['needs']) or 'nothing'}")
        outputs = data.get("outputs") or []
        print("outputs (name, unit, direction: lower/higher = which is more private):"
              if outputs else "outputs: none declared")
        width = max((len(o["name"]) for o in outputs), default=0)
        kinds = [f"{o['unit']}, {o['direction']}" for o in outputs]
        span = max(map(len, kinds), default=0)
        for o, kind in zip(outputs, kinds, strict=True):
            label = f"{o['label']}: " if o.get("label") else ""
            print(f"  {o['name']:<{width}}  {kind:<{span}}  {label}{o['description']}")
