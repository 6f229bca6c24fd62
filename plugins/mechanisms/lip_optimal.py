"""``lip_optimal``: the mapping of least E[d] under ε-local information privacy, an LP.

ε-local information privacy (Jiang, Li, Tandon, "Local information privacy and its
application to privacy-preserving data aggregation", IEEE TDSC 2022; "Local information
privacy with bounded prior", ICC 2019) bounds every posterior-to-prior ratio of A given
the release: e^{-ε} <= p(a | b̂) / p(a) <= e^{ε}, that is, with
W(b̂|a) = Σ_j p(b_j|a) X[b̂, j] and p(b̂) = Σ_j p(b_j) X[b̂, j],

    e^{-ε} p(b̂) <= W(b̂|a) <= e^{ε} p(b̂)    for every a and b̂,

linear in X. Δ is read as ε (nats, ``delta_role = "epsilon"``); ε = 0 is perfect privacy.
``notion="ldp"`` replaces the rows with local differential privacy with respect to A
(Duchi, Jordan, Wainwright, FOCS 2013, applied to the channel from A):
W(b̂|a) <= e^{ε} W(b̂|a') for all a, a'. The objective is E[d]; any constant output is
feasible, so the LP always has a solution. Upper rows are scaled by e^{-ε} (coefficients
e^{-ε} p(b_j|a) - p(b_j)) so a large ε leaves them well conditioned rather than huge.
Stats: ``lip_epsilon_nats`` and ``ldp_epsilon_nats`` of the returned mapping (``inf``
where some W(b̂|a) = 0 < p(b̂)).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import privbench as pb

from ._lp_mapping import LPMappingMechanism, MappingLP

NOTIONS = ("lip", "ldp")


class LipOptimal(LPMappingMechanism):
    """Least E[d] under ε-LIP (or ε-LDP w.r.t. A with ``notion="ldp"``), Δ read as ε."""

    name = "lip_optimal"
    description = "least E[d] under ε-local information privacy (Δ = ε; notion=ldp: LDP on A), an LP"
    delta_role = "epsilon"
    respects_budget = False
    lp_kind = "the local-information-privacy LP"
    test_parameters = {"lp_backend": ["highs", "scipy"], "notion": ["lip", "ldp"]}

    def __init__(self, notion: str = "lip", lp_backend: str = "highs", max_n: int = 1200) -> None:
        self.notion = notion
        self.lp_backend = lp_backend
        self.max_n = max_n

    def check_params(self) -> None:
        if self.notion not in NOTIONS:
            raise pb.ValidationError(f"{self.name}: notion must be one of {', '.join(NOTIONS)}; "
                                     f"got {self.notion!r}")
        super().check_params()

    def build(self, lp: MappingLP, delta: float) -> None:
        lp.minimise_distortion()
        shrink = math.exp(-delta)
        cond, p = lp.cond, lp.p[None, :]
        if self.notion == "lip":
            lp.add_rows(lp.per_output(cond - shrink * p), 0.0, np.inf)
            lp.add_rows(lp.per_output(shrink * cond - p), -np.inf, 0.0)
            return
        k = cond.shape[0]
        pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
        if pairs:
            coef = np.array([shrink * cond[a] - cond[b] for a, b in pairs])
            lp.add_rows(lp.per_output(coef), -np.inf, 0.0)

    def measures(self, problem: pb.PrivacyProblem, lp: MappingLP, X: np.ndarray
                 ) -> dict[str, Any]:
        return {"lip_epsilon_nats": pb.metrics.lip_epsilon(problem, X),
                "ldp_epsilon_nats": pb.metrics.ldp_epsilon_private(problem, X)}


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [LipOptimal]
