"""Parameter checks shared by every plugin's ``check_params``.

Each raises :class:`ValidationError` naming the parameter, the value given and what was
expected, so ``privbench run -m sppm:iterations=-1`` exits 2 with a useful message
before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from privbench.protocol.errors import ValidationError

#: what Δ means to a mechanism
BUDGET, EPSILON, UNUSED = "budget", "epsilon", "unused"
DELTA_ROLES = (BUDGET, EPSILON, UNUSED)


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number; got {value!r}")
    return float(value)


def positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def finite_float(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 strict_low: bool = False) -> float:
    """A finite number, optionally bounded (``strict_low``: value > low)."""
    x = _number(name, value)
    if not math.isfinite(x):
        raise ValidationError(f"{name} must be a finite number; got {value!r}")
    if low is not None and (x < low or (strict_low and x == low)):
        relation = ">" if strict_low else ">="
        raise ValidationError(f"{name} must be {relation} {low:g}; got {value!r}")
    if high is not None and x > high:
        raise ValidationError(f"{name} must be <= {high:g}; got {value!r}")
    return x


def one_of(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` must be one of ``choices``."""
    options = list(choices)
    if value not in options:
        raise ValidationError(f"{name} must be one of {', '.join(map(str, options))}; got {value!r}")
    return value


def delta_value(delta: Any, role: str) -> float:
    """Δ as a float, checked for what it means to the mechanism (``role``).

    Every role takes a finite number >= 0: a budget E[d] <= Δ, an ε (0 = clean
    completely) or an unused Δ that only labels the run. ``role`` names it in errors.
    """
    if isinstance(delta, bool):
        raise ValidationError(f"delta must be a number; got {delta!r}")
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise ValidationError(f"delta must be a number; got {delta!r}") from None
    if not math.isfinite(value) or value < 0:
        meaning = {BUDGET: "a distortion budget", EPSILON: "this mechanism's epsilon"}.get(role, "unused")
        raise ValidationError(f"delta must be a finite number >= 0 (here: {meaning}); got {delta!r}")
    return value


#: the largest seed a run may carry (stored as SQLite's signed 64-bit INTEGER)
MAX_SEED = 2**63 - 1


def seed_value(name: str, value: Any) -> int | None:
    """A random seed: None, or an integer in [0, 2^63 - 1] (numpy refuses negative seeds,
    SQLite stores 64-bit integers)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise ValidationError(f"{name} must be an integer in [0, 2^63 - 1]; got "
                              f"{str(value)[:30]}")
    return int(value)
