"""``watchdog``: the information-theoretic privacy watchdog; Δ is read as ε (nats).

Hsu, Asoodeh, Calmon, "Information-theoretic privacy watchdogs", ISIT 2019; Sadeghi, Ding,
Rakotoarivelo, "On properties and optimization of information-theoretic privacy
watchdog", ITW 2020 (arXiv:2010.09367). A symbol b is high-risk when its log-lift
max_a |ln p(a|b) / p(a)| exceeds ε; the high-risk set S is randomised among itself by an
X-invariant randomisation, p(b̂ | b) = R(b̂) for b, b̂ in S, and every other symbol is
released unchanged. Symbols of zero mass have no lift and are released unchanged.

Every R on S gives the same leakage: an output in S is reached only from S, always with
the same R, so p(a | b̂) = p(a | S) for every b̂ in S. I(A; B̂) and the residual log-lift
max_a |ln p(a|S) / p(a)| (Sadeghi et al.'s bound, ``residual_lift`` in the stats, which may
still exceed ε) do not depend on R; only the distortion does. ``rule`` chooses R:
``uniform`` (1/|S|, the default), ``prior`` (p(b̂) / p(S)) or ``medoid`` (all of S to the
member of least expected distortion Σ_{b in S} p(b) d(b̂, b): the cheapest R).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench.protocol.checks import EPSILON, one_of

RULES = ("uniform", "prior", "medoid")


def log_lifts(joint: np.ndarray) -> np.ndarray:
    """max_a |ln p(a|b) / p(a)| per symbol b (nats); inf where p(a|b) = 0 < p(a); 0 where
    p(b) = 0 (a symbol nobody has cannot leak)."""
    p_b = joint.sum(axis=0)
    p_a = joint.sum(axis=1)
    rows = p_a > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = np.abs(np.log(joint[rows] / (p_a[rows, None] * p_b[None, :])))
    lift = np.where(p_b[None, :] > 0, lift, 0.0)
    return lift.max(axis=0) if lift.size else np.zeros(joint.shape[1])


def randomisation(problem: pb.PrivacyProblem, risky: np.ndarray, rule: str) -> np.ndarray:
    """R over the high-risk symbols ``risky`` (a pmf of length len(risky))."""
    if rule == "uniform":
        return np.full(risky.size, 1.0 / risky.size)
    weights = problem.p_b[risky]
    if rule == "prior":
        return weights / weights.sum()
    costs = np.empty(risky.size)
    step = max(1, 2**22 // max(risky.size, 1))
    for s in range(0, risky.size, step):
        costs[s:s + step] = problem.distortion.block(risky[s:s + step], risky) @ weights
    R = np.zeros(risky.size)
    R[int(np.argmin(costs))] = 1.0
    return R


class Watchdog(pb.MappingMechanism):
    """Privacy watchdog (Hsu, Asoodeh, Calmon, ISIT 2019): randomise the high-lift symbols.

    :param rule: how the high-risk set S is randomised among itself: ``uniform`` (1/|S|),
        ``prior`` (p(b̂) / p(S)) or ``medoid`` (all of S to its member of least expected
        distortion); the leakage is the same, only the distortion differs.
    """

    name = "watchdog"
    citation = 'Hsu, Asoodeh, Calmon, Information-theoretic privacy watchdogs, ISIT 2019'
    description = "privacy watchdog: symbols with log-lift > ε randomised among themselves (Δ read as ε)"
    delta_role = EPSILON
    respects_budget = False
    test_parameters = {"rule": list(RULES)}

    def __init__(self, rule: str = "uniform") -> None:
        self.rule = rule

    def check_params(self) -> None:
        one_of("watchdog: rule", self.rule, RULES)

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        n = problem.n
        lifts = log_lifts(problem.joint)
        risky = np.flatnonzero(lifts > delta)
        safe = np.setdiff1d(np.arange(n), risky)
        rows, cols, vals = [safe], [safe], [np.ones(safe.size)]
        residual = 0.0
        if risky.size:
            R = randomisation(problem, risky, self.rule)
            used = np.flatnonzero(R > 0)
            rows.append(np.repeat(risky[used], risky.size))
            cols.append(np.tile(risky, used.size))
            vals.append(np.repeat(R[used], risky.size))
            in_set = problem.joint[:, risky].sum(axis=1)
            residual = float(log_lifts(np.column_stack([in_set, problem.p_a - in_set]))[0])
        X = sp.csc_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n, n))
        finite = lifts[np.isfinite(lifts)]
        return self.result(X, epsilon=delta, rule=self.rule, randomised=int(risky.size),
                           randomised_mass=float(problem.p_b[risky].sum()),
                           residual_lift=residual if np.isfinite(residual) else None,
                           max_lift_before=float(finite.max()) if finite.size == n else None)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Watchdog]
