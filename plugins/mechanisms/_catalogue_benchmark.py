"""``privbench benchmark catalogue``: the catalogue's LP mechanisms at scale, with targets.

For each instance (a data set spec) it runs ``maxleak_optimal`` and ``map_optimal`` at
Δ = F · d_const for each ``--relative-delta`` F (default 0.01, 0.1, 0.3), ``lip_optimal``
(notions lip and ldp) at each ``--epsilon`` (default 0.1, 1, 4 nats) and
``perfect_privacy`` once, each through the runner like ``privbench run`` (``max_n``
lifted to the instance's n; the solve alone is timed), and prints time, the LP objective,
its proven bound and relative gap, column-generation rounds and columns, and the
process's peak memory; ``cpu_s`` is the solve's CPU time (``solve_cpu_s``: on a shared,
loaded machine the fair measure). ``--full N`` also runs the old whole LP (``solver=full``) on the
instances with n <= N, right after the new solver on the same budget, and prints the
time ratios (wall and CPU): ``--repeat K`` (default 3) alternating pairs (colgen, full,
colgen, full, ...), each row the median of its K times, each ratio the median of the K
pairs' ratios (so one lucky or unlucky pair does not decide a target); ``--sppm`` times
SPPM (its defaults, Δ = 0.3 d_const) on each instance first, the peer on its own notion.
With ``--targets`` each run is checked against the issue's targets: 60 s (300 s for
``census:top_k=all``), a relative gap <= 1e-6 and a peak memory <= 4 GiB; the exit status
is 1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import TYPE_CHECKING, Any

import privbench as pb

if TYPE_CHECKING:
    from privbench import ResultStore

DEFAULT_INSTANCES = ("census:top_k=2000", "random:n=4096,distortion=hamming,bits=12,seed=1",
                     "synthetic:m=10", "census:top_k=all")
#: (label, mechanism, params, budget kind): "relative" budgets are F · d_const, "epsilon" ε
RUNS = (("maxleak_optimal", "maxleak_optimal", {}, "relative"),
        ("map_optimal", "map_optimal", {}, "relative"),
        ("lip_optimal", "lip_optimal", {"notion": "lip"}, "epsilon"),
        ("lip_optimal:ldp", "lip_optimal", {"notion": "ldp"}, "epsilon"),
        ("perfect_privacy", "perfect_privacy", {}, "unused"))
#: seconds per instance (any other: DEFAULT_SECONDS), peak memory, relative gap
TARGET_SECONDS = {"census:top_k=all": 300.0}
DEFAULT_SECONDS = 60.0
TARGET_MB = 4096.0
TARGET_GAP = 1e-6
#: metrics the benchmark leaves out (resampling and reference solves cost more than the runs)
SKIPPED_METRICS = ("bootstrap", "optimum")


def add_parser(cli: Any) -> None:
    """Register ``privbench benchmark catalogue``."""
    p = cli.add_benchmark("catalogue", help="time the catalogue's LP mechanisms at scale",
                          description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--dataset", action="append", default=None,
                   help="instance (repeatable; default: " + ", ".join(DEFAULT_INSTANCES) + ")")
    p.add_argument("--mechanism", action="append", default=None,
                   choices=[r[0] for r in RUNS], help="only these (repeatable; default all five)")
    p.add_argument("--relative-delta", type=float, action="append", default=None,
                   help="Δ / d_const for maxleak_optimal and map_optimal (default 0.01 0.1 0.3)")
    p.add_argument("--epsilon", type=float, action="append", default=None,
                   help="ε in nats for lip_optimal (default 0.1 1 4)")
    p.add_argument("--tol", type=float, default=1e-6, help="relative gap to stop at")
    p.add_argument("--full", type=int, default=0, metavar="N",
                   help="also run solver=full (the whole LP) on instances with n <= N")
    p.add_argument("--repeat", type=int, default=3, metavar="K",
                   help="with --full: K alternating (colgen, full) pairs, medians reported "
                        "(default 3)")
    p.add_argument("--sppm", action="store_true", help="time SPPM on each instance first")
    p.add_argument("--targets", action="store_true",
                   help="check time, gap and memory against the targets (exit 1 on a miss)")
    p.add_argument("--json", action="store_true", help="one JSON object per run")
    p.add_argument("--db", default=None, help="also store every run record in this store")
    p.set_defaults(func=run)


def ortools_installed() -> bool:
    """Whether perfect_privacy's min-cost-flow first master is available."""
    try:
        import ortools.graph.python.min_cost_flow  # noqa: F401
    except ImportError:
        return False
    return True


def d_const(dataset: str, params: dict[str, Any]) -> tuple[float, int]:
    """E[d] of the best constant mapping (d_const: relative budgets, docs/cli.md) and n."""
    problem = pb.load_dataset(dataset, **params)
    res = pb.get_mechanism("constant").solve(problem, 0.0)  # Δ unused
    return float(res.stats["expected_distortion"]), problem.n


def one_run(label: str, mechanism: str, params: dict[str, Any], instance: str, delta: float,
            store: ResultStore | None) -> dict[str, Any]:
    """One run through the runner; the table row from its record."""
    dataset, dparams = pb.parse_spec(instance, what="dataset", kind="dataset")
    spec = pb.RunSpec(mechanism=mechanism, mechanism_params=params, dataset=dataset,
                      dataset_params=dparams, delta=delta, skip_metrics=SKIPPED_METRICS)
    record = pb.execute_run(spec)
    if store is not None:
        store.add(record, sweep_id="benchmark-catalogue")
    m = record.get("metrics") or {}
    return {"instance": instance, "n": record.get("n"), "mechanism": label,
            "solver": params.get("solver", "-"), "delta": delta, "status": record["status"],
            "error": record.get("error"), "time_s": record.get("runtime_s"),
            "cpu_s": m.get("solve_cpu_s"),
            "lp_objective": m.get("lp_objective"), "lp_bound": m.get("lp_bound"),
            "lp_gap": m.get("lp_gap"), "rounds": m.get("lp_rounds"), "columns": m.get("lp_cols"),
            "gap_bits": record.get("gap_bits"), "mi_bits": record.get("mi_bits"),
            "peak_rss_mb": m.get("peak_rss_mb")}


def check(row: dict[str, Any]) -> dict[str, Any]:
    """The targets of one run and whether it met them."""
    seconds = TARGET_SECONDS.get(row["instance"].replace(" ", ""), DEFAULT_SECONDS)
    gap = row["lp_gap"] if row["lp_gap"] is not None else float("inf")
    met = (row["status"] == "ok" and (row["time_s"] or float("inf")) <= seconds
           and gap <= TARGET_GAP and (row["peak_rss_mb"] or 0.0) <= TARGET_MB)
    return {"target_s": seconds, "met": bool(met)}


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The first row with ``time_s`` and ``cpu_s`` the medians of all (one row: itself);
    ``repeats`` says how many, and every run must be ok for the medians to be given."""
    out = dict(rows[0])
    if len(rows) > 1:
        out["repeats"] = len(rows)
        bad = [r for r in rows if r["status"] != "ok"]
        if bad:
            out.update(status=bad[0]["status"], error=bad[0]["error"])
        else:
            out["time_s"] = statistics.median(r["time_s"] for r in rows)
            out["cpu_s"] = statistics.median(r["cpu_s"] for r in rows)
    return out


def compared(runs: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> dict[str, Any]:
    """The full LP's median row with the medians of the pairs' ratios (wall and CPU) and
    the largest relative difference of the objectives."""
    old = median_row([o for _, o in runs if o is not None])
    ok = [(r, o) for r, o in runs if o is not None and r["status"] == "ok" == o["status"]
          and r["time_s"]]
    if len(ok) == len(runs) and old["status"] == "ok":
        old["ratio"] = statistics.median(o["time_s"] / r["time_s"] for r, o in ok)
        old["cpu_ratio"] = statistics.median(o["cpu_s"] / max(r["cpu_s"], 1e-9) for r, o in ok)
        old["ratios"] = [o["time_s"] / r["time_s"] for r, o in ok]
        old["agree"] = max(abs(o["lp_objective"] - r["lp_objective"])
                           / max(abs(o["lp_objective"]), 1e-12) for r, o in ok)
    return old


def budgets(kind: str, args: argparse.Namespace, dconst: float) -> list[float]:
    """The budgets of one mechanism on one instance."""
    if kind == "relative":
        return [f * dconst for f in (args.relative_delta or [0.01, 0.1, 0.3])]
    if kind == "epsilon":
        return list(args.epsilon or [0.1, 1.0, 4.0])
    return [0.0]


def fmt(value: Any, spec: str) -> str:
    """``value`` formatted, or '-' when absent."""
    return format(value, spec) if value is not None else "-"


def show(row: dict[str, Any], as_json: bool) -> None:
    """Print one row."""
    if as_json:
        print(json.dumps(row), flush=True)
        return
    if row["status"] != "ok":
        print(f"{row['instance']:>44} {row['mechanism']:>16} {row['solver']:>6} "
              f"{row['delta']:>9.4g}  {row['status']}: {row['error']}", flush=True)
        return
    line = (f"{row['instance']:>44} {row['n']:>6} {row['mechanism']:>16} {row['solver']:>6} "
            f"{row['delta']:>9.4g} {row['time_s']:>8.2f} {fmt(row['cpu_s'], '.2f'):>7} "
            f"{fmt(row['lp_objective'], '.9g'):>13} "
            f"{fmt(row['lp_gap'], '.1e'):>8} {fmt(row['rounds'], 'd'):>6} "
            f"{fmt(row['columns'], 'd'):>8} {fmt(row['peak_rss_mb'], '.0f'):>7}")
    if "ratio" in row:
        line += (f"  full/colgen x{row['ratio']:.1f} (CPU x{row['cpu_ratio']:.1f}), objectives "
                 f"differ by {row['agree']:.1e} rel")
        if len(row["ratios"]) > 1:
            line += (f"; medians of {len(row['ratios'])} alternating pairs (wall ratios "
                     + ", ".join(f"{r:.1f}" for r in row["ratios"]) + ")")
    if "met" in row:
        line += f"  <= {row['target_s']:g} s, gap <= {TARGET_GAP:g}, <= 4 GiB: " + \
            ("met" if row["met"] else "MISSED")
    print(line, flush=True)


def run(args: argparse.Namespace) -> int:
    """Every instance, mechanism and budget; exit 1 when ``--targets`` finds a miss."""
    instances = args.dataset or list(DEFAULT_INSTANCES)
    chosen = [r for r in RUNS if not args.mechanism or r[0] in args.mechanism]
    if not 0 < args.tol < 1:
        raise pb.ValidationError(f"--tol must be in (0, 1); got {args.tol:g}")
    if args.repeat < 1:
        raise pb.ValidationError(f"--repeat must be at least 1; got {args.repeat}")
    store = pb.ResultStore(args.db) if args.db else None
    if any(r[0] == "perfect_privacy" for r in chosen) and not ortools_installed():
        print("note: OR-Tools is not installed (pip install 'privbench[ortools]'): "
              "perfect_privacy starts from the nearest outputs, not from the min-cost flow, "
              "and is far slower above n = 2,000", file=sys.stderr, flush=True)
    if not args.json:
        print(f"{'instance':>44} {'n':>6} {'mechanism':>16} {'solver':>6} {'delta':>9} "
              f"{'time_s':>8} {'cpu_s':>7} {'lp_objective':>13} {'lp_gap':>8} {'rounds':>6} {'columns':>8} "
              f"{'peak_MB':>7}", flush=True)
    rows = []
    for instance in instances:
        dataset, dparams = pb.parse_spec(instance, what="dataset", kind="dataset")
        dconst, n = d_const(dataset, dparams)
        if args.sppm:
            row = one_run("sppm", "sppm", {}, instance, 0.3 * dconst, store)
            show(row, args.json)
        for label, mechanism, params, kind in chosen:
            for delta in budgets(kind, args, dconst):
                new = dict(params, max_n=max(n, 1), tol=args.tol)
                pairs = args.repeat if args.full and n <= args.full else 1
                runs = []
                for _ in range(pairs):
                    row = one_run(label, mechanism, dict(new, solver="colgen"), instance, delta,
                                  store)
                    old = (one_run(label, mechanism, dict(params, max_n=max(n, 1), solver="full"),
                                   instance, delta, store)
                           if args.full and n <= args.full else None)
                    runs.append((row, old))
                row = median_row([r for r, _ in runs])
                if args.targets:
                    row.update(check(row))
                rows.append(row)
                show(row, args.json)
                if runs[0][1] is not None:
                    show(compared(runs), args.json)
    if store is not None:
        store.close()
    return 1 if args.targets and not all(r.get("met", True) for r in rows) else 0
