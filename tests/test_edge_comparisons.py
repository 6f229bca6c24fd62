"""Comparisons at their edge: each test fails when one comparison or normalisation in the
code is off by the smallest amount (``>`` made ``>=``, a tolerance loosened by 1e-9, a
strip dropped). Each was checked by making that one-line change by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.datasets.csv_table import CSVTable
from privbench.plugins.mechanisms.watchdog import log_lifts
from privbench.protocol.feasibility import budget_slack
from privbench.running.runner import execute_run
from privbench.running.specs import RunSpec

# ------------------------------------------------------------------ watchdog: lift > ε

def test_watchdog_randomises_only_symbols_whose_lift_exceeds_epsilon_strictly() -> None:
    """ε set to a symbol's own lift, computed by the same function: that symbol is at ε,
    not above it, and stays released as is (Hsu et al.: randomise when lift > ε)."""
    joint = np.array([[0.30, 0.10, 0.10], [0.10, 0.20, 0.20]])
    problem = pb.PrivacyProblem.from_arrays(joint, 1.0 - np.eye(3))
    lifts = log_lifts(problem.joint)
    top = float(lifts.max())
    assert np.sum(lifts == top) == 1 and top > 0
    at = pb.get_mechanism("watchdog").solve(problem, delta=top)
    assert at.stats["randomised"] == 0
    assert np.allclose(at.mapping.toarray(), np.eye(3))
    below = pb.get_mechanism("watchdog").solve(problem, delta=np.nextafter(top, 0.0))
    assert below.stats["randomised"] >= 1


# ------------------------------------------------------- runner: E[d] <= Δ + 1e-9·max(1, Δ)

class FixedSpend(pb.MappingMechanism):
    """Releases b_0 as b_1 with probability ``theta``, everything else as is, whatever Δ:
    its E[d] is theta · p(b_0) · d(b_1, b_0), set by the test to sit just around Δ."""

    name = "fixed_spend"
    respects_budget = True

    def __init__(self, theta: float = 0.5) -> None:
        self.theta = theta

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        return self.result(_mapping(problem.n, self.theta))


def _mapping(n: int, theta: float) -> np.ndarray:
    X = np.eye(n)
    X[0, 0], X[1, 0] = 1.0 - theta, theta
    return X


class _Plugin:
    @pb.hookimpl
    def privbench_register_mechanisms(self):
        return [FixedSpend]


@pytest.mark.parametrize(("excess", "status"), [(0.5, "ok"), (1.5, "invalid")])
def test_runner_budget_test_has_exactly_its_tolerance(host, excess: float, status: str) -> None:
    """E[d] above Δ by 0.5x the runner's slack is within the budget, by 1.5x it is not (the
    slack is 1e-9 at Δ <= 1: a test loosened by 1e-9 lets the second through)."""
    host.register(_Plugin(), name="fixed-spend-plugin")
    problem = pb.load_dataset("random", n=6, seed=1)
    spend = pb.metrics.expected_distortion(problem, _mapping(problem.n, 0.5))
    delta = spend - excess * budget_slack(spend)
    assert 0 < delta < 1
    record = execute_run(RunSpec(mechanism="fixed_spend", dataset="random",
                                 dataset_params={"n": 6, "seed": 1}, delta=delta))
    assert record["distortion"] == pytest.approx(spend, abs=1e-15)
    assert record["status"] == status, record.get("error")
    if status == "invalid":
        assert "exceeds the budget" in record["error"]


# ------------------------------------------------------------- csv: values as written, trimmed

def test_csv_values_are_trimmed_before_they_become_categories(tmp_path: Path) -> None:
    """'low' and ' low' (a space after the comma) are one private value and 'HS' and
    'HS ' one public category: a table written by hand must not split them."""
    path = tmp_path / "spaced.csv"
    path.write_text("education,income\nHS,low\nHS , low\nBA,high\n BA,high \nHS,low\nBA, low\n")
    problem = CSVTable(path=str(path), private="income").load()
    assert problem.private_labels == ("high", "low")
    assert sorted(s[0] for s in problem.symbols) == ["BA", "HS"]
    by_label = {s[0]: j for j, s in enumerate(problem.symbols)}
    counts = problem.joint * 6  # rows: high, low
    assert np.allclose(counts[:, by_label["BA"]], [2, 1])
    assert np.allclose(counts[:, by_label["HS"]], [0, 3])
