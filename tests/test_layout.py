"""The tree keeps its architecture: tools/check_layout.py finds no cycle, no function
over 80 lines, no plugin reaching into another's private modules, no layer breach."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("check_layout", ROOT / "tools" / "check_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_cycles_long_functions_or_plugin_reach(capsys) -> None:
    assert _tool().main() == 0, capsys.readouterr().out


def test_the_checker_sees_a_cycle_hidden_in_a_function() -> None:
    tool = _tool()
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert tool.cycles(graph) == [["a", "b", "c"]]


def test_the_checker_sees_a_long_function(tmp_path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(85))
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent("def f():\n") + body + "\n")
    assert _tool().long_functions(path) == [(1, "f", 86)]


def test_the_checker_sees_a_plugin_reaching_into_sppm() -> None:
    tool = _tool()
    known = tool.modules()
    assert tool._reaches("privbench.plugins.mechanisms.optimal",
                         "privbench.plugins.mechanisms._sppm.pricing", known) == \
        "privbench.plugins.mechanisms.sppm"
    assert tool._reaches("privbench.plugins.mechanisms.sppm",
                         "privbench.plugins.mechanisms._sppm.pricing", known) is None


def test_the_checker_fails_a_plugin_importing_the_results_layer(tmp_path) -> None:
    """plugins/ and datasets/ may import privbench, its protocol, measures and plumbing, nothing
    else."""
    tool = _tool()
    for folder in ("harness/protocol", "harness/results", "plugins/metrics", "datasets"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "harness/results/views.py").write_text("import privbench.protocol\n")
    (tmp_path / "plugins/metrics/good.py").write_text(
        "import privbench as pb\nfrom privbench import load_runs\nfrom privbench.protocol import x\n"
        "from privbench.measures import notions\n")
    (tmp_path / "plugins/metrics/bad.py").write_text("from privbench.results.views import load_runs\n")
    (tmp_path / "datasets/bad.py").write_text("import privbench.results\n")
    found, _, _ = tool.problems(tmp_path)
    assert sorted(found) == [
        "plugin import: datasets/bad.py imports privbench.results (plugins and data sets "
        "import only privbench, its protocol, measures and plumbing)",
        "plugin import: plugins/metrics/bad.py imports privbench.results.views (plugins and data "
        "sets import only privbench, its protocol, measures and plumbing)",
    ]


def test_the_checker_keeps_the_base_in_order(tmp_path) -> None:
    """protocol < _plumbing < measures: the protocol imports neither, the plumbing not the
    measures (a lazy import counts too); the measures may import both."""
    tool = _tool()
    for folder in ("harness/protocol", "harness/measures", "harness/_plumbing"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "harness/protocol/errors.py").write_text("")
    (tmp_path / "harness/protocol/plugin.py").write_text(
        "def create():\n    from privbench._plumbing.abort import plugin_code\n")
    (tmp_path / "harness/protocol/problem.py").write_text(
        "from privbench.measures.notions import f\n")
    (tmp_path / "harness/_plumbing/abort.py").write_text(
        "from privbench.protocol.errors import x\nfrom privbench.measures.notions import f\n")
    (tmp_path / "harness/measures/notions.py").write_text(
        "from privbench.protocol.errors import x\nfrom privbench._plumbing import blas\n")
    found, _, _ = tool.problems(tmp_path)
    assert sorted(f for f in found if f.startswith("layer breach")) == [
        "layer breach: privbench._plumbing.abort imports privbench.measures.notions",
        "layer breach: privbench.protocol.plugin imports privbench._plumbing.abort",
        "layer breach: privbench.protocol.problem imports privbench.measures.notions",
    ]


def test_the_checker_sees_a_lazy_import_gone_missing(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent('''\
        from __future__ import annotations
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import pandas as pd

        def good(frame: pd.DataFrame) -> pd.Series:
            import pandas as pd
            return pd.Series(frame.index)

        def bad(path) -> pd.DataFrame:
            return pd.read_csv(path)
        '''))
    assert _tool().type_only_uses(path) == [(11, "pd")]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in [p for p in path.parents if p != tmp_path and tmp_path in p.parents]:
            (parent / "__init__.py").touch()
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_the_checker_fails_a_host_module_that_names_a_plugin(tmp_path) -> None:
    """The host names no plugin: a string naming a built-in plugin in harness/ code is a
    problem (a default, a special case), one in a docstring or comment is not."""
    root = _tree(tmp_path, {
        "plugins/executors/local.py": 'class Local:\n    name = "local"\n',
        "plugins/reporters/html.py": 'class Html:\n    name = "html"\n',
        "harness/running/sweep.py": '''\
            """Runs on the executor that declares itself default (``local``, say)."""
            # not "local" here
            def make(executor=None):
                return executor or "local:workers=2"
            ''',
        "harness/cli/report_cmd.py": 'def run(args):\n    """Uses html unless told."""\n'
                                     '    return args.reporter\n\n\ndef example():\n'
                                     '    """html"""\n',
    })
    found, _, _ = _tool().problems(root)
    assert found == ["plugin named by the host: harness/running/sweep.py:4 'local:workers=2' "
                     "(let the plugin declare it, e.g. default = True)"]


def test_the_checker_fails_a_plugin_importing_a_reporter_and_a_reporter_importing_a_figure(
        tmp_path) -> None:
    root = _tree(tmp_path, {
        "plugins/reporters/html.py": "from privbench.plugins.figures import shootout, common\n",
        "plugins/reporters/render.py": "X = 1\n",
        "plugins/figures/shootout.py": "def privbench_register_figures():\n    return []\n",
        "plugins/figures/common.py": "def style():\n    return {}\n",
        "plugins/mechanisms/_sppm/figure.py": "from privbench.plugins.reporters.render import X\n",
        "plugins/mechanisms/sppm.py": "Y = 2\n",
    })
    found, _, _ = _tool().problems(root)
    assert sorted(found) == [
        "plugin import: plugins/mechanisms/_sppm/figure.py imports "
        "privbench.plugins.reporters.render: imports a reporter (only the host runs reporters)",
        "plugin import: plugins/reporters/html.py imports privbench.plugins.figures.shootout: "
        "imports a figure plugin (a reporter gets figures from the host)",
    ]


def test_the_checker_fails_a_second_default_for_an_sppm_knob(tmp_path) -> None:
    """SPPM's knobs have their one default in SPPMSettings: a face (the plugin, solve_sppm,
    the benchmark command) giving one of its own is reported; None ("not given") is not."""
    tool = _tool()
    root = _tree(tmp_path, {
        "plugins/mechanisms/_sppm/settings.py":
            "class SPPMSettings:\n    iterations: int = knob(20000)\n    tol: float = 1e-3\n",
        "plugins/mechanisms/_sppm/solve.py":
            "def solve_sppm(problem, settings=None, *, tol=1e-4, x0=None):\n    pass\n"
            "def helper(iterations=None):\n    pass\n",
        "plugins/mechanisms/_sppm/benchmark_cmd.py":
            "def add_parser(p):\n    p.add_argument('--iterations', type=int, default=100)\n"
            "    p.add_argument('--tol', default=None)\n    p.add_argument('--m', default=8)\n",
    })
    found = [line for line in tool.problems(root)[0] if line.startswith("second default")]
    assert found == [
        "second default: plugins/mechanisms/_sppm/solve.py:1 tol (its one default is "
        "SPPMSettings's, plugins/mechanisms/_sppm/settings.py; read it from there)",
        "second default: plugins/mechanisms/_sppm/benchmark_cmd.py:2 iterations (its one "
        "default is SPPMSettings's, plugins/mechanisms/_sppm/settings.py; read it from there)"]
