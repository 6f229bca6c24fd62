"""One budget test everywhere, and certificates checked on arrival.

A certificate carries the Δ it was solved at; the runner refuses one solved at another Δ
or whose lower bound exceeds the mapping's own I; the optimum metric never reports a
negative excess. ``compare``, the report's curves and ``tools/notions_table.py`` use the
runner's budget tolerance, so a run the runner accepted is never "over budget" elsewhere.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privbench as pb
from privbench.plugins.metrics import _optimum_cache as optimum_cache
from privbench.protocol.certificate import contradiction
from privbench.protocol.feasibility import (
    BUDGET_TOL,
    budget_slack,
    row_budget_costs,
    within_budget,
)
from privbench.results.pareto import Curve, leakage_at_distortion
from privbench.running.runner import execute_run
from privbench.running.specs import RunSpec

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_memory():
    optimum_cache._MEMORY.clear()  # certificates of other tests are not this problem's
    yield
    optimum_cache._MEMORY.clear()


class Forger(pb.MappingMechanism):
    """Returns the optimal mapping at Δ with the certificate of a solve at ``at`` x Δ."""

    name = "forger"
    respects_budget = True

    def __init__(self, at: float = 0.25, say_delta: bool = True) -> None:
        self.at = at
        self.say_delta = say_delta

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        good = pb.get_mechanism("mirror_descent", tol=1e-6).solve(problem, delta=delta)
        other = pb.get_mechanism("mirror_descent", tol=1e-6).solve(problem, delta=self.at * delta)
        stats = pb.Certificate.from_stats(other.stats).to_stats()
        stats["objective_bits"] = good.stats["objective_bits"]  # claims its own mapping's I
        if not self.say_delta:
            stats.pop("certified_delta")
        return self.result(good.mapping, **stats)


class _Plugin:
    @pb.hookimpl
    def privbench_register_mechanisms(self):
        return [Forger]


@pytest.fixture
def forger_host(host):
    host.register(_Plugin(), name="forger-plugin")
    return host


def _delta() -> float:
    """10 % of the cheapest constant mapping's E[d] on the test problem (I* = 0.065 bits)."""
    problem = pb.load_dataset("random", n=8, seed=4)
    return 0.1 * float(row_budget_costs(problem).min())


def _run(mechanism: str, params: dict, delta: float) -> dict:
    spec = RunSpec(mechanism=mechanism, mechanism_params=params, dataset="random",
                   dataset_params={"n": 8, "seed": 4}, delta=delta)
    return execute_run(spec)


@pytest.mark.parametrize("name", ["mirror_descent", "smoothed_dual", "optimal", "sppm"])
def test_every_certified_solver_says_the_delta_it_solved_at(name) -> None:
    problem = pb.load_dataset("random", n=8, seed=4)
    delta = _delta()
    if name == "optimal" and importlib.util.find_spec("cvxpy") is None:
        pytest.skip("optimal needs cvxpy")
    cert = pb.Certificate.from_stats(pb.get_mechanism(name).solve(problem, delta=delta).stats)
    assert cert is not None and cert.delta == delta
    assert contradiction(cert, delta, cert.objective_bits) is None


def test_a_certificate_of_a_smaller_budget_makes_the_run_invalid(forger_host) -> None:
    """The issue's case: a bound solved at a smaller Δ is above the mapping's own I (it
    gave an excess of -0.093 bits); the plugin does not even say its Δ."""
    delta = _delta()
    record = _run("forger", {"at": 0.25, "say_delta": False}, delta)
    assert record["status"] == "invalid", record["error"]
    assert "lower bound" in record["error"] and "exceeds the mapping's own" in record["error"]
    # the optimum metric did not take it either: no negative excess, nothing cached
    m = record["metrics"]
    assert m.get("excess_mi_bits_max") is None or m["excess_mi_bits_max"] >= 0
    assert m.get("optimum_source") != "certificate"


def test_a_certificate_naming_another_delta_makes_the_run_invalid(forger_host) -> None:
    """Solved at 2Δ the bound is below I (valid, but for another problem): its Δ says so."""
    delta = _delta()
    record = _run("forger", {"at": 2.0, "say_delta": True}, delta)
    assert record["status"] == "invalid", record["error"]
    assert "solved at delta" in record["error"]
    ok = _run("forger", {"at": 1.0, "say_delta": True}, delta)
    assert ok["status"] == "ok", ok["error"]


def test_the_optimum_metric_never_reports_a_negative_excess() -> None:
    """Called directly with the forged certificate (no runner to refuse it)."""
    from privbench.plugins.metrics.optimum import OptimumGap

    problem = pb.load_dataset("random", n=8, seed=4)
    delta = _delta()
    good = pb.get_mechanism("mirror_descent", tol=1e-6).solve(problem, delta=delta)
    small = pb.get_mechanism("mirror_descent", tol=1e-6).solve(problem, delta=0.25 * delta)
    forged = pb.Certificate.from_stats(small.stats).to_stats()
    forged.pop("certified_delta")
    result = pb.MechanismResult("mapping", mapping=good.mapping, stats=forged)
    values = OptimumGap(tol=1e-3).compute(problem, result, delta=delta)
    assert values["excess_mi_bits_max"] >= 0 and values["excess_mi_bits_min"] >= 0
    assert values["optimum_source"] != "certificate"
    leak = pb.metrics.mutual_information(problem, good.mapping)
    assert values["optimum_lower_bits"] <= leak <= values["optimum_upper_bits"] + 1e-3


def test_contradiction_tolerates_rounding_only() -> None:
    cert = pb.Certificate.of(0.5, 0.5, "tolerance", delta=1.0)
    assert contradiction(cert, 1.0, 0.5 - 1e-12) is None  # two computations of one I
    assert contradiction(cert, 1.0, 0.5 - 1e-6) is not None
    assert contradiction(cert, 1.0 + 2e-16, 0.5) is None  # Δ equal up to rounding
    assert contradiction(cert, 1.0 + 1e-6, 0.5) is not None


# -- one budget test everywhere ------------------------------------------------------------

def test_the_budget_test_is_the_runners_tolerance() -> None:
    assert within_budget(1.0 + 2.2e-16, 1.0)
    assert within_budget(1.0 + 0.9e-9, 1.0) and not within_budget(1.0 + 1.1e-9, 1.0)
    assert within_budget(1000 * (1 + 0.9e-9), 1000) and not within_budget(1000 * (1 + 1.1e-9), 1000)
    assert budget_slack(0.001) == BUDGET_TOL  # absolute below Δ = 1


def test_a_curve_point_a_rounding_above_the_budget_is_within_it() -> None:
    """The issue's case: SPPM's point at E[d] = Δ + 2.2e-16 was dropped (maximal leakage
    "at Δ ≤ 1" read 0.4919 from another point instead of its own 0.0488)."""
    curve = Curve.from_points([0.0, 1.0 + 2.2e-16, 2.0], [0.9, 0.0488, 0.01])
    assert leakage_at_distortion(curve, 1.0) == pytest.approx(0.0488)
    lone = Curve.from_points([1.0 + 2.2e-16], [0.0488])
    assert leakage_at_distortion(lone, 1.0) == pytest.approx(0.0488)
    assert leakage_at_distortion(lone, 1.0 - 1e-6) is None  # really over: not within


def test_compare_marks_over_budget_with_the_runners_test() -> None:
    from privbench.cli._compare_uncertainty import _over_budget

    assert not _over_budget(pd.Series({"distortion": 1.0 + 2.2e-16}), 1.0)
    assert _over_budget(pd.Series({"distortion": 1.0 + 1e-7}), 1.0)  # was within (1e-6 rel)


def test_notions_table_uses_the_runners_test(tmp_path) -> None:
    from privbench.results.store import ResultStore

    spec = importlib.util.spec_from_file_location("notions_table", REPO / "tools" / "notions_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    db = tmp_path / "n.sqlite"
    with ResultStore(db) as s:
        for mech, d in (("a", 1.0 + 2.2e-16), ("b", 1.0 + 1e-7)):
            s.add({"mechanism": mech, "dataset": "toy", "params": {}, "dataset_params": {},
                   "delta": 1.0, "status": "ok", "mi_bits": 0.1, "distortion": d, "n": 2,
                   "metrics": {}, "run_key": f"{mech}|toy"})
    df = module.load(str(db)).set_index("mechanism")
    assert bool(df.loc["a", "within"]) and not bool(df.loc["b", "within"])


def test_runner_and_compare_agree_on_a_run_at_the_edge() -> None:
    """What the runner accepts (status ok) is within its budget for compare too."""
    problem = pb.load_dataset("random", n=8, seed=4)
    delta = _delta()
    X = pb.get_mechanism("mirror_descent").solve(problem, delta=delta).mapping
    d = pb.metrics.expected_distortion(problem, X)
    assert within_budget(d, delta)
    assert not np.isnan(d)


def test_an_uncertified_run_is_not_taken_as_the_optimum() -> None:
    """A run stopped at its cap (converged false, a weak bound) does not
    make the optimum: the metric solves for a narrow interval and caches nothing of it."""
    from privbench.plugins.metrics.optimum import OptimumGap

    problem = pb.load_dataset("random", n=8, seed=4)
    delta = _delta()
    X = pb.get_mechanism("expmec").solve(problem, delta=delta).mapping
    leak = pb.metrics.mutual_information(problem, X)
    stats = pb.Certificate.of(leak, 0.0, "iterations", converged=False, delta=delta).to_stats()
    result = pb.MechanismResult("mapping", mapping=X, stats={**stats, "gap_bits": leak})
    values = OptimumGap(tol=1e-3).compute(problem, result, delta=delta)
    assert values["optimum_source"] not in ("certificate", "anchors")
    assert values["optimum_upper_bits"] - values["optimum_lower_bits"] <= 1e-3
    assert values["excess_mi_bits_min"] > 0.01  # expmec is far from the optimum here
    cached = [b for b in optimum_cache._MEMORY.get(optimum_cache.problem_key(problem), [])]
    assert all(b.source != "certificate" for b in cached)


def test_notions_table_ties_within_a_certified_gap() -> None:
    """A mechanism 1.5e-9 bits below an optimum certified to 1.5e-6 bits has not beaten it
    (the suite's MASS survey cell): both are listed; one a certified gap away is not."""
    spec = importlib.util.spec_from_file_location("notions_table", REPO / "tools" / "notions_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runs = pd.DataFrame({"mechanism": ["optimal", "quantized", "expmec", "pram"],
                         "mi_bits": [9.960956e-05, 9.960956e-05 - 1.5e-9, 9.960956e-05 + 2e-6, 0.5],
                         "gap_bits": [1.5e-6, float("nan"), float("nan"), float("nan")]})
    names = module.winners(runs, "mi_bits", "lower").split(" (")[0].split(", ")
    assert names == ["optimal", "quantized"]
    # another notion has no certified gap: only the numeric floor (1e-6 relative) ties
    runs["maximal_leakage"] = [0.2, 0.2 * (1 - 1e-8), 0.2 * (1 + 1e-5), 0.3]
    names = module.winners(runs, "maximal_leakage", "lower").split(" (")[0].split(", ")
    assert names == ["optimal", "quantized"]
