"""Bootstrap intervals over users: how much a number would move with another sample.

Data sets built from user records (census, MovieLens, the Politics-and-TV surrogate, a
user's CSV) estimate p(A, B) from N users. ``bootstrap`` (default for them; never for
synthetic problems, which have no users) resamples the N users with replacement B times
(seeded; the same draws for every run on the same data, so two runs can be compared pair
by pair), rebuilds the joint on the problem's alphabet from each resample (users outside
the alphabet stay outside, as in the data set), and evaluates the run's *fixed* mapping
under every exact privacy notion and the distortion. It stores, under ``metrics``:

* ``<output>_ci95 = [lo, hi]``: the bias-corrected percentile interval at 95 %
  (:func:`basic_interval`: the resamples' 2.5-97.5 % percentiles shifted by the
  bootstrap estimate of the plug-in leakage's upward bias) (``mi_bits_ci95``, ``distortion_ci95``,
  ``maximal_leakage_ci95``, ...);
* ``bootstrap``: ``{"resamples", "seed", "users", "key", "estimates", "samples": {output:
  [...]}}``, the
  per-resample values that ``compare`` pairs (``key`` identifies the draws: equal keys,
  equal resamples).

What the interval means: the spread of the number over samples of users like these, for
this mapping. It does not include the variability of designing the mapping on another
sample, nor an adversary's uncertainty (see docs/error-bars.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench.protocol.checks import positive_int

from .notions import OUTPUTS as NOTION_OUTPUTS

#: resamples drawn at once (bounds the memory of the (chunk, |A|, n) output joints)
CHUNK = 50


def user_cells(problem: pb.PrivacyProblem) -> np.ndarray | None:
    """Counts of users per cell (a, j) on the alphabet plus one 'outside' cell per a,
    flattened to (|A| * (n + 1),); None when the problem has no per-user records."""
    rec = problem.records
    if rec is None or len(rec) == 0 or not {"private", "symbol"} <= set(rec.columns):
        return None
    a = rec["private"].to_numpy(np.int64)
    j = rec["symbol"].to_numpy(np.int64)
    n = problem.n
    if a.min() < 0 or a.max() >= problem.n_private or j.max() >= n:
        return None
    j = np.where(j < 0, n, j)
    return np.bincount(a * (n + 1) + j, minlength=problem.n_private * (n + 1)).astype(np.int64)


def resampled_joints(cells: np.ndarray, n_private: int, rng: np.random.Generator,
                     size: int) -> np.ndarray:
    """``size`` joints (size, |A|, n) from resampling the users behind ``cells``: a
    multinomial draw of N users over the cells is exactly N draws with replacement."""
    users = int(cells.sum())
    draws = rng.multinomial(users, cells / users, size=size).astype(float)
    inside = draws.reshape(size, n_private, -1)[:, :, :-1]
    totals = inside.sum(axis=(1, 2), keepdims=True)
    return inside / np.where(totals > 0, totals, 1.0)


def _mi_bits(Q: np.ndarray) -> np.ndarray:
    """I(A; B̂) in bits for each (|A|, n) output joint in a (B, |A|, n) stack."""
    pa = Q.sum(axis=2, keepdims=True)
    pb_ = Q.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(Q > 0, Q * np.log2(Q / (pa * pb_)), 0.0)
    return np.maximum(terms.sum(axis=(1, 2)), 0.0)


def _column_costs(problem: pb.PrivacyProblem, X: sp.csc_array) -> np.ndarray:
    """c_j = Σ_i X[i, j] d(b̂_i, b_j): E[d] under any prior is Σ_j p(b_j) c_j."""
    coo = sp.coo_array(X)
    costs = np.zeros(problem.n)
    if coo.nnz:
        np.add.at(costs, coo.col, coo.data * problem.distortion.pairs(coo.row, coo.col))
    return costs


def notion_functions() -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Exact notions evaluated on output joints, each vectorised over the stack.

    ``mi_bits`` vectorised here; every other notion of ``pb.metrics.JOINT_NOTIONS``
    (maximal leakage, min-entropy leakage, Sibson, LIP, LDP w.r.t. A, total variation,
    t-closeness, guessing entropy) applied resample by resample to its joint.
    """
    found: dict[str, Callable[[np.ndarray], np.ndarray]] = {"mi_bits": _mi_bits}
    for name, fn in pb.metrics.JOINT_NOTIONS.items():
        if name not in found:
            found[name] = partial(_each, fn)
    return found


def _each(fn: Callable[[np.ndarray], float], Q: np.ndarray) -> np.ndarray:
    return np.array([fn(q) for q in Q])


def draws_key(cells: np.ndarray, resamples: int, seed: int) -> str:
    """Identifies the resamples: runs with equal keys were evaluated on the same draws."""
    h = hashlib.sha256(np.ascontiguousarray(cells).tobytes())
    h.update(f"{resamples}:{seed}".encode())
    return h.hexdigest()[:16]


def bootstrap_samples(problem: pb.PrivacyProblem, mapping: Any, *, resamples: int,
                      seed: int) -> dict[str, np.ndarray] | None:
    """Per-resample values of every exact notion and the distortion (None: no users)."""
    cells = user_cells(problem)
    if cells is None:
        return None
    X = sp.csc_array(mapping)
    costs = _column_costs(problem, X)
    functions = notion_functions()
    out: dict[str, list[np.ndarray]] = {name: [] for name in (*functions, "distortion")}
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        P = resampled_joints(cells, problem.n_private, rng, size)
        for name, values in _evaluate(functions, X, costs, P).items():
            out[name].append(values)
    return {name: np.concatenate(parts) for name, parts in out.items()}


def _evaluate(functions: dict[str, Callable[[np.ndarray], np.ndarray]], X: sp.csc_array,
              costs: np.ndarray, P: np.ndarray) -> dict[str, np.ndarray]:
    """Every notion and E[d] of mapping X under each joint of the (B, |A|, n) stack P."""
    Q = np.asarray((X @ P.reshape(-1, P.shape[2]).T).T).reshape(P.shape)
    values = {name: np.asarray(fn(Q), dtype=float) for name, fn in functions.items()}
    values["distortion"] = P.sum(axis=1) @ costs
    return values


def estimates(problem: pb.PrivacyProblem, mapping: Any) -> dict[str, float]:
    """The same notions on the problem's own joint (the θ̂ the intervals are built around)."""
    X = sp.csc_array(mapping)
    values = _evaluate(notion_functions(), X, _column_costs(problem, X), problem.joint[None])
    return {name: float(v[0]) for name, v in values.items()}


def basic_interval(estimate: float, values: np.ndarray, level: float = 0.95,
                   floor: float | None = 0.0) -> list[float]:
    """The resamples' central ``level`` percentiles, shifted by the bootstrap bias.

    Plug-in leakage is biased upwards by roughly (|A|-1)(m-1)/(2N ln 2) bits, and a
    resample's estimate is biased the same way again: the plain percentile interval would
    sit above the truth. Shifting it by the estimated bias, mean(θ*) - θ̂ (Efron &
    Tibshirani 1993, §10), moves it back; for a symmetric spread it is the basic
    interval. Unlike the basic interval it keeps its width at the boundary (a mapping
    with no leakage on this sample still gets an upper end from the resamples' spread).
    Clipped below at ``floor`` (leakages are non-negative); an infinite estimate or
    resample gives an infinite end, never NaN.
    """
    if not np.isfinite(estimate) or not np.all(np.isfinite(values)):
        finite = values[np.isfinite(values)]
        lo = float(min(estimate, finite.min())) if finite.size else float(estimate)
        return [lo, float("inf")]
    bias = float(np.mean(values)) - estimate
    q_lo, q_hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)]) - bias
    if floor is not None:
        q_lo, q_hi = max(q_lo, floor), max(q_hi, floor)
    return [float(q_lo), float(q_hi)]


#: citation of the intervals (declared with every ``<output>_ci95``)
CITATION = ("Efron & Tibshirani, An Introduction to the Bootstrap, 1993; Hay et al., DPBench, "
            "SIGMOD 2016")


def _declared() -> tuple[pb.Output, ...]:
    """``<output>_ci95`` for I(A; B̂), E[d] and every notion, in the notion's unit (neutral:
    an interval is not itself more or less private), and the samples record."""
    bases = [pb.Output("mi_bits", "bits"), pb.Output("distortion", "distortion"),
             *NOTION_OUTPUTS]
    return (*(pb.Output(f"{o.name}_ci95", o.unit, "neutral",
                        f"95 % bootstrap interval [lo, hi] of {o.name} over resampled users",
                        CITATION) for o in bases),
            pb.Output("bootstrap", "none", "neutral",
                      "per-resample values, draws key and estimates (paired comparisons)",
                      CITATION))


class BootstrapIntervals(pb.Metric):
    """95 % intervals over resampled users for each exact privacy notion and E[d].

    Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993 (percentile interval);
    Hay et al., "Principled evaluation of differentially private algorithms using
    DPBench", SIGMOD 2016 (report spread, pair comparisons).
    """

    name = "bootstrap"
    description = ("95% bootstrap intervals over resampled users for each exact privacy "
                   "notion and the distortion (data sets built from user records)")
    needs = frozenset({"mapping"})
    outputs = _declared()

    def __init__(self, resamples: int = 200, seed: int = 0) -> None:
        self.resamples = resamples
        self.seed = seed

    def check_params(self) -> None:
        positive_int("resamples", self.resamples, minimum=20)
        positive_int("seed", self.seed, minimum=0)

    def applies(self, problem, result) -> bool:
        return super().applies(problem, result) and user_cells(problem) is not None

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        resamples = int(self.resamples)
        samples = bootstrap_samples(problem, result.mapping, resamples=resamples,
                                    seed=int(self.seed))
        if samples is None:
            return {}
        cells = user_cells(problem)
        centre = estimates(problem, result.mapping)
        values: dict[str, Any] = {f"{name}_ci95": basic_interval(centre[name], v)
                                  for name, v in samples.items()}
        values["bootstrap"] = {
            "resamples": resamples, "seed": int(self.seed), "users": int(cells.sum()),
            "key": draws_key(cells, resamples, int(self.seed)),
            "estimates": centre,
            "samples": {name: [float(f"{x:.9g}") for x in v] for name, v in samples.items()},
        }
        return values


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [BootstrapIntervals]
