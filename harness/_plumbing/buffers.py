"""Parallel 1-D arrays that grow by appending, in buffers that double when full.

Column generation appends a few hundred entries per iteration to arrays of 10^5-10^6
(SPPM's active pairs, an LP master's columns): concatenation would copy all of them
every time; doubling copies each entry O(1) times in all.
"""

from __future__ import annotations

import numpy as np


class GrowingArrays:
    """Named arrays of one length; ``view(name)`` is the filled part (no copy)."""

    def __init__(self, **arrays: np.ndarray) -> None:
        self._data = {name: np.array(values) for name, values in arrays.items()}
        sizes = {values.size for values in self._data.values()}
        if len(sizes) > 1:
            raise ValueError(f"GrowingArrays: lengths differ: {sorted(sizes)}")
        self.size = sizes.pop() if sizes else 0

    def view(self, name: str) -> np.ndarray:
        """The filled part of array ``name``; it stays valid (unchanged) after appends."""
        return self._data[name][: self.size]

    def append(self, **values: np.ndarray) -> None:
        """Append one array per name (all names, one length)."""
        count = {np.size(v) for v in values.values()}
        if set(values) != set(self._data) or len(count) != 1:
            raise ValueError("GrowingArrays.append: one array of one length per name")
        end = self.size + count.pop()
        for name, buffer in self._data.items():
            if end > buffer.size:
                grown = np.zeros(max(end, 2 * buffer.size, 16), dtype=buffer.dtype)
                grown[: self.size] = buffer[: self.size]
                self._data[name] = buffer = grown
            buffer[self.size:end] = values[name]
        self.size = end
