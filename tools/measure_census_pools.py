"""Census with every profile: how many pools of rare profiles of equal posterior there are.

    PRIVBENCH_DATA_DIR=... python tools/measure_census_pools.py [--solve F ...]

For H heavy profiles (the most probable), every other profile joins the heavy profile
nearest in Hamming distance (the first in mass order on ties); a pool is the rare profiles
of one nearest heavy profile and one posterior p(a | b) (equal to 1e-9). Pooling profiles of
equal posterior keeps their leakage exactly, so a coarse problem of H heavy profiles plus
one input and one "stay" output per pool is an exact restriction of SPPM's problem (a
start probed for 0.01-0.1 d_const and not built: its I_c is 0.05-0.10 bits above I*;
docs/studies/sppm-frontier.md, 'Tried: starts without the warm-up'). Prints the profiles
by head count and, per H, the pools; with
``--solve F ...`` it also builds the coarse problem for H = 250 and 500 (a stay output
takes its own pool at distance 0 and no other input: distortion ``FORBIDDEN``) and solves
it with sppm's dual mode at each Δ = F d_const, printing I_c (an upper bound on I*).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import privbench as pb
import privbench.plugins.mechanisms._sppm.solve as solve_mod
from privbench import MatrixDistortion, PrivacyProblem
from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays
from privbench.protocol.feasibility import row_budget_costs

#: a stay output's distortion from every input but its own pool (never worth it)
FORBIDDEN = 100.0


def pools_of(problem: PrivacyProblem, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The H heaviest profiles, the rest, and each rare profile's pool (0 .. k - 1)."""
    p_b = problem.p_b
    pts = problem.distortion.points.astype(np.int64)
    post = problem.joint[0] / np.where(p_b > 0, p_b, 1.0)
    order = np.argsort(-p_b, kind="stable")
    heavy, rare = order[:h], order[h:]
    d = (pts[rare][:, None, :] != pts[heavy][None, :, :]).sum(axis=2)
    key = np.stack([heavy[np.argmin(d, axis=1)],
                    np.round(post[rare] * 1e9).astype(np.int64)], axis=1)
    pool = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
    return heavy, rare, pool


def pooled_problem(problem: PrivacyProblem, h: int) -> PrivacyProblem:
    """Inputs: the H heavy profiles, then the pools; outputs: the same, a pool's being its
    stay output (each member released as itself: equal posteriors, so its leakage is the
    pool's). A heavy output takes a pool at the members' expected distance."""
    heavy, rare, pool = pools_of(problem, h)
    k = int(pool.max()) + 1
    P, p_b = problem.joint, problem.p_b
    pts = problem.distortion.points.astype(np.int64)
    joint = np.zeros((P.shape[0], h + k))
    joint[:, :h] = P[:, heavy]
    for a in range(P.shape[0]):
        joint[a, h:] = np.bincount(pool, weights=P[a, rare], minlength=k)
    mass = joint.sum(axis=0)
    D = np.full((h + k, h + k), FORBIDDEN)
    D[:h, :h] = (pts[heavy][:, None, :] != pts[heavy][None, :, :]).sum(axis=2)
    for i in range(h):
        d = (pts[rare] != pts[heavy[i]]).sum(axis=1)
        D[i, h:] = np.bincount(pool, weights=p_b[rare] * d, minlength=k) / mass[h:]
    D[h + np.arange(k), h + np.arange(k)] = 0.0
    return PrivacyProblem.from_arrays(joint, MatrixDistortion(D), name="census|pools")


def main() -> None:
    problem = _own_arrays(pb.load_dataset("census", top_k="all"))
    p_b = problem.p_b
    pts = problem.distortion.points.astype(np.int64)
    post = problem.joint[0] / np.where(p_b > 0, p_b, 1.0)
    people = 1.0 / p_b.min()  # the rarest profile is one person
    counts = np.rint(p_b * people).astype(int)
    print(f"n {problem.n}, ~{people:.0f} people; profiles of 1 / 2 / <= 5 people: "
          f"{(counts == 1).sum()} / {(counts == 2).sum()} / {(counts <= 5).sum()}; "
          f"distinct posteriors: {np.unique(np.round(post, 9)).size}")
    for h in (250, 500, 1000, 1500, 2000):
        heavy, rare, pool = pools_of(problem, h)
        pools = int(pool.max()) + 1
        d = (pts[rare][:, None, :] != pts[heavy][None, :, :]).sum(axis=2)
        print(f"H {h}: {rare.size} rare profiles (mass {p_b[rare].sum():.3f}) in {pools} pools: "
              f"a coarse problem of {h + pools} inputs and outputs; mean distance to the "
              f"nearest heavy profile {d.min(axis=1).mean():.2f}")
    budgets = [float(f) for f in sys.argv[sys.argv.index("--solve") + 1:]] \
        if "--solve" in sys.argv else []
    if not budgets:
        return
    d_const = float(row_budget_costs(problem).min())
    backend = pb.get_lp_backend("mckp")
    for h in (250, 500):
        coarse = pooled_problem(problem, h)
        for f in budgets:
            t = time.perf_counter()
            s = solve_mod.solve_sppm(coarse, f * d_const, backend,
                                     SPPMSettings(mode="dual", coarse_start=False)).stats
            print(f"H {h} (n {coarse.n}), {f:g} d_const: I_c {s['objective_bits']:.5f} bits, "
                  f"gap {s['gap_bits']:.1e}, {time.perf_counter() - t:.2f} s", flush=True)


if __name__ == "__main__":
    main()
