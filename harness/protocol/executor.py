"""Executor and reporter base classes.

An executor takes runs as plain data (``RunSpec.to_dict()``) and yields one finished
run record (a dict) per run as soon as it is done, in any order. It must isolate runs:
an exception, a crash or a timeout becomes that run's status, never the sweep's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from privbench.protocol.plugin import Parametrized


class Executor(Parametrized):
    """Required: ``map_runs``. Optional: ``map_tasks`` for generic parallel work.

    ``on_progress`` is set by the CLI before ``map_runs`` when a terminal shows progress:
    it receives a mechanism's in-solve progress reports (``context.report(**fields)``).
    An executor that runs elsewhere forwards them from its workers with a
    :class:`ProgressForwarder` (``process``: a manager queue; ``dask``: worker events).
    """

    kind: ClassVar[str] = "executor"
    #: the executor privbench uses when none is named (exactly one available executor
    #: declares it; the built-in ``local`` does), so the host names no executor itself
    default: ClassVar[bool] = False
    on_progress: Callable[..., None] | None = None

    def map_runs(
        self, specs: Iterable[dict[str, Any]], *, timeout: float | None
    ) -> Iterator[dict[str, Any]]:
        """Run every spec (a :meth:`RunSpec.to_dict` dict) and yield one record per run as
        it finishes, in any order; never raise for a run's own failure (use
        ``pb.execute_run``, which records it, and ``pb.failed_record`` for a run that
        produced none, e.g. a dead worker or a ``timeout`` in seconds enforced from outside)."""
        raise NotImplementedError

    def map_tasks(self, func: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """Apply a picklable top-level ``func`` to every item; results in input order.

        Mechanisms that fan out internally (the trade-off model's one classification
        per partition) use this, so the user's choice of executor decides where the
        work runs. The default runs in process.
        """
        return [func(item) for item in items]


class ProgressForwarder:
    """The ``on_progress`` a worker gives ``execute_run``: sends each report's fields, as
    plain numbers and strings, through ``send`` (a queue's ``put``, a Dask event) at most
    once every ``interval`` seconds, with the run's label under ``run``. Never raises:
    progress is cosmetic and must not fail a run."""

    def __init__(self, send: Callable[[dict[str, Any]], None], run: str = "",
                 interval: float = 0.25) -> None:
        self.send = send
        self.run = run
        self.interval = interval
        self._last = float("-inf")

    def __call__(self, **fields: Any) -> None:
        import time

        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        try:
            self.send({**{k: _plain(v) for k, v in fields.items()}, "run": self.run})
        except Exception:  # noqa: BLE001 - a closed queue, a lost scheduler: drop the report
            pass


def run_label(spec: dict[str, Any]) -> str:
    """``sppm[tol=0.001] on census[top_k=300] delta=0.3`` from a run spec's dict."""
    from privbench.protocol.plugin import format_label

    return (f"{format_label(spec.get('mechanism'), spec.get('mechanism_params'))} on "
            f"{format_label(spec.get('dataset'), spec.get('dataset_params'))} "
            f"delta={spec.get('delta')}")


def _plain(value: Any) -> Any:
    """A built-in number or string (numpy scalars, which subclass float, converted), so
    any transport can carry it (msgpack refuses numpy types)."""
    import numbers

    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


class Reporter(Parametrized):
    """Turns a results store into files (HTML, images, tables)."""

    kind: ClassVar[str] = "reporter"
    #: the reporter ``privbench report`` uses when none is named (exactly one available
    #: reporter declares it; the built-in ``html`` does)
    default: ClassVar[bool] = False
    #: what the host hands a reporter before ``report`` (see :meth:`use`): figure classes
    #: by name and every declared output by name
    figures_: dict[str, type] = {}
    outputs_: dict[str, Any] = {}

    def use(self, figures: dict[str, type], outputs: dict[str, Any],
            mechanisms: dict[str, type] | None = None) -> Reporter:
        """Receive the registered figures, declared outputs and mechanism classes (what Δ
        means to each: ``delta_role``) from the host (a reporter never asks the host
        itself); returns self."""
        self.figures_ = dict(figures)
        self.outputs_ = dict(outputs)
        self.mechanisms_ = dict(mechanisms or {})
        return self

    def report(self, db_path: Path, out_dir: Path) -> Path:
        """Read the results store ``db_path`` (never write it) and write files under
        ``out_dir``; return the main file (e.g. ``index.html``)."""
        raise NotImplementedError
