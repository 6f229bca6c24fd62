"""The certificate record every certified solver of problem (1) returns, under one set of names.

A certified solver (``sppm``, ``smoothed_dual``, ``mirror_descent``, ``optimal``) returns a
mapping X with E[d] <= Δ and a proven lower bound L on I*(Δ), the least leakage of any
mapping within the budget. Its stats carry :class:`Certificate` (``to_stats()``):

* ``objective_bits``: U = I(A; B̂) of the returned mapping (an upper bound on I*(Δ));
* ``lower_bits``: L <= I*(Δ), proven (a dual bound, Gibbs' inequality);
* ``gap_bits``: U - L >= 0, how far X may be from optimal (also a top-level record field);
* ``stop_reason``: why the solver stopped (``tolerance``, ``iterations``, ...);
* ``trace``: ``[[seconds, upper_bits, lower_bits], ...]`` since the solve started;
* ``converged``: whether the gap met the solver's tolerance;
* ``certified_delta``: the budget Δ the bound was solved at (the runner checks it against
  the run's own Δ, and the bound against the mapping's own I: :func:`contradiction`).

Readers (the ``optimum`` metric, reporters, ``compare``) use :meth:`Certificate.from_stats`.

Every decoder bound in privbench floors a posterior the same way before its logarithm:
:func:`floored_posterior` with :data:`POSTERIOR_FLOOR`.
"""

from __future__ import annotations

import dataclasses
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
                     "converged", "certified_delta")
#: bits by which a certificate's lower bound may exceed the mapping's own I (the two are
#: computed by different code: the solver's and the runner's metric) before it is refused
CERTIFICATE_TOL_BITS = 1e-9


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
    delta: float | None = None

    def __post_init__(self) -> None:
        for name in ("objective_bits", "lower_bits", "gap_bits"):
            value = getattr(self, name)
            if not isinstance(value, float) or math.isnan(value):
                raise ValueError(f"certificate: {name} must be a float; got {value!r}")
        if self.gap_bits < 0:
            raise ValueError(f"certificate: gap_bits must be >= 0; got {self.gap_bits!r}")

    @classmethod
    def of(cls, objective_bits: float, lower_bits: float, stop_reason: str, *,
           trace: Sequence[Sequence[float]] = (), converged: bool | None = None,
           delta: float | None = None) -> Certificate:
        """The certificate of a mapping leaking ``objective_bits`` with bound ``lower_bits``,
        solved at budget ``delta`` (None: not said; the runner then checks only the bound).

        The lower bound is clipped to [0, ``objective_bits``]: I* >= 0 always, and a mapping
        within the budget proves I* <= its leakage, so neither clip loses a proven fact.
        """
        upper = float(objective_bits)
        lower = min(max(float(lower_bits), 0.0), upper)
        rows = tuple((float(t), float(u), float(lo)) for t, u, lo in trace)
        return cls(upper, lower, upper - lower, str(stop_reason), rows,
                   None if converged is None else bool(converged),
                   None if delta is None else float(delta))

    def to_stats(self) -> dict[str, Any]:
        """The stats a solver returns (``mech.result(X, **cert.to_stats(), ...)``)."""
        return {"objective_bits": self.objective_bits, "lower_bits": self.lower_bits,
                "gap_bits": self.gap_bits, "stop_reason": self.stop_reason,
                "trace": [list(row) for row in self.trace], "converged": self.converged,
                "certified_delta": self.delta}

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
        delta = stats.get("certified_delta")
        return cls.of(upper, lower, str(stats.get("stop_reason") or ""),
                      trace=[row for row in trace if len(row) == 3],
                      converged=stats.get("converged"),
                      delta=float(delta) if isinstance(delta, int | float)
                      and not isinstance(delta, bool) else None)


def contradiction(cert: Certificate | Mapping[str, Any], delta: float, leakage_bits: float,
                  tol: float = CERTIFICATE_TOL_BITS) -> str | None:
    """Why ``cert`` (a certificate, or the stats that carry one) cannot be the certificate
    of a run at budget ``delta`` whose mapping leaks ``leakage_bits`` (None: it can).

    A proven lower bound on I*(Δ) never exceeds the leakage of a mapping within Δ; a bound
    above it (by more than ``tol`` bits, rounding between two computations of I) was solved
    for another problem, e.g. at a smaller Δ. A certificate that names its Δ must name the
    run's (to the runner's budget tolerance).
    """
    from privbench.protocol.feasibility import budget_slack

    if not isinstance(cert, Certificate):
        stats, parsed = cert, Certificate.from_stats(cert)
        if parsed is None:
            return None
        claimed = float(stats["lower_bits"])  # as stated, before the record's clip to U
        cert = dataclasses.replace(parsed, lower_bits=max(parsed.lower_bits, claimed))
    if cert.delta is not None and math.isfinite(delta) \
            and abs(cert.delta - delta) > budget_slack(delta):
        return (f"its certificate was solved at delta = {cert.delta:.12g}, not at the run's "
                f"delta = {delta:.12g}")
    if math.isfinite(leakage_bits) and cert.lower_bits > leakage_bits + tol * max(1.0, leakage_bits):
        return (f"its certificate's lower bound {cert.lower_bits:.12g} bits exceeds the "
                f"mapping's own I(A; B̂) = {leakage_bits:.12g} bits: it cannot bound this "
                "mapping's problem (solved at another budget or on other data?)")
    return None
