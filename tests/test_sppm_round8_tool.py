"""tools/measure_sppm_round8.py's curvature (issue 38, round eight: the spread of the dual's
Hessian diagonal over outputs, and the preconditioner of its variant D, measured and not in
the solver) against finite differences of the dual's own gradient."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbench as pb
from privbench.plugins.mechanisms._sppm.dual_mode import RestrictedDual


@pytest.fixture(scope="module")
def tool(load_tool):
    return load_tool("measure_sppm_round8")


@pytest.mark.parametrize(("k", "tau"), [(2, 1e-1), (2, 1e-2), (3, 1e-1), (3, 3e-2)])
def test_curvature_is_the_hessian_diagonal_in_the_logits(tool, k: int, tau: float) -> None:
    """h_θ equals the central difference of the objective's gradient, entry by entry
    (fails with the soft-min's variance term or the log-softmax's dropped)."""
    problem = pb.load_dataset("random", n=9, n_private=k, seed=2, distortion="hamming")
    rng = np.random.default_rng(0)
    rows, cols = np.nonzero(rng.random((9, 9)) < 0.5)
    keep = np.unique(np.concatenate([rows * 9 + cols, np.arange(9) * 10]))
    dual = RestrictedDual(problem, 0.4, keep // 9, keep % 9)
    par = np.concatenate([rng.normal(size=(k - 1) * 9), [math.log(0.3)]])
    h = tool.curvature(dual, par, tau)
    eps = 1e-5
    fd = np.empty(par.size - 1)
    for t in range(fd.size):
        e = np.zeros(par.size)
        e[t] = eps
        fd[t] = (dual.objective(par + e, tau)[1][t] - dual.objective(par - e, tau)[1][t]) / (2 * eps)
    assert np.all(h >= 0)
    np.testing.assert_allclose(h[:-1], fd, atol=1e-6 * np.abs(fd).max(), rtol=1e-4)
