"""Which users a row-based data set designs the prior from, and which it holds out.

A deployer estimates p(A, B) from a sample and applies the mapping to new users. The
row-based adapters (census, movielens, politics_tv and its surrogate, csv) therefore
accept, besides their own parameters:

``holdout=F`` (0 <= F < 1)
    hold out a random F of the users, stratified by A (round(F * count) of every
    private value); the prior, the alphabet and ``top_k`` come from the other users
    only (the *design* users) and the held-out users become the problem's
    :class:`~privbench.protocol.parts.Holdout` part.
``holdout_seed=N``
    the seed of that split (and of ``design_fraction``'s draw).
``design_fraction=F`` (0 < F <= 1)
    design from a random F of the design users only, stratified by A, at least one user
    per private value; the held-out users stay the same, and for one seed the design of
    a smaller F is a subset of the design of a larger one (learning curves).
``prior=empirical|smoothed`` and ``smoothing=ALPHA``
    the design prior is the empirical joint of the design users, or that joint with
    ALPHA pseudo-users added to every (a, b) cell of the alphabet (additive smoothing).

The rule for held-out users whose profile is not in the design alphabet is the rule
the data sets already apply to design users outside ``top_k``: they are outside the
problem (``symbol = -1``), so they count in neither the held-out leakage nor the
held-out distortion, and how many there were is reported (``holdout_outside``).
With the defaults every user is a design user, in file order, and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb
from privbench.protocol.checks import finite_float, positive_int

from ._alphabet import Alphabet, build_alphabet

if TYPE_CHECKING:
    import pandas as pd

#: the parameters, with their defaults (each row-based adapter's ``__init__`` takes them)
DEFAULTS: dict[str, Any] = {"holdout": 0.0, "holdout_seed": 0, "design_fraction": 1.0,
                            "prior": "empirical", "smoothing": 1.0}
PRIORS = ("empirical", "smoothed")


@dataclass(frozen=True)
class RowSampling:
    """The validated sampling parameters of one data set (see the module docstring)."""

    holdout: float = 0.0
    holdout_seed: int = 0
    design_fraction: float = 1.0
    prior: str = "empirical"
    smoothing: float = 1.0

    @classmethod
    def of(cls, adapter: Any) -> RowSampling:
        """Read and check the adapter's sampling parameters; a bad value is a
        ValidationError naming the data set and the parameter."""
        name = getattr(adapter, "name", "dataset")
        values = {k: getattr(adapter, k, v) for k, v in DEFAULTS.items()}
        holdout = finite_float(f"{name}: holdout", values["holdout"])
        if not 0.0 <= holdout < 1.0:
            raise pb.ValidationError(f"{name}: holdout must be a fraction in [0, 1) (the share "
                                     f"of users held out); got {values['holdout']!r}")
        fraction = finite_float(f"{name}: design_fraction", values["design_fraction"])
        if not 0.0 < fraction <= 1.0:
            raise pb.ValidationError(f"{name}: design_fraction must be in (0, 1] (the share of "
                                     f"design users used); got {values['design_fraction']!r}")
        seed = positive_int(f"{name}: holdout_seed", values["holdout_seed"], minimum=0)
        prior = values["prior"]
        text = prior.strip().lower() if isinstance(prior, str) else prior
        if text not in PRIORS:
            raise pb.ValidationError(f"{name}: prior must be one of {', '.join(PRIORS)}; "
                                     f"got {prior!r}")
        smoothing = finite_float(f"{name}: smoothing", values["smoothing"])
        if smoothing <= 0:
            raise pb.ValidationError(f"{name}: smoothing must be > 0 (pseudo-users per cell "
                                     f"of the prior); got {values['smoothing']!r}")
        return cls(holdout, int(seed), fraction, text, smoothing)

    def label(self) -> str:
        """``,holdout=0.3,holdout_seed=1`` ...: the non-default parts, for problem names."""
        parts = []
        if self.holdout > 0:
            parts += [f"holdout={self.holdout:g}", f"holdout_seed={self.holdout_seed}"]
        if self.design_fraction < 1:
            parts.append(f"design_fraction={self.design_fraction:g}")
            if self.holdout == 0:
                parts.append(f"holdout_seed={self.holdout_seed}")
        if self.prior != "empirical":
            parts.append(f"prior={self.prior}({self.smoothing:g})")
        return "".join(f",{p}" for p in parts)

    def split(self, private: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(design rows, held-out rows), sorted row indices, stratified by A.

        Every private value's rows are shuffled once by ``holdout_seed``; the first
        round(holdout * count) are held out, and the design keeps the first
        max(1, round(design_fraction * rest)) of the rest (so designs are nested).
        """
        private = np.asarray(private)
        if self.holdout == 0 and self.design_fraction == 1:
            return np.arange(private.size), np.arange(0)
        rng = np.random.default_rng([self.holdout_seed, 20261125])
        design, held = [], []
        for value in np.unique(private):
            rows = rng.permutation(np.flatnonzero(private == value))
            n_held = int(round(self.holdout * rows.size))
            rest = rows[n_held:]
            keep = max(1, int(round(self.design_fraction * rest.size))) if rest.size else 0
            held.append(rows[:n_held])
            design.append(rest[:keep])
        return np.sort(np.concatenate(design)), np.sort(np.concatenate(held))

    def prior_joint(self, counts: np.ndarray) -> np.ndarray:
        """The design prior (unnormalised): counts, plus ``smoothing`` per cell."""
        joint = counts.astype(float)
        return joint + self.smoothing if self.prior == "smoothed" else joint


@dataclass(frozen=True)
class SampledAlphabet:
    """The alphabet of the design users, and where every user went.

    ``design``/``held`` are row indices into the data set's users; ``held_symbol`` the
    design symbol of each held-out user (-1 outside the design alphabet).
    """

    sampling: RowSampling
    alphabet: Alphabet
    joint: np.ndarray
    design: np.ndarray
    held: np.ndarray
    held_symbol: np.ndarray
    n_users: int

    def holdout_part(self, rows: pd.DataFrame, private: np.ndarray,
                     features: np.ndarray | None) -> pb.Holdout | None:
        """The held-out users as a problem part (None without a holdout).

        :param rows: every user's record columns (the held-out rows are taken from it).
        :param private: every user's private value index.
        :param features: every user's feature rows, or None.
        """
        if self.held.size == 0:
            return None
        records = rows.iloc[self.held].reset_index(drop=True)
        records["private"] = private[self.held]
        records["symbol"] = self.held_symbol
        inside = self.held_symbol >= 0
        counts = np.zeros_like(self.alphabet.counts, dtype=float)
        np.add.at(counts, (private[self.held][inside], self.held_symbol[inside]), 1.0)
        return pb.Holdout(joint=counts, records=records,
                          features=None if features is None else features[self.held])

    def meta(self) -> dict[str, Any]:
        """What the problem's ``meta`` records about the sampling (empty by default)."""
        s = self.sampling
        if self.held.size == 0 and s.design_fraction == 1 and s.prior == "empirical":
            return {}
        out: dict[str, Any] = {
            "holdout": s.holdout, "holdout_seed": s.holdout_seed,
            "design_fraction": s.design_fraction, "prior": s.prior,
            "n_design_users": int(self.design.size), "n_holdout_users": int(self.held.size),
            "holdout_outside": int((self.held_symbol < 0).sum()),
        }
        if s.prior == "smoothed":
            out["smoothing"] = s.smoothing
        return out


def _locate(alphabet_codes: np.ndarray, profiles: np.ndarray) -> np.ndarray:
    """The symbol of each profile in the alphabet, -1 when it is not there."""
    if profiles.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if alphabet_codes.shape[1] == 0:
        return np.zeros(profiles.shape[0], dtype=np.int64)
    stacked = np.vstack([alphabet_codes, profiles]).astype(np.int64)
    _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = alphabet_codes.shape[0]
    symbol_of = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
    symbol_of[inverse[:n]] = np.arange(n)
    return symbol_of[inverse[n:]]


def sample_alphabet(codes: np.ndarray, private: np.ndarray, n_private: int,
                    top_k: int | None, sampling: RowSampling, *, dataset: str) -> SampledAlphabet:
    """Split the users, build the alphabet from the design users, and place the
    held-out users in it (see the module docstring)."""
    codes = np.asarray(codes)
    private = np.asarray(private, dtype=np.int64)
    design, held = sampling.split(private)
    alphabet = build_alphabet(codes[design], private[design], n_private, top_k, dataset=dataset)
    return SampledAlphabet(
        sampling=sampling, alphabet=alphabet, joint=sampling.prior_joint(alphabet.counts),
        design=design, held=held, held_symbol=_locate(alphabet.codes, codes[held]),
        n_users=int(private.size))


class RowSampledMixin:
    """The sampling parameters, ``check_params`` and ``sampling()`` for the row-based
    adapters: their ``__init__`` takes ``**sampling`` and calls ``super().__init__(**sampling)``.

    Parameters
    ----------
    holdout : hold out this fraction of the users (0 <= F < 1), stratified by A; the
        prior and the alphabet come from the others.
    holdout_seed : the seed of the held-out split and of ``design_fraction``'s draw.
    design_fraction : design from this fraction of the design users only (0 < F <= 1).
    prior : ``empirical`` (the design users' joint) or ``smoothed`` (plus ``smoothing``
        pseudo-users in every cell).
    smoothing : pseudo-users added to every (a, b) cell when ``prior=smoothed``.
    """

    def __init__(self, *, holdout: float = 0.0, holdout_seed: int = 0,
                 design_fraction: float = 1.0, prior: str = "empirical",
                 smoothing: float = 1.0) -> None:
        self.holdout = holdout
        self.holdout_seed = holdout_seed
        self.design_fraction = design_fraction
        self.prior = prior
        self.smoothing = smoothing

    def sampling(self) -> RowSampling:
        return RowSampling.of(self)

    def check_params(self) -> None:
        RowSampling.of(self)
        super().check_params()  # type: ignore[misc]
