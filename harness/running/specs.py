"""Parsing of ``name:k=v,k2=v2`` plugin specs, as used by ``run`` and sweep files."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from privbench.protocol.errors import ValidationError
from privbench.protocol.plugin import format_label


def parse_value(text: str) -> Any:
    """'3' -> 3, '0.5' -> 0.5, 'true' -> True, 'none' -> None, '[1,2]' -> [1, 2], else str.

    A bracketed list's items are separated by commas or semicolons and parsed the same
    way: ``[region,age,diet]`` -> ['region', 'age', 'diet'], ``[a;b]`` -> ['a', 'b'],
    ``[[a,b],[c]]`` -> [['a', 'b'], ['c']]; JSON (``["a", 1]``) is read as JSON.
    """
    s = text.strip()
    low = s.lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    for convert in (int, float):
        try:
            return convert(s)
        except ValueError:
            pass
    if s.startswith("[") and s.endswith("]"):
        try:
            return json.loads(s)
        except json.JSONDecodeError:
            items = [item for part in _split_top_level(s[1:-1])
                     for item in _split_top_level(part, sep=";")]
            return [parse_value(x) for x in items if x.strip()]
    return s


def canonical(value: Any) -> Any:
    """``value`` with every float's signed zero made 0.0 (also inside lists and dicts), so
    that equal numbers give equal run keys."""
    if isinstance(value, float):
        return 0.0 if value == 0.0 else value
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(canonical(v) for v in value)
    return value


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def parse_spec(spec: str, *, what: str = "plugin") -> tuple[str, dict[str, Any]]:
    """Split ``name:k=v,...`` into the name and a dict of typed parameters.

    :raises ValidationError: for an empty name, a ``k=v`` item without ``=`` or a key
        given twice.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValidationError(f"empty {what} spec; expected NAME or NAME:key=value,...")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise ValidationError(f"{what} spec {spec!r} has no name; expected NAME:key=value,...")
    params: dict[str, Any] = {}
    if rest.strip():
        for item in _split_top_level(rest):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ValidationError(
                    f"bad parameter {item!r} in {what} spec {spec!r}; expected key=value"
                )
            if key.strip() in params:
                raise ValidationError(
                    f"parameter {key.strip()!r} given twice in {what} spec {spec!r}")
            params[key.strip()] = parse_value(value)
    return name, params


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
    #: default metrics not computed for this run (``--no-metric``, ``skip_metrics``)
    skip_metrics: tuple[str, ...] = ()
    #: timed solves after one untimed prepare (not part of the run's identity)
    repeat: int = 1
    #: the results store of the sweep that runs it, where plugins may keep tables of their
    #: own (``privbench.protocol.shared.sweep_store``); not part of the run's identity
    store: str | None = None
    #: Δ as a fraction of the data set's d_const when the sweep gave ``relative_deltas``
    #: (``delta`` is then that fraction times d_const); not part of the run's identity
    relative_delta: float | None = None

    def __post_init__(self) -> None:
        # one run, one key: -0.0 is 0.0 (``--delta=0 --delta=-0.0``, ``tol=-0.0``), in Δ and
        # in every float of the parameters, before the grid is de-duplicated by key
        object.__setattr__(self, "delta", canonical(self.delta))
        object.__setattr__(self, "mechanism_params", canonical(self.mechanism_params))
        object.__setattr__(self, "dataset_params", canonical(self.dataset_params))
        if self.relative_delta is not None:
            object.__setattr__(self, "relative_delta", canonical(self.relative_delta))

    @property
    def key(self) -> str:
        """Stable identity of a run, used by ``--resume``."""
        return (f"{format_label(self.mechanism, self.mechanism_params)}|"
                f"{format_label(self.dataset, self.dataset_params)}|delta={float(self.delta)!r}|"
                f"seed={self.seed}")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists for tuples): what executors ship to workers."""
        data = asdict(self)
        data["metrics"] = list(self.metrics)
        data["skip_metrics"] = list(self.skip_metrics)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        """The spec of :meth:`to_dict`'s dict."""
        data = dict(data)
        data["metrics"] = tuple(data.get("metrics") or ())
        data["skip_metrics"] = tuple(data.get("skip_metrics") or ())
        return cls(**data)
