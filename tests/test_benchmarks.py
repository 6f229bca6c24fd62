"""The asv suite's solve-time measurement in fresh processes (``benchmarks/_common``).

asv itself only smoke-runs the suite in CI; this checks the fresh-process path directly:
it imports the suite from its folder, measures, and reports a failure with the child's
error instead of a number.
"""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def common(asv_common):
    return asv_common


@pytest.mark.slow
def test_rounds_of_fresh_processes_measure_every_case(common) -> None:
    grid = [("expmec", "synthetic-m4"),
            ("optimal", "synthetic-m8"),   # optimal stops at n = 64: skips
            ("nosuch", "synthetic-m4")]    # not in the grid: fails
    seconds = common.measure_rounds(grid, rounds=2)
    assert len(seconds[grid[0]]) == 2  # one figure per round
    assert all(0.0 < x < common.SAMPLE_SECONDS for x in seconds[grid[0]])  # many solves a sample
    assert seconds[grid[1]] is None
    assert "nosuch on synthetic-m4 in a fresh process failed" in seconds[grid[2]]


def test_the_grid_covers_every_solve_time_benchmark(common) -> None:
    grid = set(common.timed_grid())
    assert ("sppm-dual", "census") in grid
    assert ("sppm-glop", "synthetic-m6") in grid
    # sppm-highs on the two LP data sets is in both grids, once
    assert len(grid) == len(common.SOLVE_MECHANISMS) * len(common.SOLVE_DATASETS) + (
        len(common.LP_BACKENDS)) * len(common.LP_DATASETS) - 2


def test_a_bad_rounds_setting_names_the_variable(common, monkeypatch) -> None:
    monkeypatch.setenv("PRIVBENCH_BENCH_PROCESSES", "three")
    with pytest.raises(ValueError, match="PRIVBENCH_BENCH_PROCESSES must be a whole number"):
        common._rounds_from_env()
    monkeypatch.setenv("PRIVBENCH_BENCH_PROCESSES", "2")
    assert common._rounds_from_env() == 2


def test_a_crashed_measuring_process_fails_the_cases_of_its_round(common, monkeypatch) -> None:
    monkeypatch.setattr(common, "_CHILD", "import sys; sys.stderr.write('boom'); sys.exit(3)")
    keys = [("expmec", "synthetic-m4"), ("sppm-highs", "synthetic-m4")]
    result = common.measure_rounds(keys, rounds=3)
    assert all(isinstance(v, str) and "in a fresh process failed" in v and "boom" in v
               for v in result.values())


def test_asv_reads_the_round_figures_as_samples_and_weighs_their_spread(common) -> None:
    """The solve-time benchmarks rely on asv treating ``{"samples", "number"}`` as timing
    samples: median as the value, and a change only when the samples differ, not just the
    medians by the factor. Checked against asv's own statistics and comparison."""
    from asv.commands.compare import _is_result_better
    from asv_runner.statistics import compute_stats

    rng = np.random.default_rng(0)
    noisy = list(0.1 * (1 + 0.4 * rng.random(12)))      # one machine's spread, 1.4x
    shifted = [1.12 * x for x in rng.permutation(noisy)]  # medians 12 % apart
    slower = [1.5 * x for x in noisy]                     # a real regression
    result = common.asv_samples(noisy)
    value, stats = compute_stats(result["samples"], result["number"])
    assert value == pytest.approx(float(np.median(noisy)))
    assert stats["repeat"] == 12

    def flagged(before: list[float], after: list[float]) -> bool:
        v1, s1 = compute_stats(before, 1)
        v2, s2 = compute_stats(after, 1)
        return _is_result_better(v1, v2, (s1, before), (s2, after), factor=1.1)

    # 12 % slower medians: beyond the factor, but within the spread: not significant
    assert float(np.median(shifted)) > 1.1 * float(np.median(noisy))
    assert not flagged(noisy, shifted)
    assert flagged(noisy, slower)        # 1.5x apart, samples separated: reported
    # a single number (no spread) is compared by the factor alone
    assert _is_result_better(1.0, 1.12, None, None, factor=1.1)
