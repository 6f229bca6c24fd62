"""Helpers shared by the attack and mapping metrics: symbol features, seeded release.

A mapping mechanism releases a user's record by drawing b̂ from column ``symbol`` of
X = p(b̂ | b). Users whose profile lies outside the alphabet (``symbol == -1``) are not
covered by the mapping and are left out of the record-level metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_SEED = 0


def rng_for(seed: int | None, salt: int) -> np.random.Generator:
    """A generator per (run seed, metric), so metrics do not share a random stream."""
    return np.random.default_rng([DEFAULT_SEED if seed is None else int(seed), salt])


def symbol_codes(problem: pb.PrivacyProblem) -> tuple[np.ndarray, list[str]]:
    """Integer category codes (n, k) of every symbol's features, and the feature names.

    From the distortion's feature points when it has them (census, MovieLens, synthetic),
    else from tuple symbols, else the symbol index is one categorical feature.
    """
    import pandas as pd

    points = getattr(problem.distortion, "points", None)
    if points is None and problem.symbols is not None and len(problem.symbols) \
            and isinstance(problem.symbols[0], tuple | list):
        points = pd.DataFrame([list(s) for s in problem.symbols]).to_numpy()
    if points is None:
        points = np.arange(problem.n)[:, None]
    points = np.asarray(points)
    if points.ndim == 1:
        points = points[:, None]
    codes = np.column_stack([pd.factorize(points[:, k])[0] for k in range(points.shape[1])])
    names = list(problem.attributes or ())
    if len(names) != codes.shape[1]:
        names = [f"f{k}" for k in range(codes.shape[1])]
    return codes.astype(np.int64), names


def covered_records(problem: pb.PrivacyProblem, *, max_records: int | None,
                    rng: np.random.Generator) -> pd.DataFrame:
    """Records inside the alphabet (``symbol >= 0``), subsampled to ``max_records``."""
    if problem.records is None:
        raise pb.ValidationError("this metric needs records; the dataset provides none")
    recs = problem.records
    recs = recs[recs["symbol"].to_numpy() >= 0]
    if max_records and len(recs) > max_records:
        keep = np.sort(rng.choice(len(recs), size=max_records, replace=False))
        recs = recs.iloc[keep]
    return recs.reset_index(drop=True)


def sample_release(mapping: Any, symbols: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw b̂ ~ X[:, b] for every entry of ``symbols`` (vectorised per column)."""
    X = sp.csc_array(mapping)
    symbols = np.asarray(symbols, dtype=np.int64)
    out = np.empty_like(symbols)
    order = np.argsort(symbols, kind="stable")
    uniq, starts = np.unique(symbols[order], return_index=True)
    bounds = np.append(starts, symbols.size)
    for j, lo, hi in zip(uniq, bounds[:-1], bounds[1:], strict=True):
        rows = X.indices[X.indptr[j]:X.indptr[j + 1]]
        probs = X.data[X.indptr[j]:X.indptr[j + 1]]
        cum = np.cumsum(probs)
        draws = np.searchsorted(cum, rng.random(hi - lo) * cum[-1], side="right")
        out[order[lo:hi]] = rows[np.minimum(draws, rows.size - 1)]
    return out
