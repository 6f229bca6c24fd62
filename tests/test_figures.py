"""Figure plugins: a third-party figure in one file reaches the report; the trade-off
figure follows the declared outputs; replicates and intervals become error bars."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import privbench as pb
from privbench.plugins.figures.common import aggregate
from privbench.plugins.figures.tradeoff import PrivacyDistortion
from privbench.results.store import ResultStore
from privbench.running.runner import RunSpec, execute_run

DOCS = Path(__file__).resolve().parents[1] / "docs" / "hooks.md"


def _doc_example() -> str:
    blocks = re.findall(r"```python\n(import privbench as pb.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) == 1
    return blocks[0]


@pytest.fixture
def small_store(tmp_path: Path) -> Path:
    pytest.importorskip("plotly")
    db = tmp_path / "runs.sqlite"
    with ResultStore(db) as s:
        for mech in ("expmec", "identity"):
            for delta in (0.5, 2.0):
                s.add(execute_run(RunSpec(mechanism=mech, dataset="synthetic", delta=delta,
                                          dataset_params={"m": 2})))
    return db


def test_a_third_party_figure_in_one_file_appears_in_the_report(small_store: Path, tmp_path: Path,
                                                                 monkeypatch) -> None:
    from privbench.plugins.reporters.html import build_report

    (tmp_path / "my_figure.py").write_text(_doc_example())
    monkeypatch.syspath_prepend(str(tmp_path))
    host = pb.PluginHost(env={"PRIVBENCH_PLUGIN_MODULES": "my_figure"})
    assert "leakage-per-runtime" in host.figures()
    index, files = build_report(small_store, tmp_path / "site", figures=host.figures(),
                                outputs=host.outputs())
    page = index.read_text()
    assert 'data-figure="leakage-per-runtime"' in page and "Leakage against solve time" in page
    data = pd.read_csv(tmp_path / "site" / "figures" / "synthetic-m-2-leakage-per-runtime.csv")
    assert set(data["label"]) == {"expmec", "identity"} and len(data) == 4
    assert data["text"].str.startswith(("expmec", "identity")).all()  # the run keys
    # without the plugin, no such figure
    plain = pb.PluginHost()
    index, _ = build_report(small_store, tmp_path / "plain", figures=plain.figures(),
                            outputs=plain.outputs())
    assert "leakage-per-runtime" not in index.read_text()


def test_a_failing_figure_fails_its_own_block(small_store: Path, tmp_path: Path) -> None:
    from privbench.plugins.reporters.html import build_report

    class Broken(pb.Figure):
        name = "broken"

        def plot(self, runs):
            raise RuntimeError("no luck")

    class Plugin:
        @pb.hookimpl
        def privbench_register_figures(self):
            return [Broken]

    host = pb.PluginHost()
    host.register(Plugin(), name="broken-figure")
    index, _ = build_report(small_store, tmp_path / "site", figures=host.figures(),
                            outputs=host.outputs())
    page = index.read_text()
    assert "figure &#39;broken&#39; failed on synthetic[m=2]: RuntimeError: no luck" in page
    assert 'data-figure="privacy-distortion"' in page  # the others still drawn


def _runs(**metrics_by_row: list) -> pd.DataFrame:
    rows = []
    for k in range(len(metrics_by_row["delta"])):
        rows.append({"label": metrics_by_row["label"][k], "delta": metrics_by_row["delta"][k],
                     "distortion": metrics_by_row["distortion"][k], "mi_bits": metrics_by_row["mi"][k],
                     "run_key": f"key{k}", "metrics": metrics_by_row["metrics"][k]})
    return pd.DataFrame(rows)


def test_replicates_become_mean_and_sd_and_intervals_error_bars() -> None:
    runs = _runs(label=["a", "a", "a", "b"], delta=[1.0, 1.0, 1.0, 1.0],
                 distortion=[0.5, 0.7, 0.9, 0.4], mi=[0.1, 0.2, 0.3, 0.25],
                 metrics=[{}, {}, {}, {"mi_bits_ci95": [0.2, 0.31]}])
    pts = aggregate(runs, "distortion", "mi_bits").set_index("label")
    assert pts.loc["a", "n"] == 3 and pts.loc["a", "y"] == pytest.approx(0.2)
    assert pts.loc["a", "y_high"] - pts.loc["a", "y"] == pytest.approx(0.1)  # sd of .1,.2,.3
    assert pts.loc["a", "x_low"] == pytest.approx(0.5)  # 0.7 - sd 0.2
    assert "mean ± sd of 3 replicates" in pts.loc["a", "text"]
    assert (pts.loc["b", "y_low"], pts.loc["b", "y_high"]) == (0.2, 0.31)
    assert pd.isna(pts.loc["b", "x_low"]) and pts.loc["b", "text"] == "key3"


def test_every_declared_privacy_output_gets_a_tradeoff_figure() -> None:
    outputs = {"mi_bits": pb.Output("mi_bits", "bits", "lower", "I(A; B̂)"),
               "fancy_leak": pb.Output("fancy_leak", "bits", "lower", "a new notion"),
               "guess": pb.Output("guess", "guesses", "higher", "more is more private"),
               "const": pb.Output("const", "bits", "lower", "the same for every run"),
               "distortion": pb.Output("distortion", "distortion", "neutral"),
               "absent": pb.Output("absent", "bits", "lower", "no run has it")}
    runs = _runs(label=["a", "a", "b", "b"], delta=[0.1, 2.0, 0.1, 2.0],
                 distortion=[0.1, 1.9, 0.05, 1.0], mi=[0.9, 0.1, 1.0, 0.5],
                 metrics=[{"fancy_leak": v, "guess": 1 + v, "const": 1.0} for v in (3, 1, 4, 2)])
    fig = PrivacyDistortion()
    chosen = [o["output"] for o in fig.options(runs, outputs)]
    assert chosen == ["mi_bits", "fancy_leak", "guess"]
    traces = fig.plot(runs, output="fancy_leak")
    assert {t["label"]: t["y"] for t in traces} == {"a": [3.0, 1.0], "b": [4.0, 2.0]}
    meta = fig.get_metadata(runs, **fig.options(runs, outputs)[2])
    assert meta["xlog"] is True and "higher is more private" in meta["caption"]  # 0.1..2: > 10x
    assert fig.get_metadata(runs.assign(delta=[1.0, 2.0] * 2))["xlog"] is False
