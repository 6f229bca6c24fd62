"""A fingerprint of the code that produces a run, so ``--resume`` never reuses stale rows.

The fingerprint of a run covers privbench's own code (its version and a hash of the
host's source files; the git commit and dirty flag are recorded beside it) and, for each
plugin the run uses (mechanism, data set, LP backend, metrics), the plugin's
distribution, version and a hash of its source: the module that defines the class plus
every module of the same package it imports (``sppm`` pulls in ``_sppm/*``). A module
plugin outside any distribution is identified by its file's hash alone.

The git commit is recorded but not hashed: a commit that only touches the docs does not
make every stored run stale, while an edit to any file a run depends on does, committed
or not. Everything is cached per process (a file is read once, keyed by its size and
modification time), so fingerprinting a 10,000-run sweep costs a few file reads.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from privbench.running.specs import RunSpec

#: hex digits of the short fingerprint stored in the record's ``fingerprint`` field
SHORT = 16
#: host sub-packages whose code never changes a number (commands, printing)
_HOST_SKIP = ("cli",)


@functools.cache
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def file_hash(path: str | Path) -> str:
    """sha256 of a file, read once per process unless its size or mtime changed."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return "missing"
    return _file_digest(str(p), st.st_size, st.st_mtime_ns)


def _hash_files(paths: list[Path], root: Path | None = None) -> str:
    h = hashlib.sha256()
    for p in sorted(set(paths)):
        name = str(p.relative_to(root)) if root is not None and p.is_relative_to(root) else p.name
        h.update(f"{name}\0{file_hash(p)}\0".encode())
    return h.hexdigest()


def host_hash() -> str:
    """Hash of privbench's own source (``privbench`` package, commands excluded)."""
    import privbench

    root = Path(privbench.__file__).resolve().parent
    files = [p for p in root.rglob("*.py")
             if p.relative_to(root).parts[0] not in _HOST_SKIP and "__pycache__" not in p.parts]
    return _hash_files(files, root)


@functools.cache
def _spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of module ``name`` without running any module's code but packages' ``__init__``.

    ``find_spec`` imports the parent first: a name read off ``from .solve import solve_sppm``
    (``..._sppm.solve.solve_sppm``, which might have been a submodule) would run ``solve``
    and all it imports (numba, the solvers: 2 s of ``privbench results``). A name whose
    parent is no package is no module, so the parent is looked up first, the same way.
    """
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        parent_spec = _spec(parent)
        if parent_spec is None or parent_spec.submodule_search_locations is None:
            return None
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _module_file(name: str) -> Path | None:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if path is None:
        spec = _spec(name)
        path = spec.origin if spec is not None else None
    if not path or not str(path).endswith(".py"):
        return None
    return Path(path).resolve()


def _imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return set()
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1]) if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


#: the fields of a node that hold statement lists (imports are statements, so they stand only
#: there, at any depth of functions, classes, branches, loops, ``with``, ``try`` and ``match``)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement of ``tree``: what ``ast.walk`` yields with the expressions (nine in
    ten nodes) left out."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for field in _BODIES:
            children = getattr(node, field, None)
            if isinstance(children, list):
                todo.extend(children)


def _family(module: str) -> str:
    """The package whose modules count as the plugin's own code: ``privbench.plugins``
    for a built-in mechanism, ``my_plugin`` for a third-party one."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "privbench" and len(parts) > 1 else parts[0]


@functools.cache
def module_closure(module: str) -> tuple[Path, ...]:
    """Files of ``module`` and of every module of its family it imports, transitively."""
    family = _family(module)
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        for other in _imports(path, name, path.name == "__init__.py"):
            if (other == family or other.startswith(family + ".")) and other not in seen:
                todo.append(other)
    return tuple(sorted(set(seen.values())))


@functools.cache
def plugin_fingerprint(kind: str, name: str) -> dict[str, Any]:
    """Distribution, version and source hash of the plugin ``name`` of ``kind``."""
    from privbench.host.manager import get_host

    rows = [p for p in get_host().plugins() if p.kind == kind and p.name == name]
    if not rows or rows[0].cls is None:
        return {"kind": kind, "name": name, "distribution": None, "version": None,
                "source": "unknown"}
    info, cls = rows[0], rows[0].cls
    modules = {cls.__module__}
    if info.module:
        modules.add(info.module.partition(":")[0])
    files = [f for m in sorted(modules) for f in module_closure(m)]
    common = Path(*Path(files[0]).parts[:-1]) if files else None
    return {"kind": kind, "name": name, "distribution": info.distribution,
            "version": info.version, "source": _hash_files(files, common)[:SHORT],
            "files": len(set(files))}


@functools.cache
def core_fingerprint() -> dict[str, Any]:
    """privbench's version and source hash (git state recorded, not hashed)."""
    import privbench
    from privbench.running.provenance import provenance

    return {"privbench": privbench.__version__, "source": host_hash()[:SHORT],
            "git_commit": provenance().get("git_commit")}


def used_plugins(spec: RunSpec) -> list[tuple[str, str]]:
    """(kind, name) of every plugin a run of ``spec`` may use: its mechanism, data set,
    every plugin its parameters name (``plugin_params``, given or the mechanism's default:
    its LP backend, say) and every default or requested metric."""
    from privbench.host.manager import get_host
    from privbench.protocol.errors import PrivbenchError

    host = get_host()
    used = [("mechanism", spec.mechanism), ("dataset", spec.dataset)]
    try:
        cls = host.get("mechanism", spec.mechanism)
        named, defaults = dict(cls.plugin_params), cls.param_defaults()
    except PrivbenchError:
        named, defaults = {}, {}
    for param, kind in sorted(named.items()):
        plugin = spec.mechanism_params.get(param, defaults.get(param))
        if isinstance(plugin, str):
            used.append((kind, plugin))
    used += [("metric", m) for m, cls in sorted(host.metrics().items())
             if (cls.default or m in spec.metrics) and m not in spec.skip_metrics]
    return used


def fingerprint_of(used: list[tuple[str, str]]) -> dict[str, Any]:
    """``{"hash": short hex, "core": {...}, "plugins": [...]}`` for the plugins ``used``."""
    core = core_fingerprint()
    plugins = [plugin_fingerprint(kind, name) for kind, name in used]
    identity = {"privbench": core["privbench"], "source": core["source"],
                "plugins": [{k: p[k] for k in ("kind", "name", "distribution", "version", "source")}
                            for p in plugins]}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return {"hash": digest[:SHORT], "core": core, "plugins": plugins}


def run_fingerprint(spec: RunSpec) -> dict[str, Any]:
    """The fingerprint of the code that runs ``spec`` in this process."""
    return fingerprint_of(used_plugins(spec))


def current_hash(details: Any) -> str | None:
    """What the installed code's fingerprint would be for a stored run, from the plugins
    its provenance lists (None when the row has no fingerprint details)."""
    if not isinstance(details, dict) or not isinstance(details.get("plugins"), list):
        return None
    try:
        used = [(str(p["kind"]), str(p["name"])) for p in details["plugins"]]
    except (TypeError, KeyError):
        return None
    return fingerprint_of(used)["hash"]


def clear_cache() -> None:
    """Forget cached hashes (tests that edit a plugin within one process)."""
    for cached in (_file_digest, module_closure, plugin_fingerprint, core_fingerprint, _spec):
        cached.cache_clear()
