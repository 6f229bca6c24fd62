"""One certificate record: every certified solver returns the same stat names, and they hold.

Each of ``sppm``, ``smoothed_dual``, ``mirror_descent`` and ``optimal`` must return
:class:`privbench.Certificate`'s stats, whose numbers agree with the mapping (the objective
is its leakage), with each other (gap = objective - lower), with the trace, and with an
independent optimum (cvxpy's, through ``optimal`` on a different path: the certified lower
bound never exceeds it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbench as pb
from privbench.measures.information import mutual_information
from privbench.protocol.certificate import CERTIFICATE_STATS, POSTERIOR_FLOOR, floored_posterior

SOLVERS = {"sppm": {}, "smoothed_dual": {}, "mirror_descent": {}, "optimal": {}}
#: how far above the true optimum cvxpy's repaired point may be (bits)
REF_TOL = 1e-6


@pytest.fixture(scope="module")
def case() -> tuple[pb.PrivacyProblem, float, float]:
    problem = pb.load_dataset("random", n=12, n_private=3, seed=4, distortion="hamming")
    delta = 0.3 * float((problem.distortion.to_dense() @ problem.p_b).min())
    ref = mutual_information(problem, pb.get_mechanism("optimal").solve(problem, delta).mapping)
    return problem, delta, ref


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_certified_solver_returns_the_same_certificate(name: str, case) -> None:
    problem, delta, ref = case
    res = pb.get_mechanism(name, **SOLVERS[name]).solve(problem, delta)
    assert set(CERTIFICATE_STATS) <= set(res.stats)
    for old in ("lower_bound_bits", "upper_bits", "stop"):
        assert old not in res.stats, f"{name} still reports {old!r}"
    cert = pb.Certificate.from_stats(res.stats)
    assert cert is not None and cert.to_stats() == {k: res.stats[k] for k in CERTIFICATE_STATS}
    mi = mutual_information(problem, res.mapping)
    assert cert.objective_bits == pytest.approx(mi, abs=1e-9)
    assert cert.gap_bits == pytest.approx(cert.objective_bits - cert.lower_bits, abs=1e-15)
    assert 0.0 <= cert.lower_bits <= ref + REF_TOL  # a proven bound: never above the optimum
    assert isinstance(cert.stop_reason, str) and cert.stop_reason
    assert isinstance(cert.converged, bool)
    t, upper, lower = np.array(cert.trace).T
    assert np.all(np.diff(t) >= 0) and np.all(lower <= upper + 1e-12)
    assert lower[-1] <= cert.lower_bits + 1e-12
    assert res.gap_bits == cert.gap_bits  # MechanismResult.gap_bits reads the same stat


def test_perfect_privacy_certificates_agree(case) -> None:
    """A budget a constant output meets: every solver certifies I* = 0 exactly."""
    problem, _, _ = case
    top = float((problem.distortion.to_dense() @ problem.p_b).min())
    for name in SOLVERS:
        cert = pb.Certificate.from_stats(pb.get_mechanism(name).solve(problem, top).stats)
        assert (cert.objective_bits, cert.lower_bits, cert.gap_bits) == (0.0, 0.0, 0.0), name
        assert cert.converged is True


def test_the_record_derives_the_gap_and_refuses_nonsense() -> None:
    cert = pb.Certificate.of(0.5, 0.2, "tolerance", trace=[[0.1, 0.5, 0.2]], converged=False)
    assert cert.gap_bits == pytest.approx(0.3)
    assert cert.to_stats()["trace"] == [[0.1, 0.5, 0.2]]
    assert pb.Certificate.of(0.5, -3.0, "x").lower_bits == 0.0  # I* >= 0
    assert pb.Certificate.of(0.5, 0.6, "x").gap_bits == 0.0  # rounding above U: clipped
    with pytest.raises(ValueError, match="gap_bits"):
        pb.Certificate(0.5, 0.6, -0.1, "x")
    with pytest.raises(ValueError, match="lower_bits"):
        pb.Certificate(0.5, math.nan, 0.0, "x")
    assert pb.Certificate.from_stats({"objective_bits": 0.5}) is None
    assert pb.Certificate.from_stats({"objective_bits": 0.5, "lower_bits": None}) is None
    assert pb.Certificate.from_stats(None) is None


def test_one_posterior_floor_for_every_decoder() -> None:
    """The floored posterior is a decoder (columns sum to 1) and every log stays finite."""
    p_a = np.array([0.25, 0.75])
    post = np.array([[1.0, 0.0, 0.3], [0.0, 1.0, 0.7]])
    r = floored_posterior(post, p_a)
    assert np.allclose(r.sum(axis=0), 1.0, atol=1e-15)
    assert np.all(np.log(r) >= math.log(POSTERIOR_FLOOR * p_a.min()) - 1e-9)
    from privbench.plugins.mechanisms._sppm import leakage

    assert leakage.POSTERIOR_FLOOR is POSTERIOR_FLOOR
