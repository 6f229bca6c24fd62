"""``privbench regress``: did privacy, distortion or runtime get worse between two runs?

For users who track with privbench's own store rather than asv. Runs are matched by
``run_key`` (mechanism + params, dataset + params, Δ, seed), so the two sides must come
from the same sweep spec. Sides:

* ``privbench regress BASE.sqlite NEW.sqlite``: the latest row of each key in each file;
* ``privbench regress DB --base-sweep A --new-sweep B``: two sweeps in one file;
* ``privbench regress DB``: per key, the previous row against the latest one (a sweep
  run twice into the same store, e.g. before and after a change, without ``--resume``).

Worse means larger: I(A;B̂) (``mi_bits``), the certified gap (``gap_bits``), the
distortion and the runtime, or a run that was ok and no longer is. Runtime is judged
honestly about noise: a slow-down must exceed ``--runtime-factor`` and the noise floor
``--runtime-min`` and, for runs with ``--repeat`` samples, the slowest base sample must
be faster than the fastest new one. A side with fewer than ``REPEATS_FOR_FACTOR`` samples
is weaker evidence and must be ``--runtime-factor-single`` slower (one fresh process of
identical code here ran up to 1.7x slower than another in a window of slowness). The exit status is
1 when anything got worse beyond its threshold, 0 otherwise, 2 for a bad request.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from privbench.protocol.errors import ValidationError
from privbench.results.store import open_existing

#: exit status when something got worse
EXIT_REGRESSED = 1
#: timed samples (``--repeat``) each side needs for ``--runtime-factor`` to apply
REPEATS_FOR_FACTOR = 3


@dataclass(frozen=True)
class Thresholds:
    """How much worse a quantity may get before it counts (defaults of the CLI flags)."""

    mi_bits: float = 1e-4          # absolute, bits
    gap_bits: float = 1e-4         # absolute, bits
    distortion: float = 1e-3       # relative to max(|base|, 1e-12)
    runtime_factor: float = 1.5    # new / base, both sides with REPEATS_FOR_FACTOR samples
    runtime_factor_single: float = 2.0  # new / base when a side has fewer samples
    runtime_min_s: float = 0.1     # noise floor: ignore slow-downs smaller than this many seconds


@dataclass(frozen=True)
class Change:
    """One quantity of one run that moved beyond its threshold."""

    run_key: str
    quantity: str
    base: Any
    new: Any
    verdict: str  # worse | better | missing

    def describe(self) -> str:
        if isinstance(self.base, float) and isinstance(self.new, float):
            if self.quantity == "runtime_s" and self.base > 0:
                return f"x{self.new / self.base:.2f}"
            return f"{self.new - self.base:+.4g}"
        return f"{self.base} -> {self.new}"


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


#: the stored numbers regress compares; a value that is not a number is refused
COMPARED = ("mi_bits", "gap_bits", "distortion", "runtime_s")


def _check_numbers(key: str, side: str, row: dict[str, Any]) -> None:
    """A compared field holding text (``mi_bits = 'x'``) is a damaged store, not a pass."""
    for quantity in COMPARED:
        value = row.get(quantity)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, bool) or _num(value) is None or isinstance(value, str | bytes):
            raise ValidationError(f"{side} run {key}: {quantity} = {str(value)[:40]!r} is not a "
                                  "finite number; the store is damaged or not privbench's")


def compare_rows(key: str, base: dict[str, Any], new: dict[str, Any], t: Thresholds
                 ) -> list[Change]:
    """The changes beyond threshold between two records of the same run."""
    _check_numbers(key, "base", base)
    _check_numbers(key, "new", new)
    if base.get("status") != new.get("status"):
        if base.get("status") == "ok":
            return [Change(key, "status", base.get("status"), new.get("status"), "worse")]
        if new.get("status") == "ok":
            return [Change(key, "status", base.get("status"), new.get("status"), "better")]
        return []
    if base.get("status") != "ok":
        return []
    changes: list[Change] = []

    def check(quantity: str, worse: bool, better: bool) -> None:
        if worse or better:
            changes.append(Change(key, quantity, _num(base.get(quantity)),
                                  _num(new.get(quantity)), "worse" if worse else "better"))

    for quantity, tol in (("mi_bits", t.mi_bits), ("gap_bits", t.gap_bits)):
        b, n = _num(base.get(quantity)), _num(new.get(quantity))
        if b is not None and n is not None:
            check(quantity, n - b > tol, b - n > tol)
        elif b is not None and n is None and quantity == "gap_bits":
            changes.append(Change(key, quantity, b, None, "worse"))  # certificate lost
    b, n = _num(base.get("distortion")), _num(new.get("distortion"))
    if b is not None and n is not None:
        scale = t.distortion * max(abs(b), 1e-12)
        check("distortion", n - b > scale, b - n > scale)
    b, n = _num(base.get("runtime_s")), _num(new.get("runtime_s"))
    if b is not None and n is not None:
        b_lo, b_hi, b_count = _sample_range(base, b)
        n_lo, n_hi, n_count = _sample_range(new, n)
        # with repeats the medians must differ beyond the factor AND the samples must not
        # overlap: one slow sample on a shared machine is noise, not a regression; with
        # too few samples to see the noise, the slow-down must be larger
        factor = t.runtime_factor if min(b_count, n_count) >= REPEATS_FOR_FACTOR \
            else max(t.runtime_factor, t.runtime_factor_single)
        check("runtime_s", n > b * factor and n - b > t.runtime_min_s and n_lo > b_hi,
              b > n * factor and b - n > t.runtime_min_s and b_lo > n_hi)
    return changes


def _sample_range(row: dict[str, Any], runtime: float) -> tuple[float, float, int]:
    """(min, max, count) of a run's timed samples (``--repeat``), else its one runtime."""
    metrics = row.get("metrics")
    if isinstance(metrics, str):
        try:
            metrics = json.loads(metrics)
        except ValueError:
            metrics = None
    samples = [v for v in (_num(x) for x in ((metrics or {}).get("runtime_samples_s") or []))
               if v is not None]
    return (min(samples), max(samples), len(samples)) if samples else (runtime, runtime, 1)


def compare_frames(base: pd.DataFrame, new: pd.DataFrame, t: Thresholds
                   ) -> tuple[list[Change], dict[str, int]]:
    """Changes for every run key in ``base``; counts of compared/missing/added keys."""
    base_rows = {r["run_key"]: r for r in base.to_dict("records")}
    new_rows = {r["run_key"]: r for r in new.to_dict("records")}
    changes: list[Change] = []
    for key in sorted(base_rows):
        if key not in new_rows:
            changes.append(Change(key, "run", base_rows[key].get("status"), None, "missing"))
            continue
        changes.extend(compare_rows(key, base_rows[key], new_rows[key], t))
    counts = {"compared": len(set(base_rows) & set(new_rows)),
              "other_code": sum(base_rows[k].get("fingerprint") != new_rows[k].get("fingerprint")
                                or base_rows[k].get("fingerprint") is None
                                for k in set(base_rows) & set(new_rows)),
              "missing": len(set(base_rows) - set(new_rows)),
              "added": len(set(new_rows) - set(base_rows))}
    return changes, counts


def _latest(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop_duplicates("run_key", keep="last")


def load_sides(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    """The base and new rows (one per run key) and a label for each."""
    with open_existing(args.base) as store:
        base_all = store.frame()
    if args.new is not None:
        with open_existing(args.new) as store:
            new_all = store.frame()
    else:
        new_all = base_all
    if (args.base_sweep is None) != (args.new_sweep is None):
        raise ValidationError("give both --base-sweep and --new-sweep, or neither")
    if args.base_sweep is not None:
        for name, df, sweep in (("base", base_all, args.base_sweep),
                                ("new", new_all, args.new_sweep)):
            if not (df["sweep_id"] == sweep).any():
                known = ", ".join(sorted(map(str, df["sweep_id"].dropna().unique()))) or "(none)"
                raise ValidationError(f"{name}: no runs with sweep id {sweep!r}; stored: {known}")
        base = _latest(base_all[base_all["sweep_id"] == args.base_sweep])
        new = _latest(new_all[new_all["sweep_id"] == args.new_sweep])
        return base, new, f"sweep {args.base_sweep}", f"sweep {args.new_sweep}"
    if args.new is not None:
        return _latest(base_all), _latest(new_all), str(args.base), str(args.new)
    # one store: previous row of each key against its latest row
    if base_all.empty:
        raise ValidationError(f"{args.base} holds no runs")
    ranked = base_all.groupby("run_key").cumcount(ascending=False)
    new = base_all[ranked == 0]
    base = base_all[ranked == 1]
    if base.empty:
        raise ValidationError(f"every run in {args.base} is stored once; nothing to compare "
                              "(give a second database, or --base-sweep/--new-sweep)")
    return base, new[new["run_key"].isin(base["run_key"])], "previous", "latest"


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = Thresholds()
    p = sub.add_parser(
        "regress", help="compare two result stores (or sweeps); exit 1 if something got worse",
        description="Match runs by run key and flag worse privacy (mi_bits, gap_bits up), "
                    "more distortion, slower runs or runs that stopped being ok.")
    p.add_argument("base", type=Path, metavar="BASE.sqlite")
    p.add_argument("new", type=Path, nargs="?", default=None, metavar="NEW.sqlite",
                   help="default: compare within BASE (see --base-sweep) ")
    p.add_argument("--base-sweep", default=None, help="sweep id of the base runs")
    p.add_argument("--new-sweep", default=None, help="sweep id of the new runs")
    p.add_argument("--mi-tol", type=float, default=t.mi_bits, metavar="BITS",
                   help=f"allowed increase of I(A;B̂) in bits (default {t.mi_bits:g})")
    p.add_argument("--gap-tol", type=float, default=t.gap_bits, metavar="BITS",
                   help=f"allowed increase of the certified gap (default {t.gap_bits:g})")
    p.add_argument("--distortion-tol", type=float, default=t.distortion, metavar="REL",
                   help=f"allowed relative increase of distortion (default {t.distortion:g})")
    p.add_argument("--runtime-factor", type=float, default=t.runtime_factor, metavar="X",
                   help=f"allowed slow-down factor when both sides have >= {REPEATS_FOR_FACTOR} "
                        f"timed samples (--repeat) (default {t.runtime_factor:g})")
    p.add_argument("--runtime-factor-single", type=float, default=t.runtime_factor_single,
                   metavar="X", help="allowed slow-down factor when a side has fewer samples "
                                     f"(default {t.runtime_factor_single:g})")
    p.add_argument("--runtime-min", type=float, default=t.runtime_min_s, metavar="S",
                   help="ignore slow-downs of fewer seconds than this "
                        f"(default {t.runtime_min_s:g})")
    p.add_argument("--no-runtime", action="store_true",
                   help="do not compare runtimes (stores from different machines)")
    p.add_argument("--fail-on-missing", action="store_true",
                   help="also fail when a base run is absent from the new side")
    p.add_argument("--all", action="store_true", help="also list improvements")
    p.add_argument("--json", action="store_true", help="print the changes as JSON lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for name in ("mi_tol", "gap_tol", "distortion_tol", "runtime_min"):
        if not getattr(args, name) >= 0:
            raise ValidationError(f"--{name.replace('_', '-')} must be >= 0")
    for name in ("runtime_factor", "runtime_factor_single"):
        if not getattr(args, name) >= 1:
            raise ValidationError(f"--{name.replace('_', '-')} must be >= 1")
    t = Thresholds(mi_bits=args.mi_tol, gap_bits=args.gap_tol, distortion=args.distortion_tol,
                   runtime_factor=math.inf if args.no_runtime else args.runtime_factor,
                   runtime_factor_single=args.runtime_factor_single,
                   runtime_min_s=args.runtime_min)
    base, new, base_label, new_label = load_sides(args)
    changes, counts = compare_frames(base, new, t)
    worse = [c for c in changes if c.verdict == "worse"]
    missing = [c for c in changes if c.verdict == "missing"]
    failed = bool(worse) or (args.fail_on_missing and bool(missing))
    shown = changes if args.all else [c for c in changes if c.verdict != "better"]
    if args.json:
        for change in shown:
            print(json.dumps(asdict(change)))
    else:
        _print(shown, base_label, new_label)
    better = sum(c.verdict == "better" for c in changes)
    import sys
    print(f"regress: {counts['compared']} runs compared ({base_label} -> {new_label}); "
          f"{len(worse)} worse, {better} better, {counts['missing']} missing, "
          f"{counts['added']} new", file=sys.stderr)
    if counts["other_code"]:  # expected when comparing two versions; noise when it is not
        print(f"regress: {counts['other_code']} of the compared runs were made by different "
              "code on the two sides (their fingerprints differ or are unknown)", file=sys.stderr)
    return EXIT_REGRESSED if failed else 0


def _print(changes: list[Change], base_label: str, new_label: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    if not changes:
        console.print("[green]no change beyond the thresholds[/]")
        return
    table = Table(title=f"changes {base_label} -> {new_label} (larger is worse)")
    for col in ("run", "quantity", "base", "new", "change", "verdict"):
        table.add_column(col, overflow="fold")
    colour = {"worse": "red", "better": "green", "missing": "yellow"}
    for c in changes:
        fmt = [f"{v:.6g}" if isinstance(v, float) else str(v) for v in (c.base, c.new)]
        table.add_row(escape(c.run_key), c.quantity, *map(escape, fmt), c.describe(),
                      f"[{colour[c.verdict]}]{c.verdict}[/]")
    console.print(table)
