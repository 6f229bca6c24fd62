"""One run: (mechanism + params, dataset + params, Δ, seed) -> a plain-data record.

``execute_run`` never raises for a problem of the run itself: a failing dataset, a
mechanism that raises, times out or returns an invalid mapping gives a record with
``status`` error / timeout / invalid and an ``error`` text. Executors call it with
plain dicts, so runs can be shipped to other processes or machines.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import traceback
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from privbench.host.manager import get_host
from privbench.protocol.errors import InvalidMappingError, PrivbenchError, ValidationError
from privbench.protocol.mechanism import MAPPING, Mechanism, MechanismResult, validate_mapping
from privbench.protocol.problem import PrivacyProblem
from privbench.running.provenance import provenance
from privbench.running.resources import ResourceMeter

#: the top-level fields of a run record, in output order (DESIGN.md contract)
RECORD_FIELDS = (
    "mechanism", "dataset", "params", "dataset_params", "delta", "seed", "lp_backend",
    "status", "error", "mi_bits", "prior_mi_bits", "distortion", "runtime_s", "peak_mem_mb",
    "n", "nnz", "support_max", "gap_bits", "metrics", "run_key",
)
STATUSES = ("ok", "error", "timeout", "invalid", "skip")
#: relative slack allowed on E[d] <= Δ
BUDGET_TOL = 1e-9


@dataclass(frozen=True)
class RunSpec:
    """A run as plain data."""

    mechanism: str
    dataset: str
    delta: float
    mechanism_params: dict[str, Any] = field(default_factory=dict)
    dataset_params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    metrics: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Stable identity of a run, used by ``--resume``."""
        def fmt(name: str, params: dict[str, Any]) -> str:
            inner = ",".join(f"{k}={params[k]}" for k in sorted(params))
            return f"{name}[{inner}]" if inner else name

        return (f"{fmt(self.mechanism, self.mechanism_params)}|"
                f"{fmt(self.dataset, self.dataset_params)}|delta={float(self.delta)!r}|"
                f"seed={self.seed}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["metrics"] = list(self.metrics)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        data = dict(data)
        data["metrics"] = tuple(data.get("metrics") or ())
        return cls(**data)


class RunTimeout(Exception):
    """Raised inside a run when its time budget is exhausted."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the body after ``seconds`` (SIGALRM; main thread only, else no limit)."""
    if not seconds or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise RunTimeout(f"run exceeded its time limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_PROBLEM_CACHE: OrderedDict[str, PrivacyProblem] = OrderedDict()
_PROBLEM_CACHE_SIZE = 4


def load_problem(name: str, params: dict[str, Any]) -> PrivacyProblem:
    """Load a dataset through its adapter, caching the last few problems per process."""
    key = name + json.dumps(params, sort_keys=True, default=str)
    if key in _PROBLEM_CACHE:
        _PROBLEM_CACHE.move_to_end(key)
        return _PROBLEM_CACHE[key]
    cls = get_host().get("dataset", name)
    adapter = cls.create(**params)
    problem = adapter.load()
    if not isinstance(problem, PrivacyProblem):
        raise PrivbenchError(f"dataset {name!r} returned {type(problem).__name__}, not a PrivacyProblem")
    _PROBLEM_CACHE[key] = problem
    while len(_PROBLEM_CACHE) > _PROBLEM_CACHE_SIZE:
        _PROBLEM_CACHE.popitem(last=False)
    return problem


def make_mechanism(name: str, params: dict[str, Any]) -> Mechanism:
    cls = get_host().get("mechanism", name)
    return cls.create(**params)  # type: ignore[return-value]


def _plain(value: Any) -> Any:
    """Convert numpy scalars/arrays (recursively) into JSON-friendly Python values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        f = float(value)
        return f if np.isfinite(f) else None
    return value


def empty_record(spec: RunSpec) -> dict[str, Any]:
    record: dict[str, Any] = dict.fromkeys(RECORD_FIELDS)
    record.update(
        mechanism=spec.mechanism, dataset=spec.dataset, params=dict(spec.mechanism_params),
        dataset_params=dict(spec.dataset_params), delta=float(spec.delta), seed=spec.seed,
        lp_backend=spec.mechanism_params.get("lp_backend"), metrics={}, run_key=spec.key,
    )
    return record


def compute_metrics(
    problem: PrivacyProblem, result: MechanismResult | None, *, delta: float,
    seed: int | None, requested: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run every default metric that applies, plus the ``requested`` ones."""
    values: dict[str, Any] = {}
    available = get_host().metrics()
    unknown = [m for m in requested if m not in available]
    if unknown:
        raise ValidationError(f"unknown metric(s) {', '.join(unknown)}; available: "
                              f"{', '.join(sorted(available))}")
    for name, cls in sorted(available.items()):
        if not (cls.default or name in requested):
            continue
        metric = cls()
        if not metric.applies(problem, result):
            continue
        try:
            values.update(metric.compute(problem, result, delta=delta, seed=seed))
        except Exception as exc:  # noqa: BLE001 - a broken metric must not sink the run
            values[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
    return values


def fill_record(record: dict[str, Any], values: dict[str, Any]) -> None:
    """Top-level fields from ``values``; the rest under ``metrics``."""
    for key, value in values.items():
        if key in RECORD_FIELDS and key not in ("metrics", "status", "error"):
            record[key] = value
        else:
            record["metrics"][key] = value


def _check_budget(mechanism: Mechanism, record: dict[str, Any], delta: float) -> None:
    """A mechanism that promises E[d] <= Δ and breaks it returned an invalid mapping."""
    distortion = record.get("distortion")
    if getattr(mechanism, "respects_budget", False) and distortion is not None \
            and distortion > delta + BUDGET_TOL * max(1.0, delta):
        raise InvalidMappingError(
            f"mapping distortion {distortion:.12g} exceeds the budget delta = {delta:g}"
        )


def execute_run(spec_data: dict[str, Any] | RunSpec, *, timeout: float | None = None) -> dict[str, Any]:
    """Run one spec and return its record; never raises for the run's own failures."""
    spec = spec_data if isinstance(spec_data, RunSpec) else RunSpec.from_dict(spec_data)
    record = empty_record(spec)
    try:
        record = _execute(spec, record, timeout)
    except RunTimeout as exc:
        record.update(status="timeout", error=str(exc))
    except InvalidMappingError as exc:
        record.update(status="invalid", error=str(exc))
    except PrivbenchError as exc:
        record.update(status="error", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - isolation is the point
        record.update(status="error", error=f"{type(exc).__name__}: {exc}")
        record["metrics"]["traceback"] = traceback.format_exc(limit=8)
    record["provenance"] = provenance()
    return _plain(record)


def _execute(spec: RunSpec, record: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    problem = load_problem(spec.dataset, spec.dataset_params)
    record["n"] = problem.n
    record["prior_mi_bits"] = problem.prior_mi_bits
    record["metrics"]["dataset_name"] = problem.name
    delta = problem.check_delta(spec.delta)
    mechanism = make_mechanism(spec.mechanism, spec.mechanism_params)
    record["metrics"]["mechanism_repr"] = repr(mechanism)
    skip, reason = mechanism.skip(problem)
    if skip:
        record.update(status="skip", error=reason or "skipped")
        return record
    with time_limit(timeout), ResourceMeter() as meter:
        result = mechanism.solve(problem, delta, seed=spec.seed)
    record["runtime_s"] = meter.runtime_s
    record["peak_mem_mb"] = meter.peak_mem_mb
    if not isinstance(result, MechanismResult):
        raise InvalidMappingError(
            f"mechanism returned {type(result).__name__}; expected a MechanismResult"
        )
    if result.kind == MAPPING:
        result.mapping = validate_mapping(result.mapping, problem.n)
    fill_record(record, dict(result.stats))
    values = compute_metrics(problem, result, delta=delta, seed=spec.seed, requested=spec.metrics)
    fill_record(record, values)
    _check_budget(mechanism, record, delta)
    record["status"] = "ok"
    return record
