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
1 when anything got worse beyond its threshold, 0 otherwise, 2 for a bad request or when
the two sides have no run key in common (nothing compared is no pass).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict
from pathlib import Path

from privbench.protocol.errors import ValidationError
from privbench.results.regression import (
    REPEATS_FOR_FACTOR,
    Change,
    Thresholds,
    compare_frames,
    load_sides,
)

#: exit status when something got worse
EXIT_REGRESSED = 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = Thresholds()
    p = sub.add_parser(
        "regress", help="compare two result stores (or sweeps); exit 1 if something got worse",
        description="Match runs by run key and flag worse privacy (mi_bits, gap_bits up), "
                    "more distortion, slower runs or runs that stopped being ok.")
    p.add_argument("base", type=Path, metavar="BASE.sqlite",
                   help="results store of the baseline (e.g. the main branch's sweep)")
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
    base, new, base_label, new_label = load_sides(args.base, args.new, base_sweep=args.base_sweep,
                                                  new_sweep=args.new_sweep)
    changes, counts = compare_frames(base, new, t)
    worse = [c for c in changes if c.verdict == "worse"]
    missing = [c for c in changes if c.verdict == "missing"]
    failed = bool(worse) or (args.fail_on_missing and bool(missing))
    if not counts["compared"] and not failed:  # a comparison of nothing is no pass
        raise ValidationError(
            f"no run in common, nothing compared ({base_label}: {len(base)} run keys, "
            f"{new_label}: {len(new)}); runs are matched by run key, so the two sides must "
            "come from the same sweep spec")
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
