"""``privbench regress``: exit 1 exactly when something got worse beyond its threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from privbench.cli import main
from privbench.results.store import ResultStore

BASE = {"mechanism": "sppm", "dataset": "synthetic", "params": {"lp_backend": "highs"},
        "dataset_params": {"m": 3}, "seed": 0, "status": "ok", "error": None,
        "mi_bits": 0.5, "prior_mi_bits": 1.0, "distortion": 0.25, "runtime_s": 1.0,
        "gap_bits": 1e-6, "n": 8, "metrics": {}}


def record(delta: float = 0.5, **changes: Any) -> dict[str, Any]:
    rec = {**BASE, "delta": delta, "run_key": f"sppm[lp_backend=highs]|synthetic[m=3]|"
           f"delta={delta!r}|seed=0"}
    rec.update(changes)
    return rec


def store(path: Path, *records: dict[str, Any], sweep_id: str = "s") -> Path:
    with ResultStore(path) as s:
        for rec in records:
            s.add(rec, sweep_id=sweep_id)
    return path


def regress(*args: str | Path) -> int:
    return main(["regress", *map(str, args)])


def changes(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


@pytest.fixture
def base_db(tmp_path: Path) -> Path:
    return store(tmp_path / "base.sqlite", record(0.5), record(1.0, mi_bits=0.2))


def test_identical_stores_pass(tmp_path: Path, base_db: Path, capsys) -> None:
    new = store(tmp_path / "new.sqlite", record(0.5), record(1.0, mi_bits=0.2))
    assert regress(base_db, new) == 0
    assert "no change beyond the thresholds" in capsys.readouterr().out


def test_table_shows_full_run_keys(tmp_path: Path, base_db: Path, capsys, monkeypatch) -> None:
    """Run keys contain [params]; rich must not eat them as markup."""
    monkeypatch.setenv("COLUMNS", "200")
    new = store(tmp_path / "new.sqlite", record(0.5, mi_bits=0.9), record(1.0, mi_bits=0.2))
    assert regress(base_db, new) == 1
    assert "sppm[lp_backend=highs]|synthetic[m=3]|delta=0.5" in capsys.readouterr().out


@pytest.mark.parametrize(("field", "value"), [
    ("mi_bits", 0.51),            # leaks 0.01 bit more
    ("gap_bits", 0.01),           # weaker certificate
    ("gap_bits", None),           # certificate lost
    ("distortion", 0.26),         # 4% more distortion
    ("runtime_s", 2.1),           # more than twice as slow (one sample a side)
    ("status", "error"),          # stopped working
])
def test_worse_is_flagged(tmp_path: Path, base_db: Path, capsys, field: str, value: Any) -> None:
    new = store(tmp_path / "new.sqlite", record(0.5, **{field: value}), record(1.0, mi_bits=0.2))
    assert regress(base_db, new, "--json") == 1
    (change,) = changes(capsys)
    assert change["quantity"] == field and change["verdict"] == "worse"
    assert change["run_key"].endswith("delta=0.5|seed=0")


@pytest.mark.parametrize(("field", "value", "flag"), [
    ("mi_bits", 0.50009, None),        # within the default 1e-4 bits
    ("mi_bits", 0.51, "--mi-tol=0.02"),
    ("distortion", 0.2501, None),      # 0.04%: within 0.1%
    ("runtime_s", 1.4, None),          # x1.4 < 1.5
    ("runtime_s", 100.0, "--no-runtime"),
])
def test_within_thresholds_passes(tmp_path: Path, base_db: Path, field: str, value: Any,
                                  flag: str | None) -> None:
    new = store(tmp_path / "new.sqlite", record(0.5, **{field: value}), record(1.0, mi_bits=0.2))
    assert regress(base_db, new, *([flag] if flag else [])) == 0


def test_tiny_runs_are_not_flagged_for_noise(tmp_path: Path) -> None:
    base = store(tmp_path / "a.sqlite", record(runtime_s=0.001))
    new = store(tmp_path / "b.sqlite", record(runtime_s=0.01))  # x10, but 9 ms
    assert regress(base, new) == 0
    assert regress(base, new, "--runtime-min=0") == 1


def test_improvements_pass_and_are_listed_with_all(tmp_path: Path, base_db: Path, capsys) -> None:
    new = store(tmp_path / "new.sqlite", record(0.5, mi_bits=0.4, runtime_s=0.1),
                record(1.0, mi_bits=0.2))
    assert regress(base_db, new, "--json") == 0
    assert changes(capsys) == []
    assert regress(base_db, new, "--json", "--all") == 0
    assert {(c["quantity"], c["verdict"]) for c in changes(capsys)} == {
        ("mi_bits", "better"), ("runtime_s", "better")}


def test_missing_runs_fail_only_when_asked(tmp_path: Path, base_db: Path, capsys) -> None:
    new = store(tmp_path / "new.sqlite", record(0.5))
    assert regress(base_db, new, "--json") == 0
    (change,) = changes(capsys)
    assert change["verdict"] == "missing"
    assert regress(base_db, new, "--fail-on-missing") == 1


def test_two_sweeps_in_one_store(tmp_path: Path) -> None:
    db = store(tmp_path / "one.sqlite", record(0.5), record(1.0), sweep_id="before")
    store(db, record(0.5, mi_bits=0.6), record(1.0), sweep_id="after")
    assert regress(db, "--base-sweep", "before", "--new-sweep", "after") == 1
    assert regress(db, "--base-sweep", "after", "--new-sweep", "before") == 0


def test_previous_against_latest_in_one_store(tmp_path: Path, capsys) -> None:
    db = store(tmp_path / "one.sqlite", record(0.5), record(1.0))
    store(db, record(0.5), record(1.0, distortion=0.5))
    assert regress(db, "--json") == 1
    (change,) = changes(capsys)
    assert change["quantity"] == "distortion" and change["base"] == 0.25


def test_a_real_sweep_run_twice_is_unchanged(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('mechanisms = ["expmec", "identity"]\ndatasets = ["synthetic:m=3"]\n'
                    "deltas = [0.5, 2.0]\n")
    db = tmp_path / "r.sqlite"
    for _ in range(2):
        assert main(["sweep", str(spec), "--db", str(db)]) == 0
    assert regress(db, "--no-runtime") == 0


@pytest.mark.parametrize("args", [
    ["missing.sqlite"],
    ["{base}", "--base-sweep", "s"],
    ["{base}", "--base-sweep", "nope", "--new-sweep", "s"],
    ["{base}", "--runtime-factor", "0.5"],
    ["{base}", "--runtime-factor-single", "0.9"],
    ["{base}"],  # every run stored once: nothing to compare
])
def test_bad_requests_exit_2(tmp_path: Path, base_db: Path, capsys, args: list[str]) -> None:
    assert regress(*(a.format(base=base_db) for a in args)) == 2
    assert "privbench regress: error:" in capsys.readouterr().err


def _timed(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    return record(runtime_s=ordered[len(ordered) // 2], metrics={"runtime_samples_s": samples})


def test_overlapping_repeat_samples_are_noise_not_a_regression(tmp_path: Path) -> None:
    base = store(tmp_path / "a.sqlite", _timed([1.0, 1.1, 3.2]))
    new = store(tmp_path / "b.sqlite", _timed([1.0, 1.7, 1.8]))  # median x1.55, samples overlap
    assert regress(base, new) == 0
    slower = store(tmp_path / "c.sqlite", _timed([3.3, 3.4, 3.5]))  # every sample slower
    assert regress(base, slower) == 1


def test_the_noise_floor_is_a_tenth_of_a_second(tmp_path: Path) -> None:
    base = store(tmp_path / "a.sqlite", record(runtime_s=0.1))
    assert regress(base, store(tmp_path / "b.sqlite", record(runtime_s=0.19))) == 0  # x1.9, 90 ms
    assert regress(base, store(tmp_path / "c.sqlite", record(runtime_s=0.25))) == 1


def test_a_single_sample_must_be_twice_as_slow(tmp_path: Path) -> None:
    """One timed sample a side cannot show the noise: the toy sweep's SPPM run measured
    0.22 s, then 0.40 s (x1.83) under load on identical code. Three a side can."""
    base = store(tmp_path / "a.sqlite", _timed([0.22]))
    assert regress(base, store(tmp_path / "b.sqlite", _timed([0.40]))) == 0
    assert regress(base, store(tmp_path / "c.sqlite", _timed([0.45]))) == 1  # x2.05
    assert regress(base, store(tmp_path / "d.sqlite", _timed([0.40])),
                   "--runtime-factor-single", "1.5") == 1
    three = store(tmp_path / "e.sqlite", _timed([0.21, 0.22, 0.23]))
    assert regress(three, store(tmp_path / "f.sqlite", _timed([0.38, 0.40, 0.41]))) == 1


def test_the_comparison_is_a_library_function() -> None:
    """``privbench.results.regression`` compares without the CLI: thresholds decide."""
    from privbench.results.regression import Thresholds, compare_rows

    base = {"status": "ok", "mi_bits": 0.10, "gap_bits": 1e-4, "distortion": 1.0, "runtime_s": 1.0}
    new = {**base, "mi_bits": 0.1002, "distortion": 0.5, "runtime_s": 2.5}
    changes = {c.quantity: c.verdict for c in compare_rows("k", base, new, Thresholds())}
    assert changes == {"mi_bits": "worse", "distortion": "better", "runtime_s": "worse"}
    assert compare_rows("k", base, new, Thresholds(mi_bits=1e-3, runtime_factor_single=3.0)) \
        [0].quantity == "distortion"
    lost = compare_rows("k", base, {**base, "status": "error"}, Thresholds())
    assert [(c.quantity, c.verdict) for c in lost] == [("status", "worse")]
