"""Column generation for the catalogue's LPs: exact optima without building n² variables.

Every catalogue LP (``maxleak_optimal``, ``map_optimal``, ``lip_optimal``, ``perfect_privacy``)
has mapping variables X[i, j] = p(b̂_i | b_j), one simplex row per live column j, and
*per-output row families*: for every output i and every r of a family,
lower <= Σ_j coef[r, j] X[i, j] (- t_i) <= upper, with only |A| (or |A|², for LDP) rows per
output. Optimal mappings are sparse, so a restricted master over an active set of pairs
(i, j) holds them; the rows stay complete (k·n + m + 1 rows), only the n·m variables are
restricted.

Each round the master (HiGHS, one persistent model: new columns keep the basis, primal
simplex continues) gives row duals π. Pricing computes, in blocks of outputs, the reduced
cost of every pair, rc'[i, j] = c[i, j] - Σ_rows π_r A[r, (i, j)] (the simplex duals u_j left
out), and adds the ``per_column`` most negative rc' - u_j of each column. The same pass
gives the certificate, the Lagrangian bound of the simplex rows

    LB(π) = Σ_j min_i rc'[i, j] + π_budget·Δ + Σ_i min(0, rc_t_i)·ub_t,

valid for any π of the right signs (π is projected onto them first), so it is a proven
lower bound on the full LP's optimum whatever the master's accuracy; the master's objective
is an upper bound (a feasible point). The run stops when
(objective - LB) / max(|objective|, |LB|, 1e-9) <= ``tol`` (default 1e-6). Epigraph
variables t_i (maximal leakage, Bayes vulnerability) get the upper bound 1, which every
optimum meets (W(b̂|a) <= 1, p(a, b̂) <= 1), so their term in LB is finite.

The first master has, per column j, its nearest output and the best constant output: the
nearest-output mapping meets any feasible budget, the constant mapping meets LIP, LDP and
perfect privacy, so every master is feasible.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

from . import _pp_flow

#: a solver point whose entries or column sums are off by more than this is refused
ACCEPT_TOL = 1e-6
#: entries below this are dropped from the returned mapping
DROP_TOL = 1e-12
#: the dual repair runs in rounds where at most m / REPAIR_SHARE columns price out (was
#: m / 4: random Hamming n = 600, LIP at ε = 0.1, 0.113 s CPU against 0.141 s, same 6
#: rounds; census top 2,000, maximal leakage at 0.1 d_const, 2.8 s against 3.4 s, 23 rounds)
REPAIR_SHARE = 64
#: how many of the most frequent per-output duals :meth:`ColumnGeneration.repair` tries
REPAIR_CANDIDATES = 4
#: outputs per column in the first master of LIP, LDP and perfect privacy (the nearest ones;
#: the epigraph LPs start from each column's nearest output)
INITIAL_NEAREST = 8
#: up to this many outputs per column while the first master stays within INITIAL_COLUMNS
#: (random Hamming n = 600, ε = 0.1: 16 nearest take 6 rounds and 0.13-0.15 s CPU against
#: 9 rounds and 0.17-0.19 s with 8; perfect privacy 0.09-0.11 s against 0.13-0.14 s)
INITIAL_NEAREST_SMALL = 16
INITIAL_COLUMNS = 10_000
#: in such a small first master with ``SparseLP.partner_seed``: each column's
#: PARTNERS_NEAREST nearest outputs and its PARTNERS nearest outputs that lean the other way
#: (:meth:`ColumnGeneration.partner_pairs`) instead of its 16 nearest (random Hamming
#: n = 600, LIP at ε = 0.1, CPU ms: 2/12 56-66, 4/12 62, 2/8 62, 2/16 63, 8/8 87, 12/4 77)
PARTNERS_NEAREST = 2
PARTNERS = 12
#: the perfect-privacy LP starts from the min-cost flow (``_pp_flow``) from this many live
#: columns, where the 16 nearest no longer fit INITIAL_COLUMNS (random Hamming n = 600:
#: 0.23 s with the flow against 0.09 s without; census top 2,000: 1.5 s against 7.9 s)
SEED_MIN_M = 626
#: below SEED_MIN_M the perfect-privacy LP's flow seed offers this many partners (of each
#: kind) instead of ``_pp_flow.SEED_PARTNERS`` (300): CPU ms with it against the 16 nearest,
#: random Hamming n = 600 53 vs 83 (10: 57, 16: 58, 20: 64, 300: 294), census top 500
#: 102 vs 301, synthetic m = 8 140 vs 158
SMALL_SEED_PARTNERS = 12
#: a block whose candidates exceed this many per column keeps each column's best only
CANDIDATE_CAP = 16
#: a first master with at least this many columns is solved by the interior point method
#: (census with every profile, perfect privacy: 83,277 columns, 16 s against more than 23
#: minutes by the dual simplex; random Hamming n = 4,096, 36,864 columns: 50 s against 26 s
#: for the whole perfect-privacy run, so not there)
IPM_COLUMNS = 60_000
#: the private phase runs up to this n: perfect privacy's own LP is not done in minutes on
#: census with every profile (n = 9,261), and the phase must not cost more than it saves
PRIVATE_MAX_N = 5_000
#: rounds the perfectly private phase may take before the epigraph LP goes on alone
PRIVATE_ROUNDS = 40
#: HiGHS's simplex_strategy of the primal simplex (the epigraph LPs' re-solves)
PRIMAL_SIMPLEX = 4
#: the distortion LPs (LIP, LDP, perfect privacy) re-solve by the primal simplex from this
#: many live columns too (census top 5,000, LIP at ε = 0.1 from the flow: 22.9 s in the
#: re-solves against 34.3 s; census top 2,000: 2.1 s CPU against 2.4 s; random Hamming
#: n = 600: 0.105 s against 0.085 s; random Hamming n = 4,096 7.8 s against 7.4 s, so not
#: there)
PRIMAL_MIN_M = 5000
#: bytes of one pricing block (outputs x live columns, float64)
BLOCK_BYTES = 48 * 2**20
_INF = 1e30


@dataclass
class Family:
    """Rows lower <= Σ_j coef[r, j] X[i, j] - epigraph·t_i <= upper, for every output i and r."""

    coef: np.ndarray
    lower: float
    upper: float
    epigraph: bool = False


@dataclass
class SparseLP:
    """One catalogue LP, described without its n² variables.

    :param objective: ``"distortion"`` (minimise E[d]) or ``"epigraph"`` (minimise Σ_i t_i).
    :param delta: the budget row E[d] <= Δ, or ``None``.
    """

    families: list[Family]
    objective: str
    delta: float | None = None
    #: a bound known in closed form (maximal leakage: Σ max_a W >= 1; Bayes vulnerability:
    #: >= max_a p(a); E[d]: >= the nearest-output E[d]); LB is never reported below it
    floor: float = -np.inf
    #: every perfectly private mapping attains ``floor`` (maximal leakage, Bayes
    #: vulnerability): when the bound sits at the floor, :meth:`ColumnGeneration.run` first
    #: looks for a perfectly private mapping within the budget (``private_phase``)
    private_floor: bool = False
    #: with |A| = 2 the first master is the support of the perfect-privacy min-cost flow
    #: (``_pp_flow``) when OR-Tools is installed: the perfect-privacy LP, and LIP / LDP,
    #: for which every perfectly private mapping is feasible at any ε
    flow_seed: bool = False
    #: a small first master (up to 1,111 live columns, where more than INITIAL_NEAREST
    #: outputs per column fit INITIAL_COLUMNS) takes each column's nearest partners that
    #: lean the other way (:meth:`ColumnGeneration.partner_pairs`): LIP and LDP at small ε
    #: (``lip_optimal.PARTNER_MAX_EPSILON`` has the measurements; random Hamming n = 600,
    #: LIP at ε = 0.1: 5 rounds and 56-65 ms CPU against 6 and 77-80 ms). Not perfect
    #: privacy (synthetic m = 8: 356 against 162 ms; it has its flow seed)
    partner_seed: bool = False
    #: the flow seed also below SEED_MIN_M, offering SMALL_SEED_PARTNERS partners: the
    #: perfect-privacy LP (not LIP / LDP: at ε = 1 on random Hamming n = 600 they took
    #: 90 / 76 ms CPU from it against 26 / 38 ms)
    small_flow_seed: bool = False


@dataclass
class ColgenResult:
    """The master's point as a sparse mapping, its objective, the proven bound, the trace."""

    mapping: sp.csc_array
    objective: float
    bound: float
    gap: float
    rounds: int
    columns: int
    rows: int
    converged: bool
    time_pricing_s: float = 0.0
    time_lp_s: float = 0.0
    trace: list[tuple[float, float]] = field(default_factory=list)
    #: the point came from :meth:`ColumnGeneration.private_phase` (a perfectly private
    #: mapping at the floor)
    private: bool = False


def set_live_columns(lp: Any, problem: pb.PrivacyProblem) -> None:
    """The columns every mapping LP is written over, set on ``lp``.

    ``live`` (j with p(b_j) > 0), ``m``, ``p`` = p(b_j), ``joint`` and ``cond`` = p(b_j | a)
    over the live j and the private values with p(a) > 0 (W(b̂|a) is undefined for the others).
    """
    lp.live = np.flatnonzero(problem.p_b > 0)
    lp.m = lp.live.size
    live_a = problem.p_a > 0
    lp.p = problem.p_b[lp.live]
    lp.joint = problem.joint[np.ix_(live_a, lp.live)]
    #: cond[a, jj] = p(b_j | a) over the live a and j
    lp.cond = lp.joint / problem.p_a[live_a][:, None]


class Problem:
    """The arrays of one problem the LPs are written over (live columns, cond, joint, dcost)."""

    def __init__(self, problem: pb.PrivacyProblem) -> None:
        self.n = problem.n
        set_live_columns(self, problem)
        #: dcost[i, jj] = p(b_j) d(b̂_i, b_j), dense n x m, built in blocks of outputs
        self.dcost = np.empty((self.n, self.m))
        step = block_rows(self.m)
        for lo in range(0, self.n, step):
            rows = np.arange(lo, min(lo + step, self.n))
            self.dcost[rows] = problem.distortion.block(rows, self.live) * self.p[None, :]

    def least_distortion(self) -> float:
        """min E[d] over all mappings: each b_j to its nearest output."""
        return float(self.dcost.min(axis=0).sum())

    def channel(self, X: Any) -> np.ndarray:
        """W[a, i] = p(b̂_i | a) over the live private values (X dense or sparse)."""
        return np.asarray(sp.csr_array(sp.csc_array(X)[:, self.live]) @ self.cond.T).T

    def output_marginal(self, X: Any) -> np.ndarray:
        """p(b̂_i)."""
        return np.asarray(sp.csc_array(X)[:, self.live] @ self.p)


def block_rows(m: int) -> int:
    """Outputs per pricing block so that a block of reduced costs takes ~BLOCK_BYTES."""
    return max(1, min(BLOCK_BYTES // (8 * max(m, 1)), 1 << 20))


class ColumnGeneration:
    """The restricted master of one :class:`SparseLP` and its pricing (see the module)."""

    def __init__(self, data: Problem, lp: SparseLP, tol: float = 1e-6, max_rounds: int = 1000,
                 per_column: int = 4) -> None:
        import highspy

        from privbench.plugins.lp.highs import quiet_highs, usable_threads

        self.d, self.lp, self.tol = data, lp, float(tol)
        self.max_rounds, self.per_column = int(max_rounds), int(per_column)
        n, m = data.n, data.m
        self.offsets = []
        lo, up = [np.ones(m)], [np.ones(m)]
        at = m
        for f in lp.families:
            self.offsets.append(at)
            k = f.coef.shape[0] * n
            lo.append(np.full(k, max(f.lower, -_INF)))
            up.append(np.full(k, min(f.upper, _INF)))
            at += k
        self.budget_row = at if lp.delta is not None else -1
        if lp.delta is not None:
            lo.append(np.array([-_INF]))
            up.append(np.array([float(lp.delta)]))
            at += 1
        self.n_rows = at
        h = quiet_highs(highspy)
        for key, value in (("output_flag", False), ("presolve", "off"),
                           ("threads", usable_threads(highspy, 1)),
                           ("primal_feasibility_tolerance", 1e-9),
                           ("dual_feasibility_tolerance", 1e-9)):
            h.setOptionValue(key, value)
        lo_all, up_all = np.concatenate(lo), np.concatenate(up)
        h.addRows(at, lo_all, up_all, 0, np.zeros(0, np.int32), np.zeros(0, np.int32),
                  np.zeros(0))
        self.h, self._hs = h, highspy
        self.n_t = n if lp.objective == "epigraph" else 0
        if self.n_t:
            self._add_epigraph()
        #: every family's coefficients stacked, (R, m): one product prices all rows
        self.coef = (np.concatenate([f.coef for f in lp.families], axis=0) if lp.families
                     else np.zeros((0, m)))
        self.pairs_i = np.zeros(0, np.int64)
        self.pairs_j = np.zeros(0, np.int64)
        self.in_master = np.zeros((n, m), dtype=bool)
        self._solved = False
        #: the dual repair runs in rounds where at most this many columns price out: m /
        #: REPAIR_SHARE for the epigraph LPs; for the E[d] LPs only where none does (the
        #: loop would stop open), as elsewhere it never saved a round (random Hamming
        #: n = 600, LIP/LDP/PP: same rounds, 5-20 % less CPU without; census top 2,000 too)
        self.repair_below = m // REPAIR_SHARE if self.n_t else 0

    # -- the master ------------------------------------------------------------------------
    def _add_epigraph(self) -> None:
        """t_i, cost 1, bounds [0, 1], -1 in every row of output i of the epigraph families."""
        n = self.d.n
        rows, cols = [], []
        for f, off in zip(self.lp.families, self.offsets, strict=True):
            if f.epigraph:
                for r in range(f.coef.shape[0]):
                    rows.append(off + r * n + np.arange(n))
                    cols.append(np.arange(n))
        A = sp.csc_array((-np.ones(n * len(rows)), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(self.n_rows, n))
        self.h.addCols(n, np.ones(n), np.zeros(n), np.ones(n), A.nnz,
                       A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data)

    def add_pairs(self, i: np.ndarray, j: np.ndarray) -> int:
        """Add X[i, j] for the given (output, live column) pairs not yet in the master."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        key = np.unique(i * self.d.m + j)
        i, j = key // self.d.m, key % self.d.m
        fresh = ~self.in_master[i, j]
        i, j = i[fresh], j[fresh]
        if i.size == 0:
            return 0
        self.in_master[i, j] = True
        n, K = self.d.n, i.size
        # each pair's entries, one row of (K, entries) per pair, in ascending row order:
        # its simplex row j < m, each family's rows off + r·n + i, the budget row last;
        # zero coefficients dropped, read row-major into CSC (no COO sort: 3.7 -> ~1 ms
        # per run on random Hamming n = 600)
        rows, vals = [j[:, None]], [np.ones((K, 1))]
        for f, off in zip(self.lp.families, self.offsets, strict=True):
            rows.append(off + np.arange(f.coef.shape[0])[None, :] * n + i[:, None])
            vals.append(f.coef[:, j].T)
        dc = self.d.dcost[i, j]
        if self.budget_row >= 0:
            rows.append(np.full((K, 1), self.budget_row))
            vals.append(dc[:, None])
        R, V = np.hstack(rows), np.hstack(vals)
        nz = V != 0
        indptr = np.zeros(K + 1, np.int32)
        np.cumsum(nz.sum(axis=1), out=indptr[1:])
        index, data = R[nz].astype(np.int32), V[nz]
        cost = dc if self.lp.objective == "distortion" else np.zeros(K)
        self.h.addCols(K, cost, np.zeros(K), np.full(K, _INF), data.size, indptr, index, data)
        self.pairs_i = np.concatenate([self.pairs_i, i])
        self.pairs_j = np.concatenate([self.pairs_j, j])
        return K

    def solve_master(self) -> tuple[float, np.ndarray, np.ndarray]:
        """Objective, column values and row duals of the restricted master.

        A large first solve (``IPM_COLUMNS``) is cold: HiGHS's interior point method with
        crossover (a basis for the later warm starts), since its dual simplex took more than
        23 minutes on the perfect-privacy master of census with every profile (18,522 rows,
        83,277 columns) where the interior point method takes 16 s; later solves continue
        the simplex, for the epigraph LPs the primal simplex (new columns leave the basis
        primal feasible: synthetic m = 10 at 0.3 d_const, maximal leakage, 16.5 s CPU and
        46,000 iterations in 191 rounds against 84 s and 230,000 by HiGHS's default choice,
        the dual simplex), and for the distortion LPs from ``PRIMAL_MIN_M`` live columns."""
        first = not self._solved
        if first and self.pairs_i.size >= IPM_COLUMNS:
            self.h.setOptionValue("solver", "ipm")
        self.h.run()
        if first:
            self.h.setOptionValue("solver", "simplex")
            if self.n_t or self.d.m >= PRIMAL_MIN_M:
                self.h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
            self._solved = True
        status = self.h.getModelStatus()
        if status != self._hs.HighsModelStatus.kOptimal:
            raise pb.PrivbenchError(f"the restricted master is {self.h.modelStatusToString(status)}")
        sol = self.h.getSolution()
        return (float(self.h.getInfo().objective_function_value),
                np.asarray(sol.col_value), np.asarray(sol.row_dual))

    # -- pricing ---------------------------------------------------------------------------
    def project(self, y: np.ndarray) -> list[np.ndarray]:
        """Each family's duals as (R, n), projected onto the signs its bounds allow."""
        out = []
        for f, off in zip(self.lp.families, self.offsets, strict=True):
            R = f.coef.shape[0]
            pi = y[off: off + R * self.d.n].reshape(R, self.d.n).copy()
            if f.lower <= -_INF or not np.isfinite(f.lower):
                np.minimum(pi, 0.0, out=pi)
            if f.upper >= _INF or not np.isfinite(f.upper):
                np.maximum(pi, 0.0, out=pi)
            out.append(pi)
        return out

    def price(self, y: np.ndarray, repair: bool = False, columns: bool = True
              ) -> tuple[float, np.ndarray, np.ndarray]:
        """The Lagrangian bound of duals ``y`` and the new pairs (i, j) with rc' - u_j < 0.

        Per column the candidates are the pairs within half of its most negative reduced
        cost (at most ``per_column`` of them, the best first). ``repair`` replaces the
        duals by :meth:`repair`'s (a bound only: ``columns=False``).
        """
        d, n, m = self.d, self.d.n, self.d.m
        u = y[:m]
        lam = min(float(y[self.budget_row]), 0.0) if self.budget_row >= 0 else 0.0
        weight = (1.0 if self.lp.objective == "distortion" else 0.0) - lam
        pis = self.repair(self.project(y), u, weight) if repair else self.project(y)
        bound = self.fixed_terms(pis, lam)
        P = np.concatenate(pis, axis=0) if pis else np.zeros((0, n))
        colmin = np.full(m, np.inf)
        cand_i, cand_j, cand_v = [], [], []
        step = block_rows(m)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            # rc' = weight·dcost - P'coef, in place in the product's array (one pass)
            rc = P[:, lo:hi].T @ self.coef if P.shape[0] else np.zeros((hi - lo, m))
            np.subtract(d.dcost[lo:hi] if weight == 1.0 else weight * d.dcost[lo:hi], rc,
                        out=rc)
            least = rc.min(axis=0)
            np.minimum(colmin, least, out=colmin)
            if not columns:
                continue
            # rc' - u_j only on the columns where some pair prices out (late rounds: few)
            best = least - u
            neg = np.flatnonzero(best < 0)
            if neg.size == 0:
                continue
            sub = rc[:, neg]
            sub -= u[neg][None, :]
            ii, kk = np.nonzero(sub <= 0.5 * best[neg][None, :])
            if ii.size > CANDIDATE_CAP * m:  # near-equal outputs: each column's best only
                kk = np.arange(neg.size)
                ii = sub.argmin(axis=0)
            cand_i.append(ii + lo)
            cand_j.append(neg[kk])
            cand_v.append(sub[ii, kk])
        if not cand_i:
            cand_i, cand_j, cand_v = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)]
        bound = max(bound + float(colmin.sum()), self.lp.floor)
        if not columns:
            return bound, np.zeros(0, np.int64), np.zeros(0, np.int64)
        return bound, *self._best(np.concatenate(cand_i), np.concatenate(cand_j),
                                  np.concatenate(cand_v))

    def fixed_terms(self, pis: list[np.ndarray], lam: float) -> float:
        """The bound's terms other than Σ_j min_i rc': budget, finite row bounds, t_i."""
        bound = lam * float(self.lp.delta) if self.budget_row >= 0 else 0.0
        for f, pi in zip(self.lp.families, pis, strict=True):
            if np.isfinite(f.lower):
                bound += f.lower * float(np.clip(pi, 0.0, None).sum())
            if np.isfinite(f.upper):
                bound += f.upper * float(np.clip(pi, None, 0.0).sum())
        if self.n_t:
            rc_t = 1.0 + sum(pi.sum(axis=0) for f, pi in zip(self.lp.families, pis, strict=True)
                             if f.epigraph)
            bound += float(np.minimum(rc_t, 0.0).sum())
        return bound

    def repair(self, pis: list[np.ndarray], u: np.ndarray, weight: float) -> list[np.ndarray]:
        """Per output, the dual among a few candidates whose reduced costs are least negative.

        A master dual leaves the rows of outputs without columns (and degenerate ones) at
        arbitrary values; any sign-feasible choice gives a valid bound, and the bound reaches
        the master's objective once every output i has h_i = min_j rc[i, j] - u_j >= 0. The
        candidates: the output's own dual (for the epigraph LPs scaled to Σ_r |π_r| = 1, which
        only raises rc' as every coefficient is >= 0 and keeps rc_t = 0), the most frequent
        duals of the other outputs, and for the epigraph LPs each vertex -e_r.
        """
        d, n, m = self.d, self.d.n, self.d.m
        own = np.concatenate(pis, axis=0)  # (R, n)
        coef = self.coef  # (R, m)
        epi = self.n_t > 0
        if epi:
            size = np.abs(own).sum(axis=0)
            own = np.where(size > 0, own / np.where(size > 0, size, 1.0), own)
        rounded = np.round(own.T, 9)
        uniq, counts = np.unique(rounded, axis=0, return_counts=True)
        cands = [uniq[k] for k in np.argsort(-counts)[:REPAIR_CANDIDATES]]
        if epi:
            cands += [-np.eye(coef.shape[0])[r] for r in range(coef.shape[0])]
        C = np.array(cands)  # (c, R)
        V = C @ coef  # (c, m): the dual term of each candidate
        best_h = np.full(n, -np.inf)
        choice = np.full(n, -1)
        step = block_rows(m)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            base = weight * d.dcost[lo:hi] - u[None, :]
            h_own = (base - own[:, lo:hi].T @ coef).min(axis=1)
            best_h[lo:hi] = h_own
            for c in range(C.shape[0]):
                h = (base - V[c][None, :]).min(axis=1)
                better = h > best_h[lo:hi] + 1e-15
                best_h[lo:hi][better] = h[better]
                choice[lo:hi][better] = c
        swap = choice >= 0
        own[:, swap] = C[choice[swap]].T
        out, at = [], 0
        for pi in pis:
            out.append(own[at: at + pi.shape[0]])
            at += pi.shape[0]
        return out

    def _best(self, i: np.ndarray, j: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``per_column`` most negative candidates of each column, not yet in the master."""
        fresh = ~self.in_master[i, j]
        i, j, v = i[fresh], j[fresh], v[fresh]
        order = np.lexsort((v, j))
        i, j = i[order], j[order]
        first = np.searchsorted(j, j, side="left")
        keep = np.arange(j.size) - first < self.per_column
        return i[keep], j[keep]

    # -- the loop --------------------------------------------------------------------------
    def initial_pairs(self) -> None:
        """Each column's ``INITIAL_NEAREST`` nearest outputs (up to ``INITIAL_NEAREST_SMALL``
        while that keeps the first master within ``INITIAL_COLUMNS``) and the constant output
        of least E[d]: an output's rows (LIP, perfect privacy) can only balance once several columns
        with different posteriors reach it, which one nearest output per column never gives.
        With ``SparseLP.partner_seed`` a small first master takes ``PARTNERS_NEAREST`` nearest
        outputs and ``PARTNERS`` opposite-leaning ones (:meth:`partner_pairs`) instead."""
        d = self.d
        if (self.lp.flow_seed and (d.m >= SEED_MIN_M or self.lp.small_flow_seed)
                and self.seed_from_flow()):
            return
        # the epigraph LPs need no balancing, and a larger first master there costs HiGHS a
        # long degenerate cold solve (random Hamming n = 2,000 at Δ = 0.1 d_const: 47 s)
        wide = max(INITIAL_NEAREST, min(INITIAL_NEAREST_SMALL, INITIAL_COLUMNS // max(d.m, 1)))
        k = min(1 if self.n_t else wide, d.n)
        step = block_rows(d.n)
        rows, cols = [], []
        if self.lp.partner_seed and wide > INITIAL_NEAREST and d.cond.shape[0] > 1:
            k = min(PARTNERS_NEAREST, d.n)
            rows, cols = (list(a) for a in zip(self.partner_pairs(PARTNERS), strict=True))
        for lo in range(0, d.m, step):
            hi = min(lo + step, d.m)
            blk = d.dcost[:, lo:hi]
            top = np.argpartition(blk, k - 1, axis=0)[:k] if k < d.n else \
                np.broadcast_to(np.arange(d.n)[:, None], (d.n, hi - lo))
            rows.append(top.ravel())
            cols.append(np.broadcast_to(np.arange(lo, hi), top.shape).ravel())
        const = np.concatenate([d.dcost[lo: lo + step].sum(axis=1) for lo in range(0, d.n, step)])
        j = np.arange(d.m)
        self.add_pairs(np.concatenate(rows + [np.full(d.m, int(const.argmin()))]),
                       np.concatenate(cols + [j]))

    def partner_pairs(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Each column's ``k`` nearest outputs whose own symbol leans the other way: the
        posterior deviations p(a | b_i) - p(a) and p(a | b_j) - p(a) have a negative inner
        product (opposite signs with two private values). An output's LIP rows balance
        only when columns of both leanings reach it, and its nearest column is its own
        symbol, so these are the pairs the optimum mixes in (random Hamming n = 600 at
        ε = 0.1: all 92 optimal pairs missing from the 16 nearest were such pairs)."""
        d = self.d
        dev = d.joint / d.p[None, :] - d.joint.sum(axis=1)[:, None]  # (|A|, m)
        lean = np.zeros((dev.shape[0], d.n))
        lean[:, d.live] = dev  # a dead output symbol leans nowhere
        cost = np.where(lean.T @ dev < 0, d.dcost, np.inf)
        k = min(k, d.n)
        top = np.argpartition(cost, k - 1, axis=0)[:k]
        ok = np.isfinite(np.take_along_axis(cost, top, axis=0))
        return top[ok], np.broadcast_to(np.arange(d.m), top.shape)[ok]

    def seed_from_flow(self) -> bool:
        """The first master with |A| = 2 (perfect privacy, LIP, LDP): the support of
        ``_pp_flow``'s min-cost flow, each column's nearest output and the constant output
        (feasible). Perfect privacy on census with every profile: 43 rounds, 120 s CPU,
        where the nearest outputs alone had not converged after 30 rounds and 10 minutes;
        LIP at ε = 0.1 on census top 5,000: the first master at 0.713 (optimum 0.679)
        against 1.92 from the 8 nearest, 18 rounds against 81. Below SEED_MIN_M live
        columns (perfect privacy only) the flow offers SMALL_SEED_PARTNERS partners. False
        when it does not apply."""
        seed = (_pp_flow.seed_pairs(self.d) if self.d.m >= SEED_MIN_M
                else _pp_flow.seed_pairs(self.d, SMALL_SEED_PARTNERS))
        if seed is None:
            return False
        d = self.d
        step = block_rows(d.n)
        const = np.concatenate([d.dcost[lo: lo + step].sum(axis=1) for lo in range(0, d.n, step)])
        j = np.arange(d.m)
        self.add_pairs(np.concatenate([seed[0], _pp_flow.nearest_outputs(d),
                                       np.full(d.m, int(const.argmin()))]),
                       np.concatenate([seed[1], j, j]))
        return True

    def run(self, stop_below: float = -np.inf, stop_above: float = np.inf) -> ColgenResult:
        """Rounds of master solve and pricing until the relative gap is below ``tol``.

        ``stop_below``: stop as soon as the master's objective (a feasible point) is <= it;
        ``stop_above``: as soon as the bound is above it (``private_phase`` uses both)."""
        self.initial_pairs()
        t_lp = t_price = 0.0
        trace: list[tuple[float, float]] = []
        converged = False
        rounds = 0
        while rounds < self.max_rounds:
            rounds += 1
            t0 = time.perf_counter()
            obj, x, y = self.solve_master()
            t1 = time.perf_counter()
            bound, new_i, new_j = self.price(y)
            if relative_gap(obj, bound) > self.tol and new_i.size <= self.repair_below:
                # few columns price out, yet the gap is open: degenerate duals, repair them
                bound = max(bound, self.price(y, repair=True, columns=False)[0])
            t_price += time.perf_counter() - t1
            t_lp += t1 - t0
            trace.append((obj, bound))
            if relative_gap(obj, bound) <= self.tol:
                converged = True
                break
            if obj <= stop_below or bound > stop_above:
                break
            if (rounds == 1 and self.lp.private_floor and bound <= self.lp.floor
                    and self.d.n <= PRIVATE_MAX_N):
                before = self.pairs_i.size
                found = self.private_phase()
                if found is not None:
                    found.rounds += rounds
                    found.time_lp_s += t_lp
                    found.time_pricing_s += t_price
                    return found
                # the phase's columns (which may hold this round's priced ones) joined
                if self.pairs_i.size > before:
                    self.add_pairs(new_i, new_j)
                    continue
            if self.add_pairs(new_i, new_j) == 0:
                break
        gap = relative_gap(obj, bound)
        return ColgenResult(mapping=self.mapping(x), objective=obj, bound=bound, gap=gap,
                            rounds=rounds, columns=int(self.pairs_i.size), rows=self.n_rows,
                            converged=converged, time_pricing_s=t_price, time_lp_s=t_lp,
                            trace=trace)

    def private_phase(self) -> ColgenResult | None:
        """A perfectly private mapping within the budget, when one exists: it attains the
        floor, a proven bound, so it is optimal. The perfect-privacy LP (least E[d]) by
        column generation, stopped as soon as its master's E[d] <= Δ (found) or its bound
        > Δ (none exists), or after ``PRIVATE_ROUNDS`` rounds (undecided); None unless
        found with a gap <= ``tol``. Its columns join this master either way.

        Why: where the optimum is the floor (random Hamming n = 4,096 at Δ = 0.1 d_const)
        the epigraph master is so degenerate that each HiGHS re-solve took minutes."""
        delta = float(self.lp.delta) if self.lp.delta is not None else np.inf
        lp = private_lp(self.d)
        # the phase stops at the first master within Δ, so the flow seed's cost buys nothing
        # (random Hamming n = 4,096 at 0.1 d_const: 8.2 s CPU with it, 2.2 s without)
        lp.flow_seed = False
        phase = ColumnGeneration(self.d, lp, tol=self.tol,
                                 max_rounds=PRIVATE_ROUNDS, per_column=self.per_column)
        out = phase.run(stop_below=delta, stop_above=delta)
        self.add_pairs(phase.pairs_i, phase.pairs_j)
        if out.objective > delta:
            return None
        value = self.epigraph_value(out.mapping)
        gap = relative_gap(value, self.lp.floor)
        if gap > self.tol:
            return None
        return ColgenResult(mapping=out.mapping, objective=value, bound=self.lp.floor, gap=gap,
                            rounds=out.rounds, columns=out.columns + int(self.pairs_i.size),
                            rows=self.n_rows, converged=True, time_pricing_s=out.time_pricing_s,
                            time_lp_s=out.time_lp_s, trace=out.trace, private=True)

    def epigraph_value(self, X: sp.csc_array) -> float:
        """Σ_i max(0, max_r Σ_j coef[r, j] X[i, j]) over the epigraph families: the
        objective of a mapping in an epigraph LP."""
        Xl = sp.csr_array(sp.csc_array(X)[:, self.d.live])
        coef = np.concatenate([f.coef for f in self.lp.families if f.epigraph], axis=0)
        return float(np.maximum(np.asarray(Xl @ coef.T).max(axis=1), 0.0).sum())

    def mapping(self, x: np.ndarray) -> sp.csc_array:
        """The column-stochastic sparse mapping of the master's point (see ``_lp_mapping``)."""
        d = self.d
        v = np.asarray(x[self.n_t:], dtype=float)
        # pairs added after the last solve (a run cut at max_rounds) are not in x
        pairs_i, pairs_j = self.pairs_i[: v.size], self.pairs_j[: v.size]
        if v.size and v.min() < -ACCEPT_TOL:
            k = int(np.argmin(v))
            raise pb.PrivbenchError(f"the master returned X[{pairs_i[k]}, "
                                    f"{d.live[pairs_j[k]]}] = {v[k]:.3g} < 0")
        keep = v >= DROP_TOL
        sums = np.bincount(pairs_j[keep], weights=v[keep], minlength=d.m)
        bad = np.flatnonzero(np.abs(sums - 1.0) > ACCEPT_TOL)
        if bad.size:
            raise pb.PrivbenchError(f"the master returned column {d.live[bad[0]]} summing to "
                                    f"{sums[bad[0]]:.9g}, beyond tolerance {ACCEPT_TOL:g}")
        dead = np.setdiff1d(np.arange(d.n), d.live)
        rows = np.concatenate([pairs_i[keep], dead])
        cols = np.concatenate([d.live[pairs_j[keep]], dead])
        vals = np.concatenate([v[keep] / sums[pairs_j[keep]], np.ones(dead.size)])
        return sp.csc_array((vals, (rows, cols)), shape=(d.n, d.n))


def private_lp(data: Problem) -> SparseLP:
    """The perfect-privacy LP: least E[d] with W(b̂|a) = W(b̂|a_0) for every output."""
    cond = data.cond
    families = [Family(cond[1:] - cond[0], 0.0, 0.0)] if cond.shape[0] > 1 else []
    return SparseLP(families, "distortion", floor=data.least_distortion(), flow_seed=True,
                    small_flow_seed=True)


def relative_gap(objective: float, bound: float) -> float:
    """(objective - bound) / max(|objective|, |bound|, 1e-9): the stopping rule's gap."""
    return (objective - bound) / max(abs(objective), abs(bound), 1e-9)


def into_budget(data: Problem, X: sp.csc_array, delta: float) -> tuple[sp.csc_array, float]:
    """Mix X with the nearest-output mapping so that E[d] <= Δ holds exactly."""
    n = data.n
    nearest = data.dcost.argmin(axis=0)
    dead = np.setdiff1d(np.arange(n), data.live)
    safe = sp.csc_array((np.ones(n), (np.concatenate([nearest, dead]),
                                      np.concatenate([data.live, dead]))), shape=(n, n))
    used = expected_cost(data, X)
    least = data.least_distortion()
    if used <= delta:
        return X, 1.0
    if least > delta:
        raise pb.PrivbenchError("the nearest-output mapping does not meet the budget either")
    theta = float(np.nextafter((delta - least) / (used - least), 0.0))
    return sp.csc_array(theta * X + (1.0 - theta) * safe), theta


def expected_cost(data: Problem, X: Any) -> float:
    """E[d] of a sparse mapping X over the live columns."""
    Xl = sp.coo_array(sp.csc_array(X)[:, data.live])
    return float(np.sum(data.dcost[Xl.row, Xl.col] * Xl.data))
