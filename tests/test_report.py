"""``privbench report`` and ``compare`` on a small store; the page opened in headless Chromium."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from privbench.cli import main
from privbench.results.store import ResultStore
from privbench.running.runner import RunSpec, execute_run

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists()
                                         else None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """expmec and identity on three toy sizes at budgets spanning 16x, plus one failed run."""
    pytest.importorskip("plotly")
    db = tmp_path_factory.mktemp("report") / "runs.sqlite"
    with ResultStore(db) as s:
        for m in (2, 3, 4):
            for mech in ("expmec", "identity"):
                for delta in (0.25, 1.0, 4.0):
                    spec = RunSpec(mechanism=mech, dataset="synthetic", delta=delta,
                                   dataset_params={"m": m}, seed=0)
                    s.add(execute_run(spec))
        s.add(execute_run(RunSpec(mechanism="expmec", dataset="synthetic", delta=-1.0,
                                  dataset_params={"m": 3})))  # an error row for the run table
    return db


def test_report_writes_page_figures_and_their_data(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert main(["report", "--db", str(store), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    names = sorted(p.name for p in (out / "figures").glob("*.csv"))
    assert "synthetic-runtime-vs-size.csv" in names
    for fig in ("privacy-distortion-mi-bits", "roc-posterior", "mapping-behaviour"):
        assert f"synthetic-m-3-{fig}.csv" in names
    assert page.count('<div class="figure"') == len(names)  # one CSV per figure, linked
    assert all(f'href="figures/{n}"' in page for n in names)
    assert (out / "plotly.min.js").stat().st_size > 1_000_000  # bundled: no network needed
    assert '<script src="plotly.min.js">' in page and "https://" not in page.split("<script")[1]
    assert "Trade-off summary" in page and "All runs with provenance" in page
    assert "git commit" in page and "error" in page and 'class="sortable"' in page
    with (out / "figures" / "synthetic-m-3-privacy-distortion-mi-bits.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    expmec = [r for r in rows if r["label"] == "expmec"]
    assert len(expmec) == 3 and all(float(r["y"]) >= 0 for r in expmec)
    assert not list((out / "figures").glob("*.png"))  # static files only when asked


@pytest.mark.slow
def test_report_static_writes_png_and_pdf(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "site"
    assert main(["report", "--db", str(store), "--out", str(out), "--static"]) == 0
    csvs = {p.stem for p in (out / "figures").glob("*.csv")}
    assert {p.stem for p in (out / "figures").glob("*.png")} == csvs
    assert {p.stem for p in (out / "figures").glob("*.pdf")} == csvs
    png = (out / "figures" / "synthetic-m-3-privacy-distortion-mi-bits.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "figures" / "synthetic-m-3-roc-posterior.pdf").read_bytes()[:5] == b"%PDF-"


def test_compare_prints_ratios(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--db", str(store), "--reference", "identity", "--target", "0.9",
                 "--budget", "2"]) == 0
    text = capsys.readouterr().out
    assert "synthetic[m=3]" in text and "expmec" in text and "E[d] for I≤0.9" in text


@pytest.mark.parametrize("flag", [["--target", "-1"], ["--budget", "nan"], ["--budget", "-3"]])
def test_compare_rejects_bad_thresholds(store: Path, flag: list[str], capsys) -> None:
    assert main(["compare", "--db", str(store), *flag]) == 2
    assert "must be a finite number >= 0" in capsys.readouterr().err


def test_compare_without_runs_fails_cleanly(tmp_path: Path) -> None:
    ResultStore(tmp_path / "empty.sqlite").close()
    assert main(["compare", "--db", str(tmp_path / "empty.sqlite")]) == 2


def chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, *FLAGS, *args], capture_output=True, text=True,
                          timeout=timeout)


#: runs in the page once every plot is drawn: what the browser actually rendered
PROBE = """<script>window.addEventListener('load', () => window.pbReady.then(() => {
  const plots = [...document.querySelectorAll('.pb-plot')].map(d => ({
    id: d.id, figure: d.dataset.figure, svg: d.querySelectorAll('.main-svg').length,
    traces: d.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length,
    xtype: d._fullLayout ? d._fullLayout.xaxis.type : null,
    text: (d.data || []).map(t => t.text || null)}));
  document.title = 'PROBE' + JSON.stringify(plots);
}));</script>"""


def render_in_chromium(index: Path, tmp_path: Path) -> tuple[list[dict], str]:
    """Open the report (a copy with the probe) headless; the plots it drew and the
    browser's console lines."""
    check = index.parent / "check.html"
    check.write_text(index.read_text().replace("</body>", PROBE + "</body>"))
    res = chromium(f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=30000",
                   "--window-size=1400,1000", "--enable-logging=stderr", "--v=0",
                   "--dump-dom", check.as_uri())
    found = re.search(r"<title>PROBE(.*?)</title>", res.stdout, re.S)
    assert found, res.stderr[-3000:]
    console = "\n".join(line for line in res.stderr.splitlines() if ":CONSOLE" in line)
    return json.loads(html.unescape(found.group(1))), console


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_every_figure_renders_in_headless_chromium(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    main(["report", "--db", str(store), "--out", str(out)])
    page = (out / "index.html").read_text()
    plots, console = render_in_chromium(out / "index.html", tmp_path)
    assert "Uncaught" not in console and "Error" not in console, console
    assert len(plots) == page.count('class="pb-plot"') > 10
    assert all(p["svg"] >= 1 and p["traces"] >= 1 for p in plots), plots
    # budgets 0.25..4 span more than a decade: the trade-off's distortion axis is log
    tradeoff = [p for p in plots if p["figure"] == "privacy-distortion"]
    assert tradeoff and all(p["xtype"] == "log" for p in tradeoff)
    # hovering a point shows its run key
    keys = {t for p in tradeoff for texts in p["text"] if texts for t in texts}
    assert any(k.startswith("expmec") and "synthetic" in k for k in keys), keys
    shot = tmp_path / "shot.png"
    chromium(f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900",
             "--virtual-time-budget=20000", f"--screenshot={shot}", (out / "index.html").as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10000


def test_informative_budgets_pick_low_half_and_private() -> None:
    import pandas as pd

    from privbench.plugins.figures.common import informative_budgets

    # best leakage per budget: 1.0, 0.8, 0.55, 0.3, 0.05, 0.0 with I(A;B) = 1
    df = pd.DataFrame({"delta": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.3],
                       "mi_bits": [1.0, 0.8, 0.55, 0.3, 0.05, 0.0, 0.9],
                       "prior_mi_bits": 1.0})
    assert informative_budgets(df) == [0.1, 0.3, 0.5]
    assert informative_budgets(df.iloc[:2]) == [0.1, 0.2]


def test_report_runs_sweeps_first(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    spec = tmp_path / "tiny.toml"
    spec.write_text('mechanisms = ["expmec", "identity"]\ndatasets = ["synthetic:m=2"]\n'
                    "deltas = [0.5, 2.0]\nbaselines = false\n")  # counts the runs below
    db, out = tmp_path / "tiny.sqlite", tmp_path / "site"
    assert main(["report", "--sweep", str(spec), "--db", str(db), "--out", str(out)]) == 0
    assert (out / "figures" / "synthetic-m-2-privacy-distortion-mi-bits.csv").is_file()
    assert "deltas = [0.5, 2.0]" in (out / "index.html").read_text()  # the spec is echoed
    with ResultStore(db) as s:
        first = s.count()
    assert first >= 4  # 2 mechanisms x 2 budgets, plus the baselines a sweep adds
    # resumed: nothing runs twice
    assert main(["report", "--sweep", str(spec), "--db", str(db), "--out", str(out)]) == 0
    with ResultStore(db) as s:
        assert s.count() == first
    assert main(["report", "--sweep", str(tmp_path / "missing.toml"), "--db", str(db),
                 "--out", str(out)]) == 2
