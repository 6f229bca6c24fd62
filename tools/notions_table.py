"""Which mechanism is best under which privacy notion (docs/privacy-notions.md).

    python tools/notions_table.py notions.sqlite
    python tools/notions_table.py suite.sqlite --suite

With ``--suite`` (the store of ``privbench sweep specs/suite.toml``) it prints, per
problem (with |A| and n), the winners under every notion that is not identical to another
on that problem (for binary A, total variation is maximal leakage and guessing entropy is
min-entropy leakage: see the doc), at each relative budget; a count of wins per notion;
and Kendall's τ_b between every two notions' rankings of the mechanisms, averaged over
the (problem, budget) cells, separately for binary and many-valued A. Randomized
mechanisms enter with the mean over their seeds; runs over their budget are left out.

Reads the store written by ``privbench sweep specs/notions.toml`` (and
``specs/notions-toy.toml``) and prints, per problem, a Markdown table: one row per notion,
one column per budget Δ, each cell the mechanism(s) with the most private value among
the runs whose distortion is within Δ (the direction comes from the declared output:
lower is more private except for guessing entropy). Two values tie when they differ by no
more than compare's resolution (results/verdicts.py): 1e-6 of the value (plus 1e-9 here),
and for I(A; B̂) the certified gap of either run (a run stopped uncertified, `converged`
false, brings no gap; a mechanism 1.5e-9 bits below an optimum certified to 1.5e-6 bits
has not beaten it).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

import privbench as pb
from privbench.protocol.feasibility import within_budget
from privbench.results.store import open_existing
from privbench.results.verdicts import numeric_floor

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
    gaps = pd.Series(0.0, index=values.index)
    if name == "mi_bits" and "gap_bits" in runs:
        gaps = runs.set_index("mechanism")["gap_bits"].reindex(values.index).astype(float).fillna(0.0)
    best_gap = float(gaps[sign * values == best].max())
    tolerance = [max(TIE, numeric_floor(best, v), best_gap, g) for v, g in zip(values, gaps, strict=True)]
    names = sorted(values.index[sign * values <= best + np.array(tolerance)])
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


#: notions that are one number in disguise when A is binary (theorems; tested in
#: tests/test_notions_binary_identities.py): the second of each pair is left out there
BINARY_SAME = {"total_variation": "maximal_leakage", "guessing_entropy": "min_entropy_leakage"}


def suite_frame(path: str) -> pd.DataFrame:
    """One row per (problem, budget, mechanism): the notions (mean over seeds), |A|, n."""
    df = load(path)
    df["problem"] = df.metrics.map(lambda m: m.get("dataset_name"))
    df["fraction"] = df.metrics.map(lambda m: m.get("relative_delta"))
    df = df[df.within & df.fraction.notna()]
    df["mi_bits"] = df["mi_bits"].astype(float)
    # a run stopped at its cap without its certificate has a gap, but no say in ties
    certified = df.metrics.map(lambda m: m.get("converged") is not False)
    df["gap_bits"] = df["gap_bits"].astype(float).where(certified)
    keys = ["problem", "fraction", "mechanism"]
    out = df.groupby(keys, sort=False)[list(NOTIONS)].mean()
    out["gap_bits"] = df.groupby(keys, sort=False)["gap_bits"].max()
    out = out.reset_index()
    out = out.merge(df.groupby("problem")["n"].first().rename("n"), on="problem")
    return out


def n_private(path: str) -> dict[str, int]:
    """|A| of every problem (each data set loaded once)."""
    with open_existing(path) as store:
        df = store.frame(latest=True)
    out: dict[str, int] = {}
    from privbench.running.problems import load_problem
    for (name, _params), rows in df.groupby(
            [df.dataset, df.dataset_params.map(lambda d: repr(sorted((d or {}).items())))]):
        label = rows.metrics.iloc[0].get("dataset_name")
        if label not in out:
            out[label] = load_problem(name, dict(rows.dataset_params.iloc[0] or {})).n_private
    return out


def ranking(values: pd.Series, direction: str) -> pd.Series:
    """Values with inf kept orderable (a finite stand-in above every finite one), rounded
    to 1e-9 so that rounding noise (a leakage of -1e-17 clipped to 0) is no rank."""
    v = values.astype(float).replace([float("inf")], 1e300).round(9)
    return v if direction == "lower" else -v


def compact(df: pd.DataFrame, sizes: dict[str, int], outputs: dict) -> None:
    """One row per problem at the middle budget: the winner(s) under each notion ("= X"
    where the notion is X in disguise on that problem)."""
    short = {"mi_bits": "MI", "maximal_leakage": "max. leakage", "min_entropy_leakage":
             "min-entropy", "sibson_mi": "Sibson I_2", "lip_epsilon": "LIP ε",
             "ldp_epsilon_private": "LDP ε", "total_variation": "TV", "t_closeness": "t",
             "guessing_entropy": "guessing"}
    print("\n| problem | \\|A\\| | n | " + " | ".join(short[x] for x in NOTIONS) + " |")
    print("|---|---|---|" + "---|" * len(NOTIONS))
    for problem, runs in df.groupby("problem", sort=False):
        fractions = sorted(runs.fraction.unique())
        f = fractions[len(fractions) // 2]
        k = sizes[problem]
        cells = [f"= {short[BINARY_SAME[x]]}" if k == 2 and x in BINARY_SAME else
                 winners(runs[runs.fraction == f], x, outputs[x].direction).split(" (")[0]
                 for x in NOTIONS]
        print(f"| {problem} (Δ = {f:g} d_const) | {k} | {int(runs.n.iloc[0])} | "
              + " | ".join(cells) + " |")


def suite(path: str) -> None:
    from itertools import combinations

    from scipy.stats import kendalltau

    outputs = pb.get_host().outputs()
    df = suite_frame(path)
    sizes = n_private(path)
    wins: dict[str, dict[str, int]] = {name: {} for name in NOTIONS}
    taus: dict[tuple[str, str, bool], list[float]] = {}
    for problem, runs in df.groupby("problem", sort=False):
        k = sizes[problem]
        names = [x for x in NOTIONS if not (k == 2 and x in BINARY_SAME)]
        fractions = sorted(runs.fraction.unique())
        print(f"\n**{problem}** (|A| = {k}, n = {int(runs.n.iloc[0])})\n")
        print("| notion | " + " | ".join(f"Δ = {f:g} d_const" for f in fractions) + " |")
        print("|---|" + "---|" * len(fractions))
        for name in names:
            out = outputs[name]
            cells = []
            for f in fractions:
                cell = winners(runs[runs.fraction == f], name, out.direction)
                cells.append(cell)
                for mech in cell.split(" (")[0].split(", "):
                    if mech != "-":
                        wins[name][mech] = wins[name].get(mech, 0) + 1
            print(f"| {name} | " + " | ".join(cells) + " |")
        for f in fractions:
            cell = runs[runs.fraction == f].set_index("mechanism")
            for x, y in combinations(NOTIONS, 2):
                pair = cell[[x, y]].dropna()
                if len(pair) < 3:
                    continue
                tau = kendalltau(ranking(pair[x], outputs[x].direction),
                                 ranking(pair[y], outputs[y].direction)).statistic
                if tau == tau:  # NaN when one ranking is constant
                    taus.setdefault((x, y, k == 2), []).append(float(tau))
    compact(df, sizes, outputs)
    print("\nwins (problem x budget cells won, ties counted for each):\n")
    for name in NOTIONS:
        ranked = sorted(wins[name].items(), key=lambda kv: -kv[1])
        print(f"- {name}: " + ", ".join(f"{m} {c}" for m, c in ranked))
    print("\nKendall tau_b between notions (mean over cells; binary A | many-valued A):\n")
    print("| | " + " | ".join(NOTIONS) + " |")
    print("|---|" + "---|" * len(NOTIONS))
    for x in NOTIONS:
        row = []
        for y in NOTIONS:
            key = (x, y) if NOTIONS.index(x) < NOTIONS.index(y) else (y, x)
            if x == y:
                row.append("1")
                continue
            b = taus.get((*key, True), [])
            m = taus.get((*key, False), [])
            row.append(f"{np.mean(b):.2f} \\| {np.mean(m):.2f}" if b and m else "-")
        print(f"| {x} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = args[0] if args else "notions.sqlite"
    if "--suite" in sys.argv:
        suite(path)
    else:
        main(path)
