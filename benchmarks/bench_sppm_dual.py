"""SPPM's dual mode hot paths (census-like data), each timed alone on a warmed-up state.

The ``dual`` mode spends its time in two places: exact Hamming pricing of all n² pairs
(:class:`HammingPricer`, every Frank-Wolfe warm-up step and every dual round; timed with
and without its level lists) and the
smoothed dual's pass over the active pairs, once per L-BFGS evaluation (thousands per
solve), with the projected L-BFGS's own step (``_sppm.lbfgs``) between evaluations.
The pass runs over every pair of V at coarse temperatures and over the working pairs W
near each input's minimum at fine ones (``dual_mode.FOCUS``); both are timed, with W's
size tracked, and so are a few ascent steps at a coarse temperature, on a synthetic
census-like problem (rare, nearly pure binary profiles, as census at top_k = all) after
``WARM_STEPS`` Frank-Wolfe steps.
"""

from __future__ import annotations

import math

import numpy as np

import privbench as pb

#: profiles (distinct binary codes of ``BITS`` bits), Hamming distortion
N, BITS = 2000, 12
#: Frank-Wolfe steps run (untimed, in setup) to reach a representative state
WARM_STEPS = 30
#: the fine temperature at which the working pairs are timed (nats per unit input mass)
FINE_TAU = 1e-4
#: the coarse temperature of the timed ascent (the first dual round's second stage)
COARSE_TAU = 3e-3
#: projected L-BFGS iterations in the timed ascent
ASCENT_STEPS = 20


class SPPMDualKernels:
    """Hamming pricing and the smoothed dual's pass (over V, over W) on one state."""

    timeout = 300

    def setup(self) -> None:
        from privbench.plugins.mechanisms._sppm import leakage
        from privbench.plugins.mechanisms._sppm.dual_mode import RestrictedDual
        from privbench.plugins.mechanisms._sppm.hamming_pricing import HammingPricer
        from privbench.plugins.mechanisms._sppm.solve import solve_sppm
        from privbench.plugins.mechanisms.sppm import _own_arrays

        problem = _own_arrays(pb.load_dataset("random", n=N, n_private=2, seed=21,
                                              distortion="hamming", bits=BITS,
                                              concentration=0.05))
        delta = 0.3
        out = solve_sppm(problem, delta, pb.get_lp_backend("mckp"), iterations=WARM_STEPS,
                         tol=0.0, mode="frank-wolfe", prune_after=0, restricted_steps=0)
        self.problem, self.lam = problem, min(float(out.stats["budget_dual"]), 0.0)
        Q = leakage.output_joint(problem.joint, out.rows, out.cols, out.x, problem.n)
        self.L, self.empty = leakage.decoder_logratios(Q, problem.p_a)
        # the pricer as a run uses it from its third call on (level lists built, here in
        # setup), and the branch and bound alone (no lists) for the ratio
        self.pricer = HammingPricer(problem.distortion.points, threads=1, lists_after=1)
        self.bare_pricer = HammingPricer(problem.distortion.points, threads=1, levels=-1)
        for pricer in (self.pricer, self.bare_pricer):
            pricer.price(self.L, problem.joint, problem.p_b, self.lam, self.empty)
        self.dual = RestrictedDual(problem, delta, out.rows, out.cols)
        self.focused = RestrictedDual(problem, delta, out.rows, out.cols)
        # Frank-Wolfe's own decoder as the dual point: logits log r(a|i) - log r(last|i)
        log_r = self.L + np.log(problem.p_a)[:, None]
        theta = log_r[:-1] - log_r[-1]
        nu = max(-self.lam, 1e-3)
        self.par = np.concatenate([theta.ravel(), [math.log(nu)]])
        self.focused.focus(theta, nu, FINE_TAU)
        from privbench.plugins.mechanisms._sppm import dual_mode

        k = theta.size
        self.box = (np.r_[np.full(k, -dual_mode.LOGIT_BOUND), dual_mode.LOG_NU_BOUNDS[0]],
                    np.r_[np.full(k, dual_mode.LOGIT_BOUND), dual_mode.LOG_NU_BOUNDS[1]])
        self.par = np.clip(self.par, *self.box)
        for dual in (self.dual, self.focused):  # load the compiled kernels outside the timing
            dual.objective(self.par, FINE_TAU)
        from privbench.plugins.mechanisms._sppm import lbfgs

        lbfgs.minimize(lambda p: self.dual.objective(p, COARSE_TAU), self.par, *self.box,
                       maxiter=1)

    def teardown(self) -> None:
        self.pricer.close()
        self.bare_pricer.close()

    def time_hamming_pricing(self) -> None:
        """The level lists (distance 0-2), then the branch and bound for the rest."""
        p = self.problem
        self.pricer.price(self.L, p.joint, p.p_b, self.lam, self.empty)

    def time_hamming_pricing_without_lists(self) -> None:
        """The branch and bound alone: the baseline of the level lists."""
        p = self.problem
        self.bare_pricer.price(self.L, p.joint, p.p_b, self.lam, self.empty)

    def time_soft_pass_all_pairs(self) -> None:
        self.dual.objective(self.par, FINE_TAU)

    def time_soft_pass_working_pairs(self) -> None:
        self.focused.objective(self.par, FINE_TAU)

    def time_dual_ascent_steps(self) -> None:
        """``ASCENT_STEPS`` projected L-BFGS iterations over V at ``COARSE_TAU``: the pass,
        the compiled decoder and chain rule, the two-loop step and the line search."""
        from privbench.plugins.mechanisms._sppm import lbfgs

        lbfgs.minimize(lambda p: self.dual.objective(p, COARSE_TAU), self.par, *self.box,
                       maxiter=ASCENT_STEPS, gtol=0.0, ftol=0.0)

    def track_ascent_evaluations(self) -> float:
        """Evaluations spent by those ``ASCENT_STEPS`` iterations (line-search backtracks)."""
        from privbench.plugins.mechanisms._sppm import lbfgs

        return lbfgs.minimize(lambda p: self.dual.objective(p, COARSE_TAU), self.par,
                              *self.box, maxiter=ASCENT_STEPS, gtol=0.0, ftol=0.0).nfev

    def track_working_pair_share(self) -> float:
        """|W| / |V| at ``FINE_TAU`` (what the focused pass saves)."""
        return self.focused.sel.size / self.focused.rows.size
