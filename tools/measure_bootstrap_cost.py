"""What the ``bootstrap`` metric costs against an earlier version of itself.

    PRIVBENCH_DATA_DIR=../shared/data flock /work/bench.lock \
        python tools/measure_bootstrap_cost.py --reference 1578256

For each data set (census top 300, MovieLens 100K, the Politics-and-TV surrogate) an
``expmec`` mapping at Δ = 0.3 is evaluated by this checkout's metric and by the metric of
``--reference`` (the file ``plugins/metrics/bootstrap.py`` at that git revision, loaded as a
module beside this one), alternating one call of each per round, in one process; the
median over ``--rounds`` rounds and the ratio new / reference are printed. ``--dataset
SPEC`` (repeatable) replaces the data sets, ``--mechanism`` and ``--delta`` the mapping:

    python tools/measure_bootstrap_cost.py --reference cb54a56 --dataset census:top_k=all \
        --mechanism sppm --delta 0.03353
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import privbench as pb
from privbench.plugins.metrics import bootstrap as bs
from privbench.protocol.context import RunContext

ROOT = Path(__file__).resolve().parents[1]
CASES = (("census", {"top_k": 300}), ("movielens", {}), ("politics_tv_surrogate", {}))


def reference_module(revision: str):
    """``plugins/metrics/bootstrap.py`` as of ``revision``, importable beside this one."""
    source = subprocess.run(["git", "show", f"{revision}:plugins/metrics/bootstrap.py"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "bootstrap_reference.py"
    path.write_text(source)
    name = f"{bs.__name__.rsplit('.', 1)[0]}.bootstrap_reference"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True, help="git revision to compare against")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dataset", action="append", metavar="SPEC",
                    help="a data set spec (name[:key=value,...]); repeatable")
    ap.add_argument("--mechanism", default="expmec")
    ap.add_argument("--delta", type=float, default=0.3)
    args = ap.parse_args()
    old = reference_module(args.reference).BootstrapIntervals()
    new = bs.BootstrapIntervals()
    cases = [pb.parse_spec(spec, what="dataset", kind="dataset") for spec in args.dataset] if args.dataset \
        else CASES
    for name, params in cases:
        problem = pb.load_dataset(name, **params)
        mech = pb.get_mechanism(args.mechanism)
        mech.prepare(problem, RunContext(seed=0))
        result = mech.run(problem, args.delta)
        times: dict[str, list[float]] = {"new": [], "reference": []}
        for _ in range(args.rounds):
            for label, metric in (("new", new), ("reference", old)):
                t0 = time.perf_counter()
                metric.compute(problem, result, delta=args.delta, seed=0)
                times[label].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{problem.name} n={problem.n} |A|={problem.n_private} "
              f"users={len(problem.records)}: new {med['new']:.3f} s, "
              f"reference {med['reference']:.3f} s, ratio {med['new'] / med['reference']:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
