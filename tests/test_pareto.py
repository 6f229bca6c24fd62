"""Pareto fronts and trade-off summaries (results.pareto) on hand-computed curves."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbench as pb
from privbench.results.pareto import (
    Curve,
    distortion_for_leakage,
    distortion_ratio,
    leakage_at_distortion,
    pareto_front,
)

# SPPM-like: 0.5 bits at d = 0, 0.1 at 0.02, 0.0 at 0.05
SPPM = ([0.0, 0.02, 0.05, 0.1], [0.5, 0.1, 0.0, 0.0])
# ExpMec-like: slower; a dominated point (0.15, 0.3) must be ignored
EXP = ([0.0, 0.1, 0.15, 0.2, 0.4], [0.5, 0.3, 0.3, 0.1, 0.0])


def test_pareto_front_drops_dominated_and_nan() -> None:
    d, i = pareto_front([0.2, 0.0, 0.1, 0.1, 0.3, np.nan], [0.1, 0.5, 0.35, 0.3, 0.2, 0.0])
    assert d.tolist() == [0.0, 0.1, 0.2]
    assert i.tolist() == [0.5, 0.3, 0.1]


def test_distortion_for_leakage_interpolates() -> None:
    # 0.5 -> 0.1 between 0 and 0.02: target 0.3 is halfway -> 0.01
    assert distortion_for_leakage(SPPM, 0.3) == pytest.approx(0.01)
    # exact hit on a point
    assert distortion_for_leakage(SPPM, 0.1) == pytest.approx(0.02)
    # target above the starting leakage: the first point already meets it
    assert distortion_for_leakage(SPPM, 0.6) == 0.0
    # ExpMec: 0.3 -> 0.1 between 0.1 and 0.2; target 0.2 -> 0.15
    assert distortion_for_leakage(EXP, 0.2) == pytest.approx(0.15)
    assert distortion_for_leakage(([0.0, 0.1], [0.5, 0.2]), 0.1) is None


def test_leakage_at_distortion() -> None:
    assert leakage_at_distortion(EXP, 0.05) == pytest.approx(0.4)
    assert leakage_at_distortion(EXP, 1.0) == 0.0
    assert leakage_at_distortion(([0.1, 0.2], [0.4, 0.2]), 0.05) is None


def test_ratio_between_mechanisms() -> None:
    # target 0.1: ExpMec needs 0.2, SPPM 0.02 -> 10x
    assert distortion_ratio(EXP, SPPM, 0.1) == pytest.approx(10.0)
    # target 0.0: 0.4 / 0.05 = 8x
    assert distortion_ratio(Curve.from_points(*EXP), Curve.from_points(*SPPM), 0.0) \
        == pytest.approx(8.0)
    assert distortion_ratio(EXP, ([0.0], [0.0]), 0.0) == math.inf
    assert distortion_ratio(([0.0, 0.1], [0.5, 0.4]), SPPM, 0.0) is None


def test_summarise_and_reference() -> None:
    from privbench.results.pareto import default_targets, pick_reference, summarise

    curves = {"expmec": Curve.from_points(*EXP), "sppm[L=100]": Curve.from_points(*SPPM)}
    assert pick_reference(list(curves), ["sppm", "optimal"]) == "sppm[L=100]"
    assert pb.pick_reference(list(curves)) == "sppm[L=100]"  # sppm declares reference_rank 0
    assert pb.reference_mechanisms()[:2] == ["sppm", "optimal"]
    assert pick_reference(["expmec", "identity"]) == "expmec"
    assert default_targets(0.5) == [0.125, 0.05]
    rows = summarise(curves, targets=[0.1], budgets=[0.1], reference="sppm[L=100]")
    by = {r.label: r for r in rows}
    assert by["expmec"].ratio[0.1] == pytest.approx(10.0)
    assert by["sppm[L=100]"].ratio[0.1] == pytest.approx(1.0)
    assert by["expmec"].leakage_at[0.1] == pytest.approx(0.3)
    assert by["sppm[L=100]"].leakage_at[0.1] == pytest.approx(0.0)
