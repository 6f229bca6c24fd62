"""The soft minimum of the smoothed duals (``_dense_dual``, SPPM's ``dual`` mode), once.

softmin_τ(c) = m - τ log Σ_t exp((m - c_t) / τ) with m = min_t c_t; its weights
exp((m - c_t) / τ) / z are the soft assignment. Compiled with numba, called from the
callers' own compiled loops.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: soft-min terms below e^-CUTOFF of the largest count as 0 (no denormals, no work)
CUTOFF = 60.0


@numba.njit(cache=True, nogil=True)
def soft_weights(c, lo, hi, inv_tau):  # pragma: no cover - compiled
    """Replace the costs ``c[lo:hi]`` by their unnormalised soft-min weights
    exp((m - c_t) / τ) (0 below e^-CUTOFF) and return (m, z): the least cost and the sum
    of the weights; the soft minimum is m - τ log z (``inv_tau`` = 1 / τ)."""
    m = np.inf
    for t in range(lo, hi):
        if c[t] < m:
            m = c[t]
    z = 0.0
    for t in range(lo, hi):
        x = (m - c[t]) * inv_tau
        e = math.exp(x) if x > -CUTOFF else 0.0
        c[t] = e
        z += e
    return m, z
