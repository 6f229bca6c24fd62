"""The results table of docs/studies/catalogue.md, read from a store written by specs/catalogue.toml.

    python tools/catalogue_table.py catalogue.sqlite [more.sqlite ...] > table.md

One table per data set: a row per mechanism label, a column per Δ, each cell
``I(A;B̂) / E[d] / maximal leakage`` (bits, distortion units, bits) of the newest run
with that key; a skipped or failed run shows its status, and the reasons are listed
under the table.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import privbench as pb


def label(name: str, params: dict[str, Any] | None) -> str:
    values = params or {}
    if not values:
        return name
    return f"{name}:" + ",".join(f"{k}={values[k]}" for k in sorted(values))


def number(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "∞"
    return f"{value:.{digits}g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.1e}"


def collect(paths: list[str]) -> tuple[dict, list[str], list[float]]:
    """{(dataset, label, Δ): row} for the newest run of each key (a later store wins);
    labels in the order first seen."""
    rows: dict = {}
    labels: list[str] = []
    deltas: set[float] = set()
    for path in paths:
        _read(path, rows, labels, deltas)
    return rows, labels, sorted(deltas)


def _read(path: str, rows: dict, labels: list[str], deltas: set[float]) -> None:
    """The store's newest run of each key, read by ``pb.load_runs`` (any store layout)."""
    runs = pb.load_runs(path)
    for r in runs.to_dict("records"):
        name = label(r["mechanism"], r["params"])
        if name not in labels:
            labels.append(name)
        deltas.add(r["delta"])
        rows[(label(r["dataset"], r["dataset_params"]), name, r["delta"])] = {
            "status": r["status"], "error": r["error"],
            "mi": pb.output_of(r, "mi_bits"), "dist": pb.output_of(r, "distortion"),
            "runtime": r["runtime_s"], "metrics": r["metrics"]}


def cell(row: dict | None) -> str:
    if row is None:
        return "not run"
    if row["status"] != "ok":
        return row["status"]
    ml = row["metrics"].get("maximal_leakage")
    return f"{number(row['mi'])} / {number(row['dist'])} / {number(ml)}"


def table(rows: dict, dataset: str, labels: list[str], deltas: list[float]) -> list[str]:
    out = [f"### {dataset}", "",
           "| mechanism | " + " | ".join(f"Δ = {d:g}" for d in deltas) + " | runtime (s) |",
           "|---|" + "---|" * (len(deltas) + 1)]
    reasons = {}
    for name in labels:
        cells = [rows.get((dataset, name, d)) for d in deltas]
        if all(c is None for c in cells):
            continue
        times = [c["runtime"] for c in cells if c and c["status"] == "ok" and c["runtime"] is not None]
        out.append(f"| `{name}` | " + " | ".join(cell(c) for c in cells)
                   + f" | {number(max(times), 2) if times else '–'} |")
        for c in cells:
            if c and c["status"] != "ok" and c["error"]:
                reasons[name] = f"{c['status']}: {c['error'].splitlines()[0][:200]}"
    out.append("")
    out.extend(f"- `{name}`: {why}" for name, why in reasons.items())
    return out + [""]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python tools/catalogue_table.py STORE.sqlite [STORE.sqlite ...]", file=sys.stderr)
        return 2
    rows, labels, deltas = collect(argv)
    datasets = sorted({key[0] for key in rows})
    lines = []
    for dataset in datasets:
        lines.extend(table(rows, dataset, labels, deltas))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
