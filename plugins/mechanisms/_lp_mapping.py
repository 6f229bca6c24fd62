"""The LP shared by the catalogue's LP mechanisms, and their common base class.

Every mechanism of the catalogue that is an LP over the mapping (``maxleak_optimal``,
``map_optimal``, ``lip_optimal``, ``perfect_privacy``) has the same core: variables
X[i, j] = p(b̂_i | b_j), each column on the simplex, and E[d] = Σ_ij p(b_j) d(b̂_i, b_j) X[i, j]
either as the objective or as a row <= Δ. :class:`MappingLP` builds that core with sparse
matrices and lets each mechanism add its own rows and variables; rows that hold for
every output b̂_i and private value a, Σ_j c[a, j] X[i, j], are ``kron(c, I_n)``.

Layout: the columns j with p(b_j) > 0 ("live", m of them) carry variables, column-major
(variable ``jj * n + i``); extra variables (t_b̂) follow. A column with p(b_j) = 0 enters
no objective and no row, so it is released unchanged (X[:, j] = e_j). Private values with
p(a) = 0 are left out, since W(b̂|a) = Σ_j p(b_j|a) X[i, j] is undefined for them.

Tolerances: the solver meets rows to ~1e-9. The point it returns is accepted when no
entry is below -1e-6 and no column sum is off by more than 1e-6 (else the run fails
naming the column); negatives are then clipped, entries below 1e-12 dropped and columns
renormalised, so the mapping is exactly column-stochastic. A mechanism with a budget
(``delta_role = "budget"``) then mixes in the least-distortion mapping just enough to meet
E[d] <= Δ exactly (a move of the order of the solver's tolerance).

Two solvers (parameter ``solver``): ``colgen`` (default) solves the same LP by column
generation without building the n² variables (``_lp_colgen``: a restricted master in HiGHS,
pricing in blocks, a Lagrangian lower bound as certificate, stop at relative gap ``tol``);
``full`` builds the whole LP here and hands it to ``lp_backend``. Every run stores
``lp_objective`` (the LP value of the returned point, before the budget mix), ``lp_bound``
(a proven lower bound on the LP's optimum) and ``lp_gap`` = (objective - bound) /
max(|objective|, |bound|, 1e-9). The full solver has no dual to prove a bound with, so
its ``lp_bound`` is its own objective (HiGHS reported ``optimal``) and ``lp_gap`` 0.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

import privbench as pb
from privbench._plumbing.blas import one_blas_thread
from privbench._plumbing.clock import cpu_seconds
from privbench.protocol.feasibility import mix_into_budget

from ._lp_colgen import ACCEPT_TOL, DROP_TOL, ColumnGeneration, Problem, SparseLP, into_budget, set_live_columns

#: the ways to solve the LP (see the module docstring)
SOLVERS = ("colgen", "full")
#: LP backends whose solver this process has already loaded (see ``prepare``)
_WARMED: set[str] = set()


class MappingLP:
    """The mapping variables, simplex rows and E[d] of one problem; rows added by mechanisms."""

    def __init__(self, problem: pb.PrivacyProblem, D: np.ndarray | None = None) -> None:
        """:param D: the dense distortion, when the caller already holds it."""
        n = problem.n
        self.n = n
        set_live_columns(self, problem)
        if D is None:
            D = np.asarray(problem.distortion.to_dense(), dtype=float)
        #: dcost[i, jj] = p(b_j) d(b̂_i, b_j): E[d] = Σ dcost * X
        self.dcost = D[:, self.live] * self.p[None, :]
        self.n_vars = n * self.m
        self.cost = np.zeros(self.n_vars)
        self.col_upper = np.full(self.n_vars, np.inf)
        self._rows: list[tuple[sp.csr_array, np.ndarray, np.ndarray]] = []
        simplex = sp.kron(sp.identity(self.m, format="csr"), np.ones((1, n)), format="csr")
        self.add_rows(simplex, np.ones(self.m), np.ones(self.m))

    # -- building -------------------------------------------------------------------------
    def add_vars(self, count: int, cost: float | np.ndarray = 0.0) -> int:
        """Append ``count`` non-negative variables with objective ``cost``; returns the first index."""
        first = self.n_vars
        self.n_vars += count
        self.cost = np.concatenate([self.cost, np.broadcast_to(cost, (count,)).astype(float)])
        self.col_upper = np.concatenate([self.col_upper, np.full(count, np.inf)])
        return first

    def per_output(self, coef: np.ndarray) -> sp.csr_array:
        """Rows Σ_j coef[r, j] X[i, j], one per (r, i), r-major: ``kron(coef, I_n)``.

        :param coef: (k, m) over the live columns.
        """
        return sp.csr_array(sp.kron(sp.csr_array(np.atleast_2d(coef)),
                                    sp.identity(self.n, format="csr"), format="csr"))

    def with_vars(self, block: sp.csr_array, first: int, var_coef: Any) -> sp.csr_array:
        """``block`` (over the mapping variables) beside ``var_coef`` on variables from ``first``."""
        var_coef = sp.csr_array(var_coef)
        gap = first - self.n * self.m
        parts = [block] + ([sp.csr_array((block.shape[0], gap))] if gap else []) + [var_coef]
        return sp.csr_array(sp.hstack(parts, format="csr"))

    def add_rows(self, A: sp.csr_array, lower: Any, upper: Any) -> None:
        """Append rows lower <= A x <= upper (scalars broadcast; ±inf for one-sided)."""
        k = A.shape[0]
        self._rows.append((sp.csr_array(A), np.broadcast_to(np.asarray(lower, float), (k,)),
                           np.broadcast_to(np.asarray(upper, float), (k,))))

    def distortion_vector(self) -> np.ndarray:
        """E[d] as a row over the mapping variables (column-major)."""
        return self.dcost.ravel(order="F")

    def minimise_distortion(self) -> None:
        """Make E[d] the objective."""
        self.cost[: self.n * self.m] = self.distortion_vector()

    def add_budget(self, delta: float) -> None:
        """The row E[d] <= Δ, after checking some mapping can meet it."""
        least = self.least_distortion()
        if delta < least - 1e-12 * max(1.0, least):
            raise pb.ValidationError(f"delta = {delta:g} is below the least expected distortion "
                                     f"any mapping reaches on this problem ({least:.6g})")
        self.add_rows(sp.csr_array(self.distortion_vector()[None, :]), -np.inf, delta)

    def least_distortion(self) -> float:
        """min E[d] over all mappings: each b_j to its nearest output."""
        return float(self.dcost.min(axis=0).sum())

    def program(self) -> pb.LinearProgram:
        """The assembled LP (extra variables padded into every earlier row block)."""
        blocks = []
        for A, _, _ in self._rows:
            pad = self.n_vars - A.shape[1]
            blocks.append(sp.hstack([A, sp.csr_array((A.shape[0], pad))], format="csr")
                          if pad > 0 else A)
        return pb.LinearProgram(
            cost=self.cost.copy(), A=sp.csr_array(sp.vstack(blocks, format="csr")),
            row_lower=np.concatenate([lo for _, lo, _ in self._rows]),
            row_upper=np.concatenate([up for _, _, up in self._rows]),
            col_lower=np.zeros(self.n_vars), col_upper=self.col_upper.copy())

    # -- reading the solution --------------------------------------------------------------
    def mapping(self, x: np.ndarray) -> np.ndarray:
        """The dense (n, n) column-stochastic mapping of a solver point (see module docstring)."""
        n, m = self.n, self.m
        block = np.asarray(x[: n * m], dtype=float).reshape(m, n).T
        if block.size and block.min() < -ACCEPT_TOL:
            i, jj = np.unravel_index(int(np.argmin(block)), block.shape)
            raise pb.PrivbenchError(f"the LP solver returned X[{i}, {self.live[jj]}] = "
                                    f"{block[i, jj]:.3g} < 0 beyond tolerance {ACCEPT_TOL:g}")
        sums = block.sum(axis=0)
        bad = np.flatnonzero(np.abs(sums - 1.0) > ACCEPT_TOL)
        if bad.size:
            j = int(self.live[bad[0]])
            raise pb.PrivbenchError(f"the LP solver returned column {j} summing to "
                                    f"{sums[bad[0]]:.9g}, beyond tolerance {ACCEPT_TOL:g}")
        block = np.where(block < DROP_TOL, 0.0, block)
        X = np.eye(n)
        X[:, self.live] = block / block.sum(axis=0, keepdims=True)
        return X

    def into_budget(self, X: np.ndarray, delta: float) -> tuple[np.ndarray, float]:
        """Mix X with the least-distortion mapping so that E[d] <= Δ holds exactly."""
        safe = np.eye(self.n)
        nearest = self.dcost.argmin(axis=0)
        safe[:, self.live] = 0.0
        safe[nearest, self.live] = 1.0
        used = float(np.sum(self.dcost * X[:, self.live]))
        return mix_into_budget(X, safe, used, self.least_distortion(), delta)

    def channel(self, X: np.ndarray) -> np.ndarray:
        """W[a, i] = p(b̂_i | a) over the live private values."""
        return self.cond @ X[:, self.live].T

    def output_marginal(self, X: np.ndarray) -> np.ndarray:
        """p(b̂_i)."""
        return X[:, self.live] @ self.p


class LPMappingMechanism(pb.SizeLimited, pb.MappingMechanism):
    """Base of the catalogue's LP mechanisms: backend, ``max_n`` skip, solve and read back.

    A subclass sets ``name``, ``delta_role`` and ``lp_kind`` (for messages), and implements
    :meth:`build` (rows and objective on a :class:`MappingLP`) and optionally
    :meth:`measures` (stats of the returned mapping). Its ``__init__`` stores
    ``lp_backend`` and ``max_n`` (and its own parameters).

    :param lp_backend: the LP backend that solves the whole LP with ``solver=full`` (one that
        solves whole LPs: highs, scipy or cvxpy); column generation runs its master in HiGHS
        itself.
    :param max_n: the largest alphabet n it solves (the LP has n² variables); a larger problem
        is skipped; default: the solver's own (``colgen`` 10,000, ``full`` 400).
    :param solver: ``colgen`` (column generation, without building the n² variables, with a
        certified lower bound) or ``full`` (the whole LP through ``lp_backend``).
    :param tol: the relative gap (objective - bound) / max(|objective|, |bound|) at which
        column generation stops, in (0, 1) (unused by ``full``).
    """

    requirements = ("highspy",)
    extra = "highs"
    #: ``--lp-backend`` / ``lp_backends = [...]`` set it; it must solve whole LPs
    plugin_params: ClassVar[dict[str, str]] = {"lp_backend": "lp_backend"}
    test_parameters: ClassVar[dict[str, list[Any]]] = {"lp_backend": ["highs", "scipy"]}
    #: what the LP is, for the skip message
    lp_kind: ClassVar[str] = "an LP"
    lp_backend: str
    max_n: int
    solver: str = "colgen"
    tol: float = 1e-6
    #: default ``max_n`` per solver (docs/studies/catalogue-scaling.md measures them)
    default_max_n: ClassVar[dict[str, int]] = {"colgen": 10000, "full": 400}

    def set_solver(self, solver: str, tol: float, max_n: int | None) -> None:
        """Store the solver parameters; ``max_n=None`` takes the solver's default."""
        self.solver = solver
        self.tol = tol
        self.max_n = self.default_max_n.get(solver, 1) if max_n is None else max_n

    def check_params(self) -> None:
        """max_n (:class:`pb.SizeLimited`), solver and tol, then a backend that solves whole LPs."""
        if self.solver not in SOLVERS:
            raise pb.ValidationError(f"{self.name}: solver must be one of {', '.join(SOLVERS)}; "
                                     f"got {self.solver!r}")
        tol = self.tol
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
            raise pb.ValidationError(f"{self.name}: tol must be a number in (0, 1) (the relative "
                                     f"gap at which column generation stops); got {tol!r}")
        super().check_params()
        backend = pb.get_lp_backend(str(self.lp_backend))  # unknown or unavailable: fails here
        if not backend.solves_lp():
            raise pb.ValidationError(
                f"{self.name}: lp_backend {self.lp_backend!r} solves restricted masters only; "
                "this mechanism needs one that solves whole LPs (highs, scipy or cvxpy)")

    size_advice = "docs/studies/catalogue-scaling.md says how far it gets in a minute"

    def size_reason(self, n: int) -> str:
        """The LP has n² variables (column generation keeps n x n reduced-cost blocks)."""
        if self.solver == "colgen":
            return (f"{self.name} prices {self.lp_kind}'s n² = {n ** 2} variables by column "
                    f"generation and keeps the dense n x n distortion")
        return f"{self.name} solves {self.lp_kind} with n² = {n ** 2} variables"

    def prepare(self, problem: pb.PrivacyProblem, context: pb.RunContext) -> None:
        """Untimed: the dense distortion, and the backend's solver loaded once per process."""
        super().prepare(problem, context)
        self.distortion_ = None
        if self.solver == "colgen":
            if "colgen" not in _WARMED:  # highspy's import and first model, untimed
                import highspy

                from privbench.plugins.lp.highs import quiet_highs

                quiet_highs(highspy)
                _WARMED.add("colgen")
            return
        self.distortion_ = np.asarray(problem.distortion.to_dense(), dtype=float)
        if str(self.lp_backend) not in _WARMED:
            tiny = pb.LinearProgram(np.ones(1), sp.csr_array(np.ones((1, 1))), np.ones(1),
                                    np.ones(1), np.zeros(1), np.full(1, np.inf))
            pb.get_lp_backend(str(self.lp_backend)).solve_lp(tiny)
            _WARMED.add(str(self.lp_backend))

    def build(self, lp: MappingLP, delta: float) -> None:
        """Add this mechanism's rows, variables and objective to ``lp``."""
        raise NotImplementedError

    def sparse_lp(self, data: Problem, delta: float) -> SparseLP:
        """The same LP as :meth:`build`, as per-output row families for column generation."""
        raise NotImplementedError

    def measures(self, problem: pb.PrivacyProblem, lp: MappingLP, X: np.ndarray
                 ) -> dict[str, Any]:
        """Stats of the returned mapping that say how well it meets its own notion."""
        return {}

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        """Solve by ``solver``; ``solve_cpu_s`` in the stats is the CPU time it took (this
        process's threads: comparable on a loaded machine, where wall time is not)."""
        start = cpu_seconds()
        res = self.run_colgen(problem, delta) if self.solver == "colgen" else \
            self.run_full(problem, delta)
        res.stats["solve_cpu_s"] = cpu_seconds() - start
        return res

    def run_full(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        """The whole LP through ``lp_backend``."""
        D = getattr(self, "distortion_", None)
        lp = MappingLP(problem, D if D is not None and D.shape == (problem.n,) * 2 else None)
        self.build(lp, delta)
        program = lp.program()
        backend = pb.get_lp_backend(str(self.lp_backend))
        try:
            out = backend.solve_lp(program)
        finally:
            backend.close()
        if out.status != "optimal":
            raise pb.PrivbenchError(f"{self.name}: the LP is {out.status} ({out.message})")
        X = lp.mapping(out.x)
        theta = 1.0
        if self.delta_role == "budget":
            X, theta = lp.into_budget(X, delta)
        stats = {"lp_objective": out.objective, "lp_rows": program.shape[0],
                 "lp_cols": program.shape[1], "lp_nnz": int(program.A.nnz),
                 "lp_iterations": out.iterations, "lp_bound": out.objective, "lp_gap": 0.0,
                 "lp_solver": "full", "budget_theta": theta}
        stats.update(self.measures(problem, lp, X))
        return self.result(X, **stats)

    def run_colgen(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        """Column generation (``_lp_colgen``) to relative gap ``tol``; the same stats."""
        data = Problem(problem)
        if self.delta_role == "budget":
            least = data.least_distortion()
            if delta < least - 1e-12 * max(1.0, least):
                raise pb.ValidationError(f"delta = {delta:g} is below the least expected "
                                         f"distortion any mapping reaches on this problem "
                                         f"({least:.6g})")
        # one BLAS thread: the pricing's products are small and many, and a second OpenBLAS
        # thread waiting for a core on a loaded 2-core machine made one pricing of random
        # Hamming n = 600 take 15 ms instead of 0.5 ms (_plumbing/blas.py)
        with one_blas_thread():
            out = ColumnGeneration(data, self.sparse_lp(data, delta), tol=float(self.tol)).run()
        X, theta = out.mapping, 1.0
        if self.delta_role == "budget":
            X, theta = into_budget(data, X, delta)
        stats = {"lp_objective": out.objective, "lp_bound": out.bound, "lp_gap": out.gap,
                 "lp_solver": "colgen", "lp_rows": out.rows, "lp_cols": out.columns,
                 "lp_rounds": out.rounds, "converged": out.converged,
                 "lp_private_phase": out.private,
                 "time_pricing_s": out.time_pricing_s, "time_lp_s": out.time_lp_s,
                 "budget_theta": theta}
        stats.update(self.measures(problem, data, X))
        return self.result(X, **stats)
