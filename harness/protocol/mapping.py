"""What makes a matrix a mapping: (n, n), finite, non-negative, columns summing to one."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from privbench.protocol.errors import InvalidMappingError

#: column sums must be within this of one
COLUMN_SUM_TOL = 1e-9


def validate_mapping(mapping: Any, n: int) -> sp.csc_array:
    """Check a mapping is an (n, n) non-negative, column-stochastic matrix.

    :returns: the mapping as ``csc_array`` with explicit zeros removed.
    :raises InvalidMappingError: naming the first offending column.
    """
    if mapping is None:
        raise InvalidMappingError("mechanism returned no mapping")
    dtype = getattr(mapping, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(mapping).dtype
        except (TypeError, ValueError):
            dtype = None
    if dtype is not None and np.dtype(dtype).kind not in "biuf":
        what = "complex" if np.dtype(dtype).kind == "c" else f"{np.dtype(dtype).name}"
        raise InvalidMappingError(f"mapping has {what} entries; expected real probabilities")
    try:
        X = sp.csc_array(mapping, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidMappingError(f"mapping is not a numeric matrix: {exc}") from None
    if X.shape != (n, n):
        raise InvalidMappingError(f"mapping has shape {X.shape}; expected ({n}, {n})")
    X.eliminate_zeros()
    if not np.all(np.isfinite(X.data)):
        raise InvalidMappingError("mapping has NaN or infinite entries")
    if (X.data < 0).any():
        k = int(np.argmax(X.data < 0))
        j = int(np.searchsorted(X.indptr, k, side="right") - 1)
        raise InvalidMappingError(f"mapping has a negative entry {X.data[k]:g} in column {j}")
    sums = np.asarray(X.sum(axis=0)).ravel()
    bad = np.flatnonzero(np.abs(sums - 1.0) > COLUMN_SUM_TOL)
    if bad.size:
        j = int(bad[0])
        raise InvalidMappingError(
            f"mapping column {j} sums to {sums[j]:.12g}, not 1 (tolerance {COLUMN_SUM_TOL:g}); "
            f"{bad.size} column(s) affected"
        )
    return X
