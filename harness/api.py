"""The short Python API: ``pb.load_dataset`` and ``pb.get_mechanism``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privbench.host.manager import get_host
from privbench.protocol.context import RunContext
from privbench.protocol.dataset import DatasetAdapter
from privbench.protocol.mechanism import Mechanism
from privbench.protocol.problem import PrivacyProblem


def get_mechanism(name: str, **params: Any) -> Mechanism:
    """Create mechanism ``name`` with its parameters, e.g. ``get_mechanism("sppm", lp_backend="highs")``."""
    cls = get_host().get("mechanism", name)
    return cls.create(**params)  # type: ignore[return-value]


def get_dataset(name: str, **params: Any) -> DatasetAdapter:
    """Create data set adapter ``name`` with its parameters (checked); ``.load()`` builds the problem."""
    cls = get_host().get("dataset", name)
    return cls.create(**params)  # type: ignore[return-value]


def load_dataset(name: str, **params: Any) -> PrivacyProblem:
    """Load a registered dataset adapter into a ``PrivacyProblem``, e.g. ``load_dataset("synthetic", m=8)``."""
    return get_dataset(name, **params).load()


def get_lp_backend(name: str, **options: Any) -> Any:
    """Create LP backend ``name`` with its options; a PluginError says why an unknown or unavailable one cannot be."""
    cls = get_host().get("lp_backend", name)
    return cls.create(**options)


def get_executor(name: str, workers: int | None = None) -> Any:
    """Create executor ``name``; ``workers`` is passed when the executor takes it."""
    cls = get_host().get("executor", name)
    params = {"workers": workers} if workers and "workers" in cls.param_names() else {}
    return cls.create(**params)


def reference_mechanisms() -> list[str]:
    """Mechanisms that declare a ``reference_rank``, best first: the default reference of
    comparisons (a mechanism certifying the optimum)."""
    ranked = [(cls.reference_rank, name) for name, cls in get_host().mechanisms().items()
              if cls.reference_rank is not None]
    return [name for _, name in sorted(ranked)]


def metric_names() -> list[str]:
    """Every installed metric plugin's name (third-party ones included), sorted: e.g. to
    compute only some of them (``RunSpec(skip_metrics=...)`` takes the rest)."""
    return sorted(get_host().metrics())


def pick_reference(labels: Sequence[str]) -> str | None:
    """The curve (mechanism label) others are compared with: the best-ranked reference
    mechanism among ``labels`` (:func:`reference_mechanisms`), else the first label."""
    from privbench.results.pareto import pick_reference as pick

    return pick(labels, reference_mechanisms())


# the protocol layer cannot import the host: hand RunContext its factories
RunContext.default_factory = staticmethod(get_mechanism)
RunContext.executor_factory = staticmethod(get_executor)
