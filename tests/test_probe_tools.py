"""tools/probe_trust.py keeps working: its classifier can fail, its cases stay registered,
and a representative subset passes through the real CLI."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "probe_trust.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("probe_trust", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["probe_trust"] = module  # dataclasses look the module up while it loads
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("probe_trust", None)


def _result(probe, code=0, out="", err="", hung=False, left=0):
    return probe.Result(["run"], code, out, err, 1.0, 30.0, hung=hung, left=left)


def test_the_classifier_sees_crashes(probe) -> None:
    assert _result(probe).problem() is None
    assert _result(probe, code=2, err="privbench run: error: bad").problem() is None
    assert "traceback" in _result(probe, err="Traceback (most recent call last):\n  x\nKeyError: 1").problem()
    assert "exit -9" in _result(probe, code=-9).problem()
    assert "exit 7" in _result(probe, code=7).problem()
    assert "hung" in _result(probe, hung=True).problem()
    assert "left running" in _result(probe, left=2).problem()
    assert "noise" in _result(probe, err="Exception ignored in: <stdout>\nBrokenPipeError").problem()


def test_a_case_is_classified_with_trust_holes_first(probe) -> None:
    def echoes(c) -> None:
        c.results.append(_result(probe, code=2, err=f"bad value {probe.SECRET}"))

    def wrong(c) -> None:
        c.results.append(_result(probe))
        raise probe.Verdict("silent wrong", "mi_bits -42")

    def crashes_and_wrong(c) -> None:
        c.results.append(_result(probe, code=1, err="Traceback (most recent call last):\nX"))
        raise probe.Verdict("silent wrong", "no row")

    assert probe.run_case("t/echo", echoes)[0] == "trust hole"
    assert probe.run_case("t/wrong", wrong)[:2] == ("silent wrong", "mi_bits -42")
    assert probe.run_case("t/crash", crashes_and_wrong)[0] == "crash"
    assert probe.run_case("t/fine", lambda c: None)[0] == "ok"


def test_every_family_of_the_issue_has_cases(probe) -> None:
    names = set(probe.CASES)
    for expected in ("stale/module_plugin_edited", "stale/package_helper_edited", "stale/metric_plugin_edited",
                     "csv/leading_zero_codes", "csv/missing_keep", "csv/duplicated_header",
                     "csv/proc_self_environ", "csv/million_distinct_values", "csv/sparse_3gb_file",
                     "csv/corrupt_zip", "grid/duplicated_entries", "grid/dead_claim_from_another_host",
                     "plugins/rogue_metric", "plugins/damaged_deep_stats", "plugins/patch_numpy_process",
                     "plugins/fork", "plugins/exit_in_repr", "plugins/hook_interrupt", "plugins/reporter_exit",
                     "requests/seed_23_digits", "requests/max_mem_900", "requests/csv_sep_ab",
                     "hangs/cancel_timer", "hangs/non_daemon_thread", "hangs/sleep_at_import",
                     "signals/sigterm_process_executor", "io/closed_stdout", "io/full_disk_report",
                     "io/runs_table_without_id", "io/non_json_metrics_row", "io/corrupted_page",
                     "env/offline_on", "env/offline_maybe", "env/foreign_db", "env/forged_certificate",
                     "env/regress_text_mi_bits"):
        assert expected in names, expected
    assert len(names) >= 80


#: one case per family, the fast ones
SUBSET = ("stale/module_plugin_edited", "csv/leading_zero_codes", "csv/proc_self_environ",
          "grid/duplicated_entries", "plugins/rogue_metric", "plugins/exit_in_run",
          "plugins/damaged_self_stats", "requests/seed_23_digits", "io/non_json_metrics_row",
          "env/offline_maybe", "env/foreign_db")


@pytest.mark.slow
def test_a_representative_subset_of_the_probe_passes() -> None:
    argv = [sys.executable, str(TOOL)] + [a for name in SUBSET for a in ("--only", name)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 crash, 0 silent wrong, 0 trust hole, 0 unexpected" in out.stdout, out.stdout
    ran = {line.split()[-1] for line in out.stdout.splitlines() if line.strip().startswith("ok ")}
    assert set(SUBSET) <= ran, out.stdout  # --only matches substrings: at least these ran


TOOL4 = TOOL.with_name("probe_trust4.py")


def test_round_four_probe_keeps_its_families() -> None:
    """tools/probe_trust4.py lists its new cases in its five families."""
    out = subprocess.run([sys.executable, str(TOOL4), "--list"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    names = out.stdout.split()
    for family in ("owns/", "promises/", "stores/", "numbers/", "figures/"):
        assert sum(n.startswith(family) for n in names) >= 1, family
    assert len(names) >= 20 and not any(n.startswith(("csv/", "io/")) for n in names)


@pytest.mark.slow
def test_round_four_probe_subset_passes() -> None:
    argv = [sys.executable, str(TOOL4), "--only", "owns/figures_folder", "--only", "promises/a_liar",
            "--only", "stores/claims", "--only", "numbers/signed_zero"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "4 cases: 4 ok" in out.stdout, out.stdout[-3000:]
