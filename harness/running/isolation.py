"""What a run may not leave behind in the process that runs the next one.

* A plugin that forks: the child returns into the runner, which would carry on the sweep
  (two processes storing the same runs). The runner notes its pid before the run and a
  child that comes back ends itself with ``os._exit`` at once.
* A plugin that monkeypatches shared modules (``numpy.log = ...``, a function of
  ``privbench.protocol.information``): every later run in that process or worker would
  compute with the patched function. The runner snapshots the namespaces of those
  modules before each run, puts back whatever the run replaced, added or removed, and
  the run that did it is ``invalid`` (its own metrics used the patched functions).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import ModuleType

from privbench.protocol.errors import InvalidMappingError

#: modules whose namespaces a run may not change (those loaded at the time are watched)
WATCHED = ("numpy", "numpy.linalg", "math", "scipy.sparse", "scipy.special",
           "privbench.protocol.information", "privbench.protocol.mapping",
           "privbench.protocol.problem", "privbench.protocol.distortion",
           "privbench.protocol.mechanism", "privbench.running.runner",
           "privbench.running.records")


class SharedModuleChanged(InvalidMappingError):
    """The run changed a module every run shares; the change was undone."""


def _snapshot() -> dict[str, tuple[ModuleType, dict[str, object]]]:
    return {name: (sys.modules[name], dict(vars(sys.modules[name])))
            for name in WATCHED if name in sys.modules}


def _restore(snapshot: dict[str, tuple[ModuleType, dict[str, object]]]) -> list[str]:
    """Undo changes to the watched namespaces; the ``module.name``s that were changed."""
    changed: list[str] = []
    for name, (module, before) in snapshot.items():
        now = vars(module)
        for key in set(now) | set(before):
            if key in before and now.get(key, _MISSING) is before[key]:
                continue
            if key.startswith("__") and key.endswith("__"):
                continue  # module bookkeeping (__warningregistry__ and the like)
            if key not in before and isinstance(now.get(key), ModuleType):
                continue  # a submodule imported for the first time (numpy.fft)
            changed.append(f"{name}.{key}")
            if key in before:
                setattr(module, key, before[key])
            else:
                delattr(module, key)
    return sorted(changed)


_MISSING = object()


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
    if changed:
        shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
        raise SharedModuleChanged(f"{what} changed shared module attribute(s) {shown}; they "
                                  "were restored, and this run's numbers are not trusted")
