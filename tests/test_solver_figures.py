"""The solver shootout: numbers derived from traces, performance profiles known by hand,
and the report section on a tiny real sweep (synthetic m = 4, sppm and optimal)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privbench.cli import main
from privbench.plugins.figures import shootout as sf
from privbench.results.store import ResultStore
from privbench.running.runner import RunSpec, execute_run


def test_trace_numbers() -> None:
    metrics = {"trace": [[0.5, 0.30, 0.10], [0.1, 0.50, 0.0], [1.0, 0.2005, 0.2],
                         [2.0, 0.2001, 0.2], [3.0, float("nan"), 0.2]]}
    tr = sf.trace_of({"metrics": metrics})
    assert tr is not None and tr.shape == (4, 3)
    assert list(tr[:, 0]) == [0.1, 0.5, 1.0, 2.0]  # sorted, the non-finite row dropped
    assert sf.time_to_gap(tr, 1e-3) == 1.0  # gap 5e-4 first at t = 1
    assert sf.time_to_gap(tr, 5e-5) is None  # never reached
    assert sf.best_gap(tr) == pytest.approx(1e-4)
    assert sf.time_to_gap(tr, 0.2) == 0.5
    assert sf.trace_of({}) is None and sf.trace_of(None) is None
    assert sf.trace_array("not a trace") is None and sf.trace_array([[1.0, 2.0]]) is None
    assert sf.time_to_gap(None) is None


def test_performance_profile_by_hand() -> None:
    # instance:  0    1    2     3     4 (nobody solves it)
    times = {"A": [1.0, 2.0, None, 4.0, None],
             "B": [2.0, 1.0, 3.0, None, None],
             "C": [None, None, None, None, None]}
    # best times 1, 1, 3, 4: ratios A = 1, 2, inf, 1; B = 2, 1, 1, inf
    rho = sf.performance_profile(times, np.array([1.0, 1.5, 2.0, 100.0]))
    assert list(rho["A"]) == pytest.approx([2 / 5, 2 / 5, 3 / 5, 3 / 5])
    assert list(rho["B"]) == pytest.approx([2 / 5, 2 / 5, 3 / 5, 3 / 5])
    assert list(rho["C"]) == [0.0, 0.0, 0.0, 0.0]
    rho = sf.performance_profile({"A": [1.0, 3.0], "B": [2.0, 1.0]}, np.array([1.0, 2.0, 3.0]))
    assert list(rho["A"]) == [0.5, 0.5, 1.0] and list(rho["B"]) == [0.5, 1.0, 1.0]


def _row(label: str, instance: str, delta: float, status: str = "ok", trace=None,
         error: str | None = None, n: int = 300) -> dict:
    return {"label": label, "mechanism": label.split("[")[0], "instance": instance, "delta": delta, "status": status,
            "error": error, "n": n, "metrics": {"trace": trace} if trace else {}}


def test_collect_table_and_reasons() -> None:
    skip = ("optimal solves a dense convex program with n² = 4000000 variables; n = 2000 "
            "exceeds max_n = 300 (raise it ...)")
    df = pd.DataFrame([
        _row("sppm", "census[top_k=300]", 0.3, trace=[[0.1, 0.2, 0.0], [0.4, 0.1205, 0.12]]),
        _row("optimal", "census[top_k=300]", 0.3, trace=[[2.0, 0.1202, 0.05]]),
        _row("expmec", "census[top_k=300]", 0.3),  # no trace: not a solver
        _row("sppm", "census[top_k=2000]", 0.3, n=2000,
             trace=[[1.0, 0.3, 0.1], [30.0, 0.1009, 0.1]]),
        _row("optimal", "census[top_k=2000]", 0.3, status="skip", error=skip, n=2000),
        _row("sppm[mode=dual]", "census[top_k=2000]", 0.3, status="timeout",
             error="timed out after 300 s", n=2000),
    ])
    shoot = sf.collect(df)
    assert shoot is not None
    assert shoot.solvers == ["optimal", "sppm", "sppm[mode=dual]"]
    assert [i[0] for i in shoot.instances] == ["census[top_k=300]", "census[top_k=2000]"]
    small, big = shoot.instances
    assert shoot.best_lower(small) == 0.12  # sppm's bound serves optimal's curve too
    assert shoot.cells[(small, "sppm")].seconds == 0.4
    assert shoot.cells[(small, "optimal")].seconds is None
    # its own certificate falls short, but sppm's bound (0.12) certifies it within 1e-3
    assert shoot.cells[(small, "optimal")].seconds_vs_best == 2.0
    assert shoot.cells[(big, "sppm")].seconds_vs_best is None  # it certified itself
    assert shoot.cells[(big, "sppm")].seconds == 30.0
    table = sf.time_table(shoot)
    assert table["header"] == ["instance", "n", "Δ", "optimal", "sppm", "sppm[mode=dual]"]
    assert table["rows"] == [
        ["census[top_k=300]", "300", "0.3", "– (gap reached only 0.07 bits; within 0.001 bits "
         "of the best bound at 2 s)", "0.4", "– (not run)"],
        ["census[top_k=2000]", "2000", "0.3", "– (skipped (n > max_n = 300))", "30", "– (timeout)"]]
    assert table["bad"] == [[False] * 3 + [True, False, True], [False] * 3 + [True, False, True]]
    assert shoot.times() == {"optimal": [None, None], "sppm": [0.4, 30.0],
                             "sppm[mode=dual]": [None, None]}
    assert "exceeds max_n = 300" in table["titles"][1][3]  # the full reason as a tooltip
    assert sf.collect(df[df["label"] == "expmec"]) is None


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sppm and optimal on the toy example, m = 4, at two budgets (a few seconds)."""
    pytest.importorskip("plotly")
    pytest.importorskip("cvxpy")
    db = tmp_path_factory.mktemp("solvers") / "runs.sqlite"
    with ResultStore(db) as s:
        for mech in ("sppm", "optimal"):
            for delta in (0.3, 1.0):
                s.add(execute_run(RunSpec(mechanism=mech, dataset="synthetic", delta=delta,
                                          dataset_params={"m": 4})))
    return db


def test_real_traces_have_the_shape(tiny_store: Path) -> None:
    from privbench.results.views import load_runs

    df = load_runs(tiny_store)
    assert set(df["status"]) == {"ok"}
    for _, r in df.iterrows():
        tr = sf.trace_of(r)
        assert tr is not None and np.all(tr[:, 1] + 1e-12 >= tr[:, 2])
        assert np.all(np.diff(tr[:, 0]) >= 0) and tr[-1, 0] <= r["runtime_s"] + 1e-6
        if r["mechanism"] == "sppm":  # lower = best bound so far: never decreases
            assert np.all(np.diff(tr[:, 2]) >= 0)
            assert tr[-1, 1] - tr[-1, 2] == pytest.approx(r["gap_bits"], abs=1e-12)
            assert sf.time_to_gap(tr) is not None
        else:
            assert len(tr) == 1 and tr[0, 1] == pytest.approx(r["mi_bits"], abs=1e-9)


def test_report_has_the_solver_section(tiny_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert main(["report", "--db", str(tiny_store), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    assert "Solver shootout" in page and 'id="store-solver-shootout"' in page
    names = {p.name for p in (out / "figures").glob("store-*.csv")}
    assert names == {"store-solver-profile.csv", "store-suboptimality-synthetic-m-4.csv",
                     "store-solver-shootout.csv"}
    md = (out / "figures" / "store-solver-shootout.md").read_text()
    assert md.startswith("| instance | n | Δ | optimal | sppm |\n|---|---|---|---|---|\n")
    assert md.count("synthetic[m=4]") == 2


def test_report_without_traces_has_no_section(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    db = tmp_path / "runs.sqlite"
    with ResultStore(db) as s:
        s.add(execute_run(RunSpec(mechanism="expmec", dataset="synthetic", delta=1.0,
                                  dataset_params={"m": 3})))
    out = tmp_path / "site"
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0
    assert "Solver shootout" not in (out / "index.html").read_text()
    assert not (out / "figures" / "store-solver-shootout.md").exists()


def test_a_failed_run_lands_on_its_problems_instance(tmp_path: Path) -> None:
    """A timed-out run never loads the problem, so it has no problem name; it must share
    the instance of the same request's ok runs (whose name the data set chose), or the
    table shows it as "not run" on a row of its own."""
    from privbench.results.views import load_runs
    from privbench.running.runner import failed_record

    db = tmp_path / "runs.sqlite"
    request = {"n": 20, "seed": 1, "distortion": "hamming", "bits": 6}
    with ResultStore(db) as s:
        s.add(execute_run(RunSpec(mechanism="sppm", dataset="random", delta=0.3,
                                  dataset_params=request)))
        s.add(failed_record(RunSpec(mechanism="optimal", dataset="random", delta=0.3,
                                    dataset_params=request), "timeout", "timed out after 1 s"))
    df = load_runs(db)
    assert df["instance"].nunique() == 1
    assert df["instance"].iloc[0] != "random[bits=6,distortion=hamming,n=20,seed=1]"
    shoot = sf.collect(df)
    assert len(shoot.instances) == 1
    assert shoot.cells[(shoot.instances[0], "optimal")].why == "timeout"
