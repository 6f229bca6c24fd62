"""Parsing of ``name:k=v,k2=v2`` plugin specs, as used by ``run`` and sweep files.

A value is converted by the annotation of the plugin parameter it is for
(:func:`typed_params`): a ``str`` parameter keeps its text, numbers and booleans are read
only for parameters annotated so, ``none`` is None only where the annotation admits None.
Without a plugin class (or for an un-annotated parameter) the spelling decides
(:func:`parse_value`).
"""

from __future__ import annotations

import inspect
import json
import re
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


#: what an annotation's members admit, by the member's name (``list[str]`` -> ``list``); an
#: annotation with any other member (``Any``, ``object``, ``tuple``, ``Path``, ``Literal``)
#: leaves its values to :func:`parse_value`
_ADMITS = {"str": "str", "int": "int", "float": "float", "bool": "bool", "None": "none",
           "NoneType": "none", "list": "list", "List": "list"}
_BOOLS = {"true": True, "yes": True, "false": False, "no": False}


def _annotation_text(annotation: Any) -> str:
    """The annotation as written: ``"float | None"`` (under ``from __future__ import
    annotations``), ``float`` -> ``"float"``, ``typing.Optional[int]`` -> ``"Optional[int]"``."""
    if isinstance(annotation, str):
        text = annotation
    elif isinstance(annotation, type):
        text = annotation.__name__
    else:
        text = str(annotation)
    return re.sub(r"\btyping\.", "", text).strip()


def _members(text: str) -> list[str]:
    """The top-level members of a union: ``"int | None"``, ``"Optional[int]"`` and
    ``"Union[int, None]"`` -> ``["int", "None"]``; ``"list[str]"`` -> ``["list[str]"]``."""
    text = text.strip()
    for wrapper, extra in (("Optional[", ["None"]), ("Union[", [])):
        if text.startswith(wrapper) and text.endswith("]"):
            inner = _split_top_level(text[len(wrapper):-1])
            return [m for part in inner for m in _members(part)] + extra
    parts = _split_top_level(text, sep="|")
    return [text] if len(parts) == 1 else [m for part in parts for m in _members(part)]


def admitted(annotation: Any) -> frozenset[str] | None:
    """What a parameter's annotation admits, among ``str``, ``int``, ``float``, ``bool``,
    ``none`` and ``list``; None when it has no annotation or one with another member, whose
    values are then converted by their spelling. Read as text, so annotations need not be
    importable."""
    if annotation is inspect.Parameter.empty:
        return None
    kinds = set()
    for member in _members(_annotation_text(annotation)):
        head = member.partition("[")[0].strip().strip("'\"")
        if head not in _ADMITS:
            return None
        kinds.add(_ADMITS[head])
    return frozenset(kinds)


def _number(text: str) -> int | float | None:
    """``text`` as an int, else a float (``1e-4``, ``nan``), else None: the spelling rule of
    :func:`parse_value`, so a value that parsed before parses to the same number."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return None


_REFUSED = object()


def typed_value(text: str, kinds: frozenset[str] | None) -> Any:
    """``text`` converted for a parameter whose annotation admits ``kinds`` (see
    :func:`admitted`); the marker ``_REFUSED`` when it admits nothing ``text`` can be.

    A quoted value (``"1"``, ``'none'``) is text with its quotes stripped; a bracketed one a
    list where a list is admitted; ``none``/``null`` None where None is; ``true``/``yes``/
    ``false``/``no`` a bool where a bool is; a number where an int or float is; else the
    text, where ``str`` is admitted. Without ``kinds``: :func:`parse_value`.
    """
    if kinds is None:
        return parse_value(text)
    s = text.strip()
    low = s.lower()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1] if "str" in kinds else _REFUSED
    if "list" in kinds and s.startswith("[") and s.endswith("]"):
        return parse_value(s)
    if "none" in kinds and low in ("none", "null"):
        return None
    if "bool" in kinds and low in _BOOLS:
        return _BOOLS[low]
    if kinds & {"int", "float"}:
        number = _number(s)
        if number is not None:
            return number
    return s if "str" in kinds else _REFUSED


def typed_params(cls: Any, raw: dict[str, str]) -> dict[str, Any]:
    """The text values of a spec (:func:`split_spec`) converted by the annotations of
    ``cls``'s parameters (:func:`typed_value`); a name ``cls`` does not take is converted by
    its spelling and left for ``create`` to refuse.

    :raises ValidationError: for a value the parameter's annotation does not admit
        (``keep=none`` for ``keep: float``), naming the plugin, the parameter, the value and
        the type expected.
    """
    declared = {p.name: p for p in getattr(cls, "init_parameters", list)()}
    params: dict[str, Any] = {}
    for key, text in raw.items():
        param = declared.get(key)
        kinds = admitted(param.annotation) if param is not None else None
        value = typed_value(text, kinds)
        if value is _REFUSED and param is not None and kinds is not None:
            raise ValidationError(
                f'Error creating {getattr(cls, "kind", "") or "plugin"} '
                f'"{getattr(cls, "name", "")}": parameter {key} must be '
                f"{_expected(param, kinds)}; got {text.strip()!r}")
        params[key] = value
    return params


def _expected(param: inspect.Parameter, kinds: frozenset[str]) -> str:
    """``a number (float, default 1.0)``, ``bool (default False)``: what ``param`` takes."""
    written = _annotation_text(param.annotation)
    numeric = kinds <= {"int", "float"}
    details = [written] if numeric else []
    if param.default is not inspect.Parameter.empty:
        details.append(f"default {param.default!r}")
    return ("a number" if numeric else written) + (f" ({', '.join(details)})" if details else "")


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


def parse_spec(spec: str, *, what: str = "plugin", kind: str | None = None
               ) -> tuple[str, dict[str, Any]]:
    """Split ``name:k=v,...`` into the name and a dict of typed parameters.

    With ``kind`` (``"mechanism"``, ``"dataset"``, ...) the plugin's class is looked up on
    the host and each value is converted by its parameter's annotation
    (:func:`typed_params`); without, by its spelling (:func:`parse_value`).

    :raises ValidationError: for an empty name, a ``k=v`` item without ``=``, a key given
        twice, or (with ``kind``) a value the parameter's annotation does not admit.
    :raises PluginError: (with ``kind``) for a plugin the host does not have.
    """
    name, raw = split_spec(spec, what=what)
    if kind is None:
        return name, {key: parse_value(text) for key, text in raw.items()}
    from privbench.host.manager import get_host

    return name, typed_params(get_host().get(kind, name), raw)


def split_spec(spec: str, *, what: str = "plugin") -> tuple[str, dict[str, str]]:
    """Split ``name:k=v,...`` into the name and a dict of the values' text (stripped of
    surrounding blanks), not converted.

    :raises ValidationError: for an empty name, a ``k=v`` item without ``=`` or a key
        given twice.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValidationError(f"empty {what} spec; expected NAME or NAME:key=value,...")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise ValidationError(f"{what} spec {spec!r} has no name; expected NAME:key=value,...")
    params: dict[str, str] = {}
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
            params[key.strip()] = value.strip()
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
