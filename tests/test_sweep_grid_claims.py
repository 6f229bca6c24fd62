"""Silent wrongs of a sweep's grid and its claims."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from privbench.cli import main
from privbench.running.plan import SweepSpec, plan_runs


def test_a_grid_is_deduplicated_after_normalising(tmp_path: Path) -> None:
    spec = SweepSpec(mechanisms=["sppm", "sppm", "sppm:lp_backend=highs", "identity"],
                     datasets=["synthetic:m=2", "synthetic:m=2"], deltas=[0.5, 0.5, 0.50, 1],
                     lp_backends=["highs", "highs"])
    keys = [r.key for r in plan_runs(spec, load_datasets=False)]
    assert len(keys) == len(set(keys)) == 4  # (sppm[highs], identity) x (0.5, 1.0)


def test_a_sweep_file_with_repeated_entries_stores_each_run_once(tmp_path: Path) -> None:
    spec = tmp_path / "dup.toml"
    spec.write_text('mechanisms = ["identity", "identity"]\ndatasets = ["synthetic:m=2"]\n'
                    "deltas = [0.5, 0.5, 0.50]\nbaselines = false\n")
    db = tmp_path / "r.sqlite"
    assert main(["sweep", str(spec), "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def _claim(db: Path, key: str, age_s: float) -> None:
    at = (datetime.now(UTC) - timedelta(seconds=age_s)).isoformat(timespec="seconds")
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO claims VALUES (?, 'other', 'gone-host', 1, ?)", (key, at))


def test_a_claim_of_a_dead_sweep_on_another_host_expires(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "two.toml"
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=2"]\ndeltas = [0.5, 1]\n'
                    "baselines = false\n")
    db = tmp_path / "r.sqlite"
    keys = [line for line in _dry_run(spec, capsys)]
    from privbench.results.store import ResultStore

    ResultStore(db).close()
    _claim(db, keys[0], age_s=3600)  # a container killed an hour ago
    _claim(db, keys[1], age_s=5)     # a sweep alive elsewhere
    assert main(["sweep", str(spec), "--db", str(db), "--resume"]) == 0
    assert "1 claimed by another sweep, 1 to run" in capsys.readouterr().err
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT run_key FROM runs")] == [keys[0]]


def _dry_run(spec: Path, capsys) -> list[str]:
    assert main(["sweep", str(spec), "--dry-run"]) == 0
    return capsys.readouterr().out.split()


def test_a_running_sweep_renews_its_claims(tmp_path: Path, monkeypatch) -> None:
    import time

    from privbench.results import store as store_module

    monkeypatch.setattr(store_module, "HEARTBEAT_S", 0.05)
    db = tmp_path / "r.sqlite"
    with store_module.ResultStore(db) as store:
        _claim(db, "k", age_s=3600)
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE claims SET owner = 'me'")
        with store_module.ClaimHeartbeat(store.path, "me"):
            time.sleep(0.5)
        assert store.claim(["k"], owner="someone-else") == []  # renewed: not expired
