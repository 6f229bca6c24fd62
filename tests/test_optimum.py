"""Certified distance to the optimum: bounds, their combination, the
metric, its cache, and the CLI contract."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main
from privbench.measures.optimum import Bound, anchors, decoder_lower_bound, interval
from privbench.plugins.metrics import _optimum_cache as optimum_cache
from privbench.plugins.metrics.optimum import OptimumGap, OptimumGapLarge

pytest.importorskip("cvxpy")

FIELDS = ("optimum_lower_bits", "optimum_upper_bits", "excess_mi_bits_max", "excess_mi_bits_min")


def random_problem(n: int, k: int, seed: int) -> pb.PrivacyProblem:
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(n * k, 0.5)).reshape(k, n)
    D = rng.integers(1, 5, (n, n)).astype(float)
    np.fill_diagonal(D, 0.0)
    return pb.PrivacyProblem.from_arrays(joint, D, name=f"random-{n}x{k}-{seed}")


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without certificates (process memory and store)."""
    monkeypatch.setattr(optimum_cache, "_MEMORY", {})
    # no sweep store outside a sweep: the runner sets it per run (RunSpec.store)


# -- the bounds themselves --------------------------------------------------------------

@pytest.mark.parametrize(("n", "k", "seed", "delta"), [(8, 2, 0, 0.1), (12, 3, 1, 0.3),
                                                       (20, 2, 2, 0.2), (40, 2, 5, 0.1)])
def test_decoder_bound_is_below_the_optimum(n, k, seed, delta) -> None:
    problem = random_problem(n, k, seed)
    best = pb.get_mechanism("optimal").solve(problem, delta=delta)
    optimum = pb.metrics.mutual_information(problem, best.mapping)
    assert optimum > 1e-3  # a budget where the answer is neither 0 ...
    assert optimum < problem.prior_mi_bits - 1e-3  # ... nor I(A; B)
    # from the optimal mapping's posterior: valid, and close (looser where the optimum
    # leaves outputs unused: the docstring's measurements)
    bound = decoder_lower_bound(problem, best.mapping, delta)
    assert optimum - 0.05 <= bound <= optimum + 1e-7
    # from a poor mapping (the identity mixed with uniform): still a valid bound
    X = 0.5 * np.eye(n) + 0.5 / n
    assert 0.0 <= decoder_lower_bound(problem, X, delta) <= optimum + 1e-7


def test_decoder_bound_is_tight_with_full_support() -> None:
    problem = random_problem(8, 2, 0)
    best = pb.get_mechanism("optimal").solve(problem, delta=0.1)
    optimum = pb.metrics.mutual_information(problem, best.mapping)
    assert decoder_lower_bound(problem, best.mapping, 0.1) == pytest.approx(optimum, abs=1e-5)


def test_decoder_bound_by_hand_on_two_symbols() -> None:
    """p(a, b) = [[.4, .1], [.1, .4]], d = 1 off the diagonal, Δ = 0.1: the optimum flips
    each symbol with probability 0.1 (binary symmetric), I* = 1 - h(0.4 · 0.9 + ...)."""
    joint = np.array([[0.4, 0.1], [0.1, 0.4]])
    problem = pb.PrivacyProblem.from_arrays(joint, [[0.0, 1.0], [1.0, 0.0]])
    flip = 0.1
    X = np.array([[1 - flip, flip], [flip, 1 - flip]])
    h = lambda p: -p * math.log2(p) - (1 - p) * math.log2(1 - p)  # noqa: E731
    p_err = 0.2 * (1 - flip) + 0.8 * flip  # P(A != B̂)
    exact = 1.0 - h(p_err)
    assert pb.metrics.mutual_information(problem, X) == pytest.approx(exact, abs=1e-12)
    assert decoder_lower_bound(problem, X, 0.1) == pytest.approx(exact, abs=1e-9)


def test_interval_uses_monotonicity_and_convexity() -> None:
    certs = [Bound(0.0, 0.0, 1.0, "identity"), Bound(1.0, 0.0, 0.0, "constant output"),
             Bound(0.5, 0.2, 0.3, "solver")]
    # lower bound at 0.4 from the certificate at 0.5 (I* non-increasing)
    low, up = interval(certs, 0.4)
    assert low == pytest.approx(0.2)
    # upper: chord between (0, 1) and (0.5, 0.3) at 0.4: 0.2 * 1 + 0.8 * 0.3
    assert up == pytest.approx(0.2 * 1.0 + 0.8 * 0.3)
    # above 0.5 the lower bound at 0.5 no longer applies; the upper is the chord to 0
    low, up = interval(certs, 0.75)
    assert low == 0.0 and up == pytest.approx(0.15)
    # from the constant output's distortion on, I* = 0 exactly
    assert interval(certs, 1.0) == (0.0, 0.0)


def test_anchors() -> None:
    problem = random_problem(6, 2, 3)
    identity, constant = anchors(problem)
    assert identity.distortion == 0.0 and identity.upper_bits == pytest.approx(problem.prior_mi_bits)
    D = problem.distortion.to_dense()
    assert constant.distortion == pytest.approx(float(np.min(D @ problem.p_b)))


# -- the metric ---------------------------------------------------------------------------

@pytest.mark.parametrize(("mechanism", "params"), [("expmec", {}), ("randomized_response", {}),
                                                   ("sppm", {"iterations": 5})])
@pytest.mark.parametrize("seed", [0, 1])
def test_metric_brackets_the_exact_optimum_at_the_mappings_distortion(mechanism, params, seed) -> None:
    problem = random_problem(10, 2, 10 + seed)
    delta = 0.3 if mechanism != "randomized_response" else 1.0
    result = pb.get_mechanism(mechanism, **params).solve(problem, delta=delta)
    out = OptimumGap().compute(problem, result, delta=delta)
    I_X = pb.metrics.mutual_information(problem, result.mapping)
    D_X = pb.metrics.expected_distortion(problem, result.mapping)
    exact = pb.metrics.mutual_information(
        problem, pb.get_mechanism("optimal").solve(problem, delta=D_X).mapping)
    L, U = out["optimum_lower_bits"], out["optimum_upper_bits"]
    assert L <= exact + 1e-6 and exact <= U + 1e-6
    assert L <= U <= I_X + 1e-12
    assert U - L <= 1e-3 + 1e-9  # the default tolerance
    assert out["excess_mi_bits_max"] == pytest.approx(I_X - L)
    assert out["excess_mi_bits_min"] == pytest.approx(I_X - U) and out["excess_mi_bits_min"] >= -1e-12


def test_metric_reuses_certificates() -> None:
    problem = random_problem(10, 2, 5)
    result = pb.get_mechanism("expmec").solve(problem, delta=0.3)
    first = OptimumGap().compute(problem, result, delta=0.3)
    second = OptimumGap().compute(problem, result, delta=0.3)
    assert first["optimum_source"].startswith(("sppm", "mirror_descent")) and first["optimum_seconds"] > 0
    assert second["optimum_source"] == "cache" and second["optimum_seconds"] == 0.0
    assert second["optimum_lower_bits"] == first["optimum_lower_bits"]


def test_identity_and_constant_outputs() -> None:
    import scipy.sparse as sparse

    problem = random_problem(8, 2, 6)
    n = problem.n
    identity = pb.MechanismResult(kind="mapping", mapping=sparse.csc_array(np.eye(n)))
    out = OptimumGap().compute(problem, identity, delta=1.0)
    # D = 0 admits only the identity here (d > 0 off the diagonal): I* = I(A; B)
    assert out["optimum_upper_bits"] == pytest.approx(problem.prior_mi_bits, abs=1e-12)
    assert out["optimum_lower_bits"] == pytest.approx(problem.prior_mi_bits, abs=1e-6)
    # the cheapest constant output: I* = 0 from its distortion on, with no solve
    X = np.zeros((n, n))
    X[int(np.argmin(problem.distortion.to_dense() @ problem.p_b))] = 1.0
    constant = pb.MechanismResult(kind="mapping", mapping=sparse.csc_array(X))
    out = OptimumGap().compute(problem, constant, delta=1.0)
    assert out["optimum_source"] == "anchors" and out["optimum_seconds"] == 0.0
    assert out["optimum_lower_bits"] == out["optimum_upper_bits"] == 0.0
    assert out["excess_mi_bits_min"] == pytest.approx(0.0, abs=1e-12)


def test_size_limit_and_the_opt_in_metric() -> None:
    problem = random_problem(12, 2, 7)
    result = pb.get_mechanism("expmec").solve(problem, delta=0.3)
    assert OptimumGap(max_n=10).applies(problem, result) is False
    assert OptimumGap().applies(problem, result) is True
    assert OptimumGapLarge().applies(problem, result) is False  # only above the default
    assert OptimumGapLarge.default is False and OptimumGap.default is True


def test_cli_stores_certificates_and_shares_them(db_path: Path, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    argv = ["run", "-m", "expmec", "-d", "random:n=12,seed=3", "--delta", "0.2", "--json",
            "--db", str(db_path)]
    assert main(argv) == 0
    (first,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert all(first["metrics"][f] is not None for f in FIELDS)
    assert first["metrics"]["optimum_source"].startswith(("sppm", "mirror_descent"))
    with sqlite3.connect(db_path) as conn:
        (rows,) = conn.execute("SELECT COUNT(*) FROM optimum_certificates").fetchone()
    assert rows == 1
    optimum_cache._MEMORY.clear()  # as if another process: only the store remembers
    assert main(argv) == 0
    (second,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert second["metrics"]["optimum_source"] == "cache"
    assert second["metrics"]["optimum_lower_bits"] == first["metrics"]["optimum_lower_bits"]


@pytest.mark.realdata
def test_census_expmec_contract(real_data_dir: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's command: the four fields, L <= U, L <= I_X."""
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(real_data_dir))
    assert main(["run", "-m", "expmec", "-d", "census:top_k=100", "--delta", "0.3", "--json",
                 "--no-store"]) == 0
    (record,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    m = record["metrics"]
    L, U = m["optimum_lower_bits"], m["optimum_upper_bits"]
    assert 0 < L <= U <= record["mi_bits"] and U - L <= 1e-3
    assert m["excess_mi_bits_max"] == pytest.approx(record["mi_bits"] - L)
    assert m["excess_mi_bits_min"] > 0.1  # ExpMec is far from optimal on census


def test_compare_and_report_show_the_excess(db_path: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    from privbench.plugins.figures.common import optimum_band

    argv = ["run", "-m", "expmec", "-m", "sppm", "-d", "synthetic:m=4", "--delta", "0.5",
            "--delta", "1.5", "--delta", "3", "--db", str(db_path)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["compare", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    assert "excess at Δ=1.5" in out
    assert "expmec leaks" in out and "more than the optimum at its distortion" in out
    from privbench.results.views import excess_at, load_runs

    runs = load_runs(db_path)
    excess = excess_at(runs, "expmec", 1.5)
    assert excess is not None and 0 < excess["min"] <= excess["max"]
    grid, lower, upper = optimum_band(runs)
    assert (lower <= upper + 1e-12).all() and grid.size > 10
    # the band contains every run's certified interval at its own distortion
    for _, row in runs.iterrows():
        m = row["metrics"]
        k = np.searchsorted(grid, row["distortion"])
        if k < grid.size and np.isclose(grid[k], row["distortion"]):
            assert lower[k] <= m["optimum_upper_bits"] + 1e-12
    # on a log axis the grid is geometric from the least positive distortion and holds every
    # certified distortion (a linear grid drew the band flat across the first decades)
    grid, lower, upper = optimum_band(runs, log=True)
    assert (grid > 0).all() and (lower <= upper + 1e-12).all()
    certified = runs["distortion"][runs["distortion"] > 0]
    assert all(np.isclose(grid, d).any() for d in certified)
    steps = np.diff(np.log(grid))
    assert steps.max() < 0.2  # no decade left unsampled
    assert main(["report", "--db", str(db_path), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "certified band on the least leakage" in page and "more than the optimum" in page
