"""Hostile figures stay in their block: a figure plugin that raises or
returns malformed traces (text=5, a None trace, NaN or infinite sizes, 10^6 points, NaN
values) fails only its own block, with the reason on the page; every other figure draws,
in headless Chromium too, and the page's JSON never holds NaN."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.host import manager as host_module

pytest.importorskip("plotly")
pytest.importorskip("jinja2")
TESTS = Path(__file__).resolve().parent
#: the helper plugins the tests load by module name (PRIVBENCH_PLUGIN_MODULES)
PLUGINS = TESTS / "plugins"
FAST = ("--no-metric", "optimum", "--no-metric", "mapping_behaviour")


@pytest.fixture
def hostile_figures(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.setenv("PRIVBENCH_PLUGIN_MODULES", "hostile_figures")
    previous = host_module.set_host(pb.PluginHost(env=dict(os.environ)))
    yield
    host_module.set_host(previous)


@pytest.fixture
def site(hostile_figures, tmp_path: Path) -> Path:
    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "identity", "-m", "expmec", "-d", "synthetic:m=2", "--delta", "0.5",
                 "--delta", "2", "--db", str(db), *FAST]) == 0
    out = tmp_path / "site"
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0  # was: the report failed
    return out


def _plots(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="pb-plots">(.*?)</script>', page, re.S)
    assert found
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the page's JSON: JSON.parse would throw")

    return json.loads(found.group(1), parse_constant=refuse)


def test_each_hostile_figure_fails_only_its_own_block(site: Path) -> None:
    page = (site / "index.html").read_text()
    reasons = {
        "hostile_raises": "RuntimeError: deliberate figure failure",
        "hostile_text_five": "text is int",
        "hostile_none_trace": "trace 0 is NoneType; expected a dict",
        "hostile_nan_size": "size = &#39;nan&#39; is not a finite number &gt; 0",
        "hostile_inf_size": "size = &#39;inf&#39; is not a finite number &gt; 0",
        "hostile_million": "more than 200,000 points",
        "hostile_not_a_list": "plot returned str",
    }
    for name, reason in reasons.items():
        line = next((x for x in page.splitlines() if f"figure &#39;{name}&#39; failed" in x), "")
        assert reason in line, (name, line[:300])
    plots = _plots(page)
    figures = {p["figure"] for p in
               [{"figure": m.group(1)} for m in re.finditer(r'data-figure="([^"]+)"', page)]}
    assert "hostile_nan_values" in figures and "privacy-distortion" in figures
    assert len(plots) > 5
    # NaN values became nulls; no file of a failed figure was written
    assert not list((site / "figures").glob("*hostile-raises*"))
    assert not list((site / "figures").glob("*hostile-million*"))


def test_table_figures_fail_alone_and_a_good_one_is_shown_escaped(site: Path) -> None:
    """A figure of ``type = "table"``: a malformed table fails only its block, naming what
    is wrong; a good one is a page table (cells and tooltips escaped, a failed cell marked)
    with its rows written as CSV and Markdown."""
    page = (site / "index.html").read_text()
    reasons = {"table_ragged": "table &#39;rows&#39; is not 2 rows of 2 cells",
               "table_no_header": "no dict with a &#39;header&#39; list",
               "table_bad_titles": "table &#39;titles&#39; is not 1 rows of 1 cells"}
    for name, reason in reasons.items():
        line = next((x for x in page.splitlines() if f"figure &#39;{name}&#39; failed" in x), "")
        assert reason in line, (name, line[:300])
    block = page[page.index('data-figure="table_good"'):]
    block = block[:block.index("</table>")]
    assert "&lt;pwn-cell&gt;" in block and "<pwn-" not in block
    assert 'class=" bad" title="&lt;pwn-title&gt;">1.235</td>' in block
    md = next((site / "figures").glob("*table-good.md")).read_text()
    assert md == "| solver | <b>s</b> |\n|---|---|\n| <pwn-cell> | 1.235 |\n"
    assert next((site / "figures").glob("*table-good.csv")).read_text().splitlines() == [
        "solver,<b>s</b>", "<pwn-cell>,1.235"]
    assert not list((site / "figures").glob("*table-ragged*"))


CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()),
                None)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_the_rest_of_the_report_draws_in_a_browser(site: Path, tmp_path: Path) -> None:
    # test_report.py holds the browser probe; under --import-mode=importlib the tests folder
    # is not on sys.path ("from test_report import ..." failed wherever Chromium exists)
    helpers = importlib.util.spec_from_file_location("report_probe",
                                                     Path(__file__).with_name("test_report.py"))
    module = importlib.util.module_from_spec(helpers)
    helpers.loader.exec_module(module)
    render_in_chromium = module.render_in_chromium

    page = (site / "index.html").read_text()
    plots, console = render_in_chromium(site / "index.html", tmp_path)
    assert "Uncaught" not in console, console
    assert len(plots) == page.count('class="pb-plot"') > 5
    drawn = [p for p in plots if p["svg"] >= 1]
    assert len(drawn) == len(plots), [p for p in plots if p["svg"] < 1]
    assert any(p["figure"] == "hostile_nan_values" for p in drawn)
