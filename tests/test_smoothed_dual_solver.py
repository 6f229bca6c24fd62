"""``smoothed_dual``: the dense smoothed dual of problem (1) as a standalone, certified solver."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import expected_distortion, mutual_information
from privbench.plugins.mechanisms.smoothed_dual import SmoothedDual
from privbench.protocol.feasibility import row_budget_costs
from privbench.testing import check_mechanism

#: the exact optimum (cvxpy, Clarabel) is itself accurate to about this (bits)
OPT_TOL = 1e-6


def check_against_optimal(problem: pb.PrivacyProblem, delta: float, tol: float = 1e-3
                          ) -> pb.MechanismResult:
    """Solve with smoothed_dual and the exact optimum; assert every promise of the result."""
    res = SmoothedDual(tol=tol).solve(problem, delta)
    X = res.mapping.toarray()
    assert np.all(X >= 0)
    assert np.abs(X.sum(axis=0) - 1.0).max() <= 1e-9  # exactly column-stochastic
    assert expected_distortion(problem, res.mapping) <= delta  # budget met
    mi = mutual_information(problem, res.mapping)
    mi_opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    s = res.stats
    assert s["converged"] and s["gap_bits"] <= tol
    assert s["objective_bits"] == pytest.approx(mi, abs=1e-9)
    assert mi <= mi_opt + tol  # within tol of the optimum
    assert s["lower_bits"] <= mi_opt + OPT_TOL  # a valid (certified) lower bound
    assert s["lower_bits"] <= mi  # and below the returned point
    assert s["budget_dual"] > 0
    trace = np.array(s["trace"])
    assert trace.shape[1] == 3 and len(trace) >= 1
    assert np.all(np.diff(trace[:, 0]) > 0)  # seconds increase
    assert np.all(trace[:, 2] <= trace[:, 1])  # lower <= upper at every checkpoint
    assert trace[-1, 1] - trace[-1, 2] <= tol
    return res


# (n, |A|, seed, distortion, Δ as a fraction of the perfect-privacy budget): all with an
# answer strictly between 0 and I(A; B)
CASES = [(8, 2, 1, "random", 0.1), (16, 3, 2, "hamming", 0.2), (32, 2, 3, "random", 0.03),
         (48, 3, 6, "hamming", 0.08), (64, 2, 4, "hamming", 0.1), (64, 3, 5, "random", 0.02)]


@pytest.mark.parametrize(("n", "n_private", "seed", "kind", "frac"), CASES)
def test_matches_the_exact_optimum(n: int, n_private: int, seed: int, kind: str,
                                   frac: float) -> None:
    problem = pb.load_dataset("random", n=n, n_private=n_private, seed=seed, distortion=kind)
    delta = frac * float(row_budget_costs(problem).min())
    res = check_against_optimal(problem, delta)
    mi = res.stats["objective_bits"]
    assert 1e-3 < mi < problem.prior_mi_bits - 1e-3  # the budget is neither trivial end


def test_tighter_tolerance_is_met_too() -> None:
    problem = pb.load_dataset("random", n=24, n_private=2, seed=11, distortion="hamming")
    check_against_optimal(problem, 0.1 * float(row_budget_costs(problem).min()), tol=1e-4)


def test_constant_output_budget_is_answered_exactly() -> None:
    problem = pb.load_dataset("random", n=12, n_private=2, seed=1, distortion="random")
    res = SmoothedDual().solve(problem, 1.01 * float(row_budget_costs(problem).min()))
    assert res.stats["gap_bits"] == 0.0 and res.stats["converged"]
    assert mutual_information(problem, res.mapping) == pytest.approx(0.0, abs=1e-12)


def test_conformance() -> None:
    check_mechanism(SmoothedDual)


def test_skips_above_max_n() -> None:
    problem = pb.load_dataset("random", n=20, n_private=2, seed=0)
    skip, reason = SmoothedDual(max_n=10).skip(problem)
    assert skip and "max_n" in reason
    assert SmoothedDual().skip(problem) == (False, None)


@pytest.mark.parametrize(("param", "value"), [
    ("tol", -1.0), ("tol", float("nan")), ("tau_start", 0.0), ("tau_ratio", 1.0),
    ("tau_ratio", 0.0), ("max_rounds", 0), ("max_rounds", 2.5), ("max_seconds", 0.0),
    ("lbfgs_iterations", True), ("threads", -1), ("max_n", "big")])
def test_bad_parameters_name_the_parameter(param: str, value: object) -> None:
    with pytest.raises(pb.ValidationError, match=param):
        pb.get_mechanism("smoothed_dual", **{param: value})


@pytest.mark.realdata
@pytest.mark.parametrize("delta", [0.3, 0.8])
def test_census_top100_matches_the_optimum(real_data_dir: Path, delta: float) -> None:
    from privbench.datasets import census

    problem = census.Census(top_k=100, data_dir=str(real_data_dir)).load()
    check_against_optimal(problem, delta)


def test_max_seconds_stops_inside_a_stage_with_a_valid_mapping() -> None:
    problem = pb.load_dataset("random", n=32, n_private=2, seed=3, distortion="random")
    delta = 0.03 * float(row_budget_costs(problem).min())
    res = SmoothedDual(max_seconds=1e-4).solve(problem, delta)
    assert res.stats["stop_reason"] == "max_seconds"
    assert expected_distortion(problem, res.mapping) <= delta
    assert res.stats["lower_bits"] <= res.stats["objective_bits"]
