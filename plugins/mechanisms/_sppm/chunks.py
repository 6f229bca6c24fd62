"""Run a per-input kernel over all inputs in chunks on a few threads.

The pricing kernels are compiled with ``nogil=True``, so Python threads run them truly
in parallel. Many small interleaved chunks (8 per thread) even out the work, which
varies from input to input. The pool starts on first use and ``close`` stops it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np


class InputChunks:
    """``run(kernel, n, min_parallel)`` calls ``kernel(lo, hi)`` over [0, n) in chunks."""

    def __init__(self, threads: int, name: str) -> None:
        self.threads = max(1, int(threads))
        self.name = name
        self._pool: ThreadPoolExecutor | None = None

    def run(self, kernel: Callable[[int, int], None], n: int, min_parallel: int) -> None:
        """One thread below ``min_parallel`` inputs (threads would cost more than they save)."""
        if self.threads == 1 or n < min_parallel:
            kernel(0, n)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.name)
        cuts = np.linspace(0, n, 8 * self.threads + 1).astype(int)
        for f in [self._pool.submit(kernel, a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]:
            f.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
