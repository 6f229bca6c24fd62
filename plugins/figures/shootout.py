"""The solver shootout: convergence curves, performance profiles and a time-to-gap table.

Every solver of problem (1) that records the stat ``trace`` (``[[seconds, upper_bits,
lower_bits], ...]``: its objective and its own certified lower bound over time) is
compared on each instance (data set + parameters, Δ) where some run has a trace:

* suboptimality against time, benchopt style: y = upper − the best lower bound *any*
  solver certified on the instance (so a solver with a weak certificate of its own is
  still measured against the tightest one), a marker where the solver's *own* certified
  gap first reaches :data:`TARGET_BITS`;
* Dolan–Moré performance profiles of the time to that certified gap: ρ_s(τ) = share of
  instances where solver s got there within τ × the fastest solver's time (a failure,
  skip or timeout never counts, so ρ_s(∞) < 1 says how often s could not certify);
* a table of those times, with why a solver did not get there (a table figure: the
  report shows it and writes it as CSV and Markdown to paste into a document).

Pure functions over the store's DataFrame (``load_runs``), so the numbers are testable
without drawing anything; the figure plugins at the end turn them into trace data and a table.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb

if TYPE_CHECKING:
    import pandas as pd

#: the certified gap (bits) whose time-to-reach the profiles and the table compare
TARGET_BITS = 1e-3
#: suboptimality is drawn on a log axis floored here (bits)
FLOOR_BITS = 1e-7
#: mechanisms that are solvers of problem (1) even where none of their runs left a trace
#: (all skipped or timed out): they still get a column saying why
SOLVERS = frozenset({"sppm", "optimal", "mirror_descent", "smoothed_dual"})


def trace_of(run: Any) -> np.ndarray | None:
    """A run's declared output ``trace`` (a record or a row of ``pb.load_runs``, read by
    ``pb.output_of``) as a (k, 3) float array sorted by time, or None."""
    return trace_array(pb.output_of(run, "trace") if run is not None else None)


def trace_array(raw: Any) -> np.ndarray | None:
    """A stored trace ``[[seconds, upper_bits, lower_bits], ...]`` as a (k, 3) float array
    sorted by time, or None. Rows with a non-finite entry are dropped (a checkpoint
    without a feasible point)."""
    if not isinstance(raw, list | tuple) or not raw:
        return None
    try:
        arr = np.asarray(raw, dtype=float).reshape(-1, 3)
    except (TypeError, ValueError):
        return None
    arr = arr[np.isfinite(arr).all(axis=1)]
    if arr.size == 0:
        return None
    return arr[np.argsort(arr[:, 0], kind="stable")]


def time_to_gap(trace: np.ndarray | None, target: float = TARGET_BITS) -> float | None:
    """Seconds at the first checkpoint whose own certified gap (upper − lower) is
    <= ``target`` bits; None when the trace never gets there."""
    if trace is None:
        return None
    hit = np.flatnonzero(trace[:, 1] - trace[:, 2] <= target)
    return float(trace[hit[0], 0]) if hit.size else None


def best_gap(trace: np.ndarray | None) -> float | None:
    """The smallest certified gap (bits) the trace ever had."""
    if trace is None:
        return None
    return float(np.min(trace[:, 1] - trace[:, 2]))


@dataclass
class Cell:
    """One solver on one instance: its trace, time to the target gap, or why not."""

    status: str
    trace: np.ndarray | None = None
    seconds: float | None = None
    why: str = ""
    detail: str = ""
    #: where its own certificate falls short: the time its objective came within the
    #: target of the best lower bound any solver certified on the instance
    seconds_vs_best: float | None = None


@dataclass
class Shootout:
    """Solvers (labels) x instances ((instance, n, Δ), sorted) with one :class:`Cell` each."""

    solvers: list[str]
    instances: list[tuple[str, int | None, float]]
    cells: dict[tuple[tuple[str, int | None, float], str], Cell]
    target: float = TARGET_BITS

    def best_lower(self, inst: tuple[str, int | None, float]) -> float:
        """The best lower bound (bits) any solver certified on ``inst`` (0: I >= 0)."""
        lows = [float(c.trace[:, 2].max()) for s in self.solvers
                if (c := self.cells.get((inst, s))) is not None and c.trace is not None]
        return max([0.0, *lows])

    def times(self) -> dict[str, list[float | None]]:
        """Per solver, the time to the target on every instance (None: not reached)."""
        return {s: [self.cells[(i, s)].seconds if (i, s) in self.cells else None
                    for i in self.instances] for s in self.solvers}


def _short_reason(text: str | None) -> str:
    """A skip reason in a few words (the full text goes into the HTML title)."""
    text = (text or "").strip()
    m = re.search(r"max_n\s*=\s*(\d+)", text)
    if m:
        return f"n > max_n = {m.group(1)}"
    first = re.split(r"[;(\n]", text, maxsplit=1)[0].strip()
    return first if len(first) <= 60 else first[:57] + "..."


def _cell(row: pd.Series, target: float) -> Cell:
    status = str(row["status"])
    error = row.get("error") if isinstance(row.get("error"), str) else ""
    if status == "skip":
        return Cell(status, why=f"skipped ({_short_reason(error)})", detail=error)
    if status == "timeout":
        return Cell(status, why="timeout", detail=error)
    if status != "ok":
        return Cell(status, why=f"{status} ({_short_reason(error)})", detail=error)
    trace = trace_of(row)
    if trace is None:
        return Cell(status, why="no trace")
    seconds = time_to_gap(trace, target)
    if seconds is not None:
        return Cell(status, trace, seconds)
    return Cell(status, trace, why=f"gap reached only {best_gap(trace):.2g} bits")


def collect(df: pd.DataFrame, target: float = TARGET_BITS) -> Shootout | None:
    """The shootout in a store's runs (``load_runs``): solvers are the labels of the
    mechanisms with a trace in some ok run (and of :data:`SOLVERS`), instances the
    (instance, Δ) where some run has a trace; None when no run has one (the report then
    has no solver section)."""
    import pandas as pd

    if df.empty:
        return None
    has = pb.outputs_of(df, "trace").map(lambda t: trace_array(t) is not None) & \
        (df["status"] == "ok")
    if not has.any():
        return None
    base = df["mechanism"] if "mechanism" in df else df["label"].str.split("[").str[0]
    solving = set(base[has]) | SOLVERS
    solvers = sorted(df.loc[base.isin(solving), "label"].astype(str).unique())
    keys = {(str(r.instance), float(r.delta)) for r in df[has].itertuples()}
    in_keys = np.array([(str(i), float(d)) in keys
                        for i, d in zip(df["instance"], df["delta"], strict=True)], dtype=bool)
    runs = df[df["label"].isin(solvers).to_numpy() & in_keys]
    sizes: dict[str, int | None] = {}
    for inst, g in runs.groupby("instance"):
        n = pd.to_numeric(g["n"], errors="coerce").dropna()
        sizes[str(inst)] = int(n.iloc[0]) if not n.empty else None
    instances = sorted({(i, sizes.get(i), d) for i, d in keys},
                       key=lambda k: (k[0].split("[", 1)[0], k[1] or 0, k[0], k[2]))
    cells: dict[tuple[tuple[str, int | None, float], str], Cell] = {}
    for row in runs.to_dict("records"):
        inst = (str(row["instance"]), sizes.get(str(row["instance"])), float(row["delta"]))
        cells[(inst, str(row["label"]))] = _cell(pd.Series(row), target)
    shoot = Shootout(solvers, instances, cells, target)
    for (inst, _), cell in cells.items():
        if cell.seconds is None and cell.trace is not None:
            within = np.flatnonzero(cell.trace[:, 1] - shoot.best_lower(inst) <= target)
            cell.seconds_vs_best = float(cell.trace[within[0], 0]) if within.size else None
    return shoot


def performance_profile(times: dict[str, list[float | None]], taus: np.ndarray
                        ) -> dict[str, np.ndarray]:
    """Dolan–Moré: ρ_s(τ) = share of instances with t_s <= τ · min_s' t_s'.

    ``times[s][k]`` is solver s's time on instance k (None: failed). Instances no solver
    solved stay in the denominator (every solver failed them).
    """
    solvers = list(times)
    if not solvers:
        return {}
    k = len(times[solvers[0]])
    T = np.array([[math.inf if t is None else max(float(t), 1e-9) for t in times[s]]
                  for s in solvers]).reshape(len(solvers), k)
    best = T.min(axis=0) if k else np.empty(0)
    with np.errstate(invalid="ignore"):
        ratio = np.where(np.isfinite(T), T / best, math.inf)
    return {s: np.array([(ratio[r] <= tau).sum() / k if k else 0.0 for tau in taus])
            for r, s in enumerate(solvers)}


def _taus(times: dict[str, list[float | None]]) -> np.ndarray:
    """τ from 1 to a little past the largest finite ratio (log-spaced, with every ratio)."""
    T = np.array([[math.inf if t is None else max(t, 1e-9) for t in ts] for ts in times.values()])
    best = T.min(axis=0)
    ok = np.isfinite(T) & np.isfinite(best)
    ratios = (T / np.where(np.isfinite(best), best, 1.0))[ok]
    top = max(2.0, float(ratios.max()) * 1.5) if ratios.size else 2.0
    return np.unique(np.concatenate([np.geomspace(1.0, top, 200), ratios, [1.0]]))


# ---------------------------------------------------------------- tables

def _fmt_seconds(t: float) -> str:
    return f"{t:.3g}" if t < 100 else f"{t:.0f}"


def table_rows(shoot: Shootout) -> list[tuple[str, int | None, float, list[Cell | None]]]:
    """(instance, n, Δ, cells in solver order) for every instance."""
    return [(i[0], i[1], i[2], [shoot.cells.get((i, s)) for s in shoot.solvers])
            for i in shoot.instances]


def _text(cell: Cell | None, target: float = TARGET_BITS) -> str:
    if cell is None:
        return "– (not run)"
    if cell.seconds is not None:
        return _fmt_seconds(cell.seconds)
    if cell.seconds_vs_best is not None:
        return (f"– ({cell.why}; within {target:g} bits of the best bound at "
                f"{_fmt_seconds(cell.seconds_vs_best)} s)")
    return f"– ({cell.why})"


def time_table(shoot: Shootout) -> dict[str, Any]:
    """The time-to-target table (the figure protocol's table: header, rows, a tooltip with
    a cell's full error or skip text, and which cells did not get there)."""
    rows, titles, bad = [], [], []
    for inst, n, delta, cells in table_rows(shoot):
        rows.append([inst, "" if n is None else str(n), f"{delta:g}",
                     *(_text(c, shoot.target) for c in cells)])
        titles.append([None, None, None, *(c.detail if c is not None and c.detail else None
                                           for c in cells)])
        bad.append([False, False, False, *(c is None or c.seconds is None for c in cells)])
    return {"header": ["instance", "n", "Δ", *shoot.solvers], "rows": rows, "titles": titles,
            "bad": bad, "left": 1}


# ---------------------------------------------------------------- figures

class SolverProfile(pb.Figure):
    name = "solver-profile"
    citation = 'Dolan and Moré, Benchmarking optimization software with performance profiles, Math. Program. 2002'
    order = 10
    description = "performance profiles of the time to a certified gap (solver shootout)"
    reads = ("trace",)
    scope = "store"

    def plot(self, runs: pd.DataFrame, **_: Any) -> list[dict[str, Any]]:
        shoot = collect(runs)
        if shoot is None:
            return []
        times = shoot.times()
        if not any(t is not None for ts in times.values() for t in ts):
            return []
        taus = _taus(times)
        rho = performance_profile(times, taus)
        return [{"x": taus.tolist(), "y": rho[s].tolist(), "label": s, "mode": "lines",
                 "step": True, "width": 2} for s in shoot.solvers]

    def get_metadata(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any]:
        shoot = collect(runs)
        count = len(shoot.instances) if shoot is not None else 0
        return {"title": f"Performance profiles: time to a certified gap of {TARGET_BITS:g} bits "
                         f"({count} instances)",
                "xlabel": "τ (time to the gap / fastest solver's time)",
                "ylabel": "share of instances within τ", "xlog": True,
                "caption": "ρ_s(τ): share of instances where solver s certified the gap within "
                           "τ × the fastest solver's time; a failure never counts."}


class Suboptimality(pb.Figure):
    name = "suboptimality"
    citation = "none: privbench's solver shootout (gap against time)"
    order = 20
    description = "objective minus the best certified lower bound against time, per solver"
    reads = ("trace",)
    scope = "store"

    def options(self, runs: pd.DataFrame, outputs: dict[str, Any]) -> list[dict[str, Any]]:
        shoot = collect(runs)
        if shoot is None:
            return []
        return [{"instance": i} for i in dict.fromkeys(inst[0] for inst in shoot.instances)]

    def plot(self, runs: pd.DataFrame, instance: str = "", **_: Any) -> list[dict[str, Any]]:
        shoot = collect(runs)
        if shoot is None:
            return []
        traces = []
        for inst in (i for i in shoot.instances if i[0] == instance):
            low = shoot.best_lower(inst)
            panel = f"Δ = {inst[2]:g} (best lower bound {low:.4g} bits)"
            for s in shoot.solvers:
                cell = shoot.cells.get((inst, s))
                if cell is None or cell.trace is None:
                    continue
                t = np.maximum(cell.trace[:, 0], 1e-4)
                y = np.maximum(cell.trace[:, 1] - low, FLOOR_BITS)
                traces.append({"x": t.tolist(), "y": y.tolist(), "label": s, "panel": panel,
                               "step": True, "mode": "lines+markers" if len(t) < 40 else "lines",
                               "group": s})
                if cell.seconds is not None:
                    k = min(int(np.searchsorted(cell.trace[:, 0], cell.seconds)), len(y) - 1)
                    traces.append({"x": [max(cell.seconds, 1e-4)], "y": [float(y[k])],
                                   "label": f"{s}: own gap ≤ {shoot.target:g}", "style": s,
                                   "panel": panel, "mode": "markers", "marker": "*", "size": 14,
                                   "group": s, "showlegend": False})
            traces.append({"kind": "hline", "x": [], "y": [shoot.target], "label": "target gap",
                           "panel": panel, "color": "#999999", "dash": "dot", "showlegend": False})
        return traces

    def get_metadata(self, runs: pd.DataFrame, instance: str = "", **_: Any) -> dict[str, Any]:
        return {"title": f"Suboptimality against time: {instance}", "xlabel": "seconds",
                "ylabel": "I(X) − best certified lower bound (bits)", "xlog": True, "ylog": True,
                "caption": f"★ where the solver's own certified gap first reaches {TARGET_BITS:g} "
                           "bits; dotted: the target."}


class SolverTable(pb.Figure):
    name = "solver-shootout"
    citation = "none: privbench's solver shootout (time to a certified gap)"
    type = "table"
    order = 30
    description = "seconds each solver took to a certified gap, and why where it did not"
    reads = ("trace",)
    scope = "store"

    def table(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any] | None:
        shoot = collect(runs)
        return None if shoot is None else time_table(shoot)

    def get_metadata(self, runs: pd.DataFrame, **_: Any) -> dict[str, Any]:
        return {"title": f"Solver shootout: time to a certified gap of {TARGET_BITS:g} bits",
                "caption": SHOOTOUT_NOTE}


#: what the table says (the report shows it as the table's caption)
SHOOTOUT_NOTE = (
    "Solvers are the mechanisms whose runs record a trace (seconds, objective, own certified "
    "lower bound). Times are the seconds from the start of the solve until the certificate "
    "exists (SPPM and smoothed_dual certify themselves; mirror_descent and optimal are "
    "certified by the harness's decoder bound, whose time is counted); a dash says why a "
    "solver did not get there (hover for the full reason). The same table is in the "
    "figure's Markdown file.")


@pb.hookimpl
def privbench_register_figures() -> list[type]:
    return [SolverProfile, Suboptimality, SolverTable]
