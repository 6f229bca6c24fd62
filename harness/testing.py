"""Conformance checks for plugin authors (like scikit-learn's ``check_estimator`` and
``parametrize_with_checks``).

``check_mechanism(MyMechanism)`` drives a mechanism through the runner's lifecycle
(create -> check_params -> skip -> prepare -> run) over its ``test_parameters`` on
small seeded, read-only problems, and asserts the invariants every result must satisfy:
an (n, n) column-stochastic non-negative mapping, E[d(B, B̂)] <= Δ (when the mechanism
promises it), every promise of ``promises(Δ)`` (measured by the runner's own check) and
0 <= I(A; B̂) <= I(A; B) (data processing); records or a selection for the other kinds;
at every budget, the same seed gives the same result (determinism) and a second ``run``
after one ``prepare`` gives the same result (what ``repeat = N`` relies on). A mechanism
written against the old ``solve()`` protocol gets a ``DeprecationWarning``.

Each invariant is also its own check, so that a test suite shows one item per check::

    from privbench.testing import parametrize_with_checks

    @parametrize_with_checks([MyMechanism])
    def test_conformance(mechanism, check):
        check(mechanism)
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from privbench.measures import information as M
from privbench.protocol.context import RunContext
from privbench.protocol.errors import InvalidMappingError, PrivbenchError
from privbench.protocol.mechanism import MAPPING, RECORDS, Mechanism, MechanismResult, validate_mapping
from privbench.protocol.problem import PrivacyProblem
from privbench.running.problems import freeze, run_view
from privbench.running.runner import check_promises as _runner_promises
from privbench.running.runner import legacy_note

__all__ = ["CHECKS", "INVARIANTS", "InvariantError", "check_mechanism", "checks_for", "invariants_of",
           "parametrize_with_checks", "small_problems"]

#: every invariant ``check_mechanism`` asserts: name -> what it means
INVARIANTS: dict[str, str] = {
    "lifecycle": "create, check_params, skip, prepare and run complete on every case",
    "read-only problem": "run never writes into the problem it is given",
    "result kind": "run returns a MechanismResult of the declared output kind",
    "column-stochastic mapping": "(n, n), finite, non-negative, every column sums to 1 "
                                 "(within 1e-9)",
    "budget": "E[d(B, B̂)] <= Δ (checked when the mechanism promises it: respects_budget)",
    "promises": "every bound of promises(Δ) holds, measured as the runner measures it",
    "data processing": "0 <= I(A; B̂) <= I(A; B)",
    "records": "a record mechanism returns released records",
    "selection": "a selection mechanism returns a non-empty selection",
    "determinism": "two instances prepared with the same seed return the same result, at "
                   "every budget",
    "repeat": "a second run after one prepare returns the same result (repeat = N), at every "
              "budget",
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
        return [*common, "column-stochastic mapping", "budget", "promises", "data processing",
                "determinism", "repeat"]
    return [*common, "records" if cls.output == RECORDS else "selection", "promises"]


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
    # record and selection mechanisms need records: the data sets that offer their
    # test_parameters problem for conformance checks (``conformance = True``)
    from privbench.api import load_dataset
    from privbench.host.manager import get_host

    found = sorted((name, cls) for name, cls in get_host().datasets().items()
                   if getattr(cls, "conformance", False) is True)
    if not found:
        raise PrivbenchError("no available data set declares conformance = True; pass the "
                             "problems to check the mechanism on")
    return [load_dataset(name, **{k: v[0] for k, v in (cls.test_parameters or {}).items()})
            for name, cls in found]


@dataclasses.dataclass(frozen=True)
class _Case:
    """One (parameters, problem, Δ), solved by a new instance as the runner solves a run."""

    params: dict[str, Any]
    where: str
    mech: Mechanism
    problem: PrivacyProblem
    delta: float
    result: Any
    #: mapping mechanisms: a second run of ``mech`` after its one prepare (repeat) ...
    again: Any = None
    #: ... and the run of another new instance prepared with the same seed (determinism)
    fresh: Any = None
    #: the validated mapping of each of the three, once asked for
    validated: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    def mapping(self, which: str = "result") -> Any:
        """The validated mapping of ``result``, ``again`` or ``fresh`` (a broken one raises
        the column-stochastic invariant)."""
        if which not in self.validated:
            self.validated[which] = _mapping(self.where, self.problem, getattr(self, which))
        return self.validated[which]


def _check_mapping(case: _Case, atol_bits: float) -> dict[str, Any]:
    where, mech, problem, delta = case.where, case.mech, case.problem, case.delta
    X = case.mapping()
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


def _check_result(case: _Case, atol_bits: float) -> dict[str, Any]:
    where, mech, result = case.where, case.mech, case.result
    _require(isinstance(result, MechanismResult), "result kind",
             f"{where}: run() returned {type(result).__name__}")
    _require(result.kind == mech.output, "result kind",
             f"{where}: result kind {result.kind!r}, declared {mech.output!r}")
    if mech.output == MAPPING:
        summary = _check_mapping(case, atol_bits)
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

    For each parameter set (``params``, else the ``test_parameters`` grid), problem
    (read-only, so a mechanism that writes into it fails) and budget: ``create`` (which
    calls ``check_params``), ``skip``, ``prepare``, ``run``, as the runner does. Mappings
    must be (n, n), non-negative, column-stochastic, within the budget when promised, and
    obey 0 <= I(A; B̂) <= I(A; B); record and selection mechanisms must return their kind;
    every promise of ``promises(Δ)`` is measured by the runner's own check; at every budget
    a mapping mechanism must give the same mapping for the same seed (a second instance)
    and on a repeated run. A mechanism written against the old ``solve()`` protocol gets a
    ``DeprecationWarning``.

    :returns: one summary dict per (parameters, problem, Δ) checked, with the names of
        the invariants checked on it (``invariants``, keys of :data:`INVARIANTS`).
    :raises InvariantError: (an ``AssertionError``) naming the parameters, problem, Δ and
        the broken invariant. An exception of the mechanism itself propagates as raised
        (``ValueError: assignment destination is read-only`` for a write into the problem).
    """
    _warn_legacy(cls)
    summaries: list[dict[str, Any]] = []
    for case in _iter_cases(cls, params, problems):
        summary = _check_result(case, atol_bits)
        if _promises(case):
            summary["invariants"].append("promises")
        if cls.output == MAPPING:
            _determinism(case)
            _repeat(case)
            summary["invariants"] += ["determinism", "repeat"]
        summaries.append({"params": case.params, "problem": case.problem.name, "delta": case.delta,
                          **summary})
    if not summaries:
        raise InvariantError("lifecycle", f"{cls.name} skipped every check problem")
    return summaries


def _warn_legacy(cls: type[Mechanism], stacklevel: int = 3) -> None:
    """The runner's ``DeprecationWarning`` for the old ``solve()`` protocol, attributed to
    the caller of the check."""
    note = legacy_note(cls)
    if note is not None:
        warnings.warn(note, DeprecationWarning, stacklevel=stacklevel)


# -- one check per invariant (``parametrize_with_checks``) ------------------------------


#: solved cases on the default problems, per (class, parameters): the named checks of one
#: mechanism share one set of solves
_SOLVED: dict[tuple[type, str], list[_Case]] = {}


def _cases(cls: type[Mechanism], params: dict[str, Any] | None,
           problems: list[PrivacyProblem] | None) -> list[_Case]:
    """Every case that ``check_mechanism`` checks."""
    if problems is None:
        key = (cls, repr(sorted((params or {}).items())) if params is not None else "grid")
        if key not in _SOLVED:
            _SOLVED[key] = _solve_cases(cls, params, None)
        return _SOLVED[key]
    return _solve_cases(cls, params, problems)


def _solve_cases(cls: type[Mechanism], params: dict[str, Any] | None,
                 problems: list[PrivacyProblem] | None) -> list[_Case]:
    cases = list(_iter_cases(cls, params, problems))
    if not cases:
        raise InvariantError("lifecycle", f"{cls.name} skipped every check problem")
    return cases


def _iter_cases(cls: type[Mechanism], params: dict[str, Any] | None,
                problems: list[PrivacyProblem] | None) -> Iterator[_Case]:
    """Solve each (parameters, problem, Δ) in turn (every budget of :func:`_budgets` for a
    mapping mechanism), skipping the problems the mechanism skips."""
    for params_set in _grid(cls, params):
        mech = cls.create(**params_set)
        for problem in [freeze(p) for p in (problems or _default_problems(cls.output))]:
            if mech.skip(problem)[0]:
                continue
            for delta in _budgets(problem) if cls.output == MAPPING else [0.1]:
                yield _solve_case(cls, params_set, problem, delta)


def _solve_case(cls: type[Mechanism], params_set: dict[str, Any], problem: PrivacyProblem,
                delta: float) -> _Case:
    """A new instance prepared with seed 0 runs; for a mapping, it runs once more (repeat)
    and another new instance prepared with seed 0 runs too (determinism)."""
    def first_run(mech: Mechanism) -> Any:
        mech.prepare(problem, RunContext(seed=0))
        return mech.run(run_view(problem), delta)

    mech = cls.create(**params_set)
    where = f"{mech!r} on {problem.name} at delta={delta:.4g}"
    result = _kept(first_run(mech))
    if cls.output != MAPPING:
        return _Case(params_set, where, mech, problem, delta, result)
    again = _kept(mech.run(run_view(problem), delta))
    fresh = first_run(cls.create(**params_set))
    return _Case(params_set, where, mech, problem, delta, result, again, fresh)


def _kept(result: Any) -> Any:
    """``result`` with a copy of its mapping, so that a later run writing into a buffer it
    returned cannot change what the checks read."""
    mapping = getattr(result, "mapping", None)
    if isinstance(result, MechanismResult) and callable(getattr(mapping, "copy", None)):
        return dataclasses.replace(result, mapping=mapping.copy())
    return result


def _each_case(invariant: str) -> Any:
    """A check of ``invariant`` on every case, from the one-case test ``test``."""
    def decorate(test: Any) -> Any:
        def check(cls: type[Mechanism], params: dict[str, Any] | None = None, *,
                  problems: list[PrivacyProblem] | None = None, atol_bits: float = 1e-9) -> None:
            _warn_legacy(cls)
            for case in _cases(cls, params, problems):
                if invariant != "result kind":
                    _result_kind(case.where, case.mech, case.result)
                test(case, atol_bits)
        check.__name__ = f"check_{invariant.replace(' ', '_').replace('-', '_')}"
        check.__doc__ = f"Assert {invariant!r}: {INVARIANTS[invariant]}."
        return check
    return decorate


def _result_kind(where: str, mech: Mechanism, result: Any) -> None:
    _require(isinstance(result, MechanismResult), "result kind",
             f"{where}: run() returned {type(result).__name__}")
    _require(result.kind == mech.output, "result kind",
             f"{where}: result kind {result.kind!r}, declared {mech.output!r}")


def _mapping(where: str, problem: PrivacyProblem, result: MechanismResult) -> Any:
    try:
        return validate_mapping(result.mapping, problem.n)
    except PrivbenchError as exc:
        raise InvariantError("column-stochastic mapping", f"{where}: {exc}") from None


def _promises(case: _Case) -> bool:
    """The runner's own check of ``promises(Δ)`` on the case's result (the record holds
    E[d] for a mapping, as the distortion metric fills it); True when it measured one."""
    result = case.result
    record: dict[str, Any] = {"mechanism": case.mech.name, "metrics": {}}
    if result.kind == MAPPING:
        result = dataclasses.replace(result, mapping=case.mapping())
        record["distortion"] = M.expected_distortion(case.problem, result.mapping)
    try:
        _runner_promises(case.mech, case.problem, result, record, case.delta)
    except InvalidMappingError as exc:
        raise InvariantError("promises", f"{case.where}: {exc}") from None
    return bool(record["metrics"].get("promises"))


def _same(invariant: str, case: _Case, other: str, how: str, tol: float = 1e-12) -> None:
    """The mapping of the case's result and of its ``other`` run differ by at most ``tol``
    in every entry."""
    _result_kind(case.where, case.mech, getattr(case, other))
    Xa, Xb = case.mapping(), case.mapping(other)
    diff = float(abs(Xa - Xb).max()) if Xa.nnz or Xb.nnz else 0.0
    _require(diff <= tol, invariant,
             f"{case.where}: the mappings of two runs {how} differ by {diff:.3g}")


def _determinism(case: _Case) -> None:
    _same("determinism", case, "fresh", "with seed 0")


def _repeat(case: _Case) -> None:
    _same("repeat", case, "again", "after one prepare")


@_each_case("lifecycle")
def check_lifecycle(case: _Case, atol_bits: float) -> None:
    """Every case got this far: create, check_params, skip, prepare and run completed."""


@_each_case("read-only problem")
def check_read_only_problem(case: _Case, atol_bits: float) -> None:
    """The problems are frozen: a write into one raised inside ``_cases``."""


@_each_case("result kind")
def check_result_kind(case: _Case, atol_bits: float) -> None:
    _result_kind(case.where, case.mech, case.result)


@_each_case("column-stochastic mapping")
def check_column_stochastic_mapping(case: _Case, atol_bits: float) -> None:
    case.mapping()


@_each_case("budget")
def check_budget(case: _Case, atol_bits: float) -> None:
    if getattr(case.mech, "respects_budget", False):
        dist = M.expected_distortion(case.problem, case.mapping())
        _require(dist <= case.delta + 1e-9 * max(1.0, case.delta), "budget",
                 f"{case.where}: E[d] = {dist} exceeds the budget")


@_each_case("promises")
def check_promises(case: _Case, atol_bits: float) -> None:
    _promises(case)


@_each_case("data processing")
def check_data_processing(case: _Case, atol_bits: float) -> None:
    mi = M.mutual_information(case.problem, case.mapping())
    _require(-atol_bits <= mi <= case.problem.prior_mi_bits + atol_bits, "data processing",
             f"{case.where}: I(A;B̂) = {mi} outside [0, I(A;B) = {case.problem.prior_mi_bits}]")


@_each_case("records")
def check_records(case: _Case, atol_bits: float) -> None:
    _require(case.result.records is not None, "records",
             f"{case.where}: a record mechanism returned no records")


@_each_case("selection")
def check_selection(case: _Case, atol_bits: float) -> None:
    _require(bool(case.result.selection), "selection",
             f"{case.where}: a selection mechanism returned an empty selection")


@_each_case("determinism")
def check_determinism(case: _Case, atol_bits: float) -> None:
    """Two instances prepared with seed 0 return the same mapping, at every budget."""
    if case.fresh is not None:
        _determinism(case)


@_each_case("repeat")
def check_repeat(case: _Case, atol_bits: float) -> None:
    """A second ``run`` after one ``prepare`` returns the same mapping, at every budget, so
    that ``repeat = N`` times one solve N times rather than N different solves."""
    if case.again is not None:
        _repeat(case)


#: invariant name -> its check function ``check(cls, params=None, *, problems=None)``
CHECKS: dict[str, Any] = {
    "lifecycle": check_lifecycle, "read-only problem": check_read_only_problem,
    "result kind": check_result_kind, "column-stochastic mapping": check_column_stochastic_mapping,
    "budget": check_budget, "promises": check_promises, "data processing": check_data_processing,
    "records": check_records,
    "selection": check_selection, "determinism": check_determinism, "repeat": check_repeat,
}


def checks_for(cls: type[Mechanism]) -> list[Any]:
    """The check functions that apply to a mechanism of ``cls``'s kind."""
    return [CHECKS[name] for name in invariants_of(cls)]


def parametrize_with_checks(classes: list[type[Mechanism]]) -> Any:
    """A ``pytest.mark.parametrize("mechanism, check", ...)`` with one test item per
    (mechanism, invariant), named ``NAME-check_INVARIANT``; the test calls ``check(mechanism)``."""
    import pytest

    pairs = [(cls, check) for cls in classes for check in checks_for(cls)]
    return pytest.mark.parametrize("mechanism, check", pairs,
                                   ids=[f"{cls.name}-{check.__name__}" for cls, check in pairs])
