"""``sppm``: Sparse Privacy Preserving Mappings (Salamatian et al., Algorithms 1 and 2).

Frank-Wolfe on I(A; B̂) under E[d] <= Δ, each linear step solved by column generation
on a sparse active set, with a certified optimality gap (``gap_bits``). The work is
in :mod:`privbench.plugins.mechanisms._sppm`; this module is the plugin face.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._sppm.settings import MODES, VARIANTS, SPPMSettings, plugin_face, settings_of

__all__ = ["MODES", "SPPM", "VARIANTS", "SPPMSettings"]

#: the modes ``auto`` chooses between (``._sppm.modes.resolve_mode``; the compiled solver
#: in ._sppm is imported only when a run prepares, so that listing plugins stays light)
AUTO_MODES = ("frank-wolfe", "dual")
#: the stop reasons of a run that hit a cap, and the parameter that raises it
CAPS = {"iterations": "iterations", "dual mode: rounds exhausted": "polish_rounds",
        "optimal mode: polish rounds exhausted": "polish_rounds"}


@plugin_face({"x0": (None, "object", """the starting mapping X0 (n x n, dense or scipy
    sparse, columns on the simplex, within the budget); None (default) starts from the
    identity, or from each input's least-distortion output when the identity exceeds the
    budget.""")})
class SPPM(pb.MappingMechanism):
    """SPPM with ``iterations`` Frank-Wolfe steps at most, stopping at a gap < ``tol`` bits.

    Its parameters, their defaults, help and checks are declared once, in
    :class:`~privbench.plugins.mechanisms._sppm.settings.SPPMSettings` (``__init__``, this
    docstring's parameter list and ``check_params`` are generated from it); ``x0`` is the
    plugin's own.
    """

    name = "sppm"
    citation = 'Salamatian, Fawaz, Kveton, Taft, SPPM: Sparse Privacy Preserving Mappings, UAI 2014'
    reference_rank = 0  # certified to its gap at every size: the default reference
    plugin_params = {"lp_backend": "lp_backend"}  # the restricted master's solver
    description = "SPPM: Frank-Wolfe + column generation, certified gap (gap_bits)"
    test_parameters = {"iterations": [30], "lp_backend": ["mckp", "highs"]}

    def settings(self) -> SPPMSettings:
        """The solver's settings from this plugin's parameters (validated)."""
        return settings_of(self)

    # -- lifecycle ----------------------------------------------------------------------
    def prepare(self, problem: pb.PrivacyProblem, context: pb.RunContext) -> None:
        """Resolve the LP backend and compile the numba kernels (and, for the optimal
        mode, import cvxpy) on a small sub-problem, once per process and configuration,
        so that the timed ``run`` never pays compilation."""
        super().prepare(problem, context)
        settings = self.settings()
        pb.get_lp_backend(settings.lp_backend)  # unknown or unavailable: fails here
        # auto picks its mode from Δ, which prepare does not know: warm both it may pick
        for mode in AUTO_MODES if settings.mode == "auto" else (settings.mode,):
            key = (mode, settings.variant, settings.lp_backend, _distortion_kind(problem))
            if key in _WARMED:
                continue
            sub = warm_up_problem(problem)
            D = sub.distortion.to_dense()
            delta = 0.25 * float(np.min(D @ sub.p_b))
            warm = settings.replace(iterations=min(settings.iterations, 20), tol=1e-9,
                                    handover=1.0, polish_rounds=1, mode=mode,
                                    warmup=min(settings.warmup, 5))
            from ._sppm.solve import solve_sppm

            solve_sppm(sub, delta, pb.get_lp_backend(settings.lp_backend), warm)
            _WARMED.add(key)

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        settings = self.settings()
        backend = pb.get_lp_backend(settings.lp_backend)
        throttled = self.context.throttled()

        def progress(fields: dict[str, object]) -> None:
            throttled(**fields)

        from ._sppm.solve import solve_sppm

        out = solve_sppm(_own_arrays(problem), delta, backend, settings, x0=self.x0,
                         on_iteration=progress)
        keep = out.x > 0
        X = sp.csc_array((out.x[keep], (out.rows[keep], out.cols[keep])),
                         shape=(problem.n, problem.n))
        X.sum_duplicates()
        warn_if_capped(out.stats, settings)
        # the solver's one stats dict (its certificate included) is the result's
        return self.result(X, **out.stats, lp_backend=settings.lp_backend,
                           mode_requested=settings.mode)


def cap_message(stats: dict[str, object], settings: SPPMSettings) -> str | None:
    """The one line a run that stopped at a cap without its certificate prints (None
    when it converged or stopped for another reason), naming the parameter to raise."""
    param = CAPS.get(str(stats.get("stop_reason") or ""))
    if stats.get("converged") or param is None:
        return None
    gap = stats.get("gap_bits")
    gap = float(gap) if isinstance(gap, int | float) else float("nan")
    return (f"sppm: stopped at {param}={getattr(settings, param)} with gap {gap:.1e} bits > "
            f"tol {settings.tol:g} (not certified: metrics.converged = false); raise `{param}`")


def warn_if_capped(stats: dict[str, object], settings: SPPMSettings) -> None:
    """Print :func:`cap_message`'s line to stderr (runs print there: stdout is --json's)."""
    line = cap_message(stats, settings)
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
