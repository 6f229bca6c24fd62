"""Every metric declares the outputs it produces (the optimum metric is checked with its
own code); the privacy_notions metric fills the record with every notion, and an
infinite value survives the store and prints as strict JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.plugins.metrics.core import LocalDP, ldp_epsilon_public
from privbench.plugins.metrics.notions import OUTPUTS, PrivacyNotions
from privbench.results.store import ResultStore
from privbench.running.records import plain, record_json

#: declared by the work that owns them (optimum: the certified-optimum metric)
NOT_HERE = {"optimum", "optimum_large"}


def _declared(metric_cls) -> set[str]:
    return {o.name for o in metric_cls.outputs}


def _check_run(problem, result, delta, requested=()):
    """Every key a metric returns for this run is one of its declared outputs."""
    host = pb.get_host()
    checked = set()
    for name, cls in host.metrics().items():
        if name in NOT_HERE:
            continue
        if not cls.default and name not in requested:
            continue
        metric = cls()
        if not metric.applies(problem, result):
            continue
        values = metric.compute(problem, result, delta=delta, seed=0)
        undeclared = set(values) - _declared(cls)
        assert not undeclared, f"metric {name} returns undeclared {sorted(undeclared)}"
        checked.add(name)
    return checked


def test_mapping_records_and_holdout_metrics_declare_what_they_return():
    problem = pb.load_dataset("politics_tv_surrogate", holdout=0.3)
    res = pb.get_mechanism("expmec").solve(problem, delta=0.5)
    checked = _check_run(problem, res, 0.5, requested=("nb_attack", "lr_attack"))
    assert {"leakage", "local_dp", "privacy_notions", "posterior_attack", "holdout_leakage",
            "holdout_attack", "nb_attack", "lr_attack", "feature_leakage", "mapping_behaviour",
            "support", "bootstrap"} <= checked
    gauss = pb.load_dataset("linear_gaussian", n_samples=300, seed=3)
    rec = pb.get_mechanism("nullspace").solve(gauss, 0.01, seed=1)
    assert {"e_utility", "e_privacy", "e_privacy_attack"} <= _check_run(gauss, rec, 0.01)


def test_every_metric_but_optimum_declares_outputs_with_units():
    for name, cls in pb.get_host().metrics().items():
        if name in NOT_HERE:
            continue
        assert cls.outputs, f"metric {name} declares no outputs"
    outputs = pb.get_host().outputs()
    assert outputs["guessing_entropy"].direction == "higher"
    assert outputs["guessing_entropy"].unit == "guesses"
    assert outputs["lip_epsilon"].unit == outputs["ldp_epsilon_private"].unit == "nats"
    assert outputs["maximal_leakage"].unit == "bits" and "Issa" in outputs["maximal_leakage"].citation
    assert outputs["posterior_auc"].direction == "lower"
    assert outputs["e_privacy"].direction == "higher"
    assert "public" in outputs["ldp_epsilon_public"].description


def test_notions_metric_matches_the_functions():
    problem = pb.load_dataset("random", n=9, n_private=3, seed=1)
    res = pb.get_mechanism("expmec").solve(problem, delta=0.3)
    values = PrivacyNotions().compute(problem, res, delta=0.3)
    assert set(values) == {o.name for o in OUTPUTS}
    for name, value in values.items():
        assert value == pb.metrics.NOTIONS[name](problem, res.mapping)
    assert math.isfinite(values["lip_epsilon"])  # expmec has full support


def test_local_dp_is_epsilon_with_respect_to_the_public_data():
    problem = pb.load_dataset("random", n=5, seed=0)
    # randomized response with e^ε = 3 on B: ε = ln 3 with respect to B
    X = np.full((5, 5), 1 / 7) + np.eye(5) * (2 / 7)
    res = pb.MechanismResult(kind="mapping", mapping=sp.csc_array(X))
    assert LocalDP().compute(problem, res, delta=0)["ldp_epsilon_public"] == pytest.approx(np.log(3.0), abs=1e-12)
    # an output that one input reaches and another cannot: inf, not None
    assert ldp_epsilon_public(np.eye(5)) == math.inf
    # an output no input reaches is ignored
    Y = np.zeros((3, 3))
    Y[0] = [0.5, 0.25, 0.5]
    Y[2] = [0.5, 0.75, 0.5]
    # rows: ln(0.5 / 0.25) = ln 2 and ln(0.75 / 0.5) = ln 1.5
    assert ldp_epsilon_public(Y) == pytest.approx(np.log(2.0), abs=1e-15)


def test_infinity_is_stored_read_back_and_printed(tmp_path):
    """A record holding inf keeps it: SQLite, the metrics JSON, the table and --json."""
    spec = pb.RunSpec.from_dict({"mechanism": "identity", "dataset": "synthetic",
                                 "dataset_params": {"m": 3}, "delta": 0.0})
    record = pb.execute_run(spec)
    assert record["status"] == "ok", record["error"]
    assert record["metrics"]["lip_epsilon"] == math.inf
    assert record["metrics"]["ldp_epsilon_public"] == math.inf
    record["gap_bits"] = math.inf  # a top-level REAL column too
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.add(record)
        row = store.frame().iloc[0]
    assert row["metrics"]["lip_epsilon"] == math.inf
    assert row["gap_bits"] == math.inf
    line = record_json(record)
    back = json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert back["metrics"]["lip_epsilon"] == "inf" and float(back["metrics"]["lip_epsilon"]) == math.inf
    assert back["gap_bits"] == "inf"
    assert plain({"x": float("nan"), "y": -math.inf}) == {"x": None, "y": -math.inf}
    assert json.loads(record_json({"y": -math.inf, "z": [float("nan")]})) == {"y": "-inf", "z": [None]}


def test_run_json_prints_every_notion_as_strict_json(capsys):
    from privbench.cli import main

    code = main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "0", "--json",
                 "--no-store"])
    assert code == 0
    out = capsys.readouterr().out.strip().splitlines()
    record = json.loads(out[-1], parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    for name in pb.metrics.JOINT_NOTIONS:
        value = record["mi_bits"] if name == "mi_bits" else record["metrics"][name]
        assert value is not None, name
    assert record["metrics"]["lip_epsilon"] == "inf"
    assert record["metrics"]["maximal_leakage"] == 1.0


def test_notions_specs_parse_and_the_table_picks_the_most_private(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    from privbench.running.plan import load_sweep_file

    root = Path(__file__).resolve().parents[1]
    for name in ("notions.toml", "notions-toy.toml"):
        spec = load_sweep_file(root / "specs" / name)
        assert "maxleak_optimal" in spec.mechanisms and len(spec.deltas) == 3
    module = importlib.util.spec_from_file_location("notions_table", root / "tools" / "notions_table.py")
    table = importlib.util.module_from_spec(module)
    module.loader.exec_module(table)
    db = tmp_path / "n.sqlite"
    with ResultStore(db) as store:
        for mech in ("identity", "expmec", "randomized_response"):
            spec = pb.RunSpec.from_dict({"mechanism": mech, "dataset": "synthetic",
                                         "dataset_params": {"m": 3}, "delta": 2.0})
            store.add(pb.execute_run(spec))
    runs = table.load(str(db))
    by = runs.set_index("mechanism")
    # lower is more private for maximal leakage, higher for guessing entropy
    best_ml = by["maximal_leakage"].idxmin()
    assert table.winners(runs, "maximal_leakage", "lower").startswith(best_ml)
    assert table.winners(runs, "guessing_entropy", "higher").startswith(by["guessing_entropy"].idxmax())
    assert by.loc["identity", "guessing_entropy"] == 1.0 and best_ml != "identity"
    table.main(str(db))
    assert "| maximal_leakage (bits, lower) |" in capsys.readouterr().out
