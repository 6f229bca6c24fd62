"""A joint pmf of (A, Y) checked and scaled, and its mutual information.

The one measure a problem carries itself (``PrivacyProblem.prior_mi_bits``, I(A; B): the
leakage with no mechanism), so it lives with the protocol, below the exact measures
(:mod:`privbench.measures`), which build every other notion on :func:`scaled_joint` and
re-export :func:`mutual_information_of_joint` (``pb.metrics``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privbench.protocol.errors import ValidationError

__all__ = ["mutual_information_of_joint", "scaled_joint"]


def scaled_joint(Q: Any) -> np.ndarray | None:
    """Q checked (2-D, finite, non-negative) and normalised to a pmf, or None when it has
    no mass. When its sum overflows (counts near 1e308, which made every entry 0: a total
    variation of 0.0) it is divided by its largest entry first.

    :raises ValidationError: for another shape, a NaN, an infinite or a negative entry.
    """
    Q = np.asarray(Q, dtype=float)
    if Q.ndim != 2:
        raise ValidationError(f"joint must be a 2-D (|A|, n) array; got shape {Q.shape}")
    if not np.all(np.isfinite(Q)) or (Q < 0).any():
        raise ValidationError("joint must hold finite non-negative probabilities or counts")
    top = float(Q.max()) if Q.size else 0.0
    if top <= 0:
        return None
    with np.errstate(over="ignore"):  # an overflowing sum is detected just below, not warned
        total = float(Q.sum())
    if math.isfinite(total):  # the common case: one division, the same rounding as ever
        return Q / total
    Q = Q / top
    return Q / Q.sum()


def mutual_information_of_joint(joint: Any) -> float:
    """I(A; Y) in bits for a joint pmf (or counts) of shape (|A|, |Y|); exact, never negative.

    A joint without mass gives 0; a NaN, infinite or negative entry is refused like by
    every other notion (:class:`ValidationError`).
    """
    P = scaled_joint(joint)
    if P is None:
        return 0.0
    pa = P.sum(axis=1, keepdims=True)
    py = P.sum(axis=0, keepdims=True)
    mask = P > 0
    ratio = P[mask] / (pa @ py)[mask]
    value = float(np.sum(P[mask] * np.log2(ratio)))
    return max(value, 0.0)
