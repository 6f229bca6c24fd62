"""Seeded random problems for tests and property checks.

``distortion=random`` draws D uniformly in [0, 1) with a zero diagonal;
``hamming`` uses distinct random binary profiles of ``bits`` bits; ``sq_l2`` random
scalar points in [0, n). The prior is Dirichlet(``concentration``) over |A| x n cells.
"""

from __future__ import annotations

import numpy as np

import privbench as pb

KINDS = ("random", "hamming", "sq_l2")


#: the largest alphabet (and private alphabet): the distortion is a dense n x n matrix
MAX_N = 20_000


class RandomProblem(pb.DatasetAdapter):
    """Seeded random problems for tests and property checks.

    :param n: the public alphabet size |B| (an integer in [1, 20,000]; the distortion is a
        dense n x n matrix).
    :param n_private: the private alphabet size |A| (an integer in [1, 20,000]).
    :param seed: the seed of the prior and the distortion (an integer in [0, 2^63 - 1]).
    :param distortion: ``random`` (d uniform in [0, 1), zero diagonal), ``hamming`` (distinct
        random binary profiles of ``bits`` bits) or ``sq_l2`` (random points in [0, n)).
    :param concentration: the Dirichlet concentration of the prior over the |A| x n cells
        (> 0; small values give a peaked prior, 1 a uniform draw on the simplex).
    :param bits: the profile length with ``distortion=hamming`` (n must be at most 2^bits).
    """

    name = "random"
    citation = 'none: seeded random problems for tests (privbench)'
    description = "seeded random prior and distortion (tests, property checks)"
    source = "generated"
    licence = "generated"
    test_parameters = {"n": [8], "n_private": [2, 3]}

    def __init__(self, n: int = 20, n_private: int = 2, seed: int = 0,
                 distortion: str = "random", concentration: float = 1.0, bits: int = 8) -> None:
        self.n = n
        self.n_private = n_private
        self.seed = seed
        self.distortion = distortion
        self.concentration = concentration
        self.bits = bits

    def check_params(self) -> None:
        """Sizes a dense |A| x n prior and n x n distortion can hold; a seed numpy takes."""
        for name, value, high in (("n", self.n, MAX_N), ("n_private", self.n_private, MAX_N)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise pb.ValidationError(f"random: {name} must be an integer in [1, {high:,}]; "
                                         f"got {str(value)[:30]}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) \
                or not 0 <= self.seed < 2**63:
            raise pb.ValidationError(f"random: seed must be an integer in [0, 2^63 - 1]; got "
                                     f"{str(self.seed)[:30]}")
        if self.distortion not in KINDS:
            raise pb.ValidationError(
                f"random: distortion must be one of {', '.join(KINDS)}; got {self.distortion!r}"
            )

    def load(self) -> pb.PrivacyProblem:
        if self.distortion not in KINDS:
            raise pb.ValidationError(
                f"random: distortion must be one of {', '.join(KINDS)}; got {self.distortion!r}"
            )
        if int(self.n) < 1 or int(self.n_private) < 1:
            raise pb.ValidationError("random: n and n_private must be >= 1")
        n, k = int(self.n), int(self.n_private)
        rng = np.random.default_rng(self.seed)
        joint = rng.dirichlet(np.full(n * k, float(self.concentration))).reshape(k, n)
        if self.distortion == "random":
            D = rng.random((n, n))
            np.fill_diagonal(D, 0.0)
            dist: pb.Distortion = pb.MatrixDistortion(D)
        elif self.distortion == "hamming":
            if n > 2**self.bits:
                raise pb.ValidationError(f"random: n = {n} exceeds 2^bits = {2**self.bits}")
            codes = rng.choice(2**self.bits, size=n, replace=False)
            points = (codes[:, None] >> np.arange(self.bits)) & 1
            dist = pb.FeatureDistortion(points, "hamming")
        else:
            dist = pb.FeatureDistortion(rng.random(n) * n, "sq_l2")
        return pb.PrivacyProblem.from_arrays(
            joint=joint, distortion=dist, name=f"random[n={n},k={k},{self.distortion},seed={self.seed}]",
            meta={"seed": self.seed},
        )


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [RandomProblem]
