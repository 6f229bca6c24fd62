"""Bootstrap intervals over users: how much a number would move with another sample.

Data sets built from user records (census, MovieLens, the Politics-and-TV surrogate, a
user's CSV) estimate p(A, B) from N users. ``bootstrap`` (default for them; never for
synthetic problems, which have no users) resamples the N users with replacement B times
(seeded; the same draws for every run on the same data, so two runs can be compared pair
by pair), rebuilds the joint on the problem's alphabet from each resample (users outside
the alphabet stay outside, as in the data set), and evaluates the run's *fixed* mapping
under every exact privacy notion and the distortion. It stores, under ``metrics``:

* ``<output>_ci95 = [lo, hi]``: a 95 % interval (:func:`interval`): the bias-corrected
  normal interval θ̂ - b ± 1.96 sd(θ*) (``interval=basic``: the basic interval
  2θ̂ - q), clipped to the output's range, whose end at 'no leakage' (0, or G(A) for
  guessing entropy) is decided by a test against the sample with its users' private
  values permuted (:func:`permuted_tables`; guessing entropy: drawn from the product of
  the marginals; min-entropy leakage where A and B̂ are dependent: from the sample moved
  onto {leakage = 0}, :func:`min_entropy_accepts`), so that a true 0 is covered 95 % of
  the time; for I(A; B̂) and Sibson
  the set of leakages on the path to independence that the data accept
  (:func:`inverted_interval`); for the maxima, total variation and maximal leakage the
  bias-corrected interval with its two multipliers of sd(θ*)
  calibrated by a double bootstrap (:func:`calibrated_interval`), and for LIP, LDP ε and
  t-closeness, where the test accepts, an upper end at least the hybrid bound of the
  winning term's value (:func:`winner_upper_end`) and, where it rejects, the lower end of
  the bootstrap of their directional derivative and an upper end at least the
  intersection bound of their terms (:func:`contact_set_interval`,
  :func:`intersection_interval`, :func:`rejected_maximum`); for maximal leakage, a sum
  over outputs of maxima, where the test rejects the lower end from contact-set bounds of
  its directional derivative (:func:`contact_sum_interval`, :func:`rejected_sum`)
  (``mi_bits_ci95``, ``distortion_ci95``,
  ``maximal_leakage_ci95``, ...); coverage measured by ``tools/measure_ci_coverage.py``;
  each built on its own: one that raises is returned as its exception, which the runner
  leaves out and names in the run's ``metric_errors``, the others kept;
* ``bootstrap``: ``{"resamples", "seed", "users", "interval", "key", "estimates",
  "ranges", "samples": {output: [...]}}``, the per-resample values that ``compare`` pairs
  (``key`` hashes the users' records, the count and the seed: equal keys, equal resamples
  of the same data); ``ranges`` the outputs' finite ranges ([0, log2 |A|] bits, ...),
  which bound a paired difference.

What the interval means: the spread of the number over samples of users like these, for
this mapping. It does not include the variability of designing the mapping on another
sample, nor an adversary's uncertainty (see docs/error-bars.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench.protocol.checks import one_of, positive_int

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
                     size: int, probabilities: np.ndarray | None = None) -> np.ndarray:
    """``size`` joints (size, |A|, n) from resampling the users behind ``cells``: a
    multinomial draw of N users over the cells is exactly N draws with replacement.
    ``probabilities`` (same shape as ``cells``) draws the N users from another model of
    the cells instead (the independence model of :func:`independent_cells`)."""
    users = int(cells.sum())
    probs = cells / users if probabilities is None else probabilities / probabilities.sum()
    return joints_of(rng.multinomial(users, probs, size=size).astype(float), n_private)


def joints_of(draws: np.ndarray, n_private: int) -> np.ndarray:
    """The (size, |A|, n) joints of a (size, |A| * (n + 1)) stack of cell counts (the
    'outside' cells dropped, each joint normalised)."""
    inside = draws.reshape(len(draws), n_private, -1)[:, :, :-1]
    totals = inside.sum(axis=(1, 2), keepdims=True)
    return inside / np.where(totals > 0, totals, 1.0)


def permuted_tables(cells: np.ndarray, n_private: int, rng: np.random.Generator,
                    size: int) -> np.ndarray:
    """``size`` tables of cell counts (size, |A| * (n + 1)) with the sample's two marginals
    exactly: the private values of the users permuted among them (the permutation null of
    'A is independent of the symbol'), drawn by Patefield's algorithm (``scipy.stats.
    random_table``: the multivariate hypergeometric law of a table given both margins,
    O(|A| n) per table, not O(N)).

    Why conditional on both margins: a leakage's plug-in depends on the sample's prior
    (min-entropy leakage on the gap between its two most likely values); drawn from the
    product of the marginals, the null's prior moves while θ̂'s does not, and the test's
    level is off (1.000 coverage at a true 0 for min-entropy leakage at |A| = 4). Given
    both margins the null is exact whenever A is independent of the symbol."""
    from scipy.stats import random_table

    grid = cells.reshape(n_private, -1).astype(np.int64)
    tables = random_table(grid.sum(axis=1), grid.sum(axis=0)).rvs(size=size, random_state=rng)
    return np.asarray(tables, dtype=np.int64).reshape(size, -1)


def independent_cells(cells: np.ndarray, n_private: int) -> np.ndarray:
    """The cells' probabilities if A were independent of the symbol (the 'outside' cell
    included): the product of the sample's two marginals. A mapping leaks nothing under
    this model, whatever the mapping."""
    grid = cells.reshape(n_private, -1).astype(float)
    return (np.outer(grid.sum(axis=1), grid.sum(axis=0)) / grid.sum() ** 2).ravel()


#: a mapping with at least this share of nonzero entries, and at most DENSE_CELLS entries,
#: is multiplied as a dense array (a BLAS product: 3.7x faster than the sparse one for a
#: full n = 300 mapping)
DENSE_SHARE, DENSE_CELLS = 0.1, 4_000_000


def output_joints(X: sp.csc_array, P: np.ndarray) -> np.ndarray:
    """The output joints Q[b, a, :] = X P[b, a, :] of a (B, |A|, n) stack of joints."""
    flat = P.reshape(-1, P.shape[2])
    n_out, n_in = X.shape
    if n_out * n_in <= DENSE_CELLS and X.nnz >= DENSE_SHARE * n_out * n_in:
        return (flat @ X.toarray().T).reshape(len(P), P.shape[1], n_out)
    return np.asarray((X @ flat.T).T).reshape(len(P), P.shape[1], n_out)


def _column_costs(problem: pb.PrivacyProblem, X: sp.csc_array) -> np.ndarray:
    """c_j = Σ_i X[i, j] d(b̂_i, b_j): E[d] under any prior is Σ_j p(b_j) c_j."""
    coo = sp.coo_array(X)
    costs = np.zeros(problem.n)
    if coo.nnz:
        np.add.at(costs, coo.col, coo.data * problem.distortion.pairs(coo.row, coo.col))
    return costs


#: (Q, p_a, q, W) of a stack of output joints (:func:`_stack`)
Stack = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _stack(Q: np.ndarray) -> Stack:
    """(Q, p_a, q, W) of a (B, |A|, n) stack, each joint normalised; W = p(b̂ | a), 0 on a
    private value a resample has no user of (the per-joint notions drop that row)."""
    Q = Q / Q.sum(axis=(1, 2), keepdims=True)
    pa, q = Q.sum(axis=2), Q.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(pa[:, :, None] > 0, Q / pa[:, :, None], 0.0)
    return Q, pa, q, W


def _compiled(name: str) -> Callable[..., np.ndarray]:
    """The notion ``name`` over a (B, |A|, n) stack, by its compiled kernel
    (:mod:`._notion_kernels`); given ``st`` (a :func:`_stack` of it) the kernel takes its
    normalised joints (and normalises them again, a change in the last bits only)."""

    def notion(Q: np.ndarray, st: Stack | None = None) -> np.ndarray:
        from ._notion_kernels import KERNELS  # lazy: listing the plugins imports no numba

        return KERNELS[name](np.ascontiguousarray(Q if st is None else st[0], dtype=np.float64))

    notion.__name__ = notion.__qualname__ = f"_{name}"
    notion.__doc__ = f"{name} of each joint of a (B, |A|, n) stack (:mod:`._notion_kernels`)."
    return notion


_mi_bits, _maximal_leakage, _min_entropy_leakage = (
    _compiled("mi_bits"), _compiled("maximal_leakage"), _compiled("min_entropy_leakage"))
_sibson_mi, _lip_epsilon, _ldp_epsilon_private = (
    _compiled("sibson_mi"), _compiled("lip_epsilon"), _compiled("ldp_epsilon_private"))
_total_variation, _t_closeness, _guessing_entropy = (
    _compiled("total_variation"), _compiled("t_closeness"), _compiled("guessing_entropy"))

#: the notions of ``pb.metrics.JOINT_NOTIONS`` vectorised over a (B, |A|, n) stack (equal
#: to the per-joint functions to rounding: tests/test_bootstrap_intervals.py)
VECTORISED: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mi_bits": _mi_bits, "maximal_leakage": _maximal_leakage,
    "min_entropy_leakage": _min_entropy_leakage, "sibson_mi": _sibson_mi,
    "lip_epsilon": _lip_epsilon, "ldp_epsilon_private": _ldp_epsilon_private,
    "total_variation": _total_variation, "t_closeness": _t_closeness,
    "guessing_entropy": _guessing_entropy}


def _lip_cells(st: Stack) -> np.ndarray:
    """±log(W(b̂|a) / q(b̂)) for every (a, b̂) of a resample with users: LIP ε is their max."""
    _, pa, q, W = st
    valid = (pa[:, :, None] > 0) & (q[:, None, :] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(np.where(valid, W / q[:, None, :], 1.0))
    r = np.where(valid, r, -np.inf)
    return np.concatenate([r, np.where(valid, -r, -np.inf)], axis=1).reshape(len(r), -1)


def _ldp_cells(st: Stack) -> np.ndarray:
    """log(W(b̂|a) / W(b̂|a')) for every output b̂ and ordered pair a ≠ a': LDP ε w.r.t. A
    is their max (at least 0: both orders are terms)."""
    _, pa, q, W = st
    k = W.shape[1]
    first, second = np.nonzero(~np.eye(k, dtype=bool))
    with np.errstate(divide="ignore", invalid="ignore"):
        logw = np.log(W)
    ok = (pa[:, first] > 0)[:, :, None] & (pa[:, second] > 0)[:, :, None] & (q[:, None, :] > 0)
    with np.errstate(invalid="ignore"):
        r = logw[:, first] - logw[:, second]
    return np.where(ok, np.nan_to_num(r, nan=np.inf, posinf=np.inf), -np.inf).reshape(len(W), -1)


def _t_closeness_cells(st: Stack) -> np.ndarray:
    """Σ_{a∈S} (p(a|b̂) - p(a)) for every output b̂ and nonempty proper subset S of A:
    t-closeness is their max (half the L1 distance is the largest such sum, as the
    differences sum to 0)."""
    Q, pa, q, _ = st
    k = Q.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(q[:, None, :] > 0, Q / q[:, None, :] - pa[:, :, None], -np.inf)
    subsets = ((np.arange(1, 2 ** k - 1)[:, None] >> np.arange(k)[None, :]) & 1).astype(float)
    d = np.where(np.isfinite(d), d, 0.0)
    sums = np.einsum("sk,bkj->bsj", subsets, d)
    return np.where((q > 0)[:, None, :], sums, -np.inf).reshape(len(Q), -1)


#: notions that are the largest of smooth terms (a max over outputs, pairs or subsets),
#: their terms (:func:`intersection_interval`), and how many terms a joint of |A| private
#: values and n outputs has
CELL_NOTIONS: dict[str, tuple[Callable[[Stack], np.ndarray], Callable[[int, int], int]]] = {
    "lip_epsilon": (_lip_cells, lambda k, n: 2 * k * n),
    "ldp_epsilon_private": (_ldp_cells, lambda k, n: k * (k - 1) * n),
    "t_closeness": (_t_closeness_cells, lambda k, n: (2 ** k - 2) * n if k <= 16 else 1 << 62)}

#: most terms kept per joint (200 resamples x 50,000 terms: 80 MB); a notion with more
#: keeps its calibrated interval only
MAX_TERMS = 50_000


def notion_cells(X: sp.csc_array, P: np.ndarray,
                 Q: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The smooth terms (B, C) of each :data:`CELL_NOTIONS` notion of mapping X under each
    joint of the (B, |A|, n) stack P (a notion left out above its |A| limit); ``Q``: the
    output joints of P when already computed. A notion with more than :data:`MAX_TERMS`
    terms is left out."""
    st = _stack(output_joints(X, P) if Q is None else Q)
    k, n = st[0].shape[1:]
    return {name: fn(st) for name, (fn, count) in CELL_NOTIONS.items()
            if count(k, n) <= MAX_TERMS}


def notion_functions() -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Exact notions evaluated on output joints, each vectorised over the stack.

    The notions of ``pb.metrics.JOINT_NOTIONS`` (I, maximal leakage, min-entropy
    leakage, Sibson, LIP, LDP w.r.t. A, total variation, t-closeness, guessing entropy)
    by :data:`VECTORISED`; a notion added there without a vectorised twin is applied
    resample by resample to its joint.
    """
    found: dict[str, Callable[[np.ndarray], np.ndarray]] = {}
    for name, fn in pb.metrics.JOINT_NOTIONS.items():
        found[name] = VECTORISED.get(name) or partial(_each, fn)
    return found


def _each(fn: Callable[[np.ndarray], float], Q: np.ndarray) -> np.ndarray:
    return np.array([fn(q) for q in Q])


def data_hash(problem: pb.PrivacyProblem) -> str:
    """sha256 of the users a bootstrap resamples: every column of every record (in
    order) and the shape |A| x n of the alphabet. Two problems get the same hash only
    when they hold the same users coded the same way."""
    import pandas as pd  # lazy: ``privbench plugins`` imports this module to list it

    h = hashlib.sha256(f"{problem.n_private}x{problem.n}\0".encode())
    rec = problem.records
    if rec is not None:
        h.update(",".join(map(str, rec.columns)).encode())
        h.update(pd.util.hash_pandas_object(rec, index=True).to_numpy().tobytes())
    return h.hexdigest()


def draws_key(data: str, resamples: int, seed: int) -> str:
    """Identifies the resamples: runs with equal keys were evaluated on the same draws of
    the same users (``data``: :func:`data_hash`), so they may be paired resample by
    resample; runs on different data never share a key."""
    h = hashlib.sha256(data.encode())
    h.update(f"\0{resamples}:{seed}".encode())
    return h.hexdigest()[:16]


def bootstrap_samples(problem: pb.PrivacyProblem, mapping: Any, *, resamples: int,
                      seed: int, independent: bool = False, product: bool = False,
                      cell_values: dict[str, np.ndarray] | None = None,
                      output_stack: list[np.ndarray] | None = None
                      ) -> dict[str, np.ndarray] | None:
    """Per-resample values of every exact notion and the distortion (None: no users).

    ``independent=True`` permutes the users' private values among them instead
    (:func:`permuted_tables`, both marginals kept): the values a sample of this size
    shows when the mapping leaks nothing (the test at the boundary of :func:`interval`);
    with ``product=True`` it draws the N users from the product of the sample's two
    marginals (:func:`independent_cells`), so that the prior varies as between samples.
    ``cell_values``, when given, receives each :data:`CELL_NOTIONS` notion's smooth
    terms on every resample, (resamples, C) (:func:`intersection_interval`);
    ``output_stack``, when given, the output joints of the resamples, (chunk, |A|, n) per
    chunk (:func:`contact_sum_interval`; left empty above :data:`MAX_TERMS` cells)."""
    cells = user_cells(problem)
    if cells is None:
        return None
    X = sp.csc_array(mapping)
    costs = _column_costs(problem, X)
    functions = notion_functions()
    out: dict[str, list[np.ndarray]] = {name: [] for name in (*functions, "distortion")}
    rng = np.random.default_rng([seed, 1 + product] if independent else seed)
    parts: dict[str, list[np.ndarray]] = {}
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        if independent and product:
            P = resampled_joints(cells, problem.n_private, rng, size,
                                 independent_cells(cells, problem.n_private))
        elif independent:
            P = joints_of(permuted_tables(cells, problem.n_private, rng, size).astype(float),
                          problem.n_private)
        else:
            P = resampled_joints(cells, problem.n_private, rng, size)
        Q = output_joints(X, P)
        for name, values in _evaluate(functions, X, costs, P, Q).items():
            out[name].append(values)
        if output_stack is not None and Q[0].size <= MAX_TERMS:
            output_stack.append(Q)
        if cell_values is not None:
            for name, terms in notion_cells(X, P, Q).items():
                parts.setdefault(name, []).append(terms)
    if cell_values is not None:
        cell_values.update({name: np.concatenate(v) for name, v in parts.items()})
    return {name: np.concatenate(parts) for name, parts in out.items()}


def _evaluate(functions: dict[str, Callable[[np.ndarray], np.ndarray]], X: sp.csc_array,
              costs: np.ndarray, P: np.ndarray,
              Q: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every notion and E[d] of mapping X under each joint of the (B, |A|, n) stack P
    (``Q``: its output joints when already computed)."""
    Q = output_joints(X, P) if Q is None else Q
    values = _notion_values(functions, Q)
    values["distortion"] = P.sum(axis=1) @ costs
    return values


def _notion_values(functions: dict[str, Callable[[np.ndarray], np.ndarray]],
                   Q: np.ndarray) -> dict[str, np.ndarray]:
    """Each function's values on the stack Q (made C-contiguous once here: the output
    joints of a sparse product come transposed, and each kernel would copy them)."""
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    return {name: np.asarray(fn(Q), dtype=float) for name, fn in functions.items()}


def estimates(problem: pb.PrivacyProblem, mapping: Any) -> dict[str, float]:
    """The same notions on the problem's own joint (the θ̂ the intervals are built around)."""
    X = sp.csc_array(mapping)
    values = _evaluate(notion_functions(), X, _column_costs(problem, X), problem.joint[None])
    return {name: float(v[0]) for name, v in values.items()}


def prior_guessing_spread(problem: pb.PrivacyProblem, resamples: int, seed: int,
                          level: float = 0.95) -> float:
    """z · sd of G(Â) (the guessing entropy of A's prior, guessing entropy's value under
    independence) over the same resamples as :func:`bootstrap_samples` draws."""
    from scipy.special import ndtri

    cells = user_cells(problem)
    rng = np.random.default_rng(seed)
    values = []
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        prior = resampled_joints(cells, problem.n_private, rng, size).sum(axis=2)
        ranked = -np.sort(-prior, axis=1)
        values.append(ranked @ np.arange(1, problem.n_private + 1, dtype=float))
    return float(ndtri((1 + level) / 2)) * float(np.concatenate(values).std(ddof=1))


def independent_estimates(problem: pb.PrivacyProblem, mapping: Any) -> dict[str, float]:
    """The notions under the independence model of the sample (0 for a leakage, G(A) for
    guessing entropy): the boundary value of each interval."""
    cells = user_cells(problem)
    probs = independent_cells(cells, problem.n_private).reshape(problem.n_private, -1)
    X = sp.csc_array(mapping)
    joint = probs[:, :-1] / probs[:, :-1].sum()
    values = _evaluate(notion_functions(), X, _column_costs(problem, X), joint[None])
    return {name: float(v[0]) for name, v in values.items()}


#: outputs whose value under independence of A and B̂ (no leakage) is an end of their
#: range: +1 the lower end (leakages: 0), -1 the upper end (guessing entropy: G(A))
BOUNDARY_SIDE = {"mi_bits": 1, "maximal_leakage": 1, "min_entropy_leakage": 1, "sibson_mi": 1,
                 "lip_epsilon": 1, "ldp_epsilon_private": 1, "total_variation": 1,
                 "t_closeness": 1, "guessing_entropy": -1}


def value_range(output: str, n_private: int) -> tuple[float, float]:
    """Where ``output`` can lie for |A| = ``n_private``: leakages in bits in
    [0, log2 |A|], LIP and LDP ε in [0, inf], total variation and t-closeness in [0, 1],
    guessing entropy in [1, (|A| + 1) / 2], a distortion in [0, inf]."""
    bits = float(np.log2(max(n_private, 1)))
    return {"mi_bits": (0.0, bits), "maximal_leakage": (0.0, bits),
            "min_entropy_leakage": (0.0, bits), "sibson_mi": (0.0, bits),
            "total_variation": (0.0, 1.0), "t_closeness": (0.0, 1.0),
            "guessing_entropy": (1.0, (n_private + 1) / 2)}.get(output, (0.0, float("inf")))


def finite_ranges(outputs: Any, n_private: int) -> dict[str, list[float]]:
    """:func:`value_range` of each output whose range is finite at both ends (stored with
    the samples: a paired difference of two such outputs lies in [lo - hi, hi - lo])."""
    ranges = {name: value_range(name, n_private) for name in outputs}
    return {name: [lo, hi] for name, (lo, hi) in ranges.items() if np.isfinite(hi)}


def basic_interval(estimate: float, values: np.ndarray, level: float = 0.95,
                   bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float]:
    """The basic bootstrap interval [2θ̂ - q_hi, 2θ̂ - q_lo], clipped to ``bounds``.

    q_lo, q_hi are the resamples' central ``level`` percentiles. Reflecting them about θ̂
    subtracts the bootstrap estimate of the bias (plug-in leakage is biased upwards by
    about (|A|-1)(m-1)/(2N ln 2) bits, and a resample's estimate the same way again);
    the plain percentile interval, or the percentiles shifted by the bias once, would
    stay centred on the biased θ̂ (Efron & Tibshirani 1993, §13; Davison & Hinkley 1997,
    §5.2). Clipped to the output's range (:func:`value_range`); an infinite estimate or
    resample gives an infinite end, never NaN.
    """
    if not np.isfinite(estimate) or not np.all(np.isfinite(values)):
        finite = values[np.isfinite(values)]
        lo = float(min(estimate, finite.min())) if finite.size else float(estimate)
        return [float(np.clip(lo, *bounds)), float("inf")]
    q_lo, q_hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
    lo, hi = np.clip([2 * estimate - q_hi, 2 * estimate - q_lo], *bounds)
    return [float(lo), float(hi)]


def normal_interval(estimate: float, values: np.ndarray, level: float = 0.95,
                    bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float]:
    """The bias-corrected normal interval θ̂ - b ± z sd(θ*), b = mean(θ*) - θ̂, clipped.

    Efron & Tibshirani 1993, §10 and §13.3: the bias estimate is subtracted once (the
    interval is centred on θ̂ - b = 2θ̂ - mean(θ*), not on the biased θ̂), and the width
    is the resamples' spread. The default: for the maxima among the notions (LIP and LDP
    ε, t-closeness, min-entropy leakage) the resamples' skewness points the wrong way and
    the basic interval's reflected percentiles miss more often (docs/error-bars.md has
    both measured). An infinite estimate or resample falls back to
    :func:`basic_interval` (an infinite end, never NaN).
    """
    from scipy.special import ndtri

    values = np.asarray(values, dtype=float)
    if not np.isfinite(estimate) or not np.all(np.isfinite(values)):
        return basic_interval(estimate, values, level, bounds)
    z = float(ndtri((1 + level) / 2))
    centre = 2 * estimate - float(values.mean())
    half = z * float(values.std(ddof=1))
    lo, hi = np.clip([centre - half, centre + half], *bounds)
    return [float(lo), float(hi)]


#: notions that are a maximum over outputs (or a sum of maxima): non-smooth everywhere
MAXIMA = frozenset({"lip_epsilon", "ldp_epsilon_private", "t_closeness", "min_entropy_leakage"})


def maximum_upper_end(estimate: float, values: np.ndarray, base: list[float],
                      level: float = 0.95,
                      bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float]:
    """``base`` with its upper end at least θ̂ + z sd(θ*): for a maximum over outputs the
    bootstrap's bias estimate is positive by construction (a max of noisier terms) even
    when the sample's largest term fell below its truth, so the upper end does not
    subtract it (measured: 0.885-0.905 coverage at |A| = 2 with it subtracted)."""
    from scipy.special import ndtri

    values = np.asarray(values, dtype=float)
    if not np.isfinite(estimate) or not np.all(np.isfinite(values)):
        return base
    top = estimate + float(ndtri((1 + level) / 2)) * float(values.std(ddof=1))
    return [base[0], float(max(base[1], np.clip(top, *bounds)))]


#: notions whose interval is calibrated by the double bootstrap (:func:`calibrated_interval`):
#: the maxima, total variation (a sum of |·|) and maximal leakage (a sum of per-output
#: maxima), non-smooth functionals whose bootstrap bias and spread misjudge the plug-in's
#: (guessing entropy, calibrated too, covered above the band: docs/error-bars.md)
CALIBRATED = MAXIMA | {"total_variation", "maximal_leakage"}

#: (outer, inner) resamples of the calibration: the first ``outer`` of the metric's own
#: resamples, each resampled ``inner`` times
CALIBRATION = (100, 15)


def outer_counts(cells: np.ndarray, resamples: int, seed: int, first: int) -> np.ndarray:
    """Cell counts (first, |A| * (n + 1)) of the first ``first`` resamples that
    :func:`bootstrap_samples` draws with this ``seed`` (the same generator, the same
    chunks: its values on them are the first ``first`` stored samples)."""
    users = int(cells.sum())
    rng = np.random.default_rng(seed)
    parts, drawn = [], 0
    for start in range(0, resamples, CHUNK):
        if drawn >= first:
            break
        size = min(CHUNK, resamples - start)
        parts.append(rng.multinomial(users, cells / users, size=size))
        drawn += size
    return np.concatenate(parts)[:first]


def inner_values(problem: pb.PrivacyProblem, mapping: Any, outer: np.ndarray,
                 names: frozenset[str], inner: int, seed: int) -> dict[str, np.ndarray]:
    """Each notion of ``names`` on ``inner`` resamples of the users of each outer
    resample (``outer``: their cell counts): a (len(outer), inner) array per notion, the
    bootstrap world of the double bootstrap (the outer resample is that world's sample).

    The inner resamples are Poisson resamples (each cell's count ~ Poisson(its outer
    count): each user drawn Poisson(1) times, Hanley & MacGibbon 2006): the same law
    as drawing N users with replacement up to the total's O(sqrt N) wobble, which the
    joint's normalisation removes, and a fifth of the multinomial draws' cost."""
    X = sp.csc_array(mapping)
    functions = {k: f for k, f in notion_functions().items() if k in names}
    rng = np.random.default_rng([seed, 2])
    step = max(1, (4 * CHUNK) // inner)
    out: dict[str, list[np.ndarray]] = {k: [] for k in functions}
    for start in range(0, len(outer), step):
        block = outer[start:start + step].astype(float)
        draws = rng.poisson(np.repeat(block, inner, axis=0)).astype(float)
        P = joints_of(draws, problem.n_private)
        Q = output_joints(X, P)
        # a Poisson resample of a handful of users can be empty: its values are NaN, and
        # calibrated_interval falls back to the normal interval
        with np.errstate(divide="ignore", invalid="ignore"):
            for k, v in _notion_values(functions, Q).items():
                out[k].append(v.reshape(len(block), inner))
    return {k: np.concatenate(v) for k, v in out.items()}


def calibration_quantiles(estimate: float, values: np.ndarray, inner: np.ndarray,
                          level: float = 0.95) -> tuple[float, float] | None:
    """(c_lo, c_hi): the multipliers of sd(θ*) that give the bias-corrected interval
    θ̂ - b - c_lo sd, θ̂ - b + c_hi sd coverage ``level`` in the bootstrap world.

    Beran's prepivoting (Biometrika 74, 1987) / Hall's iterated bootstrap (Ann. Statist.
    14, 1986): the sample's joint is that world's truth (θ̂), each outer resample i its
    sample (θ*_i, ``values``), and its own resamples (``inner[i]``) give that sample's bias
    b_i and spread s_i. The studentised error T_i = (θ*_i - b_i - θ̂) / s_i of the
    bias-corrected estimate is what the real interval must cover: c_lo and c_hi are its
    upper and (negated) lower (1 ± level) / 2 quantiles, one per side (the maxima's error
    is skewed). An inner spread of 0 (every inner value equal: min-entropy leakage on its
    atom) counts as T_i = 0. None when a value is not finite."""
    values, inner = np.asarray(values, dtype=float), np.asarray(inner, dtype=float)
    if not (np.isfinite(estimate) and np.all(np.isfinite(values))
            and np.all(np.isfinite(inner))) or inner.ndim != 2 or inner.shape[1] < 2:
        return None
    m, s = inner.mean(axis=1), inner.std(axis=1, ddof=1)
    err = 2 * values[:len(inner)] - m - estimate
    T = np.divide(err, s, out=np.zeros_like(err), where=s > 0)
    c_lo, c_hi = np.quantile(T, [(1 + level) / 2, (1 - level) / 2])
    return float(c_lo), float(-c_hi)


def calibrated_interval(estimate: float, values: np.ndarray, inner: np.ndarray,
                        level: float = 0.95,
                        bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float]:
    """The bias-corrected interval [θ̂ - b - c_lo sd, θ̂ - b + c_hi sd] with c_lo, c_hi from
    :func:`calibration_quantiles` instead of ±1.96, clipped to ``bounds``; the normal
    interval when the calibration has no finite values."""
    c = calibration_quantiles(estimate, values, inner, level)
    if c is None:
        return normal_interval(estimate, values, level, bounds)
    values = np.asarray(values, dtype=float)
    centre, sd = 2 * estimate - float(values.mean()), float(values.std(ddof=1))
    lo, hi = np.clip([centre - c[0] * sd, centre + c[1] * sd], *bounds)
    return [float(lo), float(hi)]


def _finite_terms(estimate_cells: np.ndarray, cells: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """The terms of a maximum that are finite in the sample and in every resample, as
    float arrays ((C,) and (B, C)); None when any is +inf (the maximum is then infinite:
    the caller keeps its interval), fewer than 2 resamples are given or none is left."""
    est, cells = np.asarray(estimate_cells, dtype=float), np.asarray(cells, dtype=float)
    if cells.ndim != 2 or len(cells) < 2 or np.isposinf(est).any() or np.isposinf(cells).any():
        return None
    keep = np.isfinite(est) & np.isfinite(cells).all(axis=0)
    if not keep.any():
        return None
    return est[keep], cells[:, keep]


def intersection_interval(estimate_cells: np.ndarray, cells: np.ndarray, level: float = 0.95,
                          bounds: tuple[float, float] = (0.0, float("inf"))
                          ) -> list[float] | None:
    """An interval for θ = max_j θ_j, the largest of smooth terms, from each term's own
    bootstrap spread (Chernozhukov, Lee & Rosen, Econometrica 81, 2013: intersection bounds).

    The max of estimated terms is biased up where terms nearly tie, and the bootstrap of
    the max is not consistent there (Andrews 2000): no multiplier of sd(max*) covers on
    both sides (docs/error-bars.md). Each term θ̂_j is smooth, with spread s_j over the
    resamples (``cells``: (B, C); ``estimate_cells``: (C,)). Upper end max_j(θ̂_j + z s_j)
    with z the one-sided (1 + level) / 2 normal quantile: it lies below θ only if the true
    maximising term's own bound does, probability (1 - level) / 2, however many terms
    tie. Lower end max_{j∈V̂}(θ̂_j - c s_j): it lies above θ if any term's lower bound
    does, so c is the (1 + level) / 2 quantile of max_{j∈V̂} (θ*_j - θ̂_j) / s_j over the
    resamples, simultaneous over V̂, the terms that may be the largest (CLR's adaptive
    selection: θ̂_j within 2 k s_j of max_k(θ̂_k - k s_k), k the 1 - 0.1 / ln C quantile
    over all terms). None when a term or resample is infinite (the caller keeps its
    interval)."""
    from scipy.special import ndtri

    finite = _finite_terms(estimate_cells, cells)
    if finite is None:
        return None
    est, cells = finite
    s = cells.std(axis=0, ddof=1)
    dev = cells - est[None, :]
    T = np.divide(dev, s[None, :], out=np.zeros_like(dev), where=s[None, :] > 0)
    z = float(ndtri((1 + level) / 2))
    k = float(np.quantile(T.max(axis=1), 1 - 0.1 / np.log(max(est.size, 3))))
    near = est >= np.max(est - k * s) - 2 * k * s
    c = float(np.quantile(T[:, near].max(axis=1), (1 + level) / 2))
    lo = float(np.max(est[near] - c * s[near]))
    hi = float(np.max(est + z * s))
    lo, hi = np.clip([lo, hi], *bounds)
    return [float(lo), float(hi)]


def contact_kappa(users: int) -> float:
    """κ = sqrt(2 ln ln N) for N users: the contact sets' tolerance in units of a term's
    bootstrap spread (the Hannan-Quinn rate of moment selection, Andrews & Soares,
    Econometrica 78, 2010: κ → ∞ and κ s → 0; fixed before any coverage was counted)."""
    return float(np.sqrt(2.0 * max(np.log(np.log(max(users, 3))), 0.0)))


def contact_set_interval(estimate_cells: np.ndarray, cells: np.ndarray, users: int,
                         level: float = 0.95,
                         bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float] | None:
    """An interval for θ = max_j θ_j from the bootstrap of its directional derivative
    (Fang & Santos, Rev. Econ. Stud. 86, 2019, on the maximum of smooth terms).

    The max is not differentiable where terms tie, and its plain bootstrap is not
    consistent there; its directional derivative at θ is h ↦ max_{j∈J₀} h_j over the
    contact set J₀ of the terms that attain the max. J₀ is estimated by Ĵ = {j: θ̂_j ≥
    max_k θ̂_k - κ s_j} (s_j each term's bootstrap spread) with κ = sqrt(2 ln ln N), N
    the users (the Hannan-Quinn rate of moment selection, Andrews & Soares, Econometrica
    78, 2010: κ → ∞ and κ s_j → 0; fixed before any coverage was counted), and the law of
    max θ̂ - θ by that of D* = max_{j∈Ĵ}(θ*_j - θ̂_j) over the resamples: the interval
    is [max θ̂ - q_{(1+level)/2}(D*), max θ̂ - q_{(1-level)/2}(D*)], clipped to ``bounds``
    (``cells``: (B, C) terms of the resamples; ``estimate_cells``: (C,) of the sample).
    None when a term or resample is infinite or fewer than 2 resamples are given."""
    finite = _finite_terms(estimate_cells, cells)
    if finite is None:
        return None
    est, cells = finite
    kappa = contact_kappa(users)
    top = float(est.max())
    near = est >= top - kappa * cells.std(axis=0, ddof=1)
    dev = (cells[:, near] - est[near]).max(axis=1)
    q_lo, q_hi = np.quantile(dev, [(1 - level) / 2, (1 + level) / 2])
    lo, hi = np.clip([top - q_hi, top - q_lo], *bounds)
    return [float(lo), float(hi)]


#: the winner's distance to its truncation point, in units of its bootstrap sd, below which
#: the two are tied (sqrt of the float epsilon: terms equal in exact arithmetic, such as
#: every term of an exactly independent sample, differ by rounding only, 1e-16 against an
#: sd of 0.01-0.1)
TIE = float(np.sqrt(np.finfo(float).eps))


def winner_upper_end(estimate_cells: np.ndarray, cells: np.ndarray, level: float = 0.95,
                     bounds: tuple[float, float] = (0.0, float("inf"))) -> float | None:
    """The upper end of Andrews, Kitagawa & McCloskey's hybrid interval for the value of
    the winner θ_ĵ, ĵ the sample's largest term ("Inference on winners", QJE 139, 2024,
    hybrid with β = α / 10 as they recommend; fixed before any coverage was counted).

    Why: where the boundary test accepts 'leaks nothing' the intersection bound
    max_j(θ̂_j + z s_j) was far above the truth where many terms nearly tie (4.1-6.2
    sd(θ*) above the bias-corrected estimate at |A| = 4, 0.005 bits, where the truth
    needs about 0), while a calibrated end alone missed 60-70 % of such samples at
    |A| = 2 (docs/error-bars.md). The winner's estimate, conditioned on having won
    (the polyhedral truncation [L, U] of θ̂_ĵ given the other terms' residuals, from the
    terms' bootstrap covariance) and on the projection bound |θ̂_ĵ - θ_ĵ| ≤ c_β s_ĵ (c_β
    the 1 - β quantile of max_j |θ*_j - θ̂_j| / s_j over the resamples), is a truncated
    normal; the upper end is the largest θ_ĵ whose conditional law puts at least
    (α - β) / (2 (1 - β)) below θ̂_ĵ. Near a tie the truncation sits at θ̂_ĵ and the
    end widens towards the projection bound θ̂_ĵ + c_β s_ĵ; a clear winner gets about
    θ̂_ĵ + z s_ĵ. It covers θ_ĵ, which is max_j θ_j where the largest terms tie or the
    sample's largest is the true largest, and below it otherwise (measured, not
    guaranteed: 'Coverage, measured'). ``cells``: (B, C) terms of the resamples;
    ``estimate_cells``: (C,) of the sample. None when a term or resample is infinite, the
    winner does not vary over the resamples, or it sits on its truncation point (a term
    tied with it to rounding, :data:`TIE`: every term of an exactly independent sample is
    0, and the conditional law then puts no mass below θ̂_ĵ; the caller keeps the
    intersection bound)."""
    from scipy.optimize import brentq
    from scipy.stats import truncnorm

    finite = _finite_terms(estimate_cells, cells)
    if finite is None:
        return None
    est, cells = finite
    j = int(np.argmax(est))
    dev = cells - cells.mean(axis=0)
    cov = dev.T @ dev[:, j] / (len(cells) - 1)
    if not cov[j] > 0:
        return None
    sd, c = float(np.sqrt(cov[j])), cov / cov[j]
    resid = est - c * est[j]
    others = np.arange(est.size) != j
    below, above = others & (c < 1), others & (c > 1)
    lower = float(np.max(resid[below] / (1 - c[below]))) if below.any() else -np.inf
    upper = float(np.min(resid[above] / (1 - c[above]))) if above.any() else np.inf
    s = cells.std(axis=0, ddof=1)
    T = np.divide(np.abs(cells - est), s, out=np.zeros_like(cells), where=s > 0)
    alpha = 1.0 - level
    beta = alpha / 10
    c_beta = float(np.quantile(T.max(axis=1), 1 - beta))
    y, target = float(est[j]), (alpha - beta) / (2 * (1 - beta))

    if y - lower <= TIE * sd:  # θ̂_ĵ on its truncation point (an exact tie): no answer
        return None

    def below_y(mu: float) -> float:  # P(θ̂_ĵ <= y | won, within the projection), θ_ĵ = mu
        a, b = max(lower, mu - c_beta * sd), min(upper, mu + c_beta * sd)
        za, zb = (a - mu) / sd, (b - mu) / sd
        if not za < zb:  # an empty window, or one narrower than rounding: its end b
            return 1.0 if y >= b else 0.0
        return float(truncnorm.cdf(min(max((y - mu) / sd, za), zb), za, zb))

    lo_mu, hi_mu = y - c_beta * sd, y + c_beta * sd
    if below_y(lo_mu) < target:  # no θ_ĵ in the projection puts enough mass below θ̂_ĵ
        return None
    if below_y(hi_mu) >= target:
        end = hi_mu
    else:
        end = float(brentq(lambda mu: below_y(mu) - target, lo_mu, hi_mu,
                           xtol=1e-12 * (1 + abs(y))))
    return float(np.clip(end, *bounds))


def rejected_maximum(contact: list[float] | None, base: list[float], high: float | None,
                     null_estimate: float, fallback: list[float],
                     bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float]:
    """The interval of LIP, LDP ε or t-closeness where the boundary test rejects 'leaks
    nothing': the lower end the contact-set bootstrap's (``contact``,
    :func:`contact_set_interval`), just above ``null_estimate`` at least; the upper end
    at least ``high`` (the intersection bound max_j(θ̂_j + z s_j) of
    :func:`intersection_interval`, at most 2.5 % misses whatever the ties) and
    ``base``'s (calibrated). Why: the shift by the product null's excess
    (:func:`interval`) almost never missed low at 0.05 bits and hid calibrated upper ends
    that missed high in 5-13 % of samples on some joints, which the intersection bound
    removes; the lower end of the path inversion (the construction before this one)
    then almost never missed either, and the three maxima covered 0.98-1.00 in several
    cells (docs/error-bars.md, 'Coverage, measured'). ``fallback``: the interval whose
    lower end is kept when ``contact`` is None (infinite terms)."""
    lo = fallback[0] if contact is None else contact[0]
    lo = max(lo, float(np.nextafter(null_estimate, np.inf)))
    hi = base[1] if high is None else max(base[1], float(np.clip(high, *bounds)))
    return [float(lo), float(max(hi, lo))]


def accepted_high(name: str, estimate: float, values: np.ndarray, top: list[float] | None,
                  bounds: tuple[float, float], winner: float | None = None) -> float | None:
    """The least upper end where the boundary test accepts 'leaks nothing': for LIP, LDP ε
    and t-closeness the hybrid upper end of the winning term's value (``winner``,
    :func:`winner_upper_end`), or where it has none the intersection bound (``top``,
    :func:`intersection_interval`, which lay 4-6 sd(θ*) above the truth where many terms
    nearly tie: LIP ε covered 0.988 at |A| = 2, 0.005 bits); for
    min-entropy leakage θ̂ + z sd(θ*), the bias not subtracted (a sample on its atom, θ̂ = 0,
    has a bias-corrected upper end near 0, which missed a true 0.0004 bits in 9.5 % of
    samples: measure_ci_coverage.py --seed 1, second design); None for the others."""
    if name == "min_entropy_leakage":
        return maximum_upper_end(estimate, values, [0.0, 0.0], bounds=bounds)[1]
    if winner is not None:
        return winner
    return None if top is None else top[1]


#: the interval a ``bootstrap:interval=NAME`` run builds before the boundary test
INTERVALS: dict[str, Callable[..., list[float]]] = {"normal": normal_interval,
                                                   "basic": basic_interval}


def interval(estimate: float, values: np.ndarray, null_estimate: float | None = None,
             null_values: np.ndarray | None = None, side: int = 1, level: float = 0.95,
             bounds: tuple[float, float] = (0.0, float("inf")),
             base: list[float] | None = None, null_spread: float = 0.0,
             tie: tuple[float, np.ndarray] | None = None,
             excess_values: np.ndarray | None = None,
             accepted_high: float | None = None,
             accepted: bool | None = None) -> list[float]:
    """The ``<output>_ci95``: a bootstrap interval made right at the boundary of no leakage.

    ``base`` (default: :func:`basic_interval`) is the interval away from the boundary.
    Near independence every bootstrap interval misjudges a leakage: the plug-in is
    biased by O(1/N) (I, Sibson) or O(1/sqrt N) (a sum of |·| or a max: total variation,
    maximal leakage, LIP) there, and resamples drawn from a sample that already leaks
    misjudge that bias, so a true 0 is missed or always covered. So the end at the
    boundary comes from a test of 'leaks nothing': θ̂ against ``null_values``, θ̂ of
    samples of the same size drawn under independence (``null_estimate``: the value
    there, 0 for a leakage, G(A) for guessing entropy; ``side`` = 1 when that is the
    lower end of the range, -1 the upper). Not rejected at level 1 - ``level``
    (one-sided, as at a boundary in Feldman & Cousins 1998): the interval reaches the
    boundary value. Rejected: it stops short of it, at the nearer of ``base``'s end and
    θ̂ less the null's excess (what noise alone adds). So a true 0 is covered with
    probability ``level``, and a large leakage gets ``base`` unchanged. Where the value
    under independence is itself estimated (guessing entropy: G(A) of the sample's prior)
    ``null_spread`` is its half-width, and a not-rejected interval covers
    ``null_estimate`` ± ``null_spread``. ``tie`` = (the sample's tie-breaker, one per null draw:
    :func:`tie_breakers`) breaks ties of the test (:func:`boundary_accepts`). ``excess_values``
    (default ``null_values``) are the null draws whose ``level`` quantile sets the
    rejected end's shift: the permutation null (:func:`permuted_tables`) makes the test
    exact, but it holds the prior fixed, and the excess of a plug-in near the boundary
    also carries the prior's sampling error (the product null's draws: measured,
    min-entropy leakage at |A| = 4, 0.005 bits covered 0.703 with the permutation
    null's excess, 0.948 with the product null's). ``accepted_high``: where the test
    accepts, the upper end is at least this (for a maximum, :func:`winner_upper_end`: a
    sample consistent with no leakage is one whose largest terms fell low, where the
    calibrated upper end missed 60-70 % of the time).
    ``accepted``: the test's verdict when the caller has decided it (min-entropy leakage:
    :func:`min_entropy_accepts`).
    """
    lo, hi = base if base is not None else basic_interval(estimate, values, level, bounds)
    if null_values is None or null_estimate is None or not np.isfinite(estimate):
        return [lo, hi]
    null = np.asarray(null_values, dtype=float)
    null = null[np.isfinite(null)]
    if null.size == 0:
        return [lo, hi]
    q = float(np.percentile(side * null, 100 * level))  # the test's critical value
    if accepted is None:
        accepted = (side * estimate <= q if tie is None else
                    boundary_accepts(estimate, null_values, tie[0], tie[1], level, side))
    if accepted:  # not rejected: no leakage is a value the data allow
        low, high = np.clip([null_estimate - null_spread, null_estimate + null_spread], *bounds)
        if accepted_high is not None:
            high = max(high, float(np.clip(accepted_high, *bounds)))
        return [float(min(lo, low)), float(max(hi, high))]
    if excess_values is not None:
        excess = np.asarray(excess_values, dtype=float)
        excess = excess[np.isfinite(excess)]
        q = float(np.percentile(side * excess, 100 * level)) if excess.size else q
    shifted = side * estimate - (q - side * null_estimate)  # beyond the boundary
    if side > 0:  # rejected: the boundary value is excluded, even when θ̂ sits on it (a tie)
        low = min(lo, shifted) if lo > null_estimate else min(shifted, hi)
        low = max(low, float(np.nextafter(null_estimate, np.inf)))
        return [float(low), float(max(hi, low))]
    high = max(hi, -shifted) if hi < null_estimate else max(-shifted, lo)
    high = min(high, float(np.nextafter(null_estimate, -np.inf)))
    return [float(min(lo, high)), float(high)]


#: notions whose boundary test draws its null from the product of the sample's marginals,
#: not by permutation: guessing entropy's value under independence, G(A), depends on the
#: prior, which the sample only estimates (with the permutation null, which holds the
#: prior fixed, it covered 0.71 at |A| = 4, 0.005 bits; 0.958 with the product null)
PRODUCT_NULL = frozenset({"guessing_entropy"})

#: smooth notions (O(1/N) bias near independence, a chi-square law at it): their interval
#: is :func:`inverted_interval`, the bias and spread interpolated along the path to independence
SMOOTH = frozenset({"mi_bits", "sibson_mi"})

#: mixing weights s of the path P_s = (1 - s) P_0 + s P̂ (:func:`path_values`)
PATH = np.linspace(0.0, 1.0, 401)


def path_values(problem: pb.PrivacyProblem, mapping: Any,
                names: frozenset[str] = SMOOTH) -> dict[str, np.ndarray]:
    """Each notion of ``names`` along P_s = (1 - s) P_0 + s P̂ for s in :data:`PATH`: P_0
    the sample's independence model, P̂ the sample's joint. The joints a test inversion
    asks 'could the data have come from a joint that leaks θ(s)?' about."""
    cells = user_cells(problem)
    grid = independent_cells(cells, problem.n_private).reshape(problem.n_private, -1)
    p0 = grid[:, :-1] / grid[:, :-1].sum()
    p1 = problem.joint / problem.joint.sum()
    joints = (1.0 - PATH)[:, None, None] * p0[None] + PATH[:, None, None] * p1[None]
    X = sp.csc_array(mapping)
    functions = {k: f for k, f in notion_functions().items() if k in names}
    return _notion_values(functions, output_joints(X, joints))


def inverted_interval(estimate: float, values: np.ndarray, null_values: np.ndarray,
                      path: np.ndarray, accept_zero: bool, level: float = 0.95,
                      bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float] | None:
    """The leakages θ(s) on the path to independence that a test of level ``level`` accepts.

    A smooth leakage's plug-in has, at the sample's joint P̂ (s = 1), the bootstrap's
    bias b₁ = mean(θ*) - θ̂ and spread sd₁; at independence (s = 0) the bias b₀ =
    mean(null) and spread sd₀ of ``null_values``. In between both are interpolated
    linearly in s (the chi-square law at 0 turns into the normal law away from it), and
    θ(s) (``path``, on :data:`PATH`) is accepted when θ̂ - θ(s) - b(s) lies within
    ± z sd(s); at s = 0 the boundary test decides (``accept_zero``); beyond θ̂ the bias
    and spread at P̂ hold (the normal interval). The interval is the hull of what is
    accepted (Neyman's construction, as in Feldman & Cousins 1998): the normal interval
    of the sample used the spread and bias at θ̂, too wide and too little corrected where
    the truth is nearer 0 (measured: 0.990 coverage at |A| = 4, 0.005 bits). None when a
    value is not finite or nothing is accepted (the caller keeps its interval)."""
    from scipy.special import ndtri

    values, null = np.asarray(values, dtype=float), np.asarray(null_values, dtype=float)
    if not (np.isfinite(estimate) and np.all(np.isfinite(values))
            and np.all(np.isfinite(null)) and np.all(np.isfinite(path))):
        return None
    z = float(ndtri((1 + level) / 2))
    b1, sd1 = float(values.mean()) - estimate, float(values.std(ddof=1))
    b0, sd0 = float(null.mean()), float(null.std(ddof=1))
    slack = z * ((1 - PATH) * sd0 + PATH * sd1) - np.abs(estimate - path - (1 - PATH) * b0
                                                         - PATH * b1)
    slack[0] = -1.0  # s = 0 is the boundary test's
    taken = list(path[slack >= 0])
    for i in np.nonzero(np.diff(np.sign(slack)))[0]:  # where acceptance starts or stops
        w = slack[i] / (slack[i] - slack[i + 1])
        taken.append(float(path[i] + w * (path[i + 1] - path[i])))
    if accept_zero:
        taken.append(0.0)
    hi = estimate - b1 + z * sd1  # beyond θ̂: the normal interval at P̂
    if hi >= estimate:
        taken += [max(estimate - b1 - z * sd1, estimate), hi]
    if not taken:
        return None
    lo, hi = np.clip([min(taken), max(taken)], *bounds)
    return [float(lo), float(hi)]


def zero_min_entropy_cells(cells: np.ndarray, n_private: int, mapping: Any,
                           max_steps: int = 10_000) -> np.ndarray | None:
    """The sample's cell probabilities (|A| * (n + 1),) moved the least way onto
    {min-entropy leakage = 0}: the null of :func:`min_entropy_accepts`.

    Min-entropy leakage log2(Σ_b̂ max_a Q(a, b̂) / max_a p(a)) is 0 exactly when one private
    value a* is the most likely in every output column of Q = X P, a set of joints much
    larger than independence (a composite null). a* is the sample's most likely private
    value; wherever another value a beats it in a column b̂ (gap g = Q(a*, b̂) - Q(a, b̂) <
    0), mass moves from the cells (a, j) to (a*, j), each profile's total kept, in
    proportion to X(b̂, j) P(a, j) (the chi-square least-squares direction for that one
    constraint), just enough that a* ties a in b̂; the worst violation first, until none is
    left (a move from a to a* only raises every gap of a*). The columns the sample shows
    violated end tied: the least favourable point of the null near the sample. None when
    ``max_steps`` moves do not reach the set (the caller keeps the permutation test)."""
    grid = cells.reshape(n_private, -1).astype(float)
    P = grid[:, :-1] / grid.sum()
    X = sp.csr_array(mapping)
    star = int(np.argmax(P.sum(axis=1)))
    Q = np.asarray((X @ P.T).T)
    tol = 1e-13 * max(float(Q.max()), 1e-300)
    for _ in range(int(max_steps)):
        gap = Q[star][None, :] - Q
        a, b = np.unravel_index(int(np.argmin(gap)), gap.shape)
        if gap[a, b] >= -tol:
            grid[:, :-1] = P * grid.sum()
            return grid.ravel() / grid.sum()
        row = X[[b]].toarray().ravel()
        w = row * P[a]
        t = np.minimum(-gap[a, b] / (2.0 * float(row @ w)) * w, P[a])
        P[a] -= t
        P[star] += t
        moved = X @ t
        Q[a] -= moved
        Q[star] += moved
    return None


def min_entropy_null(problem: pb.PrivacyProblem, mapping: Any, resamples: int,
                     seed: int) -> np.ndarray | None:
    """Min-entropy leakage of ``resamples`` samples of the N users drawn from
    :func:`zero_min_entropy_cells` (a restricted bootstrap: the sample moved onto the
    null, then resampled as the metric resamples), or None when no such point is found."""
    cells = user_cells(problem)
    probs = zero_min_entropy_cells(cells, problem.n_private, mapping)
    if probs is None:
        return None
    X = sp.csc_array(mapping)
    rng = np.random.default_rng([seed, 3])
    out = []
    for start in range(0, resamples, CHUNK):
        P = resampled_joints(cells, problem.n_private, rng, min(CHUNK, resamples - start), probs)
        out.append(_min_entropy_leakage(output_joints(X, P)))
    return np.concatenate(out)


def min_entropy_test(problem: pb.PrivacyProblem, mapping: Any, estimate: float,
                     null: dict[str, np.ndarray], centre: dict[str, float],
                     tie: tuple[float, np.ndarray], resamples: int, seed: int,
                     level: float = 0.95) -> tuple[bool, np.ndarray | None]:
    """The test of 'min-entropy leakage is 0' (the interval then reaches 0): (accepted,
    the restricted draws it was decided on, or None where the permutation draws decided).

    {ML = 0} holds every joint where one private value is the most likely in every output
    column, independence among them. Where I(A; B̂)'s permutation test accepts
    independence, ML̂ is tested against the permutation draws (``null``: exact under
    independence). Where it rejects, A and B̂ are dependent, the permutation draws are not
    the null's law (on a dependent joint with ML = 0 they rejected 0 in 33 % of samples),
    and ML̂ is tested against the restricted bootstrap of :func:`min_entropy_null`, valid
    at every point of {ML = 0} and conservative away from its ties (docs/error-bars.md)."""
    if boundary_accepts(centre["mi_bits"], null["mi_bits"], *tie, level=level):
        return boundary_accepts(estimate, null["min_entropy_leakage"], *tie, level=level), None
    restricted = min_entropy_null(problem, mapping, resamples, seed)
    values = null["min_entropy_leakage"] if restricted is None else restricted
    return boundary_accepts(estimate, values, *tie, level=level), restricted


def min_entropy_accepts(problem: pb.PrivacyProblem, mapping: Any, estimate: float,
                        null: dict[str, np.ndarray], centre: dict[str, float],
                        tie: tuple[float, np.ndarray], resamples: int, seed: int,
                        level: float = 0.95) -> bool:
    """The verdict of :func:`min_entropy_test` alone."""
    return min_entropy_test(problem, mapping, estimate, null, centre, tie, resamples, seed,
                            level)[0]


def min_entropy_excess(product: np.ndarray, restricted: np.ndarray | None,
                       level: float = 0.95) -> np.ndarray:
    """The draws whose ``level`` quantile min-entropy leakage's rejected lower end is
    shifted by (θ̂ less it, :func:`interval`): the product null's (``product``), or where
    its restricted test decided (:func:`min_entropy_test`) the ``restricted`` draws when
    their quantile is the larger. Why: under independence ML̂ is 0 in most samples, so
    the product null's excess is about 0 and the shifted end about θ̂, which the plug-in's
    upward bias at near-tied outputs puts above the truth; where the calibrated lower end
    reaches 0 that shifted end was the lower end, and it lay above the truth in 9.1 % of
    samples (measure_ci_coverage.py --seed 3, |A| = 4, 0.05 bits: 0.877 coverage). The
    restricted draws come from the sample's nearest point of {ML = 0}, its near-ties
    tied, where noise alone adds what the plug-in's bias adds near such ties."""
    product = np.asarray(product, dtype=float)
    if restricted is None:
        return product
    restricted = np.asarray(restricted, dtype=float)
    keep_p, keep_r = product[np.isfinite(product)], restricted[np.isfinite(restricted)]
    if keep_r.size == 0 or (keep_p.size and np.percentile(keep_p, 100 * level)
                            >= np.percentile(keep_r, 100 * level)):
        return product
    return restricted


def boundary_accepts(estimate: float, null_values: np.ndarray, tie_estimate: float,
                     tie_null: np.ndarray, level: float = 0.95, side: int = 1) -> bool:
    """The test of 'leaks nothing' at level 1 - ``level``, one-sided: θ̂ against the
    ``level`` quantile of ``null_values``, ties broken by a second statistic
    (``tie_estimate`` against ``tie_null``; the metric passes uniform draws,
    :func:`tie_breakers`). A notion whose
    plug-in has an atom at the boundary (min-entropy leakage is exactly 0 whenever every
    output's most likely private value is the prior's) would otherwise be accepted on
    the whole atom: 1.000 coverage at |A| = 4 under independence instead of 0.95.
    A Monte Carlo test (Davison & Hinkley 1997, §4.2.5): rejected when θ̂ lies at or above
    the ceil(level (B + 1))-th of the B null values, so that, the null values being
    exchangeable with θ̂ under independence (the permutation null of
    :func:`permuted_tables`), it rejects with probability at most 1 - ``level``."""
    null = side * np.asarray(null_values, dtype=float)
    tie = np.asarray(tie_null, dtype=float)
    keep = np.isfinite(null) & np.isfinite(tie)
    if not keep.any():
        return True
    null, tie = null[keep], tie[keep]
    order = np.lexsort((tie, null))
    k = order[min(max(int(np.ceil(level * (null.size + 1))) - 1, 0), null.size - 1)]
    value = side * estimate
    return bool(value < null[k] or (value == null[k] and tie_estimate <= tie[k]))


def tie_breakers(resamples: int, seed: int) -> tuple[float, np.ndarray]:
    """Uniform draws that break ties of :func:`boundary_accepts` (one for the sample, one per
    null draw), seeded like the resamples: random tie-breaking keeps the Monte Carlo test
    exact under independence (Davison & Hinkley 1997, §4.2.5) without reading anything
    else from the sample. Breaking them by I(A; B̂) instead read 'A and B̂ are dependent'
    as 'the notion is above its boundary': min-entropy leakage is exactly 0 on joints
    where every output's most likely secret is the prior's however dependent they are,
    and there a sample whose plug-in sat on that 0 got an interval excluding it."""
    u = np.random.default_rng([int(seed), 0x7E1]).random(int(resamples) + 1)
    return float(u[0]), u[1:]


#: notions that are sums over outputs of a maximum over private values (min-entropy
#: leakage, maximal leakage) or of the private values ranked by probability (guessing
#: entropy): :func:`sum_bounds` and :func:`contact_sum_interval` take each of them
SUMS_OF_MAXIMA = frozenset({"min_entropy_leakage", "maximal_leakage", "guessing_entropy"})

#: the notions whose end at the boundary, where their test rejects, is
#: :func:`contact_sum_interval`'s (:func:`rejected_sum`). Min-entropy leakage and guessing
#: entropy are left out: with it their cells below the band moved into or above it, and
#: the cells where min-entropy leakage's truth is nearly 0 (its restricted test accepts in
#: 69-98 % of samples) rose to 1.000, so the cells outside the band did not fall
#: (docs/error-bars.md, 'Sums of maxima, measured')
CONTACT_SUMS = frozenset({"maximal_leakage"})


def _max_bounds(est: np.ndarray, boot: np.ndarray, kappa: float) -> tuple[np.ndarray, np.ndarray]:
    """Σ_y max and Σ_y min over each output's contact set C_y = {a: θ̂_{a,y} ≥ max_b θ̂_{b,y}
    - κ s_{a,y}} of the resampled deviations h = θ* - θ̂ (``est``: (|A|, n), ``boot``:
    (B, |A|, n)); two (B,) arrays."""
    s = boot.std(axis=0, ddof=1)
    near = est >= est.max(axis=0, keepdims=True) - kappa * s
    h = boot - est[None]
    return (np.where(near[None], h, -np.inf).max(axis=1).sum(axis=-1),
            np.where(near[None], h, np.inf).min(axis=1).sum(axis=-1))


def _rank_bounds(est: np.ndarray, boot: np.ndarray, kappa: float) -> tuple[np.ndarray, np.ndarray]:
    """Guessing entropy's Σ_y Σ_i i Q_(i),y in the direction of each resample's deviation h,
    least and largest over the orders its tie groups allow: per output the private values
    sorted by Q̂ fall into groups (a value joins the one above it when within κ s of it), and
    within a group the ranks go to h sorted down (least: the directional derivative of
    this concave function) or up (largest). Two (B,) arrays."""
    k = est.shape[0]
    s = boot.std(axis=0, ddof=1)
    order = np.argsort(-est, axis=0, kind="stable")
    e, sd = np.take_along_axis(est, order, axis=0), np.take_along_axis(s, order, axis=0)
    h = np.take_along_axis(boot - est[None], np.broadcast_to(order, boot.shape), axis=1)
    group = np.vstack([np.zeros((1, e.shape[1])), np.cumsum(e[1:] < e[:-1] - kappa * sd[1:], axis=0)])
    width = 4.0 * (float(np.abs(h).max()) + 1.0)  # sorts by group first, then by h
    down = group * width - np.sort(group * width - h, axis=1)
    up = np.sort(group * width + h, axis=1) - group * width
    ranks = np.arange(1, k + 1, dtype=float)[None, :, None]
    return (down * ranks).sum(axis=(1, 2)), (up * ranks).sum(axis=(1, 2))


def sum_bounds(name: str, estimate_joint: np.ndarray, joints: np.ndarray,
               users: int) -> tuple[float, np.ndarray, np.ndarray] | None:
    """(θ̂, D_hi, D_lo) of a :data:`SUMS_OF_MAXIMA` notion: its plug-in on the output joint
    ``estimate_joint`` (|A|, n) and, over the resampled output joints ``joints`` (B, |A|, n),
    the directional derivative at θ̂ in the direction of each resample's deviation, taken
    over contact sets (:func:`_max_bounds`, :func:`_rank_bounds`, κ :func:`contact_kappa`)
    the largest way (D_hi) and the least way (D_lo): where the contact sets hold the true
    ties, θ̂ - θ lies between the two to first order, whatever the ties (Fang & Santos, Rev.
    Econ. Stud. 86, 2019, on directional derivatives; the bounds as in intersection
    bounds). The chain rule through the logs: ML = log2 Σ_y max_a Q(a, y) - log2 max_a
    p(a), the prior's max entering with a minus sign (its least deviation in D_hi); maximal
    leakage log2 Σ_y max_a W(y|a). None when a value is not finite or fewer than 2
    resamples are given."""
    joints = np.concatenate([np.asarray(estimate_joint, dtype=float)[None], joints])
    if len(joints) < 3 or not np.all(np.isfinite(joints)):
        return None
    kappa = contact_kappa(users)
    Q, pa, _, W = _stack(joints)
    ln2 = float(np.log(2.0))
    if name == "guessing_entropy":
        ranked = -np.sort(-Q[0], axis=0)
        low, high = _rank_bounds(Q[0], Q[1:], kappa)
        theta = float(ranked.sum(axis=1) @ np.arange(1, Q.shape[1] + 1))
        return theta, high, low
    terms = W if name == "maximal_leakage" else Q
    total = float(terms[0].max(axis=0).sum())
    up, down = (b / (total * ln2) for b in _max_bounds(terms[0], terms[1:], kappa))
    if name == "maximal_leakage":
        return float(np.log2(total)), up, down
    top = float(pa[0].max())
    p_up, p_down = _max_bounds(pa[0][:, None], pa[1:, :, None], kappa)
    theta = float(np.log2(total / top))
    return theta, up - p_down / (top * ln2), down - p_up / (top * ln2)


def contact_sum_interval(name: str, estimate_joint: np.ndarray, joints: np.ndarray,
                         users: int, level: float = 0.95,
                         bounds: tuple[float, float] = (0.0, float("inf"))) -> list[float] | None:
    """[θ̂ - q_{(1+level)/2}(D_hi), θ̂ - q_{(1-level)/2}(D_lo)] of :func:`sum_bounds`, clipped
    to ``bounds``: each end misses with at most its (1 - level) / 2 to first order when
    the contact sets hold the true ties, however many outputs nearly tie. The plug-in
    of a sum of maxima is biased up where terms nearly tie and its plain bootstrap is
    not consistent there (Andrews, Econometrica 68, 2000): the sample's bootstrap and the
    calibration put the lower end of min-entropy leakage above the truth in 11.5 % of
    samples on one joint (docs/error-bars.md). None when :func:`sum_bounds` is."""
    found = sum_bounds(name, estimate_joint, joints, users)
    if found is None:
        return None
    theta, high, low = found
    a, b = (1 - level) / 2, (1 + level) / 2
    lo, hi = np.clip([theta - np.quantile(high, b), theta - np.quantile(low, a)], *bounds)
    return [float(lo), float(hi)]


def rejected_sum(contact: list[float] | None, ci: list[float], side: int,
                 null_estimate: float) -> list[float]:
    """A :data:`CONTACT_SUMS` notion's interval where its boundary test rejects: the end
    at the boundary (the lower end of a leakage, ``side`` = 1; guessing entropy's upper
    end, -1) is :func:`contact_sum_interval`'s, kept beyond ``null_estimate``; the other
    end stays ``ci``'s. Why: the end at the boundary was the nearer of the base interval's
    end and θ̂ less the product null's excess, which for maximal leakage almost never
    missed (0 of 1,000 samples in every cell measured) beside an upper end that missed
    5-8 %; ``contact`` None (a value not finite) keeps ``ci``."""
    if contact is None:
        return ci
    if side > 0:
        lo = max(contact[0], float(np.nextafter(null_estimate, np.inf)))
        return [float(lo), float(max(ci[1], lo))]
    hi = min(contact[1], float(np.nextafter(null_estimate, -np.inf)))
    return [float(min(ci[0], hi)), float(hi)]


#: citation of the intervals (declared with every ``<output>_ci95``)
CITATION = ("Efron & Tibshirani, An Introduction to the Bootstrap, 1993; Beran, Biometrika 74, "
            "1987 (prepivoting); Chernozhukov, Lee & Rosen, Econometrica 81, 2013 "
            "(intersection bounds); Feldman & Cousins, Phys. Rev. D 57, 1998; Hay et al., "
            "DPBench, SIGMOD 2016")


def _declared() -> tuple[pb.Output, ...]:
    """``<output>_ci95`` for I(A; B̂), E[d] and every notion, in the notion's unit (neutral:
    an interval is not itself more or less private), and the samples record."""
    bases = [pb.Output("mi_bits", "bits"), pb.Output("distortion", "distortion"),
             *NOTION_OUTPUTS]
    return (*(pb.Output(f"{o.name}_ci95", o.unit, "neutral",
                        f"95 % bootstrap interval [lo, hi] of {o.name} over resampled users",
                        CITATION, of=o.name, relation="interval") for o in bases),
            pb.Output("bootstrap", "none", "neutral",
                      "per-resample values, draws key and estimates (paired comparisons)",
                      CITATION, payload="resamples"))


@dataclass(frozen=True)
class _Shared:
    """What every output's interval reads (:meth:`BootstrapIntervals._shared`): the
    permutation and product null draws, the values under independence, guessing entropy's
    prior spread, the double bootstrap's inner values and the sample's own terms, the
    smooth notions along the path to independence, the resamples' and the sample's output
    joints (None unless :func:`contact_sum_interval` is used), the users and the tie-breakers."""

    null: dict[str, np.ndarray]
    product: dict[str, np.ndarray]
    null_centre: dict[str, float]
    spread: dict[str, float]
    inner: dict[str, np.ndarray]
    own: dict[str, np.ndarray]
    path: dict[str, np.ndarray]
    joints: np.ndarray | None
    own_joint: np.ndarray | None
    users: int
    tie: tuple[float, np.ndarray]


class BootstrapIntervals(pb.Metric):
    """95 % intervals over resampled users for each exact privacy notion and E[d].

    Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993 (bias-corrected and basic
    intervals); Beran, Biometrika 74, 1987 and Hall, Ann. Statist. 14, 1986 (the level
    calibrated by a double bootstrap, for the maxima, total variation and maximal
    leakage); Fang & Santos, Rev. Econ. Stud. 86, 2019 (the bootstrap of a
    directional derivative, over contact sets); Chernozhukov,
    Lee & Rosen, Econometrica 81, 2013 (intersection bounds, for a maximum's upper end);
    Feldman &
    Cousins, Phys. Rev. D 57, 1998 (intervals at a boundary);
    Hay et al., "Principled evaluation of differentially private algorithms using
    DPBench", SIGMOD 2016 (report spread, pair comparisons).

    :param resamples: B, the number of resamples of the users with replacement (an integer
        >= 20); more narrows the intervals' own noise and costs time in proportion.
    :param seed: the seed of the resamples (an integer >= 0): runs on the same data with the
        same seed get the same draws, so ``compare`` can pair them.
    :param interval: ``normal`` (the bias-corrected normal interval θ̂ - b ± 1.96 sd(θ*), with
        the test-decided and calibrated ends the module describes; the default) or ``basic``
        (the basic interval 2θ̂ - q of the resamples' percentiles).
    """

    name = "bootstrap"
    description = ("95% bootstrap intervals over resampled users for each exact privacy "
                   "notion and the distortion (data sets built from user records)")
    needs = frozenset({"mapping"})
    outputs = _declared()

    def __init__(self, resamples: int = 200, seed: int = 0, interval: str = "normal") -> None:
        self.resamples = resamples
        self.seed = seed
        self.interval = interval

    def check_params(self) -> None:
        positive_int("resamples", self.resamples, minimum=20)
        positive_int("seed", self.seed, minimum=0)
        one_of("bootstrap: interval", self.interval, tuple(INTERVALS))

    def applies(self, problem, result) -> bool:
        return super().applies(problem, result) and user_cells(problem) is not None

    def unmet(self, problem: pb.PrivacyProblem) -> str:
        if user_cells(problem) is None:
            return ("needs the users behind p(A, B) (per-user records with 'private' and "
                    "'symbol' columns), which this data set does not carry: it is not built "
                    "from user records")
        return super().unmet(problem)

    def _intervals(self, problem: pb.PrivacyProblem, mapping: Any,
                   samples: dict[str, np.ndarray], centre: dict[str, float],
                   cells: dict[str, np.ndarray],
                   joints: np.ndarray | None = None) -> dict[str, Any]:
        """``<output>_ci95`` of every output (:meth:`_notion_interval`), each on its own:
        an output whose interval raises gets the exception as its value, which the runner
        drops and names in the run's ``metric_errors`` while the other intervals are kept
        (a bug in one notion's construction, such as the NaN an exact tie once gave the
        maxima, loses that notion's interval only). ``joints``: the resamples' output
        joints (:func:`contact_sum_interval`)."""
        shared = self._shared(problem, mapping, joints)
        values: dict[str, Any] = {}
        for name, v in samples.items():
            try:
                values[f"{name}_ci95"] = self._notion_interval(problem, mapping, name, v,
                                                               centre, cells, shared)
            except Exception as exc:  # noqa: BLE001 - one notion must not sink the others
                values[f"{name}_ci95"] = exc
        return values

    def _shared(self, problem: pb.PrivacyProblem, mapping: Any,
                joints: np.ndarray | None) -> _Shared:
        """What every output's interval reads: the null draws, the calibration, the path."""
        resamples, seed = int(self.resamples), int(self.seed)
        normal = self.interval == "normal"
        inner = self._inner(problem, mapping, CALIBRATED) if normal else {}
        sums = joints is not None and normal
        counts = user_cells(problem)
        return _Shared(
            null=bootstrap_samples(problem, mapping, resamples=resamples, seed=seed,
                                   independent=True),
            product=bootstrap_samples(problem, mapping, resamples=resamples, seed=seed,
                                      independent=True, product=True),
            null_centre=independent_estimates(problem, mapping),
            spread={"guessing_entropy": prior_guessing_spread(problem, resamples, seed)},
            inner=inner,
            own=notion_cells(sp.csc_array(mapping), problem.joint[None]) if inner else {},
            path=path_values(problem, mapping) if normal else {},
            joints=joints if sums else None,
            own_joint=(output_joints(sp.csc_array(mapping), problem.joint[None])[0]
                       if sums else None),
            users=0 if counts is None else int(counts.sum()),
            tie=tie_breakers(resamples, seed))

    def _notion_interval(self, problem: pb.PrivacyProblem, mapping: Any, name: str,
                         v: np.ndarray, centre: dict[str, float], cells: dict[str, np.ndarray],
                         sh: _Shared) -> list[float]:
        """``<name>_ci95``: the base interval (the bias-corrected normal
        interval of the sample's bootstrap; for LIP, LDP ε and t-closeness, maxima of
        smooth terms (``cells``: the terms on each resample), the intersection-bounds
        interval (:func:`intersection_interval`); for min-entropy leakage, total variation
        and maximal leakage the double bootstrap's calibration;
        ``interval=basic``: the basic
        interval, for the maxima its upper end at least θ̂ + z sd), then the boundary
        test against the permutation null (min-entropy leakage: :func:`min_entropy_accepts`);
        for I and Sibson (``interval=normal``) the
        inversion along the path to independence (:func:`inverted_interval`), and for LIP,
        LDP ε and t-closeness where the test accepts an upper end at least
        :func:`winner_upper_end`, where it rejects :func:`rejected_maximum` (the lower
        end of :func:`contact_set_interval`), for maximal leakage (:data:`CONTACT_SUMS`)
        where it rejects :func:`rejected_sum`."""
        null, product, own, tie = sh.null, sh.product, sh.own, sh.tie
        side, bounds = BOUNDARY_SIDE.get(name), value_range(name, problem.n_private)
        tested = product if name in PRODUCT_NULL else null
        verdict, excess = None, product[name]
        if name == "min_entropy_leakage":
            verdict, restricted = min_entropy_test(problem, mapping, centre[name], null,
                                                   centre, tie, int(self.resamples),
                                                   int(self.seed))
            excess = min_entropy_excess(product[name], restricted)
        top = (intersection_interval(own[name][0], cells[name], bounds=bounds)
               if name in own and name in cells else None)
        accept = top is not None and boundary_accepts(centre[name], null[name], *tie)
        winner = winner_upper_end(own[name][0], cells[name], bounds=bounds) if accept else None
        if name in sh.inner:
            base = calibrated_interval(centre[name], v, sh.inner[name], bounds=bounds)
        else:
            base = INTERVALS[self.interval](centre[name], v, bounds=bounds)
        if name in MAXIMA and self.interval != "normal":
            base = maximum_upper_end(centre[name], v, base, bounds=bounds)
        ci = interval(centre[name], v, sh.null_centre[name] if side else None,
                      tested[name] if side else None, side or 1, bounds=bounds, base=base,
                      null_spread=sh.spread.get(name, 0.0), tie=tie if side else None,
                      excess_values=excess, accepted_high=accepted_high(
                          name, centre[name], v, top, bounds, winner),
                      accepted=verdict)
        if name in SMOOTH and name in sh.path:
            accept = boundary_accepts(centre[name], null[name], *tie)
            return inverted_interval(centre[name], v, null[name], sh.path[name], accept,
                                     bounds=bounds) or ci
        if top is not None and not accept:
            contact = contact_set_interval(own[name][0], cells[name], sh.users, bounds=bounds)
            return rejected_maximum(contact, base, top[1], sh.null_centre[name], ci,
                                    bounds=bounds)
        if sh.joints is not None and name in CONTACT_SUMS and not (
                verdict if verdict is not None else
                boundary_accepts(centre[name], tested[name], *tie, side=side)):
            return rejected_sum(contact_sum_interval(name, sh.own_joint, sh.joints, sh.users,
                                                     bounds=bounds), ci, side,
                                sh.null_centre[name])
        return ci

    def _inner(self, problem: pb.PrivacyProblem, mapping: Any,
               names: frozenset[str]) -> dict[str, np.ndarray]:
        """The double bootstrap's inner values of the :data:`CALIBRATED` notions: the first
        ``CALIBRATION[0]`` of this metric's resamples, each resampled ``CALIBRATION[1]`` times."""
        first, each = CALIBRATION
        outer = outer_counts(user_cells(problem), int(self.resamples), int(self.seed),
                             min(first, int(self.resamples)))
        return inner_values(problem, mapping, outer, names, each, int(self.seed))

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        resamples = int(self.resamples)
        terms: dict[str, np.ndarray] = {}
        stack: list[np.ndarray] = []
        samples = bootstrap_samples(problem, result.mapping, resamples=resamples,
                                    seed=int(self.seed), cell_values=terms, output_stack=stack)
        if samples is None:
            return {}
        cells = user_cells(problem)
        centre = estimates(problem, result.mapping)
        values = self._intervals(problem, result.mapping, samples, centre, terms,
                                 np.concatenate(stack) if stack else None)
        values["bootstrap"] = {
            "resamples": resamples, "seed": int(self.seed), "users": int(cells.sum()),
            "interval": self.interval,
            "key": draws_key(data_hash(problem), resamples, int(self.seed)),
            "estimates": centre,
            "ranges": finite_ranges(samples, problem.n_private),
            "samples": {name: [float(f"{x:.9g}") for x in v] for name, v in samples.items()},
        }
        return values


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [BootstrapIntervals]
