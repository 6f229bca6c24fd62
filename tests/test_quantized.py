"""Quantized mapping (Salamatian et al., Algorithm 1): quantisers and Theorem 1."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import privbench as pb
from privbench import metrics as M
from privbench.plugins.mechanisms._quantize import aggregate, assign, k_center, k_medoids


def hamming_problem(bits: int = 5, k: int = 2, seed: int = 0) -> pb.PrivacyProblem:
    rng = np.random.default_rng(seed)
    points = np.array(list(itertools.product([0, 1], repeat=bits)), dtype=float)
    joint = rng.dirichlet(np.full(k * len(points), 0.5)).reshape(k, len(points))
    return pb.PrivacyProblem.from_arrays(joint, pb.FeatureDistortion(points, "hamming"))


def available(name: str) -> bool:
    try:
        pb.get_host().get("mechanism", name)
    except pb.PrivbenchError:
        return False
    return True


INNERS = [name for name in ("expmec", "identity", "randomized_response", "sppm", "optimal")
          if available(name)]


def brute_force_radius(D: np.ndarray, k: int) -> float:
    """min over center sets of max_b min_c d(c, b) (tiny alphabets only)."""
    n = D.shape[0]
    return min(D[list(c)].min(axis=0).max() for c in itertools.combinations(range(n), k))


def test_k_center_is_a_two_approximation():
    for seed in range(5):
        problem = pb.load_dataset("random", n=10, distortion="sq_l2", seed=seed)
        # sq_l2 on scalars is not a metric; use l1 on the same points for the guarantee
        pts = problem.distortion.points
        dist = pb.FeatureDistortion(pts, "l1")
        D = dist.to_dense()
        for k in (1, 2, 3):
            q = k_center(dist, k, problem.p_b)
            assert q.centers.size == k
            assert q.radius <= 2 * brute_force_radius(D, k) + 1e-12
            np.testing.assert_allclose(q.dist_to_center, D[q.centers].min(axis=0))


def test_k_medoids_does_not_increase_quantization_distortion():
    problem = hamming_problem(bits=6, seed=1)
    start = k_center(problem.distortion, 5, problem.p_b)
    q = k_medoids(problem.distortion, 5, problem.p_b, init=start)
    assert q.mean_distortion(problem.p_b) <= start.mean_distortion(problem.p_b) + 1e-15
    # every symbol is assigned to its nearest center, centers to themselves
    D = problem.distortion.block(q.centers, np.arange(problem.n))
    np.testing.assert_allclose(q.dist_to_center, D.min(axis=0))
    np.testing.assert_array_equal(q.labels[q.centers], np.arange(q.centers.size))


def test_kmeans_pp_starts_are_seeded_and_the_best_start_is_kept():
    problem = hamming_problem(bits=6, seed=7)
    mech = pb.get_mechanism("quantized", n_clusters=6, n_init=3)
    a, b = mech.quantize(problem, seed=1), mech.quantize(problem, seed=1)
    np.testing.assert_array_equal(a.centers, b.centers)
    # n_init = 8 from seed 0 includes the n_init = 1 start from seed 0 (same stream),
    # and "best" includes both that and the k-center start
    def mean(**kw):
        q = pb.get_mechanism("quantized", n_clusters=6, **kw).quantize(problem, seed=0)
        return q.mean_distortion(problem.p_b)

    single = mean(init="kmeans++", n_init=1)
    assert mean(init="kmeans++", n_init=8) <= single + 1e-15
    assert mean(init="best", n_init=8) <= min(mean(init="kmeans++", n_init=8),
                                              mean(init="kcenter")) + 1e-15
    assert a.centers.size == 6 and len(set(a.centers.tolist())) == 6
    kc = pb.get_mechanism("quantized", n_clusters=6, method="kcenter").quantize(problem)
    np.testing.assert_array_equal(kc.centers, k_center(problem.distortion, 6, problem.p_b).centers)


def test_aggregation_is_eq3():
    problem = hamming_problem(bits=4, k=3, seed=2)
    q = assign(problem.distortion, np.array([0, 7, 15]))
    agg = aggregate(problem.joint, q)
    for c in range(3):
        np.testing.assert_allclose(agg[:, c], problem.joint[:, q.labels == c].sum(axis=1))
    assert agg.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("inner", INNERS)
@pytest.mark.parametrize("method", ["kmedoids", "kcenter"])
def test_theorem1(inner, method):
    """Leakage of the composed mapping = the inner objective; E[d] <= Δ + r."""
    problem = hamming_problem(bits=5, k=2, seed=3)
    for k in (1, 4, 8):
        for delta in (0.0, 0.3, 1.0):
            mech = pb.get_mechanism("quantized", n_clusters=k, method=method, inner=inner)
            res = mech.solve(problem, delta, seed=0)
            X = pb.validate_mapping(res.mapping, problem.n)
            s = res.stats
            assert M.mutual_information(problem, X) == pytest.approx(s["inner_mi_bits"], abs=1e-10)
            dist = M.expected_distortion(problem, X)
            assert dist <= s["inner_distortion"] + s["quantization_distortion"] + 1e-10
            assert dist <= delta + s["radius"] + 1e-10
            assert s["distortion_bound"] == pytest.approx(delta + s["radius"])
            # releases only representatives
            rows = np.unique(X.tocoo().row)
            q = mech.quantize(problem, 0)
            assert set(rows.tolist()) <= set(q.centers.tolist())
            _recompute_theorem1(problem, X, q, s)


def _recompute_theorem1(problem, X, q, s) -> None:
    """The reported radius, quantisation distortion and inner leakage, recomputed from the
    problem's own distortion and the released mapping (not the mechanism's numbers)."""
    D = problem.distortion.to_dense()
    cols = np.arange(problem.n)
    own_center = q.centers[q.labels]  # ψ(b_j)
    live = problem.p_b > 0
    assert s["radius"] == pytest.approx(D[own_center, cols][live].max(), abs=1e-12)
    assert s["quantization_distortion"] == pytest.approx(
        float(problem.p_b @ D[own_center, cols]), abs=1e-12)
    # the inner problem: clusters as public values, representatives as outputs
    joint = np.stack([np.bincount(q.labels, weights=row, minlength=q.centers.size)
                      for row in problem.joint])
    Xd = X.toarray()
    first = np.array([np.flatnonzero(q.labels == c)[0] for c in range(q.centers.size)])
    Q = Xd[np.ix_(q.centers, first)]  # column c: the release of cluster c
    inner = pb.PrivacyProblem.from_arrays(joint=joint, distortion=D[np.ix_(q.centers, q.centers)])
    assert s["inner_mi_bits"] == pytest.approx(M.mutual_information(inner, Q), abs=1e-10)
    assert s["inner_distortion"] == pytest.approx(M.expected_distortion(inner, Q), abs=1e-10)


def test_inner_objective_is_an_exact_solve_for_one_cluster():
    """K = 1: everything maps to one symbol, so I(A; Ĉ) = 0 exactly."""
    problem = hamming_problem(bits=4, seed=4)
    res = pb.get_mechanism("quantized", n_clusters=1, inner="expmec").solve(problem, 0.0)
    assert M.mutual_information(problem, res.mapping) == pytest.approx(0.0, abs=1e-12)
    assert res.stats["quantized_prior_mi_bits"] == pytest.approx(0.0, abs=1e-12)


def test_full_resolution_is_the_inner_mechanism():
    """K = n: ψ is the identity and the composed mapping is the inner mapping itself."""
    problem = hamming_problem(bits=3, seed=5)
    res = pb.get_mechanism("quantized", n_clusters=problem.n, inner="expmec").solve(problem, 0.5)
    direct = pb.get_mechanism("expmec").solve(problem, 0.5)
    assert res.stats["radius"] == 0
    np.testing.assert_allclose(res.mapping.toarray(), direct.mapping.toarray(), atol=1e-12)


def test_inner_params_and_errors():
    problem = hamming_problem(bits=3)
    res = pb.get_mechanism("quantized", n_clusters=3, inner="expmec",
                           inner_params="beta=0.5").solve(problem, 0.1)
    assert res.stats["inner_stats"]["beta"] == 0.5
    with pytest.raises(pb.ValidationError, match="n_clusters"):
        pb.get_mechanism("quantized", n_clusters=0).solve(problem, 0.1)
    with pytest.raises(pb.ValidationError, match="method"):
        pb.get_mechanism("quantized", method="kmeans").solve(problem, 0.1)
    with pytest.raises(pb.ValidationError, match="init"):
        pb.get_mechanism("quantized", init="random").solve(problem, 0.1)
    with pytest.raises(pb.ValidationError, match="n_init"):
        pb.get_mechanism("quantized", n_init=0).solve(problem, 0.1)
    with pytest.raises(pb.ValidationError, match="inner_params"):
        pb.get_mechanism("quantized", inner_params="beta").solve(problem, 0.1)
    with pytest.raises(pb.PrivbenchError, match="nope"):
        pb.get_mechanism("quantized", inner="nope").solve(problem, 0.1)


def test_runner_does_not_flag_distortion_above_delta(host):
    from privbench.running.runner import RunSpec, execute_run

    rec = execute_run(RunSpec("quantized", "random", 0.0,
                              {"n_clusters": 3, "inner": "expmec"},
                              {"n": 30, "distortion": "hamming", "seed": 1}))
    assert rec["status"] == "ok", rec["error"]
    assert rec["distortion"] > 0  # quantisation alone distorts, and that is allowed
    assert rec["metrics"]["radius"] >= 1


@pytest.mark.realdata
def test_census_with_sppm_or_expmec(real_data_dir):
    inner = "sppm" if available("sppm") else "expmec"
    problem = pb.load_dataset("census", top_k=300, data_dir=str(real_data_dir))
    res = pb.get_mechanism("quantized", n_clusters=25, inner=inner).solve(problem, 0.5)
    X = pb.validate_mapping(res.mapping, problem.n)
    mi = M.mutual_information(problem, X)
    assert mi == pytest.approx(res.stats["inner_mi_bits"], abs=1e-8)
    assert M.expected_distortion(problem, X) <= 0.5 + res.stats["radius"] + 1e-9
    assert mi < problem.prior_mi_bits


@pytest.mark.skipif("optimal" not in INNERS, reason="the optimal mechanism is not available")
def test_optimal_inner_reaches_perfect_privacy_where_a_constant_mapping_fits():
    """An independent check of the inner solve: releasing one representative c for every
    input has distortion Σ_c' q(c') d(c, c') and leaks nothing, so at that budget the
    optimum - and by Theorem 1 the composed mapping - leaks 0 bits."""
    problem = hamming_problem(bits=4, k=2, seed=6)
    mech = pb.get_mechanism("quantized", n_clusters=4, inner="optimal")
    q = mech.quantize(problem)
    D = problem.distortion.block(q.centers, q.centers)
    mass = aggregate(problem.joint, q).sum(axis=0)
    delta = float((D @ mass).min())
    res = mech.solve(problem, delta)
    assert M.mutual_information(problem, res.mapping) == pytest.approx(0.0, abs=1e-6)
    assert M.mutual_information(problem, res.mapping) == pytest.approx(
        res.stats["inner_mi_bits"], abs=1e-10)
    # and below that budget some leakage remains but never more than the quantized prior
    tight = mech.solve(problem, 0.0)
    assert tight.stats["inner_mi_bits"] == pytest.approx(res.stats["quantized_prior_mi_bits"])
