"""Shared behaviour of plugin classes: sklearn-style params, benchopt-style names.

``__init__`` of a plugin class stores its keyword arguments under the same names and
does nothing else; ``get_params`` reads them back through the signature, and ``repr``
is ``name[k=v,...]`` with sorted keys, which is also the key of a run.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, ClassVar

from privbench.protocol.errors import PluginError, ValidationError, aborts_of


def format_label(name: Any, params: dict[str, Any] | None) -> str:
    """``name[k=v,...]`` with sorted keys; just ``name`` without parameters.

    The one formatter of plugin labels: run keys (``--resume``), reprs, progress lines,
    tables and reports all use it, so one run reads the same everywhere.
    """
    if not isinstance(params, dict) or not params:
        return str(name)
    return f"{name}[{','.join(f'{k}={params[k]}' for k in sorted(params))}]"


class Parametrized:
    """Base of mechanisms, dataset adapters, metrics, LP backends and executors."""

    name: ClassVar[str] = ""
    #: kind as listed by ``privbench plugins``
    kind: ClassVar[str] = ""
    #: a small grid for conformance tests (``privbench.testing.check_mechanism``)
    test_parameters: ClassVar[dict[str, list[Any]]] = {}
    #: importable modules this plugin needs (checked without importing them)
    requirements: ClassVar[tuple[str, ...]] = ()
    #: the pip extra that installs ``requirements``
    extra: ClassVar[str | None] = None
    #: one line for listings
    description: ClassVar[str] = ""
    #: parameters that name another plugin, by kind (``{"lp_backend": "lp_backend"}``: an
    #: inner solver): the host checks before any run that the named plugin exists and is
    #: available, and ``--lp-backend`` / ``lp_backends = [...]`` set the parameter of kind
    #: ``lp_backend`` of the mechanisms that declare one
    plugin_params: ClassVar[dict[str, str]] = {}

    @classmethod
    def init_parameters(cls) -> list[inspect.Parameter]:
        """The keyword parameters ``__init__`` accepts, in order. An ``__init__`` that hands
        ``**kwargs`` to its base's (``super().__init__(**kwargs)``) also accepts the base's:
        a mixin declares parameters several plugins share once."""
        found: dict[str, inspect.Parameter] = {}
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None or klass is object:
                continue
            params = list(inspect.signature(init).parameters.values())
            for p in params:
                if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    found.setdefault(p.name, p)
            if not any(p.kind is p.VAR_KEYWORD for p in params):
                break
        return list(found.values())

    @classmethod
    def param_names(cls) -> list[str]:
        """The parameters ``__init__`` accepts by keyword, in order (what ``create`` allows)."""
        return [p.name for p in cls.init_parameters()]

    @classmethod
    def param_defaults(cls) -> dict[str, Any]:
        """The default of every parameter that has one, by name."""
        return {p.name: p.default for p in cls.init_parameters()
                if p.default is not inspect.Parameter.empty}

    @classmethod
    def _annotated_types(cls, key: str) -> set[str]:
        """Type names in the parameter's annotation (``int | str`` -> {"int", "str"});
        empty without one. Read as text, so annotations need not be importable."""
        param = next((p for p in cls.init_parameters() if p.name == key), None)
        if param is None or param.annotation is inspect.Parameter.empty:
            return set()
        text = param.annotation if isinstance(param.annotation, str) else str(param.annotation)
        return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))

    @classmethod
    def check_types(cls, params: dict[str, Any]) -> None:
        """Refuse a value whose type cannot match the parameter's default (``weight=abc``
        where the default is a number), so third-party plugins get this check for free.
        A value of a type the annotation names is accepted (``top_k: int | str = "all"``
        takes 300)."""
        defaults = cls.param_defaults()
        for key, value in params.items():
            default = defaults.get(key)
            if default is None or value is None or isinstance(value, type(default)):
                continue
            named = cls._annotated_types(key)
            if "Any" in named or type(value).__name__ in named or (
                    "float" in named and isinstance(value, int) and not isinstance(value, bool)):
                continue
            numeric = isinstance(default, int | float) and not isinstance(default, bool)
            if numeric and isinstance(value, int | float) and not isinstance(value, bool):
                continue  # 1 for a float default is fine; check_params decides the rest
            kind = "a number" if numeric else type(default).__name__
            raise ValidationError(f"parameter {key} must be {kind} (default {default!r}); got {value!r}")

    def check_params(self) -> None:
        """Raise :class:`ValidationError` for a parameter value that can never work.

        Called by :meth:`create`, so ``privbench run``/``sweep`` reject a bad value
        (``expmec:beta=-1``) before anything runs, with exit status 2. The default
        accepts everything; checks that need the data belong in ``solve``/``load``.
        """

    @classmethod
    def create(cls, **params: Any) -> Parametrized:
        """Instantiate with a clear error for unknown parameters, a failing __init__ or a
        parameter value that :meth:`check_params` rejects."""
        accepted = cls.param_names()
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise PluginError(
                f'Error creating {cls.kind or "plugin"} "{cls.name}": unknown parameter(s) '
                f"{', '.join(unknown)}; accepted: {', '.join(accepted) or '(none)'}"
            )
        try:
            with aborts_of(f"{cls.kind or 'plugin'} {cls.name!r}"):
                obj = cls(**params)
                try:
                    obj.check_params()  # the plugin's own message comes first
                except ValidationError:
                    raise
                except Exception:
                    cls.check_types(params)  # a TypeError from comparing "abc" with 0
                    raise
            cls.check_types(params)
            return obj
        except Exception as exc:  # noqa: BLE001 - re-raised with context
            error = ValidationError if isinstance(exc, ValidationError) else PluginError
            raise error(f'Error creating {cls.kind or "plugin"} "{cls.name}": {exc}') from exc

    def get_params(self) -> dict[str, Any]:
        """The parameters this instance was created with (read back from its attributes)."""
        return {k: getattr(self, k) for k in self.param_names() if hasattr(self, k)}

    def __repr__(self) -> str:
        return format_label(self.name, self.get_params())
