"""What a mechanism promises about its mapping, and the runner's one test of each promise.

A mechanism declares its guarantees with :meth:`Mechanism.promises`, e.g.
``{"distortion": Δ}`` (E[d] <= Δ), ``{"lip_epsilon": ε}`` (ε-local information
privacy), ``{"ldp_epsilon_private": ε}`` (ε-local DP with respect to A) or
``{"mi_bits": 0.0}`` (B̂ independent of A). The runner measures each promise on the
mapping the run returned, with one tolerance for all of them (:data:`PROMISE_TOL`,
relative, absolute below 1: the runner's budget slack), and marks a run that breaks
one ``invalid``, naming the promise, the bound and the measured value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from privbench.protocol.feasibility import BUDGET_TOL

__all__ = ["PROMISES", "PROMISE_TOL", "Promise", "broken_promises", "kept"]

#: the one tolerance of every promise: value <= bound + PROMISE_TOL * max(1, |bound|)
PROMISE_TOL = BUDGET_TOL


@dataclass(frozen=True)
class Promise:
    """A checkable guarantee: ``measure(problem, mapping, record)`` <= the declared bound."""

    name: str
    says: str
    unit: str
    measure: Callable[[Any, Any, dict[str, Any]], float | None]


def _distortion(problem: Any, mapping: Any, record: dict[str, Any]) -> float | None:
    value = record.get("distortion")
    return None if value is None else float(value)


def _notion(name: str) -> Callable[[Any, Any, dict[str, Any]], float | None]:
    def measure(problem: Any, mapping: Any, record: dict[str, Any]) -> float | None:
        from privbench.protocol import notions

        if mapping is None:
            return None
        if name == "mi_bits":
            from privbench.protocol.information import mutual_information

            return float(mutual_information(problem, mapping))
        return float(getattr(notions, name)(problem, mapping))
    return measure


#: every promise the runner can check, by name
PROMISES: dict[str, Promise] = {p.name: p for p in (
    Promise("distortion", "E[d] <= Δ", "", _distortion),
    Promise("lip_epsilon", "ε-local information privacy", "nats", _notion("lip_epsilon")),
    Promise("ldp_epsilon_private", "ε-local differential privacy w.r.t. A", "nats",
            _notion("ldp_epsilon_private")),
    Promise("mi_bits", "independence of A and B̂ (I(A; B̂) = 0)", "bits", _notion("mi_bits")),
)}


def kept(value: float, bound: float) -> bool:
    """``value <= bound`` within the one tolerance (NaN never keeps a promise)."""
    if math.isnan(value) or math.isnan(bound):
        return False
    return value <= bound + PROMISE_TOL * max(1.0, abs(bound))


def broken_promises(promised: dict[str, float], problem: Any, mapping: Any,
                    record: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Measure every promise; returns ``{name: {"bound", "measured", "kept"}}`` and one
    sentence per broken (or unknown) promise."""
    report: dict[str, dict[str, Any]] = {}
    broken: list[str] = []
    for name, bound in sorted(promised.items()):
        promise = PROMISES.get(name)
        if promise is None:
            broken.append(f"promise {name!r} is unknown (known: {', '.join(sorted(PROMISES))})")
            continue
        value = promise.measure(problem, mapping, record)
        if value is None:
            continue
        ok = kept(value, float(bound))
        report[name] = {"bound": float(bound), "measured": value, "kept": ok}
        if not ok:
            unit = f" {promise.unit}" if promise.unit else ""
            if name == "distortion":  # the wording every budget check has used
                broken.append(f"mapping distortion {value:.12g} exceeds the budget delta = "
                              f"{float(bound):g}")
                continue
            broken.append(f"broken promise ({promise.says}): measured {name} = {value:.12g}{unit} "
                          f"> {float(bound):.12g}")
    return report, broken
