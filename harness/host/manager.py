"""The plugin host: one pluggy manager, the entry-point loader and a typed facade.

Built-in plugins load through the distribution's own ``privbench`` entry points,
exactly like third-party ones. Loading never raises: a module that fails to import, a
hook that fails, a class that is not a valid plugin or a duplicate name is recorded as
``broken`` with its reason; a plugin whose optional dependency is missing is
``unavailable`` with the pip extra (of its own distribution) that installs it. A built-in
keeps its name against any third party; a name two third-party plugins claim is
ambiguous, and neither is used until the user blocks one.

Environment:

* ``PRIVBENCH_PLUGINS`` - comma-separated allow-list of third-party plugins (entry-point
  or distribution names). Unset: load all; empty: built-ins only.
* ``PRIVBENCH_DISABLE_PLUGINS`` - comma-separated entry-point names to block
  (``pm.set_blocked``), built-ins included.
* ``PRIVBENCH_PLUGIN_MODULES`` - comma-separated modules (importable, or in the current
  folder) to register as plugins without packaging them (like ``pytest -p``); inherited by
  worker processes.
* ``PRIVBENCH_TRACE_PLUGINS`` - set to 1 to trace loading and hook calls on stderr.

Nothing outside this module touches ``pm.hook``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata as md
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pluggy

from privbench._plumbing.abort import plugin_code
from privbench._plumbing.env import env_flag
from privbench.host import hookspecs
from privbench.protocol.dataset import DatasetAdapter
from privbench.protocol.errors import PluginAbort, PluginError, did_you_mean
from privbench.protocol.executor import Executor, Reporter
from privbench.protocol.figure import Figure
from privbench.protocol.lp import LPBackend
from privbench.protocol.mechanism import Mechanism
from privbench.protocol.metric import (
    CERTIFICATE_OUTPUTS,
    PART_NEEDS,
    RESULT_NEEDS,
    RUNNER_OUTPUTS,
    Metric,
    Output,
    unknown_needs,
)
from privbench.protocol.outputs import Declared, provide_declared
from privbench.protocol.parts import PARTS

ENTRY_POINT_GROUP = "privbench"
BUILTIN_DISTRIBUTION = "privbench"

#: hook name -> (kind, required base class)
HOOK_KINDS: dict[str, tuple[str, type]] = {
    "privbench_register_mechanisms": ("mechanism", Mechanism),
    "privbench_register_lp_backends": ("lp_backend", LPBackend),
    "privbench_register_datasets": ("dataset", DatasetAdapter),
    "privbench_register_metrics": ("metric", Metric),
    "privbench_register_executors": ("executor", Executor),
    "privbench_register_reporters": ("reporter", Reporter),
    "privbench_register_figures": ("figure", Figure),
}
KINDS = tuple(kind for kind, _ in HOOK_KINDS.values())
#: the kind a plugin is listed as (``plugins``, ``plugins --json``, ``plugins info``): a figure
#: is part of what the reporter draws, so it is listed as kind ``reporter``, role ``figure``
LISTED_KIND = {kind: "reporter" if kind == "figure" else kind for kind in KINDS}
#: hooks that declare no plugin classes
OTHER_HOOKS = ("privbench_register_commands",)

#: seconds a plugin module may take to import before it is listed as broken
IMPORT_TIMEOUT_S = 60.0


class _ImportTimeout(Exception):
    pass


@contextlib.contextmanager
def _import_guard() -> Iterator[None]:
    """A plugin module that calls ``sys.exit()`` while importing, or takes longer than
    :data:`IMPORT_TIMEOUT_S` (it sleeps or waits on the network at import), becomes a
    broken plugin (``PluginAbort``), not the end of ``privbench`` nor a hang of every
    command. The limit is SIGALRM's, so only in the main thread."""
    import signal
    import threading

    timed = (threading.current_thread() is threading.main_thread()
             and hasattr(signal, "setitimer") and signal.getitimer(signal.ITIMER_REAL)[0] == 0)
    previous = None
    if timed:
        def on_alarm(signum: int, frame: object) -> None:
            raise _ImportTimeout

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, IMPORT_TIMEOUT_S)
    try:
        yield
    except SystemExit as exc:
        raise PluginAbort(f"the module called sys.exit({exc.code!r}) while importing") from None
    except _ImportTimeout:
        raise PluginAbort(f"importing took longer than {IMPORT_TIMEOUT_S:g} s (does it sleep "
                          "or reach the network at import?)") from None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


#: the kind of a plugin row whose kind cannot be known: a module that failed to import
#: and whose source names no hook (or hooks of several kinds), a misspelt hook only
UNKNOWN_KIND = "plugin"


def _module_source(module_path: str) -> str | None:
    """The source of ``module_path`` (an entry point's value, ``pkg.mod`` or ``pkg.mod:attr``),
    found without importing it or its parent packages (a parent that fails to import must
    not hide the module's source); None when it cannot be found."""
    from importlib.machinery import PathFinder

    name = module_path.partition(":")[0].strip()
    path: list[str] | None = None
    spec = None
    parts = name.split(".")
    for k in range(len(parts)):
        dotted = ".".join(parts[:k + 1])
        if k == 0 or ".".join(parts[:k]) in sys.modules:  # imports nothing more
            spec = importlib.util.find_spec(dotted)
        else:  # in a parent package that is not (or could not be) imported
            spec = PathFinder.find_spec(dotted, path)
        if spec is None:
            return None
        path = list(spec.submodule_search_locations or [])
    loader = getattr(spec, "loader", None)
    return loader.get_source(name) if loader is not None and hasattr(loader, "get_source") else None


def _declared_kind(module_path: str) -> str:
    """Kind of a module that could not be imported, from the hooks its source defines or
    imports by name (read, not imported); :data:`UNKNOWN_KIND` when the source cannot be
    read, names no hook, or names hooks of several kinds (no kind is guessed)."""
    import ast

    try:
        tree = ast.parse(_module_source(module_path) or "")
    except Exception:  # noqa: BLE001 - a module that cannot even be found or parsed
        return UNKNOWN_KIND
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return _kind_of_hooks(names)


def _kind_of_hooks(names: Iterable[str]) -> str:
    """The one kind whose registration hook is among ``names``, else :data:`UNKNOWN_KIND`."""
    kinds = {HOOK_KINDS[n][0] for n in names if n in HOOK_KINDS}
    return kinds.pop() if len(kinds) == 1 else UNKNOWN_KIND


def _one_line(text: str) -> str:
    """A reason on one line: pluggy's validation errors run over three (which plugin, the
    hookimpl's signature, what is wrong); each line is kept, joined by "; "."""
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _normalise(name: str) -> str:
    """PEP 503 normalisation, so ``my_plugin`` and ``my-plugin`` name one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _env_list(name: str, env: dict[str, str]) -> set[str] | None:
    if name not in env:
        return None
    return {item.strip() for item in env[name].split(",") if item.strip()}


@dataclass
class PluginInfo:
    """One row of ``privbench plugins``."""

    kind: str
    name: str
    version: str
    distribution: str
    status: str  # ok | unavailable | broken
    reason: str = ""
    plugin: str = ""  # entry-point / registration name
    module: str = ""
    cls: type | None = field(default=None, repr=False)

    @property
    def listed_kind(self) -> str:
        """The kind every listing shows (:data:`LISTED_KIND`): ``reporter`` for a figure."""
        return LISTED_KIND.get(self.kind, self.kind)

    def to_dict(self) -> dict[str, Any]:
        """The row as plain data (``plugins --json``). There are seven kinds of plugin, but
        the JSON contract (docs/cli.md) lists six values of ``kind`` (mechanism, lp_backend,
        dataset, metric, executor, reporter): a figure is listed as kind ``reporter`` with
        ``role: "figure"`` (it is part of what the reporter draws); every other row has
        ``role`` equal to its kind."""
        data = asdict(self)
        data.pop("cls")
        data["role"] = self.kind
        data["kind"] = self.listed_kind
        return data


@dataclass
class _Source:
    distribution: str
    version: str
    module: str
    #: an installed distribution (an entry point's), so ``pip install 'DIST[extra]'`` exists
    packaged: bool = False


class _DistributionNames:
    """Each entry point's distribution name and version, its metadata parsed once.

    ``Distribution.name`` and ``.version`` parse the METADATA file on every access (about
    0.7 ms each); the host read them three times for each of the ~50 built-in entry points,
    a tenth of ``privbench plugins``' start-up."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Any, tuple[str, str]]] = {}

    def __call__(self, ep: md.EntryPoint) -> tuple[str, str]:
        dist = getattr(ep, "dist", None)
        if dist is None:
            return "?", "?"
        hit = self._seen.get(id(dist))
        if hit is None or hit[0] is not dist:
            meta = dist.metadata
            hit = (dist, (meta["Name"] or "?", meta["Version"] or "?"))
            self._seen[id(dist)] = hit
        return hit[1]


class PluginHost:
    """Facade over the pluggy manager: load plugins, list them, look them up by kind."""

    def __init__(self, *, autoload: bool = True, env: dict[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.pm = pluggy.PluginManager("privbench")
        self.pm.add_hookspecs(hookspecs)
        self._sources: dict[str, _Source] = {}
        self._load_problems: list[PluginInfo] = []
        self._cache_key: tuple[Any, ...] | None = None
        self._cache: list[PluginInfo] = []
        #: (kind, name) -> why the name is ambiguous (several third-party plugins claim it)
        self._conflicts: dict[tuple[str, str], str] = {}
        self.trace = env_flag("PRIVBENCH_TRACE_PLUGINS", env=self.env)
        if self.trace:
            self.pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
            self.pm.enable_tracing()
        if autoload:
            self.load_entrypoints()

    # -- loading ---------------------------------------------------------------------
    def _log(self, message: str) -> None:
        if self.trace:
            print(f"[privbench plugins] {message}", file=sys.stderr)

    def load_entrypoints(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Import and register every allowed entry point; never raises."""
        allow = _env_list("PRIVBENCH_PLUGINS", self.env)
        blocked = _env_list("PRIVBENCH_DISABLE_PLUGINS", self.env) or set()
        eps = list(md.entry_points(group=group))
        identity = _DistributionNames()
        # built-ins first, so they keep their names when a third party collides
        eps.sort(key=lambda ep: (identity(ep)[0] != BUILTIN_DISTRIBUTION, ep.name))
        seen_dists: set[tuple[str, str]] = set()
        for ep in eps:
            dist_name, version = identity(ep)
            if (ep.name, ep.value) in seen_dists:
                continue  # the same distribution seen twice on sys.path
            seen_dists.add((ep.name, ep.value))
            builtin = dist_name == BUILTIN_DISTRIBUTION
            if ep.name in blocked:
                self.pm.set_blocked(ep.name)
                self._log(f"blocked {ep.name} ({dist_name})")
                continue
            if not builtin and allow is not None and not (
                    {_normalise(ep.name), _normalise(dist_name)} & {_normalise(a) for a in allow}):
                self._log(f"not in PRIVBENCH_PLUGINS: {ep.name} ({dist_name})")
                continue
            source = _Source(dist_name, version, ep.value, packaged=dist_name != "?")
            if self.pm.has_plugin(ep.name):
                other = self._sources.get(ep.name)
                self._problem(
                    ep.name, source, f"duplicate plugin name {ep.name!r}; already provided by "
                    f"{other.distribution if other else '?'}"
                )
                continue
            try:
                with _import_guard():
                    module = ep.load()
            except Exception as exc:  # noqa: BLE001 - any import failure is recorded
                self._problem(ep.name, source, f'Error importing plugin "{ep.name}": '
                              f"{type(exc).__name__}: {exc}")
                continue
            self.register(module, name=ep.name, source=source)
        for module_name in sorted(_env_list("PRIVBENCH_PLUGIN_MODULES", self.env) or ()):
            source = _Source("(module)", "0", module_name)
            if module_name in blocked or self.pm.has_plugin(module_name):
                continue
            try:
                with _import_guard():
                    module = _import_plugin_module(module_name)
            except Exception as exc:  # noqa: BLE001
                self._problem(module_name, source, f'Error importing plugin "{module_name}": '
                              f"{type(exc).__name__}: {exc}")
                continue
            self.register(module, name=module_name, source=source)
        self._check_pending()

    def _problem(self, name: str, source: _Source, reason: str, kind: str | None = None) -> None:
        """Record plugin ``name`` as broken; ``kind`` None: read off its module's source."""
        self._log(f"broken {name}: {reason}")
        self._load_problems.append(
            PluginInfo(
                kind=kind or _declared_kind(source.module), name=name, version=source.version,
                distribution=source.distribution, status="broken", reason=_one_line(reason),
                plugin=name, module=source.module,
            )
        )
        self._cache_key = None

    def register(self, plugin: object, name: str, source: _Source | None = None) -> None:
        """Register an in-process plugin object (module or instance); errors become broken."""
        source = source or _Source(getattr(plugin, "__module__", None) or "(in process)", "0", name)
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # noqa: BLE001 - PluginValidationError, ValueError
            kind = _kind_of_hooks(dir(plugin))
            self._problem(name, source, f"invalid plugin: {exc}",
                          None if kind == UNKNOWN_KIND else kind)
            return
        self._sources[name] = source
        self._cache_key = None
        self._log(f"registered {name} from {source.distribution}")

    def _check_pending(self) -> None:
        """Unregister plugins that implement hooks nobody specified (misspelt names)."""
        while True:
            try:
                self.pm.check_pending()
                return
            except pluggy.PluginValidationError as exc:
                name = self.pm.get_name(exc.plugin) or "?"
                source = self._sources.pop(name, _Source("?", "?", name))
                unknown = sorted(hook for hook in vars(self.pm.hook) if not hook.startswith("_")
                                 and not getattr(self.pm.hook, hook).has_spec()
                                 and any(impl.plugin is exc.plugin for impl in
                                         getattr(self.pm.hook, hook).get_hookimpls()))
                known = [*HOOK_KINDS, *OTHER_HOOKS]
                what = "; ".join(f"{hook!r}{did_you_mean(hook, known)}" for hook in unknown)
                kind = _kind_of_hooks(dir(exc.plugin))  # the hooks it does spell right
                self.pm.unregister(exc.plugin)
                self._problem(name, source, f"unknown hook{'s' * (len(unknown) > 1)} "
                              f"{what or exc}", kind)

    # -- registry --------------------------------------------------------------------
    def plugins(self) -> list[PluginInfo]:
        """Every plugin class and every load problem, ordered by kind and name."""
        key = tuple(sorted(n for n, _ in self.pm.list_name_plugin())) + (len(self._load_problems),)
        if key != self._cache_key:
            self._cache = self._collect()
            self._cache_key = key
        return list(self._cache)

    def _collect(self) -> list[PluginInfo]:
        rows: list[PluginInfo] = []
        #: (kind, name) -> every valid class claiming it, with its source, in registration
        #: order
        claims: dict[tuple[str, str], list[tuple[PluginInfo, _Source]]] = {}
        for hook_name, (kind, base) in HOOK_KINDS.items():
            hook = getattr(self.pm.hook, hook_name)
            for impl in hook.get_hookimpls():
                source = self._sources.get(impl.plugin_name, _Source("?", "?", impl.plugin_name))

                def row(name: str, status: str, reason: str = "", cls: type | None = None,
                        _kind: str = kind, _source: _Source = source,
                        _plugin: str = impl.plugin_name) -> PluginInfo:
                    return PluginInfo(_kind, name, _source.version, _source.distribution,
                                      status, _one_line(reason), _plugin, _source.module, cls)

                try:
                    with plugin_code(f"hook {hook_name} of plugin {impl.plugin_name!r}"):
                        classes = self._call_one(hook_name, impl.plugin_name)
                    self._log(f"{impl.plugin_name}.{hook_name} -> {classes!r}")
                except Exception as exc:  # noqa: BLE001
                    rows.append(row(impl.plugin_name, "broken", f"{hook_name} failed: "
                                    f"{type(exc).__name__}: {exc}"))
                    continue
                for cls in classes:
                    cname = getattr(cls, "name", "") or getattr(cls, "__name__", repr(cls))
                    if not (isinstance(cls, type) and issubclass(cls, base)):
                        rows.append(row(str(cname), "broken",
                                        f"{cls!r} is not a subclass of {base.__name__}"))
                        continue
                    if not getattr(cls, "name", ""):
                        rows.append(row(cls.__name__, "broken", "class has no 'name'"))
                        continue
                    bad_needs = _bad_needs(kind, cls)
                    if bad_needs:
                        rows.append(row(cls.name, "broken", bad_needs))
                        continue
                    claims.setdefault((kind, cls.name), []).append((row(cls.name, "ok", "", cls),
                                                                    source))
        self._conflicts = {}
        for (kind, name), found in claims.items():
            # built-ins first whatever the order pluggy keeps (a third party's trylast
            # implementation comes before them)
            found.sort(key=lambda claim: claim[0].distribution != BUILTIN_DISTRIBUTION)
            first, source = found[0]
            plugins = list(dict.fromkeys(info.plugin for info, _ in found))
            if first.distribution != BUILTIN_DISTRIBUTION and len(plugins) > 1:
                # no built-in has the name and several third-party plugins claim it: which
                # one loads first says nothing about which one the user meant
                why = _ambiguous(kind, name, [info for info, _ in found])
                self._conflicts[(kind, name)] = why
                rows.extend(replace(info, status="broken", reason=why, cls=None)
                            for info, _ in found)
                continue
            first.status, first.reason = _availability(first.cls, source)  # type: ignore[arg-type]
            first.reason = _one_line(first.reason)
            rows.append(first)
            # a built-in keeps its name; one plugin naming two classes alike keeps the first
            rows.extend(replace(info, status="broken", cls=None, reason=(
                f"duplicate {kind} name {name!r}; already provided by {first.distribution} "
                f"({first.plugin})")) for info, _ in found[1:])
        rows.extend(self._load_problems)
        rows.sort(key=lambda r: (KINDS.index(r.kind) if r.kind in KINDS else 99, r.name))
        return rows

    def _call_one(self, hook_name: str, plugin_name: str) -> list[Any]:
        """Call one plugin's registration hook through pluggy (so tracing and other
        plugins' hook wrappers apply), leaving out the other plain implementations."""
        others = [impl.plugin for impl in getattr(self.pm.hook, hook_name).get_hookimpls()
                  if impl.plugin_name != plugin_name and not (impl.hookwrapper or impl.wrapper)]
        results = self.pm.subset_hook_caller(hook_name, remove_plugins=others)()
        return [cls for result in results for cls in (result or [])]

    def register_commands(self, cli: Any) -> list[str]:
        """Let every plugin add its commands to ``cli``; a plugin whose hook fails loses its
        commands, not the command line. Returns one line per failure."""
        failures = []
        hook = self.pm.hook.privbench_register_commands
        for impl in hook.get_hookimpls():
            if impl.hookwrapper or impl.wrapper:
                continue
            others = [i.plugin for i in hook.get_hookimpls()
                      if i.plugin_name != impl.plugin_name and not (i.hookwrapper or i.wrapper)]
            try:
                self.pm.subset_hook_caller("privbench_register_commands", remove_plugins=others)(cli=cli)
            except Exception as exc:  # noqa: BLE001 - reported, the other commands stay
                failures.append(f"plugin {impl.plugin_name}: privbench_register_commands failed: "
                                f"{type(exc).__name__}: {exc}")
        return failures

    def _by_kind(self, kind: str) -> dict[str, type]:
        return {p.name: p.cls for p in self.plugins()
                if p.kind == kind and p.status == "ok" and p.cls is not None}

    def mechanisms(self) -> dict[str, type[Mechanism]]:
        """Every available (status ``ok``) mechanism class, by name."""
        return self._by_kind("mechanism")

    def lp_backends(self) -> dict[str, type[LPBackend]]:
        """Every available (status ``ok``) LP backend class, by name."""
        return self._by_kind("lp_backend")

    def datasets(self) -> dict[str, type[DatasetAdapter]]:
        """Every available (status ``ok``) data set adapter class, by name."""
        return self._by_kind("dataset")

    def metrics(self) -> dict[str, type[Metric]]:
        """Every available (status ``ok``) metric class, by name."""
        return self._by_kind("metric")

    def executors(self) -> dict[str, type[Executor]]:
        """Every available (status ``ok``) executor class, by name."""
        return self._by_kind("executor")

    def reporters(self) -> dict[str, type[Reporter]]:
        """Every available (status ``ok``) reporter class, by name."""
        return self._by_kind("reporter")

    def figures(self) -> dict[str, type[Figure]]:
        """Every available (status ``ok``) figure class, by name."""
        return self._by_kind("figure")

    def default(self, kind: str) -> str:
        """The name of the plugin of ``kind`` (``executor``, ``reporter``) that privbench
        uses when none is named: the one whose class declares ``default = True`` (the host
        names no plugin itself; the built-ins ``local`` and ``html`` declare it).

        :raises PluginError: when no available plugin of ``kind`` declares it, or several do.
        """
        found = sorted(name for name, cls in self._by_kind(kind).items()
                       if getattr(cls, "default", False) is True)
        if len(found) == 1:
            return found[0]
        why = ("no available " + kind + " plugin declares default = True" if not found else
               f"several {kind} plugins declare default = True: {', '.join(found)}")
        raise PluginError(f"{why}; name the {kind} to use (`privbench plugins` lists them)")

    def builtin_names(self, kind: str) -> frozenset[str]:
        """Names of the ok plugins of ``kind`` that privbench itself provides."""
        return frozenset(p.name for p in self.plugins() if p.kind == kind and p.status == "ok"
                         and p.distribution == BUILTIN_DISTRIBUTION)

    def outputs(self) -> dict[str, Output]:
        """Every declared output by name: the runner's own, then each ok metric's.

        The first declaration of a name wins (built-in metrics first, then in name order:
        a third party cannot redefine ``mi_bits``), so a reporter or ``compare`` can look
        up unit and direction for any stored value.
        """
        found: dict[str, Output] = {o.name: o for o in (*RUNNER_OUTPUTS, *CERTIFICATE_OUTPUTS)}
        builtin = self.builtin_names("metric")
        for _, cls in sorted(self.metrics().items(), key=lambda kv: (kv[0] not in builtin, kv[0])):
            for out in getattr(cls, "outputs", ()) or ():
                found.setdefault(out.name, out)
        return found

    def declared_outputs(self) -> Declared:
        """:meth:`outputs` with their relations (intervals, priors, errors), rebuilt only
        when the loaded plugins change (readers call it once per output they read)."""
        self.plugins()  # refreshes self._cache when plugins were registered or blocked
        plugins = self._cache
        if getattr(self, "_declared_for", None) is not plugins:
            self._declared_table = Declared(self.outputs().values())
            self._declared_for = plugins
        return self._declared_table

    def get(self, kind: str, name: str) -> type:
        """The class of plugin ``name`` of ``kind``, or a PluginError that says why not."""
        rows = [p for p in self.plugins() if p.kind == kind and p.name == name]
        ok = [p for p in rows if p.status == "ok"]
        if ok:
            return ok[0].cls  # type: ignore[return-value]
        if (kind, name) in self._conflicts:
            raise PluginError(self._conflicts[(kind, name)])
        if rows:
            raise PluginError(f"{kind} {name!r} is {rows[0].status}: {rows[0].reason}")
        known = sorted(p.name for p in self.plugins() if p.kind == kind and p.status == "ok")
        broken = [p for p in self._load_problems if p.kind in (kind, "plugin")]
        hint = "" if not broken else (
            f" ({len(broken)} plugin{'s' if len(broken) > 1 else ''} that may provide it "
            f"failed to load: {broken[0].name}: {broken[0].reason}"
            f"{'; ...' if len(broken) > 1 else ''}; `privbench plugins` lists them)")
        raise PluginError(f"unknown {kind} {name!r}{did_you_mean(name, known)}; "
                          f"available: {', '.join(known) or '(none)'}{hint}")


def _import_plugin_module(name: str) -> Any:
    """Import a ``PRIVBENCH_PLUGIN_MODULES`` module; one that is not importable but sits in
    the current folder (``my_mech.py``, as ``privbench check my_mech`` finds it) is imported
    from there, the folder appended to ``sys.path`` (last: an installed module of the same
    name wins; kept, so that the module's own later imports of its neighbours work)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = name.partition(".")[0]
        here = Path.cwd()
        if exc.name != top or not ((here / f"{top}.py").is_file()
                                   or (here / top / "__init__.py").is_file()):
            raise
        if str(here) not in sys.path:
            sys.path.append(str(here))
        return importlib.import_module(name)


def _bad_needs(kind: str, cls: type) -> str:
    """Why a metric's or mechanism's ``needs`` is invalid ('' when it is fine)."""
    needs = tuple(getattr(cls, "needs", ()) or ())
    if kind == "metric":
        unknown = unknown_needs(needs)
        known = sorted(RESULT_NEEDS | PART_NEEDS)
    elif kind == "mechanism":
        unknown = sorted(set(needs) - set(PARTS))
        known = list(PARTS)
    else:
        return ""
    return (f"needs names unknown {', '.join(unknown)}; known: {', '.join(known)}"
            if unknown else "")


def _ambiguous(kind: str, name: str, claims: list[PluginInfo]) -> str:
    """Why ``name`` is used by no plugin: several third-party plugins claim it. Says who
    they are and how to keep one (``PRIVBENCH_DISABLE_PLUGINS`` blocks plugins by name)."""
    plugins = {info.plugin: info.distribution for info in claims}
    who = [f"{dist} ({plugin})" for plugin, dist in plugins.items()]
    keep = [f"PRIVBENCH_DISABLE_PLUGINS={','.join(p for p in plugins if p != kept)} uses "
            f"{dist}'s" for kept, dist in plugins.items()]
    both = "both" if len(who) == 2 else "all"
    return (f"{kind} {name!r} is ambiguous: {', '.join(who[:-1])} and {who[-1]} {both} provide "
            f"it, so none is used; to use one, block the others: {'; '.join(keep)} (or leave "
            "the others out of PRIVBENCH_PLUGINS)")


def _availability(cls: type, source: _Source) -> tuple[str, str]:
    """``ok``, or ``unavailable`` with what installs the missing ``requirements`` (the
    providing distribution's ``extra``: ``pip install 'DIST[extra]'``; privbench's own for
    a built-in), or what ``available()`` says."""
    missing = [mod for mod in getattr(cls, "requirements", ()) if not _importable(mod)]
    if missing:
        extra = getattr(cls, "extra", None)
        hint = (f"pip install '{source.distribution}[{extra}]'" if extra and source.packaged
                else f"pip install {' '.join(missing)}")
        return "unavailable", f"missing {', '.join(missing)}; install with: {hint}"
    check = getattr(cls, "available", None)
    if callable(check):
        try:
            with plugin_code(f"{getattr(cls, 'name', cls)}.available()"):
                ok, reason = check()
        except Exception as exc:  # noqa: BLE001
            return "broken", f"available() failed: {exc}"
        if not ok:
            return "unavailable", reason or "not available"
    return "ok", ""


def _importable(module: str) -> bool:
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


_HOST: PluginHost | None = None


def get_host() -> PluginHost:
    """The process-wide host, created (and plugins loaded) on first use."""
    global _HOST
    if _HOST is None:
        _HOST = PluginHost()
    return _HOST


def _declared() -> Declared:
    """The process-wide host's declared outputs (what :func:`privbench.protocol.outputs.outputs_of`
    reads by)."""
    return get_host().declared_outputs()


provide_declared(_declared)


def set_host(host: PluginHost | None) -> PluginHost | None:
    """Replace the process-wide host (tests); returns the previous one."""
    global _HOST
    previous, _HOST = _HOST, host
    return previous
