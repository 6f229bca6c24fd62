"""Where each (output, input) pair sits in V, by sorted keys (no Python set of 10^6 ints).

V is append-only between prunes: new pairs are sorted among themselves and inserted
(O(|V|) memory moves, no re-sort), lookups are one ``searchsorted`` for a whole batch.
"""

from __future__ import annotations

import numpy as np


class PairIndex:
    """Positions of the pairs ``(rows[k], cols[k])`` of an append-only list; n symbols."""

    def __init__(self, n: int, rows: np.ndarray, cols: np.ndarray) -> None:
        self.n = int(n)
        keys = np.asarray(rows, dtype=np.int64) * self.n + np.asarray(cols, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        self._keys, self._pos = keys[order], order.astype(np.int64)

    def __len__(self) -> int:
        return int(self._keys.size)

    def add(self, rows: np.ndarray, cols: np.ndarray, start: int) -> None:
        """Pairs appended at positions ``start``, ``start + 1``, ... (none already in)."""
        keys = np.asarray(rows, dtype=np.int64) * self.n + np.asarray(cols, dtype=np.int64)
        if not keys.size:
            return
        order = np.argsort(keys, kind="stable")
        at = np.searchsorted(self._keys, keys[order])
        self._keys = np.insert(self._keys, at, keys[order])
        self._pos = np.insert(self._pos, at, start + order)

    def find(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The position of each pair, -1 where it is not in the list."""
        keys = np.asarray(rows, dtype=np.int64) * self.n + np.asarray(cols, dtype=np.int64)
        found = np.full(keys.size, -1, dtype=np.int64)
        if self._keys.size and keys.size:
            at = np.minimum(np.searchsorted(self._keys, keys), self._keys.size - 1)
            hit = self._keys[at] == keys
            found[hit] = self._pos[at[hit]]
        return found
