"""Every promise is checked by the runner: a mechanism declares what it
guarantees (``promises``), the runner measures it on the returned mapping with one
tolerance and marks a breach ``invalid`` with the measured value; ``lip_optimal`` meets its
ε at every ε it accepts, up to 1e308."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main
from privbench.measures import notions
from privbench.measures.promises import PROMISE_TOL, kept

FAST = ("--no-metric", "optimum", "--no-metric", "mapping_behaviour")


def run_json(capsys, *args: str) -> list[dict]:
    capsys.readouterr()
    main(["run", "--json", *args, *FAST])
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


@pytest.mark.parametrize("what, status, needle", [
    ("lip", "invalid", "measured lip_epsilon = inf nats > 0.5"),
    ("independent", "invalid", "measured mi_bits = 1 bits > 0"),
    ("unknown", "invalid", "promise 'smoothness' is unknown"),
    ("not_dict", "invalid", "promises() returned list"),
    ("keeps", "ok", None),
])
def test_a_broken_promise_makes_the_run_invalid_with_the_measured_value(
        hostile, capsys, what, status, needle) -> None:
    (rec,) = run_json(capsys, "-m", f"hostile_promise:what={what}", "-d", "synthetic:m=1",
                      "--delta", "0.5")
    assert rec["status"] == status, rec
    if needle:
        assert needle in rec["error"], rec["error"]
    if what in ("lip", "independent", "keeps"):
        promised = rec["metrics"]["promises"]
        assert all(p["kept"] == (status == "ok") for p in promised.values()), promised


def test_one_tolerance_for_every_promise() -> None:
    assert kept(1.0 + 0.9 * PROMISE_TOL, 1.0) and not kept(1.0 + 1.1 * PROMISE_TOL, 1.0)
    assert kept(0.9e-9, 0.0) and not kept(1.1e-9, 0.0)
    assert kept(1e300 * (1 + 0.9e-9), 1e300) and not kept(math.inf, 1e308)
    assert not kept(math.nan, 1.0)


def _determined() -> pb.PrivacyProblem:
    """Profiles that each determine A but one: the identity has LIP ε = inf, and the LP's
    optimum at a large ε leaves W(b̂|a) below any solver tolerance."""
    rng = np.random.default_rng(4)
    joint = np.zeros((2, 12))
    joint[0, :6] = rng.uniform(1, 5, 6)
    joint[1, 6:] = rng.uniform(1, 5, 6)
    joint[:, 5] = [3.0, 2.0]
    D = (np.arange(12)[:, None] != np.arange(12)[None, :]).astype(float)
    return pb.PrivacyProblem.from_arrays(joint=joint / joint.sum(), distortion=D)


@pytest.mark.parametrize("notion", ["lip", "ldp"])
def test_lip_optimal_meets_its_epsilon_at_every_epsilon(notion) -> None:
    problem = _determined()
    measure = notions.lip_epsilon if notion == "lip" else notions.ldp_epsilon_private
    for eps in (0.0, 1e-6, 0.5, 3.0, 16.0, 20.0, 40.0, 800.0, 1e308):
        mech = pb.get_mechanism("lip_optimal", notion=notion, lp_backend="highs")
        res = mech.solve(problem, delta=eps)
        value = measure(problem, res.mapping)
        assert kept(value, eps), (notion, eps, value, res.stats["repair_theta"])
        # the repair only mends solver tolerances: a hair of V, never V itself
        assert res.stats["repair_theta"] < 1e-4, (notion, eps, res.stats["repair_theta"])
        assert res.stats["epsilon_solved"] == min(eps, 500.0)


@pytest.mark.parametrize("notion", ["lip", "ldp"])
def test_the_runner_stores_lip_optimal_ok_at_large_epsilon(capsys, notion) -> None:
    recs = run_json(capsys, "-m", f"lip_optimal:notion={notion}", "-d", "synthetic:m=3",
                    "--delta", "16", "--delta", "1e308")
    name = "lip_epsilon" if notion == "lip" else "ldp_epsilon_private"
    assert [r["status"] for r in recs] == ["ok", "ok"], [r["error"] for r in recs]
    assert all(r["metrics"]["promises"][name]["kept"] is True for r in recs)


@pytest.mark.realdata
def test_lip_optimal_on_movielens_meets_large_epsilons(real_data_dir) -> None:
    problem = pb.load_dataset("movielens", data_dir=real_data_dir)
    for eps in (16.0, 40.0, 1e308):
        res = pb.get_mechanism("lip_optimal").solve(problem, delta=eps)
        assert kept(notions.lip_epsilon(problem, res.mapping), eps), eps
        assert 0 < res.stats["repair_theta"] < 1e-4  # it was needed, and was small


def _line_of_six() -> pb.PrivacyProblem:
    """tests/test_catalogue_mechanisms.py's hand problem: six profiles, users 3,1,1,1,1,3."""
    import pandas as pd

    joint = np.array([[3, 1, 0, 0, 0, 0], [0, 0, 1, 1, 1, 3]], dtype=float)
    symbol = np.repeat(np.arange(6), [3, 1, 1, 1, 1, 3])
    private = np.repeat([0, 0, 1, 1, 1, 1], [3, 1, 1, 1, 1, 3])
    codes = np.arange(6)[:, None]
    return pb.PrivacyProblem.from_arrays(
        joint, pb.FeatureDistortion(codes.astype(float), "l1"),
        records=pd.DataFrame({"private": private, "symbol": symbol}),
        coding=pb.ProfileCoding([list(range(6))], codes, codes[symbol]))


def test_k_anonymity_is_measured_on_the_mappings_cells() -> None:
    from privbench.measures.promises import broken_promises

    problem = _line_of_six()
    mech = pb.get_mechanism("mondrian", k=3)
    res = mech.solve(problem, 0.0)
    report, broken = broken_promises(mech.promises(0.0), problem, res.mapping, {})
    assert not broken and report["smallest_cell_users"]["measured"] == 5.0  # cells {0,1,2}, {3,4,5}
    # the identity joins nothing: a cell of one user breaks k = 3
    report, broken = broken_promises({"smallest_cell_users": 3.0}, problem, np.eye(6), {})
    assert report["smallest_cell_users"]["measured"] == 1.0
    assert broken and "measured smallest_cell_users = 1 users < 3" in broken[0]
    # ten users cannot be 11-anonymous: mondrian's one cell is short of its promise
    mech = pb.get_mechanism("mondrian", k=11)
    res = mech.solve(problem, 0.0)
    assert broken_promises(mech.promises(0.0), problem, res.mapping, {})[1]
    # users=N without records: the prior's mass per cell, k/N
    bare = pb.PrivacyProblem.from_arrays(problem.joint, problem.distortion, coding=problem.coding)
    mech = pb.get_mechanism("mondrian", k=3, users=10)
    res = mech.solve(bare, 0.0)
    promised = mech.promises(0.0)
    assert promised == {"smallest_cell_mass": 0.3}
    assert not broken_promises(promised, bare, res.mapping, {})[1]
    # a cell with no user at all (a profile nobody has, an output nothing reaches) is no cell
    from privbench.measures.promises import _cell_sizes

    assert _cell_sizes(np.array([0.0, 2.0, 3.0]), np.eye(3)) == 2.0
