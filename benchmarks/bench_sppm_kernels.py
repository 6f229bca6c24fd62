"""SPPM's per-iteration hot paths, each timed alone on a mid-solve state.

One Frank-Wolfe iteration of SPPM builds Q = p(a, b̂) twice, the decoder log-ratios
once, normalises the master's vertex, runs the exact line search, solves the master
(mckp) and prices every input exactly on the line. Each of those is one ``time_*``
here, on the state SPPM reaches after ``WARM_STEPS`` steps on the synthetic data (its
active pairs V and iterate x; the master solved at that point gives λ and the vertex),
so a regression shows in the path that caused it rather than in a whole solve.
"""

from __future__ import annotations

import numpy as np

import privbench as pb

#: Frank-Wolfe steps run (untimed, in setup) to reach a representative state
WARM_STEPS = 300


class SPPMKernels:
    """The hot paths of one Frank-Wolfe iteration; n = 2^m, Δ = 2^(m-8)."""

    params = ([12, 14],)
    param_names = ["m"]
    timeout = 300

    def setup(self, m: int) -> None:
        from privbench.plugins.mechanisms._sppm import leakage
        from privbench.plugins.mechanisms._sppm.columns import normalise_columns
        from privbench.plugins.mechanisms._sppm.line_pricing import LinePricer
        from privbench.plugins.mechanisms._sppm.solve import solve_sppm
        from privbench.plugins.mechanisms.sppm import _own_arrays

        problem = _own_arrays(pb.load_dataset("synthetic", m=m))
        self.problem, self.delta = problem, 2.0 ** (m - 8)
        # Frank-Wolfe from X0 (no coarse start, no bursts): the state these kernels were
        # always timed on
        out = solve_sppm(problem, self.delta, pb.get_lp_backend("mckp"),
                         iterations=WARM_STEPS, tol=0.0, prune_after=10, mode="frank-wolfe",
                         restricted_steps=0, coarse_start=False)
        self.rows, self.cols, self.x = out.rows, out.cols, out.x
        P, n = problem.joint, problem.n
        self.Q = leakage.output_joint(P, self.rows, self.cols, self.x, n)
        self.f = leakage.leakage_nats(self.Q, problem.p_a)
        self.L, self.empty = leakage.decoder_logratios(self.Q, problem.p_a)
        self.a = problem.p_b[self.cols] * problem.distortion.pairs(self.rows, self.cols)
        self.cost = leakage.pair_costs(self.L, P, self.rows, self.cols, self.empty, None)
        self.master = pb.get_lp_backend("mckp")
        self.master.start(n, self.delta)
        self.master.add_columns(self.cols, self.cost, self.a)
        sol = self.master.solve()
        self.lam, self.vertex = min(float(sol.budget_dual), 0.0), sol.x
        self.x_new = normalise_columns(self.cols, self.vertex, n)
        self.Q_new = leakage.output_joint(P, self.rows, self.cols, self.x_new, n)
        self.pricer = LinePricer(problem.distortion.points[:, 0], "sq_l2", threads=1)
        # a working-set burst (_sppm/working_set.py): the inputs with more than one pair,
        # priced with block tables kept up to date on the outputs that moved
        self.work = np.flatnonzero(np.bincount(self.cols, minlength=n) >= 2)
        self.moved = np.flatnonzero(np.any(self.Q_new != self.Q, axis=0))
        self.tables = self.pricer.tables(self.L, self.empty)
        self.blocks = self.pricer.blocks_of(self.moved)
        self.working_pricer = self.pricer.for_inputs(self.work)
        self.P_work = np.ascontiguousarray(P[:, self.work])
        from privbench.plugins.mechanisms._sppm.pair_index import PairIndex

        self.index = PairIndex(n, self.rows, self.cols)  # V's pairs, as the active set keeps them
        self.best_i, _ = self.pricer.price(self.L, P, problem.p_b, self.lam, self.empty)

    def teardown(self, m: int) -> None:
        self.pricer.close()

    def time_output_joint(self, m: int) -> None:
        from privbench.plugins.mechanisms._sppm.leakage import output_joint

        output_joint(self.problem.joint, self.rows, self.cols, self.x, self.problem.n)

    def time_decoder_logratios(self, m: int) -> None:
        from privbench.plugins.mechanisms._sppm.leakage import decoder_logratios

        decoder_logratios(self.Q, self.problem.p_a)

    def time_normalise_vertex(self, m: int) -> None:
        from privbench.plugins.mechanisms._sppm.columns import normalise_columns

        normalise_columns(self.cols, self.vertex, self.problem.n)

    def time_line_search(self, m: int) -> None:
        from privbench.plugins.mechanisms._sppm.linesearch import exact_line_search

        exact_line_search(self.Q, self.Q_new, self.problem.p_a, 1.0, f0=self.f)

    def time_master_mckp(self, m: int) -> None:
        self.master.solve()

    def time_line_pricing(self, m: int) -> None:
        self.pricer.price(self.L, self.problem.joint, self.problem.p_b, self.lam, self.empty)

    def track_moving_outputs(self, m: int) -> int:
        """Outputs whose column of Q a step moves (what the line search works on)."""
        return int(np.count_nonzero(np.any(self.Q_new != self.Q, axis=0)))

    def time_block_tables(self, m: int) -> None:
        """The rebuild :meth:`time_update_tables` replaces within a burst."""
        self.pricer.tables(self.L, self.empty)

    def time_update_tables(self, m: int) -> None:
        self.pricer.update_tables(self.tables, self.L, self.empty, self.blocks)

    def time_working_pricing(self, m: int) -> None:
        """Pricing the working inputs only, over all outputs (a burst's column generation)."""
        self.working_pricer.price(self.L, self.P_work, self.problem.p_b[self.work], self.lam,
                                  self.empty, tables=self.tables)

    def track_working_inputs(self, m: int) -> int:
        return int(self.work.size)

    def time_pair_lookup(self, m: int) -> None:
        """Which priced pairs (each input's best) are in V already: once per iteration."""
        self.index.find(self.best_i, np.arange(self.problem.n))
