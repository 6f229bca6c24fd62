"""Every string a store holds reaches the HTML report escaped: mechanism names, parameters,
error messages, data-set names and notes, the echoed sweep spec, table cells and the
solver-shootout table. A store is data (someone else's sweep, a shared file): markup in
it must show as text, never run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from privbench import PluginHost
from privbench.plugins.reporters.html import build_report
from privbench.results.store import ResultStore
from privbench.running.runner import RunSpec, execute_run

#: one marker per place a stored string reaches; each must appear escaped, never raw
MARKERS = ("pwn-mech", "pwn-param", "pwn-error", "pwn-dataset", "pwn-spec", "pwn-solver")


def _hostile(record: dict, mech: str | None = None, param: str | None = None) -> dict:
    if mech:
        record["mechanism"] = mech
    if param:
        record["params"] = {**(record.get("params") or {}), "tag": param}
    record["metrics"] = {**(record.get("metrics") or {}),
                         "dataset_name": "synthetic <pwn-dataset> & co"}
    record["run_key"] = f"{record['run_key']}|{mech}|{param}"
    return record


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("plotly")
    pytest.importorskip("jinja2")
    root = tmp_path_factory.mktemp("escaping")
    db = root / "runs.sqlite"
    with ResultStore(db) as s:
        for delta in (0.5, 2.0):
            for mech in ("expmec", "identity"):
                rec = execute_run(RunSpec(mechanism=mech, dataset="synthetic", delta=delta,
                                          dataset_params={"m": 3}, seed=0))
                s.add(_hostile(rec, mech="<pwn-mech>" if mech == "identity" else None,
                               param="<pwn-param>\"'"))
            for tag in ("<pwn-solver>", "plain"):  # two labels, so the tag is shown
                rec = execute_run(RunSpec(mechanism="sppm", dataset="synthetic", delta=delta,
                                          dataset_params={"m": 3}))
                s.add(_hostile(rec, param=tag))
        bad = execute_run(RunSpec(mechanism="expmec", dataset="synthetic", delta=-1.0,
                                  dataset_params={"m": 3}))
        bad["error"] = "ValueError: <pwn-error> <script>alert(1)</script>"
        s.add(bad)
    spec = root / "spec.toml"
    spec.write_text('# <pwn-spec> </pre><script>alert(2)</script>\nmechanisms = ["expmec"]\n'
                    'datasets = ["synthetic:m=3"]\ndeltas = [0.5]\n')
    host = PluginHost()  # the figures (the solver-shootout table among them) come from the host
    index, _ = build_report(db, root / "site", specs=(str(spec),), figures=host.figures(),
                            outputs=host.outputs())
    return Path(index).read_text(encoding="utf-8")


@pytest.mark.parametrize("marker", MARKERS)
def test_each_stored_string_reaches_the_page_escaped(page: str, marker: str) -> None:
    assert f"&lt;{marker}&gt;" in page, f"{marker} never reached the page (the test is void)"


def test_no_stored_markup_reaches_the_page_raw(page: str) -> None:
    raw = sorted(set(re.findall(r"<pwn-[a-z]+", page)))
    assert not raw, f"unescaped: {raw}"
    assert "<script>alert" not in page


def test_the_shootout_table_escapes_its_solver_labels(page: str) -> None:
    section = page[page.index('id="store-solver-shootout"'):]
    table = section[section.index("<table"):section.index("</table>")]
    assert "&lt;pwn-solver&gt;" in table and "<pwn-solver" not in table
