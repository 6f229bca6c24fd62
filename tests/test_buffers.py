"""GrowingArrays keeps what was appended, in order, past many doublings."""

from __future__ import annotations

import numpy as np
import pytest

from privbench._plumbing.buffers import GrowingArrays


def test_appends_equal_concatenation_across_doublings() -> None:
    rng = np.random.default_rng(0)
    rows, vals = [np.arange(3)], [np.ones(3)]
    g = GrowingArrays(rows=rows[0], vals=vals[0])
    view_before = g.view("rows")
    for _ in range(40):
        k = int(rng.integers(0, 50))
        r, v = rng.integers(0, 99, k), rng.random(k)
        g.append(rows=r, vals=v)
        rows.append(r)
        vals.append(v)
    np.testing.assert_array_equal(g.view("rows"), np.concatenate(rows))
    np.testing.assert_array_equal(g.view("vals"), np.concatenate(vals))
    assert g.view("rows").dtype == np.int64 and g.size == sum(map(len, rows))
    np.testing.assert_array_equal(view_before, np.arange(3))  # old views stay valid


def test_mismatched_appends_are_refused() -> None:
    g = GrowingArrays(a=np.zeros(2), b=np.zeros(2))
    with pytest.raises(ValueError, match="one length"):
        g.append(a=np.zeros(1), b=np.zeros(2))
    with pytest.raises(ValueError, match="one array"):
        g.append(a=np.zeros(1))
    with pytest.raises(ValueError, match="lengths differ"):
        GrowingArrays(a=np.zeros(1), b=np.zeros(2))
