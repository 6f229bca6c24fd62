"""Mechanism base classes and the result they return.

Three kinds share one protocol (docs/hooks.md, "The mechanism lifecycle"):

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

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, ClassVar

import scipy.sparse as sp

from privbench.protocol.checks import BUDGET, UNUSED, delta_value
from privbench.protocol.context import RunContext
from privbench.protocol.errors import ValidationError
from privbench.protocol.mapping import COLUMN_SUM_TOL, validate_mapping
from privbench.protocol.plugin import Parametrized
from privbench.protocol.problem import PrivacyProblem

MAPPING, RECORDS, SELECTION = "mapping", "records", "selection"
__all__ = ["COLUMN_SUM_TOL", "Mechanism", "MechanismResult", "MappingMechanism", "RecordMechanism",
           "SelectionMechanism", "validate_mapping"]


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
        """The mechanism's certified optimality gap in bits (``stats["gap_bits"]``), or None."""
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
    #: rank as the default reference of comparisons (``compare``, reports; lower first):
    #: mechanisms that certify the optimum declare one; None = never the default reference
    reference_rank: ClassVar[int | None] = None
    #: a simple baseline every sweep adds to its grid (``baselines = true``, DPBench's
    #: advice), e.g. no mapping at all and the cheapest constant output
    baseline: ClassVar[bool] = False
    #: its result depends on the run's seed (random starts, sampled noise): a sweep's
    #: ``replicate_seeds`` run it once more per extra seed; deterministic ones run once
    randomized: ClassVar[bool] = False

    def promises(self, delta: float) -> dict[str, float]:
        """What this mechanism guarantees about its mapping at ``delta``, as ``{measure:
        upper bound}`` (names in :data:`privbench.measures.promises.PROMISES`: ``distortion``,
        ``lip_epsilon``, ``ldp_epsilon_private``, ``mi_bits``). The runner measures each on
        the returned mapping and marks a run that breaks one ``invalid``. The default:
        E[d] <= Δ when ``respects_budget``."""
        if getattr(self, "respects_budget", False) and self.delta_role == BUDGET:
            return {"distortion": float(delta)}
        return {}

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
        # a mechanism that ignores Δ accepts Δ = inf here, as d_const is defined
        # (``get_mechanism("constant").solve(problem, delta=inf)``); runs still need a finite Δ
        unused_inf = self.delta_role == UNUSED and isinstance(delta, int | float) \
            and not isinstance(delta, bool) and delta == math.inf
        delta = math.inf if unused_inf else delta_value(delta, self.delta_role)
        skip, reason = self.skip(problem)
        if skip:
            raise ValidationError(f"{self.name} cannot run on {problem.name}: {reason}")
        self.prepare(problem, RunContext(seed=seed))
        return self.run(problem, delta)


class MappingMechanism(Mechanism):
    """A mechanism that releases a mapping p(b̂ | b): an n x n column-stochastic matrix
    whose expected distortion is at most Δ (``respects_budget``; else the run is ``invalid``)."""
    output: ClassVar[str] = MAPPING
    #: the mapping meets E[d(B, B̂)] <= Δ; the runner marks a breach as ``invalid``
    respects_budget: ClassVar[bool] = True

    def result(self, mapping: Any, **stats: Any) -> MechanismResult:
        """The result of a run: ``mapping`` (dense or scipy sparse, n x n) as a CSC array,
        and the run's ``stats`` (stored under ``metrics``; ``gap_bits`` is its certificate)."""
        return MechanismResult(kind=MAPPING, mapping=sp.csc_array(mapping), stats=stats)


class RecordMechanism(Mechanism):
    """A mechanism that releases records (``MechanismResult.records``, and optionally a
    ``transform`` for new rows), e.g. noise on features; attack metrics read them."""
    output: ClassVar[str] = RECORDS


class SelectionMechanism(Mechanism):
    """A mechanism that releases a ranked selection of attribute subsets
    (``MechanismResult.selection``), e.g. the trade-off model."""
    output: ClassVar[str] = SELECTION


class SizeLimited:
    """Mixin of a mechanism that refuses alphabets above its ``max_n`` parameter (its memory
    or time grow like n²): put it before the mechanism base, ``class M(pb.SizeLimited,
    pb.MappingMechanism)``, and store ``max_n`` in ``__init__``.

    :meth:`check_params` refuses a ``max_n`` that is not an integer >= 1 (then runs the
    mechanism's own checks); :meth:`skip` skips a larger problem with :meth:`size_reason`
    and the way to raise the limit.
    """

    max_n: int
    name: ClassVar[str]
    #: what to try instead, appended to the skip reason (e.g. ``"or use sppm"``)
    size_advice: ClassVar[str] = ""

    def size_reason(self, n: int) -> str:
        """What grows with n (the start of the skip reason); override to say it precisely."""
        return f"{self.name} keeps dense {n} x {n} arrays"

    def check_params(self) -> None:
        """Refuse a ``max_n`` that is not an integer >= 1, naming it; then the base's checks."""
        value = self.max_n
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValidationError(f"{self.name}: max_n must be an integer >= 1; got {value!r}")
        super().check_params()  # type: ignore[misc]

    def skip(self, problem: PrivacyProblem) -> tuple[bool, str | None]:
        """Skip a problem with n > ``max_n``, saying why and how to raise the limit."""
        n = problem.n
        if n > self.max_n:
            advice = f", {self.size_advice}" if self.size_advice else ""
            return True, (f"{self.size_reason(n)}; n = {n} exceeds max_n = {self.max_n} (raise "
                          f"it with {self.name}:max_n={n} if you have the memory and time{advice})")
        return super().skip(problem)  # type: ignore[misc]
