"""``privacy_funnel``: greedy agglomerative merging of public symbols.

Makhdoumi, Salamatian, Fawaz, Médard, "From the information bottleneck to the privacy
funnel", ITW 2014 (section V, the greedy algorithm). Start with every symbol its own
cluster; merging clusters i and j lowers I(A; cluster) by (p_i + p_j) JS_π(p(a|i),
p(a|j)), π ∝ (p_i, p_j). Each cluster is released as its distortion-minimising
representative (over the whole alphabet), so a merge adds distortion; while E[d] <= Δ
holds, merge the pair that lowers the leakage most per unit of added distortion (a
merge that adds none comes first). The result is a deterministic mapping (one output a
column). Two clusters may end up with the same representative; the release then merges
them too, so I(A; B̂) <= I(A; clusters) (``cluster_mi_bits`` in the stats).

The choice of pair is ``rule``: ``ratio`` (the default, privbench's distortion-budget
adaptation) merges the pair with the largest leakage decrease per unit of added
distortion; ``paper`` merges the pair with the largest leakage decrease, the paper's
rule, among the merges that fit. The paper constrains utility as I(B; Y) >= R (Y the
cluster); ``min_utility_bits=R`` adds that constraint (to either rule) beside E[d] <= Δ,
which both always keep.

Memory: an n x n table of per-cluster costs (n = 2,000: 32 MB); alphabets above
``max_n`` are skipped. ``candidates`` pairs per cluster are priced exactly (see
``_funnel``); ``candidates >= n`` is the exhaustive greedy.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench.plugins.mechanisms._funnel import initial_state, run_funnel
from privbench.protocol.checks import finite_float, positive_int

LN2 = math.log(2.0)
#: how the next pair is chosen (see the module docstring)
RULES = ("ratio", "paper")


def cost_rows(problem: pb.PrivacyProblem, step: int = 512) -> np.ndarray:
    """R[j, i] = p(b_j) d(b̂_i, b_j), filled in blocks of columns of D."""
    n = problem.n
    out = np.empty((n, n))
    rows = np.arange(n)
    for s in range(0, n, step):
        cols = np.arange(s, min(n, s + step))
        out[cols] = (problem.distortion.block(rows, cols) * problem.p_b[cols]).T
    return out


class PrivacyFunnel(pb.SizeLimited, pb.MappingMechanism):
    """Greedy privacy funnel (Makhdoumi et al., ITW 2014): a deterministic merge of symbols.

    Parameters
    ----------
    candidates : pairs per cluster priced exactly (``>= n``: every pair).
    max_n : alphabets above this are skipped (the cost table is n x n).
    rule : ``ratio`` (largest leakage decrease per unit of added distortion) or ``paper``
        (largest leakage decrease, Makhdoumi et al.'s rule).
    min_utility_bits : the paper's utility constraint I(B; Y) >= R, in bits (0: none).
    """

    name = "privacy_funnel"
    citation = 'Makhdoumi, Salamatian, Fawaz, Médard, From the information bottleneck to the privacy funnel, ITW 2014'
    description = "greedy agglomerative merging of public symbols (privacy funnel, ITW 2014)"
    test_parameters = {"candidates": [2, 64]}

    def __init__(self, candidates: int = 32, max_n: int = 4096, rule: str = "ratio",
                 min_utility_bits: float = 0.0) -> None:
        self.candidates = candidates
        self.max_n = max_n
        self.rule = rule
        self.min_utility_bits = min_utility_bits

    def check_params(self) -> None:
        positive_int("privacy_funnel: candidates", self.candidates)
        if self.rule not in RULES:
            raise pb.ValidationError(f"privacy_funnel: rule must be one of {', '.join(RULES)} "
                                     f"(paper: largest leakage decrease; ratio: per unit of "
                                     f"distortion); got {self.rule!r}")
        finite_float("privacy_funnel: min_utility_bits", self.min_utility_bits, low=0.0)
        super().check_params()  # max_n

    def size_reason(self, n: int) -> str:
        """The cost table is dense."""
        return "privacy_funnel keeps an n x n cost table"

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        state = initial_state(problem.joint, cost_rows(problem), problem.p_b, delta,
                              self.candidates, rule=self.rule,
                              min_entropy=float(self.min_utility_bits) * LN2)
        if state.used > delta * (1 + 1e-12):
            raise pb.ValidationError(
                f"privacy_funnel: no mapping meets Δ = {delta:g}; the least distortion any "
                f"mapping has is {state.used:g}")
        state = run_funnel(state)
        n = problem.n
        X = sp.csc_array((np.ones(n), (state.rep[state.label], np.arange(n))), shape=(n, n))
        clusters = int(np.count_nonzero(state.alive))
        return self.result(
            X, clusters=clusters, merges=state.merges, outputs=int(np.unique(state.rep[state.label]).size),
            cluster_mi_bits=max(problem.prior_mi_bits - state.gain_nats / LN2, 0.0),
            funnel_distortion=state.used, utility_bits=state.entropy / LN2)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [PrivacyFunnel]
