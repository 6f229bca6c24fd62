"""Null-space cleaning (Xu, Cao, Shah, Maung, Schweitzer, AAAI 2017, Algorithms 1 and 2).

A record mechanism. The ally predicts desired labels with a linear operator,
y_d = A_dᵀ x (+ b); the cleaner knows A_d and removes from each feature vector the
projections on the approximate null space of A_dᵀ, choosing how much of each direction
to remove with the augmented fractional knapsack so that the ally's prediction moves
by at most ε: e_utility = |A_dᵀ(x - x̃)|² <= ε for every record (Theorems 1 and 3).

* ``variant=1`` (Algorithm 1): eigenvectors of A_d A_dᵀ, G_j = 1 - maximises the expected
  privacy error over rotations (Theorem 2);
* ``variant=2`` (Algorithm 2): the cleaner estimates the adversary's predictor A_c by
  least squares on the training rows and uses the generalized eigenvectors of
  (A_d A_dᵀ, A_c A_cᵀ), G_j = δ^c_j - maximises the error of that predictor (Theorem 4).

The budget Δ of a run is ε. A_d is fitted by least squares on the training rows (the
ally's model); with ``center`` (default) the cleaner works on x - μ (μ the training mean),
so removed components fall back to the mean rather than to zero; ``center=false`` is
the paper's toy setting (no intercept). Every row is released cleaned; metrics
(e_utility, e_privacy, complete privacy, the Algorithm 3 attack) use the test rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import privbench as pb

from . import _records
from ._nullspace import Basis, clean_rows, eigen_basis, generalized_basis


class NullspaceCleaning(_records.AllyPredictorMechanism):
    """Clean feature vectors in the approximate null space of the ally's predictor.

    :param variant: 1 (Algorithm 1: eigenvectors of A_d A_dᵀ) or 2 (Algorithm 2: generalized
        eigenvectors against the adversary's predictor A_c, fitted on the training rows).
    """

    name = "nullspace"
    citation = ('Xu, Cao, Shah, Maung, Schweitzer, Cleaning the null space: a privacy mechanism for '
                'predictors, AAAI 2017')
    delta_role = "epsilon"
    description = "null-space cleaning of feature vectors (Xu et al. AAAI 2017, Alg. 1-2)"
    test_parameters = {"variant": [1, 2], "test_fraction": [0.2]}

    def __init__(self, variant: int = 1, desired: Any = None, confidential: Any = None,
                 test_fraction: float = 0.1, center: bool = True) -> None:
        self.variant = variant
        self.desired = desired
        self.confidential = confidential
        self.test_fraction = test_fraction
        self.center = center

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        seed = self.context.seed
        eps = delta
        data, A_d, b_d = self.ally(problem, seed)
        train = data.train
        if self.variant == 1:
            basis = eigen_basis(A_d)
        else:
            A_c, _ = _records.fit_linear(data.X[train], data.Y_c[train], data.offset)
            basis = generalized_basis(A_d, A_c)
        offset = data.offset

        def transform(rows: np.ndarray, _basis: Basis = basis) -> np.ndarray:
            """Clean new feature rows with the same predictor and ε."""
            rows = np.atleast_2d(np.asarray(rows, dtype=float))
            return clean_rows(rows - offset, _basis, eps)[0] + offset

        cleaned, alpha = clean_rows(data.X - offset, basis, eps)
        released = cleaned + offset
        n_removed = (alpha[data.test] >= 1.0).sum(axis=1)
        stats = {
            "epsilon": eps,
            "variant": int(self.variant),
            "n_features": int(data.X.shape[1]),
            "n_train": int(train.size),
            "n_test": int(data.test.size),
            "null_space_dim": int(np.sum(basis.lam_d == 0)),
            "removed_directions_mean": float(n_removed.mean()),
            "desired_labels": data.desired,
            "confidential_labels": data.confidential,
        }
        return self.released(data, released, A_d, b_d, transform, stats)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [NullspaceCleaning]
