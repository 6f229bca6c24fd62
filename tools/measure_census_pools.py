"""Census with every profile: how many pools of rare profiles of equal posterior there are.

    PRIVBENCH_DATA_DIR=... python tools/measure_census_pools.py

For H heavy profiles (the most probable), every other profile joins the heavy profile
nearest in Hamming distance (the first in mass order on ties); a pool is the rare profiles
of one nearest heavy profile and one posterior p(a | b) (equal to 1e-9). Pooling profiles of
equal posterior keeps their leakage exactly, so a coarse problem of H heavy profiles plus
one input and one "stay" output per pool is an exact restriction of SPPM's problem (an idea
for a start at 0.01-0.1 d_const, not built: docs/studies/sppm-frontier.md, 'Tried: the dual
rounds with no warm-up'). Prints the profiles by head count and, per H, the pools.
"""

from __future__ import annotations

import numpy as np

import privbench as pb
from privbench.plugins.mechanisms.sppm import _own_arrays


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
    order = np.argsort(-p_b, kind="stable")
    for h in (250, 500, 1000, 1500, 2000):
        heavy, rare = order[:h], order[h:]
        d = (pts[rare][:, None, :] != pts[heavy][None, :, :]).sum(axis=2)
        key = np.stack([heavy[np.argmin(d, axis=1)],
                        np.round(post[rare] * 1e9).astype(np.int64)], axis=1)
        pools = np.unique(key, axis=0).shape[0]
        print(f"H {h}: {rare.size} rare profiles (mass {p_b[rare].sum():.3f}) in {pools} pools: "
              f"a coarse problem of {h + pools} inputs and outputs; mean distance to the "
              f"nearest heavy profile {d.min(axis=1).mean():.2f}")


if __name__ == "__main__":
    main()
