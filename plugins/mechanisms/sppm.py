"""``sppm``: Sparse Privacy Preserving Mappings (Salamatian et al., Algorithms 1 and 2).

Frank-Wolfe on I(A; B̂) under E[d] <= Δ, each linear step solved by column generation
on a sparse active set, with a certified optimality gap (``gap_bits``). The work is
in :mod:`privbench.plugins.mechanisms._sppm`; this module is the plugin face.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import sys

import numpy as np
import scipy.sparse as sp

import privbench as pb

#: Frank-Wolfe variants and modes (the compiled solver in ._sppm is imported only when a
#: run prepares, so that listing plugins and starting workers stay light)
VARIANTS = ("classic", "pairwise")
MODES = ("auto", "frank-wolfe", "optimal", "dual")
#: dual rounds a warm-started run of ``auto`` gets before it falls back to Frank-Wolfe
#: (the coarse starts that hold certify in 1-3 rounds)
WARM_ROUNDS = 4
#: the modes ``auto`` chooses between (``._sppm.modes.resolve_mode``)
AUTO_MODES = ("frank-wolfe", "dual")
#: the stop reasons of a run that hit a cap, and the parameter that raises it
CAPS = {"iterations": "iterations", "dual mode: rounds exhausted": "polish_rounds",
        "optimal mode: polish rounds exhausted": "polish_rounds"}


class SPPM(pb.MappingMechanism):
    """SPPM with ``iterations`` Frank-Wolfe steps at most, stopping at a gap < ``tol`` bits.

    Parameters
    ----------
    iterations : Frank-Wolfe steps at most (the paper's L is 100; the default, 20000, lets
        the default tolerance be reached on census and MovieLens, 400 to 1,100 steps, and
        on the synthetic line up to Δ = 0.03 d_const at n = 1,024, ~4,000 to 9,000 steps).
        A run that stops here without its certificate keeps status ok with
        ``metrics.converged = False`` and prints one line naming the parameter to raise.
    tol : stop once the certified gap ``gap_bits`` is below this (bits; default 1e-3).
    lp_backend : LP backend plugin for the restricted master (``privbench plugins``);
        default ``mckp``, the exact multiple-choice-knapsack solve (no LP solver needed).
    variant : ``classic`` (default: the paper's Algorithm 1; fewest iterations to ~1e-3
        bits) or ``pairwise`` (pairwise FW with corrective steps among kept vertices;
        better below that). For gaps far below 1e-3 bits use ``mode="optimal"``.
    corrective_steps : pairwise steps among kept vertices after each LP step.
    neighbours : K, the nearest outputs priced every round; the rest is priced
        exactly through bounds and distortion balls when needed.
    exact_every : price all n² pairs at least every this many iterations (on a line,
        1-D feature distortions, every round is exact anyway).
    rounds : master solves per Frank-Wolfe iteration (1, the default: pairs that price
        out join V for the next iteration, one pricing per iteration; 0 = until nothing
        prices out, the paper's Algorithm 2, an exact linear step). Either way the gap is
        certified by exact pricing.
    prune_after : drop pairs unused (zero in the iterate and in the LP solutions) for
        this many iterations from the master; 0 keeps every pair.
    threads : threads for pricing (0 = every core this process may use).
    mode : ``auto`` (default): ``dual`` when Δ is at least 0.1 d_const (d_const the best
        constant mapping's E[d]; 0.01 d_const on a line with n > 256, where the dual mode
        starts from a coarse solve, docs/sppm.md), else ``frank-wolfe``
        (measured in docs/sppm-frontier.md); ``frank-wolfe``; ``optimal``: Frank-Wolfe to a
        1e-3-bit gap, then exact solves of problem (1) restricted to the active pairs
        (cvxpy, Clarabel) alternated with exact pricing, for gaps Frank-Wolfe cannot reach (1e-6 bits); or
        ``dual``: ``warmup`` Frank-Wolfe steps to gather pairs, then rounds of
        entropy-smoothed ascent on the decoder (the dual of problem (1)) over those pairs,
        each certified by exact pricing, which adds the pairs that violate it. The dual
        mode pays where Frank-Wolfe's own bound stays weak for thousands of iterations
        (census: every distinct profile in ~30 s instead of minutes); it aims at ~1e-3
        to 1e-5 bits.
    polish_rounds : restricted solves (optimal mode) or dual rounds (dual mode) at most.
    warmup : Frank-Wolfe steps before the dual rounds (dual mode).
    restricted_steps : on a line (1-D feature distortions, frank-wolfe mode), steps on the
        working inputs only (those with more than one active pair; the rest stay where
        they are) between two full iterations: each costs O(working inputs) instead of
        O(n) (default 100; 0 = every iteration is full). The gap stays certified by exact
        pricing of all n² pairs after each such burst.
    handover : the certified gap (bits) at which the optimal mode stops Frank-Wolfe and
        starts the restricted solves (1e-3; larger hands over sooner, which pays when
        Frank-Wolfe crawls, e.g. census, and costs more solves when V is far from the
        optimal support, e.g. the synthetic data).
    x0 : the starting mapping X0 (n x n, dense or scipy sparse, columns on the simplex,
        within the budget); None (default) starts from the identity, or from each input's
        least-distortion output when the identity exceeds the budget.
    """

    name = "sppm"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014'
    reference_rank = 0  # certified to its gap at every size: the default reference
    plugin_params = {"lp_backend": "lp_backend"}  # the restricted master's solver
    description = "SPPM: Frank-Wolfe + column generation, certified gap (gap_bits)"
    test_parameters = {"iterations": [30], "lp_backend": ["mckp", "highs"]}

    def __init__(self, iterations: int = 20000, tol: float = 1e-3, lp_backend: str = "mckp",
                 variant: str = "classic", corrective_steps: int = 10, neighbours: int = 128,
                 exact_every: int = 10, rounds: int = 1, prune_after: int = 10, threads: int = 0,
                 mode: str = "auto", polish_rounds: int = 20, handover: float = 1e-3,
                 warmup: int = 100, restricted_steps: int = 100, x0: object = None) -> None:
        self.iterations = iterations
        self.tol = tol
        self.lp_backend = lp_backend
        self.variant = variant
        self.corrective_steps = corrective_steps
        self.neighbours = neighbours
        self.exact_every = exact_every
        self.rounds = rounds
        self.prune_after = prune_after
        self.threads = threads
        self.mode = mode
        self.polish_rounds = polish_rounds
        self.handover = handover
        self.warmup = warmup
        self.restricted_steps = restricted_steps
        self.x0 = x0

    def check_params(self) -> None:
        if not isinstance(self.iterations, numbers.Integral) or isinstance(self.iterations, bool) \
                or self.iterations < 0:
            raise pb.ValidationError(
                f"sppm: iterations must be an integer >= 0; got {self.iterations!r}")
        for name in ("tol", "handover"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or isinstance(value, bool) \
                    or not math.isfinite(value) or value < 0:
                raise pb.ValidationError(f"sppm: {name} must be a finite number >= 0; got {value!r}")
        if self.variant not in VARIANTS:
            raise pb.ValidationError(f"sppm: variant must be one of {', '.join(VARIANTS)}; "
                                     f"got {self.variant!r}")
        if not isinstance(self.corrective_steps, numbers.Integral) \
                or isinstance(self.corrective_steps, bool) or self.corrective_steps < 0:
            raise pb.ValidationError(f"sppm: corrective_steps must be an integer >= 0; got "
                                     f"{self.corrective_steps!r}")
        if not isinstance(self.exact_every, numbers.Integral) \
                or isinstance(self.exact_every, bool) or self.exact_every < 1:
            raise pb.ValidationError(f"sppm: exact_every must be an integer >= 1; got "
                                     f"{self.exact_every!r}")
        for name, low in (("neighbours", 1), ("rounds", 0), ("prune_after", 0), ("threads", 0),
                          ("polish_rounds", 1), ("warmup", 0), ("restricted_steps", 0)):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
                raise pb.ValidationError(f"sppm: {name} must be an integer >= {low}; got {value!r}")
        if self.mode not in MODES:
            raise pb.ValidationError(f"sppm: mode must be one of {', '.join(MODES)}; "
                                     f"got {self.mode!r}")

    # -- lifecycle ----------------------------------------------------------------------
    def _options(self) -> dict[str, object]:
        return dict(iterations=int(self.iterations), tol=float(self.tol), variant=str(self.variant),
                    corrective_steps=int(self.corrective_steps), neighbours=int(self.neighbours),
                    exact_every=int(self.exact_every), rounds=int(self.rounds),
                    prune_after=int(self.prune_after), threads=int(self.threads),
                    mode=str(self.mode), polish_rounds=int(self.polish_rounds),
                    handover=float(self.handover), warmup=int(self.warmup),
                    restricted_steps=int(self.restricted_steps))

    def prepare(self, problem: pb.PrivacyProblem, context: pb.RunContext) -> None:
        """Resolve the LP backend and compile the numba kernels (and, for the optimal
        mode, import cvxpy) on a small sub-problem, once per process and configuration,
        so that the timed ``run`` never pays compilation."""
        super().prepare(problem, context)
        pb.get_lp_backend(str(self.lp_backend))  # unknown or unavailable: fails here
        # auto picks its mode from Δ, which prepare does not know: warm both it may pick
        for mode in AUTO_MODES if self.mode == "auto" else (str(self.mode),):
            key = (mode, str(self.variant), str(self.lp_backend), _distortion_kind(problem))
            if key in _WARMED:
                continue
            sub = warm_up_problem(problem)
            D = sub.distortion.to_dense()
            delta = 0.25 * float(np.min(D @ sub.p_b))
            options = {**self._options(), "iterations": min(int(self.iterations), 20),
                       "tol": 1e-9, "handover": 1.0, "polish_rounds": 1, "mode": mode,
                       "warmup": min(int(self.warmup), 5)}
            from ._sppm.solve import solve_sppm

            solve_sppm(sub, delta, pb.get_lp_backend(str(self.lp_backend)), **options)
            _WARMED.add(key)

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        backend = pb.get_lp_backend(str(self.lp_backend))
        throttled = self.context.throttled()

        def progress(fields: dict[str, object]) -> None:
            throttled(**fields)

        from ._sppm import continuation
        from ._sppm.modes import resolve_mode
        from ._sppm.solve import solve_sppm

        mode = resolve_mode(str(self.mode), problem, delta)
        options = {**self._options(), "mode": mode}
        warm = str(self.mode) == "auto" and mode == "dual" and self.x0 is None \
            and continuation.applies(problem)
        if warm:  # a good coarse start certifies in 1-2 rounds; a poor one is cut short
            options["polish_rounds"] = min(int(self.polish_rounds), WARM_ROUNDS)
        out = solve_sppm(_own_arrays(problem), delta, backend, x0=self.x0, on_iteration=progress,
                         **options)
        if warm and not out.stats["converged"]:
            # the coarse start does not always hold (synthetic m = 9 and 11 at 0.01 d_const:
            # gap 0.73-0.88 bits where m = 10 and 12 certify in 1-3 s): Frank-Wolfe instead
            failed = f"dual mode from a coarse start: gap {out.stats['gap_bits']:.2g} bits"
            options.update(mode="frank-wolfe", polish_rounds=int(self.polish_rounds))
            out = solve_sppm(_own_arrays(problem), delta, backend, x0=None,
                             on_iteration=progress, **options)
            out.stats.update(mode="frank-wolfe", auto_fallback=failed)
        keep = out.x > 0
        X = sp.csc_array((out.x[keep], (out.rows[keep], out.cols[keep])),
                         shape=(problem.n, problem.n))
        X.sum_duplicates()
        stats = dict(out.stats, lp_backend=str(self.lp_backend), mode_requested=str(self.mode))
        stats.pop("gap_bits")  # the certificate derives it from the two bounds
        cert = pb.Certificate.of(stats.pop("objective_bits"), stats.pop("lower_bound_bits"),
                                 stats.pop("stop_reason"), trace=stats.pop("trace"),
                                 converged=stats.pop("converged"), delta=delta)
        warn_if_capped(cert, float(self.tol), self._options())
        return self.result(X, **stats, **cert.to_stats())


def cap_message(cert: pb.Certificate, tol: float, options: dict[str, object]) -> str | None:
    """The one line a run that stopped at a cap without its certificate prints (None
    when it converged or stopped for another reason), naming the parameter to raise."""
    param = CAPS.get(cert.stop_reason or "")
    if cert.converged or param is None:
        return None
    gap = cert.gap_bits if cert.gap_bits is not None else float("nan")
    return (f"sppm: stopped at {param}={options[param]} with gap {gap:.1e} bits > tol "
            f"{tol:g} (not certified: metrics.converged = false); raise `{param}`")


def warn_if_capped(cert: pb.Certificate, tol: float, options: dict[str, object]) -> None:
    """Print :func:`cap_message`'s line to stderr (runs print there: stdout is --json's)."""
    line = cap_message(cert, tol, options)
    if line is not None:
        print(line, file=sys.stderr, flush=True)


#: configurations whose kernels this process has compiled (see ``SPPM.prepare``)
_WARMED: set[tuple[object, ...]] = set()
#: symbols of the warm-up sub-problem: enough for every code path, a fraction of a second
WARM_UP_SYMBOLS = 40


def _distortion_kind(problem: pb.PrivacyProblem) -> tuple[str, str | None]:
    d = problem.distortion
    return type(d).__name__, getattr(d, "metric", None)


def warm_up_problem(problem: pb.PrivacyProblem, k: int = WARM_UP_SYMBOLS) -> pb.PrivacyProblem:
    """The ``k`` most probable symbols of ``problem``, with the same kind of distortion."""
    idx = np.sort(np.argsort(problem.p_b, kind="stable")[::-1][: min(k, problem.n)])
    d = problem.distortion
    dist = pb.FeatureDistortion(d.points[idx], d.metric) if isinstance(d, pb.FeatureDistortion) \
        else pb.MatrixDistortion(d.block(idx, idx))
    return pb.PrivacyProblem.from_arrays(problem.joint[:, idx], dist, name=f"{problem.name}|warm-up")


def _own_arrays(problem: pb.PrivacyProblem) -> pb.PrivacyProblem:
    """The problem with private, writable copies of the arrays the kernels read.

    The runner hands mechanisms read-only arrays; numba compiles read-only and writable
    arguments separately, so without this copy (O(|A| n), negligible) the warm-up in
    ``prepare`` would compile the wrong specialisation and the timed run would compile
    again."""
    d = problem.distortion
    if isinstance(d, pb.FeatureDistortion):
        d = pb.FeatureDistortion(np.array(d.points), d.metric)
    return dataclasses.replace(problem, joint=np.array(problem.joint), distortion=d)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [SPPM]


@pb.hookimpl
def privbench_register_commands(cli) -> None:
    """``privbench benchmark sppm`` (imported only when the command line is built)."""
    from privbench.plugins.mechanisms._sppm.benchmark_cmd import add_parser

    add_parser(cli)
