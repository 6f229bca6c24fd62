"""``privbench check MODULE[:CLASS]``: the conformance checks of ``check_mechanism`` from
the command line, for a mechanism in an importable module or a ``.py`` file.

Exit status: 0 when every invariant holds, 1 naming the first broken invariant, 2 when
the request is invalid (no such module or class, not a mechanism). A mechanism written
against the old ``solve()`` protocol passes with a ``warn`` line.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import traceback
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from privbench.protocol.errors import PrivbenchError, ValidationError
from privbench.protocol.mechanism import Mechanism
from privbench.running.runner import legacy_note
from privbench.running.specs import split_spec, typed_params


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a mechanism class against privbench's invariants",
                       description="Run privbench.testing.check_mechanism on a mechanism class: "
                                   "its lifecycle over its test_parameters on small seeded "
                                   "problems, and the invariants every result must satisfy "
                                   "(column-stochastic mapping, E[d] <= Δ when promised, "
                                   "the bounds of promises(Δ), 0 <= I(A;B̂) <= I(A;B), the same "
                                   "mapping for the same seed at every budget). Exit 1 names "
                                   "the broken invariant.")
    p.add_argument("target", metavar="MODULE[:CLASS]",
                   help="an importable module (my_pkg.mech) or a .py file (./my_mech.py), "
                        "optionally with the class name; without it, every mechanism the "
                        "module registers or defines")
    p.add_argument("--params", metavar="k=v,...",
                   help="check this one parameter set instead of the class's test_parameters")
    p.set_defaults(func=run)


def _import(target: str) -> ModuleType:
    """A module by import name, or a .py file by path (its folder joins sys.path)."""
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ValidationError(f"no file {target}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ValidationError(f"cannot import {target} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        loader = spec.loader
        return _run_import(target, lambda: loader.exec_module(module)) or module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # like `python -m`: modules in this folder
    return _run_import(target, lambda: importlib.import_module(target))


def _run_import(target: str, load: Any) -> Any:
    try:
        return load()
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):
            raise ValidationError(f"no module named {target!r} (a module name on "
                                  "sys.path, or a path to a .py file)") from None
        raise ValidationError(f"importing {target} failed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
        raise ValidationError(f"importing {target} failed: {type(exc).__name__}: {exc}"
                              ) from None


def mechanisms_in(module: ModuleType, name: str | None) -> list[type[Mechanism]]:
    """The class ``name``, else those the module registers, else those it defines."""
    def is_mechanism(obj: Any) -> bool:
        return isinstance(obj, type) and issubclass(obj, Mechanism) and bool(getattr(obj, "name", ""))

    if name:
        cls = getattr(module, name, None)
        if cls is None:
            raise ValidationError(f"{module.__name__} has no {name!r}")
        if not is_mechanism(cls):
            raise ValidationError(f"{module.__name__}.{name} is not a mechanism class "
                                  "(a subclass of pb.Mechanism with a name)")
        return [cls]
    hook = getattr(module, "privbench_register_mechanisms", None)
    found = [c for c in (hook() or []) if is_mechanism(c)] if callable(hook) else []
    found = found or [c for c in vars(module).values()
                      if is_mechanism(c) and c.__module__ == module.__name__]
    if not found:
        raise ValidationError(f"no mechanism class in {module.__name__}; name one as "
                              f"{module.__name__}:CLASS")
    return found


def run(args: argparse.Namespace) -> int:
    from privbench.testing import INVARIANTS, InvariantError, check_mechanism, invariants_of

    module_name, _, class_name = args.target.partition(":") if not Path(args.target).is_file() \
        else (args.target, "", "")
    raw = split_spec(f"x:{args.params}", what="--params")[1] if args.params else None
    failed = 0
    for cls in mechanisms_in(_import(module_name), class_name or None):
        params = typed_params(cls, raw) if raw is not None else None
        grid = "the given parameters" if params is not None else (
            f"test_parameters {cls.test_parameters}" if cls.test_parameters else "its defaults")
        print(f"checking {cls.name} ({cls.__module__}.{cls.__qualname__}), a {cls.output} "
              f"mechanism, with {grid}", flush=True)
        note = legacy_note(cls)
        if note is not None:
            print(f"  warn  deprecated: {note}", flush=True)
        try:
            with warnings.catch_warnings():  # said on the line above
                warnings.filterwarnings("ignore", category=DeprecationWarning,
                                        message="mechanism .* implements the old solve")
                rows = check_mechanism(cls, params)
        except InvariantError as exc:
            failed += 1
            print(f"  FAIL  {exc.invariant}: {exc}\n        ({INVARIANTS[exc.invariant]})")
            continue
        except PrivbenchError:
            if params is not None:
                raise  # the user's --params value is invalid: exit 2
            failed += 1
            print(f"  FAIL  lifecycle: {traceback.format_exc(limit=0).strip()}")
            continue
        except Exception as exc:  # noqa: BLE001 - the mechanism itself raised
            failed += 1
            invariant = "read-only problem" if "read-only" in str(exc) else "lifecycle"
            where = traceback.extract_tb(exc.__traceback__)[-1]
            print(f"  FAIL  {invariant}: {type(exc).__name__}: {exc}\n        (raised at "
                  f"{where.filename}:{where.lineno}; {INVARIANTS[invariant]})")
            continue
        counts = {name: sum(name in r["invariants"] for r in rows) for name in invariants_of(cls)}
        for name, n in counts.items():
            mark, how = ("ok", f"{n} of {len(rows)} cases") if n else ("--", "not promised")
            print(f"  {mark:<4}  {name}: {INVARIANTS[name]} ({how})")
        print(f"passed: {cls.name} on {len(rows)} cases")
    return 1 if failed else 0
