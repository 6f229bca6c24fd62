"""``privbench benchmark sppm``: SPPM's time to a certified gap, per alphabet size and LP backend.

The sppm plugin contributes this command through ``privbench_register_commands``.

For each m (synthetic data, n = 2^m symbols, Δ = 2^(m-8)) and each ``--dataset`` (with
``--delta``) it runs SPPM with every requested LP backend and prints wall time,
Frank-Wolfe iterations, the certified gap, I(A; B̂), the process's peak memory and
where the time went (pricing / LP / line search / polish), then the time ratio of each
backend to the first one. With ``--targets`` each run is checked against the project's
targets (time, gap, memory). Every run goes through the runner like ``privbench run``
(SPPM prepares and compiles untimed, the solve alone is timed; ``--db`` stores the
records); runs are sequential in this process, so times are comparable.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

import privbench as pb
from privbench import ValidationError, get_mechanism, load_dataset
from privbench.protocol.commands import CommandLine
from privbench.protocol.information import mutual_information

if TYPE_CHECKING:
    from privbench import ResultStore

#: the targets (seconds, peak MiB or None) for the synthetic data up to m = 12, 14, 16, 18
#: (smaller alphabets get the next one's; issue 31's frontier for m = 16 and 18), and for a
#: --dataset run: census with every profile has its own, any other data set the default
SYNTHETIC_TARGETS = ((12, 10.0, None), (14, 60.0, None), (16, 30.0, None), (18, 300.0, 4096.0))
DATASET_TARGETS = {"census:top_k=all": (10.0, None)}
DATASET_TARGET = (60.0, None)


def synthetic_target(m: int) -> tuple[float, float | None] | None:
    return next(((s, mb) for top, s, mb in SYNTHETIC_TARGETS if m <= top), None)


def add_parser(cli: CommandLine) -> None:
    p = cli.add_benchmark("sppm", help="time SPPM to a certified gap per alphabet size",
                          description=__doc__.split("\n\n")[2].replace("\n", " "))
    p.add_argument("--m", type=int, action="append", default=None,
                   help="synthetic alphabet exponent, n = 2^m (repeatable; default 8 10 12 "
                        "unless --dataset is given)")
    p.add_argument("--dataset", action="append", default=[],
                   help="a data set spec such as census:top_k=all (repeatable; needs --delta)")
    p.add_argument("--delta", type=float, default=None, help="budget for --dataset runs")
    p.add_argument("--lp-backend", action="append", default=None,
                   help="LP backend (repeatable; default mckp)")
    p.add_argument("--tol", type=float, default=1e-3, help="certified gap target in bits")
    p.add_argument("--iterations", type=int, default=20000,
                   help="Frank-Wolfe iteration cap (default 20000: m = 18 takes ~7,500)")
    p.add_argument("--variant", default="classic", help="classic (default) or pairwise")
    p.add_argument("--mode", default="frank-wolfe",
                   help="frank-wolfe (default), optimal or dual (see the sppm docstring)")
    p.add_argument("--handover", type=float, default=1e-3,
                   help="optimal mode: gap (bits) at which the restricted solves take over")
    p.add_argument("--warmup", type=int, default=100,
                   help="dual mode: Frank-Wolfe steps before the dual rounds")
    p.add_argument("--threads", type=int, default=0, help="pricing threads (0 = all cores)")
    p.add_argument("--prune-after", type=int, default=10, help="sppm prune_after")
    p.add_argument("--restricted-steps", type=int, default=100,
                   help="sppm restricted_steps: steps on the working inputs between full "
                        "iterations (0 = every iteration full)")
    p.add_argument("--rounds", type=int, default=1,
                   help="sppm rounds: master solves per FW iteration (0 = until none prices out)")
    p.add_argument("--neighbours", type=int, default=128, help="pricing neighbour lists size")
    p.add_argument("--targets", action="store_true",
                   help="check each run against the time / gap / memory targets")
    p.add_argument("--exact", type=int, action="append", default=[],
                   help="also time the dense exact solver (optimal mechanism, cvxpy) on the "
                        "synthetic data with this m (repeatable)")
    p.add_argument("--plot", default=None,
                   help="draw time vs n (log-log) with the paper's claim and the exact "
                        "solver's limit to this PNG file")
    p.add_argument("--json", action="store_true", help="one JSON object per run")
    p.add_argument("--db", default=None, help="also store every run record in this SQLite store")
    p.set_defaults(func=run)


def bench_exact(m: int) -> dict[str, Any]:
    """The dense convex program (1) on the synthetic data: the reference SPPM scales past."""
    problem = load_dataset("synthetic", m=m)
    mech = get_mechanism("optimal", max_n=problem.n)
    with pb.ResourceMeter() as meter:
        res = mech.solve(problem, 2.0 ** (m - 8))
    return {"problem": f"synthetic:m={m}", "n": problem.n, "delta": 2.0 ** (m - 8),
            "solver": "optimal (cvxpy, dense)", "time_s": meter.runtime_s,
            "mi_bits": mutual_information(problem, res.mapping),
            "peak_rss_mb": meter.peak_rss_mb, "status": res.stats.get("solver_status")}


def sppm_params(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    """The sppm parameters of the command's options; checked like ``run`` checks them."""
    params = dict(lp_backend=backend, tol=args.tol, iterations=args.iterations,
                  variant=args.variant, neighbours=args.neighbours, mode=args.mode,
                  threads=args.threads, prune_after=args.prune_after, rounds=args.rounds,
                  handover=args.handover, warmup=args.warmup,
                  restricted_steps=args.restricted_steps)
    get_mechanism("sppm", **params)  # create() runs check_params: a bad option exits 2
    pb.get_lp_backend(backend)  # an unknown or unavailable backend too
    return params


_STATS = ("iterations", "columns", "lp_solves", "time_pricing_s", "time_lp_s",
          "time_linesearch_s", "time_polish_s", "converged", "stop_reason")


def bench_one(label: str, delta: float, backend: str, args: argparse.Namespace,
              target: tuple[float, float | None] | None, store: ResultStore | None) -> dict[str, Any]:
    """One SPPM run through the runner; the row of the table from its record."""
    dataset, dataset_params = pb.parse_spec(label, what="dataset")
    spec = pb.RunSpec(mechanism="sppm", mechanism_params=sppm_params(backend, args), dataset=dataset,
                   dataset_params=dataset_params, delta=delta)
    record = pb.execute_run(spec)
    if store is not None:
        store.add(record, sweep_id="benchmark")
    if record["status"] != "ok":
        raise ValidationError(f"sppm on {label} at delta={delta:g}: {record['status']}: {record['error']}")
    m = record["metrics"]
    row = {"problem": label, "n": record["n"], "delta": delta, "lp_backend": backend,
           "mode": args.mode, "tol_bits": args.tol, "time_s": record["runtime_s"],
           "prepare_s": m.get("prepare_s"), "gap_bits": record["gap_bits"],
           "mi_bits": record["mi_bits"], "peak_rss_mb": m.get("peak_rss_mb"),
           "peak_mem_mb": record["peak_mem_mb"], **{k: m.get(k) for k in _STATS}}
    if target is not None:
        seconds, mib = target
        row.update(target_s=seconds, target_mb=mib,
                   met=bool(row["gap_bits"] <= args.tol and row["time_s"] <= seconds
                            and (mib is None or row["peak_rss_mb"] <= mib)))
    return row


def _problems(args: argparse.Namespace):
    ms = args.m if args.m is not None else ([] if args.dataset else [8, 10, 12])
    for m in ms:
        yield f"synthetic:m={m}", 2.0 ** (m - 8), synthetic_target(m)
    for text in args.dataset:  # run() has checked that --delta is given
        yield text, args.delta, DATASET_TARGETS.get(text.replace(" ", ""), DATASET_TARGET)


def run(args: argparse.Namespace) -> int:
    backends = args.lp_backend or ["mckp"]
    if args.dataset and args.delta is None:
        raise ValidationError("--dataset needs --delta")
    for backend in backends:  # bad options fail before anything runs
        sppm_params(backend, args)
    rows: list[dict[str, Any]] = []
    head = (f"{'problem':>22} {'n':>6} {'delta':>6} {'backend':>8} {'time_s':>8} {'iters':>6} "
            f"{'gap_bits':>9} {'mi_bits':>8} {'peak_MB':>8} {'|V|':>7} {'pricing':>8} "
            f"{'lp':>7} {'lsearch':>7} {'polish':>7}" + ("  target" if args.targets else ""))
    if not args.json:
        print(head)
    store = pb.ResultStore(args.db) if args.db else None
    for label, delta, target in _problems(args):
        for backend in backends:
            r = bench_one(label, delta, backend, args, target if args.targets else None, store)
            rows.append(r)
            if args.json:
                print(json.dumps(r), flush=True)
                continue
            line = (f"{label:>22} {r['n']:>6} {delta:>6g} {backend:>8} {r['time_s']:>8.2f} "
                    f"{r['iterations']:>6} {r['gap_bits']:>9.2e} {r['mi_bits']:>8.5f} "
                    f"{r['peak_rss_mb']:>8.1f} {r['columns']:>7} {r['time_pricing_s']:>8.2f} "
                    f"{r['time_lp_s']:>7.2f} {r['time_linesearch_s']:>7.2f} "
                    f"{r['time_polish_s']:>7.2f}")
            if "met" in r:
                mem = f", {r['target_mb']:g} MB" if r["target_mb"] else ""
                line += (f"  <= {r['target_s']:g} s{mem}, gap <= {args.tol:g}: "
                         f"{'met' if r['met'] else 'MISSED'}")
            print(line, flush=True)
    exact_rows = []
    if args.exact:  # import cvxpy and its solver outside the timed runs
        get_mechanism("optimal").solve(load_dataset("synthetic", m=2), 0.5)
    for m in args.exact:
        r = bench_exact(m)
        exact_rows.append(r)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(f"{r['problem']:>22} {r['n']:>6} {r['delta']:>6g} {'optimal':>8} "
                  f"{r['time_s']:>8.2f} {'':>6} {'':>9} {r['mi_bits']:>8.5f} "
                  f"{r['peak_rss_mb']:>8.1f}  (dense cvxpy, {r['status']})", flush=True)
    if args.plot:
        from privbench.plugins.mechanisms._sppm.scaling_figure import sppm_scaling_figure

        sppm_scaling_figure(rows, exact_rows, args.plot)
        if not args.json:
            print(f"figure written to {args.plot}")
    if len(backends) > 1:
        ref = backends[0]
        for label in dict.fromkeys(r["problem"] for r in rows):
            base = next(r for r in rows if r["problem"] == label and r["lp_backend"] == ref)
            for r in rows:
                if r["problem"] == label and r["lp_backend"] != ref:
                    line = {"problem": label, "ratio": f"{r['lp_backend']}/{ref}",
                            "time_ratio": r["time_s"] / base["time_s"],
                            "lp_time_ratio": r["time_lp_s"] / max(base["time_lp_s"], 1e-12)}
                    if args.json:
                        print(json.dumps(line))
                    else:
                        print(f"{label}: {line['ratio']} total time x{line['time_ratio']:.2f}, "
                              f"LP time x{line['lp_time_ratio']:.2f}")
    if store is not None:
        store.close()
    return 1 if args.targets and not all(r.get("met", True) for r in rows) else 0
