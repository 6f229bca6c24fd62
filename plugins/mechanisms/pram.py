"""``pram``: invariant PRAM per public attribute, as sdcMicro applies it; Δ unused.

Templ, Kowarik, Meindl, "Statistical disclosure control for micro-data using the R package
sdcMicro", JSS 67(4), 2015; the construction is sdcMicro's ``pram`` (R/pram.R,
``calcTransitionMatrix``), per attribute with L levels and level frequencies p:

1. P: diagonal entries d_i drawn uniformly from [pd, 1] (seeded), the rest of row i
   (1 - d_i) / (L - 1); P[i, k] = p(released k | original i);
2. Q[k, j] = P[j, k] p_j / Σ_l p_l P[l, k] (the backward probabilities);
3. R = P Q is invariant (p R = p); the released matrix is Rs = α R + (1 - α) I.

``pd`` is the least diagonal entry of P, ``alpha`` the amount of perturbation (sdcMicro's
defaults: 0.8 and 0.5). The level frequencies are those of the design users' records
(``coding.record_codes``: sdcMicro runs on the microdata), or the prior's marginals when
there are no records. Attributes are perturbed independently, so a profile's transition
is the Kronecker product of the attributes' matrices: X[i, j] = Π_k Rs_k[c_jk, c_ik].

The alphabet is only the top-k profiles: a perturbed profile may fall outside it. The
mapping conditions on landing inside (a user whose released profile is outside the
alphabet draws again), so each column is renormalised over the alphabet; the mass that
fell outside is reported (``outside_mass``: p(b)-weighted mean; ``outside_mass_max``).
The mapping is dense: alphabets above ``max_n`` are skipped. Needs the ``coding`` part.
"""

from __future__ import annotations

import numpy as np

import privbench as pb
from privbench.protocol.checks import UNUSED, finite_float


def invariant_matrix(freq: np.ndarray, diagonal: np.ndarray, alpha: float) -> np.ndarray:
    """sdcMicro's invariant transition matrix Rs (rows: original level, columns: released).

    :param freq: level frequencies p (summing to one).
    :param diagonal: the diagonal d_i of P, one per level (drawn from [pd, 1]).
    """
    L = freq.size
    if L == 1:
        return np.ones((1, 1))
    P = np.repeat(((1.0 - diagonal) / (L - 1))[:, None], L, axis=1)
    np.fill_diagonal(P, diagonal)
    reach = freq @ P  # Σ_l p_l P[l, k]
    Q = np.eye(L)  # a released level nobody reaches: its row of Q is never used
    hit = reach > 0
    Q[hit] = (P[:, hit] * freq[:, None]).T / reach[hit, None]
    R = P @ Q
    return alpha * R + (1.0 - alpha) * np.eye(L)


def attribute_levels(coding: pb.ProfileCoding, p_b: np.ndarray, k: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(level of each alphabet profile, frequency of each level) for attribute k."""
    profile = np.asarray(coding.profile_codes)[:, k]
    records = np.asarray(coding.record_codes)
    values = records[:, k] if records.shape[0] else np.empty(0, dtype=profile.dtype)
    levels = np.unique(np.concatenate([profile, values]))
    index = np.searchsorted(levels, profile)
    if values.size:
        freq = np.bincount(np.searchsorted(levels, values), minlength=levels.size).astype(float)
    else:
        freq = np.bincount(index, weights=p_b, minlength=levels.size)
    return index, freq / freq.sum()


class Pram(pb.SizeLimited, pb.MappingMechanism):
    """Invariant PRAM (sdcMicro; Templ, Kowarik, Meindl, JSS 2015) per attribute, Kronecker-combined.

    :param pd: the least diagonal entry of each attribute's transition matrix P, in [0, 1]:
        the diagonal is drawn uniformly from [pd, 1] (sdcMicro's default 0.8).
    :param alpha: the amount of perturbation, in [0, 1]: the released matrix is
        α R + (1 - α) I (0 keeps every profile; sdcMicro's default 0.5).
    :param max_n: the largest alphabet n it accepts (the mapping is dense n x n); a larger
        problem is skipped.
    """

    name = "pram"
    citation = ('Gouweleeuw, Kooiman, Willenborg, de Wolf, Post randomisation for statistical '
                'disclosure control, J. Off. Stat. 1998; Templ, Kowarik, Meindl, sdcMicro, JSS 2015')
    randomized = True  # seeded: replicates differ
    description = "invariant PRAM per public attribute (sdcMicro's pram: pd, alpha), seeded; Δ unused"
    delta_role = UNUSED
    respects_budget = False
    needs = ("coding",)
    test_parameters = {"pd": [0.8], "alpha": [0.5, 1.0]}

    def __init__(self, pd: float = 0.8, alpha: float = 0.5, max_n: int = 4096) -> None:
        self.pd = pd
        self.alpha = alpha
        self.max_n = max_n

    def check_params(self) -> None:
        finite_float("pram: pd", self.pd, low=0.0, high=1.0)
        finite_float("pram: alpha", self.alpha, low=0.0, high=1.0)
        super().check_params()  # max_n

    def size_reason(self, n: int) -> str:
        """The mapping is dense."""
        return "pram builds a dense n x n mapping"

    def skip(self, problem: pb.PrivacyProblem) -> tuple[bool, str | None]:
        """Without the profile coding there is nothing to randomise; then the size limit."""
        if problem.coding is None:
            return True, "pram needs the profile coding (the 'coding' part); this data set has none"
        return super().skip(problem)

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        coding = problem.coding
        if coding is None:
            raise pb.ValidationError("pram needs the profile coding (the 'coding' part)")
        rng = np.random.default_rng(0 if self.context.seed is None else self.context.seed)
        X = np.ones((problem.n, problem.n))
        diagonals = []
        for k in range(np.asarray(coding.profile_codes).shape[1]):
            index, freq = attribute_levels(coding, problem.p_b, k)
            diagonal = rng.uniform(self.pd, 1.0, size=freq.size)  # sdcMicro: runif(L, pd, 1)
            diagonals.append(diagonal.tolist())
            Rs = invariant_matrix(freq, diagonal, float(self.alpha))
            X *= Rs[np.ix_(index, index)].T  # X[i, j] *= Rs[level of j, level of i]
        inside = X.sum(axis=0)
        stuck = np.flatnonzero(inside <= 0)  # every way out leaves the alphabet: keep b
        X[stuck, stuck], inside[stuck] = 1.0, 1.0
        X /= inside[None, :]
        outside = 1.0 - inside
        return self.result(X, outside_mass=float(problem.p_b @ outside),
                           outside_mass_max=float(outside.max()), diagonals=diagonals)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Pram]
