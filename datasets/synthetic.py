"""The SPPM paper's toy example (section 2); seeded random problems are ``random`` (random_problem.py).

``synthetic``: A ∈ {0, 1} uniform, B ∈ {1, ..., 2^m}; B <= 2^(m-1) iff A = 0, uniform
within each half, so B determines A and I(A; B) = 1 bit. Distortion (b - b̂)^2.
"""

from __future__ import annotations

import numpy as np

import privbench as pb


def toy_joint(m: int) -> np.ndarray:
    n = 2**m
    half = n // 2
    joint = np.zeros((2, n))
    joint[0, :half] = 0.5 / half
    joint[1, half:] = 0.5 / half
    return joint


class Synthetic(pb.DatasetAdapter):
    """The SPPM paper's toy example (section 2).

    :param m: B has 2^m symbols (an integer in 1..24); the first half is A = 0, the second
        A = 1, so I(A; B) = 1 bit.
    """

    name = "synthetic"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 (the toy example)'
    description = "SPPM toy example: 2^m symbols, B determines A, squared l2 distortion"
    source = "SPPM paper, section 2 (embedded; no download)"
    licence = "generated"
    test_parameters = {"m": [3, 4]}

    def __init__(self, m: int = 6) -> None:
        self.m = m

    def check_params(self) -> None:
        if not isinstance(self.m, int) or isinstance(self.m, bool) or not 1 <= self.m <= 24:
            raise pb.ValidationError(f"synthetic: m must be an integer in 1..24; got {self.m!r}")

    def load(self) -> pb.PrivacyProblem:
        self.check_params()
        n = 2**self.m
        values = np.arange(1, n + 1, dtype=float)
        return pb.PrivacyProblem.from_arrays(
            joint=toy_joint(self.m),
            distortion=pb.FeatureDistortion(values, "sq_l2"),
            symbols=values.astype(int).tolist(),
            attributes=("b",),
            private_labels=(0, 1),
            name=f"synthetic[m={self.m}]",
            meta={"source": "embedded toy example", "m": self.m},
        )


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [Synthetic]
