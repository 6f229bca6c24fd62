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
them, the rest go under ``metrics``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from privbench.protocol.parts import PARTS
from privbench.protocol.plugin import Parametrized

if TYPE_CHECKING:
    from privbench.protocol.mechanism import MechanismResult
    from privbench.protocol.problem import PrivacyProblem

#: what a metric may need from the run's result (``records``: released records)
RESULT_NEEDS = frozenset({"problem", "mapping", "records", "transform", "selection"})
#: ... and from the problem: its typed parts (``records`` above means the result's)
PART_NEEDS = frozenset(PARTS) - {"records"}


def unknown_needs(needs: frozenset[str] | set[str] | tuple[str, ...]) -> list[str]:
    """Names in ``needs`` that mean nothing (a misspelt need would never apply)."""
    return sorted(set(needs) - RESULT_NEEDS - PART_NEEDS)


class Metric(Parametrized):
    kind: ClassVar[str] = "metric"
    needs: ClassVar[frozenset[str]] = frozenset({"problem"})
    #: computed for every run that meets ``needs``
    default: ClassVar[bool] = True

    def applies(self, problem: PrivacyProblem, result: MechanismResult | None) -> bool:
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

    def compute(
        self,
        problem: PrivacyProblem,
        result: MechanismResult | None,
        *,
        delta: float,
        seed: int | None = None,
    ) -> dict[str, Any]:
        raise NotImplementedError
