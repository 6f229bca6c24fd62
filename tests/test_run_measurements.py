"""What a run measures and stores: latest rows, pricing rounds, peak memory, column sums."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privbench as pb
from privbench.cli import main


def test_results_latest_keeps_only_the_last_row_of_each_run(tmp_path) -> None:
    db = tmp_path / "r.sqlite"
    argv = ["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--delta", "2",
            "--db", str(db)]
    assert main(argv) == 0 and main(argv) == 0  # every run stored twice
    out = tmp_path / "all.csv"
    latest = tmp_path / "latest.csv"
    assert main(["results", "--db", str(db), "--export", str(out)]) == 0
    assert main(["results", "--db", str(db), "--latest", "--export", str(latest)]) == 0
    every, last = pd.read_csv(out), pd.read_csv(latest)
    assert len(every) == 4 and len(last) == 2
    assert sorted(last["id"]) == [3, 4]  # the later rows, not the first ones


def test_exact_every_changes_how_often_all_pairs_are_priced() -> None:
    problem = pb.load_dataset("random", n=40, n_private=2, seed=3, distortion="random")
    delta = 0.2 * float((problem.distortion.to_dense() @ problem.p_b).min())
    scans = {}
    for every in (1, 50):
        res = pb.get_mechanism("sppm", iterations=20, tol=0.0, exact_every=every,
                               neighbours=4, mode="frank-wolfe").solve(problem, delta)
        scans[every] = res.stats["full_scan_columns"]
    assert scans[1] > scans[50] > 0  # exact pricing every round scans far more


def test_peak_mem_mb_measures_the_rise_during_the_timed_run(monkeypatch) -> None:
    """A mechanism that holds 200 MB while it runs shows a peak of at least that."""
    import scipy.sparse as sp

    class Hold(pb.MappingMechanism):
        name = "hold"

        def __init__(self) -> None:
            pass

        def run(self, problem, delta):
            block = np.ones(200 * 2**20 // 8)
            block[::4096] = 2.0  # touch every page
            return self.result(sp.identity(problem.n, format="csc"), touched=float(block.sum()))

    from privbench.host import manager

    host = pb.PluginHost()

    class Hook:
        @pb.hookimpl
        def privbench_register_mechanisms(self):
            return [Hold]

    host.pm.register(Hook(), name="hold-test")
    previous = manager.set_host(host)
    try:
        record = pb.execute_run(pb.RunSpec(mechanism="hold", dataset="synthetic",
                                           dataset_params={"m": 3}, delta=1.0).to_dict())
        small = pb.execute_run(pb.RunSpec(mechanism="identity", dataset="synthetic",
                                          dataset_params={"m": 3}, delta=1.0).to_dict())
    finally:
        manager.set_host(previous)
    assert record["status"] == "ok"
    assert 190 <= record["peak_mem_mb"] <= 400
    assert small["peak_mem_mb"] < 50


def test_compare_prints_the_numbers_of_the_curves(tmp_path, capsys) -> None:
    """The leakage at a budget and the ratio line come from the stored curves."""
    db = tmp_path / "r.sqlite"
    deltas = ["--delta", "0.5", "--delta", "2", "--delta", "8"]
    assert main(["run", "-m", "optimal", "-m", "expmec", "-d", "synthetic:m=3", *deltas,
                 "--json", "--db", str(db)]) == 0
    import json

    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    at2 = {r["mechanism"]: r["mi_bits"] for r in rows if r["delta"] == 2.0}
    assert main(["compare", "--db", str(db), "--budget", "2", "--reference", "optimal"]) == 0
    out = capsys.readouterr().out
    for mech in ("optimal", "expmec"):
        assert f"{at2[mech]:.4g}" in out  # I at Δ<=2, read off the stored runs
    assert "expmec needs" in out and "the distortion of optimal" in out


@pytest.mark.parametrize(("matrix", "message"), [
    ([[1.0, 0.5], [0.0, 0.5]], None),
    ([[1.0, 0.5], [0.0, 0.6]], "column 1 sums to 1.1"),
    ([[0.9, 0.5], [0.0, 0.5]], "column 0 sums to 0.9"),
    ([[1.0 + 2e-9, 0.5], [0.0, 0.5]], "column 0 sums to 1.000000002"),
    ([[1.0 + 5e-10, 0.5], [0.0, 0.5]], None),  # within the 1e-9 tolerance
])
def test_column_sums_are_checked_to_1e_9(matrix, message) -> None:
    if message is None:
        pb.validate_mapping(np.array(matrix), 2)
    else:
        with pytest.raises(pb.InvalidMappingError, match=message):
            pb.validate_mapping(np.array(matrix), 2)
