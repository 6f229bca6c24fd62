"""Which mechanism is best under which privacy notion (docs/privacy-notions.md).

    python tools/notions_table.py notions.sqlite

Reads the store written by ``privbench sweep specs/notions.toml`` (and
``specs/notions-toy.toml``) and prints, per problem, a Markdown table: one row per notion,
one column per budget Δ, each cell the mechanism(s) with the most private value among
the runs whose distortion is within Δ (the direction comes from the declared output:
lower is more private except for guessing entropy). Values within 1e-9 tie.
"""

from __future__ import annotations

import sys

import pandas as pd

import privbench as pb
from privbench.protocol.feasibility import within_budget
from privbench.results.store import open_existing

NOTIONS = ("mi_bits", "maximal_leakage", "min_entropy_leakage", "sibson_mi", "lip_epsilon",
           "ldp_epsilon_private", "total_variation", "t_closeness", "guessing_entropy")
TIE = 1e-9


def load(path: str) -> pd.DataFrame:
    """The ok runs, one column per notion, and whether each met its budget."""
    with open_existing(path) as store:
        df = store.frame(latest=True)
    df = df[df.status == "ok"].copy()
    for name in NOTIONS[1:]:
        df[name] = df.metrics.map(lambda m, k=name: m.get(k)).astype(float)
    # the runner's own budget test (a run it accepted is within its budget here too)
    df["within"] = [within_budget(d, b) for d, b in zip(df.distortion, df.delta, strict=True)]
    return df


def winners(runs: pd.DataFrame, name: str, direction: str) -> str:
    """The most private mechanism(s) under one notion, with the value."""
    values = runs.set_index("mechanism")[name].dropna()
    if values.empty:
        return "-"
    sign = 1.0 if direction == "lower" else -1.0
    best = float((sign * values).min())
    names = sorted(values.index[sign * values <= best + TIE])
    value = sign * best
    return f"{', '.join(names)} ({0.0 if abs(value) < TIE else value:.3g})"


def main(path: str) -> None:
    outputs = pb.get_host().outputs()
    df = load(path)
    for dataset, runs in df.groupby("dataset", sort=False):
        deltas = sorted(runs.delta.unique())
        print(f"\n{dataset} ({runs.dataset_params.iloc[0] or 'defaults'})\n")
        print("| notion (unit, more private) | " + " | ".join(f"Δ = {d:g}" for d in deltas) + " |")
        print("|---|" + "---|" * len(deltas))
        for name in NOTIONS:
            out = outputs[name]
            cells = [winners(runs[(runs.delta == d) & runs.within], name, out.direction) for d in deltas]
            print(f"| {name} ({out.unit}, {out.direction}) | " + " | ".join(cells) + " |")
        over = runs[~runs.within]
        if not over.empty:
            listed = ", ".join(f"{r.mechanism} at Δ = {r.delta:g} (E[d] = {r.distortion:.3g})"
                               for r in over.itertuples())
            print(f"\nleft out, over budget: {listed}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "notions.sqlite")
