"""A small seeded matrix-factorisation recommender and the rule that releases ratings.

Used by ``recommendation_rmse`` (quantized-mapping paper, Table I). The recommender is
biased MF, r̂ = μ + b_u + c_i + p_u·q_i, fitted by alternating ridge regressions; every
step is a batched closed-form solve, so a MovieLens-100K fit takes well under a second.

Datasets that support the metric give the problem a ``ratings`` part
(:class:`privbench.Ratings`): the ratings table (``user_id``, ``item_id``, ``rating``)
and ``item_features``, indexed by item id, one column per coordinate of the binary
profile (genre g of a MovieLens profile, show i of a Politics-and-TV one);
:func:`release_by_features` applies the rule documented there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    import pandas as pd


def fit_predict(train: pd.DataFrame, test: pd.DataFrame, *, rank: int = 8, reg: float = 5.0,
                iters: int = 10, seed: int = 0) -> np.ndarray:
    """Fit biased MF on ``train`` and predict ``test`` (columns user, item, rating).

    Users or items absent from ``train`` fall back to the biases that exist.
    """
    rng = np.random.default_rng(seed)
    u = train["user"].to_numpy(np.int64)
    i = train["item"].to_numpy(np.int64)
    r = train["rating"].to_numpy(float)
    n_u = int(max(u.max(initial=0), test["user"].max()) + 1)
    n_i = int(max(i.max(initial=0), test["item"].max()) + 1)
    mu = float(r.mean()) if r.size else 0.0
    P = np.zeros((n_u, rank + 1))  # [p_u, b_u]
    Q = np.column_stack([rng.normal(0, 0.1, (n_i, rank)), np.zeros(n_i)])  # [q_i, c_i]
    eye = reg * np.eye(rank + 1)

    def indicator(idx: np.ndarray, size: int) -> sp.csr_array:
        """Sparse (size, N) matrix summing rating rows per user / item (fast np.add.at)."""
        return sp.csr_array((np.ones(idx.size), (idx, np.arange(idx.size))), shape=(size, idx.size))

    by_user, by_item = indicator(u, n_u), indicator(i, n_i)

    def solve(S: sp.csr_array, other: np.ndarray, target: np.ndarray) -> np.ndarray:
        z = np.column_stack([other[:, :rank], np.ones(len(other))])
        G = (S @ (z[:, :, None] * z[:, None, :]).reshape(len(z), -1)).reshape(-1, rank + 1, rank + 1)
        b = S @ (z * target[:, None])
        return np.linalg.solve(G + eye, b[:, :, None])[:, :, 0]

    for _ in range(iters):
        P = solve(by_user, Q[i], r - mu - Q[i, rank])
        Q = solve(by_item, P[u], r - mu - P[u, rank])
    tu = test["user"].to_numpy(np.int64)
    ti = test["item"].to_numpy(np.int64)
    pred = mu + P[tu, rank] + Q[ti, rank] + np.sum(P[tu, :rank] * Q[ti, :rank], axis=1)
    lo, hi = (float(r.min()), float(r.max())) if r.size else (-np.inf, np.inf)
    return np.clip(pred, lo, hi)


def release_by_features(ratings: pd.DataFrame, original: np.ndarray, released: np.ndarray,
                        points: np.ndarray, item_features: np.ndarray,
                        rng: np.random.Generator) -> pd.DataFrame:
    """Released ratings of users whose binary profile changed from ``original`` to ``released``.

    The default rule, in the spirit of obfuscation by adding and removing ratings: for a
    feature switched off, the user's ratings of items that carry it and no feature of the
    released profile are removed; for a feature switched on, the user rates the most
    rated items of that feature they have not rated, as many as the user's ratings per
    profile feature (at least one), each with the item's mean rating. Users outside the
    alphabet (symbol -1) keep their ratings.
    """
    import pandas as pd

    if not np.isin(points, (0, 1)).all():
        raise ValueError("the default release rule needs binary symbol points")
    F = np.asarray(item_features, dtype=bool)
    item_mean = ratings.groupby("item")["rating"].mean()
    popular = ratings["item"].value_counts().index.to_numpy()  # most rated first
    popular = popular[popular < F.shape[0]]
    by_feature = [popular[F[popular, f]] for f in range(F.shape[1])]
    by_user = dict(tuple(ratings.groupby("user", sort=False)))
    pieces = []
    changed = set(np.flatnonzero((original >= 0) & (original != released)).tolist())
    for user, frame in by_user.items():
        if user not in changed:
            pieces.append(frame)
            continue
        b, bh = points[original[user]].astype(bool), points[released[user]].astype(bool)
        off, on = b & ~bh, bh & ~b
        items = frame["item"].to_numpy()
        feats = F[items]
        drop = feats[:, off].any(axis=1) & ~feats[:, bh].any(axis=1)
        kept = frame[~drop]
        per_feature = max(1, round(len(frame) / max(1, int(b.sum()))))
        rated = set(items.tolist())
        added = []
        for f in np.flatnonzero(on):
            fresh = [int(it) for it in by_feature[f] if it not in rated][:per_feature]
            for it in fresh:
                added.append((user, it, float(item_mean[it])))
                rated.add(it)
        pieces.append(kept)
        if added:
            pieces.append(pd.DataFrame(added, columns=["user", "item", "rating"]))
    out = pd.concat(pieces, ignore_index=True) if pieces else ratings.iloc[:0]
    return out[["user", "item", "rating"]]


def release_direct(ratings: pd.DataFrame, original: np.ndarray, released: np.ndarray,
                   points: np.ndarray, item_of_feature: np.ndarray) -> pd.DataFrame:
    """Released ratings when symbol coordinate j *is* the rating of item ``item_of_feature[j]``
    (Politics-and-TV star profiles): a changed coordinate replaces that rating, 0 removes it.
    """
    import pandas as pd

    changed = np.flatnonzero((original >= 0) & (original != released))
    if changed.size == 0:
        return ratings
    touched = ratings["user"].isin(changed) & ratings["item"].isin(item_of_feature)
    kept = ratings[~touched]
    new = [(int(u), int(item), float(points[released[u], j]))
           for u in changed for j, item in enumerate(item_of_feature)
           if points[released[u], j] > 0]
    # coordinates of unchanged shows keep their original rating, as in the symbol
    return pd.concat([kept, pd.DataFrame(new, columns=["user", "item", "rating"])],
                     ignore_index=True)
