"""What a mechanism promises about its mapping, and the runner's one test of each promise.

A mechanism declares its guarantees with :meth:`Mechanism.promises`, e.g.
``{"distortion": Δ}`` (E[d] <= Δ), ``{"lip_epsilon": ε}`` (ε-local information
privacy), ``{"ldp_epsilon_private": ε}`` (ε-local DP with respect to A) or
``{"mi_bits": 0.0}`` (B̂ independent of A); ``{"smallest_cell_users": k}`` (k-anonymity:
every cell of inputs and outputs the mapping joins holds at least k users of the records)
or ``{"smallest_cell_mass": k/N}`` (the same for N users spread as the prior) are lower
bounds. The runner measures each promise on the
mapping the run returned, with one tolerance for all of them (:data:`PROMISE_TOL`,
relative, absolute below 1: the runner's budget slack), and marks a run that breaks
one ``invalid``, naming the promise, the bound and the measured value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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
    #: "<=": the measure is an upper bound (ε, E[d]); ">=": a lower bound (k of k-anonymity)
    direction: str = "<="


def _distortion(problem: Any, mapping: Any, record: dict[str, Any]) -> float | None:
    value = record.get("distortion")
    return None if value is None else float(value)


def _notion(name: str) -> Callable[[Any, Any, dict[str, Any]], float | None]:
    def measure(problem: Any, mapping: Any, record: dict[str, Any]) -> float | None:
        from privbench.measures import notions

        if mapping is None:
            return None
        if name == "mi_bits":
            from privbench.measures.information import mutual_information

            return float(mutual_information(problem, mapping))
        return float(getattr(notions, name)(problem, mapping))
    return measure


def _cells(mapping: Any) -> tuple[int, np.ndarray]:
    """The cells of a mapping: connected components of inputs and outputs joined where
    X[b̂, b] > 0 (what B̂ can tell apart); their count and each input's cell."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    X = sp.csc_array(mapping)
    n = X.shape[0]
    support = sp.csr_array((X > 0).astype(np.int8))
    graph = sp.block_array([[None, support], [support.T, None]], format="csr")
    count, labels = connected_components(graph, directed=False)
    return count, labels[n:]


def _cell_sizes(weights: np.ndarray, mapping: Any) -> float:
    """The least total weight of a cell that holds an input of positive weight."""
    count, cell = _cells(mapping)
    totals = np.bincount(cell, weights=weights, minlength=count)
    held = np.bincount(cell, weights=(weights > 0).astype(float), minlength=count) > 0
    return float(totals[held].min()) if held.any() else 0.0


def _smallest_cell_users(problem: Any, mapping: Any, record: dict[str, Any]) -> float | None:
    records = getattr(problem, "records", None)
    if mapping is None or records is None or "symbol" not in records:
        return None
    symbol = np.asarray(records["symbol"])
    counts = np.bincount(symbol[symbol >= 0], minlength=problem.n).astype(float)
    return _cell_sizes(counts, mapping)


def _smallest_cell_mass(problem: Any, mapping: Any, record: dict[str, Any]) -> float | None:
    return None if mapping is None else _cell_sizes(np.asarray(problem.p_b, dtype=float), mapping)


#: every promise the runner can check, by name
PROMISES: dict[str, Promise] = {p.name: p for p in (
    Promise("distortion", "E[d] <= Δ", "", _distortion),
    Promise("lip_epsilon", "ε-local information privacy", "nats", _notion("lip_epsilon")),
    Promise("ldp_epsilon_private", "ε-local differential privacy w.r.t. A", "nats",
            _notion("ldp_epsilon_private")),
    Promise("mi_bits", "independence of A and B̂ (I(A; B̂) = 0)", "bits", _notion("mi_bits")),
    Promise("smallest_cell_users", "k-anonymity: every cell B̂ tells apart holds >= k users",
            "users", _smallest_cell_users, ">="),
    Promise("smallest_cell_mass", "k-anonymity of N users: every cell holds >= k/N of the prior",
            "", _smallest_cell_mass, ">="),
)}


def kept(value: float, bound: float, direction: str = "<=") -> bool:
    """``value <= bound`` (``>=`` for a lower bound) within the one tolerance (NaN never
    keeps a promise)."""
    if math.isnan(value) or math.isnan(bound):
        return False
    slack = PROMISE_TOL * max(1.0, abs(bound))
    return value >= bound - slack if direction == ">=" else value <= bound + slack


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
        ok = kept(value, float(bound), promise.direction)
        report[name] = {"bound": float(bound), "measured": value, "kept": ok}
        if not ok:
            unit = f" {promise.unit}" if promise.unit else ""
            if name == "distortion":  # the wording every budget check has used
                broken.append(f"mapping distortion {value:.12g} exceeds the budget delta = "
                              f"{float(bound):g}")
                continue
            worse = "<" if promise.direction == ">=" else ">"
            broken.append(f"broken promise ({promise.says}): measured {name} = {value:.12g}{unit} "
                          f"{worse} {float(bound):.12g}")
    return report, broken
