"""SPPM's Frank-Wolfe loop on the synthetic data: wall seconds for a fixed number of steps.

Each step repairs the LP point into the budget, builds Q = p(a, b̂) and runs the exact
line search: thousands of vector operations over the active pairs per solve. These
calls regress silently when BLAS threading changes (a multi-threaded OpenBLAS waiting
for cores costs milliseconds per call on a loaded machine; see
``privbench._plumbing.blas``), so the benchmark times wall seconds, not CPU seconds.
"""

from __future__ import annotations

import privbench as pb

#: Frank-Wolfe steps per timed solve (tol = 0: every solve takes all of them)
STEPS = 30
#: steps to a mid-solve mapping (untimed), then steps timed from it
WARM_STEPS, STEPS_FROM_WARM = 300, 100


class SPPMFrankWolfeSteps:
    """``time_steps``: ``STEPS`` certified Frank-Wolfe steps (mckp backend) after an
    untimed prepare; n = 2^m symbols, Δ = 2^(m-8) as in ``privbench benchmark sppm``."""

    params = ([10, 12],)
    param_names = ["m"]
    timeout = 300

    def setup(self, m: int) -> None:
        self.problem = pb.load_dataset("synthetic", m=m)
        self.delta = 2.0 ** (m - 8)
        self.mech = pb.get_mechanism("sppm", iterations=STEPS, tol=0.0)
        self.mech.prepare(self.problem, pb.RunContext(seed=0))

    def time_steps(self, m: int) -> None:
        result = self.mech.run(self.problem, self.delta)
        if result.stats["iterations"] != STEPS:  # a shorter run would time less work
            raise RuntimeError(f"sppm took {result.stats['iterations']} steps, not {STEPS}")


class SPPMWorkingSetSteps:
    """``time_steps``: ``STEPS_FROM_WARM`` steps from a mid-solve mapping, all full
    (``restricted_steps`` 0) or in bursts on the working inputs (100, the default): the
    ratio is what the bursts buy once most inputs have settled."""

    params = ([12, 14], [0, 100])
    param_names = ["m", "restricted_steps"]
    timeout = 300

    def setup(self, m: int, restricted_steps: int) -> None:
        import scipy.sparse as sp

        self.problem = pb.load_dataset("synthetic", m=m)
        self.delta = 2.0 ** (m - 8)
        warm = pb.get_mechanism("sppm", iterations=WARM_STEPS, tol=0.0).solve(self.problem,
                                                                                self.delta)
        self.mech = pb.get_mechanism("sppm", iterations=STEPS_FROM_WARM, tol=0.0,
                                     restricted_steps=restricted_steps,
                                     x0=sp.csc_array(warm.mapping))
        self.mech.prepare(self.problem, pb.RunContext(seed=0))

    def time_steps(self, m: int, restricted_steps: int) -> None:
        result = self.mech.run(self.problem, self.delta)
        if result.stats["iterations"] != STEPS_FROM_WARM:
            raise RuntimeError(f"sppm took {result.stats['iterations']} steps, "
                               f"not {STEPS_FROM_WARM}")


class SPPMCurve:
    """``time_solve``: SPPM's default run to its certified 1e-3 bits mid-curve:
    synthetic m = 10 at Δ = 0.1 d_const, d_const the best constant mapping's E[d] (the
    ``auto`` mode picks the dual mode there); ``track_gap_bits``: the certified gap it
    stopped at (above 1e-3 means the default run no longer certifies this budget)."""

    params = ([10],)
    param_names = ["m"]
    timeout = 300

    def setup(self, m: int) -> None:
        self.problem = pb.load_dataset("synthetic", m=m)
        d_const = pb.get_mechanism("constant").solve(self.problem, 0.0).stats["expected_distortion"]
        self.delta = 0.1 * float(d_const)
        self.mech = pb.get_mechanism("sppm")
        self.mech.prepare(self.problem, pb.RunContext(seed=0))

    def time_solve(self, m: int) -> None:
        result = self.mech.run(self.problem, self.delta)
        if not result.stats["converged"]:
            raise RuntimeError(f"sppm did not certify: gap {result.stats['gap_bits']:.2e} bits")

    def track_gap_bits(self, m: int) -> float:
        return float(self.mech.run(self.problem, self.delta).stats["gap_bits"])

    track_gap_bits.unit = "bits"  # type: ignore[attr-defined]
