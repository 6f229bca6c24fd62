"""Where one column-generation run of a catalogue LP spends its CPU time, phase by phase.

    python tools/measure_colgen_phases.py [--dataset "random:n=600,distortion=hamming,bits=12,seed=1"]
        [--mechanism lip_optimal|lip_optimal:ldp|perfect_privacy] [--epsilon 0.1] [--runs 15]

Wraps the methods of ``_lp_colgen`` (and ``lip_optimal``'s ε repair) with CPU timers
(``time.process_time``: this process, fair on a shared machine), runs the mechanism's
``run`` two times untimed and then ``--runs`` times, and prints the median of each phase
and of the whole run. Phases nest: "first master" includes its ``add_pairs``, and
"add_pairs (all)" counts every call. docs/studies/catalogue-scaling.md quotes it.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from typing import Any

import privbench as pb
from privbench.plugins.mechanisms import _lp_colgen, _lp_mapping, lip_optimal

#: (object, method, label) of every timed phase
PHASES = ((_lp_colgen.ColumnGeneration, "__init__", "HiGHS model set-up"),
          (_lp_colgen.ColumnGeneration, "initial_pairs", "first master (pairs + addCols)"),
          (_lp_colgen.ColumnGeneration, "add_pairs", "add_pairs (all)"),
          (_lp_colgen.ColumnGeneration, "solve_master", "master solves (HiGHS run)"),
          (_lp_colgen.ColumnGeneration, "price", "pricing + bound"),
          (_lp_colgen.ColumnGeneration, "mapping", "read-back (mapping)"),
          (lip_optimal, "repair", "ε repair (lip_optimal)"))


def timed(spent: dict[str, float], func: Any, label: str) -> Any:
    """``func`` adding its CPU seconds to ``spent[label]``."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - start
    return wrapper


def main() -> None:
    """Parse the options, wrap the phases, run and print the medians."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="random:n=600,distortion=hamming,bits=12,seed=1")
    ap.add_argument("--mechanism", default="lip_optimal",
                    choices=["lip_optimal", "lip_optimal:ldp", "perfect_privacy"])
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    name, params = pb.parse_spec(args.dataset, what="dataset", kind="dataset")
    problem = pb.load_dataset(name, **params)
    spent: dict[str, float] = collections.defaultdict(float)
    for owner, method, label in PHASES:
        setattr(owner, method, timed(spent, getattr(owner, method), label))
    original = _lp_colgen.Problem
    _lp_mapping.Problem = timed(spent, original, "Problem (n x m cost table)")
    if args.mechanism == "perfect_privacy":
        mech = pb.get_mechanism("perfect_privacy", max_n=problem.n)
    else:
        notion = "ldp" if args.mechanism.endswith(":ldp") else "lip"
        mech = pb.get_mechanism("lip_optimal", notion=notion, max_n=problem.n)
    mech.prepare(problem, pb.RunContext(seed=0))
    rows = []
    for k in range(args.runs + 2):
        spent.clear()
        start = time.process_time()
        res = mech.run(problem, args.epsilon)
        if k >= 2:
            rows.append(dict(spent, total=time.process_time() - start))
    print(f"{args.dataset} {args.mechanism} ε = {args.epsilon:g}: {res.stats['lp_rounds']} "
          f"rounds, {res.stats['lp_cols']} columns; CPU ms, median of {args.runs} runs")
    for label in rows[0]:
        print(f"  {label:34s} {statistics.median(r.get(label, 0.0) for r in rows) * 1e3:8.2f}")


if __name__ == "__main__":
    main()
