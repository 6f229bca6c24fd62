"""LP backend plugins: one sign convention, incremental use, isolation of OR-Tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import privbench as pb
from privbench.results.store import ResultStore

BACKENDS = ["highs", "scipy", "mckp", "glop", "pdlp", "cvxpy"]
#: first-order / interior-point solvers are accurate to their tolerances only
TOL = {"pdlp": 1e-6, "cvxpy": 1e-6}


def backend_or_skip(name: str) -> pb.LPBackend:
    try:
        return pb.get_lp_backend(name)
    except pb.PluginError as exc:
        pytest.skip(str(exc))


def random_master(seed: int, n: int = 12, per: int = 5):
    rng = np.random.default_rng(seed)
    cols = np.repeat(np.arange(n), per)
    cost = rng.normal(size=cols.size)
    budget = rng.random(cols.size)
    budget[::per] = 0.0  # a zero-budget column per row keeps the master feasible
    return cols, cost, budget


def dense_reference(n, cols, cost, budget, delta):
    A_eq = np.zeros((n, cols.size))
    A_eq[cols, np.arange(cols.size)] = 1.0
    res = linprog(cost, A_ub=budget[None, :], b_ub=[delta], A_eq=A_eq, b_eq=np.ones(n),
                  bounds=(0, None), method="highs-ds")
    assert res.status == 0
    return res.fun


def check_solution(sol, cols, cost, budget, delta, tol):
    assert sol.status == "optimal"
    assert sol.budget_dual <= 0.0
    r = cost - sol.budget_dual * budget - sol.simplex_duals[cols]
    assert r.min() >= -tol * 10, "reduced costs must be >= 0 at an optimum"
    assert np.max(np.abs(r * sol.x)) <= tol * 10, "complementary slackness"
    # strong duality: λΔ + Σ μ = c x
    assert sol.budget_dual * delta + sol.simplex_duals.sum() == pytest.approx(
        sol.objective, abs=tol * 100)
    assert cost @ sol.x == pytest.approx(sol.objective, abs=tol * 100)


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("delta", [0.3, 50.0])  # budget binding (λ < 0) and slack (λ = 0)
def test_sign_convention_and_incremental_use(name: str, delta: float) -> None:
    n = 12
    cols, cost, budget = random_master(1, n)
    tol = TOL.get(name, 1e-9)
    b = backend_or_skip(name)
    with b:
        b.start(n, delta)
        half = cols.size // 2
        first = np.concatenate([np.arange(0, cols.size, 5), np.arange(1, half, 5)])
        rest = np.setdiff1d(np.arange(cols.size), first)
        b.add_columns(cols[first], cost[first], budget[first])
        s0 = b.solve()
        check_solution(s0, cols[first], cost[first], budget[first], delta, tol)
        assert s0.objective == pytest.approx(
            dense_reference(n, cols[first], cost[first], budget[first], delta), abs=tol * 100)
        b.add_columns(cols[rest], cost[rest], budget[rest])
        order = np.concatenate([first, rest])
        new_cost = cost[order] * 1.5 - 0.2
        b.set_costs(new_cost)
        s1 = b.solve()
        check_solution(s1, cols[order], new_cost, budget[order], delta, tol)
        ref = dense_reference(n, cols[order], new_cost, budget[order], delta)
        assert s1.objective == pytest.approx(ref, abs=tol * 100)
        if delta < 1:
            assert s1.budget_dual < -1e-6


def test_every_backend_gives_the_same_duals() -> None:
    n = 12
    cols, cost, budget = random_master(7, n)
    found = {}
    for name in BACKENDS:
        try:
            b = pb.get_lp_backend(name)
        except pb.PluginError:
            continue
        with b:
            b.start(n, 0.4)
            b.add_columns(cols, cost, budget)
            found[name] = b.solve()
    assert {"highs", "scipy"} <= set(found)
    ref = found["scipy"]
    for name, sol in found.items():
        tol = TOL.get(name, 1e-8) * 100
        assert sol.objective == pytest.approx(ref.objective, abs=tol), name
        assert sol.budget_dual == pytest.approx(ref.budget_dual, abs=tol), name


def test_glop_runs_beside_highspy_in_one_process() -> None:
    """OR-Tools cannot be loaded next to highspy >= 1.15; the worker process avoids it."""
    pytest.importorskip("highspy")
    pytest.importorskip("ortools")
    code = (
        "import highspy, numpy as np, privbench as pb\n"
        "h = highspy.Highs()\n"
        "b = pb.get_lp_backend('glop'); b.start(2, 1.0)\n"
        "b.add_columns(np.array([0, 0, 1]), np.array([1.0, -1.0, 0.0]), np.array([0.0, 2.0, 0.0]))\n"
        "s = b.solve(); b.close()\n"
        "import sys; assert 'ortools.linear_solver.pywraplp' not in sys.modules\n"
        "print(s.status, round(s.objective, 9), round(s.budget_dual, 9))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # x = 0.5 on each column of row 0: objective 0.5 - 0.5 = 0; -1 - 2λ - μ_0 = 0, μ_0 = 1
    # (highspy prints its banner first; the answer is the last line)
    assert out.stdout.strip().splitlines()[-1].split() == ["optimal", "0.0", "-1.0"]


@pytest.mark.slow
def test_sweep_with_highs_and_glop(tmp_path: Path) -> None:
    pytest.importorskip("highspy")
    pytest.importorskip("ortools")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'mechanisms = ["sppm:iterations=20"]\n'
        'datasets = ["random:n=12,n_private=2,seed=3,distortion=hamming"]\n'
        "deltas = [0.2]\nbaselines = false\n"
        'lp_backends = ["highs", "glop"]\n', encoding="utf-8")
    db = tmp_path / "runs.sqlite"
    out = subprocess.run([sys.executable, "-m", "privbench.cli", "sweep", str(spec), "--db",
                          str(db), "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    with ResultStore(db, create=False) as store:  # lp_backend is the mechanism's parameter
        rows = [(r.params["lp_backend"], r.status, r.mi_bits, r.gap_bits)
                for r in store.frame().itertuples()]
    assert sorted(r[0] for r in rows) == ["glop", "highs"]
    assert all(r[1] == "ok" for r in rows), rows
    mi = [r[2] for r in rows]
    assert abs(mi[0] - mi[1]) <= max(r[3] for r in rows) + 1e-9
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert {r["params"]["lp_backend"] for r in records} == {"highs", "glop"}


def test_missing_dependency_is_listed_unavailable_with_extra(host: pb.PluginHost) -> None:
    from privbench.plugins.lp.highs import HighsBackend

    class NeedsMissing(HighsBackend):
        name = "highs_missing"
        requirements = ("privbench_no_such_module",)
        extra = "highs"

    class Plugin:
        @pb.hookimpl
        def privbench_register_lp_backends(self):
            return [NeedsMissing]

    from privbench.host.manager import _Source

    # as a built-in: the extra is privbench's own
    host.register(Plugin(), name="fake_lp", source=_Source("privbench", pb.__version__,
                                                           __name__, packaged=True))
    row = next(p for p in host.plugins() if p.name == "highs_missing")
    assert row.status == "unavailable"
    assert "privbench[highs]" in row.reason


def test_ortools_module_does_not_import_ortools() -> None:
    code = ("import sys, privbench.plugins.lp.ortools as m\n"
            "print(any(k.startswith('ortools') for k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_highs_warm_start_reuses_the_basis() -> None:
    """Same optimum warm or cold; the warm re-solve after a cost change pivots far less."""
    pytest.importorskip("highspy")
    from privbench.plugins.lp.highs import HighsBackend

    n = 60
    cols, cost, budget = random_master(3, n, per=8)
    results = {}
    for warm in (True, False):
        with HighsBackend(warm=warm) as b:
            b.start(n, 2.0)
            b.add_columns(cols, cost, budget)
            b.solve()
            b.set_costs(cost + 0.01 * np.sin(np.arange(cost.size)))
            results[warm] = b.solve()
    assert results[True].objective == pytest.approx(results[False].objective, abs=1e-9)
    assert results[True].iterations < results[False].iterations


def _tiny_master(backend: pb.LPBackend) -> pb.LPSolution:
    backend.start(2, 1.0)
    backend.add_columns(np.array([0, 0, 1]), np.array([1.0, -1.0, 0.0]),
                        np.array([0.0, 2.0, 0.0]))
    return backend.solve()


def test_ortools_worker_is_reused_between_solves_and_its_cpu_time_counted() -> None:
    """A solve never pays for an interpreter start: close() hands the worker back and the
    next start() takes it, across backend instances; each reply adds the worker's CPU
    time to the process's clock (what the solve-time benchmarks read)."""
    pytest.importorskip("ortools")
    from privbench._plumbing import clock
    from privbench.plugins.lp import ortools

    first = pb.get_lp_backend("glop")
    assert _tiny_master(first).objective == pytest.approx(0.0, abs=1e-9)
    pid = first._worker.proc.pid
    first.close()
    before = clock.helper_cpu_seconds()
    second = pb.get_lp_backend("pdlp")  # one worker serves either solver
    sol = _tiny_master(second)
    assert sol.status == "optimal" and sol.budget_dual == pytest.approx(-1.0, abs=1e-5)
    assert second._worker.proc.pid == pid
    assert clock.helper_cpu_seconds() > before
    assert clock.cpu_seconds() >= clock.helper_cpu_seconds()
    # a new master in the same worker starts empty: the old columns are gone
    second.start(1, 1.0)
    second.add_columns(np.array([0]), np.array([3.0]), np.array([0.0]))
    assert second.solve().objective == pytest.approx(3.0)
    second.close()
    assert [w.proc.pid for w in ortools._idle] == [pid]


def test_an_interrupted_ortools_call_retires_its_worker() -> None:
    """A run's timeout can land between a request and its reply: that worker's pipe is
    out of step, so it is stopped, never handed to the next solve."""
    pytest.importorskip("ortools")
    from privbench.plugins.lp import ortools

    backend = pb.get_lp_backend("glop")
    _tiny_master(backend)
    worker = backend._worker
    worker.pending = True  # as if a timeout had interrupted pickle.load
    backend.close()
    assert worker.proc.poll() is not None
    assert worker not in ortools._idle
    fresh = pb.get_lp_backend("glop")
    assert _tiny_master(fresh).status == "optimal"
    assert fresh._worker is not worker
    fresh.close()
