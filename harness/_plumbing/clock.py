"""CPU time spent for this process, helper processes included.

``time.process_time()`` sees this process's threads only. A plugin that does its work
in a helper process (the OR-Tools LP backends solve in a worker interpreter) reports
that process's CPU time here, so that a CPU-time measurement of a solve counts all the
work done for it, wherever it ran. The solve-time benchmarks read ``cpu_seconds``.
"""

from __future__ import annotations

import threading
import time

_lock = threading.Lock()
_helper_seconds = 0.0


def add_helper_cpu_seconds(seconds: float) -> None:
    """Count ``seconds`` of CPU time that a helper process spent for this process."""
    global _helper_seconds
    if seconds > 0:
        with _lock:
            _helper_seconds += float(seconds)


def helper_cpu_seconds() -> float:
    """CPU seconds that helper processes reported since this process started."""
    return _helper_seconds


def cpu_seconds() -> float:
    """This process's CPU time (all threads) plus what its helper processes reported."""
    return time.process_time() + _helper_seconds
