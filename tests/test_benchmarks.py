"""The asv suite's solve-time measurement in fresh processes (``benchmarks/_common``).

asv itself only smoke-runs the suite in CI; this checks the fresh-process path directly:
it imports the suite from its folder, measures, and reports a failure with the child's
error instead of a number.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def common():
    spec = importlib.util.spec_from_file_location(
        "benchmarks", ROOT / "benchmarks" / "__init__.py",
        submodule_search_locations=[str(ROOT / "benchmarks")])
    package = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("benchmarks")
    sys.modules["benchmarks"] = package
    spec.loader.exec_module(package)
    import benchmarks._common as common

    yield common
    sys.modules.pop("benchmarks._common", None)
    if saved is None:
        sys.modules.pop("benchmarks", None)
    else:
        sys.modules["benchmarks"] = saved


def test_fresh_processes_measure_a_solve(common) -> None:
    seconds = common.seconds_per_solve_fresh("expmec", "synthetic-m4", "process_time",
                                             processes=2)
    assert 0.0 < seconds < common.SAMPLE_SECONDS  # several solves fit in one sample


def test_a_failing_measurement_names_the_case(common) -> None:
    with pytest.raises(RuntimeError, match="nosuch on synthetic-m4 in a fresh process failed"):
        common.seconds_per_solve_fresh("nosuch", "synthetic-m4", "process_time", processes=1)
