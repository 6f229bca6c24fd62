"""The metric protocol.

A metric declares what it ``needs`` from a mechanism result, any of:

* ``mapping``   - a p(b̂ | b) mapping (exact metrics: I(A;B̂), E[d], supports, ε);
* ``records``   - released records (attack metrics, e_utility / e_privacy);
* ``transform`` - a callable applying the mechanism to new feature rows;
* ``selection`` - a ranked selection of attribute subsets (trade-off model);
* ``problem``   - nothing but the problem (e.g. the prior leakage I(A;B));

and from the problem, any of its typed parts (:mod:`privbench.protocol.parts`):
``features``, ``coding``, ``ratings``, ``targets``, ``catalog``. A metric whose needs
are not met does not apply to the run; a name that is neither (a misspelling) makes the
plugin ``broken`` in ``privbench plugins``, with the reason.

The runner calls every ``default`` metric whose needs the result meets; other metrics
run when named (``-M name``). ``compute`` returns a flat dict of plain-data values;
keys that match the run's top-level fields (``mi_bits``, ``distortion``, ...) fill
them, the rest go under ``metrics``. A value that is an exception marks an output the
metric could not compute: the runner leaves it out and names it in the run's
``metric_errors`` (``{"bootstrap": "lip_epsilon_ci95: ValueError: ..."}``), keeping the
metric's other outputs; a metric that raises loses them all.

A metric *declares* each output it produces in ``outputs`` (:class:`Output`: name, unit,
direction, description, citation). Reporters, ``compare`` and exports read values through
these declarations (``PluginHost.outputs()``), never by a hard-coded list of names, so a new
metric's outputs become columns and can be ranked without touching any reporter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from privbench.protocol.parts import PARTS
from privbench.protocol.plugin import Parametrized

if TYPE_CHECKING:
    from privbench.protocol.mechanism import MechanismResult
    from privbench.protocol.problem import PrivacyProblem

#: what a metric may need from the run's result (``records``: released records)
RESULT_NEEDS = frozenset({"problem", "mapping", "records", "transform", "selection"})
#: ... and from the problem: its typed parts (``records`` above means the result's)
PART_NEEDS = frozenset(PARTS) - {"records"}


#: the units an output may be declared in
UNITS = frozenset({"bits", "nats", "probability", "guesses", "distortion", "seconds",
                   "megabytes", "count", "none"})
#: how a unit reads after a label ("" = not shown: the label already says what it is)
UNIT_SHORT = {"none": "", "distortion": "", "probability": "", "count": "", "seconds": "s",
              "megabytes": "MB"}
#: which way an output points: ``lower`` = a lower value is more private (leakage),
#: ``higher`` = a higher value is more private (attacker error), ``neutral`` = neither
#: (distortion, runtime, support sizes: costs and descriptions, not privacy)
DIRECTIONS = frozenset({"lower", "higher", "neutral"})
#: how a related output stands to the output it names in ``of`` (see :class:`Output`)
RELATIONS = ("interval", "prior", "error")
#: what a structured output carries for the host (see :class:`Output`'s ``payload``)
PAYLOADS = ("resamples",)


@dataclass(frozen=True)
class Output:
    """One value a metric produces, declared so that reports and comparisons need no list.

    :param name: the key ``compute`` returns (a top-level record field such as ``mi_bits``
        or a key stored under ``metrics``).
    :param unit: one of :data:`UNITS`.
    :param direction: one of :data:`DIRECTIONS` (``lower``: lower is more private).
    :param description: one line, what the number is.
    :param citation: where the notion comes from (authors, venue, year), or ``""``.
    :param convex: True when mixing two mappings never does worse than mixing their
        values: convex in the mapping for ``lower`` (I(A; B̂), total variation), concave
        for ``higher`` (guessing entropy). ``compare`` then interpolates a mechanism's
        curve linearly between measured points; otherwise it reads the best point
        measured within the budget (no interpolation it cannot justify).
    :param label: what a person reads on figures and tables ("I(A; B̂)", "LIP ε"); the
        name when empty. :attr:`display` adds the unit ("I(A; B̂) [bits]").
    :param of: the output this one is about, with ``relation``: a related output names its
        parent (``Output("mi_bits_ci95", ..., of="mi_bits", relation="interval")``), so
        readers find an interval, a prior or an error by declaration, never by a name
        pattern (:func:`privbench.protocol.outputs.outputs_of`).
    :param relation: one of :data:`RELATIONS` when ``of`` is set: ``interval`` (a
        ``[lo, hi]`` pair around the parent), ``prior`` (the parent's value with no
        mechanism), ``error`` (why the parent could not be measured).
    :param payload: one of :data:`PAYLOADS` for a structured (non-numeric) output the host
        itself uses: ``resamples`` (each output's value on every resample of the users, with
        the draws' key, so that two runs' values pair resample by resample:
        :func:`privbench.protocol.outputs.resamples_of`). The host finds it by this
        declaration, never by the output's (or its plugin's) name.
    """

    name: str
    unit: str
    direction: Literal["lower", "higher", "neutral"] = "neutral"
    description: str = ""
    citation: str = ""
    convex: bool = False
    label: str = ""
    of: str = ""
    relation: str = ""
    payload: str = ""

    @property
    def display(self) -> str:
        """The label with its unit, for axes, titles and table headers ("LIP ε [nats]");
        units that say nothing beyond the label (none, distortion, probability) are left out."""
        unit = UNIT_SHORT.get(self.unit, self.unit)
        return f"{self.label or self.name}" + (f" [{unit}]" if unit else "")

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"output {self.name!r}: unit must be one of {sorted(UNITS)}; "
                             f"got {self.unit!r}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"output {self.name!r}: direction must be one of "
                             f"{sorted(DIRECTIONS)}; got {self.direction!r}")
        if bool(self.of) != bool(self.relation) or (self.relation and self.relation not in RELATIONS):
            raise ValueError(f"output {self.name!r}: a related output declares both of= (the "
                             f"output it is about) and relation= (one of {list(RELATIONS)}); "
                             f"got of={self.of!r}, relation={self.relation!r}")
        if self.payload and self.payload not in PAYLOADS:
            raise ValueError(f"output {self.name!r}: payload must be one of {list(PAYLOADS)}; "
                             f"got {self.payload!r}")
        if self.of == self.name:
            raise ValueError(f"output {self.name!r}: an output cannot be related to itself")

    @property
    def is_privacy(self) -> bool:
        """True when the output measures privacy (it has a direction)."""
        return self.direction != "neutral"

    def better(self, a: float, b: float) -> bool:
        """True when value ``a`` is more private than ``b`` under this output."""
        return a < b if self.direction == "lower" else a > b


#: outputs every run record has, measured by the runner rather than by a metric
RUNNER_OUTPUTS: tuple[Output, ...] = (
    Output("runtime_s", "seconds", "neutral", "time of the timed solve (median over repeats)", label="runtime"),
    Output("prepare_s", "seconds", "neutral", "untimed preparation before the solve", label="preparation time"),
    Output("peak_mem_mb", "megabytes", "neutral", "peak memory of the solve", label="peak memory"),
)

#: what a mechanism's certificate (:class:`privbench.protocol.certificate.Certificate`) adds
#: to its run: a mechanism states them, no metric computes them
CERTIFICATE_OUTPUTS: tuple[Output, ...] = (
    Output("gap_bits", "bits", "neutral", "certified distance of I(A; B̂) to the optimum "
           "(upper minus lower bound)", label="certified gap"),
    Output("objective_bits", "bits", "neutral", "the solver's I(A; B̂) of its mapping"),
    Output("lower_bits", "bits", "neutral", "the solver's lower bound on the optimum"),
    Output("stop_reason", "none", "neutral", "why the solver stopped"),
    Output("trace", "none", "neutral", "[[seconds, upper_bits, lower_bits], ...] while solving"),
    Output("converged", "none", "neutral", "True when the solver met its tolerance"),
    Output("certified_delta", "distortion", "neutral", "the budget the certificate is for"),
)


#: the leakage every mapping run records as ``mi_bits``: declared by the core ``leakage``
#: metric, defined here so that views of the store (the default of ``compare`` and the
#: trade-off figures) read it the same way without loading plugins
LEAKAGE_OUTPUT = Output("mi_bits", "bits", "lower", "mutual information I(A; B̂)",
                        "Calmon and Fawaz, Privacy against statistical inference, Allerton 2012",
                        convex=True, label="I(A; B̂)")
#: the other outputs of the core metrics that every record shows at top level (docs/cli.md's
#: ``run --json`` contract; :data:`privbench.protocol.record.TOP_LEVEL_OUTPUTS`): declared
#: here once, and the core metrics declare these very objects
PRIOR_LEAKAGE_OUTPUT = Output("prior_mi_bits", "bits", "lower",
                              "I(A; B), the leakage with no mechanism", "Shannon 1948",
                              label="I(A; B)", of="mi_bits", relation="prior")
DISTORTION_OUTPUT = Output("distortion", "distortion", "neutral", "expected distortion E[d(B, B̂)]",
                           label="E[d(B, B̂)]")
NNZ_OUTPUT = Output("nnz", "count", "neutral", "non-zeros of the mapping")
SUPPORT_MAX_OUTPUT = Output("support_max", "count", "neutral", "largest support of a column")


def unknown_needs(needs: frozenset[str] | set[str] | tuple[str, ...]) -> list[str]:
    """Names in ``needs`` that mean nothing (a misspelt need would never apply)."""
    return sorted(set(needs) - RESULT_NEEDS - PART_NEEDS)


class Metric(Parametrized):
    """A measurement of one run: declares what it ``needs`` and the ``outputs`` it fills,
    and computes them from the problem and the mechanism's result (see the module)."""
    kind: ClassVar[str] = "metric"
    needs: ClassVar[frozenset[str]] = frozenset({"problem"})
    #: computed for every run that meets ``needs``
    default: ClassVar[bool] = True
    #: what ``compute`` returns, declared (see :class:`Output`); may list keys that a
    #: given run does not produce (they are simply absent from its record)
    outputs: ClassVar[tuple[Output, ...]] = ()

    def applies(self, problem: PrivacyProblem, result: MechanismResult | None) -> bool:
        """True when the result and the problem's parts meet every one of ``needs``
        (override to add a condition, e.g. a size limit, calling ``super().applies``)."""
        have = {"problem"}
        if result is not None:
            if result.mapping is not None:
                have.add("mapping")
            if result.records is not None:
                have.add("records")
            if result.transform is not None:
                have.add("transform")
            if result.selection is not None:
                have.add("selection")
        parts = {name for name in PART_NEEDS if getattr(problem, name, None) is not None}
        return set(self.needs) <= have | parts

    def unmet(self, problem: PrivacyProblem) -> str:
        """Why ``problem`` cannot give this metric what it needs, as a clause after "it"
        ('' when it can): by default the typed parts of ``needs`` it lacks ("needs the
        problem part 'holdout', which this data set does not provide"). A metric whose
        :meth:`applies` asks more of the problem says that here too (``bootstrap``: per-user
        records); ``compare`` prints it when no stored run has the metric's outputs."""
        missing = sorted(n for n in self.needs if n in PART_NEEDS and getattr(problem, n, None) is None)
        if not missing:
            return ""
        noun = "part" if len(missing) == 1 else "parts"
        return (f"needs the problem {noun} {', '.join(repr(n) for n in missing)}, which this data "
                "set does not provide")

    def compute(
        self,
        problem: PrivacyProblem,
        result: MechanismResult | None,
        *,
        delta: float,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """Return a flat dict of plain-data values, one per declared output the run
        produces; keys that are record fields (``mi_bits``, ``distortion``) fill them."""
        raise NotImplementedError
