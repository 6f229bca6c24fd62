"""SPPM against the exact optimum on seeded random instances, and its invariants."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import expected_distortion, mutual_information

pytest.importorskip("highspy")

#: the conic solver's own accuracy on I(A; B̂), in bits
OPT_TOL = 1e-6


def perfect_privacy_budget(problem: pb.PrivacyProblem) -> float:
    D = problem.distortion.to_dense()
    return float((D @ problem.p_b).min())


def assert_within_requested_tol(res: pb.MechanismResult, mi: float, mi_opt: float,
                                tol: float) -> None:
    """SPPM asked for ``tol`` is as close to the optimum as it certifies, not merely 1e-3.

    It is never better than the reference beyond the reference's accuracy; it is within
    its certified gap of it; the gap is below ``tol`` when it reports convergence, and
    below 5e-4 bits in any case (measured worst here: 2.0e-4): the optimal mode stops
    early only when its restricted solves cannot tighten the bound further ("solver
    accuracy reached"), and says so (converged false)."""
    gap = res.stats["gap_bits"]
    assert mi_opt - OPT_TOL <= mi <= mi_opt + gap + OPT_TOL
    assert gap <= 5e-4
    assert res.stats["converged"] == (gap < tol)


def check_mapping(problem: pb.PrivacyProblem, res: pb.MechanismResult, delta: float) -> float:
    X = pb.validate_mapping(res.mapping, problem.n)  # column-stochastic, non-negative
    assert expected_distortion(problem, X) <= delta + 1e-9
    mi = mutual_information(problem, X)
    assert -1e-12 <= mi <= problem.prior_mi_bits + 1e-12
    assert res.stats["objective_bits"] == pytest.approx(mi, abs=1e-9)
    return mi


CASES = [
    (kind, k, seed, frac)
    for kind in ("random", "hamming", "sq_l2")
    for k, seed in ((2, 0), (3, 1), (4, 2))
    for frac in (0.05, 0.3)
]


@pytest.mark.parametrize(("kind", "n_private", "seed", "frac"), CASES)
def test_matches_optimal_and_gap_is_certified(kind: str, n_private: int, seed: int,
                                              frac: float) -> None:
    problem = pb.load_dataset("random", n=14, n_private=n_private, seed=seed, distortion=kind)
    delta = frac * perfect_privacy_budget(problem)
    res = pb.get_mechanism("sppm", tol=1e-5, mode="optimal", iterations=400).solve(problem, delta)
    mi = check_mapping(problem, res, delta)
    opt = pb.get_mechanism("optimal").solve(problem, delta)
    mi_opt = mutual_information(problem, opt.mapping)
    assert_within_requested_tol(res, mi, mi_opt, 1e-5)
    assert res.stats["gap_bits"] >= mi - mi_opt - OPT_TOL
    assert res.stats["lower_bits"] <= mi_opt + OPT_TOL


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("kind", ["random", "hamming", "sq_l2"])
def test_matches_optimal_at_n_40(kind: str, seed: int) -> None:
    problem = pb.load_dataset("random", n=40, n_private=3, seed=seed, distortion=kind)
    delta = 0.1 * perfect_privacy_budget(problem)
    res = pb.get_mechanism("sppm", tol=1e-5, mode="optimal", iterations=1000).solve(problem, delta)
    mi = check_mapping(problem, res, delta)
    mi_opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    assert_within_requested_tol(res, mi, mi_opt, 1e-5)
    assert res.stats["gap_bits"] >= mi - mi_opt - OPT_TOL


def test_objective_is_non_increasing_and_gap_reported() -> None:
    problem = pb.load_dataset("random", n=20, n_private=2, seed=5, distortion="sq_l2")
    res = pb.get_mechanism("sppm", tol=0.0, iterations=60).solve(problem, 0.5)
    trace = np.array(res.stats["objective_trace_bits"])
    assert trace.size >= 2
    assert np.all(np.diff(trace) <= 1e-12)
    assert trace[0] == pytest.approx(problem.prior_mi_bits, abs=1e-12)  # X0 = identity
    gaps = np.array(res.stats["gap_trace_bits"])
    assert np.all(gaps >= 0)
    for key in ("iterations", "lp_solves", "columns_generated", "support_max", "support_hist",
                "time_pricing_s", "time_lp_s", "time_linesearch_s"):
        assert key in res.stats
    assert sum(res.stats["support_hist"].values()) == problem.n


def test_zero_probability_symbols_and_empty_outputs() -> None:
    rng = np.random.default_rng(3)
    joint = rng.dirichlet(np.ones(2 * 9)).reshape(2, 9)
    joint[:, [2, 5]] = 0.0  # two public symbols that never occur
    D = rng.random((9, 9))
    np.fill_diagonal(D, 0.0)
    D[2, :] = 0.05  # an unused output close to everything: worth mapping to
    D[2, 2] = 0.0
    problem = pb.PrivacyProblem.from_arrays(joint, D)
    for delta in (0.02, 0.2):
        res = pb.get_mechanism("sppm", tol=1e-6, mode="optimal", iterations=400).solve(problem, delta)
        mi = check_mapping(problem, res, delta)
        mi_opt = mutual_information(problem,
                                    pb.get_mechanism("optimal").solve(problem, delta).mapping)
        assert_within_requested_tol(res, mi, mi_opt, 1e-6)
        assert res.stats["gap_bits"] >= mi - mi_opt - OPT_TOL


def test_perfect_privacy_is_reached() -> None:
    problem = pb.load_dataset("random", n=12, n_private=3, seed=8, distortion="sq_l2")
    delta = perfect_privacy_budget(problem)
    res = pb.get_mechanism("sppm").solve(problem, delta)
    assert check_mapping(problem, res, delta) == 0.0
    assert res.stats["gap_bits"] == 0.0


def test_toy_example_small_and_large_budget() -> None:
    problem = pb.load_dataset("synthetic", m=5)  # n = 32, B determines A
    small = pb.get_mechanism("sppm", tol=1e-3, iterations=100).solve(problem, 0.5)
    check_mapping(problem, small, 0.5)
    X = small.mapping.toarray()
    assert np.sum(np.diag(X) > 0.5) >= 0.75 * problem.n  # most symbols map to themselves
    mis = []
    for delta in (0.5, 8.0, 64.0, perfect_privacy_budget(problem)):
        res = pb.get_mechanism("sppm", tol=1e-3, iterations=100).solve(problem, delta)
        mis.append(check_mapping(problem, res, delta))
    assert mis[-1] == 0.0
    assert all(b <= a + 1e-4 for a, b in zip(mis, mis[1:], strict=False))
    assert mis[0] > 0.5 > mis[2]


def test_budget_zero_keeps_identity() -> None:
    problem = pb.load_dataset("random", n=8, n_private=2, seed=2, distortion="random")
    res = pb.get_mechanism("sppm").solve(problem, 0.0)
    assert check_mapping(problem, res, 0.0) == pytest.approx(problem.prior_mi_bits, abs=1e-12)


@pytest.mark.parametrize(("params", "match"), [
    ({"iterations": -1}, "iterations"),
    ({"tol": -1.0}, "tol"),
    ({"variant": "nope"}, "variant"),
    ({"mode": "exact"}, "mode"),
    ({"prune_after": -1}, "prune_after"),
    ({"threads": 1.5}, "threads"),
    ({"polish_rounds": 0}, "polish_rounds"),
    ({"rounds": -1}, "rounds"),
    ({"handover": -1.0}, "handover"),
    ({"lp_backend": "no_such_backend"}, "no_such_backend"),
])
def test_bad_parameters_are_named(params: dict, match: str) -> None:
    problem = pb.load_dataset("random", n=5, n_private=2, seed=0)
    with pytest.raises(pb.PrivbenchError, match=match):
        pb.get_mechanism("sppm", **params).solve(problem, 0.1)


@pytest.mark.slow
def test_runner_record_has_gap_bits() -> None:
    from privbench.running.runner import RunSpec, execute_run

    rec = execute_run(RunSpec(mechanism="sppm", dataset="random", delta=0.1,
                              mechanism_params={"iterations": 20},
                              dataset_params={"n": 10, "seed": 1}))
    assert rec["status"] == "ok", rec["error"]
    assert rec["gap_bits"] is not None and rec["gap_bits"] >= 0
    assert rec["metrics"]["lp_solves"] >= 1


def test_perfect_privacy_needing_a_non_constant_mapping_is_reached_exactly() -> None:
    """Toy m = 3: pairing b with b + 4 on a shared output costs E[d] = 4, any constant
    mapping 5.25; at Δ in [4, 5.25) I = 0 is reachable only by the pairing kind."""
    problem = pb.load_dataset("synthetic", m=3)
    res = pb.get_mechanism("sppm", iterations=50).solve(problem, 4.5)
    assert check_mapping(problem, res, 4.5) == 0.0
    assert res.stats["gap_bits"] == 0.0
    below = pb.get_mechanism("sppm", iterations=50).solve(problem, 3.9)
    assert check_mapping(problem, below, 3.9) > 0.0


@pytest.mark.parametrize("kind", ["random", "sq_l2"])
def test_x0_starts_from_the_given_mapping(kind: str) -> None:
    problem = pb.load_dataset("random", n=14, n_private=3, seed=3, distortion=kind)
    delta = 0.3 * perfect_privacy_budget(problem)
    n = problem.n
    # a feasible X0 that is not the identity: half identity, half a short SPPM run
    short = pb.get_mechanism("sppm", iterations=3).solve(problem, delta).mapping.toarray()
    X0 = 0.5 * np.eye(n) + 0.5 * short
    res = pb.get_mechanism("sppm", tol=1e-5, mode="optimal", iterations=400, x0=X0).solve(problem, delta)
    mi = check_mapping(problem, res, delta)
    assert res.stats["objective_trace_bits"][0] == pytest.approx(
        mutual_information(problem, X0), abs=1e-12)
    mi_opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    assert_within_requested_tol(res, mi, mi_opt, 1e-5)
    assert res.stats["gap_bits"] >= mi - mi_opt - OPT_TOL
    # same as a sparse input
    import scipy.sparse as sp

    res_sp = pb.get_mechanism("sppm", tol=1e-5, iterations=400, x0=sp.csc_array(X0)).solve(
        problem, delta)
    assert res_sp.stats["objective_bits"] == pytest.approx(res.stats["objective_bits"], abs=1e-9)


def test_x0_is_validated() -> None:
    problem = pb.load_dataset("random", n=10, n_private=2, seed=1, distortion="sq_l2")
    delta = 0.3 * perfect_privacy_budget(problem)
    n = problem.n
    far = np.zeros((n, n))
    far[int(np.argmax(problem.distortion.to_dense()[:, 0])), :] = 1.0
    bad = {
        "shape": np.eye(n + 1),
        "sum": 0.5 * np.eye(n),
        "negative": np.eye(n) * 2 - np.roll(np.eye(n), 1, axis=0),
        "nan": np.full((n, n), np.nan),
        "budget": far,
    }
    for _name, X0 in bad.items():
        with pytest.raises(pb.ValidationError, match="x0"):
            pb.get_mechanism("sppm", x0=X0).solve(problem, delta)


@pytest.mark.parametrize(("kind", "seed", "frac"), [("sq_l2", 7, 0.05), ("hamming", 6, 0.2)])
def test_optimal_mode_certifies_a_tiny_gap(kind: str, seed: int, frac: float) -> None:
    """mode=optimal: restricted conic solves + exact pricing reach gaps FW cannot."""
    problem = pb.load_dataset("random", n=24, n_private=2, seed=seed, distortion=kind)
    delta = frac * perfect_privacy_budget(problem)
    res = pb.get_mechanism("sppm", mode="optimal", tol=1e-6, iterations=2000).solve(
        problem, delta)
    mi = check_mapping(problem, res, delta)
    assert res.stats["converged"] and res.stats["gap_bits"] < 1e-6
    assert res.stats["polish"] and res.stats["polish"][0]["pairs"] > 0
    mi_opt = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    assert mi <= mi_opt + OPT_TOL  # as good as the dense conic solve, to its accuracy
    assert res.stats["lower_bits"] <= mi_opt + OPT_TOL


def test_synthetic_line_optimal_mode_and_frank_wolfe_agree() -> None:
    problem = pb.load_dataset("synthetic", m=8)
    fw = pb.get_mechanism("sppm", tol=1e-3, iterations=3000).solve(problem, 1.0)
    opt = pb.get_mechanism("sppm", mode="optimal", tol=1e-6, iterations=3000).solve(problem, 1.0)
    mi_fw, mi_opt = check_mapping(problem, fw, 1.0), check_mapping(problem, opt, 1.0)
    assert opt.stats["gap_bits"] < 1e-6 and fw.stats["gap_bits"] < 1e-3
    assert mi_opt <= mi_fw and mi_fw - mi_opt <= fw.stats["gap_bits"]
    assert opt.stats["lower_bits"] <= mi_fw


def test_pruning_keeps_the_certified_result() -> None:
    """Dropping long-unused pairs shrinks the master without changing the answer."""
    problem = pb.load_dataset("synthetic", m=8)
    kept = pb.get_mechanism("sppm", tol=1e-4, iterations=3000, prune_after=0).solve(problem, 1.0)
    pruned = pb.get_mechanism("sppm", tol=1e-4, iterations=3000, prune_after=5).solve(problem, 1.0)
    assert pruned.stats["columns_pruned"] > 0 and kept.stats["columns_pruned"] == 0
    assert pruned.stats["columns"] < kept.stats["columns"]
    for res in (kept, pruned):
        check_mapping(problem, res, 1.0)
        assert res.stats["gap_bits"] < 1e-4
    assert abs(kept.stats["objective_bits"] - pruned.stats["objective_bits"]) <= 2e-4


@pytest.mark.parametrize("lp_backend", ["mckp", "highs"])
def test_capped_rounds_give_a_certified_answer(lp_backend: str) -> None:
    problem = pb.load_dataset("random", n=30, n_private=2, seed=8, distortion="sq_l2")
    delta = 0.2 * perfect_privacy_budget(problem)
    full = pb.get_mechanism("sppm", tol=1e-5, iterations=2000, lp_backend=lp_backend, rounds=0)
    res = full.solve(problem, delta)
    from privbench.plugins.mechanisms._sppm.solve import solve_sppm
    capped = solve_sppm(problem, delta, pb.get_lp_backend(lp_backend), iterations=2000, tol=1e-5,
                        rounds=1, mode="frank-wolfe", prune_after=0, restricted_steps=0)
    assert capped.stats["gap_bits"] < 1e-5
    assert abs(capped.stats["objective_bits"] - res.stats["objective_bits"]) <= 2e-5


def test_plugin_lists_the_solver_s_modes_and_variants() -> None:
    """sppm.py names them without importing the compiled solver; they must agree."""
    from privbench.plugins.mechanisms import sppm
    from privbench.plugins.mechanisms._sppm.modes import MODES
    from privbench.plugins.mechanisms._sppm.settings import VARIANTS

    assert sppm.MODES == ("auto", *MODES) and sppm.VARIANTS == VARIANTS
    assert set(sppm.AUTO_MODES) <= set(MODES)


def test_the_solve_runs_with_one_blas_thread_and_restores_it() -> None:
    """Frank-Wolfe's vector work runs on one BLAS thread (a multi-threaded OpenBLAS
    waiting for cores costs milliseconds per dot product on a loaded machine); the
    process's setting is back afterwards."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from privbench.plugins.mechanisms._sppm.solve import solve_sppm

    def blas_threads() -> list[int]:
        return [p["num_threads"] for p in threadpoolctl.threadpool_info()
                if p["user_api"] == "blas"]

    before = blas_threads()
    if not before:
        pytest.skip("no BLAS library that threadpoolctl can control")
    seen: list[list[int]] = []
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        outside = blas_threads()
        solve_sppm(pb.load_dataset("synthetic", m=6), 0.25, pb.get_lp_backend("mckp"),
                   iterations=5, tol=0.0, mode="frank-wolfe", on_iteration=lambda _: seen.append(blas_threads()))
        assert blas_threads() == outside
    assert seen and all(threads == [1] * len(before) for threads in seen)
    assert blas_threads() == before


def test_one_stats_dict_whatever_the_outcome() -> None:
    """The solver writes its stats once (``solve._stats``), the certificate under its own
    names; a constant outcome has the same keys as a solved one, and the plugin returns
    the solver's dict as is (plus the backend and the mode asked for)."""
    from privbench.plugins.mechanisms._sppm.solve import solve_sppm
    from privbench.protocol.certificate import CERTIFICATE_STATS

    problem = pb.load_dataset("synthetic", m=4)
    backend = pb.get_lp_backend("mckp")
    solved = solve_sppm(problem, 1.0, backend, iterations=5, mode="frank-wolfe")
    constant = solve_sppm(problem, 1e9, backend)
    assert constant.stats["stop_reason"] == "perfect privacy" and constant.stats["converged"]
    assert set(solved.stats) == set(constant.stats)
    assert set(CERTIFICATE_STATS) <= set(solved.stats) and "lower_bound_bits" not in solved.stats
    for out in (solved, constant):
        cert = pb.Certificate.from_stats(out.stats)
        assert cert is not None and cert.to_stats() == {k: out.stats[k] for k in CERTIFICATE_STATS}
    res = pb.get_mechanism("sppm", iterations=5, mode="frank-wolfe").solve(problem, 1.0)
    assert set(res.stats) == set(solved.stats) | {"lp_backend", "mode_requested"}
    same = ("objective_bits", "lower_bits", "gap_bits", "iterations", "columns", "stop_reason")
    assert {k: res.stats[k] for k in same} == {k: solved.stats[k] for k in same}
