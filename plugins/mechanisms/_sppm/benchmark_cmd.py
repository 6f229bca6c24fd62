"""``privbench benchmark sppm``: SPPM's time to a certified gap, per alphabet size and LP backend.

The sppm plugin contributes this command through ``privbench_register_commands``.

For each m (synthetic data, n = 2^m symbols, Δ = 2^(m-8)) and each ``--dataset`` (with
``--delta``) it runs SPPM with every requested LP backend and prints wall time,
Frank-Wolfe iterations, the certified gap, I(A; B̂), the process's peak memory and
where the time went (pricing / LP / line search / polish), then the time ratio of each
backend to the first one. With ``--targets`` each run is checked against the project's
targets (time, gap, memory). Every run goes through the runner like ``privbench run``
(SPPM prepares and compiles untimed, the solve alone is timed; ``--db`` stores the
records), with only the metrics a row reads (:data:`KEEP_METRICS`); runs are sequential in
this process, so times are comparable.

With ``--relative-delta F ...`` (several values, or the flag repeated) or ``--curve`` (every F of :data:`CURVE`) the
budgets are relative instead: Δ = F · d_const, d_const the expected distortion of the best
constant mapping (the ``constant`` mechanism), for the synthetic data and every
``--dataset`` alike; ``--peers`` then also times the certified peers (``smoothed_dual``,
``mirror_descent``, sppm's dual mode) on every row with n >= :data:`PEER_MIN_N`, and
``--targets`` checks issue 38's targets (:func:`curve_target`).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import re
import sys
from typing import TYPE_CHECKING, Any

import privbench as pb
from privbench import ValidationError, get_mechanism, load_dataset
from privbench.measures.information import mutual_information
from privbench.protocol.commands import CommandLine

from .settings import DEFAULTS, add_flags, settings_from_flags

if TYPE_CHECKING:
    from privbench import ResultStore

#: the targets (seconds, peak MiB or None) for the synthetic data up to m = 12, 14, 16, 18
#: (smaller alphabets get the next one's; issue 31's frontier for m = 16 and 18), and for a
#: --dataset run: census with every profile has its own, any other data set the default
SYNTHETIC_TARGETS = ((12, 10.0, None), (14, 60.0, None), (16, 30.0, None), (18, 300.0, 4096.0))
DATASET_TARGETS = {"census:top_k=all": (10.0, None)}
DATASET_TARGET = (60.0, None)
#: the trade-off curve's budgets, Δ / d_const (``--curve``)
CURVE = (1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 0.6)
#: peers timed with ``--peers``: (label, mechanism, parameters); each certifies its gap.
#: ``sppm_dual`` is sppm's dual mode as it was before the coarse start (warmed by
#: Frank-Wolfe alone): with the coarse start it is what ``auto`` itself runs on a line.
#: The dense peers keep their ``max_n`` (4,096; their rows above it say skipped): lifted,
#: on census with every profile (n = 9,261, 0.1 d_const, ``privbench run --timeout 45``)
#: ``smoothed_dual`` still refuses (the dense distortion matrix's limit, 8,192 symbols)
#: and ``mirror_descent`` peaked at 7.1 GB resident without a certificate in 45 s, past
#: issue 38's 4 GiB
PEERS = (("smoothed_dual", "smoothed_dual", {}), ("mirror_descent", "mirror_descent", {}),
         ("sppm_dual", "sppm", {"mode": "dual", "coarse_start": False}))
#: peers run (and the 3x target applies) from this alphabet size on
PEER_MIN_N = 4096
#: SPPM must be this many times faster than the best certified peer (n >= PEER_MIN_N)
PEER_RATIO = 3.0
#: ``--peer-timeout auto``: each peer may take max(PEER_RATIO x sppm's time on the row,
#: AUTO_TIMEOUT_MIN) seconds plus AUTO_TIMEOUT_MARGIN (so a stop at the limit is past 3x)
AUTO_TIMEOUT_MIN = 5.0
AUTO_TIMEOUT_MARGIN = 1.0
#: the metrics a row reads (I(A; B̂), E[d]); every other default metric is skipped: a peer's
#: ``--peer-timeout`` limit covers its run and its metrics, and on census with every profile
#: the bootstrap alone took ~15 s after a 5 s solve, so a peer that had certified was
#: reported as stopped at its limit (an uncertified run's optimum metric would even solve)
KEEP_METRICS = ("leakage", "distortion")


def skipped_metrics() -> tuple[str, ...]:
    """Every installed metric but :data:`KEEP_METRICS` (third-party ones included)."""
    return tuple(name for name in pb.metric_names() if name not in KEEP_METRICS)


def synthetic_target(m: int) -> tuple[float, float | None] | None:
    """Issue 31's (seconds, MiB) for synthetic m at Δ = 2^(m-8), or None above m = 18."""
    return next(((s, mb) for top, s, mb in SYNTHETIC_TARGETS if m <= top), None)


def curve_target(label: str, n: int) -> tuple[float, float | None]:
    """Issue 38's (seconds, MiB) at a relative budget: 60 s up to n = 4,096 (synthetic
    m <= 12) and on census with every profile, 5 minutes above, within 4 GiB."""
    if label.startswith("synthetic") and n > 4096:
        return 300.0, 4096.0
    return 60.0, 4096.0


def constant_distortion(problem: pb.PrivacyProblem) -> float:
    """d_const: E[d] of the best constant mapping (``constant``; its Δ is unused)."""
    result = get_mechanism("constant").solve(problem, 0.0)
    return float(result.stats["expected_distortion"])


def add_parser(cli: CommandLine) -> None:
    p = cli.add_benchmark("sppm", help="time SPPM to a certified gap per alphabet size",
                          description=__doc__.split("\n\n")[2].replace("\n", " "))
    p.add_argument("--m", type=int, nargs="+", action="extend", default=None, metavar="M",
                   help="synthetic alphabet exponents, n = 2^m (--m 10 12 or --m 10 --m 12; "
                        "default 8 10 12 "
                        "unless --dataset is given)")
    p.add_argument("--dataset", action="append", default=[],
                   help="a data set spec such as census:top_k=all (repeatable; needs --delta)")
    p.add_argument("--delta", type=float, default=None, help="budget for --dataset runs")
    p.add_argument("--relative-delta", type=float, nargs="+", action="extend", default=None,
                   metavar="F", help="budgets F * d_const (d_const: the best constant "
                   "mapping's distortion) for every problem (--relative-delta 0.01 0.1 or "
                   "the flag repeated)")
    p.add_argument("--curve", action="store_true",
                   help="every budget of the trade-off curve: --relative-delta "
                        + " ".join(f"{f:g}" for f in CURVE))
    p.add_argument("--peers", action="store_true",
                   help="with relative budgets: also time smoothed_dual, mirror_descent and "
                        f"sppm's dual mode on rows with n >= {PEER_MIN_N}")
    p.add_argument("--peer-min-n", type=int, default=PEER_MIN_N,
                   help=f"time the peers on rows with at least this n (default {PEER_MIN_N}, "
                        "where the 3x target applies)")
    p.add_argument("--peer-timeout", type=peer_timeout, default=600.0,
                   help="seconds each peer run may take (default 600), or 'auto': "
                        f"max({PEER_RATIO:g} x sppm's time on the row, {AUTO_TIMEOUT_MIN:g} s) + "
                        f"{AUTO_TIMEOUT_MARGIN:g} s; a peer stopped there without its "
                        f"certificate is at least {PEER_RATIO:g}x slower than sppm")
    p.add_argument("--lp-backend", action="append", default=None,
                   help=f"LP backend (repeatable; default {DEFAULTS['lp_backend']})")
    add_flags(p, skip=("lp_backend",))  # every other sppm setting, defaults from SPPMSettings
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


def peer_timeout(text: str) -> float | str:
    """``--peer-timeout``: seconds > 0 or ``auto`` (:func:`peer_limit`)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)  # the range is checked with the other options (_check)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds > 0 or 'auto'; got {text!r}") from None


def peer_limit(setting: float | str, sppm_s: float) -> float:
    """Seconds a peer may take on a row where sppm took ``sppm_s``: the fixed setting, or
    for ``auto`` max(PEER_RATIO x sppm_s, AUTO_TIMEOUT_MIN) + AUTO_TIMEOUT_MARGIN."""
    if setting == "auto":
        return max(PEER_RATIO * sppm_s, AUTO_TIMEOUT_MIN) + AUTO_TIMEOUT_MARGIN
    return float(setting)


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
    """The sppm parameters of the command's options (:class:`.settings.SPPMSettings`, which
    checks them as ``run`` does: a bad option exits 2): the settings that differ from
    sppm's defaults, and the LP backend."""
    settings = settings_from_flags(args, lp_backend=backend)
    pb.get_lp_backend(backend)  # an unknown or unavailable backend fails here too
    return {**settings.changed(), "lp_backend": backend}


_STATS = ("iterations", "columns", "lp_solves", "time_pricing_s", "time_lp_s",
          "time_linesearch_s", "time_polish_s", "converged", "stop_reason", "mode",
          "coarse_levels", "auto_fallback")


def _execute(label: str, mechanism: str, params: dict[str, Any], delta: float,
             timeout: float | None = None) -> dict[str, Any]:
    dataset, dataset_params = pb.parse_spec(label, what="dataset", kind="dataset")
    spec = pb.RunSpec(mechanism=mechanism, mechanism_params=params, dataset=dataset,
                      dataset_params=dataset_params, delta=delta,
                      skip_metrics=skipped_metrics())
    return pb.execute_run(spec, timeout=timeout)


def bench_one(label: str, delta: float, backend: str, args: argparse.Namespace,
              target: tuple[float, float | None] | None, store: ResultStore | None,
              relative: float | None = None) -> dict[str, Any]:
    """One SPPM run through the runner; the row of the table from its record."""
    record = _execute(label, "sppm", sppm_params(backend, args), delta)
    if store is not None:
        store.add(record, sweep_id="benchmark")
    if record["status"] != "ok":
        raise ValidationError(f"sppm on {label} at delta={delta:g}: {record['status']}: {record['error']}")
    m = record["metrics"]
    row = {"problem": label, "n": record["n"], "delta": delta, "relative_delta": relative,
           "lp_backend": backend, "tol_bits": args.tol, "time_s": record["runtime_s"],
           "prepare_s": m.get("prepare_s"), "gap_bits": record["gap_bits"],
           "mi_bits": record["mi_bits"], "peak_rss_mb": m.get("peak_rss_mb"),
           "peak_mem_mb": record["peak_mem_mb"], **{k: m.get(k) for k in _STATS}}
    if target is not None:
        seconds, mib = target
        row.update(target_s=seconds, target_mb=mib,
                   met=bool(row["gap_bits"] <= args.tol and row["time_s"] <= seconds
                            and (mib is None or row["peak_rss_mb"] <= mib)))
    return row


def bench_peers(label: str, delta: float, args: argparse.Namespace,
                store: ResultStore | None, sppm_s: float) -> dict[str, dict[str, Any]]:
    """Each peer of :data:`PEERS` on the same problem and Δ, to ``args.tol`` bits, within
    :func:`peer_limit` seconds: {label: {time_s, gap_bits, mi_bits, status, certified,
    limit_s}}."""
    out: dict[str, dict[str, Any]] = {}
    limit = peer_limit(args.peer_timeout, sppm_s)
    for name, mechanism, extra in PEERS:
        params = {**extra, "tol": args.tol}
        record = _execute(label, mechanism, params, delta, timeout=limit)
        if store is not None:
            store.add(record, sweep_id="benchmark")
        gap = record.get("gap_bits")
        certified = record["status"] == "ok" and gap is not None and gap <= args.tol
        out[name] = {"status": record["status"], "time_s": record.get("runtime_s"),
                     "gap_bits": gap, "mi_bits": record.get("mi_bits"), "certified": certified,
                     "limit_s": limit, "reason": record.get("error")}
    return out


def peer_verdict(row: dict[str, Any]) -> None:
    """Add ``best_peer``, ``peer_ratio`` (best certified peer's time / SPPM's),
    ``peer_met`` and fold the 3x target into ``met``.

    A peer stopped at its time limit without its certificate took at least that limit
    (``at_least`` = limit / SPPM's time): with ``--peer-timeout auto`` that is past
    PEER_RATIO, which proves the ratio for that peer; a shorter fixed limit proves
    nothing, and the row's peer target is then missed (unproven). A peer that stopped
    uncertified for another reason (its own cap, an error) is not a certified peer."""
    sppm_s = max(row["time_s"], 1e-9)
    for v in row["peers"].values():
        timed_out = v.get("status") == "timeout" and not v["certified"]
        v["at_least"] = v["limit_s"] / sppm_s if timed_out and v.get("limit_s") else None
    done = {k: v for k, v in row["peers"].items() if v["certified"]}
    best = min(done, key=lambda k: done[k]["time_s"]) if done else None
    ratio = done[best]["time_s"] / sppm_s if best is not None else None
    # a timeout without a known limit (or one shorter than PEER_RATIO x) proves nothing
    proven = all(v["at_least"] is not None and v["at_least"] >= PEER_RATIO
                 for v in row["peers"].values()
                 if v.get("status") == "timeout" and not v["certified"])
    row.update(best_peer=best, peer_ratio=ratio,
               peer_met=bool(proven and (ratio is None or ratio >= PEER_RATIO)))
    if "met" in row and row["n"] >= PEER_MIN_N:
        row["met"] = bool(row["met"] and row["peer_met"])


def _problems(args: argparse.Namespace):
    """(label, Δ or None, relative F or None, issue 31's target) per row."""
    ms = args.m if args.m is not None else ([] if args.dataset else [8, 10, 12])
    relative = list(CURVE) if args.curve else (args.relative_delta or [])
    labels = [(f"synthetic:m={m}", 2.0 ** (m - 8), synthetic_target(m)) for m in ms]
    labels += [(text, args.delta, DATASET_TARGETS.get(text.replace(" ", ""), DATASET_TARGET))
               for text in args.dataset]
    for label, delta, target in labels:
        if relative:
            for f in relative:
                yield label, None, f, None
        else:
            yield label, delta, None, target


def _check(args: argparse.Namespace, backends: list[str]) -> None:
    if args.relative_delta is not None and any(not (f > 0) or f == float("inf")
                                               for f in args.relative_delta):
        raise ValidationError(f"--relative-delta must be a finite number > 0; got "
                              f"{', '.join(f'{f:g}' for f in args.relative_delta)}")
    relative = bool(args.curve or args.relative_delta)
    if args.dataset and args.delta is None and not relative:
        raise ValidationError("--dataset needs --delta (or --relative-delta / --curve)")
    if args.peers and not relative:
        raise ValidationError("--peers needs --relative-delta or --curve")
    if args.peer_min_n < 1:
        raise ValidationError(f"--peer-min-n must be >= 1; got {args.peer_min_n}")
    if args.peer_timeout != "auto" and not 0 < args.peer_timeout < float("inf"):
        raise ValidationError(f"--peer-timeout must be > 0 (seconds) or 'auto'; got "
                              f"{args.peer_timeout:g}")
    for backend in backends:  # bad options fail before anything runs
        sppm_params(backend, args)


def _d_const(label: str, cache: dict[str, float]) -> float:
    if label not in cache:
        dataset, params = pb.parse_spec(label, what="dataset", kind="dataset")
        cache[label] = constant_distortion(load_dataset(dataset, **params))
    return cache[label]


def _line(r: dict[str, Any], args: argparse.Namespace) -> str:
    rel = "" if r["relative_delta"] is None else f"{r['relative_delta']:g}"
    line = (f"{r['problem']:>22} {r['n']:>6} {rel:>6} {r['delta']:>9.4g} {r['lp_backend']:>8} "
            f"{r['time_s']:>8.2f} {r['iterations']:>6} {r['gap_bits']:>9.2e} "
            f"{r['mi_bits']:>8.5f} {r['peak_rss_mb']:>8.1f} {r['columns']:>7} "
            f"{r['time_pricing_s']:>8.2f} {r['time_lp_s']:>7.2f} {r['time_linesearch_s']:>7.2f} "
            f"{r['time_polish_s']:>7.2f}")
    if not r["converged"]:
        line += "  NOT CERTIFIED"
    if "peers" in r:
        line += "  peers: " + ", ".join(_peer_text(k, v) for k, v in r["peers"].items())
        if r.get("peer_ratio") is not None:
            line += f"; best {r['best_peer']} x{r['peer_ratio']:.1f}"
        elif not r["peers"] or not any(v["certified"] for v in r["peers"].values()):
            line += "; no peer certified"
    if "met" in r:
        mem = f", {r['target_mb']:g} MB" if r["target_mb"] else ""
        peer = f", x{PEER_RATIO:g} the best peer" if "peers" in r else ""
        line += (f"  <= {r['target_s']:g} s{mem}{peer}, gap <= {args.tol:g}: "
                 f"{'met' if r['met'] else 'MISSED'}")
    return line


def _peer_text(name: str, v: dict[str, Any]) -> str:
    """One peer in a row: its time, or why it has none (a timeout: at least how many
    times SPPM's time it took)."""
    if v["certified"]:
        return f"{name} {v['time_s']:.2f} s"
    if v.get("at_least") is not None:
        return (f"{name} not certified within {v['limit_s']:.1f} s "
                f"(>= {v['at_least']:.1f}x)")
    if v.get("status") in ("skip", "skipped"):  # e.g. a dense peer's max_n: which limit
        found = re.search(r"max_n = \d+", v.get("reason") or "")
        return f"{name} skipped" + (f" (n > {found.group(0)})" if found else "")
    gap = v["gap_bits"] if v["gap_bits"] is not None else float("nan")
    took = f"{v['time_s']:.2f} s" if v["time_s"] is not None else "-"
    return f"{name} {took} ({v['status']}, gap {gap:.1e})"


def run(args: argparse.Namespace) -> int:
    """The benchmark's rows, printed as a table or JSON lines; exit 1 if a target is missed."""
    backends = args.lp_backend or [DEFAULTS["lp_backend"]]
    _check(args, backends)
    # a crash in compiled code (numba kernels, BLAS) ends the process without a Python
    # traceback: faulthandler prints one to stderr instead of a table that just stops
    if not faulthandler.is_enabled():
        try:
            faulthandler.enable(file=sys.stderr, all_threads=True)
        except (AttributeError, ValueError, OSError):  # stderr captured: no file descriptor
            faulthandler.enable(file=sys.__stderr__, all_threads=True)
    rows: list[dict[str, Any]] = []
    head = (f"{'problem':>22} {'n':>6} {'F':>6} {'delta':>9} {'backend':>8} {'time_s':>8} "
            f"{'iters':>6} {'gap_bits':>9} {'mi_bits':>8} {'peak_MB':>8} {'|V|':>7} "
            f"{'pricing':>8} {'lp':>7} {'lsearch':>7} {'polish':>7}"
            + ("  target" if args.targets else ""))
    if not args.json:
        print(head)
    store = pb.ResultStore(args.db) if args.db else None
    d_const: dict[str, float] = {}
    for label, delta, rel, target in _problems(args):
        if rel is not None:
            delta = rel * _d_const(label, d_const)
        for backend in backends:
            r = bench_one(label, delta, backend, args, None, store, rel)
            if rel is not None:
                r["d_const"] = d_const[label]
                if args.targets:
                    r.update(zip(("target_s", "target_mb"), curve_target(label, r["n"]),
                                 strict=True))
                    r["met"] = bool(r["gap_bits"] <= args.tol and r["time_s"] <= r["target_s"]
                                    and r["peak_rss_mb"] <= r["target_mb"])
                if args.peers and r["n"] >= args.peer_min_n:
                    r["peers"] = bench_peers(label, delta, args, store, r["time_s"])
                    peer_verdict(r)
            elif target is not None and args.targets:
                seconds, mib = target
                r.update(target_s=seconds, target_mb=mib,
                         met=bool(r["gap_bits"] <= args.tol and r["time_s"] <= seconds
                                  and (mib is None or r["peak_rss_mb"] <= mib)))
            rows.append(r)
            print(json.dumps(r) if args.json else _line(r, args), flush=True)
    exact_rows = _exact(args)
    if args.plot:
        from privbench.plugins.mechanisms._sppm.scaling_figure import sppm_scaling_figure

        sppm_scaling_figure(rows, exact_rows, args.plot)
        if not args.json:
            print(f"figure written to {args.plot}")
    _ratios(rows, backends, args)
    if store is not None:
        store.close()
    if not args.json:
        print(summary_line(rows, args.targets), flush=True)
    return 1 if args.targets and not all(r.get("met", True) for r in rows) else 0


def summary_line(rows: list[dict[str, Any]], targets: bool) -> str:
    """The table's last line: how many rows ran (and met their targets): a table without
    it did not finish."""
    line = f"benchmark sppm: {len(rows)} row{'s' * (len(rows) != 1)} done"
    if targets:
        met = sum(bool(r.get("met", True)) for r in rows)
        line += f"; targets met on {met} of {len(rows)}"
    return line


def _exact(args: argparse.Namespace) -> list[dict[str, Any]]:
    exact_rows = []
    if args.exact:  # import cvxpy and its solver outside the timed runs
        get_mechanism("optimal").solve(load_dataset("synthetic", m=2), 0.5)
    for m in args.exact:
        r = bench_exact(m)
        exact_rows.append(r)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(f"{r['problem']:>22} {r['n']:>6} {'':>6} {r['delta']:>9.4g} {'optimal':>8} "
                  f"{r['time_s']:>8.2f} {'':>6} {'':>9} {r['mi_bits']:>8.5f} "
                  f"{r['peak_rss_mb']:>8.1f}  (dense cvxpy, {r['status']})", flush=True)
    return exact_rows


def _ratios(rows: list[dict[str, Any]], backends: list[str], args: argparse.Namespace) -> None:
    if len(backends) < 2:
        return
    ref = backends[0]
    for key in dict.fromkeys((r["problem"], r["delta"]) for r in rows):
        base = next(r for r in rows if (r["problem"], r["delta"]) == key and r["lp_backend"] == ref)
        for r in rows:
            if (r["problem"], r["delta"]) == key and r["lp_backend"] != ref:
                line = {"problem": key[0], "ratio": f"{r['lp_backend']}/{ref}",
                        "time_ratio": r["time_s"] / base["time_s"],
                        "lp_time_ratio": r["time_lp_s"] / max(base["time_lp_s"], 1e-12)}
                if args.json:
                    print(json.dumps(line))
                else:
                    print(f"{key[0]}: {line['ratio']} total time x{line['time_ratio']:.2f}, "
                          f"LP time x{line['lp_time_ratio']:.2f}")
