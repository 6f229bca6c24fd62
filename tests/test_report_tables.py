"""The report's tables and the support-size figure leave out a release that changed
nothing (E[d] = 0) by that measured fact, not by the name of the identity mechanism."""

from __future__ import annotations

import pandas as pd

from privbench.plugins.figures.mapping import SupportSizes
from privbench.plugins.reporters import tables


def _run(label: str, delta: float, distortion: float, **metrics) -> dict:
    return {"label": label, "mechanism": label, "instance": "toy", "delta": delta,
            "status": "ok", "mi_bits": 0.3, "prior_mi_bits": 0.5, "distortion": distortion,
            "n": 4, "support_max": 2, "metrics": metrics}


def _fmi(after: float) -> dict:
    return {"age": {"before": 0.5, "after": after}, "sex": {"before": 0.2, "after": after / 2}}


def test_feature_leakage_has_no_after_column_for_a_release_that_changed_nothing() -> None:
    ok = pd.DataFrame([_run("keeper", 1.0, 0.0, feature_mi=_fmi(0.5)),
                       _run("sppm", 1.0, 0.4, feature_mi=_fmi(0.1)),
                       _run("identity", 1.0, 0.2, feature_mi=_fmi(0.3))])
    table = tables.feature_leakage(ok)
    # keeper (E[d] = 0) has after = before: no column; a changed release keeps its column
    # whatever it is called
    assert table["header"] == ["feature F", "before", "after sppm", "after identity"]


def test_recommendation_rmse_shows_one_row_of_a_release_that_changed_nothing() -> None:
    same = {"rmse_original": [1.0, 1.2], "rmse_released": [1.0, 1.2]}
    moved = {"rmse_original": [1.0, 1.2], "rmse_released": [1.4, 1.5]}
    ok = pd.DataFrame([_run("keeper", 1.0, 0.0, **same), _run("keeper", 2.0, 0.0, **same),
                       _run("sppm", 1.0, 0.3, **moved), _run("sppm", 2.0, 0.6, **moved)])
    table = tables.recommendation_rmse(ok)
    runs = [row[0] for row in table["rows"] if row[0]]
    assert runs == ["keeper Δ=1", "sppm Δ=1", "sppm Δ=2"]


def test_support_sizes_leave_out_a_release_that_changed_nothing() -> None:
    hist = {"support_hist": {"1": 2, "2": 2}}
    runs = pd.DataFrame([_run("keeper", 1.0, 0.0, **hist), _run("sppm", 1.0, 0.3, **hist)])
    _, shown = SupportSizes()._at(runs)
    assert list(shown["label"]) == ["sppm"]
