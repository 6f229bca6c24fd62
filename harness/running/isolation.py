"""What a run may not leave behind in the process that runs the next one.

* A plugin that forks: the child returns into the runner, which would carry on the sweep
  (two processes storing the same runs). The runner notes its pid before the run and a
  child that comes back ends itself with ``os._exit`` at once.
* A plugin that monkeypatches shared modules (``numpy.log = ...``,
  ``scipy.special.xlogy``, a function of any ``privbench`` module, a method of a
  privbench class): every later run in that process or worker would compute with the
  patched function. The runner snapshots, before each run, the namespaces of every
  loaded module of numpy, scipy, math and privbench (plugins and data sets included)
  and the attributes of privbench's classes, puts back whatever the run replaced, added
  or removed, and the run that did it is ``invalid`` (its own metrics used the patched
  functions). A module first imported during a run is watched from the next run on.
* Either leaves the process *tainted* (``privbench._plumbing.taint``): the ``process``
  executor then retires that worker, so later runs start in a fresh interpreter.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from privbench._plumbing.taint import mark_tainted
from privbench.protocol.errors import InvalidMappingError

#: top-level packages whose loaded modules a run may not change
WATCHED_ROOTS = frozenset({"numpy", "scipy", "math", "privbench"})
#: module globals that change by design while a run goes on (caches, counters)
MUTABLE_GLOBALS = {"privbench._plumbing.blas": {"_cached"},
                   "privbench._plumbing.clock": {"_helper_seconds"},
                   "privbench.host.manager": {"_HOST"}}

_MISSING = object()


class SharedModuleChanged(InvalidMappingError):
    """The run changed a module every run shares; the change was undone."""


Snapshot = dict[str, tuple[Any, dict[str, object]]]


#: (len(sys.modules) when listed, the owners): listing them scans every loaded module, so
#: the list is kept until an import changes sys.modules
_owners: tuple[int, list[tuple[str, Any]]] = (-1, [])


def _watched() -> list[tuple[str, Any]]:
    """(name, namespace owner) of each watched module and of each privbench class."""
    global _owners
    if _owners[0] != len(sys.modules):
        _owners = (len(sys.modules), list(_list_watched()))
    return _owners[1]


def _list_watched() -> Iterator[tuple[str, Any]]:
    for name, module in list(sys.modules.items()):
        if not isinstance(module, ModuleType) or name.partition(".")[0] not in WATCHED_ROOTS:
            continue
        yield name, module
        if name.startswith("privbench"):
            for key, value in list(vars(module).items()):
                if isinstance(value, type) and value.__module__ == name:
                    yield f"{name}.{key}", value


def _snapshot() -> Snapshot:
    return {name: (owner, dict(vars(owner))) for name, owner in _watched()}


def _unchanged(now: Any, before: dict[str, object]) -> bool:
    """The fast path: the same keys holding the same objects (identity, in C)."""
    return (len(now) == len(before) and now.keys() == before.keys()
            and all(map(operator.is_, now.values(), before.values())))


def _restore(snapshot: Snapshot) -> list[str]:
    """Undo changes to the watched namespaces; the ``module.name``s that were changed."""
    changed: list[str] = []
    for name, (owner, before) in snapshot.items():
        now = vars(owner)
        if _unchanged(now, before):
            continue
        allowed = MUTABLE_GLOBALS.get(name, ())
        for key in set(now) | set(before):
            if key in before and now.get(key, _MISSING) is before[key]:
                continue
            if key.startswith("__") and key.endswith("__") or key in allowed:
                continue  # bookkeeping (__warningregistry__, caches named above)
            if key not in before and isinstance(now.get(key), ModuleType):
                continue  # a submodule imported for the first time (numpy.fft)
            changed.append(f"{name}.{key}")
            if key in before:
                setattr(owner, key, before[key])
            else:
                delattr(owner, key)
    return sorted(changed)


@contextlib.contextmanager
def isolated_run(what: str) -> Iterator[None]:
    """Around one run: a forked child never returns into the sweep; shared modules are
    restored and a change to them raises :class:`SharedModuleChanged` after the run."""
    pid = os.getpid()
    snapshot = _snapshot()
    try:
        yield
    finally:
        if os.getpid() != pid:  # a child of a fork inside plugin code
            os._exit(0)
        changed = _restore(snapshot)
        if changed:  # even when the run failed otherwise
            mark_tainted()
    if changed:
        shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
        raise SharedModuleChanged(f"{what} changed shared module attribute(s) {shown}; they "
                                  "were restored, and this run's numbers are not trusted")
