"""What a mechanism hands back, checked before any metric reads it.

A result of an unknown kind, of another kind than the mechanism declares, or holding
nothing; stats that are not plain data (self-referencing, nested thousands deep) or a
``gap_bits`` that is not a finite number >= 0: each makes the run ``invalid`` with the
reason, instead of an ``ok`` row with a wrong or missing value, or a crash of the sweep.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privbench.protocol.errors import InvalidMappingError
from privbench.protocol.mechanism import MAPPING, RECORDS, SELECTION, MechanismResult

KINDS = (MAPPING, RECORDS, SELECTION)
#: how deep stats may nest (dicts and lists); deeper is not a solver's statistic
MAX_DEPTH = 64


def check_result(result: Any, output: str) -> MechanismResult:
    """The result of a mechanism whose class declares ``output`` as its kind."""
    if not isinstance(result, MechanismResult):
        raise InvalidMappingError(f"mechanism returned {type(result).__name__}; expected a "
                                  "MechanismResult")
    if result.kind not in KINDS:
        raise InvalidMappingError(f"result kind {str(result.kind)[:40]!r} is unknown; expected "
                                  f"one of {', '.join(KINDS)}")
    if output in KINDS and result.kind != output:
        raise InvalidMappingError(f"result kind {result.kind!r} but the mechanism declares "
                                  f"output = {output!r}")
    if result.kind == RECORDS and _empty(result.records):
        raise InvalidMappingError("records result holds no records")
    if result.kind == SELECTION and _empty(result.selection):
        raise InvalidMappingError("selection result selects nothing")
    if not isinstance(result.stats, dict):
        raise InvalidMappingError(f"result stats is a {type(result.stats).__name__}; expected a dict")
    check_stats(result.stats)
    return result


def _empty(value: Any) -> bool:
    if value is None:
        return True
    size = getattr(value, "size", None)
    if isinstance(size, int | np.integer):
        return int(size) == 0
    try:
        return len(value) == 0
    except TypeError:
        return False


def check_stats(stats: dict[str, Any]) -> None:
    """Stats are plain data of bounded depth, and ``gap_bits`` is a finite float >= 0."""
    _walk(stats, 0, set(), "stats")
    if "gap_bits" in stats and stats["gap_bits"] is not None:
        gap = stats["gap_bits"]
        if isinstance(gap, bool) or not isinstance(gap, int | float | np.integer | np.floating):
            raise InvalidMappingError(f"stat gap_bits = {str(gap)[:40]!r} is not a number")
        if not math.isfinite(float(gap)) or float(gap) < 0:
            raise InvalidMappingError(f"stat gap_bits = {float(gap)!r} is not a finite number >= 0 "
                                      "(a certified gap is never negative)")


def _walk(value: Any, depth: int, path: set[int], where: str) -> None:
    if depth > MAX_DEPTH:
        raise InvalidMappingError(f"{where} nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict | list | tuple):
        if id(value) in path:
            raise InvalidMappingError(f"{where} refers to itself")
        path.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _walk(item, depth + 1, path, f"{where}[{str(key)[:30]!r}]" if depth < 3 else where)
        path.discard(id(value))
