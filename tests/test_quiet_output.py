"""Quiet output: a report on seed replicates warns nothing (inf values once made numpy warn
"invalid value encountered in subtract" 23-32 times per report), and an inf value is said
in the figure's legend and caption instead of silently vanishing."""

from __future__ import annotations

import math
import warnings

import pandas as pd

from privbench.cli import main
from privbench.plugins.figures.common import aggregate
from privbench.plugins.figures.tradeoff import INF_NOTE, PrivacyDistortion
from privbench.results.store import ResultStore


def _runs(tmp_path):
    db = tmp_path / "r.sqlite"
    with ResultStore(db) as s:
        for mech, lip in (("sppm", math.inf), ("expmec", 2.0)):
            for d in (1.0, 4.0):
                for seed in (0, 1, 2):
                    s.add({"mechanism": mech, "dataset": "toy", "params": {},
                           "dataset_params": {}, "delta": d, "seed": seed, "status": "ok",
                           "mi_bits": 0.5 / d + 0.01 * seed, "prior_mi_bits": 1.0,
                           "distortion": d * (0.9 + 0.01 * seed), "n": 8,
                           "metrics": {"dataset_name": "toy", "lip_epsilon": lip / d},
                           "run_key": f"{mech}|toy|delta={d}|seed={seed}"})
    return db


def test_replicates_with_inf_aggregate_without_warnings(tmp_path) -> None:
    runs = pd.DataFrame({"label": ["a"] * 3, "delta": [1.0] * 3, "distortion": [1.0, 1.1, 1.2],
                         "status": ["ok"] * 3, "mechanism": ["a"] * 3, "params": [{}] * 3,
                         "dataset": ["t"] * 3, "dataset_params": [{}] * 3, "seed": [0, 1, 2],
                         "metrics": [{"lip_epsilon": math.inf}] * 3})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pts = aggregate(runs, "distortion", "lip_epsilon")
    assert math.isinf(pts["y"].iloc[0]) and math.isnan(pts["y_low"].iloc[0])
    assert pts["x_high"].iloc[0] - pts["x"].iloc[0] > 0  # finite values keep their sd


def test_report_on_replicates_warns_nothing_and_names_inf(tmp_path, host) -> None:
    db = _runs(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["report", "--db", str(db), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "failed on" not in page  # a warning raised inside a figure becomes its error block
    fig = PrivacyDistortion()
    from privbench.results.views import load_runs

    runs = load_runs(db)
    traces = fig.plot(runs, output="lip_epsilon")
    labels = [t["label"] for t in traces]
    assert "sppm (∞ at Δ = 1, 4)" in labels and "expmec" in labels
    assert INF_NOTE in fig.get_metadata(runs, output="lip_epsilon")["caption"]


def test_lip_mixing_share_divides_only_the_rows_it_breaks() -> None:
    """A row equal to r_v made np.where's untaken branch divide by zero (a RuntimeWarning in
    every test run's summary)."""
    import numpy as np

    from privbench.plugins.mechanisms.lip_optimal import _breaking_share

    r_v = -0.25
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _breaking_share(np.array([r_v, 0.5, -1.0]), r_v) == 0.5 / 0.75
        assert _breaking_share(np.array([r_v, -1.0]), r_v) == 0.0


def test_pytest_filters_name_a_message_and_a_category() -> None:
    """The warnings the tests provoke on purpose are filtered one by one, never wholesale."""
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text("utf-8"))
    filters = config["tool"]["pytest"]["ini_options"]["filterwarnings"]
    assert filters
    for entry in filters:
        action, message, category = entry.split(":")[:3]
        assert action == "ignore" and len(message) > 10 and category.endswith("Warning"), entry
