"""The exact minimiser of I(A; B̂) over mappings supported on the active pairs V.

Frank-Wolfe's gap shrinks like 1/L, so 1e-6 bits is out of its reach; but once V holds
the optimal support, problem (1) restricted to V is small (|V| variables instead of
n²) and an exponential-cone solver finishes it to ~1e-9. SPPM's ``optimal`` mode
alternates this solve with exact pricing: if no pair outside V prices out at the
polished point, its Frank-Wolfe gap (certified as always) is tiny; if some do, they
join V and the restricted problem is solved again.

The program is the one of the ``optimal`` mechanism, on a sparsity pattern:
``Q[a] = M_a x`` with ``M_a[i, k] = p(a, b_{j_k})`` for ``i_k = i``, and
``I = Σ_a Σ_i rel_entr(Q[a, i], p(a) q_i)``, scaled so the cone entries are O(1).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from privbench import PrivacyProblem

#: tolerances well below the default 1e-8 (the point is a certificate near 1e-6 bits);
#: the solver may then call its point inaccurate, which the certificate judges instead
TIGHT = {"CLARABEL": {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11,
                      "max_iter": 400}}


def polish(problem: PrivacyProblem, rows: np.ndarray, cols: np.ndarray, a: np.ndarray,
           delta: float, solver: str = "CLARABEL", tight: bool = True
           ) -> tuple[np.ndarray | None, dict]:
    """Solve problem (1) over the pairs (rows, cols); returns (x or None, solve record).

    The returned x is the solver's point (feasible to its tolerance); callers repair it
    with :mod:`.feasible` before use.
    """
    import cvxpy as cp

    n, k = problem.n, rows.size
    outputs, out_idx = np.unique(rows, return_inverse=True)
    live = np.flatnonzero(problem.p_a > 0)
    P = problem.joint
    scale = float(np.count_nonzero(P))
    x = cp.Variable(k, nonneg=True)
    pairs = np.arange(k)
    Q = [sp.csr_array((scale * P[r, cols], (out_idx, pairs)), shape=(outputs.size, k)) @ x
         for r in live]
    q = Q[0]
    for term in Q[1:]:
        q = q + term
    objective = cp.Minimize(sum(cp.sum(cp.rel_entr(Q[t], problem.p_a[r] * q))
                                for t, r in enumerate(live)))
    simplex = sp.csr_array((np.ones(k), (cols, pairs)), shape=(n, k))
    prob = cp.Problem(objective, [simplex @ x == 1, a @ x <= delta])
    t = time.perf_counter()
    record: dict = {"pairs": int(k), "solver": solver, "tight": tight}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "solution may be inaccurate": kept as status
            prob.solve(solver=solver, **(TIGHT.get(solver, {}) if tight else {}))
    except (cp.error.SolverError, ValueError, TypeError) as exc:
        record.update(status="solver_error", error=str(exc).split("\n")[0],
                      time_s=time.perf_counter() - t)
        return None, record
    record.update(status=str(prob.status), time_s=time.perf_counter() - t)
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or x.value is None:
        return None, record
    return np.maximum(np.asarray(x.value, dtype=float), 0.0), record
