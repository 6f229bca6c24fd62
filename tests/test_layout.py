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
