"""Why a metric failed is the runner's own field of a run (``metric_errors``: metric ->
reason), stored in ``runs`` and read through one path, never an output found by a name
pattern. Stores written before it (version 1 and version 2 kept the reason as an output
``<metric>_error``) read in place and migrate with every reason carried over.

tests/data/store_v2.sqlite.gz is a real version 2 store, made by main at 1578256 with the
helper plugins of tests/plugins/hostile_plugins.py: ``run -m identity -m expmec -d
synthetic:m=2 --delta 0.5 --delta 1 -M hostile_exits`` (4 runs, the metric calls
sys.exit) and ``run -m hostile_returns:what=nothing --delta 1 -M hostile_rogue`` (1 run,
the metric writes fields it may not).
"""

from __future__ import annotations

import gzip
import json
import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import privbench as pb
from privbench.cli import main
from privbench.results.store import SCHEMA_VERSION, ResultStore

DATA = Path(__file__).resolve().parent / "data"
EXITS = "PluginAbort: metric 'hostile_exits' called sys.exit(5)"
FAST = ("--no-metric", "optimum")


class Guess(pb.Metric):
    """A metric whose own output is named like the old failure pattern: an attacker's error
    probability (a value, not a failure)."""

    name = "guess"
    needs = frozenset({"mapping"})
    default = False
    outputs = (pb.Output("guess_error", "probability", "higher", "the attacker's error"),)

    def compute(self, problem, result, *, delta, seed=None):
        return {"guess_error": 0.25}


class _Plugin:
    @pb.hookimpl
    def privbench_register_metrics(self):
        return [Guess]


def _unzip(name: str, tmp_path: Path) -> Path:
    db = tmp_path / name.removesuffix(".gz")
    db.write_bytes(gzip.decompress((DATA / name).read_bytes()))
    return db


def _version(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _same_frames(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert sorted(a.columns) == sorted(b.columns)
    assert list(a["run_key"]) == list(b["run_key"])
    for col in a.columns:
        for x, y in zip(a[col], b[col], strict=True):
            same = x == y or (isinstance(x, float) and isinstance(y, float)
                              and math.isnan(x) and math.isnan(y))
            assert same, (col, x, y)


def test_an_output_named_like_an_error_is_not_a_failed_metric(host, tmp_path, capsys) -> None:
    host.register(_Plugin(), name="guess")
    db = tmp_path / "r.sqlite"
    capsys.readouterr()
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "-M", "guess",
                 "--db", str(db), *FAST]) == 0
    assert "failed" not in capsys.readouterr().err  # was: "metric guess failed on 1 run: 0.25"
    run = pb.load_runs(db).iloc[0]
    assert run["metrics"]["guess_error"] == 0.25 and run["metric_errors"] == {}
    assert main(["compare", "--db", str(db)]) == 0
    assert "failed" not in capsys.readouterr().out


def test_a_failed_metric_is_a_field_of_the_run_in_json_store_and_export(hostile, tmp_path,
                                                                        capsys) -> None:
    db, csv = tmp_path / "r.sqlite", tmp_path / "runs.csv"
    capsys.readouterr()
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "-M",
                 "hostile_exits", "--json", "--db", str(db), *FAST]) == 0
    out, err = capsys.readouterr()
    line = json.loads(out.splitlines()[-1])
    assert line["metric_errors"] == {"hostile_exits": EXITS}
    assert not any(k.endswith("_error") for k in line["metrics"])
    assert f"metric hostile_exits failed on 1 run: {EXITS}" in err
    with sqlite3.connect(db) as conn:
        assert json.loads(conn.execute("SELECT metric_errors FROM runs").fetchone()[0]) == \
            {"hostile_exits": EXITS}
        assert conn.execute("SELECT COUNT(*) FROM outputs WHERE name LIKE '%error%'"
                            ).fetchone()[0] == 0
    assert pb.load_runs(db).iloc[0]["metric_errors"] == {"hostile_exits": EXITS}
    assert main(["results", "--db", str(db), "--export", str(csv)]) == 0
    exported = pd.read_csv(csv)
    assert exported["metric_error.hostile_exits"].tolist() == [EXITS]
    assert list(exported.columns).index("metric_error.hostile_exits") < \
        list(exported.columns).index("mi_bits")  # beside the run's own fields


def test_a_version_2_store_reads_in_place_and_migrates_with_the_failures(tmp_path,
                                                                         capsys) -> None:
    db = _unzip("store_v2.sqlite.gz", tmp_path)
    assert _version(db) == 2
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT COUNT(*) FROM outputs").fetchone()[0]
        errors = conn.execute("SELECT COUNT(*) FROM outputs WHERE name LIKE '%error'"
                              ).fetchone()[0]
    assert errors == 5
    in_place = pb.load_runs(db)  # read-only: nothing written
    assert _version(db) == 2
    by_mech = dict(zip(in_place["mechanism"], in_place["metric_errors"], strict=True))
    assert by_mech["identity"] == by_mech["expmec"] == {"hostile_exits": EXITS}
    assert "may not write mi_bits" in by_mech["hostile_returns"]["hostile_rogue"]
    assert not any(k.endswith("_error") for m in in_place["metrics"] for k in m)
    capsys.readouterr()
    assert main(["compare", "--db", str(db)]) == 0
    assert "metric hostile_exits failed on 4 runs" in capsys.readouterr().out
    ResultStore(db).close()  # a writing command migrates it
    assert _version(db) == SCHEMA_VERSION == 3
    assert not (tmp_path / "store_v2.sqlite.v2.bak").exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM outputs").fetchone()[0] == before - 5
        stored = [json.loads(t) for (t,) in conn.execute("SELECT metric_errors FROM runs "
                                                         "WHERE metric_errors IS NOT NULL")]
        index = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND "
                             "name = 'runs_key'").fetchall()
    assert len(stored) == 5 and index == [("runs_key",)]
    _same_frames(pb.load_runs(db), in_place)
    assert main(["compare", "--db", str(db)]) == 0
    assert "metric hostile_exits failed on 4 runs" in capsys.readouterr().out


def test_a_version_1_store_carries_a_failed_metric_over(tmp_path) -> None:
    db = _unzip("store_v1.sqlite.gz", tmp_path)
    with sqlite3.connect(db) as conn:
        key, text = conn.execute("SELECT run_key, metrics FROM runs WHERE status = 'ok' "
                                 "ORDER BY rowid LIMIT 1").fetchone()
        metrics = json.loads(text)
        metrics["metric_seconds"]["broken"] = 0.1
        # ``lonely_error``: no metric of that name ran, so it is an output, not a failure
        metrics.update(broken_error="ValueError: x", lonely_error=0.5)
        conn.execute("UPDATE runs SET metrics = ? WHERE run_key = ?", (json.dumps(metrics), key))
    in_place = pb.load_runs(db).set_index("run_key")
    assert in_place.at[key, "metric_errors"] == {"broken": "ValueError: x"}
    assert "broken_error" not in in_place.at[key, "metrics"]
    assert in_place.at[key, "metrics"]["lonely_error"] == 0.5
    assert sum(bool(e) for e in in_place["metric_errors"]) == 1
    ResultStore(db).close()
    after = pb.load_runs(db).set_index("run_key")
    assert after.at[key, "metric_errors"] == {"broken": "ValueError: x"}
    _same_frames(after.reset_index(), in_place.reset_index())


@pytest.mark.parametrize("damaged", ["{oops", "[1, 2]"])
def test_a_version_2_store_with_damaged_metric_seconds_still_migrates(tmp_path, damaged) -> None:
    db = _unzip("store_v2.sqlite.gz", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE outputs SET json = ? WHERE run_id = 1 AND name = 'metric_seconds'",
                     (damaged,))
    ResultStore(db).close()
    assert _version(db) == 3
    with sqlite3.connect(db) as conn:  # run 1's reason stays an output; the others moved
        left = conn.execute("SELECT run_id FROM outputs WHERE name LIKE '%\\_error' ESCAPE '\\'"
                            ).fetchall()
    assert left == [(1,)]


class Halves(pb.Metric):
    """A metric that computes one of its two outputs and not the other."""

    name = "halves"
    needs = frozenset({"mapping"})
    default = False
    outputs = (pb.Output("halves_ok", "bits", "lower", "computed"),
               pb.Output("halves_broken", "bits", "lower", "not computed"))

    def compute(self, problem, result, *, delta, seed=None):
        return {"halves_ok": 0.5, "halves_broken": ZeroDivisionError("no users")}


class _HalvesPlugin:
    @pb.hookimpl
    def privbench_register_metrics(self):
        return [Halves]


def test_an_output_returned_as_an_exception_fails_alone(host, tmp_path, capsys) -> None:
    """The output whose value is an exception is left out and named in ``metric_errors``
    and on the terminal; the metric's other output is stored (before: the store kept
    ``"ZeroDivisionError('no users')"`` as the output's value, ``metric_errors`` empty)."""
    host.register(_HalvesPlugin(), name="halves")
    db = tmp_path / "r.sqlite"
    capsys.readouterr()
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "1", "-M",
                 "halves", "--db", str(db), *FAST]) == 0
    assert ("metric halves failed on 1 run: halves_broken: ZeroDivisionError: no users"
            in capsys.readouterr().err)
    run = pb.load_runs(db).iloc[0]
    assert run["metrics"]["halves_ok"] == 0.5 and "halves_broken" not in run["metrics"]
    assert run["metric_errors"] == {"halves": "halves_broken: ZeroDivisionError: no users"}
