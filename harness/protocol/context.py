"""What the host hands a mechanism for one run (``Mechanism.prepare(problem, context)``).

A mechanism never reaches for the plugin host itself: inner mechanisms, the user's
executor (as ``map_tasks``) and the run's seed all come from here, so a mechanism behaves
the same under every executor and in tests. An inner solver (an LP backend) is one of the
mechanism's parameters, declared in ``plugin_params`` and created through the public API
(``pb.get_lp_backend(name)``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from privbench.protocol.errors import PluginError


def _serial_map(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    return [fn(item) for item in items]


def _no_report(**fields: Any) -> None:
    return None


@dataclass
class RunContext:
    """The host's side of one run.

    :param seed: the run's seed (``None``: the mechanism's own fixed default).
    :param mechanism_factory: creates (and checks) another mechanism by name; defaults to
        the host's (registered by ``privbench.api`` at import, as this layer cannot import it).
    :param map_tasks: ``map_tasks(fn, items)`` runs picklable tasks on the user's executor.
    :param on_progress: receives ``report(**fields)`` calls (iteration, gap_bits, ...).
    """

    seed: int | None = None
    mechanism_factory: Callable[..., Any] | None = None
    map_tasks: Callable[[Callable[[Any], Any], Iterable[Any]], list[Any]] = _serial_map
    on_progress: Callable[..., None] = field(default=_no_report)

    def report(self, **fields: Any) -> None:
        """Progress from inside a solve (shown on a terminal when a solve is long)."""
        self.on_progress(**fields)

    def throttled(self, every_s: float = 0.5) -> Callable[..., None]:
        """``report``, but at most once every ``every_s`` seconds: for a solver's inner loop,
        which may iterate thousands of times a second."""
        last = [-math.inf]

        def report(**fields: Any) -> None:
            now = time.perf_counter()
            if now - last[0] >= every_s:
                last[0] = now
                self.report(**fields)

        return report

    def get_mechanism(self, name: str, **params: Any) -> Any:
        """Create an inner mechanism (e.g. ``quantized``'s) through the host."""
        factory = self.mechanism_factory or RunContext.default_factory
        if factory is None:
            raise PluginError(f"no plugin host in this context to create mechanism {name!r}")
        return factory(name, **params)

    def executor(self, name: str, workers: int | None = None) -> Any:
        """Create executor ``name`` (for ``map_tasks`` of a mechanism's own parallel work)."""
        if RunContext.executor_factory is None:
            raise PluginError(f"no plugin host in this context to create executor {name!r}")
        return RunContext.executor_factory(name, workers)

    #: set by ``privbench.api``: the host's ``get_mechanism``
    default_factory: ClassVar[Callable[..., Any] | None] = None
    #: set by ``privbench.api``: ``(name, workers) -> Executor``
    executor_factory: ClassVar[Callable[[str, int | None], Any] | None] = None
