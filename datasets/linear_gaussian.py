"""A seeded linear-Gaussian multi-label generator, for the record mechanisms.

Stands in for the Mulan multi-label benchmarks of the null-space paper (scene, wq,
oes97, CAL500; not redistributable here). Features x ~ N(0, Σ) with Σ = U diag(s) Uᵀ,
U a random rotation and s decaying geometrically from 1 to ``spectrum_decay`` (so the
data has strong and weak directions, like real features); labels Y = X W + noise with
W ~ N(0, 1/n). The first ``n_desired`` labels are the desired ones (the ally predicts
them), the rest confidential; both are named ``y0, y1, ...`` in ``problem.records``.

So that mapping mechanisms and problem-level metrics also have something to run on,
the prior is private A = 1[y_c0 > 0] (the first confidential label) and public symbol B =
the sign pattern of the first ``min(3, n_features)`` features, with Hamming distortion.
"""

from __future__ import annotations

import numpy as np

import privbench as pb


class LinearGaussian(pb.DatasetAdapter):
    """A seeded linear-Gaussian multi-label generator, for the record mechanisms.

    :param n_samples: the number of records (users), at least 4.
    :param n_features: the feature dimension of x (at least 1).
    :param n_labels: the number of labels y (at least 2): the first n_desired are desired,
        the rest confidential.
    :param n_desired: how many labels are desired (at least 1, below n_labels).
    :param noise: the standard deviation of the Gaussian noise added to the labels (>= 0).
    :param spectrum_decay: the smallest feature variance relative to the largest, in (0, 1]
        (the variances decay geometrically from 1 to it).
    :param seed: the seed of the features, weights and noise.
    """

    name = "linear_gaussian"
    citation = 'Xu et al., Cleaning the null space, AAAI 2017 (the linear-Gaussian record setting)'
    description = "seeded linear-Gaussian multi-label data (record mechanisms)"
    source = "generated"
    licence = "generated"
    test_parameters = {"n_samples": [200], "n_features": [8], "n_labels": [3]}
    conformance = True  # privbench.testing checks record mechanisms on this problem

    def __init__(self, n_samples: int = 1000, n_features: int = 20, n_labels: int = 6,
                 n_desired: int = 1, noise: float = 0.1, spectrum_decay: float = 0.01,
                 seed: int = 0) -> None:
        self.n_samples = n_samples
        self.n_features = n_features
        self.n_labels = n_labels
        self.n_desired = n_desired
        self.noise = noise
        self.spectrum_decay = spectrum_decay
        self.seed = seed

    def _check(self) -> None:
        def is_int(v: object) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        for name, low in (("n_samples", 4), ("n_features", 1), ("n_labels", 2), ("n_desired", 1)):
            value = getattr(self, name)
            if not is_int(value) or value < low:
                raise pb.ValidationError(
                    f"linear_gaussian: {name} must be an integer >= {low}; got {value!r}")
        if self.n_desired >= self.n_labels:
            raise pb.ValidationError(
                f"linear_gaussian: n_desired must be < n_labels = {self.n_labels} "
                f"(at least one confidential label); got {self.n_desired}")
        if not (isinstance(self.noise, int | float) and self.noise >= 0):
            raise pb.ValidationError(f"linear_gaussian: noise must be >= 0; got {self.noise!r}")
        if not (isinstance(self.spectrum_decay, int | float) and 0 < self.spectrum_decay <= 1):
            raise pb.ValidationError(
                f"linear_gaussian: spectrum_decay must be in (0, 1]; got {self.spectrum_decay!r}")

    def load(self) -> pb.PrivacyProblem:
        import pandas as pd

        self._check()
        m, n, k = self.n_samples, self.n_features, self.n_labels
        rng = np.random.default_rng(self.seed)
        U, _ = np.linalg.qr(rng.normal(size=(n, n)))
        scales = np.sqrt(np.geomspace(1.0, float(self.spectrum_decay), n))
        X = (rng.normal(size=(m, n)) * scales) @ U.T
        W = rng.normal(size=(n, k)) / np.sqrt(n)
        Y = X @ W + float(self.noise) * rng.normal(size=(m, k))
        names = [f"y{i}" for i in range(k)]
        desired, confidential = names[: self.n_desired], names[self.n_desired :]
        bits = min(3, n)
        codes = (X[:, :bits] > 0).astype(int)
        symbol = codes @ (1 << np.arange(bits))
        private = (Y[:, self.n_desired] > 0).astype(int)
        joint = np.zeros((2, 2**bits))
        np.add.at(joint, (private, symbol), 1.0)
        points = (np.arange(2**bits)[:, None] >> np.arange(bits)) & 1
        records = pd.DataFrame(Y, columns=names)
        records.insert(0, "symbol", symbol)
        records.insert(0, "private", private)
        return pb.PrivacyProblem.from_arrays(
            joint=joint + 1e-12,  # every cell possible, so no symbol has zero mass
            distortion=pb.FeatureDistortion(points, "hamming"),
            symbols=[tuple(int(b) for b in row) for row in points],
            attributes=tuple(f"x{i}>0" for i in range(bits)),
            private_labels=("y_c0<=0", "y_c0>0"),
            records=records,
            features=X,
            name=f"linear_gaussian[m={m},n={n},labels={k},seed={self.seed}]",
            meta={"seed": self.seed, "n_samples": m, "n_features": n, "n_labels": k},
            targets=pb.Targets(list(desired), list(confidential), W),
        )


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [LinearGaussian]
