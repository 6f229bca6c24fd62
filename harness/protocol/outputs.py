"""Declared outputs and the one reader of their values.

Every value a run records beyond the runner's own fields (identity, status, timing,
provenance) is an output some plugin declared with :class:`~privbench.protocol.metric.Output`.
An interval, a prior or an error is itself a declared output that names the output it is
about (``of=``, ``relation=``), so no reader builds a name from a pattern.

:func:`outputs_of` is the one way to read values from runs (a DataFrame of
``pb.load_runs`` or the store's frame): figures (through :func:`~privbench.protocol.figure.column`),
the store's views, ``compare``, exports and reports all call it. A name that is neither
declared nor stored anywhere is an error naming the declared outputs (a misspelt output in a
figure used to draw nothing, silently).

The declarations are those of the plugins the host loaded: the host registers itself as
the provider (:func:`provide_declared`); with no host, a reader checks names against the
runs alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from privbench.protocol.errors import ValidationError, did_you_mean
from privbench.protocol.metric import PAYLOADS, RELATIONS, Output

if TYPE_CHECKING:
    import pandas as pd


class Declared(Mapping[str, Output]):
    """Declared outputs by name (the first declaration of a name wins), with their
    relations: ``declared.related("mi_bits", "interval")`` is the declaration of
    ``mi_bits``'s interval, or None."""

    def __init__(self, outputs: Iterable[Output] = ()) -> None:
        self._by_name: dict[str, Output] = {}
        for out in outputs:
            self._by_name.setdefault(out.name, out)
        self._related = {(o.of, o.relation): o for o in self._by_name.values() if o.of}

    def __getitem__(self, name: str) -> Output:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def related(self, name: str, relation: str) -> Output | None:
        """The output declared as ``name``'s ``relation`` (None when none is)."""
        if relation not in RELATIONS:
            raise ValidationError(f"unknown relation {relation!r}{did_you_mean(relation, RELATIONS)}; "
                                  f"relations: {', '.join(RELATIONS)}")
        return self._related.get((name, relation))

    def relations(self, relation: str) -> dict[str, Output]:
        """Every output that has a declared ``relation``, mapped to that related output
        (``relations("interval")``: ``{"mi_bits": <mi_bits_ci95>, ...}``)."""
        self.related("", relation)  # validates the relation's name
        return {of: out for (of, rel), out in self._related.items() if rel == relation}

    def carrying(self, payload: str) -> tuple[str, ...]:
        """The names of the outputs declared with ``payload`` (``carrying("resamples")``)."""
        if payload not in PAYLOADS:
            raise ValidationError(f"unknown payload {payload!r}{did_you_mean(payload, PAYLOADS)}; "
                                  f"payloads: {', '.join(PAYLOADS)}")
        return tuple(name for name, out in self._by_name.items() if out.payload == payload)

    def resolve(self, name: str) -> Output:
        """The declaration of ``name``.

        :raises ValidationError: naming the declared outputs (with a did-you-mean).
        """
        if name not in self._by_name:
            raise ValidationError(f"unknown output {name!r}{did_you_mean(name, self._by_name)}; "
                                  f"declared outputs: {', '.join(sorted(self._by_name)) or '(none)'}")
        return self._by_name[name]


_PROVIDER: Callable[[], Mapping[str, Output]] | None = None


def provide_declared(provider: Callable[[], Mapping[str, Output]] | None) -> None:
    """Set where :func:`declared` gets the declarations (the host calls this: the
    protocol may not import the host)."""
    global _PROVIDER
    _PROVIDER = provider


def declared() -> Declared:
    """The outputs declared by the loaded plugins and the runner (empty without a host)."""
    found = _PROVIDER() if _PROVIDER is not None else {}
    return found if isinstance(found, Declared) else Declared(found.values())


def resamples_of(metrics: Mapping[str, Any] | None, *,
                 outputs: Mapping[str, Output] | None = None) -> dict[str, Any] | None:
    """The per-resample payload a run's ``metrics`` carry (an output declared with
    ``payload="resamples"``: ``{"samples": {output: [values]}, "key": ..., ...}``), or None."""
    table = declared() if outputs is None else Declared(outputs.values())
    for name in table.carrying("resamples"):
        found = (metrics or {}).get(name)
        if isinstance(found, Mapping) and isinstance(found.get("samples"), Mapping):
            return dict(found)
    return None


def _number(value: Any) -> float:
    """A stored value as a float (inf kept, stored as JSON ``Infinity``); NaN otherwise."""
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def _nested(runs: pd.DataFrame, key: str) -> pd.Series:
    import pandas as pd

    if "metrics" not in runs.columns:
        return pd.Series([None] * len(runs), index=runs.index, dtype=object)
    return runs["metrics"].map(lambda m: m.get(key) if isinstance(m, dict) else None)


def _stored(runs: pd.DataFrame, key: str) -> pd.Series:
    """``key``'s values: the runs' own column where it holds one, else under ``metrics``."""
    nested = _nested(runs, key)
    if key not in runs.columns:
        return nested
    own = runs[key].astype(object)
    missing = own.map(lambda v: v is None or (isinstance(v, float) and v != v))
    return own.where(~missing, nested)


def _check_known(runs: pd.DataFrame, name: str, outputs: Declared) -> None:
    """Raise when ``name`` is neither declared, a column, nor stored under any run."""
    if name in outputs or name in runs.columns:
        return
    if "metrics" in runs.columns and any(isinstance(m, dict) and name in m for m in runs["metrics"]):
        return
    if not outputs:
        return  # no declarations to check against (no host): absent is absent
    raise ValidationError(f"unknown output {name!r}{did_you_mean(name, outputs)}; declared "
                          f"outputs: {', '.join(sorted(outputs))}")


def outputs_of(runs: pd.DataFrame, name: str, relation: str | None = None, *,
               numeric: bool = False, outputs: Mapping[str, Output] | None = None) -> pd.Series:
    """The values of output ``name`` (or of its declared ``relation``: ``interval``,
    ``prior``, ``error``), one per run, None where a run lacks it.

    :param numeric: floats (NaN where missing or not a number; inf kept).
    :param outputs: the declarations to read by (default :func:`declared`).
    :raises ValidationError: ``name`` is neither declared nor stored (a misspelling).
    """
    import pandas as pd

    table = outputs if isinstance(outputs, Declared) else (
        declared() if outputs is None else Declared(outputs.values()))
    _check_known(runs, name, table)
    key = name
    if relation is not None:
        related = table.related(name, relation)
        if related is None:
            empty = [math.nan if numeric else None] * len(runs)
            return pd.Series(empty, index=runs.index, dtype=float if numeric else object)
        key = related.name
    values = _stored(runs, key)
    if numeric:
        return values.map(_number).astype(float)
    return values


def output_of(run: Mapping[str, Any] | pd.Series, name: str, relation: str | None = None, *,
              outputs: Mapping[str, Output] | None = None) -> Any:
    """One run's value of output ``name`` (or of its declared ``relation``): its own field
    where that holds a value, else the value under ``metrics``; None where it has none.
    For a record (``run --json``, ``pb.execute_run``) or one row of ``pb.load_runs``.

    :raises ValidationError: ``name`` is neither declared nor stored in the run.
    """
    table = outputs if isinstance(outputs, Declared) else (
        declared() if outputs is None else Declared(outputs.values()))
    metrics = run.get("metrics")
    metrics = metrics if isinstance(metrics, dict) else {}
    if table and name not in table and name not in run and name not in metrics:
        raise ValidationError(f"unknown output {name!r}{did_you_mean(name, table)}; declared "
                              f"outputs: {', '.join(sorted(table))}")
    key = name
    if relation is not None:
        related = table.related(name, relation)
        if related is None:
            return None
        key = related.name
    value = run.get(key)
    if value is None or (isinstance(value, float) and value != value):
        value = metrics.get(key)
    return value


def interval_of(runs: pd.DataFrame, name: str, *,
                outputs: Mapping[str, Output] | None = None) -> pd.Series:
    """``name``'s declared interval as ``(lo, hi)`` float pairs, None where a run has none."""
    def pair(v: Any) -> tuple[float, float] | None:
        if isinstance(v, list | tuple) and len(v) == 2 and all(x is not None for x in v):
            return float(v[0]), float(v[1])
        return None

    return outputs_of(runs, name, "interval", outputs=outputs).map(pair)
