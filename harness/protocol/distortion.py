"""Distortion measures d(b̂, b) that can be evaluated without an n x n matrix.

A mechanism asks for what it needs: single entries (``pairs``), rectangular blocks
(``block``), one column (``column``) or, for small alphabets only, the dense matrix.
Feature-based measures (Hamming on categorical profiles, l1/l2/squared l2 on numeric
points) compute blocks on demand, so alphabets of 10^5 symbols stay in O(n) memory.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from privbench.protocol.errors import ValidationError

#: largest alphabet for which ``to_dense`` builds an n x n matrix unless forced
DENSE_LIMIT = 8192


class Distortion(ABC):
    """d(b̂_i, b_j) for i, j in range(n): the cost of releasing b̂_i when the truth is b_j."""

    name: str = "distortion"

    @property
    @abstractmethod
    def n(self) -> int:
        """Alphabet size."""

    @abstractmethod
    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Dense block D[rows][:, cols] of shape (len(rows), len(cols))."""

    def pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Elementwise d(b̂_rows[k], b_cols[k]) for equal-length index arrays."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        out = np.empty(rows.shape[0], dtype=float)
        step = 65536
        for s in range(0, rows.shape[0], step):
            out[s : s + step] = self._pairs(rows[s : s + step], cols[s : s + step])
        return out

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return np.array([self.block(rows[k : k + 1], cols[k : k + 1])[0, 0] for k in range(len(rows))])

    def column(self, j: int) -> np.ndarray:
        """d(·, b_j) as a vector of length n."""
        return self.block(np.arange(self.n), np.array([j]))[:, 0]

    def to_dense(self, *, force: bool = False) -> np.ndarray:
        """The full n x n matrix; refuses above DENSE_LIMIT unless ``force``."""
        if self.n > DENSE_LIMIT and not force:
            raise ValidationError(
                f"refusing to build a dense {self.n} x {self.n} distortion matrix "
                f"(limit {DENSE_LIMIT}); use block()/column() instead"
            )
        idx = np.arange(self.n)
        return self.block(idx, idx)

    def diagonal(self) -> np.ndarray:
        """d(b, b) for every symbol b, length n (0 for a distance)."""
        idx = np.arange(self.n)
        return self.pairs(idx, idx)

    @cached_property
    def max_value(self) -> float:
        """d_max = max over all pairs (blocked, O(n) memory)."""
        n, best, step = self.n, 0.0, max(1, min(self.n, 2**22 // max(self.n, 1)))
        cols = np.arange(n)
        for s in range(0, n, step):
            best = max(best, float(self.block(np.arange(s, min(n, s + step)), cols).max()))
        return best



class MatrixDistortion(Distortion):
    """An explicit matrix D with D[i, j] = d(b̂_i, b_j)."""

    name = "matrix"

    def __init__(self, matrix: np.ndarray) -> None:
        if sp.issparse(matrix):  # a scipy.sparse matrix is a matrix too (absent = 0)
            matrix = matrix.toarray()
        try:
            D = np.asarray(matrix, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"distortion must be a numeric (n, n) matrix: {exc}") from None
        if D.ndim != 2 or D.shape[0] != D.shape[1]:
            raise ValidationError(f"distortion matrix must be square (n, n); got shape {D.shape}")
        if not np.all(np.isfinite(D)):
            i, j = np.argwhere(~np.isfinite(D))[0]
            raise ValidationError(f"distortion matrix has a non-finite entry at ({i}, {j})")
        if (D < 0).any():
            i, j = np.argwhere(D < 0)[0]
            raise ValidationError(
                f"distortion must be non-negative; D[{i}, {j}] = {D[i, j]:g}"
            )
        self.matrix = D

    @property
    def n(self) -> int:
        return self.matrix.shape[0]

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return self.matrix[np.ix_(np.asarray(rows), np.asarray(cols))]

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return self.matrix[rows, cols]

    def to_dense(self, *, force: bool = False) -> np.ndarray:
        return self.matrix

    @cached_property
    def max_value(self) -> float:
        return float(self.matrix.max()) if self.matrix.size else 0.0


_CDIST = {"hamming": "hamming", "l1": "cityblock", "l2": "euclidean", "sq_l2": "sqeuclidean"}


class FeatureDistortion(Distortion):
    """A distance between feature vectors, one row of ``points`` per public symbol.

    ``metric`` is one of ``hamming`` (number of differing coordinates; points may be
    integer codes of categories), ``l1``, ``l2`` or ``sq_l2``. Blocks are computed with
    ``scipy.spatial.distance.cdist``; nothing n x n is ever stored.
    """

    def __init__(self, points: np.ndarray, metric: str = "hamming") -> None:
        if metric not in _CDIST:
            raise ValidationError(
                f"unknown distortion metric {metric!r}; expected one of {sorted(_CDIST)}"
            )
        P = np.asarray(points, dtype=float)
        if P.ndim == 1:
            P = P[:, None]
        if P.ndim != 2:
            raise ValidationError(f"points must be (n, k); got shape {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ValidationError("distortion points contain NaN or infinite values")
        self.points = P
        self.metric = metric
        self.name = metric

    @property
    def n(self) -> int:
        return self.points.shape[0]

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        from scipy.spatial.distance import cdist  # scipy.spatial: ~0.1 s to import

        out = cdist(self.points[np.asarray(rows)], self.points[np.asarray(cols)], _CDIST[self.metric])
        if self.metric == "hamming":
            out *= self.points.shape[1]
            np.rint(out, out=out)
        return out

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        diff = self.points[rows] - self.points[cols]
        if self.metric == "hamming":
            return (diff != 0).sum(axis=1).astype(float)
        if self.metric == "l1":
            return np.abs(diff).sum(axis=1)
        sq = (diff * diff).sum(axis=1)
        return np.sqrt(sq) if self.metric == "l2" else sq

    def diagonal(self) -> np.ndarray:
        return np.zeros(self.n)

    @cached_property
    def max_value(self) -> float:
        if self.points.shape[1] == 1 and self.metric != "hamming":
            span = float(self.points.max() - self.points.min()) if self.n else 0.0
            return span * span if self.metric == "sq_l2" else span
        return super().max_value


def as_distortion(value: object, n: int) -> Distortion:
    """Accept a Distortion or an (n, n) array-like; check it matches alphabet size n."""
    dist = value if isinstance(value, Distortion) else MatrixDistortion(value)
    if dist.n != n:
        raise ValidationError(
            f"distortion is for {dist.n} symbols but the prior has n = {n} public symbols"
        )
    return dist
