"""What ``privbench plugins info NAME`` says about a plugin, read off its class.

Nothing here is declared twice: the parameters come from ``__init__``'s signature (name,
annotation, default) and their one-line help from the class's docstring (a numpydoc
``Parameters`` section or ``:param name:`` fields, searched along the base classes, so
mixins document their own parameters); the description from ``description`` or the
docstring; the citation from a ``citation`` attribute (or, for a metric, its outputs'
citations); a metric's outputs from its ``outputs`` declarations.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import asdict
from typing import Any

from privbench.host.manager import PluginInfo

__all__ = ["describe", "first_paragraph", "first_sentence", "parameter_docs", "parameters"]

_NUMPYDOC_ENTRY = re.compile(r"^(\w+)\s*:\s*(.*)$")
_FIELD = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")


def first_paragraph(doc: str | None) -> str:
    """The docstring's first paragraph on one line ('' without a docstring)."""
    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n", 1)[0].split())


def first_sentence(text: str, limit: int = 140) -> str:
    """Up to the first full stop outside brackets, cut to ``limit`` characters, without
    reST literal marks (for a terminal)."""
    text = text.replace("``", "")
    depth = 0
    for k, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "." and depth <= 0 and (k + 1 == len(text) or text[k + 1] == " "):
            text = text[:k + 1]
            break
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _numpydoc(doc: str) -> dict[str, str]:
    lines = doc.splitlines()
    found: dict[str, str] = {}
    for k in range(len(lines) - 1):
        if lines[k].strip() == "Parameters" and set(lines[k + 1].strip()) == {"-"}:
            current = None
            for line in lines[k + 2:]:
                if not line.strip():
                    continue
                if not line.startswith(" "):
                    if set(line.strip()) == {"-"}:  # the next section's underline
                        break
                    match = _NUMPYDOC_ENTRY.match(line)
                    if match is None:  # the next section's title
                        break
                    current = match.group(1)
                    found[current] = match.group(2).strip()
                elif current is not None:
                    found[current] += " " + line.strip()
    return found


def _fields(doc: str) -> dict[str, str]:
    found: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        match = _FIELD.match(line.strip())
        if match:
            current = match.group(1)
            found[current] = match.group(2).strip()
        elif current is not None and line.startswith(" ") and line.strip():
            found[current] += " " + line.strip()
        else:
            current = None
    return found


def parameter_docs(cls: type) -> dict[str, str]:
    """Help text per parameter from the docstrings of ``cls`` and its bases (nearest wins)."""
    docs: dict[str, str] = {}
    for klass in cls.__mro__:
        doc = inspect.cleandoc(klass.__dict__.get("__doc__") or "")
        for name, text in {**_fields(doc), **_numpydoc(doc)}.items():
            docs.setdefault(name, " ".join(text.split()))
    return docs


def _type_name(param: inspect.Parameter) -> str:
    if param.annotation is not inspect.Parameter.empty:
        ann = param.annotation
        return ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    if param.default is not inspect.Parameter.empty and param.default is not None:
        return type(param.default).__name__
    return ""


def parameters(cls: type) -> list[dict[str, Any]]:
    """One dict per ``__init__`` parameter: name, type, default (``required`` if none), doc."""
    docs = parameter_docs(cls)
    rows = []
    for p in cls.init_parameters():
        required = p.default is inspect.Parameter.empty
        rows.append({"name": p.name, "type": _type_name(p), "required": required,
                     "default": None if required else p.default, "doc": docs.get(p.name, "")})
    return rows


def _citation(cls: type, outputs: list[dict[str, Any]]) -> str:
    own = getattr(cls, "citation", "") or ""
    if own:
        return str(own)
    cited = list(dict.fromkeys(o["citation"] for o in outputs if o.get("citation")))
    return "; ".join(cited)


def describe(info: PluginInfo) -> dict[str, Any]:
    """Everything ``plugins info`` shows about one plugin, as plain data (``--json``)."""
    data = info.to_dict()
    cls = info.cls
    if cls is None:  # broken: only what the loader recorded
        return {**data, "description": "", "about": "", "citation": "", "parameters": []}
    module = inspect.getmodule(cls)
    about = first_paragraph(cls.__doc__) or first_paragraph(getattr(module, "__doc__", ""))
    outputs = [asdict(o) for o in getattr(cls, "outputs", ()) or ()]
    data.update(
        **{"class": f"{cls.__module__}.{cls.__qualname__}"},
        description=getattr(cls, "description", "") or first_sentence(about),
        about=about,
        citation=_citation(cls, outputs),
        parameters=parameters(cls),
    )
    if info.kind == "metric":
        data.update(outputs=outputs, needs=sorted(getattr(cls, "needs", ())),
                    default=bool(getattr(cls, "default", False)))
    if info.kind == "mechanism":
        data.update(output=getattr(cls, "output", ""), needs=sorted(getattr(cls, "needs", ())),
                    test_parameters=dict(getattr(cls, "test_parameters", {}) or {}))
    return data
