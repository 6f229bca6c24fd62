"""Peak memory and wall-clock time of one run.

Peak memory is the rise of the process's resident set size over its value at the
start of the run, in MiB. On Linux the kernel's high-water mark (VmHWM) is reset
through ``/proc/self/clear_refs`` so it is exact and costs nothing; elsewhere a
sampling thread polls RSS every few milliseconds.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil

_MIB = 1024.0 * 1024.0


def _read_hwm_kib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class ResourceMeter:
    """``with ResourceMeter() as m: ...`` then ``m.runtime_s`` and ``m.peak_mem_mb``."""

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        self.runtime_s = 0.0
        self.peak_mem_mb = 0.0
        self._proc = psutil.Process()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._peak_rss = 0

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._peak_rss = max(self._peak_rss, self._proc.memory_info().rss)

    def __enter__(self) -> ResourceMeter:
        self._start_rss = self._proc.memory_info().rss
        self._peak_rss = self._start_rss
        self._use_hwm = _reset_hwm() and _read_hwm_kib() is not None
        if not self._use_hwm:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.runtime_s = time.perf_counter() - self._t0
        if self._use_hwm:
            self._peak_rss = max(self._peak_rss, (_read_hwm_kib() or 0) * 1024)
        else:
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
        self._peak_rss = max(self._peak_rss, self._proc.memory_info().rss)
        self.peak_mem_mb = max(0.0, (self._peak_rss - self._start_rss) / _MIB)
        #: the process's whole peak resident set during the block (not only the rise)
        self.peak_rss_mb = self._peak_rss / _MIB
