"""CLI usability: what a new user reads (tables at 80 columns, data status, empty cells, progress)."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import pytest

from privbench.cli import main

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
import conftest  # noqa: E402


def test_several_mechanisms_and_datasets_all_run(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-m", "expmec", "-d", "synthetic:m=3",
                 "-d", "random:n=5", "--delta", "1", "--db", str(db), "--json"]) == 0
    rows = {(json.loads(line)["mechanism"], json.loads(line)["dataset"])
            for line in capsys.readouterr().out.splitlines()}
    assert rows == {(m, d) for m in ("identity", "expmec") for d in ("synthetic", "random")}
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 4


def test_run_table_is_readable_at_80_columns(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", "-m", "sppm:iterations=3,mode=frank-wolfe", "-m", "identity", "-d", "synthetic:m=4",
                 "-d", "politics_tv_surrogate", "--delta", "1", "--no-store"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80
    # names are whole on one line, never folded or cut; the data set is each table's title
    assert any("sppm[iterations=3," in line for line in lines)
    assert any(re.search(r"\d+ runs? on politics_tv_surrogate", line) for line in lines)
    assert "ok*" in out and "stopped before its tolerance" in out  # convergence is shown


def test_data_list_says_whether_the_files_are_there(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["data", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["synthetic"]["data"] == "generated" and rows["csv"]["data"] == "your file"
    real = conftest.real_data_path()
    if real is None:
        pytest.skip("real data not available")
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(real))
    assert main(["data", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["census"]["data"] == "found" and str(real) in rows["census"]["where"]


def test_data_list_without_files_says_missing(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    assert main(["data", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["census"]["status"] == "ok" and rows["census"]["data"] == "missing"


def test_compare_says_what_each_empty_cell_means(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "expmec", "-m", "identity", "-m", "optimal", "-d", "synthetic:m=3",
                 "--delta", "0.5", "--delta", "2", "--delta", "8", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--target", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "not reached" in out and "'not reached': no measured budget" in out
    assert "'-'" not in out


def test_real_data_fixture_reads_the_variable_set_at_start(monkeypatch) -> None:
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)  # what the data-set tests do
    if conftest.ENV_DATA_DIR:
        assert conftest.real_data_path() == Path(conftest.ENV_DATA_DIR)


def test_every_label_in_a_figure_has_its_own_look() -> None:
    from privbench.plugins.figures.common import assign_styles, distinct_styles, style

    toy = ["sppm[iterations=1000,mode=optimal]", "optimal", "expmec", "identity"]
    fig6 = ["sppm[iterations=10]", "sppm[iterations=100]", "sppm[iterations=1000]", "sppm",
            "expmec", "quantized[n_clusters=25]", "quantized[n_clusters=50]", "nearest"]
    assign_styles(toy + fig6)
    assert distinct_styles(toy) and distinct_styles(fig6)
    assert style("sppm[iterations=10]") == style("sppm[iterations=10]")  # stable across figures
    assert style("sppm[mode=optimal]")["color"] != style("expmec")["color"]  # the reported bug


def test_report_shows_provenance_as_a_table(tmp_path) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--db", str(db)]) == 0
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    section = page[page.index("<h2>Provenance</h2>"):]
    section = section[: section.index("</table>")]
    assert "<td class=\"l\">packages.numpy</td>" in section and "1 run</th>" in section
    assert "{" not in section  # no raw JSON


def test_listing_plugins_imports_no_heavy_dependency() -> None:
    """Plugins import solvers, numba and ML libraries where they use them (start-up)."""
    import subprocess

    code = ("import sys, privbench; privbench.get_host().plugins(); "
            "print(','.join(m for m in ('numba', 'scipy.optimize', 'scipy.spatial', 'sklearn', "
            "'cvxpy', 'ortools', 'dask', 'matplotlib', 'highspy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


HEAVY_FOR_LISTING = ("pandas", "pyarrow", "scipy.linalg", "scipy.special", "scipy.stats",
                     "numba", "sklearn", "cvxpy", "matplotlib", "psutil", "http.client",
                     "privbench.results.store", "privbench.running.runner")


def test_privbench_plugins_imports_only_what_listing_needs() -> None:
    """``privbench plugins`` through the CLI: no store, no runner, no data frames, no dense
    linear algebra (a plugin imports those when it prepares or loads)."""
    import subprocess

    code = ("import sys, io, contextlib\nfrom privbench.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n    code = main(['plugins'])\n"
            "assert code == 0 and 'sppm' in out.getvalue(), out.getvalue()\n"
            f"print(','.join(m for m in {HEAVY_FOR_LISTING!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_progress_inside_a_long_solve_on_a_terminal(monkeypatch) -> None:
    """A solve that reports for longer than the quiet period shows iteration, gap, time."""
    import io

    from privbench.running import progress as progress_module

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    clock = iter([0.0, 1.0, 2.5, 3.0])
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    stream = Tty()
    with progress_module.RunProgress(1, stream=stream) as bar:
        bar.solve_update(iteration=1, gap_bits=0.5)
        bar.solve_update(iteration=10, gap_bits=0.1)  # 1 s: still quiet
        assert bar._rich.tasks[0].description == "runs"
        bar.solve_update(iteration=120, gap_bits=0.0031)  # 2.5 s: shown
        assert bar._rich.tasks[0].description == "runs: iteration 120, gap 0.0031 bits, 2.5 s"
        bar.advance({"status": "ok", "mechanism": "sppm", "dataset": "census", "delta": 0.1})
        assert bar._rich.tasks[0].description == "runs"
    assert progress_module.solve_text({"iteration": 3}, 4.0) == "iteration 3, 4.0 s"


def test_compare_and_report_show_unconverged_runs(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "sppm:iterations=2,mode=frank-wolfe", "-m", "expmec", "-d", "synthetic:m=4",
                 "--delta", "0.5", "--delta", "2", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["compare", "--db", str(db)]) == 0
    assert "not certified" in capsys.readouterr().out
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<th" in page and ">certified</th>" in page and ">no (gap " in page


def test_no_two_mechanisms_share_a_colour_even_beyond_the_palette() -> None:
    """31 mechanisms (more than 3x the palette), the built-in ones among them, each with a variant:
    31 colours; a mechanism's variants keep its colour."""
    from privbench.plugins.figures.common import PALETTE, STYLES, assign_styles, style

    bases = [*STYLES, "laplace", "pram", "mondrian", *(f"plugin_mech_{k}" for k in range(22))]
    assert len(bases) > 3 * len(PALETTE)
    assign_styles(bases + [f"{b}[k=2]" for b in bases])
    colours = {b: style(b)["color"] for b in bases}
    assert len(set(colours.values())) == len(bases), colours
    assert all(style(f"{b}[k=2]")["color"] == colours[b] for b in bases)
    assert {b: colours[b] for b in STYLES} == {b: s["color"] for b, s in STYLES.items()}
    assign_styles(["plugin_mech_0", "plugin_mech_1"])  # two whose names may hash alike
    assert style("plugin_mech_0")["color"] != style("plugin_mech_1")["color"]
