"""Read-only views of the results store shared by ``privbench report`` and ``compare``.

Reports only read the store, never write it; this module turns the ``runs``
table into a DataFrame with two derived columns: ``label`` (the mechanism with the
parameters the user gave, e.g. ``sppm[L=100]``, which names a curve) and ``instance``
(the data set as loaded, e.g. ``census[top_k=300]``, which names a section).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from privbench.protocol.metric import LEAKAGE_OUTPUT, Output
from privbench.protocol.outputs import Declared, outputs_of
from privbench.protocol.plugin import format_label
from privbench.results.pareto import Curve
from privbench.results.store import open_existing

#: the output ``compare`` and the trade-off figures use when none is named
DEFAULT_OUTPUT = LEAKAGE_OUTPUT.name


def load_runs(db_path: str | Path) -> pd.DataFrame:
    """The last run of every run key, with ``label`` and ``instance`` columns."""
    with open_existing(db_path) as store:
        df = store.frame(latest=True)
    if df.empty:
        return df.assign(label=pd.Series(dtype=str), instance=pd.Series(dtype=str))
    df["label"] = [format_label(m, p) for m, p in zip(df["mechanism"], df["params"], strict=True)]
    # the problem's own name (from an ok run); a failed run of the same request (which
    # never loaded it) borrows that name, so it lands on the same instance
    request = [format_label(d, p) for d, p in zip(df["dataset"], df["dataset_params"], strict=True)]
    named = {r: m["dataset_name"] for r, m in zip(request, df["metrics"], strict=True)
             if isinstance(m, dict) and m.get("dataset_name")}
    df["instance"] = [
        (m if isinstance(m, dict) else {}).get("dataset_name") or named.get(r, r)
        for r, m in zip(request, df["metrics"], strict=True)
    ]
    return df


def output_values(df: pd.DataFrame, name: str, relation: str | None = None) -> pd.Series:
    """The values of output ``name`` (or of its declared ``relation``), one float per run,
    NaN where a run lacks it: :func:`privbench.protocol.outputs.outputs_of` (numeric)."""
    if df.empty:
        return pd.Series(dtype=float, index=df.index)
    return outputs_of(df, name, relation, numeric=True)


def resolve_output(name: str, outputs: Mapping[str, Output]) -> Output:
    """The declaration of output ``name`` among ``outputs`` (``PluginHost.outputs()``).

    :raises ValidationError: naming the declared outputs when ``name`` is none of them.
    """
    return (outputs if isinstance(outputs, Declared) else Declared(outputs.values())).resolve(name)


def curves_of(df: pd.DataFrame, out: Output = LEAKAGE_OUTPUT) -> dict[str, Curve]:
    """Pareto curves (distortion, ``out``) of the ``ok`` runs, one per label.

    The output's declaration decides which way is better and whether a segment between
    two measured points may be interpolated (:attr:`Output.convex`).
    """
    values = output_values(df, out.name)
    ok = (df["status"] == "ok") & values.notna() & df["distortion"].notna()
    higher = out.direction == "higher"
    return {label: Curve.from_points(g["distortion"], values[g.index], higher=higher,
                                     interpolate=out.convex)
            for label, g in df[ok].groupby("label", sort=True)}


def excess_at(df: pd.DataFrame, label: str, delta: float) -> dict[str, float] | None:
    """The ``optimum`` metric of ``label``'s ok run at budget ``delta``: its leakage above
    the optimum at its own distortion (``min``/``max`` bits), the interval on that optimum
    (``lower``/``upper``) and the distortion; None when the run has no certificate."""
    rows = df[(df["label"] == label) & (df["status"] == "ok") & (df["delta"] == delta)]
    if rows.empty:
        return None
    read = {key: outputs_of(rows, name, numeric=True) for key, name in (
        ("min", "excess_mi_bits_min"), ("max", "excess_mi_bits_max"),
        ("lower", "optimum_lower_bits"), ("upper", "optimum_upper_bits"))}
    for idx in rows.index:
        if not (pd.isna(read["min"][idx]) or pd.isna(read["max"][idx])):
            return {**{key: float(values[idx]) for key, values in read.items()},
                    "distortion": float(rows.at[idx, "distortion"])}
    return None


def describe_excess(label: str, excess: dict[str, float], instance: str) -> str:
    """One sentence: "expmec leaks >= 0.10 bits more than the optimum at its distortion ..."."""
    return (f"{label} leaks {excess['min']:.3g} to {excess['max']:.3g} bits more than the optimum "
            f"at its distortion (E[d] = {excess['distortion']:.4g}; optimum in "
            f"[{excess['lower']:.4g}, {excess['upper']:.4g}] bits) on {instance}")


def short_labels(frame: pd.DataFrame) -> dict[str, str]:
    """Each run label shortened to the mechanism's name plus only the parameters that differ
    between the runs shown (``sppm[iterations=1000,mode=optimal,tol=0.0001]`` alone reads
    ``sppm``; beside ``sppm[mode=dual,tol=0.0001]`` it reads ``sppm[mode=optimal]``).

    Why: full keys pushed compare's table past 80 columns ("0…"); the full key stays in
    the legend below the table, in the report's hover text and in every ``--json``.
    A shortening that would make two labels equal keeps them whole.
    """
    if frame.empty:
        return {}
    params: dict[str, dict[str, Any]] = {}
    mechanism: dict[str, str] = {}
    for label, mech, p in zip(frame["label"], frame["mechanism"], frame["params"], strict=True):
        params[label] = p if isinstance(p, dict) else {}
        mechanism[label] = str(mech)
    short: dict[str, str] = {}
    for mech in set(mechanism.values()):
        mine = [label for label in params if mechanism[label] == mech]
        keys = sorted({k for label in mine for k in params[label]})
        differ = [k for k in keys if len({repr(params[label].get(k)) for label in mine}) > 1]
        for label in mine:
            short[label] = format_label(mech, {k: params[label][k] for k in differ
                                                if k in params[label]})
    if len(set(short.values())) < len(short):
        return {label: label for label in short}
    return short


#: how a label says what Δ means for a mechanism that does not read it as a distortion
#: budget (``Mechanism.delta_role``); "budget" adds nothing
DELTA_ROLE_MARKS = {"epsilon": " (Δ read as ε)", "unused": " (Δ unused)"}
#: the sentence under a table or figure that uses those marks
DELTA_ROLE_NOTE = ("'(Δ read as ε)': the mechanism reads Δ as its privacy or noise level ε, "
                   "not as a distortion budget; '(Δ unused)': it ignores Δ (every budget gives "
                   "the same mapping). Their points sit at the distortion E[d] they measured.")


def delta_role_labels(frame: pd.DataFrame, roles: Mapping[str, str]) -> dict[str, str]:
    """Each label with a mark saying what Δ means when its mechanism does not read it as a
    distortion budget (``roles``: mechanism name -> ``delta_role``). Why: ``watchdog`` and
    ``lip_optimal`` (ε) or ``pram`` and ``mondrian`` (unused) sat in the same "Δ" tables
    as budgeted mappings with no word."""
    if frame.empty:
        return {}
    return {label: label + DELTA_ROLE_MARKS.get(roles.get(str(mech), "budget"), "")
            for label, mech in zip(frame["label"], frame["mechanism"], strict=True)}


def mechanism_notes(frame: pd.DataFrame) -> dict[str, str]:
    """What a mechanism says about its own runs (``metrics.note``, e.g. ``mondrian``: "the
    identity: every profile already has >= k users"), one per label."""
    notes: dict[str, str] = {}
    for label, m in zip(frame.get("label", []), frame.get("metrics", []), strict=True):
        if isinstance(m, dict) and isinstance(m.get("note"), str) and m["note"]:
            notes.setdefault(str(label), m["note"])
    return notes
