"""Perfect privacy when no constant mapping affords it: the least E[d] with I(A; B̂) = 0.

(The cheaper test, a constant mapping within Δ, is
:func:`privbench.protocol.feasibility.constant_output`, shared with ``optimal``.)

I(A; B̂) = 0 iff every output's posterior is the prior: p(a, b̂_i) = p(a) p(b̂_i), i.e.
Σ_j (p(a, b_j) - p(a) p(b_j)) X[i, j] = 0 for all a, i. Minimising E[d] under these
linear constraints is an LP over n² variables; when its value is <= Δ the optimum of
problem (1) is exactly 0 and Frank-Wolfe, which only approaches 0, is not needed.
Dense in n², so only for small alphabets (``MAX_N``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from privbench import PrivacyProblem

#: largest alphabet for which the n²-variable LP is attempted
MAX_N = 200


def perfect_privacy_mapping(problem: PrivacyProblem, delta: float) -> np.ndarray | None:
    """A mapping with I = 0 and E[d] <= Δ when one exists (n <= MAX_N), else None."""
    from scipy.optimize import linprog

    n = problem.n
    if n > MAX_N:
        return None
    D = problem.distortion.to_dense()
    cost = (D * problem.p_b[None, :]).ravel()  # variable k = i * n + j
    live = np.flatnonzero(problem.p_a > 0)
    W = problem.joint[live] - problem.p_a[live, None] * problem.p_b[None, :]  # (|A'|, n)
    k = np.arange(n * n)
    i_of, j_of = k // n, k % n
    simplex = sp.csr_array((np.ones(n * n), (j_of, k)), shape=(n, n * n))
    rows = (np.arange(live.size)[:, None] * n + i_of[None, :]).ravel()
    vals = W[:, j_of].ravel()
    indep = sp.csr_array((vals, (rows, np.tile(k, live.size))), shape=(live.size * n, n * n))
    A_eq = sp.vstack([simplex, indep]).tocsr()
    b_eq = np.concatenate([np.ones(n), np.zeros(live.size * n)])
    res = linprog(cost, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0 or res.fun > delta:
        return None
    X = np.maximum(res.x.reshape(n, n), 0.0)
    return X / X.sum(axis=0, keepdims=True)
