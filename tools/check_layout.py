"""Check the layering of privbench's source tree; exit 1 with one line per problem.

    python tools/check_layout.py

Reports: import cycles between modules (imports inside functions included, so a cycle
cannot hide behind a lazy import), functions longer than 80 lines in harness/, plugins/
and datasets/, a name imported only for type checking but used at run time (a lazy
import gone missing), a plugin importing another plugin's private (``_x``) modules, a layer
importing one above it (protocol < _plumbing < measures < host < results < running <
cli), and a plugin or data set importing anything of the host but the public
``privbench`` API, ``privbench.protocol``, ``privbench.measures`` and
``privbench._plumbing`` (see docs/architecture.md). And that the host names no plugin:
a string in harness/ code (docstrings and comments are not code) that is the name of a
built-in plugin (a class's ``name = "..."`` in plugins/ or datasets/), unless listed in
:data:`NOT_PLUGIN_REFERENCES`; a module outside plugins/reporters/ importing a reporter;
a reporter importing a module that registers figures (it gets them from the host). And
that settings declared once stay so (:data:`SETTINGS_FACES`): in the modules that show
them (a plugin, a solver's entry point, a command), a parameter or a ``--flag`` named like
a field of the settings dataclass with a default of its own (None, "not given", is fine).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"harness": "privbench", "plugins": "privbench.plugins", "datasets": "privbench.datasets"}
MAX_LINES = 80
#: the base of the host: three packages split by job, ordered within (nothing of the base
#: imports above it): what plugins implement and receive (protocol: imports no other
#: privbench package), private process plumbing (on the protocol's errors) and the exact
#: measures (on the protocol's types)
BASE = ("privbench.protocol", "privbench.measures", "privbench._plumbing")
#: what each layer of the host may import (besides itself and the standard library)
ALLOWED = {
    "privbench.protocol": set(),
    "privbench._plumbing": {"privbench.protocol"},
    "privbench.measures": {"privbench.protocol", "privbench._plumbing"},
    "privbench.host": set(BASE),
    "privbench.running": {*BASE, "privbench.host", "privbench.results"},
    "privbench.results": set(BASE),
}


#: what plugins/ and datasets/ may import of the host: the public API, the protocol, the
#: exact measures and (built-in plugins only, no stability promise) the plumbing
PLUGIN_ALLOWED = (*BASE, "privbench.plugins", "privbench.datasets")


#: built-in plugin names that harness/ code may write because they name something else too
NOT_PLUGIN_REFERENCES = {
    "distortion": "the record field and output E[d] (the distortion metric's output)",
    "scipy": "the Python package (provenance, watched modules)",
    "cvxpy": "the Python package (provenance)",
    "ortools": "the Python package (provenance)",
}


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every privbench module ``module`` imports, at any depth of its code."""
    targets: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module and name.startswith("privbench"):
                targets.add(name)
    return targets


def _is_ancestor(a: str, b: str) -> bool:
    return b.startswith(a + ".")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def long_functions(path: Path) -> list[tuple[int, str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, node.name, node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_LINES]


def _bound(nodes: list[ast.stmt]) -> set[str]:
    return {(a.asname or a.name.split(".")[0]) for n in nodes if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names}


def type_only_uses(path: Path) -> list[tuple[int, str]]:
    """Names imported only under ``if TYPE_CHECKING:`` but used at run time outside an
    annotation, in a scope that does not import them itself (a lazy import gone missing:
    a NameError when the code runs)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checking = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    names = _bound([m for block in checking for m in ast.walk(block)]) - _bound(tree.body)
    if not names:
        return []
    annotations = {id(m) for n in ast.walk(tree) for ann in _annotations(n) for m in ast.walk(ann)}
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, have: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if child in checking:
                continue
            inner = have
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = have | _bound([m for m in ast.walk(child) if isinstance(m, ast.stmt)])
            if isinstance(child, ast.Name) and child.id in names - have and id(child) not in annotations:
                found.append((child.lineno, child.id))
            visit(child, inner)

    visit(tree, set())
    return found


def _annotations(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    a = node.args
    args = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]
    return [x.annotation for x in args if x.annotation] + ([node.returns] if node.returns else [])


def _layer(module: str) -> str | None:
    return next((layer for layer in ALLOWED if module == layer or _is_ancestor(layer, module)), None)


def _private_owner(target: str, known: dict[str, Path]) -> str | None:
    """Who may import private module ``target``: ``_sppm.x`` belongs to plugin ``sppm``
    when a sibling module of that name exists, else ``_x`` is shared by its folder (and
    the folders below it)."""
    parts = target.split(".")
    i = next((i for i, p in enumerate(parts) if i > 1 and p.startswith("_") and not p.startswith("__")), None)
    if i is None:
        return None
    folder = ".".join(parts[:i])
    plugin = f"{folder}.{parts[i][1:]}"
    return plugin if plugin in known else folder


def _reaches(module: str, target: str, known: dict[str, Path]) -> str | None:
    owner = _private_owner(target, known)
    if owner is None or not module.startswith("privbench.plugins"):
        return None
    parts = target.split(".")
    first_private = next(i for i, p in enumerate(parts) if i > 1 and p.startswith("_"))
    private_root = ".".join(parts[: first_private + 1])
    inside = module == private_root or module.startswith(private_root + ".")
    if inside or module == owner or (owner not in known or known[owner].name == "__init__.py") \
            and module.startswith(owner + "."):
        return None
    return owner


def _plugin_breach(module: str, target: str) -> bool:
    """A plugin or data set importing the host beyond ``privbench`` and its protocol."""
    if not module.startswith(("privbench.plugins", "privbench.datasets")):
        return False
    return target != "privbench" and not any(target == a or _is_ancestor(a, target)
                                             for a in PLUGIN_ALLOWED)


def plugin_names(known: dict[str, Path]) -> set[str]:
    """Names of the built-in plugins: ``name = "..."`` in a class body of plugins/ or
    datasets/."""
    found = set()
    for module, path in known.items():
        if not module.startswith(("privbench.plugins", "privbench.datasets")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found |= {b.value.value for b in node.body if isinstance(b, ast.Assign)
                          and any(isinstance(t, ast.Name) and t.id == "name" for t in b.targets)
                          and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)}
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def named_plugins(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """Strings in ``path``'s code (not docstrings) that are a plugin name, alone or as a
    ``name:params`` / ``name[params]`` spec: the host choosing a plugin by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
                  and n.value.split(":")[0].split("[")[0] in names)


def _registers_figures(path: Path) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == "privbench_register_figures"
               for n in ast.parse(path.read_text(encoding="utf-8")).body)


def _reporter_breach(module: str, target: str, known: dict[str, Path]) -> str | None:
    """Why ``module`` may not import ``target``: only reporters import a reporter, and a
    reporter imports no figure plugin (the host hands it the figures)."""
    reporters = "privbench.plugins.reporters"
    inside = module == reporters or module.startswith(reporters + ".")
    if (target == reporters or target.startswith(reporters + ".")) and not inside:
        return "imports a reporter (only the host runs reporters)"
    if inside and target in known and target.startswith("privbench.plugins.figures") \
            and _registers_figures(known[target]):
        return "imports a figure plugin (a reporter gets figures from the host)"
    return None


#: settings declared once ("file:Class", a dataclass whose fields hold the one default of
#: each knob) and the modules whose parameters and command-line flags must not give one
SETTINGS_FACES = {
    "plugins/mechanisms/_sppm/settings.py:SPPMSettings": (
        "plugins/mechanisms/sppm.py", "plugins/mechanisms/_sppm/solve.py",
        "plugins/mechanisms/_sppm/benchmark_cmd.py"),
}


def settings_fields(path: Path, cls: str) -> set[str]:
    """The field names of dataclass ``cls`` in ``path`` (its annotated class attributes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {item.target.id for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
    return set()


def _given(node: ast.expr | None) -> bool:
    return node is not None and not (isinstance(node, ast.Constant) and node.value is None)


def second_defaults(path: Path, knobs: set[str]) -> list[tuple[int, str]]:
    """(line, knob) of each parameter named like a knob with a default, and each
    ``add_argument("--knob", default=...)``, in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults,
                             strict=True)) + list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
            found += [(arg.lineno, arg.arg) for arg, default in pairs
                      if arg.arg in knobs and _given(default)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "add_argument" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            name = node.args[0].value.lstrip("-").replace("-", "_")
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if name in knobs and _given(default):
                found.append((node.lineno, name))
    return found


def _settings_problems(root: Path) -> list[str]:
    found = []
    for declared, faces in SETTINGS_FACES.items():
        file, cls = declared.split(":")
        if not (root / file).exists():
            continue
        knobs = settings_fields(root / file, cls)
        for face in faces:
            if (root / face).exists():
                found += [f"second default: {face}:{line} {knob} (its one default is {cls}'s, "
                          f"{file}; read it from there)"
                          for line, knob in second_defaults(root / face, knobs)]
    return found


def problems(root: Path = ROOT) -> tuple[list[str], int, int]:
    known = modules(root)
    # a package's __init__ importing its own submodules is not a cycle of the design
    graph = {m: {t for t in imports(m, p, known) if not _is_ancestor(t, m) and not _is_ancestor(m, t)}
             for m, p in known.items()}
    found = [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    names = plugin_names(known) - set(NOT_PLUGIN_REFERENCES)
    for module, path in known.items():
        rel = path.relative_to(root)
        if not module.startswith(("privbench.plugins", "privbench.datasets")):  # harness/
            found += [f"plugin named by the host: {rel}:{line} {value!r} (let the plugin declare "
                      "it, e.g. default = True)" for line, value in named_plugins(path, names)]
        found += [f"long function: {rel}:{line} {name} ({n} lines)"
                  for line, name, n in long_functions(path)]
        found += [f"type-only import used at run time: {rel}:{line} {name}"
                  for line, name in type_only_uses(path)]
        layer = _layer(module)
        for target in sorted(graph[module]):
            tlayer = _layer(target)
            if layer and (target == "privbench" or (tlayer and tlayer != layer and tlayer not in ALLOWED[layer])
                          or (not tlayer and target.startswith("privbench."))):
                found.append(f"layer breach: {module} imports {target}")
            if _plugin_breach(module, target):
                found.append(f"plugin import: {rel} imports {target} (plugins and data sets "
                             "import only privbench, its protocol, measures and plumbing)")
            if why := _reporter_breach(module, target, known):
                found.append(f"plugin import: {rel} imports {target}: {why}")
            owner = _reaches(module, target, known)
            if owner:
                found.append(f"plugin reach: {rel} imports {target}, private to {owner}")
    found += _settings_problems(root)
    return found, len(known), sum(len(t) for t in graph.values())


def main() -> int:
    found, n_modules, n_edges = problems()
    for line in found:
        print(line)
    print(f"{n_modules} modules, {n_edges} import edges: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
