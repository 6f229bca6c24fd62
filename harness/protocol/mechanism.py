"""Mechanism base classes and the result they return.

Three kinds share one protocol (DESIGN.md, "The mechanism kinds"):

* ``MappingMechanism`` returns a mapping X (scipy.sparse, n x n, column-stochastic,
  X[i, j] = p(b̂_i | b_j));
* ``RecordMechanism`` returns released records (a transformed feature matrix);
* ``SelectionMechanism`` returns a ranked selection of attribute subsets.

Required: ``name`` and ``run(problem, delta)``. Optional: ``check_params()``,
``skip(problem)``, ``prepare(problem, context)``, ``delta_role``, ``needs``,
``test_parameters`` (the grid conformance tests use), ``requirements`` + ``extra``.
See :class:`Mechanism` for the lifecycle and docs/hooks.md for the contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from privbench.protocol.checks import BUDGET, delta_value
from privbench.protocol.context import RunContext
from privbench.protocol.errors import InvalidMappingError, ValidationError
from privbench.protocol.plugin import Parametrized
from privbench.protocol.problem import PrivacyProblem

MAPPING, RECORDS, SELECTION = "mapping", "records", "selection"

#: column sums must be within this of one
COLUMN_SUM_TOL = 1e-9


@dataclass
class MechanismResult:
    """What a mechanism returns: one of mapping / records / selection, plus solver stats.

    ``stats`` is free-form plain data (iterations, gap_bits, timings ...); the runner
    stores it under ``metrics``. ``transform`` optionally maps raw feature rows to
    released rows, for metrics that need to apply the mechanism to new data.
    """

    kind: str
    mapping: sp.sparray | None = None
    records: Any = None
    selection: list[Any] | None = None
    transform: Any = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def gap_bits(self) -> float | None:
        return self.stats.get("gap_bits")


class Mechanism(Parametrized):
    """Base of every mechanism plugin; the runner drives its lifecycle.

    1. ``create(**params)`` then :meth:`check_params` - at plan time, nothing stored on error;
    2. :meth:`skip` - ``(True, reason)`` for a data set it cannot handle;
    3. :meth:`prepare` - untimed: indexes, pricers, JIT warm-up; receives the run's context;
    4. :meth:`run` - the only timed step, repeated ``--repeat`` times on the same instance.

    :meth:`solve` chains them for interactive use. A plugin written against the old
    protocol (overriding ``solve(problem, delta, *, seed=None)``) still runs, with a
    :class:`DeprecationWarning`.
    """

    kind: ClassVar[str] = "mechanism"
    #: mapping | records | selection
    output: ClassVar[str] = MAPPING
    #: what Δ means: "budget" (E[d] <= Δ), "epsilon" (a noise/cleaning level) or "unused"
    delta_role: ClassVar[str] = BUDGET
    #: typed problem parts this mechanism needs (the runner skips a run that lacks one)
    needs: ClassVar[tuple[str, ...]] = ()

    def skip(self, problem: PrivacyProblem) -> tuple[bool, str | None]:
        """Return (True, reason) when this mechanism cannot run on ``problem``."""
        return False, None

    def prepare(self, problem: PrivacyProblem, context: RunContext) -> None:
        """Untimed set-up for ``problem``; subclasses call ``super().prepare(...)`` first."""
        self.context_ = context

    def run(self, problem: PrivacyProblem, delta: float) -> MechanismResult:
        """The timed solve. ``self.context_`` holds the run's seed and host services."""
        if self.is_legacy():
            return self.solve(problem, delta, seed=self.context.seed)
        raise NotImplementedError(f"mechanism {self.name!r} defines no run()")

    @property
    def context(self) -> RunContext:
        """The context of the current run (a default one before :meth:`prepare`)."""
        return getattr(self, "context_", None) or RunContext()

    @classmethod
    def is_legacy(cls) -> bool:
        """True for a plugin that overrides ``solve`` instead of ``run`` (old protocol)."""
        return cls.run is Mechanism.run and cls.solve is not Mechanism.solve

    def solve(
        self, problem: PrivacyProblem, delta: float, *, seed: int | None = None
    ) -> MechanismResult:
        """check_params -> skip -> prepare -> run, for interactive use and scripts.

        :raises ValidationError: for a bad parameter, Δ, or a problem the mechanism skips.
        """
        self.check_params()
        delta = delta_value(delta, self.delta_role)
        skip, reason = self.skip(problem)
        if skip:
            raise ValidationError(f"{self.name} cannot run on {problem.name}: {reason}")
        self.prepare(problem, RunContext(seed=seed))
        return self.run(problem, delta)


class MappingMechanism(Mechanism):
    output: ClassVar[str] = MAPPING
    #: the mapping meets E[d(B, B̂)] <= Δ; the runner marks a breach as ``invalid``
    respects_budget: ClassVar[bool] = True

    def result(self, mapping: Any, **stats: Any) -> MechanismResult:
        return MechanismResult(kind=MAPPING, mapping=sp.csc_array(mapping), stats=stats)


class RecordMechanism(Mechanism):
    output: ClassVar[str] = RECORDS


class SelectionMechanism(Mechanism):
    output: ClassVar[str] = SELECTION


def validate_mapping(mapping: Any, n: int) -> sp.csc_array:
    """Check a mapping is an (n, n) non-negative, column-stochastic matrix.

    :returns: the mapping as ``csc_array`` with explicit zeros removed.
    :raises InvalidMappingError: naming the first offending column.
    """
    if mapping is None:
        raise InvalidMappingError("mechanism returned no mapping")
    try:
        X = sp.csc_array(mapping, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidMappingError(f"mapping is not a numeric matrix: {exc}") from None
    if X.shape != (n, n):
        raise InvalidMappingError(f"mapping has shape {X.shape}; expected ({n}, {n})")
    X.eliminate_zeros()
    if not np.all(np.isfinite(X.data)):
        raise InvalidMappingError("mapping has NaN or infinite entries")
    if (X.data < 0).any():
        k = int(np.argmax(X.data < 0))
        j = int(np.searchsorted(X.indptr, k, side="right") - 1)
        raise InvalidMappingError(f"mapping has a negative entry {X.data[k]:g} in column {j}")
    sums = np.asarray(X.sum(axis=0)).ravel()
    bad = np.flatnonzero(np.abs(sums - 1.0) > COLUMN_SUM_TOL)
    if bad.size:
        j = int(bad[0])
        raise InvalidMappingError(
            f"mapping column {j} sums to {sums[j]:.12g}, not 1 (tolerance {COLUMN_SUM_TOL:g}); "
            f"{bad.size} column(s) affected"
        )
    return X
