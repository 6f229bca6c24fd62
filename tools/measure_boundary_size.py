"""The size of the bootstrap metric's boundary test (``boundary_accepts`` against the
permutation null), by simulation under exact independence.

The test is exact in theory (the sample and its B permuted tables are exchangeable when A
is independent of the symbol), so it rejects 'leaks nothing' in at most 5 % of samples.
A coverage cell at a true 0 of ``measure_ci_coverage.py`` counts exactly these
rejections on 200-400 samples; this draws many more samples of the same joint and runs
the test alone, to tell Monte Carlo noise from a real excess:

    python tools/measure_boundary_size.py --private 4 --profiles 100 --users 10000 --seed 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from measure_ci_coverage import known_joint, sampled_problem

from privbench.plugins.metrics import bootstrap as bs

NAMES = ("mi_bits", "sibson_mi", "maximal_leakage", "lip_epsilon", "ldp_epsilon_private",
         "total_variation", "t_closeness")


def rejection_rates(n_private: int, profiles: int, users: int, reps: int, seed: int,
                    resamples: int = 200) -> dict[str, float]:
    """Share of ``reps`` samples (drawn as in the coverage tool's 0-bit cell) whose
    boundary test rejects, per notion tested against the permutation null."""
    P, X = known_joint(n_private, profiles, 0.0, np.random.default_rng([seed, n_private]))
    rng = np.random.default_rng(seed + 1000 * n_private)
    rejected = dict.fromkeys(NAMES, 0)
    done = 0
    while done < reps:
        problem = sampled_problem(P, users, rng)
        if problem is None:
            continue
        null = bs.bootstrap_samples(problem, X, resamples=resamples, seed=done,
                                    independent=True)
        centre = bs.estimates(problem, X)
        tie = bs.tie_breakers(resamples, done)
        for name in NAMES:
            rejected[name] += not bs.boundary_accepts(centre[name], null[name], *tie)
        done += 1
    return {name: count / reps for name, count in rejected.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--private", type=int, default=2)
    ap.add_argument("--profiles", type=int, default=30)
    ap.add_argument("--users", type=int, default=3000)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for flag in ("private", "profiles", "users", "reps"):
        if getattr(args, flag) < (2 if flag == "private" else 1):
            ap.error(f"--{flag} must be at least {2 if flag == 'private' else 1}, "
                     f"got {getattr(args, flag)}")
    t0 = time.perf_counter()
    rates = rejection_rates(args.private, args.profiles, args.users, args.reps, args.seed)
    sd = (0.05 * 0.95 / args.reps) ** 0.5
    for name, rate in rates.items():
        print(f"{name:20s} {rate:.4f}  ({(rate - 0.05) / sd:+.1f} Monte Carlo sd from 5 %)")
    print(f"{args.reps} samples, |A| = {args.private}, {args.profiles} profiles, "
          f"{args.users} users, seed {args.seed}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
