"""Compiled :func:`privbench.protocol.feasibility.normalise_columns` for SPPM's hot loop.

Every Frank-Wolfe step normalises the master's vertex over all |V| pairs; the numpy
version makes five passes with temporaries, this one two.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _normalise(cols, x, n):  # pragma: no cover - compiled
    sums = np.zeros(n)
    count = np.zeros(n, dtype=np.int64)
    out = np.empty(x.size)
    for k in range(x.size):
        v = x[k] if x[k] > 0.0 else 0.0
        out[k] = v
        sums[cols[k]] += v
        count[cols[k]] += 1
    for j in range(n):
        if count[j] > 0 and sums[j] <= 0.0:
            return out, j
    for k in range(x.size):
        out[k] = out[k] / sums[cols[k]]
    return out, -1


def normalise_columns(cols: np.ndarray, x: np.ndarray, n: int) -> np.ndarray:
    """Clip x at 0 and rescale so the entries of each input column sum to one."""
    out, bad = _normalise(np.asarray(cols, dtype=np.int64), np.asarray(x, dtype=np.float64),
                          int(n))
    if bad >= 0:
        raise ValueError("a column of the mapping has no positive entry")
    return out
