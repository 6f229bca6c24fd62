"""``privbench data list|info|fetch``: what a dataset is, where its files are, download it.

``info NAME[:k=v,...]`` shows source, licence, citation, the files a dataset needs, where
they were found (data_dir, PRIVBENCH_DATA_DIR or the cache), their sizes and whether they
match the official checksums; it never downloads. ``fetch NAME`` downloads the official
files into the cache (``PRIVBENCH_CACHE_DIR`` or ``~/.cache/privbench``), checking sha256.
"""

from __future__ import annotations

import argparse
import inspect
import json
from typing import Any

from privbench.host.manager import get_host
from privbench.protocol.errors import PluginError
from privbench.running.specs import split_spec, typed_params


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="list datasets, show where their files are, download them",
                       description="Dataset files: list, info (never downloads), fetch.")
    actions = p.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    ls = actions.add_parser("list", help="every dataset adapter with its source")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)
    info = actions.add_parser("info", help="source, licence, citation, files, sizes")
    info.add_argument("name", metavar="NAME[:k=v,...]",
                      help="data set, with parameters as for `run -d` (csv:path=t.csv,...)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=run_info)
    fetch = actions.add_parser("fetch", help="download the official files into the cache")
    fetch.add_argument("name", metavar="NAME[:k=v,...]",
                       help="data set to download, with parameters as for `run -d`")
    fetch.add_argument("--force", action="store_true",
                       help="download again even when a verified copy is cached")
    fetch.add_argument("--json", action="store_true", help="print JSON")
    fetch.set_defaults(func=run_fetch)


def _adapter(spec: str) -> Any:
    name, raw = split_spec(spec, what="dataset")
    cls = get_host().get("dataset", name)
    return cls.create(**typed_params(cls, raw))


def _plain(value: Any) -> Any:
    """JSON-friendly copy (paths and other objects become strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _files_available(cls: Any) -> tuple[str, str]:
    """(data, where): ``found`` and the folder, ``missing`` and how to get the files, or
    ``generated`` for adapters that need no files. Never downloads."""
    if cls is None:
        return "-", ""
    if "path" in cls.param_names():
        return "your file", "pass path=FILE"
    if getattr(cls, "bundled", ""):
        return "bundled", str(cls.bundled)
    if not hasattr(cls, "file_spec"):
        return "generated", "no files needed"
    try:
        info = _plain(cls.create().info())
    except Exception as exc:  # noqa: BLE001 - a listing never fails on one adapter
        return "unknown", f"{type(exc).__name__}: {exc}"
    files = info.get("files") or {}
    if files.get("found"):
        return "found", str(files.get("location", ""))
    return "missing", f"privbench data info {cls.name} says how to get them"


def run_list(args: argparse.Namespace) -> int:
    rows = [p for p in get_host().plugins() if p.kind == "dataset"]
    data = []
    for r in rows:
        files, where = _files_available(r.cls if r.status == "ok" else None)
        data.append({"name": r.name, "status": r.status, "distribution": r.distribution,
                     "description": getattr(r.cls, "description", "") if r.cls else r.reason,
                     "source": getattr(r.cls, "source", "") if r.cls else "",
                     "data": files, "where": where})
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="privbench datasets (status: the plugin's; data: its files)")
    for col in ("name", "status", "data", "where", "description"):
        table.add_column(col, overflow="fold")
    for d in data:
        table.add_row(d["name"], d["status"], d["data"], d["where"], d["description"])
    Console().print(table)
    return 0


def _parameter_lines(cls: type, values: dict[str, Any]) -> str:
    """``name = value  help`` a line (the help from the class docstrings)."""
    from privbench.host.describe import first_sentence, parameter_docs

    docs = parameter_docs(cls)
    return "\n".join(f"{k} = {v!r}" + (f"  {first_sentence(docs[k])}" if docs.get(k) else "")
                     for k, v in values.items())


def run_info(args: argparse.Namespace) -> int:
    adapter = _adapter(args.name)
    data = _plain(adapter.info())
    # an adapter reports a bad parameter (split=bogus, a data_dir that does not exist)
    # under "error": still show what is known, but the request was invalid (exit 2)
    status = 2 if data.get("error") else 0
    if args.json:
        print(json.dumps(data, indent=1))
        return status
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title=f"dataset {data.get('name', args.name)}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    files = data.pop("files", None)
    looked = data.pop("looked_in", None)
    for key, value in data.items():
        if key == "parameters" and isinstance(value, dict):
            text = _parameter_lines(type(adapter), value)
        else:
            text = value if isinstance(value, str) else json.dumps(value)
        table.add_row(escape(key), escape(text))
    console.print(table)
    if isinstance(files, dict):
        if files.get("found"):
            console.print(f"files found ({files.get('origin')}): {files.get('location')}",
                          highlight=False)
            for member, entry in (files.get("files") or {}).items():
                if isinstance(entry, dict):
                    ok = entry.get("official_sha256")
                    mark = "" if ok is None else ("  sha256 ok" if ok else
                                                  "  sha256 differs from the official file")
                    console.print(f"  {member}: {entry.get('path')} "
                                  f"({entry.get('bytes'):,} bytes){mark}", highlight=False)
                else:
                    console.print(f"  {member}: {entry}", highlight=False)
        else:
            console.print("[yellow]files not found[/]")
            for line in looked or []:
                console.print(f"  looked in {line}", highlight=False)
    return status


def run_fetch(args: argparse.Namespace) -> int:
    adapter = _adapter(args.name)
    fetch = adapter.fetch
    params = inspect.signature(fetch).parameters
    kwargs = {"force": args.force} if "force" in params else {}
    if "progress" in params:
        kwargs["progress"] = not args.json
    try:
        result = _plain(fetch(**kwargs))
    except TypeError as exc:  # a third-party adapter with another fetch signature
        raise PluginError(f"dataset {adapter.name!r}: fetch failed: {exc}") from exc
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    files = result.get("files")
    if not files:
        print(f"{result.get('name', args.name)}: {result.get('reason', 'nothing to download')}")
        return 0
    for entry in files:
        state = "downloaded" if entry.get("downloaded") else entry.get("reason", "kept")
        print(f"{entry.get('file')}: {state}")
    return 0
