"""One run: (mechanism + params, data set + params, Δ, seed) -> a plain-data record.

The runner drives every mechanism through one lifecycle (create and check_params at plan
time; then skip, prepare untimed, run timed ``repeat`` times), validates the mapping
once, lets the metrics fill the record and keeps the mechanism's stats in their own
namespace. ``execute_run`` never raises for a problem of the run itself: a failing data
set, a mechanism that raises, exits, times out or returns an invalid mapping gives a
record with status error / timeout / invalid and an ``error`` text.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from privbench.host.manager import get_host
from privbench.measures.promises import broken_promises
from privbench.protocol.certificate import Certificate, contradiction
from privbench.protocol.checks import delta_value
from privbench.protocol.context import RunContext
from privbench.protocol.errors import (
    InvalidMappingError,
    PrivbenchError,
    ValidationError,
    did_you_mean,
)
from privbench.protocol.mechanism import MAPPING, Mechanism, MechanismResult, validate_mapping
from privbench.protocol.plugin import format_label
from privbench.protocol.problem import PrivacyProblem
from privbench.protocol.shared import using_store
from privbench.running.fingerprint import run_fingerprint
from privbench.running.guards import Limit, PluginAbort, RunTimeout, plugin_code, time_limit, timeout_behind
from privbench.running.isolation import isolated_run
from privbench.running.problems import load_problem, run_view
from privbench.running.provenance import provenance
from privbench.running.records import (
    RECORD_FIELDS,
    RUNNER_FIELDS,
    fill_metrics,
    fill_stats,
    plain,
)
from privbench.running.resources import ResourceMeter
from privbench.running.specs import RunSpec
from privbench.running.validate import check_result
from privbench.running.writers import merge_metric

Progress = Callable[..., None]


def empty_record(spec: RunSpec) -> dict[str, Any]:
    """The record of ``spec`` before it runs (every field present, unknown ones None)."""
    record: dict[str, Any] = dict.fromkeys(RECORD_FIELDS)
    record.update(
        mechanism=spec.mechanism, dataset=spec.dataset, params=dict(spec.mechanism_params),
        dataset_params=dict(spec.dataset_params), delta=float(spec.delta), seed=spec.seed,
        metric_errors={}, metrics={}, run_key=spec.key,
    )
    if spec.relative_delta is not None:  # Δ = relative_delta x the data set's d_const
        record["metrics"]["relative_delta"] = float(spec.relative_delta)
    return record


def failed_record(spec: RunSpec | dict[str, Any], status: str, error: str) -> dict[str, Any]:
    """The record of a run that failed outside the runner (a dead worker, a memory limit)."""
    spec = spec if isinstance(spec, RunSpec) else RunSpec.from_dict(spec)
    record = empty_record(spec)
    record.update(status=status, error=error)
    record["provenance"] = provenance()
    _stamp(record, spec)
    return plain(record)


def _stamp(record: dict[str, Any], spec: RunSpec) -> None:
    """The fingerprint of the code that made the run: the short hash in the record, the
    details under provenance. A plugin that cannot be fingerprinted leaves it None (such a
    run is never reused by ``--resume``)."""
    try:
        fingerprint = run_fingerprint(spec)
    except Exception as exc:  # noqa: BLE001 - provenance must never fail a run
        record["provenance"]["fingerprint"] = {"error": f"{type(exc).__name__}: {exc}"}
        return
    record["fingerprint"] = fingerprint["hash"]
    record["provenance"]["fingerprint"] = fingerprint


def compute_metrics(
    problem: PrivacyProblem, result: MechanismResult | None, *, delta: float,
    seed: int | None, requested: tuple[str, ...] = (), skipped: tuple[str, ...] = (),
    errors: dict[str, str] | None = None, limit: Limit | None = None,
) -> dict[str, Any]:
    """Run every default metric that applies, plus the ``requested`` ones, minus the
    ``skipped`` ones; ``metric_seconds`` says what each one took (wall seconds).

    :param errors: receives, per metric that failed (raised, or wrote what it may not),
        why: the run's ``metric_errors``, the runner's own field (never an output).
    :param limit: the run's time limit: its phase names the metric being computed, so a
        timeout there says which metric ran past it (the solve had finished).
    """
    values: dict[str, Any] = {}
    errors = {} if errors is None else errors
    owners: dict[str, str] = {}  # one writer per value (running/writers.py)
    available = get_host().metrics()
    unknown = [m for m in (*requested, *skipped) if m not in available]
    if unknown:
        raise ValidationError(f"unknown metric(s) {', '.join(unknown)}"
                              f"{did_you_mean(unknown[0], available)}; available: "
                              f"{', '.join(sorted(available))}")
    seconds: dict[str, float] = {}
    builtin = get_host().builtin_names("metric")
    owned = frozenset(o.name for n in builtin if n in available
                      for o in getattr(available[n], "outputs", ()) or ())
    # the fields only the runner fills (prior_mi_bits is a built-in metric's as well)
    runner_only = tuple(f for f in RUNNER_FIELDS if f not in owned)
    for name, cls in sorted(available.items()):
        if name in skipped or not (cls.default or name in requested):
            continue
        started = time.perf_counter()
        if limit is not None and not limit.fired:  # a timeout here names the metric
            limit.phase = f"metric {name}"
        try:
            with plugin_code(f"metric {name!r}"):
                metric = cls()
                if not metric.applies(problem, result):
                    continue
                produced = metric.compute(problem, result, delta=delta, seed=seed)
            refused = merge_metric(values, owners, name, cls, produced, runner_only,
                                   frozenset() if name in builtin else owned)
            if refused is not None:
                errors[name] = refused
        except Exception as exc:  # noqa: BLE001 - a broken metric must not sink the run
            if timeout_behind(exc) is not None:  # the time limit, surfacing as another error
                raise
            errors[name] = f"{type(exc).__name__}: {exc}"
        seconds[name] = time.perf_counter() - started
    values["metric_seconds"] = seconds
    if limit is not None:
        limit.phase = "run"
    if skipped:
        values["metrics_skipped"] = sorted(set(skipped))
    return values


def check_promises(mechanism: Mechanism, problem: Any, result: MechanismResult,
                   record: dict[str, Any], delta: float) -> None:
    """Every promise the mechanism declares, measured on what it returned with the one
    tolerance of :mod:`privbench.measures.promises`; a broken one makes the run invalid.
    ``privbench.testing`` checks promises with this very function.

    :raises InvalidMappingError: naming each broken promise and its measured value."""
    with plugin_code(f"mechanism {record.get('mechanism')!r} (promises)"):
        promised = mechanism.promises(delta) if callable(getattr(mechanism, "promises", None)) \
            else {}
    if getattr(mechanism, "respects_budget", False) and "distortion" not in promised:
        promised = {**promised, "distortion": delta}  # a legacy promise, still kept
    if not isinstance(promised, dict) or not promised:
        if not isinstance(promised, dict):
            raise InvalidMappingError(f"promises() returned {type(promised).__name__}; expected a dict")
        return
    mapping = result.mapping if result.kind == MAPPING else None
    report, broken = broken_promises(promised, problem, mapping, record)
    record["metrics"]["promises"] = report
    if broken:
        raise InvalidMappingError("; ".join(broken))


def _check_certificate(result: MechanismResult, record: dict[str, Any], delta: float) -> None:
    """A certificate is checked on arrival: solved at the run's Δ, and its lower bound not
    above the mapping's own I (else the mechanism returned a certificate of another problem,
    and every excess read from it would be wrong)."""
    cert = Certificate.from_stats(result.stats)
    leakage = record.get("mi_bits")
    if cert is None or not isinstance(leakage, int | float):
        return
    why = contradiction(result.stats, delta, float(leakage))
    if why is not None:
        raise InvalidMappingError(f"certificate refused: {why}")


def execute_run(spec_data: dict[str, Any] | RunSpec, *, timeout: float | None = None,
                on_progress: Progress | None = None) -> dict[str, Any]:
    """Run one spec and return its record; never raises for the run's own failures.

    :param on_progress: receives the mechanism's ``context.report(**fields)`` calls.
    """
    spec = spec_data if isinstance(spec_data, RunSpec) else RunSpec.from_dict(spec_data)
    record = empty_record(spec)
    limit = None
    try:
        # what plugin code prints goes to stderr: stdout carries the results (--json lines)
        with (time_limit(timeout) as limit, isolated_run(f"run {spec.key}"),
              contextlib.redirect_stdout(sys.stderr), using_store(spec.store)):
            _execute(spec, record, on_progress, limit)
    except RunTimeout as exc:
        record.update(status="timeout", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - isolation is the point
        _failed(record, exc)
    if limit is not None and limit.fired and record["status"] not in ("timeout", "error"):
        # it ran past its limit and caught the timeout: not a result within the limit
        record.update(status="timeout", error=f"{limit.message} (the run caught the timeout "
                      "and went on; its numbers are not kept as a result)")
    record["provenance"] = {**provenance(), **record.pop("data_files", {})}
    _stamp(record, spec)
    try:
        return plain(record)
    except RecursionError:  # a metric's value that refers to itself or nests thousands deep
        record.update(status="invalid", error="a metric returned a value that refers to "
                      f"itself or nests too deeply (metrics: {', '.join(map(str, record['metrics']))[:200]})",
                      metrics={})
        return plain(record)


def legacy_note(cls: type[Mechanism]) -> str | None:
    """The deprecation note of a mechanism class written against the old ``solve(problem,
    delta, *, seed=None)`` protocol (None for the others): the runner's
    ``DeprecationWarning``, the line ``run`` and ``sweep`` print, ``check``'s warning."""
    if not cls.is_legacy():
        return None
    return (f"mechanism {cls.name!r} implements the old solve(problem, delta, seed=) protocol; "
            "define prepare() and run() instead (docs/hooks.md)")


def legacy_notes(mechanisms: Iterable[str]) -> list[str]:
    """:func:`legacy_note` once per mechanism class named in ``mechanisms`` that has one,
    for the command line to print: each run's ``DeprecationWarning`` is hidden by Python's
    default filters (or raised in a worker process)."""
    host = get_host()
    classes = {host.get("mechanism", name) for name in set(mechanisms)}
    notes = (legacy_note(cls) for cls in sorted(classes, key=lambda c: c.name))
    return [note for note in notes if note is not None]


def _failed(record: dict[str, Any], exc: Exception) -> None:
    """The status and error of a run that raised ``exc`` (called while handling it): a
    timeout when the time limit is behind it (:func:`~privbench.running.guards.timeout_behind`),
    else invalid or error."""
    timeout = timeout_behind(exc)
    if timeout is not None:
        record.update(status="timeout", error=str(timeout))
    elif isinstance(exc, InvalidMappingError):
        record.update(status="invalid", error=str(exc))
    elif isinstance(exc, PrivbenchError | PluginAbort | PluginFailure):
        record.update(status="error", error=str(exc))
        if isinstance(exc, PluginFailure):
            record["metrics"]["traceback"] = traceback.format_exc(limit=8)
    else:
        record.update(status="error", error=f"{type(exc).__name__}: {exc}")
        record["metrics"]["traceback"] = traceback.format_exc(limit=8)


def _create(spec: RunSpec) -> Mechanism:
    mechanism = get_host().get("mechanism", spec.mechanism).create(**spec.mechanism_params)
    note = legacy_note(type(mechanism))
    if note is not None:
        warnings.warn(note, DeprecationWarning, stacklevel=2)
    return mechanism  # type: ignore[return-value]


def _repr(mechanism: Mechanism, spec: RunSpec) -> str:
    """The mechanism's repr; a ``__repr__`` that raises or exits costs only this field."""
    try:
        with plugin_code(f"mechanism {spec.mechanism!r} (__repr__)"):
            text = repr(mechanism)
    except Exception as exc:  # noqa: BLE001 - PluginAbort included
        return f"{spec.mechanism} (repr failed: {type(exc).__name__}: {str(exc)[:100]})"
    return text if isinstance(text, str) else str(spec.mechanism)


def _skip_reason(mechanism: Mechanism, problem: PrivacyProblem) -> str | None:
    missing_parts = getattr(problem, "missing_parts", None)
    missing = missing_parts(mechanism.needs) if missing_parts and mechanism.needs else []
    if missing:
        return f"{mechanism.name} needs {', '.join(missing)}, which {problem.name} does not provide"
    skip, reason = mechanism.skip(problem)
    return (reason or "skipped") if skip else None


class PluginFailure(Exception):
    """An unexpected exception of plugin code, named: the plugin with its parameters
    (``mechanism ppan[lambda_lr=1000000000.0] failed: OverflowError: math range error``)."""


@contextlib.contextmanager
def _named(kind: str, name: str, params: dict[str, Any]) -> Iterator[None]:
    """Name the plugin and its parameters in an unexpected exception it raises (the
    privbench errors it raises on purpose already say what is wrong)."""
    try:
        yield
    except (PrivbenchError, PluginAbort, RunTimeout):
        raise
    except Exception as exc:
        raise PluginFailure(f"{kind} {format_label(name, params)} failed: "
                            f"{type(exc).__name__}: {str(exc)[:500]}") from exc


def _solve(mechanism: Mechanism, problem: PrivacyProblem, delta: float, spec: RunSpec,
           record: dict[str, Any], on_progress: Progress | None, limit: Limit | None) -> MechanismResult:
    """prepare once (untimed, under a time limit of its own), then ``spec.repeat`` timed
    runs; timings into ``record``."""
    context = RunContext(seed=spec.seed, on_progress=on_progress or (lambda **fields: None))
    started = time.perf_counter()
    with plugin_code(f"mechanism {spec.mechanism!r}"), \
            _named("mechanism", spec.mechanism, spec.mechanism_params):
        if limit is not None:
            limit.phase = "prepare"
        mechanism.prepare(problem, context)
        prepare_s = time.perf_counter() - started
        if limit is not None:  # the run and its metrics get the whole limit
            limit.restart("run")
        samples, peaks = [], []
        for _ in range(max(1, int(spec.repeat))):
            with ResourceMeter() as meter:
                result = mechanism.run(problem, delta)
            samples.append(meter.runtime_s)
            peaks.append(meter.peak_mem_mb)
    record["runtime_s"] = statistics.median(samples)
    record["peak_mem_mb"] = max(peaks)
    record["metrics"].update(prepare_s=prepare_s, peak_rss_mb=meter.peak_rss_mb)
    record["metrics"]["runtime_samples_s"] = samples
    return result


def _execute(spec: RunSpec, record: dict[str, Any], on_progress: Progress | None,
             limit: Limit | None = None) -> None:
    with plugin_code(f"dataset {spec.dataset!r}"), _named("dataset", spec.dataset,
                                                          spec.dataset_params):
        problem = load_problem(spec.dataset, spec.dataset_params)
    record.update(n=problem.n, prior_mi_bits=problem.prior_mi_bits)
    if problem.meta.get("data_files"):  # which exact files (sha256) the run read
        record["data_files"] = {"data_files": dict(problem.meta["data_files"])}
    record["metrics"]["dataset_name"] = problem.name
    # 0: the data set is a distribution (synthetic), so its values are exact, not estimates
    # from sampled users; compare then reads an identical difference as exact
    record["metrics"]["user_records"] = 0 if problem.records is None else int(len(problem.records))
    if problem.meta.get("notes"):  # warnings about the data set (e.g. overfitting profiles)
        record["metrics"]["dataset_notes"] = [str(n) for n in problem.meta["notes"]]
    mechanism = _create(spec)
    delta = delta_value(spec.delta, mechanism.delta_role)
    record["metrics"]["mechanism_repr"] = _repr(mechanism, spec)
    view = run_view(problem)
    with plugin_code(f"mechanism {spec.mechanism!r} (skip)"):
        reason = _skip_reason(mechanism, view)
    if reason:
        record.update(status="skip", error=reason)
        return
    result = _solve(mechanism, view, delta, spec, record, on_progress, limit)
    result = check_result(result, mechanism.output)
    if result.kind == MAPPING:
        result.mapping = validate_mapping(result.mapping, problem.n)
    fill_metrics(record, compute_metrics(run_view(problem), result, delta=delta, seed=spec.seed,
                                         requested=spec.metrics, skipped=spec.skip_metrics,
                                         errors=record["metric_errors"], limit=limit))
    fill_stats(record, dict(result.stats))
    check_promises(mechanism, problem, result, record, delta)
    _check_certificate(result, record, delta)
    record["status"] = "ok"
