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

The mapping meets its ε at every ε (the runner checks it: ``promises``). An LP solver meets
rows only to ~1e-9, and entries below 1e-12 are dropped, so at large ε (about 16 nats on
MovieLens) e^{-ε} p(b̂) falls below the tolerance and the solver's point may have
W(b̂|a) = 0: an infinite ε. The returned mapping is therefore repaired: mixed with the
mapping V that sends every input uniformly to the outputs B where X breaks a row (V is
perfectly private, and outside B every ratio is kept) by the least θ that makes every row
hold exactly, X' = (1 - θ) X + θ V (``repair_theta`` in the stats; its cost in E[d] is at
most θ (E_V[d] - E_X[d])). Above ``EPSILON_SOLVED_MAX`` = 500 nats the LP is solved, and the
mapping repaired, at 500: e^{-500} ≈ 7e-218 is still a normal float, while e^{-ε} of a
larger ε underflows towards 0 and could not be told from "no lower row". Such a mapping is
ε-LIP for every ε >= 500 (``epsilon_solved`` in the stats says which ε the LP used).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._lp_colgen import Family, Problem, SparseLP
from ._lp_mapping import LPMappingMechanism, MappingLP

NOTIONS = ("lip", "ldp")
#: the largest ε the LP is solved at (nats); a larger ε gets the mapping of this one, which
#: meets it (see the module docstring)
EPSILON_SOLVED_MAX = 500.0
#: the repair aims this far inside ε >= 1 (relative): the runner's tolerance is 1e-9
REPAIR_MARGIN = 1e-11
#: the most entries the repair's dense rows may hold (|B| x n)
MAX_REPAIR_ENTRIES = 20_000_000


def least_mix(W: np.ndarray, q: np.ndarray, epsilon: float, notion: str
              ) -> tuple[float, np.ndarray]:
    """The least θ in [0, 1], and the outputs B, such that X' = (1 - θ) X + θ V meets ε,
    where W[a, i] = p(b̂_i | a) and q[i] = p(b̂_i) of X, B the outputs where X breaks a
    row, and V sends every input uniformly to B (perfectly private: W_V = q_V = 1/|B| on B).

    Outside B every ratio is kept (W and q both scale by 1 - θ); on B each row r(X) <= 0 is
    linear in X, so r(X') = (1 - θ) r(X) + θ r(V) with r(V) < 0, and θ >= r(X) / (r(X) -
    r(V)) wherever r(X) > 0."""
    # aim inside ε (relative margin); below ε = 1, where the runner's tolerance is absolute
    # (1e-9 nats), at half of it past ε, so ε = 0 does not force θ = 1 (V itself)
    eps = epsilon * (1.0 - REPAIR_MARGIN) if epsilon >= 1 else epsilon + 0.5e-9
    shrink = math.exp(-eps)
    if notion == "lip":
        # lower: e^{-ε} q - W <= 0; upper, scaled by e^{-ε}: e^{-ε} W - q <= 0
        rows = [(shrink * q[None, :] - W).max(axis=0), (shrink * W - q[None, :]).max(axis=0)]
    else:  # ldp: e^{-ε} W(b̂|a) - W(b̂|a') <= 0 for all a, a'
        rows = [shrink * W.max(axis=0) - W.min(axis=0)]
    outputs = np.flatnonzero(np.logical_or.reduce([r > 0 for r in rows]) & (q > 0))
    if outputs.size == 0:
        return 0.0, outputs
    r_v = (shrink - 1.0) / outputs.size
    if r_v >= 0:  # ε = 0 (to rounding): only V itself meets it
        return 1.0, outputs
    theta = max(_breaking_share(r[outputs], r_v) for r in rows)  # only the rows X breaks
    # a hair more than the least θ, so rounding cannot leave a row just outside
    return min(1.0, theta * (1.0 + 1e-6) + 1e-300), outputs


class LipOptimal(LPMappingMechanism):
    """Least E[d] under ε-LIP (or ε-LDP w.r.t. A with ``notion="ldp"``), Δ read as ε."""

    name = "lip_optimal"
    citation = ('Jiang, Li, Tandon, Local information privacy and its application to '
                'privacy-preserving data aggregation, IEEE TDSC 2022')
    description = "least E[d] under ε-local information privacy (Δ = ε; notion=ldp: LDP on A), an LP"
    delta_role = "epsilon"
    respects_budget = False
    lp_kind = "the local-information-privacy LP"
    test_parameters = {"lp_backend": ["highs", "scipy"], "notion": ["lip", "ldp"]}

    default_max_n = {"colgen": 10000, "full": 1200}

    def __init__(self, notion: str = "lip", lp_backend: str = "highs", max_n: int | None = None,
                 solver: str = "colgen", tol: float = 1e-6) -> None:
        self.notion = notion
        self.lp_backend = lp_backend
        self.set_solver(solver, tol, max_n)

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

    def promises(self, delta: float) -> dict[str, float]:
        """ε-LIP (or ε-LDP with respect to A) at Δ = ε, checked by the runner."""
        return {"lip_epsilon" if self.notion == "lip" else "ldp_epsilon_private": float(delta)}

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        """The LP at min(ε, EPSILON_SOLVED_MAX), then the least mix with V that meets it."""
        solved = min(float(delta), EPSILON_SOLVED_MAX)
        base = super().run(problem, solved)
        X = sp.csc_array(base.mapping)  # stays sparse unless the repair mixes in U
        live_a, live = problem.p_a > 0, problem.p_b > 0
        cond = problem.joint[np.ix_(live_a, live)] / problem.p_a[live_a][:, None]
        X_live = X[:, np.flatnonzero(live)]
        W = np.asarray(X_live @ cond.T).T
        q = np.asarray(X_live @ problem.p_b[live])
        theta, outputs = least_mix(W, q, solved, self.notion)
        if theta > 0:  # dense only on the rows of the outputs that broke a row
            if outputs.size * problem.n > MAX_REPAIR_ENTRIES:
                raise pb.PrivbenchError(
                    f"{self.name}: the LP's mapping breaks ε = {solved:g} at {outputs.size} "
                    f"outputs; repairing it needs {outputs.size * problem.n:,} dense entries "
                    f"(more than {MAX_REPAIR_ENTRIES:,}): use a smaller alphabet")
            V = sp.csc_array((np.full(outputs.size * problem.n, 1.0 / outputs.size),
                              (np.repeat(outputs, problem.n), np.tile(np.arange(problem.n),
                                                                      outputs.size))),
                             shape=X.shape)
            X = sp.csc_array((1.0 - theta) * X + theta * V)
        stats = {k: v for k, v in base.stats.items() if k not in ("lip_epsilon_nats",
                                                                     "ldp_epsilon_nats")}
        stats.update(epsilon_solved=solved, repair_theta=theta)
        stats.update(self.measures(problem, None, X))  # type: ignore[arg-type]
        return self.result(X, **stats)

    def sparse_lp(self, data: Problem, delta: float) -> SparseLP:
        """The rows of :meth:`build` as per-output families; E[d] >= the nearest-output E[d]."""
        shrink = math.exp(-delta)
        cond, p = data.cond, data.p[None, :]
        floor = data.least_distortion()
        if self.notion == "lip":
            return SparseLP([Family(cond - shrink * p, 0.0, np.inf),
                             Family(shrink * cond - p, -np.inf, 0.0)], "distortion", floor=floor)
        k = cond.shape[0]
        coef = np.array([shrink * cond[a] - cond[b] for a in range(k) for b in range(k) if a != b])
        families = [Family(coef, -np.inf, 0.0)] if coef.size else []
        return SparseLP(families, "distortion", floor=floor)

    def measures(self, problem: pb.PrivacyProblem, lp: MappingLP, X: np.ndarray
                 ) -> dict[str, Any]:
        return {"lip_epsilon_nats": pb.metrics.lip_epsilon(problem, X),
                "ldp_epsilon_nats": pb.metrics.ldp_epsilon_private(problem, X)}


def _breaking_share(r: np.ndarray, r_v: float) -> float:
    """max over the rows X breaks (r > 0) of r / (r - r_v); 0 when it breaks none. Only
    those rows are divided (np.where divided them all: a "divide by zero" warning)."""
    broken = r > 0
    return float(np.max(r[broken] / (r[broken] - r_v))) if broken.any() else 0.0


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [LipOptimal]
