"""Laplace noise on feature vectors, the null-space paper's comparison (Figure 7).

x̃ = x + z, z_i ~ Laplace(0, b) i.i.d. The paper adjusts the noise "to produce the same
e_utility as Algorithm 1", so the comparison is at equal utility. Here the scale b is
calibrated on the test rows so that the mean e_utility = mean |A_dᵀ z|² equals a target
exactly (e_utility scales with b², so one draw of unit noise fixes b):

* ``match="nullspace"`` (default): the target is the mean e_utility of a ``nullspace``
  run with the same targets, split, seed and Δ (``variant`` chooses Algorithm 1 or 2);
* ``match="budget"``: the target is Δ itself;
* ``scale=b``: no calibration, b as given.

A_d is the same least-squares ally predictor the null-space mechanism uses. The noise
is seeded (``seed`` of the run, 0 when unset).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import privbench as pb

from . import _records
from .nullspace import NullspaceCleaning

MATCHES = ("nullspace", "budget")


class LaplaceNoise(_records.AllyPredictorMechanism):
    """Additive Laplace noise calibrated to a null-space run's e_utility.

    :param scale: the Laplace scale b of the noise, used as is (>= 0); default: calibrated so
        that the mean e_utility on the test rows meets the ``match`` target.
    :param match: the calibration target: ``nullspace`` (the mean e_utility of a null-space run
        with the same targets, split, seed and Δ) or ``budget`` (Δ itself).
    :param variant: the null-space algorithm (1 or 2) whose e_utility ``match=nullspace``
        matches.
    :param center: fit the ally's predictor on x - μ, μ the training rows' mean, i.e. with an
        intercept (``false``: through the origin); the noise itself is not centred.
    """

    name = "laplace"
    citation = ('Dwork, McSherry, Nissim, Smith, Calibrating noise to sensitivity in private data '
                'analysis, TCC 2006; at equal utility as in Xu et al., AAAI 2017')
    delta_role = "epsilon"
    description = "Laplace noise on features at equal e_utility (null-space paper, Fig. 7)"
    test_parameters = {"match": ["nullspace", "budget"], "test_fraction": [0.2]}

    def __init__(self, scale: float | None = None, match: str = "nullspace", variant: int = 1,
                 desired: Any = None, confidential: Any = None, test_fraction: float = 0.1,
                 center: bool = True) -> None:
        self.scale = scale
        self.match = match
        self.variant = variant
        self.desired = desired
        self.confidential = confidential
        self.test_fraction = test_fraction
        self.center = center

    def check_params(self) -> None:
        if self.match not in MATCHES:
            raise pb.ValidationError(
                f"laplace: match must be one of {', '.join(MATCHES)}; got {self.match!r}")
        if self.scale is not None and not (isinstance(self.scale, int | float)
                                           and not isinstance(self.scale, bool)
                                           and np.isfinite(self.scale) and self.scale >= 0):
            raise pb.ValidationError(f"laplace: scale must be a number >= 0; got {self.scale!r}")
        super().check_params()

    def _target(self, problem: pb.PrivacyProblem, delta: float, seed: int | None) -> float:
        if self.match == "budget":
            return delta
        cleaner = NullspaceCleaning(variant=self.variant, desired=self.desired,
                                confidential=self.confidential,
                                test_fraction=self.test_fraction, center=self.center)
        rec = cleaner.solve(problem, delta, seed=seed).records
        test = rec["test"]
        move = (rec["original"][test] - rec["released"][test]) @ rec["ally_weights"]
        return float(np.mean(np.sum(move * move, axis=1)))

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        seed = self.context.seed
        data, A_d, b_d = self.ally(problem, seed)
        rng = np.random.default_rng(seed if seed is not None else 0)
        unit = rng.laplace(0.0, 1.0, size=data.X.shape)
        stats: dict[str, Any] = {}
        if self.scale is not None:
            b = float(self.scale)
        else:
            target = self._target(problem, delta, seed)
            move = unit[data.test] @ A_d
            unit_utility = float(np.mean(np.sum(move * move, axis=1)))
            b = float(np.sqrt(target / unit_utility)) if unit_utility > 0 else 0.0
            stats["target_e_utility"] = target
        released = data.X + b * unit

        def transform(rows: np.ndarray) -> np.ndarray:
            """Add fresh Laplace noise of the same scale to new rows."""
            rows = np.atleast_2d(np.asarray(rows, dtype=float))
            return rows + rng.laplace(0.0, b, size=rows.shape)

        stats.update(scale=b, match=self.match, n_train=int(data.train.size),
                     n_test=int(data.test.size))
        return self.released(data, released, A_d, b_d, transform, stats)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [LaplaceNoise]
