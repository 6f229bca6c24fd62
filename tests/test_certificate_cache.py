"""Certificates from a file are checked, and keyed by the whole problem."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main
from privbench.plugins.metrics import _optimum_cache as optimum_cache

ARGV = ["run", "-m", "expmec", "-d", "random:n=12,seed=3", "--delta", "0.2", "--json"]


@pytest.fixture(autouse=True)
def _fresh_memory():
    optimum_cache._MEMORY.clear()  # certificates of earlier tests are not this store's
    yield
    optimum_cache._MEMORY.clear()


def _run(db, capsys) -> dict:
    assert main([*ARGV, "--db", str(db)]) == 0
    (record,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    return record["metrics"]


@pytest.mark.parametrize("forgery", [
    "UPDATE optimum_certificates SET lower_bits = lower_bits + 1e-3, upper_bits = upper_bits + 1e-3",
    "UPDATE optimum_certificates SET mac = NULL",
    "UPDATE optimum_certificates SET upper_bits = lower_bits - 1",
])
def test_a_forged_certificate_in_the_store_is_not_used(tmp_path, capsys, forgery) -> None:
    db = tmp_path / "r.sqlite"
    first = _run(db, capsys)
    with sqlite3.connect(db) as conn:
        conn.execute(forgery)
    optimum_cache._MEMORY.clear()  # as if another process: only the store remembers
    second = _run(db, capsys)
    assert second["optimum_source"] != "cache"  # certified afresh
    assert second["optimum_lower_bits"] == pytest.approx(first["optimum_lower_bits"], rel=1e-6)


def test_an_intact_certificate_is_reused(tmp_path, capsys) -> None:
    db = tmp_path / "r.sqlite"
    first = _run(db, capsys)
    optimum_cache._MEMORY.clear()
    second = _run(db, capsys)
    assert second["optimum_source"] == "cache"
    assert second["optimum_lower_bits"] == first["optimum_lower_bits"]


def test_one_joint_with_two_distortions_has_two_keys() -> None:
    joint = np.array([[0.3, 0.2], [0.1, 0.4]])
    a = pb.PrivacyProblem.from_arrays(joint=joint, distortion=np.array([[0.0, 1.0], [1.0, 0.0]]))
    b = pb.PrivacyProblem.from_arrays(joint=joint, distortion=np.array([[0.0, 2.0], [2.0, 0.0]]))
    assert optimum_cache.problem_key(a) != optimum_cache.problem_key(b)
