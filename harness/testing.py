"""Conformance checks for plugin authors (like sklearn's ``check_estimator``).

``check_mechanism(MyMechanism)`` drives a mechanism through the runner's lifecycle
(create -> check_params -> skip -> prepare -> run) over its ``test_parameters`` on
small seeded, read-only problems, and asserts the invariants every result must satisfy:
an (n, n) column-stochastic non-negative mapping, E[d(B, B̂)] <= Δ (when the mechanism
promises it) and 0 <= I(A; B̂) <= I(A; B) (data processing); records or a selection for
the other kinds.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from privbench.protocol import information as M
from privbench.protocol.context import RunContext
from privbench.protocol.errors import PrivbenchError
from privbench.protocol.mechanism import MAPPING, RECORDS, Mechanism, MechanismResult, validate_mapping
from privbench.protocol.problem import PrivacyProblem
from privbench.running.problems import freeze, run_view

__all__ = ["INVARIANTS", "InvariantError", "check_mechanism", "invariants_of", "small_problems"]

#: every invariant ``check_mechanism`` asserts: name -> what it means
INVARIANTS: dict[str, str] = {
    "lifecycle": "create, check_params, skip, prepare and run complete on every case",
    "read-only problem": "run never writes into the problem it is given",
    "result kind": "run returns a MechanismResult of the declared output kind",
    "column-stochastic mapping": "(n, n), finite, non-negative, every column sums to 1 "
                                 "(within 1e-9)",
    "budget": "E[d(B, B̂)] <= Δ (checked when the mechanism promises it: respects_budget)",
    "data processing": "0 <= I(A; B̂) <= I(A; B)",
    "records": "a record mechanism returns released records",
    "selection": "a selection mechanism returns a non-empty selection",
}


class InvariantError(AssertionError):
    """A broken invariant; ``invariant`` is its name in :data:`INVARIANTS`."""

    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(message)
        self.invariant = invariant


def _require(ok: bool, invariant: str, message: str) -> None:
    if not ok:
        raise InvariantError(invariant, message)


def invariants_of(cls: type[Mechanism]) -> list[str]:
    """The invariants ``check_mechanism`` asserts for a mechanism of ``cls``'s kind."""
    common = ["lifecycle", "read-only problem", "result kind"]
    if cls.output == MAPPING:
        return [*common, "column-stochastic mapping", "budget", "data processing"]
    return [*common, "records" if cls.output == RECORDS else "selection"]


def small_problems(seed: int = 0) -> list[PrivacyProblem]:
    """A few seeded problems: random zero-diagonal D, Hamming profiles, squared l2."""
    rng = np.random.default_rng(seed)
    problems = []
    for n, k in ((6, 2), (9, 3)):
        joint = rng.dirichlet(np.ones(n * k)).reshape(k, n)
        D = rng.random((n, n))
        np.fill_diagonal(D, 0.0)
        problems.append(PrivacyProblem.from_arrays(joint, D, name=f"check-random-{n}x{k}"))
    codes = np.array(list(itertools.product([0, 1], repeat=3)), dtype=float)
    joint = rng.dirichlet(np.ones(16)).reshape(2, 8)
    from privbench.protocol.distortion import FeatureDistortion

    problems.append(PrivacyProblem.from_arrays(joint, FeatureDistortion(codes, "hamming"),
                                               name="check-hamming-8"))
    pts = np.arange(8, dtype=float)
    problems.append(PrivacyProblem.from_arrays(joint[::-1], FeatureDistortion(pts, "sq_l2"),
                                               name="check-sql2-8"))
    return problems


def _budgets(problem: PrivacyProblem) -> list[float]:
    D = problem.distortion.to_dense()
    avg = float(np.sum(problem.p_b * D.mean(axis=0)))  # distortion of a uniform mapping
    return [0.0, 0.05 * avg, 0.3 * avg, 2.0 * avg]


def _grid(cls: type[Mechanism], params: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``params`` alone, else every combination of ``cls.test_parameters`` (else defaults)."""
    if params is not None:
        return [dict(params)]
    grid = cls.test_parameters or {}
    keys = sorted(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


def _default_problems(output: str) -> list[PrivacyProblem]:
    if output == MAPPING:
        return small_problems()
    from privbench.api import load_dataset  # record and selection mechanisms need records

    return [load_dataset("linear_gaussian", n_samples=200, n_features=8, n_labels=3)]


def _check_mapping(where: str, mech: Mechanism, problem: PrivacyProblem, delta: float,
                   result: MechanismResult, atol_bits: float) -> dict[str, Any]:
    try:
        X = validate_mapping(result.mapping, problem.n)
    except PrivbenchError as exc:
        raise InvariantError("column-stochastic mapping", f"{where}: {exc}") from None
    mi = M.mutual_information(problem, X)
    dist = M.expected_distortion(problem, X)
    _require(mi >= -atol_bits, "data processing", f"{where}: I(A;B̂) = {mi} < 0")
    _require(mi <= problem.prior_mi_bits + atol_bits, "data processing",
             f"{where}: I(A;B̂) = {mi} exceeds I(A;B) = {problem.prior_mi_bits} (data processing)")
    checked = ["column-stochastic mapping", "data processing"]
    if getattr(mech, "respects_budget", False):
        _require(dist <= delta + 1e-9 * max(1.0, delta), "budget",
                 f"{where}: E[d] = {dist} exceeds the budget")
        checked.append("budget")
    return {"mi_bits": mi, "distortion": dist, "invariants": checked}


def _check_result(where: str, mech: Mechanism, problem: PrivacyProblem, delta: float,
                  result: Any, atol_bits: float) -> dict[str, Any]:
    _require(isinstance(result, MechanismResult), "result kind",
             f"{where}: run() returned {type(result).__name__}")
    _require(result.kind == mech.output, "result kind",
             f"{where}: result kind {result.kind!r}, declared {mech.output!r}")
    if mech.output == MAPPING:
        summary = _check_mapping(where, mech, problem, delta, result, atol_bits)
    elif mech.output == RECORDS:
        _require(result.records is not None, "records",
                 f"{where}: a record mechanism returned no records")
        summary = {"invariants": ["records"]}
    else:
        _require(bool(result.selection), "selection",
                 f"{where}: a selection mechanism returned an empty selection")
        summary = {"invariants": ["selection"]}
    summary["invariants"] = ["lifecycle", "read-only problem", "result kind",
                             *summary["invariants"]]
    return summary


def check_mechanism(cls: type[Mechanism], params: dict[str, Any] | None = None, *,
                    problems: list[PrivacyProblem] | None = None,
                    atol_bits: float = 1e-9) -> list[dict[str, Any]]:
    """Drive ``cls`` through the runner's lifecycle and assert what every run must satisfy.

    For each parameter set (``params``, else the ``test_parameters`` grid): ``create``
    (which calls ``check_params``), then on each problem (read-only, so a mechanism that
    writes into it fails) and budget: ``skip``, ``prepare``, ``run``. Mappings must be
    (n, n), non-negative, column-stochastic, within the budget when promised, and obey
    0 <= I(A; B̂) <= I(A; B); record and selection mechanisms must return their kind.

    :returns: one summary dict per (parameters, problem, Δ) checked, with the names of
        the invariants checked on it (``invariants``, keys of :data:`INVARIANTS`).
    :raises InvariantError: (an ``AssertionError``) naming the parameters, problem, Δ and
        the broken invariant. An exception of the mechanism itself propagates as raised
        (``ValueError: assignment destination is read-only`` for a write into the problem).
    """
    summaries = []
    for params_set in _grid(cls, params):
        mech = cls.create(**params_set)
        for problem in [freeze(p) for p in (problems or _default_problems(cls.output))]:
            if mech.skip(problem)[0]:
                continue
            budgets = _budgets(problem) if cls.output == MAPPING else [0.1]
            for delta in budgets:
                where = f"{mech!r} on {problem.name} at delta={delta:.4g}"
                mech.prepare(problem, RunContext(seed=0))
                result = mech.run(run_view(problem), delta)
                summary = _check_result(where, mech, problem, delta, result, atol_bits)
                summaries.append({"params": params_set, "problem": problem.name, "delta": delta,
                                  **summary})
    if not summaries:
        raise InvariantError("lifecycle", f"{cls.name} skipped every check problem")
    return summaries
