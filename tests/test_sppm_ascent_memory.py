"""The dual mode's ascents keep ``LBFGS_MEMORY`` curvature pairs at the coarse temperatures
(issue 38, round eight): the same optimum of the smoothed dual as with 10 pairs and as
scipy's L-BFGS-B, and certified intervals that hold cvxpy's optimum on a small census."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize as so

import privbench as pb
import privbench.plugins.mechanisms._sppm.dual_mode as dm
from privbench.plugins.mechanisms._sppm import lbfgs

from .test_sppm_curve import d_const
from .test_sppm_profile_clusters import census_like, check_interval


def _restricted(problem: pb.PrivacyProblem, delta: float) -> tuple[dm.RestrictedDual, np.ndarray]:
    """Every pair within Hamming distance 1, and the prior's decoders with ν = 1."""
    D = problem.distortion.to_dense()
    rows, cols = np.nonzero(D <= 1)
    dual = dm.RestrictedDual(problem, delta, rows, cols)
    S = dual.S
    theta = np.full((1, problem.n), math.log(problem.p_a[0] / problem.p_a[1]))
    theta += 0.3 * np.log(np.clip(S[0], 1e-6, 1) / np.clip(S[1], 1e-6, 1))  # mixed, not pure
    return dual, np.concatenate([theta.ravel(), [0.0]])


def _spied_ascent(monkeypatch) -> tuple[dm.RestrictedDual, np.ndarray,
                                         tuple[np.ndarray, np.ndarray], list[int]]:
    """The restricted dual of a small census at 0.05 d_const, its start, the box, and the
    list that records the size of every L-BFGS memory made from now on."""
    problem = census_like(seed=1)
    dual, par = _restricted(problem, 0.05 * d_const(problem))
    n = par.size - 1
    box = (np.r_[np.full(n, -dm.LOGIT_BOUND), dm.LOG_NU_BOUNDS[0]],
           np.r_[np.full(n, dm.LOGIT_BOUND), dm.LOG_NU_BOUNDS[1]])
    sizes: list[int] = []
    memory = lbfgs.Memory
    monkeypatch.setattr(lbfgs, "Memory", lambda n, m=lbfgs.MEMORY: sizes.append(m) or memory(n, m))
    return dual, par, box, sizes


@pytest.mark.parametrize("tau", [1e-2, 3e-3])
def test_fifty_pairs_reach_the_same_smoothed_optimum(monkeypatch, tau: float) -> None:
    """At a coarse temperature the ascent with 50 pairs ends where the one with 10 does, and
    where scipy's L-BFGS-B (run to a tighter tolerance) does, within 1e-5 nats; it uses
    fewer evaluations than 10 pairs (fails when the coarse ascents keep 10)."""
    dual, par, box, sizes = _spied_ascent(monkeypatch)
    n = par.size - 1
    out = {}
    for pairs in (10, 50):
        monkeypatch.setattr(dm, "LBFGS_MEMORY", pairs)
        end, evaluations = dm._ascend(dual, par.copy(), tau, box, (1, n))
        out[pairs] = (dual.objective(end, tau)[0], evaluations)
    assert sizes == [10, 50]
    ref = so.minimize(lambda p: dual.objective(p, tau), par, jac=True, method="L-BFGS-B",
                      bounds=list(zip(*box, strict=True)),
                      options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-10})
    for value, _ in out.values():
        assert value == pytest.approx(ref.fun, abs=1e-5)  # both stop at |grad| <= 1e-5
    assert out[50][1] < out[10][1], out


def test_only_the_coarse_temperatures_keep_fifty_pairs(monkeypatch) -> None:
    """W = V temperatures (τ > FOCUS_MAX_TAU) get ``LBFGS_MEMORY`` pairs, finer ones 10."""
    dual, par, box, sizes = _spied_ascent(monkeypatch)
    n = par.size - 1
    for tau in (1e-2, 3e-3, 1e-3, 1e-4):
        par, _ = dm._ascend(dual, par, tau, box, (1, n))
    assert sizes == [dm.LBFGS_MEMORY, dm.LBFGS_MEMORY, lbfgs.MEMORY, lbfgs.MEMORY]
    assert dm.LBFGS_MEMORY > lbfgs.MEMORY


@pytest.mark.parametrize("relative", [0.01, 0.03, 0.1])
def test_the_dual_mode_certifies_and_holds_the_optimum(relative: float) -> None:
    """The dual mode (warm-up 5, so the rounds do the work) on a small census at the
    budgets where ``auto`` is the plain dual mode on census: certified to 1e-3 bits, within
    the budget, and [I - gap, I] holds cvxpy's optimum."""
    pytest.importorskip("cvxpy")
    problem = census_like(seed=2)
    delta = relative * d_const(problem)
    res = pb.get_mechanism("sppm", mode="dual", coarse_start=False, warmup=5).solve(problem, delta)
    assert res.stats["polish"]  # the rounds ran
    check_interval(problem, delta, res)
