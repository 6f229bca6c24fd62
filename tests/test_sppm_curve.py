"""SPPM across the trade-off curve: certified intervals that contain an independent
optimum at every relative budget, burst certificates when frozen inputs spend budget, the
auto mode's choice, and a run stopped at its cap (status ok, not converged, one line)."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import mutual_information
from privbench.plugins.mechanisms._sppm import continuation, modes, working_set

#: the relative budgets of the curve, Δ / d_const
CURVE = (1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 0.6)
#: the independent optimum's solver tolerance (bits)
OPT_TOL = 1e-6


def d_const(problem: pb.PrivacyProblem) -> float:
    return float(pb.get_mechanism("constant").solve(problem, 0.0).stats["expected_distortion"])


def optimum_bits(problem: pb.PrivacyProblem, delta: float) -> float:
    """I* by the ``optimal`` mechanism (the dense convex program, cvxpy)."""
    return mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)


@pytest.mark.slow
@pytest.mark.parametrize("m", [6, 7])
@pytest.mark.parametrize("relative", CURVE)
def test_the_certified_interval_contains_the_optimum(m: int, relative: float) -> None:
    """The default run certifies 1e-3 bits, and [I - gap, I] holds cvxpy's optimum: the
    certificate never over-claims, whichever mode ``auto`` picked."""
    pytest.importorskip("cvxpy")
    problem = pb.load_dataset("synthetic", m=m)
    delta = relative * d_const(problem)
    res = pb.get_mechanism("sppm").solve(problem, delta)
    s = res.stats
    mi = mutual_information(problem, res.mapping)
    opt = optimum_bits(problem, delta)
    assert s["converged"] and s["gap_bits"] <= 1e-3, (s["mode"], s["stop_reason"], s["gap_bits"])
    assert s["objective_bits"] == pytest.approx(mi, abs=1e-9)
    assert s["lower_bits"] <= opt + OPT_TOL  # the bound is a bound
    assert mi >= opt - OPT_TOL  # the mapping is feasible, so no better than the optimum
    assert s["mode"] == ("dual" if relative >= modes.AUTO_DUAL_FROM else "frank-wolfe")


@pytest.mark.realdata
def test_auto_picks_the_dual_mode_at_its_threshold_on_census(real_data_dir, monkeypatch) -> None:
    """At Δ = AUTO_DUAL_FROM d_const exactly (d_const from the constant mechanism, as the
    benchmark computes it) census with every profile gets the dual mode: its O(n k) budget
    sums are 1e-13 above that d_const, which once sent such a run to Frank-Wolfe (1,446 s)."""
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(real_data_dir))
    problem = pb.load_dataset("census", top_k="all")
    dc = d_const(problem)
    assert modes.resolve_mode("auto", problem, modes.AUTO_DUAL_FROM * dc) == "dual"
    assert modes.resolve_mode("auto", problem, 0.99 * modes.AUTO_DUAL_FROM * dc) == "frank-wolfe"


def test_auto_picks_the_dual_mode_from_its_threshold_on_small_alphabets_and_long_lines() -> None:
    """Up to n = COARSE_FROM (and off a line) the dual mode starts at AUTO_DUAL_FROM
    (0.01 d_const); on a longer line, where both modes start from a coarse solve, at
    AUTO_LINE_DUAL_FROM (0.03)."""
    small, large = pb.load_dataset("synthetic", m=5), pb.load_dataset("synthetic", m=12)
    for problem in (small, large):
        dc = d_const(problem)
        start = modes.AUTO_LINE_DUAL_FROM if problem.n > continuation.COARSE_FROM \
            else modes.AUTO_DUAL_FROM
        assert modes.resolve_mode("auto", problem, start * dc) == "dual"
        assert modes.resolve_mode("auto", problem, 0.99 * start * dc) == "frank-wolfe"
        assert modes.resolve_mode("optimal", problem, 0.5 * dc) == "optimal"


def test_burst_certificates_hold_when_frozen_inputs_spend_budget(monkeypatch) -> None:
    """Inputs with one pair away from their own symbol are frozen and spend budget: a
    burst's problem then has Δ less that spend. X0 is cvxpy's optimum at Δ = 0.6 d_const
    with entries below 0.01 dropped (22 of 64 inputs sit wholly on another output) and
    pruning is on (``prune_after`` > 0). The certified interval must hold the optimum
    (fails if the burst certifies with its restricted bound, or gives the working inputs
    the full Δ)."""
    pytest.importorskip("cvxpy")
    problem = pb.load_dataset("synthetic", m=6)
    delta = 0.6 * d_const(problem)
    X = pb.get_mechanism("optimal").solve(problem, delta).mapping.toarray()
    X[X < 1e-2] = 0.0
    X /= X.sum(axis=0, keepdims=True)
    used = float(np.sum(X * problem.distortion.to_dense() * problem.p_b[None, :]))
    delta = max(delta, used * (1 + 1e-9))
    spent = []
    original = working_set._Restricted.__init__

    def recorded(self, setup, state, *args, **kwargs):
        original(self, setup, state, *args, **kwargs)
        V = state.V  # the frozen inputs' spend, from V and the iterate
        one = np.bincount(V.cols, minlength=V.n)[V.cols] == 1
        frozen_spend = float(V.a[one] @ state.x[one])
        assert self.delta == pytest.approx(setup.delta - frozen_spend, rel=1e-12, abs=1e-12)
        spent.append(frozen_spend)

    monkeypatch.setattr(working_set._Restricted, "__init__", recorded)
    res = pb.get_mechanism("sppm", mode="frank-wolfe", tol=1e-4, restricted_steps=5,
                           prune_after=2, x0=X).solve(problem, delta)
    assert max(spent) > 0.01 * delta  # bursts ran with frozen inputs that spend budget
    s = res.stats
    mi = mutual_information(problem, res.mapping)
    opt = optimum_bits(problem, delta)
    assert s["restricted_iterations"] > 0 and s["converged"]
    assert s["objective_bits"] == pytest.approx(mi, abs=1e-9)
    assert s["lower_bits"] <= opt + OPT_TOL
    assert mi - s["gap_bits"] <= opt + OPT_TOL
    assert mi - opt <= 1e-4 + OPT_TOL


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_priced_on_neighbour_lists_are_not_certificates(seed: int) -> None:
    """Off a line, cheap rounds price only K nearest outputs: their bound is no bound.
    Every bound in the trace must stay below the independent optimum (fails if
    ``if step.certified`` is forced true)."""
    pytest.importorskip("cvxpy")
    problem = pb.load_dataset("random", n=30, n_private=2, seed=seed)
    delta = 0.2 * d_const(problem)
    res = pb.get_mechanism("sppm", mode="frank-wolfe", neighbours=2, exact_every=50,
                           iterations=60, tol=1e-9).solve(problem, delta)
    opt = optimum_bits(problem, delta)
    lowers = [row[2] for row in res.stats["trace"]]
    assert max(lowers) <= opt + OPT_TOL
    assert res.stats["lower_bits"] <= opt + OPT_TOL


def test_a_capped_run_is_ok_not_converged_and_says_which_parameter_to_raise(capfd) -> None:
    """Status ok, ``metrics.converged`` false with its gap, one line on stderr naming the cap."""
    for params, name in (({"mode": "frank-wolfe", "iterations": 3}, "iterations"),
                         ({"mode": "dual", "warmup": 2, "polish_rounds": 1}, "polish_rounds")):
        spec = pb.RunSpec(mechanism="sppm", mechanism_params={**params, "tol": 1e-9},
                          dataset="synthetic", dataset_params={"m": 6}, delta=30.0,
                          skip_metrics=("optimum",))
        capfd.readouterr()
        record = pb.execute_run(spec)
        err = capfd.readouterr().err
        assert record["status"] == "ok", record["error"]
        assert record["metrics"]["converged"] is False and record["gap_bits"] > 1e-9
        lines = [line for line in err.splitlines() if line.startswith("sppm: stopped at")]
        assert len(lines) == 1, err
        assert f"{name}={params[name]}" in lines[0] and f"raise `{name}`" in lines[0]
        assert f"{record['gap_bits']:.1e}" in lines[0]


def test_a_certified_run_prints_no_cap_line(capfd) -> None:
    res = pb.get_mechanism("sppm").solve(pb.load_dataset("synthetic", m=5), 1.0)
    assert res.stats["converged"]
    assert "sppm: stopped at" not in capfd.readouterr().err


def test_d_const_is_the_constant_mapping_s_distortion() -> None:
    """The benchmark's d_const: for the synthetic line (uniform on 1..n, squared l2) the
    best constant output is the middle one, E[d] = (n² - 1) / 12 + 1/4 for even n."""
    from privbench.plugins.mechanisms._sppm.benchmark_cmd import constant_distortion

    for m in (4, 6, 9):
        n = 2 ** m
        problem = pb.load_dataset("synthetic", m=m)
        assert constant_distortion(problem) == pytest.approx((n * n - 1) / 12 + 0.25, rel=1e-12)
        D = problem.distortion.to_dense()
        assert constant_distortion(problem) == pytest.approx(float(np.min(D @ problem.p_b)))


def test_the_dual_mode_runs_at_tol_zero() -> None:
    """tol = 0 (run every round) once set the finest temperature to 0: a division by zero
    in the soft-min pass. The auto mode reaches the dual mode at such budgets."""
    problem = pb.load_dataset("random", n=10, n_private=2, seed=3, distortion="sq_l2")
    res = pb.get_mechanism("sppm", tol=0.0, polish_rounds=3).solve(problem,
                                                                    0.3 * d_const(problem))
    assert res.stats["mode"] == "dual" and res.stats["gap_bits"] >= 0
    assert res.stats["stop_reason"] == "dual mode: rounds exhausted"


@pytest.mark.slow
def test_a_burst_with_inputs_frozen_off_the_optimum_certifies_by_exact_pricing(monkeypatch) -> None:
    """The burst's restricted bound is no certificate. Here every burst
    also freezes the 16 inputs around the line's middle (where the optimum mixes the two
    private values) wherever the last full step left them, so the restricted problem's
    optimum, and its bound, lie above I*: only the exact price over all n² pairs at the
    burst's decoder and λ is a lower bound. Every bound in the trace must stay at or below
    cvxpy's optimum (with ``_certify`` keeping the restricted bound the run "certifies"
    0.279 bits against I* = 0.166: checked by hand). tol = 1e-2 lets a burst's own gap
    (0.010 bits at 1,000 restricted steps) reach the test that hands over to pricing."""
    pytest.importorskip("cvxpy")
    problem = pb.load_dataset("synthetic", m=6)
    delta = 0.3 * d_const(problem)
    middle = np.arange(24, 40)
    original = working_set.working_inputs

    def freeze_middle(V):
        work, counts = original(V)
        counts = counts.copy()
        counts[middle] = 1
        return np.setdiff1d(work, middle), counts

    monkeypatch.setattr(working_set, "working_inputs", freeze_middle)
    res = pb.get_mechanism("sppm", mode="frank-wolfe", tol=1e-2, restricted_steps=1000,
                           iterations=400).solve(problem, delta)
    s = res.stats
    opt = optimum_bits(problem, delta)
    assert s["restricted_iterations"] > 0
    assert max(row[2] for row in s["trace"]) <= opt + OPT_TOL
    assert s["lower_bits"] <= opt + OPT_TOL
