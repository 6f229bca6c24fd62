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
W(b̂|a) = 0: an infinite ε. The returned mapping is therefore repaired: mixed with a
mapping V that uses only the outputs B where X breaks a row, each of them with p(b̂) > 0,
and is perfectly private on each (so outside B every ratio is kept), by the least θ that
makes every row hold exactly, X' = (1 - θ) X + θ V (``repair_theta`` in the stats; its cost
in E[d] is at most θ (E_V[d] - E_X[d])). V is sparse (``_pp_pieces``: the all-ones row cut
into perfectly private pieces of a few public symbols each, dealt to B), so the repair
stays sparse at any n: sending every input uniformly to B took |B| · n entries (census with
every profile at ε = 1: 7,000 broken outputs, 65 M). Above ``EPSILON_SOLVED_MAX`` = 500 nats the LP is solved, and the
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
from privbench._plumbing.clock import cpu_seconds

from ._lp_colgen import Family, Problem, SparseLP
from ._lp_mapping import LPMappingMechanism, MappingLP
from ._pp_pieces import private_mixer

NOTIONS = ("lip", "ldp")
#: the largest ε the LP is solved at (nats); a larger ε gets the mapping of this one, which
#: meets it (see the module docstring)
EPSILON_SOLVED_MAX = 500.0
#: the repair aims this far inside ε >= 1 (relative): the runner's tolerance is 1e-9
REPAIR_MARGIN = 1e-11
#: LIP's small first master takes opposite-leaning partners (``SparseLP.partner_seed``) up
#: to this ε (nats), where the optimum is near perfect privacy. CPU per run with / without:
#: ε = 0.1 random Hamming n = 600 56 / 73 ms, census top 500 354 / 438 ms, synthetic m = 10
#: 6.0 / 5.8 s; above it synthetic m = 10 lost (ε = 0.3 4.5 / 3.6 s, 1: 12.7 / 2.6 s,
#: 4: 11.8 / 2.8 s) while random Hamming was even and census top 500 gained (0.3: 299 / 427).
#: LDP at ε = 0.1 likewise: 69 / 79 ms, 321 / 397 ms, synthetic m = 8 156 / 144 ms, m = 9
#: 758 / 785 ms
PARTNER_MAX_EPSILON = 0.2
#: the flow seed (``flow_seed``) up to this ε: near the perfect-privacy optimum it helps
#: (census top 5,000, CPU s plain → seeded at load 4-10: LIP ε = 1 35.4 → 20.9, LDP ε = 1
#: 101.5 → 25.7), at ε = 4 the optimum is near the nearest outputs and it does not (census
#: top 5,000 LIP 8.2 → 8.1; random Hamming n = 4,096 LDP 1.3 → 9.8, 3 rounds → 13)
SEED_MAX_EPSILON = 2.0
#: and from this many live columns: below it the seed cost more than it saved (synthetic
#: m = 10, n = 1,024: LIP ε = 1 32.9 s CPU and 366 rounds seeded against 2.6 s; random
#: Hamming n = 4,096, locked: LIP ε = 1 8.5 s against 1.4 s), above it it is what brings
#: census with every profile (n = 9,261) within minutes (LIP ε = 0.1 80 s, was > 630 s)
SEED_MIN_LIVE = 5000


def privacy_rows(W: np.ndarray, q: np.ndarray, shrink: float, notion: str) -> np.ndarray:
    """The rows r <= 0 of ε-LIP (or ε-LDP) per output, (R, n): W[a, i] = p(b̂_i | a),
    q[i] = p(b̂_i), shrink = e^{-ε}. LIP: e^{-ε} q - W(a) and, scaled by e^{-ε},
    e^{-ε} W(a) - q; LDP: e^{-ε} W(a) - W(a') for a != a'."""
    if notion == "lip":
        return np.vstack([shrink * q[None, :] - W, shrink * W - q[None, :]])
    k = W.shape[0]
    pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
    if not pairs:
        return np.zeros((0, W.shape[1]))
    return np.array([shrink * W[a] - W[b] for a, b in pairs])


def aim(epsilon: float) -> float:
    """The ε the repair aims at: relative margin inside ε >= 1; below ε = 1, where the
    runner's tolerance is absolute (1e-9 nats), half of it past ε, so ε = 0 does not force
    θ = 1 (V itself)."""
    return epsilon * (1.0 - REPAIR_MARGIN) if epsilon >= 1 else epsilon + 0.5e-9


def breaking_outputs(W: np.ndarray, q: np.ndarray, epsilon: float, notion: str) -> np.ndarray:
    """The outputs where X (channel W, output marginal q) breaks a row of :func:`aim`'s ε."""
    rows = privacy_rows(W, q, math.exp(-aim(epsilon)), notion)
    if rows.shape[0] == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero((rows > 0).any(axis=0) & (q > 0))


def least_theta(rows_x: np.ndarray, rows_v: np.ndarray) -> float:
    """The least θ in [0, 1] with (1 - θ) r(X) + θ r(V) <= 0 on every row (both (R, |B|)):
    each row is linear in the mapping. 1 when V does not meet a row X breaks (V itself)."""
    broken = rows_x > 0
    if not broken.any():
        return 0.0
    if (rows_v[broken] >= 0).any():
        return 1.0
    theta = _breaking_share(rows_x[broken], rows_v[broken])
    # a hair more than the least θ, so rounding cannot leave a row just outside
    return min(1.0, theta * (1.0 + 1e-6) + 1e-300)


def least_mix(W: np.ndarray, q: np.ndarray, W_v: np.ndarray, q_v: np.ndarray, epsilon: float,
              notion: str) -> float:
    """The least θ such that X' = (1 - θ) X + θ V meets ε (to :func:`aim`'s margin), where
    W, q are X's channel and output marginal and W_v, q_v V's, over the same outputs.

    V is perfectly private on every output it uses (W_v(b̂|a) = q_v(b̂)), so where q_v > 0
    each of its rows is (e^{-ε} - 1) q_v < 0, and where q_v = 0 (outputs X does not break)
    X's own ratios are kept: r(X') = (1 - θ) r(X) + θ r(V)."""
    shrink = math.exp(-aim(epsilon))
    return least_theta(privacy_rows(W, q, shrink, notion), privacy_rows(W_v, q_v, shrink, notion))


def repair(problem: pb.PrivacyProblem, X: sp.csc_array, epsilon: float, notion: str
           ) -> tuple[sp.csc_array, float]:
    """X mixed with a sparse perfectly private V on the outputs where X breaks ε, by the
    least θ that makes every row hold (:func:`least_mix`); (X, 0) when none breaks."""
    live_a, live = problem.p_a > 0, np.flatnonzero(problem.p_b > 0)
    cond = problem.joint[np.ix_(live_a, live)] / problem.p_a[live_a][:, None]
    p = problem.p_b[live]
    X_live = X[:, live]
    W, q = np.asarray(X_live @ cond.T).T, np.asarray(X_live @ p)
    outputs = breaking_outputs(W, q, epsilon, notion)
    if outputs.size == 0:
        return X, 0.0
    V = private_mixer(cond, p, live, problem.n, outputs)
    V_live = V[outputs][:, live]
    theta = least_mix(W[:, outputs], q[outputs], np.asarray(V_live @ cond.T).T,
                      np.asarray(V_live @ p), epsilon, notion)
    X = sp.csc_array((1.0 - theta) * X + theta * V)
    return sp.csc_array(X @ sp.diags_array(1.0 / X.sum(axis=0))), theta  # sums 1 to rounding


class LipOptimal(LPMappingMechanism):
    """Least E[d] under ε-LIP (or ε-LDP w.r.t. A with ``notion="ldp"``), Δ read as ε.

    :param notion: the constraint: ``lip`` (ε-local information privacy, |ln p(b̂|a) / p(b̂)|
        <= ε) or ``ldp`` (ε-local differential privacy with respect to A).
    :param max_n: the largest alphabet n it solves (the LP has n² variables); a larger problem
        is skipped; default: the solver's own (``colgen`` 10,000, ``full`` 1,200).
    """

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
        start = cpu_seconds()
        solved = min(float(delta), EPSILON_SOLVED_MAX)
        base = super().run(problem, solved)
        X, theta = repair(problem, sp.csc_array(base.mapping), solved, self.notion)
        stats = {k: v for k, v in base.stats.items() if k not in ("lip_epsilon_nats",
                                                                     "ldp_epsilon_nats")}
        stats.update(epsilon_solved=solved, repair_theta=theta)
        stats["solve_cpu_s"] = cpu_seconds() - start
        stats.update(self.measures(problem, None, X))  # type: ignore[arg-type]
        return self.result(X, **stats)

    def sparse_lp(self, data: Problem, delta: float) -> SparseLP:
        """The rows of :meth:`build` as per-output families; E[d] >= the nearest-output E[d].

        LIP leaves out the upper rows W(a) <= e^{ε} q that the lower rows of the other
        private values imply (:func:`implied_upper`): the same feasible set, so the same
        optimum and a valid bound, from a smaller master (random Hamming n = 600: 1,800
        rows instead of 3,000 at every ε). A perfectly private mapping meets every ε, so
        with |A| = 2 the first master is the perfect-privacy min-cost flow's support
        (``flow_seed``; at small ε the optimum is near it) from ``SEED_MIN_LIVE`` live
        columns, up to ε = ``SEED_MAX_EPSILON``; below, the first master (LIP and LDP) takes each column's
        opposite-leaning partners at ε <= ``PARTNER_MAX_EPSILON`` (``partner_seed``)."""
        shrink = math.exp(-delta)
        cond, p = data.cond, data.p[None, :]
        floor = data.least_distortion()
        seeded = delta <= SEED_MAX_EPSILON and data.m >= SEED_MIN_LIVE
        if self.notion == "lip":
            upper = ~implied_upper(data.joint.sum(axis=1), delta)
            families = [Family(cond - shrink * p, 0.0, np.inf)]
            if upper.any():
                families.append(Family(shrink * cond[upper] - p, -np.inf, 0.0))
            return SparseLP(families, "distortion", floor=floor, flow_seed=seeded,
                            partner_seed=delta <= PARTNER_MAX_EPSILON)
        k = cond.shape[0]
        coef = np.array([shrink * cond[a] - cond[b] for a in range(k) for b in range(k) if a != b])
        families = [Family(coef, -np.inf, 0.0)] if coef.size else []
        return SparseLP(families, "distortion", floor=floor, flow_seed=seeded,
                        partner_seed=delta <= PARTNER_MAX_EPSILON)

    def measures(self, problem: pb.PrivacyProblem, lp: MappingLP, X: np.ndarray
                 ) -> dict[str, Any]:
        return {"lip_epsilon_nats": pb.metrics.lip_epsilon(problem, X),
                "ldp_epsilon_nats": pb.metrics.ldp_epsilon_private(problem, X)}


def implied_upper(p_a: np.ndarray, epsilon: float) -> np.ndarray:
    """Which private values' upper LIP rows W(a) <= e^{ε} q the lower rows imply.

    Σ_a p(a) W(b̂|a) = p(b̂), so the lower rows of the others, W(a') >= e^{-ε} q, give
    p(a) W(a) <= (1 - e^{-ε} (1 - p(a))) q, which is <= e^{ε} q exactly when
    p(a) >= 1 / (1 + e^{ε}) (a hair of margin against rounding)."""
    p_a = np.asarray(p_a, dtype=float)
    return p_a * (1.0 + math.exp(epsilon)) >= 1.0 + 1e-12


def _breaking_share(r: np.ndarray, r_v: float | np.ndarray) -> float:
    """max over the rows X breaks (r > 0) of r / (r - r_v); 0 when it breaks none. Only
    those rows are divided (np.where divided them all: a "divide by zero" warning)."""
    broken = r > 0
    if not broken.any():
        return 0.0
    r_v = np.broadcast_to(np.asarray(r_v, dtype=float), r.shape)[broken]
    return float(np.max(r[broken] / (r[broken] - r_v)))


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [LipOptimal]
