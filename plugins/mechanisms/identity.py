"""The identity mapping: release B as it is (zero distortion, full leakage I(A;B))."""

from __future__ import annotations

import scipy.sparse as sp

import privbench as pb


class Identity(pb.MappingMechanism):
    """X = I. The no-privacy baseline every curve starts from."""

    name = "identity"
    citation = ('Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014 '
                '(no mapping); Hay et al., DPBench, SIGMOD 2016 (baselines in every comparison)')
    baseline = True  # every sweep adds it (baselines = true)
    description = "release the public data unchanged (baseline)"

    def __init__(self) -> None:
        pass

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        return self.result(sp.identity(problem.n, format="csc"))


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Identity]
