"""``privbench plugins info NAME`` and ``privbench check MODULE[:CLASS]``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


class Notions(pb.Metric):
    """A throwaway metric with declared outputs.

    :param alpha: the order of the notion; one line of help.
    """

    name = "identity"  # the name of a mechanism too: plugins info must show both
    description = "two made-up notions"
    citation = "Nobody, Made-up notions, 2026"
    needs = frozenset({"mapping"})
    default = False
    outputs = (pb.Output("made_up_bits", "bits", "lower", "a made-up leakage"),
               pb.Output("made_up_error", "probability", "higher", "a made-up error"))

    def __init__(self, alpha: float = 2.0) -> None:
        self.alpha = alpha


class _Plugin:
    @pb.hookimpl
    def privbench_register_metrics(self):
        return [Notions]


@pytest.fixture
def fake_host(host):
    host.register(_Plugin(), name="made-up")
    return host


def test_info_lists_sppm_parameters_with_defaults(host, capsys) -> None:
    assert main(["plugins", "info", "sppm"]) == 0
    out = capsys.readouterr().out
    assert "sppm (mechanism, ok)" in out
    assert re.search(r"^  iterations +int = 20000 +Frank-Wolfe steps at most", out, re.M)
    assert re.search(r"^  tol +float = 0\.001 +stop once the certified gap", out, re.M)
    assert main(["plugins", "info", "sppm", "--json"]) == 0
    [data] = json.loads(capsys.readouterr().out)
    params = {p["name"]: p for p in data["parameters"]}
    assert params["iterations"]["default"] == 20000 and params["iterations"]["type"] == "int"
    assert params["tol"]["default"] == 1e-3 and "gap" in params["tol"]["doc"]
    assert list(params) == pb.get_host().get("mechanism", "sppm").param_names()


def test_info_shows_a_metrics_outputs_and_both_plugins_of_a_shared_name(fake_host, capsys) -> None:
    assert main(["plugins", "info", "identity"]) == 0
    out = capsys.readouterr().out
    assert "2 plugins are called 'identity' (mechanism, metric); --kind picks one" in out
    assert "identity (mechanism, ok)" in out and "identity (metric, ok)" in out
    assert re.search(r"^  made_up_bits +bits, lower +a made-up leakage", out, re.M)
    assert re.search(r"^  made_up_error +probability, higher +a made-up error", out, re.M)
    assert "citation: Nobody, Made-up notions, 2026" in out
    assert re.search(r"^  alpha +float = 2\.0 +the order of the notion", out, re.M)
    assert "when named (-M identity)" in out
    assert main(["plugins", "info", "identity", "--kind", "metric", "--json"]) == 0
    [data] = json.loads(capsys.readouterr().out)
    assert data["kind"] == "metric" and data["default"] is False
    assert [(o["name"], o["unit"], o["direction"]) for o in data["outputs"]] == [
        ("made_up_bits", "bits", "lower"), ("made_up_error", "probability", "higher")]


def test_info_on_an_unknown_name_exits_2_with_the_known_names(host, capsys) -> None:
    assert main(["plugins", "info", "spmm"]) == 2
    err = capsys.readouterr().err
    assert "unknown plugin 'spmm'" in err and "sppm" in err and "census" in err
    assert main(["plugins", "info", "sppm", "--kind", "metric"]) == 2
    assert "unknown metric plugin 'sppm'" in capsys.readouterr().err


def _readme_example() -> str:
    blocks = re.findall(r"```python\n(# my_mech\.py.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    return blocks[0]


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    """A folder for throwaway modules; they leave sys.modules and sys.path afterwards."""
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("check_"):
            del sys.modules[name]


def test_check_passes_the_readme_example_and_prints_each_invariant(host, module_dir, capsys) -> None:
    (module_dir / "check_readme.py").write_text(_readme_example(), encoding="utf-8")
    assert main(["check", str(module_dir / "check_readme.py")]) == 0
    out = capsys.readouterr().out
    for line in ("ok    lifecycle", "ok    read-only problem", "ok    column-stochastic mapping",
                 "ok    data processing", "--    budget", "--    promises",
                 "ok    determinism", "ok    repeat"):
        assert line in out
    assert "passed: nearest on 32 cases" in out
    assert main(["check", "check_readme:Nearest", "--params", "weight=0.25"]) == 0  # by name
    assert "passed: nearest on 16 cases" in capsys.readouterr().out


BROKEN = '''
import numpy as np
import scipy.sparse as sp
import privbench as pb

class Leaky(pb.MappingMechanism):
    name = "leaky"

    def __init__(self, keep: float = 0.9):
        self.keep = keep

    def run(self, problem, delta):
        return self.result(sp.identity(problem.n, format="csc") * self.keep)

class Writer(pb.MappingMechanism):
    name = "writer"

    def run(self, problem, delta):
        problem.joint[0, 0] = 0.5
        return self.result(sp.identity(problem.n, format="csc"))
'''


def test_check_fails_naming_the_broken_invariant(host, module_dir, capsys) -> None:
    (module_dir / "check_broken.py").write_text(BROKEN, encoding="utf-8")
    assert main(["check", "check_broken:Leaky"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  column-stochastic mapping" in out and "sums to 0.9" in out
    assert "passed" not in out
    assert main(["check", "check_broken.py:Writer"]) == 1
    assert "FAIL  read-only problem" in capsys.readouterr().out
    assert main(["check", "check_broken.py"]) == 1  # both classes, both fail
    assert capsys.readouterr().out.count("FAIL") == 2
    assert main(["check", "check_broken:Nope"]) == 2
    assert "check_broken has no 'Nope'" in capsys.readouterr().err
    assert main(["check", "check_nosuch_module"]) == 2
    assert "no module named 'check_nosuch_module'" in capsys.readouterr().err


HIDDEN = '''
import numpy as np
import scipy.sparse as sp
import privbench as pb

class ZeroRandom(pb.MappingMechanism):
    name = "zero_random"
    respects_budget = False

    def __init__(self) -> None:
        pass

    def run(self, problem, delta):
        X = np.eye(problem.n)
        if delta == 0:  # an unseeded start at the smallest budget only
            X = X * 0.5 + np.random.default_rng().random(X.shape) * 1e-3
            X /= X.sum(axis=0)
        return self.result(sp.csc_array(X))

class Liar(pb.MappingMechanism):
    name = "liar"
    respects_budget = False

    def __init__(self) -> None:
        pass

    def promises(self, delta):
        return {"lip_epsilon": delta}

    def run(self, problem, delta):
        return self.result(sp.identity(problem.n, format="csc"))
'''


def test_check_fails_a_bug_at_one_budget_and_a_broken_promise(host, module_dir, capsys) -> None:
    (module_dir / "check_hidden.py").write_text(HIDDEN, encoding="utf-8")
    assert main(["check", "check_hidden:ZeroRandom"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  determinism: zero_random on check-random-6x2 at delta=0: the mappings" in out
    assert main(["check", "check_hidden:Liar"]) == 1
    assert ("FAIL  promises: liar on check-random-6x2 at delta=0: broken promise (ε-local "
            "information privacy): measured lip_epsilon = ") in capsys.readouterr().out


def test_invariant_error_is_an_assertion_error() -> None:
    from privbench.testing import InvariantError, check_mechanism

    class Half(pb.MappingMechanism):
        name = "half"

        def __init__(self) -> None:
            pass

        def run(self, problem, delta):
            return self.result(sp.identity(problem.n, format="csc") * 0.5)

    with pytest.raises(AssertionError) as info:
        check_mechanism(Half)
    assert isinstance(info.value, InvariantError)
    assert info.value.invariant == "column-stochastic mapping"


def test_a_figure_is_kind_reporter_in_every_listing_and_for_kind(host, capsys, monkeypatch) -> None:
    """docs/cli.md: a figure plugin is kind ``reporter``, role ``figure``; the table, the
    JSON, ``info``'s heading and ``--kind`` all say so (``--kind figure`` still narrows)."""
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["plugins"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "│ roc " in ln)
    assert line.split("│")[1].strip() == "reporter (figure)"
    for kind in (None, "reporter", "figure"):
        assert main(["plugins", "info", "roc", *(["--kind", kind] if kind else [])]) == 0
        assert "roc (reporter, role figure, ok)" in capsys.readouterr().out
        assert main(["plugins", "info", "roc", "--json", *(["--kind", kind] if kind else [])]) == 0
        [data] = json.loads(capsys.readouterr().out)
        assert (data["kind"], data["role"]) == ("reporter", "figure")
    assert main(["plugins", "info", "html", "--kind", "reporter"]) == 0
    assert "html (reporter, ok)" in capsys.readouterr().out
    assert main(["plugins", "info", "html", "--kind", "figure"]) == 2
    err = capsys.readouterr().err
    assert "unknown figure plugin 'html'" in err and "roc" in err
    assert main(["plugins", "info", "nosuch", "--kind", "reporter"]) == 2
    assert "html" in capsys.readouterr().err.split("known:")[1]
