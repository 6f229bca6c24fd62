"""``mondrian``: k-anonymity by Mondrian generalisation of the coded profiles; Δ unused.

LeFevre, DeWitt, Ramakrishnan, "Mondrian multidimensional k-anonymity", ICDE 2006: strict
multidimensional partitioning. A partition of the alphabet's profiles is cut at the
median (weighted by users) of one attribute: profiles with a code <= the median go left,
the rest right; a cut is allowable when both sides keep >= k users. The attribute tried
first is the one of widest normalised range (the partition's code range over the whole
alphabet's), then the next widest; a partition without an allowable cut is a cell.
Codes are taken as ordered (a nominal attribute is ordered by its code). When the median
is the largest code present, the cut is made just below it, so both sides are non-empty.

Users: the design users' records inside the alphabet (``records.symbol``) count toward
each profile; without records, p(b) times ``users``. Each profile is then released as its
cell: as a mapping, ``release=uniform`` draws uniformly among the cell's profiles (the
default), ``release=prior`` draws from the cell's profiles in proportion to p(b). Either
way B̂ tells only the cell, so I(A; B̂) = I(A; cell). Profiles of the cell's box that are
not in the alphabet are not released. Needs the ``coding`` part.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench.protocol.checks import UNUSED, finite_float, one_of, positive_int


def median_cut(values: np.ndarray, counts: np.ndarray) -> float | None:
    """The weighted median of ``values`` (the largest value below it when the median is the
    largest value), or None when there is one value only."""
    levels = np.unique(values)
    if levels.size < 2:
        return None
    per_level = np.bincount(np.searchsorted(levels, values), weights=counts, minlength=levels.size)
    at = int(np.searchsorted(np.cumsum(per_level), per_level.sum() / 2.0))
    at = min(at, levels.size - 2)
    return float(levels[at])


def best_cut(codes: np.ndarray, counts: np.ndarray, span: np.ndarray, k: float
             ) -> np.ndarray | None:
    """The left side (a mask) of the first allowable median cut, widest dimension first."""
    width = (codes.max(axis=0) - codes.min(axis=0)) / span
    for dim in np.argsort(-width, kind="stable"):
        if width[dim] <= 0:
            break
        cut = median_cut(codes[:, dim], counts)
        if cut is None:
            continue
        left = codes[:, dim] <= cut
        if counts[left].sum() >= k and counts[~left].sum() >= k:
            return left
    return None


def mondrian_cells(codes: np.ndarray, counts: np.ndarray, k: float) -> list[np.ndarray]:
    """Strict Mondrian partition of the profiles (rows of ``codes``): a list of index arrays."""
    codes = np.asarray(codes, dtype=float)
    span = codes.max(axis=0) - codes.min(axis=0)
    span[span <= 0] = 1.0
    cells, stack = [], [np.arange(codes.shape[0])]
    while stack:
        idx = stack.pop()
        left = best_cut(codes[idx], counts[idx], span, k)
        if left is None:
            cells.append(idx)
        else:
            stack.extend([idx[~left], idx[left]])
    return sorted(cells, key=lambda cell: int(cell.min()))


class Mondrian(pb.MappingMechanism):
    """Mondrian k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006) on coded profiles.

    :param k: the least number of users per cell (an integer >= 1): a median cut is made only
        when both sides keep at least k.
    :param release: how a profile is released within its cell: ``uniform`` (each of the cell's
        profiles equally likely) or ``prior`` (in proportion to p(b)).
    :param users: without records, the number of users N the prior stands for (p(b) x N per
        profile; >= 0); ignored when the data set has records.
    """

    name = "mondrian"
    citation = 'LeFevre, DeWitt, Ramakrishnan, Mondrian multidimensional k-anonymity, ICDE 2006'
    description = "k-anonymity by strict multidimensional Mondrian cells of the profiles; Δ unused"
    delta_role = UNUSED
    respects_budget = False
    needs = ("coding",)
    test_parameters = {"k": [2, 50], "release": ["uniform", "prior"]}

    def __init__(self, k: int = 10, release: str = "uniform", users: float = 0.0) -> None:
        self.k = k
        self.release = release
        self.users = users

    def check_params(self) -> None:
        positive_int("mondrian: k", self.k)
        one_of("mondrian: release", self.release, ("uniform", "prior"))
        finite_float("mondrian: users", self.users, low=0.0)

    def skip(self, problem: pb.PrivacyProblem) -> tuple[bool, str | None]:
        if problem.coding is None:
            return True, "mondrian needs the profile coding (the 'coding' part); this data set has none"
        if problem.records is None and not self.users:
            return True, "mondrian counts users per profile: it needs records or users=N"
        return False, None

    def user_counts(self, problem: pb.PrivacyProblem) -> np.ndarray:
        if problem.records is not None:
            symbol = problem.records["symbol"].to_numpy()
            return np.bincount(symbol[symbol >= 0], minlength=problem.n).astype(float)
        return problem.p_b * float(self.users)

    def promises(self, delta: float) -> dict[str, float]:
        """k-anonymity, checked by the runner on the returned mapping's cells: >= k users
        of the records per cell, or >= k/N of the prior with ``users=N`` and no records."""
        if getattr(self, "counted_records_", True):
            return {"smallest_cell_users": float(self.k)}
        return {"smallest_cell_mass": float(self.k) / float(self.users)}

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        self.counted_records_ = problem.records is not None
        skip, reason = self.skip(problem)
        if skip:
            raise pb.ValidationError(reason)
        counts = self.user_counts(problem)
        cells = mondrian_cells(np.asarray(problem.coding.profile_codes), counts, float(self.k))
        rows, cols, vals = [], [], []
        for cell in cells:
            weights = problem.p_b[cell] if self.release == "prior" else np.ones(cell.size)
            if weights.sum() <= 0:
                weights = np.ones(cell.size)
            rows.append(np.repeat(cell, cell.size))
            cols.append(np.tile(cell, cell.size))
            vals.append(np.repeat(weights / weights.sum(), cell.size))
        n = problem.n
        X = sp.csc_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
        sizes = np.array([counts[cell].sum() for cell in cells])
        identity = len(cells) == n  # every profile its own cell: nothing generalised
        note = (f"the identity: every profile already has >= k = {self.k:g} users, so no cell "
                "is generalised (raise k)") if identity else ""
        return self.result(X, cells=len(cells), users=float(counts.sum()), is_identity=identity,
                           note=note, smallest_cell_users=float(sizes.min()),
                           largest_cell_profiles=max(c.size for c in cells))


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [Mondrian]
