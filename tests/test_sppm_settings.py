"""SPPM's parameters are declared once (``_sppm/settings.py``): every face reads them.

The plugin's signature and defaults, ``plugins info sppm``, ``solve_sppm`` and the flags of
``privbench benchmark sppm`` all come from :class:`SPPMSettings`; a second default anywhere
fails here, and so does a knob that one face lacks.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from dataclasses import dataclass

import numpy as np
import pytest

import privbench as pb
from privbench.host.describe import parameters
from privbench.plugins.mechanisms._sppm import settings as settings_mod
from privbench.plugins.mechanisms._sppm.settings import (
    DEFAULTS,
    Check,
    SPPMSettings,
    add_flags,
    knob,
    plugin_face,
    settings_from_flags,
)
from privbench.plugins.mechanisms.sppm import SPPM

FIELDS = [f.name for f in dataclasses.fields(SPPMSettings)]


def _benchmark_parser() -> argparse.ArgumentParser:
    from privbench.cli import build_parser

    parser = build_parser("benchmark")
    bench = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = next(a for a in bench.choices["benchmark"]._actions
               if isinstance(a, argparse._SubParsersAction))
    return sub.choices["sppm"]


def test_the_plugin_s_parameters_and_defaults_are_the_settings() -> None:
    signature = SPPM.param_defaults()
    assert SPPM.param_names() == [*FIELDS, "x0"]
    assert {k: signature[k] for k in FIELDS} == DEFAULTS
    assert signature["x0"] is None
    created = SPPM()
    assert created.settings() == SPPMSettings()
    assert created.get_params() == {**DEFAULTS, "x0": None}


def test_the_benchmark_s_flags_default_to_the_settings() -> None:
    parser = _benchmark_parser()
    args = parser.parse_args([])
    for name in FIELDS:
        if name == "lp_backend":  # repeatable; unset means the default backend
            assert args.lp_backend is None
            continue
        assert getattr(args, name) == DEFAULTS[name], name
    assert settings_from_flags(args, lp_backend=DEFAULTS["lp_backend"]) == SPPMSettings()
    helps = {a.dest: a.help for a in parser._actions}
    assert f"(default {DEFAULTS['iterations']!r})" in helps["iterations"]
    assert "mckp" in helps["lp_backend"]


def test_solve_sppm_has_no_defaults_of_its_own() -> None:
    from privbench.plugins.mechanisms._sppm import solve

    params = inspect.signature(solve.solve_sppm).parameters
    assert not set(params) & set(FIELDS)  # knobs go through the settings
    assert params["settings"].default == SPPMSettings()


def test_plugins_info_shows_every_knob_s_help() -> None:
    rows = {r["name"]: r for r in parameters(SPPM)}
    for f in dataclasses.fields(SPPMSettings):
        assert rows[f.name]["doc"] == f.metadata["doc"] and rows[f.name]["doc"]
        assert rows[f.name]["default"] == f.default
    assert rows["x0"]["doc"].startswith("the starting mapping X0")


@pytest.mark.parametrize(("params", "message"), [
    ({"iterations": -1}, "sppm: iterations must be an integer >= 0; got -1"),
    ({"iterations": 2.5}, "sppm: iterations must be an integer >= 0; got 2.5"),
    ({"iterations": True}, "sppm: iterations must be an integer >= 0; got True"),
    ({"tol": float("nan")}, "sppm: tol must be a finite number >= 0; got nan"),
    ({"handover": -1e-3}, "sppm: handover must be a finite number >= 0; got -0.001"),
    ({"variant": "fast"}, "sppm: variant must be one of classic, pairwise; got 'fast'"),
    ({"mode": "fast"}, "sppm: mode must be one of auto, frank-wolfe, optimal, dual; got 'fast'"),
    ({"neighbours": 0}, "sppm: neighbours must be an integer >= 1; got 0"),
    ({"exact_every": 0}, "sppm: exact_every must be an integer >= 1; got 0"),
    ({"polish_rounds": 0}, "sppm: polish_rounds must be an integer >= 1; got 0"),
    ({"restricted_steps": -2}, "sppm: restricted_steps must be an integer >= 0; got -2"),
])
def test_bad_values_are_refused_by_every_face(params: dict, message: str) -> None:
    with pytest.raises(pb.ValidationError) as plugin:
        pb.get_mechanism("sppm", **params)
    assert message in str(plugin.value)
    with pytest.raises(pb.ValidationError, match="^" + message.replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.") + "$"):
        SPPMSettings(**params)


def test_values_are_coerced_to_the_solver_s_types() -> None:
    s = SPPMSettings(iterations=np.int64(7), tol=0, handover=np.float32(0.5))
    assert type(s.iterations) is int and type(s.tol) is float and type(s.handover) is float
    assert s.changed() == {"iterations": 7, "tol": 0.0, "handover": 0.5}
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.tol = 1.0  # type: ignore[misc]


def test_a_new_knob_reaches_every_face() -> None:
    """What a maintainer does: one field with its default, help and check; the plugin's
    signature, docs and check and the benchmark's flag follow."""

    @dataclass(frozen=True)
    class Wider(SPPMSettings):
        sharpness: int = knob(3, "how sharp.", Check("int", 2))

    @plugin_face({"x0": (None, "object", "start.")}, cls=Wider)
    class Plugin(pb.MappingMechanism):
        """A plugin."""

        name = "wider"

    assert Plugin.param_defaults()["sharpness"] == 3
    assert {r["name"]: r["doc"] for r in parameters(Plugin)}["sharpness"] == "how sharp."
    with pytest.raises(pb.ValidationError, match="sharpness must be an integer >= 2; got 1"):
        Plugin(sharpness=1).check_params()
    assert settings_mod.settings_of(Plugin(sharpness=4)).sharpness == 4
    parser = argparse.ArgumentParser()
    add_flags(parser, cls=Wider)
    args = parser.parse_args(["--sharpness", "5"])
    assert settings_from_flags(args, cls=Wider) == Wider(sharpness=5)
    with pytest.raises(TypeError):
        Plugin(sharpnes=4)  # a misspelt parameter is refused, as a written __init__ would


def test_solve_sppm_with_default_settings_is_the_plugin_s_default_run() -> None:
    """No face runs SPPM differently: the plugin's default run and ``solve_sppm`` with
    ``SPPMSettings()`` (auto resolved in the solver) give the same answer, here a run
    that needs more than the 100 iterations solve_sppm used to stop at."""
    from privbench.plugins.mechanisms._sppm.solve import solve_sppm

    problem = pb.load_dataset("synthetic", m=6)
    delta = 1.0245  # 0.003 d_const: auto runs Frank-Wolfe, ~280 iterations
    res = pb.get_mechanism("sppm").solve(problem, delta)
    out = solve_sppm(problem, delta, pb.get_lp_backend(DEFAULTS["lp_backend"]))
    keys = ("objective_bits", "lower_bits", "gap_bits", "iterations", "mode", "converged")
    assert {k: out.stats[k] for k in keys} == {k: res.stats[k] for k in keys}
    assert out.stats["iterations"] > 100 and out.stats["converged"]
