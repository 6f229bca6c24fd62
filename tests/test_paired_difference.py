"""The paired bootstrap of a difference: its interval is 95 % wide and bias-corrected in
the right direction (resampled differences biased upwards move the interval down)."""

from __future__ import annotations

import numpy as np
import pytest

from privbench.results.significance import paired_difference

#: paired differences biased upwards by 0.2 from the estimated difference 1.0, spread 0.1
DIFF = 1.2 + 0.1 * np.random.default_rng(12).standard_normal(100_000)


def _metrics(samples: np.ndarray, estimate: float) -> dict:
    return {"bootstrap": {"key": "same-draws", "samples": {"mi_bits": samples.tolist()},
                          "estimates": {"mi_bits": estimate}}}


def test_paired_interval_subtracts_the_bias_at_95_percent() -> None:
    """a - b has resampled differences centred at 1.2 but an estimate of 1.0: the
    bias-corrected interval is centred at 2 x 1.0 - 1.2 = 0.8 (the percentiles shifted
    by the bias once, the docstring's old claim: 1.0; the bias added: 1.4), and is
    2 x 1.96 x 0.1 wide (a 90 % interval: 2 x 1.645 x 0.1)."""
    zero = np.zeros_like(DIFF)
    diff = paired_difference(_metrics(DIFF, 1.0), _metrics(zero, 0.0), "mi_bits")
    assert diff is not None and diff.estimate == pytest.approx(1.0)
    centre = (diff.low + diff.high) / 2
    assert centre == pytest.approx(0.8, abs=5e-3)
    assert diff.high - diff.low == pytest.approx(2 * 1.96 * 0.1, abs=5e-3)
    assert diff.significant
