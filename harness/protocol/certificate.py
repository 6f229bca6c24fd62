"""The certificate record every certified solver of problem (1) returns, under one set of names.

A certified solver (``sppm``, ``smoothed_dual``, ``mirror_descent``, ``optimal``) returns a
mapping X with E[d] <= Δ and a proven lower bound L on I*(Δ), the least leakage of any
mapping within the budget. Its stats carry :class:`Certificate` (``to_stats()``):

* ``objective_bits``: U = I(A; B̂) of the returned mapping (an upper bound on I*(Δ));
* ``lower_bits``: L <= I*(Δ), proven (a dual bound, Gibbs' inequality);
* ``gap_bits``: U - L >= 0, how far X may be from optimal (also a top-level record field);
* ``stop_reason``: why the solver stopped (``tolerance``, ``iterations``, ...);
* ``trace``: ``[[seconds, upper_bits, lower_bits], ...]`` since the solve started;
* ``converged``: whether the gap met the solver's tolerance.

Readers (the ``optimum`` metric, reporters, ``compare``) use :meth:`Certificate.from_stats`.

Every decoder bound in privbench floors a posterior the same way before its logarithm:
:func:`floored_posterior` with :data:`POSTERIOR_FLOOR`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: η: weight of p(a) mixed into a posterior before its logarithm, r = (1 - η) post + η p(a).
#: Any such mixture is still a decoder, so every bound built on it stays valid, and every
#: cost log(r / p(a)) stays finite (>= log η).
POSTERIOR_FLOOR = 1e-12
#: the stat names of a certificate, in record order
CERTIFICATE_STATS = ("objective_bits", "lower_bits", "gap_bits", "stop_reason", "trace",
                     "converged")


def floored_posterior(post: np.ndarray, p_a: np.ndarray, eta: float = POSTERIOR_FLOOR
                      ) -> np.ndarray:
    """r = (1 - η) ``post`` + η p(a) for posteriors ``post`` (|A| x outputs, columns p(a | b̂))."""
    return (1.0 - eta) * post + eta * np.asarray(p_a)[:, None]


@dataclass(frozen=True)
class Certificate:
    """A certified solve: ``lower_bits <= I*(Δ) <= objective_bits``; see the module doc.

    Build it with :meth:`of`, which derives ``gap_bits`` (U - L, never negative) so that the
    three numbers cannot disagree.
    """

    objective_bits: float
    lower_bits: float
    gap_bits: float
    stop_reason: str
    trace: tuple[tuple[float, float, float], ...] = field(default=())
    converged: bool | None = None

    def __post_init__(self) -> None:
        for name in ("objective_bits", "lower_bits", "gap_bits"):
            value = getattr(self, name)
            if not isinstance(value, float) or math.isnan(value):
                raise ValueError(f"certificate: {name} must be a float; got {value!r}")
        if self.gap_bits < 0:
            raise ValueError(f"certificate: gap_bits must be >= 0; got {self.gap_bits!r}")

    @classmethod
    def of(cls, objective_bits: float, lower_bits: float, stop_reason: str, *,
           trace: Sequence[Sequence[float]] = (), converged: bool | None = None) -> Certificate:
        """The certificate of a mapping leaking ``objective_bits`` with bound ``lower_bits``.

        The lower bound is clipped to [0, ``objective_bits``]: I* >= 0 always, and a mapping
        within the budget proves I* <= its leakage, so neither clip loses a proven fact.
        """
        upper = float(objective_bits)
        lower = min(max(float(lower_bits), 0.0), upper)
        rows = tuple((float(t), float(u), float(lo)) for t, u, lo in trace)
        return cls(upper, lower, upper - lower, str(stop_reason), rows,
                   None if converged is None else bool(converged))

    def to_stats(self) -> dict[str, Any]:
        """The stats a solver returns (``mech.result(X, **cert.to_stats(), ...)``)."""
        return {"objective_bits": self.objective_bits, "lower_bits": self.lower_bits,
                "gap_bits": self.gap_bits, "stop_reason": self.stop_reason,
                "trace": [list(row) for row in self.trace], "converged": self.converged}

    @classmethod
    def from_stats(cls, stats: Mapping[str, Any] | None) -> Certificate | None:
        """The certificate in a result's stats (or a record's ``metrics``); None without one.

        Needs finite ``objective_bits`` and ``lower_bits``; anything else is no certificate.
        """
        if not stats:
            return None
        upper, lower = stats.get("objective_bits"), stats.get("lower_bits")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                   for v in (upper, lower)):
            return None
        trace = stats.get("trace") or ()
        return cls.of(upper, lower, str(stats.get("stop_reason") or ""),
                      trace=[row for row in trace if len(row) == 3],
                      converged=stats.get("converged"))
