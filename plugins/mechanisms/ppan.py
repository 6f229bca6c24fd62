"""``ppan``: an adversarially learned mapping (privatizer against adversary), seeded.

Tripathy, Wang, Ishwar, "Privacy-preserving adversarial networks", Allerton 2019; Huang,
Kairouz, Chen, Sankar, Rajagopal, "Context-aware generative adversarial privacy", Entropy
2017. On a finite alphabet both players are tables: the privatizer's logits θ (n x n,
X = softmax of each column, X[i, j] = p(b̂_i | b_j)) and the adversary's logits φ
(|A| x n, q(a | b̂_i) = softmax of each column). The adversary minimises its log-loss
CE = -Σ p(a, b̂) ln q(a | b̂); the privatizer maximises it under the distortion budget,
minimising -CE + λ (E[d] - Δ). Against the best adversary (q = p(a | b̂)) CE = H(A | B̂),
so the game's value is I(A; B̂) = H(A) - CE. Gradients by hand (numpy, no autograd):

* ∂(-CE)/∂X[i, j] = Σ_a p(a, b_j) ln q(a | b̂_i), ∂E[d]/∂X[i, j] = p(b_j) d(b̂_i, b_j),
  through the column softmax: g_θ = X ⊙ (G - 1 (Xᵀ G)_diag);
* ∂CE/∂φ[a, i] = p(b̂_i) q(a | b̂_i) - p(a, b̂_i).

Each round takes ``adversary_steps`` Adam steps on φ, one Adam step on θ and a
multiplicative step on λ (λ grows while E[d] > Δ and shrinks otherwise). The last
mapping is repaired to meet the budget exactly: mixed with the least-distortion
deterministic mapping (each b to its cheapest b̂) just enough that E[d] <= Δ.

Data: ``source=records`` learns from the design users' records (their empirical joint
over the alphabet; users outside it are left out), ``source=joint`` from the problem's
prior; ``auto`` (the default) takes the records when the problem has them. The budget is
always checked under the problem's prior, the distribution every metric uses. Dense
n x n: alphabets above ``max_n`` are skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import privbench as pb
from privbench.protocol.checks import finite_float, one_of, positive_int
from privbench.protocol.feasibility import mix_into_budget

LN2 = math.log(2.0)


def column_softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(axis=0, keepdims=True))
    return z / z.sum(axis=0, keepdims=True)


@dataclass
class Adam:
    """Adam (Kingma and Ba, 2015) on one array."""

    lr: float
    shape: tuple[int, ...]
    b1: float = 0.9
    b2: float = 0.999

    def __post_init__(self) -> None:
        self.m = np.zeros(self.shape)
        self.v = np.zeros(self.shape)
        self.t = 0

    def step(self, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad * grad
        m_hat = self.m / (1 - self.b1**self.t)
        v_hat = self.v / (1 - self.b2**self.t)
        return self.lr * m_hat / (np.sqrt(v_hat) + 1e-12)


def adversary_gradient(P: np.ndarray, X: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """∂CE/∂φ: p(b̂) q(a|b̂) - p(a, b̂)."""
    joint_out = P @ X.T
    return joint_out.sum(axis=0)[None, :] * column_softmax(phi) - joint_out


def privatizer_gradient(P: np.ndarray, cost: np.ndarray, X: np.ndarray, phi: np.ndarray,
                        lam: float) -> np.ndarray:
    """∂(-CE + λ E[d])/∂θ through the column softmax; cost[i, j] = p(b_j) d(b̂_i, b_j)."""
    log_q = phi - np.log(np.exp(phi - phi.max(axis=0)).sum(axis=0)) - phi.max(axis=0)
    G = log_q.T @ P + lam * cost
    return X * (G - (X * G).sum(axis=0, keepdims=True))


def learning_joint(problem: pb.PrivacyProblem, source: str) -> tuple[np.ndarray, str]:
    """The joint the players learn from and where it came from ("joint" or "records")."""
    records = problem.records
    if source == "joint" or records is None or "private" not in records or "symbol" not in records:
        if source == "records":
            raise pb.ValidationError(f"ppan: source=records but {problem.name} has no records")
        return np.asarray(problem.joint), "joint"
    a = records["private"].to_numpy()
    b = records["symbol"].to_numpy()
    inside = b >= 0
    counts = np.zeros(problem.joint.shape)
    np.add.at(counts, (a[inside], b[inside]), 1.0)
    if counts.sum() <= 0:
        raise pb.ValidationError(f"ppan: no design user of {problem.name} is inside the alphabet")
    return counts / counts.sum(), "records"


class PPAN(pb.SizeLimited, pb.MappingMechanism):
    """Adversarially learned privatizer (PPAN / GAP) over the finite alphabet.

    :param iterations: the training rounds (an integer >= 1), each one privatizer step after
        the adversary's steps.
    :param lr: the Adam learning rate of both players (> 0), decayed along a cosine schedule
        to 2 % of it.
    :param adversary_steps: the adversary's Adam steps per round (an integer >= 1).
    :param lambda_lr: the step of the multiplicative update of the budget's multiplier λ
        (> 0): λ grows while E[d] > Δ and shrinks otherwise.
    :param source: what the players learn from: ``records`` (the design users' empirical
        joint), ``joint`` (the problem's prior) or ``auto`` (records when there are any).
    :param max_n: the largest alphabet n it accepts (the tables are dense n x n); a larger
        problem is skipped.
    """

    name = "ppan"
    citation = ('Tripathy, Wang, Ishwar, Privacy-preserving adversarial networks, Allerton 2019; '
                'Huang et al., generative adversarial privacy, 2017')
    randomized = True  # seeded: replicates differ
    description = "privatizer and adversary tables learned by alternating gradient steps (PPAN/GAP), seeded"
    test_parameters = {"iterations": [300], "source": ["auto", "joint"]}

    def __init__(self, iterations: int = 3000, lr: float = 0.05, adversary_steps: int = 1,
                 lambda_lr: float = 0.05, source: str = "auto", max_n: int = 1024) -> None:
        self.iterations = iterations
        self.lr = lr
        self.adversary_steps = adversary_steps
        self.lambda_lr = lambda_lr
        self.source = source
        self.max_n = max_n

    def check_params(self) -> None:
        positive_int("ppan: iterations", self.iterations)
        finite_float("ppan: lr", self.lr, low=0.0, strict_low=True)
        positive_int("ppan: adversary_steps", self.adversary_steps)
        finite_float("ppan: lambda_lr", self.lambda_lr, low=0.0, strict_low=True)
        one_of("ppan: source", self.source, ("auto", "joint", "records"))
        super().check_params()  # max_n

    def size_reason(self, n: int) -> str:
        """The tables are dense."""
        return "ppan learns dense n x n tables"

    def skip(self, problem: pb.PrivacyProblem) -> tuple[bool, str | None]:
        """The size limit, then a records source without records."""
        skip, reason = super().skip(problem)
        if skip:
            return skip, reason
        if self.source == "records" and problem.records is None:
            return True, "ppan with source=records needs the design users' records"
        return False, None

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        D = problem.distortion.to_dense(force=problem.n <= self.max_n)
        P, source = learning_joint(problem, self.source)
        nearest = np.zeros_like(D)
        nearest[np.argmin(D, axis=0), np.arange(problem.n)] = 1.0
        floor = float(problem.p_b @ (nearest * D).sum(axis=0))
        if floor > delta * (1 + 1e-12):
            raise pb.ValidationError(f"ppan: no mapping meets Δ = {delta:g}; the least distortion "
                                     f"any mapping has is {floor:g}")
        X, lam, ce = self.learn(P, D, delta)
        used = float(problem.p_b @ (X * D).sum(axis=0))
        X, theta = mix_into_budget(X, nearest, used, floor, delta)
        return self.result(X, multiplier=lam, repair_weight=theta, learned_distortion=used,
                           adversary_ce_bits=ce / LN2, source=source)

    def learn(self, P: np.ndarray, D: np.ndarray, delta: float) -> tuple[np.ndarray, float, float]:
        """Alternate adversary and privatizer steps; return (X, λ, the adversary's CE in nats)."""
        rng = np.random.default_rng(0 if self.context.seed is None else self.context.seed)
        n = P.shape[1]
        p_b = P.sum(axis=0)
        cost = D * p_b[None, :]
        theta = 2.0 * np.eye(n) + 0.01 * rng.standard_normal((n, n))
        phi = 0.01 * rng.standard_normal(P.shape)
        opt_theta, opt_phi = Adam(self.lr, theta.shape), Adam(self.lr, phi.shape)
        scale = max(float(np.sum(p_b * D.mean(axis=0))), 1e-12)  # a uniform mapping's E[d]
        lam = 1.0 / scale
        for it in range(self.iterations):
            decay = 0.5 * (1 + math.cos(math.pi * it / self.iterations))  # cosine schedule
            opt_theta.lr = opt_phi.lr = self.lr * (0.02 + 0.98 * decay)
            X = column_softmax(theta)
            for _ in range(self.adversary_steps):
                phi -= opt_phi.step(adversary_gradient(P, X, phi))
            theta -= opt_theta.step(privatizer_gradient(P, cost, X, phi, lam))
            used = float((cost * X).sum())
            lam *= math.exp(self.lambda_lr * float(np.clip((used - delta) / max(delta, 1e-3 * scale), -1, 1)))
        X = column_softmax(theta)
        joint_out = P @ X.T
        q = column_softmax(phi)
        ce = -float(np.sum(joint_out[joint_out > 0] * np.log(np.maximum(q[joint_out > 0], 1e-300))))
        return X, lam, ce


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [PPAN]
