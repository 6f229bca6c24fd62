"""I(A; B̂) of a sparse mapping and the linear costs SPPM minimises.

A mapping is stored as its active pairs: output ``rows[k]`` = i, input ``cols[k]`` = j,
value ``x[k]`` = X[i, j]. Everything here is O(|A| (n + |V|)); no n x n array.

Costs come from a *decoder* r(a | b̂_i). For every decoder and every feasible X,
Gibbs' inequality gives ``f(X) >= Σ_ij X[i,j] c^r[i,j]`` with
``c^r[i,j] = Σ_a p(a, b_j) log(r(a | b̂_i) / p(a))``, and equality when r is the
posterior of X, in which case c^r is the gradient of I(A; B̂) at X. So the LP
minimum of ⟨c^r, ·⟩ over the feasible set is a lower bound on the optimum for *any*
r: the certified Frank-Wolfe gap.

Two limits, documented because they are choices:

* where p(a, b̂_i) = 0 < p(b̂_i) the gradient is -inf. We use the decoder
  r = (1 - η) posterior + η p(a) (``POSTERIOR_FLOOR`` = η), so the cost is floored
  at about log(η) instead, stays a valid lower-bound decoder, and differs from the
  gradient by O(η) elsewhere;
* at an output with no mass (p(b̂_i) = 0) the Frank-Wolfe direction uses the limit
  of the gradient, κ_j = Σ_a p(a, b_j) log(p(a | b_j) / p(a)) (independent of i);
  that is not a decoder, so certificates price those outputs with r = p(a), cost 0.
"""

from __future__ import annotations

import numba
import numpy as np

from privbench.measures.information import leakage_nats
from privbench.protocol.certificate import POSTERIOR_FLOOR

__all__ = ["POSTERIOR_FLOOR", "leakage_nats", "output_joint"]


def output_joint(P: np.ndarray, rows: np.ndarray, cols: np.ndarray, x: np.ndarray,
                 n: int) -> np.ndarray:
    """Q[a, i] = p(a, b̂_i) = Σ_k P[a, cols[k]] x[k] over pairs with rows[k] = i.

    One compiled pass over the pairs with x[k] != 0 (an LP vertex holds ~n of |V|), summed
    in pair order like ``np.bincount``; it runs once or twice per Frank-Wolfe iteration.
    """
    return _output_joint(np.ascontiguousarray(P, dtype=np.float64),
                         np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                         np.asarray(x, dtype=np.float64), int(n))


@numba.njit(cache=True, nogil=True)
def _output_joint(P, rows, cols, x, n):  # pragma: no cover - compiled
    n_a = P.shape[0]
    Qt = np.zeros((n, n_a))  # output-major while summing: one cache line per pair
    for k in range(rows.size):
        xk = x[k]
        if xk != 0.0:
            i, j = rows[k], cols[k]
            for a in range(n_a):
                Qt[i, a] += P[a, j] * xk
    Q = np.empty((n_a, n))
    for i in range(n):
        for a in range(n_a):
            v = Qt[i, a]
            Q[a, i] = v if v > 0.0 else 0.0
    return Q


def decoder_logratios(Q: np.ndarray, p_a: np.ndarray, eta: float = POSTERIOR_FLOOR
                      ) -> tuple[np.ndarray, np.ndarray]:
    """L[a, i] = log(r(a | b̂_i) / p(a)) for the floored posterior r, and the empty outputs.

    Rows of private values with p(a) = 0 are 0 (they never carry mass). Columns of
    empty outputs are 0 (decoder r = p(a)); see the module docstring. Compiled: it runs
    once per Frank-Wolfe iteration over all |A| n entries.
    """
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    p_a = np.ascontiguousarray(p_a, dtype=np.float64)
    return _decoder_logratios(Q, p_a, float(eta))


@numba.njit(cache=True, nogil=True)
def _decoder_logratios(Q, p_a, eta):  # pragma: no cover - compiled
    n_a, n = Q.shape
    L = np.zeros((n_a, n))
    empty = np.zeros(n, dtype=np.bool_)
    log_pa = np.zeros(n_a)
    for a in range(n_a):
        if p_a[a] > 0.0:
            log_pa[a] = np.log(p_a[a])
    for i in range(n):
        q = 0.0
        for a in range(n_a):
            q += Q[a, i]
        if q <= 0.0:
            empty[i] = True
            continue
        for a in range(n_a):
            if p_a[a] > 0.0:
                L[a, i] = np.log((1.0 - eta) * (Q[a, i] / q) + eta * p_a[a]) - log_pa[a]
    return L, empty


def limit_costs(P: np.ndarray, p_a: np.ndarray, p_b: np.ndarray) -> np.ndarray:
    """κ_j = Σ_a p(a, b_j) log(p(a | b_j) / p(a)): the gradient at an output with no mass."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = P / (p_a[:, None] * p_b[None, :])
        terms = np.where(P > 0, P * np.log(np.where(P > 0, ratio, 1.0)), 0.0)
    return terms.sum(axis=0)


@numba.njit(cache=True, nogil=True)
def _gather_costs(L, P, rows, cols):  # pragma: no cover - compiled
    out = np.empty(rows.size)
    for k in range(rows.size):
        i, j = rows[k], cols[k]
        c = 0.0
        for a in range(L.shape[0]):
            c += P[a, j] * L[a, i]
        out[k] = c
    return out


def pair_costs(L: np.ndarray, P: np.ndarray, rows: np.ndarray, cols: np.ndarray,
               empty: np.ndarray, empty_cost: np.ndarray | None) -> np.ndarray:
    """c[k] = Σ_a L[a, rows[k]] P[a, cols[k]]; at empty outputs ``empty_cost[cols[k]]``."""
    c = _gather_costs(np.ascontiguousarray(L, dtype=np.float64),
                      np.ascontiguousarray(P, dtype=np.float64),
                      np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))
    if empty_cost is not None and empty.any():
        at_empty = empty[rows]
        c[at_empty] = empty_cost[cols[at_empty]]
    return c
