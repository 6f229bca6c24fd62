"""``privbench report`` and ``compare`` on a small store; the page opened in headless Chromium."""

from __future__ import annotations

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
    """expmec and identity on three toy sizes at three budgets, plus one failed run."""
    pytest.importorskip("matplotlib")
    db = tmp_path_factory.mktemp("report") / "runs.sqlite"
    with ResultStore(db) as s:
        for m in (2, 3, 4):
            for mech in ("expmec", "identity"):
                for delta in (0.5, 2.0, 5.0):
                    spec = RunSpec(mechanism=mech, dataset="synthetic", delta=delta,
                                   dataset_params={"m": m}, seed=0)
                    s.add(execute_run(spec))
        s.add(execute_run(RunSpec(mechanism="expmec", dataset="synthetic", delta=-1.0,
                                  dataset_params={"m": 3})))  # an error row for the run table
    return db


def test_report_writes_page_and_figures(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert main(["report", "--db", str(store), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    names = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "synthetic-fig6-runtime.png" in names
    for fig in ("fig2-tradeoff", "fig3-roc-posterior", "fig5-behaviour"):
        assert f"synthetic-m-3-{fig}.png" in names
    assert page.count("data:image/png;base64,") == len(names)
    assert "Trade-off summary" in page and "All runs with provenance" in page
    assert "git commit" in page and "error" in page


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


def chromium(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, *FLAGS, *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_images_render_in_headless_chromium(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    main(["report", "--db", str(store), "--out", str(out)])
    page = (out / "index.html").read_text()
    probe = ("<script>window.addEventListener('load', () => {"
             "const imgs = [...document.images];"
             "document.title = 'PROBE' + JSON.stringify(imgs.map(i => "
             "[i.complete, i.naturalWidth, i.naturalHeight]));});</script>")
    check = out / "check.html"
    check.write_text(page.replace("</body>", probe + "</body>"))
    profile = tmp_path / "profile"
    res = chromium(f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
                   check.as_uri())
    found = re.search(r"<title>PROBE(.*?)</title>", res.stdout)
    assert found, res.stderr[-2000:]
    sizes = json.loads(found.group(1))
    assert len(sizes) == page.count("<img ")
    assert sizes and all(done and w > 0 and h > 0 for done, w, h in sizes)
    shot = tmp_path / "shot.png"
    chromium(f"--user-data-dir={profile}", "--window-size=1200,900", f"--screenshot={shot}",
             (out / "index.html").as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10000


def test_informative_budgets_pick_low_half_and_private() -> None:
    import pandas as pd

    from privbench.plugins.reporters._figures import informative_budgets

    # best leakage per budget: 1.0, 0.8, 0.55, 0.3, 0.05, 0.0 with I(A;B) = 1
    df = pd.DataFrame({"delta": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.3],
                       "mi_bits": [1.0, 0.8, 0.55, 0.3, 0.05, 0.0, 0.9],
                       "prior_mi_bits": 1.0})
    assert informative_budgets(df) == [0.1, 0.3, 0.5]
    assert informative_budgets(df.iloc[:2]) == [0.1, 0.2]


def test_report_runs_sweeps_first(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    spec = tmp_path / "tiny.toml"
    spec.write_text('mechanisms = ["expmec", "identity"]\ndatasets = ["synthetic:m=2"]\n'
                    "deltas = [0.5, 2.0]\n")
    db, out = tmp_path / "tiny.sqlite", tmp_path / "site"
    assert main(["report", "--sweep", str(spec), "--db", str(db), "--out", str(out)]) == 0
    assert (out / "figures" / "synthetic-m-2-fig2-tradeoff.png").is_file()
    with ResultStore(db) as s:
        assert s.count() == 4
    # resumed: nothing runs twice
    assert main(["report", "--sweep", str(spec), "--db", str(db), "--out", str(out)]) == 0
    with ResultStore(db) as s:
        assert s.count() == 4
    assert main(["report", "--sweep", str(tmp_path / "missing.toml"), "--db", str(db),
                 "--out", str(out)]) == 2
