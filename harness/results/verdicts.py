"""The words ``compare`` puts on a difference, and the rules behind them (docs/error-bars.md).

A difference between two runs' values of one output gets exactly one of five verdicts, so
that a reader can grep them:

* ``significant``: its 95 % interval (paired bootstrap, or over replicates) lies beyond
  the output's *resolution* on one side, and so does the estimate;
* ``equal within resolution``: the interval lies inside ± the resolution;
* ``too few users to tell``: fewer than :data:`MIN_USERS` users behind either run, or more
  than :data:`MAX_ZERO_SHARE` of the paired resampled differences are 0 (to the numeric
  floor) while the difference itself is beyond the resolution: the bootstrap
  distribution is then too discrete for a 95 % statement (the percentile that decides
  sits on the atom at 0);
* ``identical across replicates``: both runs are replicates (several seeds) that agree to
  rounding and no paired bootstrap exists: the seeds carry no spread to test against;
* ``not distinguishable``: anything else (the interval reaches inside the resolution).

The resolution of a difference (:func:`resolution`) is the largest of: a numeric floor,
:data:`REL_FLOOR` of the larger value plus :data:`ABS_FLOOR` (no mechanism in privbench
resolves a leakage to a millionth: LP solvers meet their rows to 1e-7-1e-9, the runner's
budget test allows 1e-9 relative, and resampled values carry 1e-17 rounding); the
certified gaps (``gap_bits``) of I(A; B̂) when *both* runs carry one (both are then within
their gap of the same optimum); the less private run's own certified gap when the other
run's point lies within its budget (the optimum there is at most the other run's value, so
the excess is at most the gap: ``v_worse <= optimum + gap <= v_other + gap``); the LP
solvers' relative gaps (``lp_gap``) when both runs carry one; and the user's practical
floor (``compare --min-diff``).

Two runs whose own 95 % intervals are both [0, 0] for a leakage (each leaks nothing
detectable on this sample: a mapping fitted to these very users) are ``not
distinguishable``, whatever their paired interval says: at the boundary the bias
correction extrapolates from resamples on which both leak more than on the sample, by
amounts that differ between the mappings (census top 50 at Δ = 1.2: ``optimal`` 1.5e-11
bits and ``perfect_privacy`` 7e-17, paired interval [1.1e-4, 9.9e-4]).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privbench.protocol.outputs import outputs_of

if TYPE_CHECKING:
    import pandas as pd

#: the five verdict words (docs/cli.md, compare: a reader can grep them)
SIGNIFICANT = "significant"
NOT_DISTINGUISHABLE = "not distinguishable"
EQUAL = "equal within resolution"
TOO_FEW_USERS = "too few users to tell"
IDENTICAL = "identical across replicates"
#: part of a resolution's reason when the certified gaps set it
WITHIN_GAP = "within the certified gaps"

#: numeric floor of a difference: relative to the larger |value|, plus an absolute floor
REL_FLOOR = 1e-6
ABS_FLOOR = 1e-12
#: below this many users behind a run, no verdict on a paired bootstrap
MIN_USERS = 20
#: more paired resampled differences than this share at 0: too discrete to tell
MAX_ZERO_SHARE = 0.025


@dataclass(frozen=True)
class Resolution:
    """The least difference of one output that counts, and what set it."""

    floor: float
    why: str
    #: the numeric floor alone: a resampled difference within it is 0 (rounding)
    numeric: float = ABS_FLOOR


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def numeric_floor(*values: float) -> float:
    """REL_FLOOR of the largest finite |value| plus ABS_FLOOR: rounding, not a difference."""
    finite = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v))]
    return REL_FLOOR * max(finite, default=0.0) + ABS_FLOOR


def resolution(values: tuple[float, float], *, gaps: tuple[Any, Any] = (None, None),
               lp_gaps: tuple[Any, Any] = (None, None), min_diff: float = 0.0,
               worse_gap: Any = None) -> Resolution:
    """The resolution of a difference between two runs (see the module doc).

    :param values: the two runs' values of the output;
    :param gaps: their certified gaps in the output's unit (``gap_bits`` for ``mi_bits``,
        None otherwise); used only when both are known;
    :param lp_gaps: their LP solvers' relative gaps (``metrics.lp_gap``); both or neither;
    :param min_diff: the user's practical floor (``compare --min-diff``), in the unit;
    :param worse_gap: the certified gap of the less private run, when the other run's
        point lies within that run's budget (its excess is then at most the gap; plus the
        numeric floor, for the rounding of the bound itself).
    """
    floor = numeric_floor(*values)
    parts = [(floor, f"numeric floor, {REL_FLOOR:g} of the value")]
    g = [_number(x) for x in gaps]
    if all(x is not None for x in g):
        parts.append((max(g), f"{WITHIN_GAP}, {max(g):.3g}"))  # type: ignore[type-var]
    own = _number(worse_gap)
    if own is not None:
        parts.append((own + floor, f"{WITHIN_GAP}: the less private run's, {own:.3g}, and "
                                   "the other run's point is within its budget"))
    lp = [_number(x) for x in lp_gaps]
    if all(x is not None for x in lp):
        scale = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
        parts.append((max(lp) * scale, f"the LP solvers' relative gap {max(lp):.2g}"))  # type: ignore[type-var]
    if min_diff > 0:
        parts.append((float(min_diff), f"--min-diff {min_diff:g}"))
    best = max(parts, key=lambda p: p[0])
    return Resolution(best[0], best[1], floor)


def is_noise(sd: Any, mean: Any) -> bool:
    """A replicate standard deviation that is rounding (<= the numeric floor of the mean):
    identical replicates computed in another order differ by ~1e-17."""
    s = _number(sd)
    m = _number(mean)
    return s is None or s <= numeric_floor(m if m is not None else 0.0)


def paired_samples(boot_a: Mapping[str, Any] | None, boot_b: Mapping[str, Any] | None,
                   output: str) -> np.ndarray | None:
    """The resample-by-resample differences a - b of ``output`` (``metrics.bootstrap`` of two
    runs drawn on the same resamples), or None."""
    if not isinstance(boot_a, Mapping) or not isinstance(boot_b, Mapping):
        return None
    if boot_a.get("key") is None or boot_a.get("key") != boot_b.get("key"):
        return None
    va = (boot_a.get("samples") or {}).get(output)
    vb = (boot_b.get("samples") or {}).get(output)
    if not va or not vb or len(va) != len(vb):
        return None
    return np.asarray(va, dtype=float) - np.asarray(vb, dtype=float)


def users_of(boot: Mapping[str, Any] | None) -> int | None:
    """How many users a run's bootstrap resampled (None: not said)."""
    value = boot.get("users") if isinstance(boot, Mapping) else None
    return int(value) if _number(value) is not None else None


@dataclass(frozen=True)
class Verdict:
    """One verdict: its ``word`` (one of the five), the direction when significant
    (``better``: a is more private than b) and a short reason."""

    word: str
    better: bool | None = None
    reason: str = ""

    def text(self) -> str:
        """'significant, more private', 'equal within resolution (...)', ..."""
        if self.word == SIGNIFICANT:
            return f"{SIGNIFICANT}, {'more' if self.better else 'less'} private"
        if self.word == NOT_DISTINGUISHABLE and not self.reason:
            return f"{NOT_DISTINGUISHABLE} on this sample"
        return f"{self.word} ({self.reason})" if self.reason else self.word


#: the reason given when both runs' own intervals are [0, 0] (see the module doc)
BOTH_AT_ZERO = ("both runs' own 95 % intervals are [0, 0]: neither leaks anything detectable "
                "on this sample, and the paired interval is not defined at that boundary")


def decide(estimate: float, low: float, high: float, res: Resolution, *, higher: bool = False,
           users: int | None = None, diffs: np.ndarray | None = None,
           both_at_zero: bool = False) -> Verdict:
    """The verdict on a difference a - b with 95 % interval [low, high] (see the module doc).

    :param higher: the output is more private when higher;
    :param users: the fewer users behind the two runs (paired bootstrap only);
    :param diffs: the paired resampled differences (for the share at 0);
    :param both_at_zero: both runs' own intervals are [0, 0] (a leakage at its boundary).
    """
    floor = res.floor
    if users is not None and users < MIN_USERS:
        return Verdict(TOO_FEW_USERS, reason=f"{users} users < {MIN_USERS}")
    if -floor <= low and high <= floor:
        return Verdict(EQUAL, reason=f"|difference| <= {floor:.3g}: {res.why}")
    if both_at_zero:
        return Verdict(NOT_DISTINGUISHABLE, reason=BOTH_AT_ZERO)
    if diffs is not None and diffs.size and abs(estimate) > floor:
        share = float(np.mean(np.abs(diffs) <= res.numeric))
        if share > MAX_ZERO_SHARE:
            return Verdict(TOO_FEW_USERS, reason=f"{100 * share:.3g} % of the resampled "
                                                 f"differences are 0 (> {100 * MAX_ZERO_SHARE:g} %)")
    if abs(estimate) > floor and (low > floor or high < -floor):
        a_lower = high < -floor
        return Verdict(SIGNIFICANT, better=a_lower != higher)
    if abs(estimate) <= floor:
        return Verdict(NOT_DISTINGUISHABLE, reason=f"estimate within the resolution "
                                                   f"{floor:.3g}, interval not")
    return Verdict(NOT_DISTINGUISHABLE)


def certified_gap(runs: pd.DataFrame, label: str) -> float | None:
    """The largest certified gap (bits) of ``label``'s ok runs when every one of them is
    certified (a finite ``gap_bits`` and not ``converged = false``); else None."""
    import pandas as pd

    mine = runs[(runs["label"] == label) & (runs["status"] == "ok")]
    gaps = pd.to_numeric(mine["gap_bits"], errors="coerce") if "gap_bits" in mine else None
    if mine.empty or gaps is None or gaps.isna().any():
        return None
    if outputs_of(mine, "converged").map(lambda v: v is False).any():
        return None
    return float(gaps.max())


def below_chord(ratio: float | None, ref_gap: float | None) -> bool:
    """A ratio < 1 against a reference certified optimal at its points contradicts the
    certificate: it comes from the straight segment between the reference's measured
    points, which lies above the optimum's convex curve, not from a better mechanism."""
    return ratio is not None and ref_gap is not None and ratio < 1.0 - 1e-9
