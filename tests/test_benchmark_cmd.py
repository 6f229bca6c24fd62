"""``privbench benchmark sppm`` prints one record per (problem, backend) and the time ratios."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("highspy")


def bench(*args: str) -> tuple[int, list[dict]]:
    out = subprocess.run([sys.executable, "-m", "privbench.cli", "benchmark", "sppm", *args,
                          "--json"], capture_output=True, text=True, timeout=300)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return out.returncode, lines


@pytest.mark.slow
def test_benchmark_sppm_json() -> None:
    code, lines = bench("--m", "4", "--m", "5", "--lp-backend", "mckp", "--lp-backend", "highs",
                        "--tol", "1e-2")
    assert code == 0
    runs = [r for r in lines if "lp_backend" in r]
    ratios = [r for r in lines if "ratio" in r]
    assert {(r["problem"], r["lp_backend"]) for r in runs} == {
        ("synthetic:m=4", "mckp"), ("synthetic:m=4", "highs"),
        ("synthetic:m=5", "mckp"), ("synthetic:m=5", "highs")}
    for r in runs:
        m = int(r["problem"].split("=")[1])
        assert r["n"] == 2 ** m and r["delta"] == 2.0 ** (m - 8)
        assert 0 <= r["gap_bits"] <= 1e-2 and r["converged"]
        assert r["time_s"] > 0 and r["peak_rss_mb"] > 0
        assert 0 <= r["mi_bits"] <= 1
    assert [r["ratio"] for r in ratios] == ["highs/mckp", "highs/mckp"]


@pytest.mark.slow
def test_benchmark_targets_and_datasets() -> None:
    """--targets marks each run met or missed; --dataset runs any adapter at --delta."""
    code, lines = bench("--m", "5", "--dataset", "random:n=40,seed=2", "--delta", "0.2",
                        "--targets", "--mode", "optimal", "--tol", "1e-6")
    runs = [r for r in lines if "lp_backend" in r]
    assert [r["problem"] for r in runs] == ["synthetic:m=5", "random:n=40,seed=2"]
    assert all(r["met"] and r["gap_bits"] <= 1e-6 for r in runs), runs
    assert runs[1]["target_s"] == 60.0 and code == 0
    code, lines = bench("--m", "5", "--tol", "1e-9", "--iterations", "3", "--targets")
    assert code == 1 and not lines[0]["met"]  # three iterations cannot certify 1e-9 bits


@pytest.mark.slow
def test_benchmark_dual_mode_on_a_dataset() -> None:
    """--mode dual --warmup N: the dual rounds certify the gap; the record says which mode."""
    code, lines = bench("--dataset", "random:n=60,distortion=hamming,seed=3", "--delta", "0.3",
                        "--mode", "dual", "--warmup", "5", "--tol", "1e-4", "--targets")
    runs = [r for r in lines if "lp_backend" in r]
    assert code == 0 and len(runs) == 1
    run = runs[0]
    assert run["mode"] == "dual" and run["met"] and run["gap_bits"] <= 1e-4
    assert run["iterations"] <= 5 and run["time_polish_s"] > 0  # FW warm-up, then dual rounds
    assert run["stop_reason"] == "tolerance (dual mode)"


@pytest.mark.slow
def test_benchmark_exact_solver_and_scaling_figure(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("cvxpy")
    fig = tmp_path / "scaling.png"
    code, lines = bench("--m", "4", "--m", "5", "--exact", "4", "--plot", str(fig))
    assert code == 0
    exact = [r for r in lines if r.get("solver", "").startswith("optimal")]
    sppm = [r for r in lines if r.get("lp_backend") == "mckp"]
    assert [r["n"] for r in exact] == [16] and len(sppm) == 2
    # SPPM's certified answer is within its gap of the exact optimum
    m4 = next(r for r in sppm if r["n"] == 16)
    assert m4["mi_bits"] - m4["gap_bits"] - 1e-6 <= exact[0]["mi_bits"] <= m4["mi_bits"] + 1e-6
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_benchmark_relative_budgets_time_the_peers() -> None:
    """--relative-delta F runs at F * d_const; --peers times the three certified peers on
    the same problem and Δ, and the row carries the best certified peer's time ratio."""
    code, lines = bench("--m", "5", "--relative-delta", "0.001", "--relative-delta", "0.3",
                        "--peers", "--peer-min-n", "1", "--targets")
    runs = [r for r in lines if "lp_backend" in r]
    n = 32
    d_const = (n * n - 1) / 12 + 0.25  # the middle output of the line 1..n
    assert [r["relative_delta"] for r in runs] == [0.001, 0.3]
    assert [r["mode"] for r in runs] == ["frank-wolfe", "dual"]  # sppm's auto mode
    for r in runs:
        assert r["d_const"] == pytest.approx(d_const, rel=1e-12)
        assert r["delta"] == pytest.approx(r["relative_delta"] * d_const, rel=1e-12)
        assert r["converged"] and r["gap_bits"] <= 1e-3
        assert (r["target_s"], r["target_mb"]) == (60.0, 4096.0) and r["met"]
        assert set(r["peers"]) == {"smoothed_dual", "mirror_descent", "sppm_dual"}
        done = {k: v for k, v in r["peers"].items() if v["certified"]}
        assert done, r["peers"]  # at n = 32 every peer certifies 1e-3 bits
        best = min(done, key=lambda k: done[k]["time_s"])
        assert r["best_peer"] == best
        assert r["peer_ratio"] == pytest.approx(done[best]["time_s"] / r["time_s"])
    assert code == 0  # the 3x rule applies from n = 4,096 only


def test_benchmark_curve_runs_every_budget() -> None:
    code, lines = bench("--m", "4", "--curve")
    runs = [r for r in lines if "lp_backend" in r]
    assert code == 0
    assert [r["relative_delta"] for r in runs] == [1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 0.6]
    assert all(r["converged"] for r in runs)


@pytest.mark.parametrize(("args", "message"), [
    (["--dataset", "synthetic:m=4"], "--dataset needs --delta"),
    (["--m", "4", "--mode", "fast"], "mode must be one of"),
    (["--m", "4", "--mode", "dual", "--warmup", "-2"], "warmup must be an integer >= 0"),
    (["--m", "4", "--lp-backend", "nope"], "unknown lp_backend 'nope'"),
    (["--m", "4", "--relative-delta", "0"], "--relative-delta must be a finite number > 0"),
    # several values after one flag are each checked (and parsed: both are named)
    (["--m", "4", "--relative-delta", "0.1", "-1"], "got 0.1, -1"),
    (["--m", "4", "--relative-delta", "0.1", "--relative-delta", "-1"], "got 0.1, -1"),
    (["--m", "4", "--peers"], "--peers needs --relative-delta or --curve"),
    (["--m", "4", "--curve", "--peer-timeout", "0"], "--peer-timeout must be > 0"),
])
def test_benchmark_bad_options_fail_before_running(args: list[str], message: str, capsys) -> None:
    from privbench.cli import main  # in process: a subprocess per case cost ~1.5 s each

    code = main(["benchmark", "sppm", *args])
    out = capsys.readouterr()
    assert code != 0 and message in out.err
    assert "time_s" not in out.out  # no table was started


def test_the_peer_rule_needs_three_times_the_best_certified_peer_from_n_4096() -> None:
    from privbench.plugins.mechanisms._sppm.benchmark_cmd import peer_verdict

    def row(n: int, peers: dict) -> dict:
        return {"n": n, "time_s": 10.0, "met": True, "peers": peers}

    fast = {"certified": True, "time_s": 29.0}
    slow_uncertified = {"certified": False, "time_s": 5.0}  # faster but no certificate
    r = row(4096, {"a": fast, "b": slow_uncertified})
    peer_verdict(r)
    assert r["best_peer"] == "a" and r["peer_ratio"] == pytest.approx(2.9) and not r["met"]
    r = row(4096, {"a": {"certified": True, "time_s": 30.0}})
    peer_verdict(r)
    assert r["met"] and r["peer_ratio"] == pytest.approx(3.0)
    r = row(1024, {"a": fast})  # below 4,096 the ratio is reported, not a target
    peer_verdict(r)
    assert r["met"] and r["peer_ratio"] == pytest.approx(2.9)
    r = row(4096, {"b": slow_uncertified})
    peer_verdict(r)
    assert r["best_peer"] is None and r["peer_ratio"] is None and r["met"]


def test_a_peer_that_timed_out_prints_a_dash_not_a_crash() -> None:
    """A peer stopped at --peer-timeout has no run time: the row prints '-' and its status
    (it crashed the command with a TypeError on None's format)."""
    import argparse

    from privbench.plugins.mechanisms._sppm.benchmark_cmd import _line, peer_verdict

    r = {"problem": "synthetic:m=12", "n": 4096, "relative_delta": 0.3, "delta": 4.2e5,
         "lp_backend": "mckp", "time_s": 2.0, "iterations": 0, "gap_bits": 1e-4,
         "mi_bits": 0.16577, "peak_rss_mb": 358.0, "columns": 265544, "time_pricing_s": 0.1,
         "time_lp_s": 0.0, "time_linesearch_s": 0.0, "time_polish_s": 0.8, "converged": True,
         "peers": {"smoothed_dual": {"status": "timeout", "time_s": None, "gap_bits": None,
                                     "mi_bits": None, "certified": False},
                   "mirror_descent": {"status": "ok", "time_s": 30.0, "gap_bits": 5e-4,
                                      "mi_bits": 0.1659, "certified": True}}}
    peer_verdict(r)
    line = _line(r, argparse.Namespace(tol=1e-3))
    assert "smoothed_dual - (timeout, gap nan)" in line
    assert "mirror_descent 30.00 s" in line and "best mirror_descent x15.0" in line


def test_peer_timeout_auto_is_three_times_sppm_s_time_and_a_stop_there_proves_the_ratio() -> None:
    """``--peer-timeout auto`` gives each peer max(3 x sppm's time, 5 s) + 1 s; a peer
    stopped there uncertified counts as >= 3x slower (met), one that certifies within
    3x misses, and a fixed limit under 3x sppm's time proves nothing (missed, unproven)."""
    import argparse

    from privbench.plugins.mechanisms._sppm.benchmark_cmd import (
        _line,
        peer_limit,
        peer_timeout,
        peer_verdict,
    )

    assert peer_timeout("auto") == "auto" and peer_timeout("12.5") == 12.5
    with pytest.raises(argparse.ArgumentTypeError, match="'auto'"):
        peer_timeout("soon")
    assert peer_limit("auto", 10.0) == pytest.approx(31.0)
    assert peer_limit("auto", 0.5) == pytest.approx(6.0)
    assert peer_limit(600.0, 10.0) == 600.0

    def row(peers: dict) -> dict:
        return {"problem": "synthetic:m=12", "n": 4096, "relative_delta": 0.3, "delta": 1.0,
                "lp_backend": "mckp", "time_s": 10.0, "iterations": 0, "gap_bits": 1e-4,
                "mi_bits": 0.17, "peak_rss_mb": 300.0, "columns": 10, "time_pricing_s": 0.1,
                "time_lp_s": 0.0, "time_linesearch_s": 0.0, "time_polish_s": 0.8,
                "converged": True, "met": True, "target_s": 60.0, "target_mb": 4096.0,
                "peers": peers}

    def stopped(limit: float) -> dict:
        return {"status": "timeout", "time_s": None, "gap_bits": None, "certified": False,
                "limit_s": limit}

    r = row({"a": stopped(peer_limit("auto", 10.0)), "b": stopped(31.0)})
    peer_verdict(r)
    assert r["met"] and r["peer_met"] and r["peer_ratio"] is None
    line = _line(r, argparse.Namespace(tol=1e-3))
    assert "a not certified within 31.0 s (>= 3.1x)" in line and line.endswith("met")
    r = row({"a": stopped(31.0), "b": {"status": "ok", "time_s": 25.0, "gap_bits": 1e-4,
                                       "certified": True, "limit_s": 31.0}})
    peer_verdict(r)
    assert not r["met"] and r["best_peer"] == "b" and r["peer_ratio"] == pytest.approx(2.5)
    skipped = {"status": "skip", "time_s": None, "gap_bits": None, "certified": False,
               "limit_s": 31.0, "reason": "dense; n = 16384 exceeds max_n = 4096 (raise it)"}
    r = row({"a": stopped(31.0), "b": skipped})  # a skipped peer is no certified peer
    peer_verdict(r)
    assert r["met"] and "b skipped (n > max_n = 4096)" in _line(r, argparse.Namespace(tol=1e-3))
    r = row({"a": stopped(20.0)})  # a fixed limit of 2x: the peer might certify at 2.5x
    peer_verdict(r)
    assert not r["met"] and r["peers"]["a"]["at_least"] == pytest.approx(2.0)
    assert "MISSED" in _line(r, argparse.Namespace(tol=1e-3))


@pytest.mark.slow
def test_a_curve_on_a_dataset_prints_every_budget_and_a_closing_line(capsys) -> None:
    """``--dataset ... --curve`` runs all seven budgets on the data set and ends with the
    line that says how many rows ran (a table without it did not finish); faulthandler is
    on, so a crash in compiled code prints a traceback instead of ending silently."""
    import faulthandler

    from privbench.cli import main

    faulthandler.disable()  # pytest enables it too: see that the command does
    code = main(["benchmark", "sppm", "--dataset", "synthetic:m=4", "--curve", "--targets"])
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line.strip().startswith("synthetic:m=4")]
    assert [line.split()[2] for line in rows] == ["0.0001", "0.001", "0.01", "0.03", "0.1",
                                                   "0.3", "0.6"]
    assert out[-1] == "benchmark sppm: 7 rows done; targets met on 7 of 7" and code == 0
    assert faulthandler.is_enabled()


def test_benchmark_runs_compute_only_the_metrics_a_row_reads() -> None:
    """A peer's time limit covers its run and its metrics: a metric the row never reads
    (the bootstrap took ~15 s after a 5 s solve on census with every profile) would make a
    peer that certified look stopped at its limit, and the 3x target met when it is not."""
    from privbench.plugins.mechanisms._sppm.benchmark_cmd import KEEP_METRICS, _execute

    record = _execute("synthetic:m=4", "sppm", {"tol": 1e-2}, 0.5, timeout=120.0)
    assert record["status"] == "ok"
    assert set(record["metrics"]["metric_seconds"]) <= set(KEEP_METRICS)
    assert 0 <= record["mi_bits"] <= 1 and record["distortion"] <= 0.5 + 1e-9
