"""Sweep files: budgets relative to each data set's d_const (``relative_deltas``) and
replicate seeds for the randomized mechanisms only (``replicate_seeds``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.protocol.errors import ValidationError
from privbench.running.plan import d_const, load_sweep_file, plan_runs, sweep_spec_from

SPEC = {"mechanisms": ["expmec", "pram"], "datasets": ["synthetic:m=3", "random:n=6,seed=2"],
        "relative_deltas": [0.25, 0.5, 1.0], "baselines": False}


def d_const_by_hand(problem: pb.PrivacyProblem) -> float:
    """min over outputs i of sum_j p(b_j) d(i, j): the best constant output."""
    p_b = np.asarray(problem.joint, dtype=float).sum(axis=0)
    return float((problem.distortion.to_dense() @ p_b).min())


@pytest.mark.parametrize("dataset", ["synthetic:m=3", "random:n=6,seed=2"])
def test_d_const_is_the_best_constant_output(dataset: str) -> None:
    name, _, rest = dataset.partition(":")
    params = dict(kv.split("=") for kv in rest.split(",")) if rest else {}
    problem = pb.load_dataset(name, **{k: int(v) for k, v in params.items()})
    assert d_const(problem) == pytest.approx(d_const_by_hand(problem), rel=1e-12)


def test_relative_deltas_are_fractions_of_each_data_sets_d_const() -> None:
    runs = plan_runs(sweep_spec_from(dict(SPEC)))
    for dataset, params in (("synthetic", {"m": 3}), ("random", {"n": 6, "seed": 2})):
        scale = d_const_by_hand(pb.load_dataset(dataset, **params))
        mine = [r for r in runs if r.dataset == dataset and r.mechanism == "expmec"]
        pairs = sorted((r.relative_delta, r.delta) for r in mine)
        assert [f for f, _ in pairs] == [0.25, 0.5, 1.0]
        assert [d for _, d in pairs] == pytest.approx([0.25 * scale, 0.5 * scale, scale],
                                                      rel=1e-12)
    assert {r.relative_delta for r in runs} == {0.25, 0.5, 1.0}


def test_absolute_and_relative_budgets_together_and_the_fraction_is_stored(tmp_path) -> None:
    spec = {**SPEC, "mechanisms": ["expmec"], "datasets": ["synthetic:m=3"], "deltas": [2.0],
            "relative_deltas": [0.5]}
    records = pb.sweep(spec, db=tmp_path / "r.sqlite")
    by_delta = {r["delta"]: r for r in records}
    assert set(by_delta) == {2.0, 2.75}  # d_const = 5.5 on the toy example
    assert by_delta[2.75]["metrics"]["relative_delta"] == 0.5
    assert "relative_delta" not in by_delta[2.0]["metrics"]
    assert by_delta[2.75]["distortion"] <= 2.75 + 1e-9


def test_replicate_seeds_run_only_the_randomized_mechanisms_again() -> None:
    spec = sweep_spec_from({**SPEC, "seeds": [0], "replicate_seeds": [1, 2]})
    runs = plan_runs(spec)
    seeds = {m: sorted({r.seed for r in runs if r.mechanism == m}) for m in ("expmec", "pram")}
    assert seeds == {"expmec": [0], "pram": [0, 1, 2]}
    assert len(runs) == 2 * 3 * (1 + 3)  # data sets x budgets x (expmec + pram's 3 seeds)
    assert pb.get_mechanism("pram").randomized and not pb.get_mechanism("expmec").randomized


@pytest.mark.parametrize("value, message", [
    ([], "'relative_deltas' must be a non-empty list"),
    ([-0.5], "'relative_deltas' must be a non-empty list of finite numbers >= 0"),
    (["half"], "'relative_deltas' must be"),
    ([float("inf")], "'relative_deltas' must be"),
    (0.5, "'relative_deltas' must be"),
])
def test_bad_relative_deltas_name_the_file_and_the_key(tmp_path: Path, value, message) -> None:
    path = tmp_path / "s.toml"
    text = repr(value).replace("'", '"')
    path.write_text(f'mechanisms = ["expmec"]\ndatasets = ["synthetic:m=3"]\n'
                    f'relative_deltas = {text}\n')
    with pytest.raises(ValidationError, match=rf"{path.name}.*{message}"):
        load_sweep_file(path)


def test_no_budget_at_all_is_refused() -> None:
    with pytest.raises(ValidationError, match="'deltas' must be a non-empty list of numbers "
                                              r"\(or give relative_deltas\)"):
        sweep_spec_from({"mechanisms": ["expmec"], "datasets": ["synthetic:m=3"]})
    with pytest.raises(ValidationError, match="'replicate_seeds' must be a list of integers"):
        sweep_spec_from({**SPEC, "replicate_seeds": ["x"]})


def test_d_const_as_design_defines_it_solve_at_infinite_delta() -> None:
    """d_const = E[d] of ``pb.get_mechanism("constant").solve(problem, delta=inf)``;
    a mechanism that ignores Δ takes inf in ``solve``, a budgeted one still refuses it."""
    import math

    problem = pb.load_dataset("synthetic", m=4)
    res = pb.get_mechanism("constant").solve(problem, delta=math.inf)
    assert pb.metrics.expected_distortion(problem, res.mapping) == pytest.approx(d_const(problem))
    with pytest.raises(pb.ValidationError, match="finite"):
        pb.get_mechanism("expmec").solve(problem, delta=math.inf)
    with pytest.raises(pb.ValidationError, match="finite"):
        pb.get_mechanism("constant").solve(problem, delta=math.nan)


def test_run_takes_relative_budgets_beside_absolute_ones(capsys) -> None:
    """``privbench run --relative-delta F``: Δ = F x d_const, the fraction stored, and the
    d_const said under the table (the toy example: d_const = 5.5)."""
    import json

    from privbench.cli import main

    rc = main(["run", "-m", "expmec", "-d", "synthetic:m=3", "--delta", "2",
               "--relative-delta", "0.5", "--relative-delta", "1", "--json", "--no-store"])
    assert rc == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_delta = {round(r["delta"], 9): r for r in records}
    assert sorted(by_delta) == [2.0, 2.75, 5.5]
    assert by_delta[2.75]["metrics"]["relative_delta"] == 0.5
    assert by_delta[5.5]["metrics"]["relative_delta"] == 1.0
    assert "relative_delta" not in by_delta[2.0]["metrics"]
    assert main(["run", "-m", "expmec", "-d", "synthetic:m=3", "--relative-delta", "0.5",
                 "--no-store"]) == 0
    assert "d_const = 5.5" in capsys.readouterr().out


@pytest.mark.parametrize("argv, said", [
    ([], "no budget given; pass --delta X or --relative-delta F"),
    (["--relative-delta", "-0.1"], "--relative-delta must be a finite fraction >= 0"),
    (["--relative-delta", "inf"], "--relative-delta must be a finite fraction >= 0"),
])
def test_run_refuses_a_missing_or_bad_relative_budget(argv, said, capsys, tmp_path) -> None:
    from privbench.cli import main

    db = tmp_path / "r.sqlite"
    assert main(["run", "-m", "expmec", "-d", "synthetic:m=3", "--db", str(db), *argv]) == 2
    assert said in capsys.readouterr().err
    assert not db.exists()  # refused before anything ran or was stored


def test_a_spec_built_in_python_gets_its_fractions_checked_too() -> None:
    from privbench.running.plan import SweepSpec

    spec = SweepSpec(mechanisms=["expmec"], datasets=["synthetic:m=3"], deltas=[],
                     relative_deltas=[-0.5])
    with pytest.raises(ValidationError, match="relative_deltas must be a finite fraction"):
        plan_runs(spec)
