"""What metrics cost: every record says what each metric took, and a user can switch a
default metric off for a run (``--no-metric``) or a sweep (``skip_metrics``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privbench.cli import main
from privbench.host.manager import get_host
from privbench.results.store import ResultStore
from privbench.running.fingerprint import used_plugins
from privbench.running.plan import SweepSpec, plan_runs
from privbench.running.runner import execute_run
from privbench.running.specs import RunSpec

OPTIMUM_OUTPUTS = ("optimum_lower_bits", "optimum_upper_bits", "excess_mi_bits_max")


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_every_metric_that_ran_has_its_seconds() -> None:
    record = execute_run(RunSpec("expmec", "synthetic", 1.0, dataset_params={"m": 4}))
    seconds = record["metrics"]["metric_seconds"]
    applicable = {name for name, cls in get_host().metrics().items() if cls.default}
    assert {"leakage", "distortion", "optimum"} <= set(seconds) <= applicable
    assert all(isinstance(t, float) and t >= 0 for t in seconds.values())
    assert "metrics_skipped" not in record["metrics"]
    # a metric that did not apply (records attacks on a mapping run) has no entry
    assert "e_utility" not in seconds


def test_a_skipped_metric_leaves_no_output_and_is_named() -> None:
    spec = RunSpec("expmec", "synthetic", 1.0, dataset_params={"m": 4}, skip_metrics=("optimum",))
    record = execute_run(spec)
    assert record["status"] == "ok" and record["mi_bits"] is not None
    assert not any(k in record["metrics"] for k in OPTIMUM_OUTPUTS)
    assert "optimum" not in record["metrics"]["metric_seconds"]
    assert record["metrics"]["metrics_skipped"] == ["optimum"]
    assert ("metric", "optimum") not in used_plugins(spec)  # not part of its fingerprint
    assert ("metric", "optimum") in used_plugins(RunSpec("expmec", "synthetic", 1.0))
    assert RunSpec.from_dict(spec.to_dict()) == spec


def test_run_no_metric_in_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "-m", "expmec", "-d", "synthetic:m=4", "--delta", "1", "--no-store"]
    assert main([*args, "--json", "--no-metric", "optimum", "--no-metric", "local_dp"]) == 0
    (line,) = _json_lines(capsys.readouterr().out)
    assert line["metrics"]["metrics_skipped"] == ["local_dp", "optimum"]
    assert "optimum_lower_bits" not in line["metrics"] and "ldp_epsilon" not in line["metrics"]
    assert set(line["metrics"]["metric_seconds"]) >= {"leakage", "distortion"}
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps at the terminal's width
    assert "metrics took" in out and "optimum" in out and "--no-metric NAME" in out


@pytest.mark.parametrize(("extra", "named"), [
    (["--no-metric", "optimumm"], "optimumm"),
    (["--no-metric", "optimum", "-M", "optimum"], "optimum"),
])
def test_run_refuses_a_bad_switch_before_anything_runs(extra: list[str], named: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.sqlite"
    code = main(["run", "-m", "expmec", "-d", "synthetic:m=4", "--delta", "1", "--db", str(db),
                 *extra])
    assert code == 2
    assert named in capsys.readouterr().err
    assert not db.exists()  # refused at plan time: nothing stored, no store created


def test_sweep_skip_metrics_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('mechanisms = ["expmec"]\ndatasets = ["synthetic:m=3"]\ndeltas = [0.5, 2.0]\n'
                    'skip_metrics = ["optimum"]\nbaselines = false\n')
    db = tmp_path / "r.sqlite"
    assert main(["sweep", str(spec), "--db", str(db)]) == 0
    with ResultStore(db, create=False) as store:
        rows = list(store.frame()["metrics"])
    assert len(rows) == 2
    for m in rows:
        assert m["metrics_skipped"] == ["optimum"] and "optimum_lower_bits" not in m
        assert "optimum" not in m["metric_seconds"] and "leakage" in m["metric_seconds"]
    spec.write_text('mechanisms = ["expmec"]\ndatasets = ["synthetic:m=3"]\ndeltas = [0.5]\n'
                    'skip_metrics = ["no_such_metric"]\n')
    assert main(["sweep", str(spec), "--db", str(tmp_path / "other.sqlite")]) == 2
    assert "no_such_metric" in capsys.readouterr().err
    spec.write_text('mechanisms = ["expmec"]\ndatasets = ["synthetic:m=3"]\ndeltas = [0.5]\n'
                    'skip_metrics = "optimum"\n')  # one name is a list of one
    assert main(["sweep", str(spec), "--dry-run"]) == 0


def test_plan_carries_the_switch_into_every_run() -> None:
    runs = plan_runs(SweepSpec(mechanisms=["expmec", "identity"], datasets=["synthetic:m=3"],
                               deltas=[0.5], skip_metrics=["optimum", "optimum"]))
    assert [r.skip_metrics for r in runs] == [("optimum",), ("optimum",)]
