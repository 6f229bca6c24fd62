"""Turn a request (CLI flags or a sweep file) into validated runs, before anything runs.

Everything that can be checked without solving is checked here: plugin names,
parameter names (by creating each plugin once), budgets, LP backends. An invalid
request raises :class:`ValidationError` / :class:`PluginError` naming the culprit.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privbench._plumbing.abort import plugin_code
from privbench.host.manager import get_host
from privbench.protocol.checks import BUDGET, DELTA_ROLES, delta_value, finite_float, positive_int, seed_value
from privbench.protocol.errors import PluginError, PrivbenchError, ValidationError, did_you_mean
from privbench.running.problems import load_problem
from privbench.running.specs import RunSpec, parse_spec, split_spec, typed_params

#: the plugin kind ``--lp-backend`` / ``lp_backends = [...]`` fill in (a convenience: each
#: mechanism declares which parameter names its LP backend, ``plugin_params``)
LP_KIND = "lp_backend"
#: runs a sweep may expand to unless the user raises the limit
DEFAULT_MAX_RUNS = 100_000


@dataclass
class SweepSpec:
    """The contents of a sweep file (or of ``privbench run`` flags)."""

    mechanisms: list[str]
    datasets: list[str]
    deltas: list[float]
    #: budgets relative to each data set: Δ = f x d_const (the least expected distortion
    #: of a constant mapping); with or instead of ``deltas``
    relative_deltas: list[float] = field(default_factory=list)
    seeds: list[int | None] = field(default_factory=lambda: [None])
    #: more seeds, for the mechanisms whose result depends on the seed (``randomized``)
    replicate_seeds: list[int] = field(default_factory=list)
    lp_backends: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    #: default metrics switched off for every run (``--no-metric``, ``skip_metrics``)
    skip_metrics: list[str] = field(default_factory=list)
    timeout: float | None = None
    executor: str | None = None
    workers: int | None = None
    name: str = "sweep"
    #: timed solves per run after one untimed prepare (runtime_s = their median)
    repeat: int = 1
    #: a grid larger than this is refused before anything is built (``--max-runs``)
    max_runs: int = DEFAULT_MAX_RUNS
    #: add the baselines (mechanisms with ``baseline = True``) to every data set and budget; sweep
    #: files default to true (``baselines = false`` to leave them out), ``run`` to false
    baselines: bool = False
    #: the sweep file it was read from (None: built otherwise): errors about its keys found
    #: while planning name the file and the key, as its syntax errors do
    source: str | None = None


_KEYS = {"mechanisms", "datasets", "deltas", "relative_deltas", "seeds", "replicate_seeds",
         "lp_backends", "metrics", "skip_metrics", "timeout", "executor", "workers", "name",
         "description", "repeat", "baselines"}


def _str_list(data: dict[str, Any], key: str, path: Path, *, required: bool) -> list[str]:
    if key not in data:
        if required:
            raise ValidationError(f"{path}: missing required key {key!r} (a list of NAME[:k=v,...])")
        return []
    value = data[key]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{path}: {key!r} must be a list of strings; got {value!r}")
    if required and not value:
        raise ValidationError(f"{path}: {key!r} is empty")
    return value


def load_sweep_file(path: str | Path) -> SweepSpec:
    """Parse a sweep TOML file with errors that name the file and key."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidationError(f"sweep file {p} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"{p}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{p}: cannot read: {exc}") from None
    except RecursionError:  # arrays or tables nested thousands deep
        raise ValidationError(f"{p}: not a sweep file: nested too deeply to parse") from None
    except (ValueError, TypeError, MemoryError) as exc:  # whatever else the parser meets
        raise ValidationError(f"{p}: cannot be parsed as TOML: {type(exc).__name__}: "
                              f"{str(exc)[:200]}") from None
    try:
        spec = sweep_spec_from(data, p)
    except RecursionError:
        raise ValidationError(f"{p}: a value is nested too deeply") from None
    spec.source = str(p)
    return spec


@contextlib.contextmanager
def from_key(spec: SweepSpec, *keys: str) -> Iterator[None]:
    """An invalid request raised inside names the sweep file and the key(s) it comes from
    (``grid.toml: 'mechanisms': unknown mechanism 'spm'``) when ``spec`` was read from a
    file; otherwise it passes unchanged."""
    try:
        yield
    except (ValidationError, PluginError) as exc:
        if spec.source is None:
            raise
        where = " with ".join(repr(k) for k in keys)
        raise type(exc)(f"{spec.source}: {where}: {exc}") from None


def sweep_spec_from(data: dict[str, Any], p: Path = Path("sweep")) -> SweepSpec:
    """A sweep file's contents (a dict, as ``pb.sweep`` takes it) checked into a
    ``SweepSpec``; errors name ``p`` and the key."""
    if not isinstance(data, dict):
        raise ValidationError(f"{p}: a sweep is a table of keys; got {type(data).__name__}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ValidationError(f"{p}: unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(_KEYS))}")
    relative = _relative_deltas(data, p)
    deltas = data.get("deltas", [] if relative else None)
    if not isinstance(deltas, list) or not (deltas or relative) or not all(
            isinstance(d, int | float) and not isinstance(d, bool) for d in deltas):
        raise ValidationError(f"{p}: 'deltas' must be a non-empty list of numbers (or give "
                              f"relative_deltas); got {deltas!r}")
    seeds = data.get("seeds", [None])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds if s is not None):
        raise ValidationError(f"{p}: 'seeds' must be a non-empty list of integers; got {seeds!r}")
    replicates = data.get("replicate_seeds", [])
    if not isinstance(replicates, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in replicates):
        raise ValidationError(f"{p}: 'replicate_seeds' must be a list of integers (extra seeds "
                              f"for randomized mechanisms); got {replicates!r}")
    timeout = data.get("timeout")
    if timeout is not None:
        try:
            timeout = check_timeout(timeout)
        except ValidationError:
            raise ValidationError(
                f"{p}: 'timeout' must be a positive number of seconds; got {timeout!r}") from None
    executor = data.get("executor")
    if executor is not None and not (isinstance(executor, str) and executor.strip()):
        raise ValidationError(f"{p}: 'executor' must be an executor name; got {executor!r}")
    if isinstance(executor, str) and "scheduler" in parse_spec(executor, what="executor")[1]:
        # a spec file someone sent must not decide where code runs (the client unpickles
        # what a scheduler sends back): a remote scheduler comes from the command line
        raise ValidationError(f"{p}: 'executor' may not name a scheduler ({executor!r}); pass "
                              "--scheduler tcp://HOST:PORT on the command line instead")
    workers = data.get("workers")
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool)
                                or workers < 1):
        raise ValidationError(f"{p}: 'workers' must be an integer >= 1; got {workers!r}")
    try:
        repeat = check_repeat(data.get("repeat", 1))
    except ValidationError as exc:
        raise ValidationError(f"{p}: 'repeat': {exc}") from None
    baselines = data.get("baselines", True)
    if not isinstance(baselines, bool):
        raise ValidationError(f"{p}: 'baselines' must be true or false; got {baselines!r}")
    return SweepSpec(
        baselines=baselines,
        repeat=repeat,
        mechanisms=_str_list(data, "mechanisms", p, required=True),
        datasets=_str_list(data, "datasets", p, required=True),
        deltas=[float(d) for d in deltas],
        relative_deltas=relative,
        seeds=seeds,
        replicate_seeds=list(replicates),
        lp_backends=_str_list(data, "lp_backends", p, required=False),
        metrics=_str_list(data, "metrics", p, required=False),
        skip_metrics=_str_list(data, "skip_metrics", p, required=False),
        timeout=float(timeout) if timeout is not None else None,
        executor=executor,
        workers=workers,
        name=str(data.get("name", p.stem)),
    )


def check_fractions(fractions: list[float], what: str = "relative_deltas") -> list[float]:
    """Budgets relative to d_const (``what`` names them in the error): finite, >= 0."""
    for f in fractions:
        if isinstance(f, bool) or not isinstance(f, int | float) or not (
                math.isfinite(f) and f >= 0):
            raise ValidationError(f"{what} must be a finite fraction >= 0 of the data set's "
                                  f"d_const (e.g. 0.1); got {f!r}")
    return fractions


def _relative_deltas(data: dict[str, Any], p: Path) -> list[float]:
    """``relative_deltas``: a list of finite fractions >= 0 (empty when absent)."""
    value = data.get("relative_deltas", [])
    if not isinstance(value, list) or (("relative_deltas" in data) and not value) or not all(
            isinstance(f, int | float) and not isinstance(f, bool) and math.isfinite(f) and f >= 0
            for f in value):
        raise ValidationError(
            f"{p}: 'relative_deltas' must be a non-empty list of finite numbers >= 0 (fractions "
            f"of each data set's d_const, e.g. [0.25, 0.5, 0.75]); got {value!r}")
    return [float(f) for f in value]


def d_const(problem: Any) -> float:
    """The least expected distortion of a constant mapping (what the ``constant`` mechanism
    releases at Δ = inf): the scale of the relative budgets. Computed here, not by naming
    the plugin: the host names no plugin."""
    from privbench.protocol.feasibility import constant_distortion

    return constant_distortion(problem)


def budgets(spec: SweepSpec, dataset: str, params: dict[str, Any]) -> list[tuple[float, float | None]]:
    """(Δ, fraction) pairs of one data set: the absolute ``deltas`` (fraction None), then
    ``relative_deltas`` times the data set's d_const."""
    out: list[tuple[float, float | None]] = [(d, None) for d in spec.deltas]
    if spec.relative_deltas:
        try:
            scale = d_const(load_problem(dataset, params))
        except PrivbenchError as exc:
            raise ValidationError(f"dataset {dataset!r}: relative_deltas need its d_const, "
                                  f"which cannot be computed: {exc}") from None
        out += [(f * scale, f) for f in spec.relative_deltas]
    return out


def check_grid_size(spec: SweepSpec) -> int:
    """The number of runs the grid can expand to, refused above ``spec.max_runs`` before
    any of it is built (a three-line file can describe 200 million runs)."""
    size = (len(spec.mechanisms) * max(1, len(spec.lp_backends)) * len(spec.datasets)
            * (len(spec.deltas) + len(spec.relative_deltas))
            * (len(spec.seeds) + len(spec.replicate_seeds)))
    limit = positive_int("max_runs", spec.max_runs)
    if size > limit:
        raise ValidationError(
            f"the sweep expands to up to {size:,} runs ({len(spec.mechanisms)} mechanisms x "
            f"{max(1, len(spec.lp_backends))} LP backends x {len(spec.datasets)} data sets x "
            f"{len(spec.deltas) + len(spec.relative_deltas)} budgets x "
            f"{len(spec.seeds) + len(spec.replicate_seeds)} seeds), more than the limit of "
            f"{limit:,}; split it, or raise the limit with --max-runs")
    return size


def check_repeat(repeat: Any) -> int:
    """Timed solves per run: an integer >= 1."""
    return positive_int("repeat", repeat)


def check_timeout(timeout: Any, *, what: str = "timeout") -> float:
    """A per-run time limit: a finite number of seconds > 0."""
    try:
        return finite_float(what, timeout, low=0.0, strict_low=True)
    except ValidationError:
        raise ValidationError(f"{what} must be a positive number of seconds; got {timeout!r}") from None


def check_metric_names(names: list[str], what: str = "metric") -> None:
    """Every metric in ``names`` exists (``what`` names them in the error)."""
    host = get_host()
    known = host.metrics()
    for metric in names:
        if metric not in known:
            if what == "metric":  # why it cannot run: unavailable, broken, ambiguous
                host.get("metric", metric)
            raise PluginError(f"unknown {what} {metric!r}{did_you_mean(metric, known)}; "
                              f"available: {', '.join(sorted(known))}")


def check_metrics(spec: SweepSpec) -> None:
    """Every metric named (requested or switched off) exists, and none is both."""
    with from_key(spec, "metrics"):
        check_metric_names(spec.metrics)
    with from_key(spec, "skip_metrics"):
        check_metric_names(spec.skip_metrics, "metric to skip")
    both = sorted(set(spec.metrics) & set(spec.skip_metrics))
    if both:
        with from_key(spec, "metrics"):
            raise ValidationError(f"metric(s) {', '.join(both)} both requested (-M / metrics) "
                                  "and switched off (--no-metric / skip_metrics)")


def check_dataset(text: str, name: str, params: dict[str, Any]) -> None:
    """Load the dataset once so that a missing file, a malformed table, an empty alphabet
    or a bad parameter value is an invalid request (exit 2, nothing stored), not a run.

    The problem stays in the runner's per-process cache, so a local run does not load it
    twice. Exceptions other than privbench's own (a bug in an adapter) are left for the
    run, which records them with a traceback.
    """
    try:
        with plugin_code(f"dataset {name!r}"):
            load_problem(name, params)
    except PrivbenchError as exc:
        raise ValidationError(f"dataset {text!r}: {exc}") from None
    except MemoryError:
        raise ValidationError(f"dataset {text!r} does not fit in memory; choose smaller "
                              "parameters (n, top_k)") from None
    except Exception as exc:  # noqa: BLE001 - an adapter's failure is still a bad request
        raise ValidationError(f"dataset {text!r} cannot be loaded: {type(exc).__name__}: "
                              f"{str(exc)[:200]}") from None


def baselines(installed: dict[str, Any]) -> list[str]:
    """The mechanisms that declare themselves baselines (``baseline = True``), by name."""
    return sorted(name for name, cls in installed.items() if getattr(cls, "baseline", False))


def missing_baselines(mechanisms: list[str], installed: dict[str, Any]) -> list[str]:
    """The installed baselines that ``mechanisms`` does not already name."""
    named = {parse_spec(text, what="mechanism")[0] for text in mechanisms}
    return [b for b in baselines(installed) if b not in named]


def _plan_mechanisms(spec: SweepSpec, deltas: list[float], *, strict_lp: bool
                     ) -> tuple[list[tuple[str, dict[str, Any]]], set[str]]:
    """Each mechanism of the grid (the baselines added) as (name, params), one per LP
    backend it takes, every one created once (names, types, check_params) and checked
    against the budgets; and the names of the randomized ones."""
    host = get_host()
    mechanisms: list[tuple[str, dict[str, Any]]] = []
    randomized: set[str] = set()
    texts = [(text, "mechanisms") for text in spec.mechanisms] + (
        [(text, "baselines") for text in missing_baselines(spec.mechanisms, host.mechanisms())]
        if spec.baselines else [])
    for text, key in texts:
        with from_key(spec, key):
            name, raw = split_spec(text, what="mechanism")
            cls = host.get("mechanism", name)
            params = typed_params(cls, raw)  # converted by the parameters' annotations
            lp_param = next((p for p, kind in cls.plugin_params.items() if kind == LP_KIND), None)
            if spec.lp_backends and lp_param is None and strict_lp:
                raise ValidationError(f"mechanism {name!r} does not use an LP backend (--lp-backend)")
            for param, kind in cls.plugin_params.items():
                if param in params:
                    host.get(kind, str(params[param]))
        variants = [params]
        if lp_param is not None and spec.lp_backends and lp_param not in params:
            variants = [{**params, lp_param: b} for b in spec.lp_backends]
        for variant in variants:
            # parameter names, types and check_params
            with from_key(spec, *([key] if variant is params else [key, "lp_backends"])):
                cls.create(**variant)
            mechanisms.append((name, variant))
        if getattr(cls, "randomized", False):
            randomized.add(name)
        with from_key(spec, key):
            if cls.delta_role not in DELTA_ROLES:
                raise PluginError(f"mechanism {name!r} declares delta_role = {cls.delta_role!r}; "
                                  f"expected one of {', '.join(DELTA_ROLES)}")
        with from_key(spec, "deltas"):
            for delta in deltas:
                delta_value(delta, cls.delta_role)
    return mechanisms, randomized


def plan_runs(spec: SweepSpec, *, strict_lp: bool = False, load_datasets: bool = True
              ) -> list[RunSpec]:
    """Expand the grid mechanisms x datasets x deltas x seeds (x LP backends).

    LP backends apply to mechanisms with a parameter of that kind (``plugin_params``); with
    ``strict_lp`` (``privbench run --lp-backend``) naming one for another mechanism is
    an error. Every parameter naming a plugin is checked against the host. With
    ``load_datasets`` each dataset is loaded once (:func:`check_dataset`).
    """
    check_grid_size(spec)
    host = get_host()
    with from_key(spec, "deltas"):
        deltas = [delta_value(d, BUDGET) for d in spec.deltas]
    with from_key(spec, "repeat"):
        check_repeat(spec.repeat)
    if spec.timeout is not None:
        with from_key(spec, "timeout"):
            check_timeout(spec.timeout)
    if spec.workers is not None and (not isinstance(spec.workers, int)
                                     or isinstance(spec.workers, bool) or spec.workers < 1):
        with from_key(spec, "workers"):
            raise ValidationError(f"workers must be an integer >= 1; got {spec.workers!r}")
    if not deltas and not spec.relative_deltas:
        raise ValidationError("no budget given; pass --delta X (one or more)")
    with from_key(spec, "relative_deltas"):
        check_fractions(spec.relative_deltas)
    if spec.relative_deltas and not load_datasets:
        raise ValidationError("relative_deltas need each data set's d_const, so the data sets "
                              "must be loaded while planning")
    for key, seeds in (("seeds", spec.seeds), ("replicate_seeds", spec.replicate_seeds)):
        with from_key(spec, key):
            for seed in seeds:
                seed_value("seed", seed)
    with from_key(spec, "lp_backends"):
        for backend in spec.lp_backends:
            host.get(LP_KIND, backend)
    check_metrics(spec)
    mechanisms, randomized = _plan_mechanisms(spec, deltas, strict_lp=strict_lp)
    datasets: list[tuple[str, dict[str, Any]]] = []
    for text in spec.datasets:
        with from_key(spec, "datasets"):
            name, params = parse_spec(text, what="dataset", kind="dataset")
            host.get("dataset", name).create(**params)
            if load_datasets:
                check_dataset(text, name, params)
        datasets.append((name, params))
    with from_key(spec, "relative_deltas"):
        scaled = [(d, dp, budgets(spec, d, dp)) for d, dp in datasets]
    runs = [
        RunSpec(mechanism=m, mechanism_params=mp, dataset=d, dataset_params=dp, delta=delta,
                seed=seed, metrics=tuple(dict.fromkeys(spec.metrics)), repeat=spec.repeat,
                skip_metrics=tuple(dict.fromkeys(spec.skip_metrics)), relative_delta=fraction)
        for (d, dp, pairs) in scaled
        for (m, mp), (delta, fraction) in itertools.product(mechanisms, pairs)
        for seed in [*spec.seeds, *(spec.replicate_seeds if m in randomized else [])]
    ]
    # one run per key: `deltas = [0.5, 0.50]`, a mechanism listed twice, or an LP backend
    # both in lp_backends and in the mechanism's spec would store identical rows twice
    unique: dict[str, RunSpec] = {}
    for r in runs:
        unique.setdefault(r.key, r)
    return list(unique.values())
