"""The plugin author's API reference is the docstrings: every public class, method and
function of ``privbench.protocol``, of the exact measures (``privbench.measures``) and of the
top-level ``privbench`` API has one."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import privbench as pb
import privbench.measures
import privbench.protocol


def _own_members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties a class defines itself (not inherited, not dunder)."""
    found = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        func = value.fget if isinstance(value, property) else value
        # a function defined in the class (not a dataclass field holding one)
        if inspect.isfunction(func) and func.__qualname__ == f"{cls.__qualname__}.{name}":
            found.append((name, value))
    return found


def _public(obj: object, where: str) -> list[tuple[str, object]]:
    """``obj`` and, for a class, its own public methods, as (qualified name, object)."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return []
    if not getattr(obj, "__module__", "").startswith("privbench"):
        return []
    rows = [(where, obj)]
    if inspect.isclass(obj):
        rows += [(f"{where}.{name}", value) for name, value in _own_members(obj)]
    return rows


def api_definitions() -> dict[str, object]:
    """Every public definition of the modules of privbench.protocol and privbench.measures
    and of ``pb.__all__`` and the lazily imported public names, by qualified name."""
    found: dict[str, object] = {}
    packages = (privbench.protocol, privbench.measures)
    for info in [i for package in packages for i in pkgutil.iter_modules(package.__path__, package.__name__ + ".")]:
        if info.name.rpartition(".")[2].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__:
                found.update(_public(obj, f"{module.__name__}.{name}"))
    for name in [*pb.__all__, *pb._LAZY]:
        obj = getattr(pb, name)
        found.update(_public(obj, f"{obj.__module__}.{getattr(obj, '__qualname__', name)}"
                             if hasattr(obj, "__module__") else name))
    return found


def _has_docstring(obj: object) -> bool:
    """Its own docstring, or for an override the one of the method it overrides (which
    states the promise the override keeps)."""
    doc = inspect.getdoc(obj)
    if inspect.isclass(obj) and doc == inspect.getdoc(obj.__mro__[1]):
        return False  # a class inherits its base's docstring: not a statement of its own
    return bool(doc and doc.strip())


def test_every_public_api_definition_says_what_it_promises() -> None:
    found = api_definitions()
    assert len(found) > 150  # the walk sees the API (a broken walk would pass vacuously)
    missing = sorted(name for name, obj in found.items() if not _has_docstring(obj))
    assert not missing, f"{len(missing)} of {len(found)} public definitions lack a docstring:\n" + \
        "\n".join(missing)


def test_the_count_sees_a_missing_docstring() -> None:
    class Plain:
        def promise(self) -> None:
            pass

    Plain.__module__ = "privbench.protocol.fake"
    rows = dict(_public(Plain, "Plain"))
    assert [n for n, o in rows.items() if not _has_docstring(o)] == ["Plain", "Plain.promise"]
