"""BLAS limited to one thread around a solver's loop of many small vector operations.

A multi-threaded OpenBLAS wakes its threads for every level-1/2 call above a small
size (a dot product of ~10,000 entries already); on a loaded 2-core machine each
wake-up costs milliseconds of waiting for a core, far more than the arithmetic
(measured: ``a @ x`` on 12,000 entries 5.9 ms wall with two BLAS threads, 0.003 ms
with one). Solvers that call BLAS thousands of times on vectors (L-BFGS-B in
``smoothed_dual``, the Frank-Wolfe iterations of SPPM, whose own pricing threads
already use the cores) run inside :func:`one_blas_thread`.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

#: (modules imported when it was made, the threadpoolctl controller): finding the
#: loaded BLAS libraries costs ~0.6 ms of CPU (~20 ms wall on a loaded machine), so the
#: controller is kept until an import may have loaded another library
_cached: tuple[int, Any] | None = None


def one_blas_thread() -> contextlib.AbstractContextManager:
    """A context in which BLAS uses one thread (threadpoolctl; a no-op without it)."""
    global _cached
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - a core dependency; kept for stripped installs
        return contextlib.nullcontext()
    if _cached is None or _cached[0] != len(sys.modules):
        _cached = (len(sys.modules), ThreadpoolController())
    return _cached[1].limit(limits=1, user_api="blas")
