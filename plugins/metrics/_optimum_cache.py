"""Certificates on I*(D) shared between runs: per process, and in the results store.

Every mapping run on the same data set (same joint, same distortion) can reuse the
certified bounds earlier runs paid for (:mod:`privbench.protocol.optimum` combines them
at any distortion). The sweep's results store keeps them in a table of the metric's own,
``optimum_certificates`` (:func:`privbench.protocol.shared.sweep_store`; outside a sweep,
this process only).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

import numpy as np

from privbench.protocol.distortion import DENSE_LIMIT, FeatureDistortion, MatrixDistortion
from privbench.protocol.optimum import Bound
from privbench.protocol.problem import PrivacyProblem
from privbench.protocol.shared import sweep_store

_TABLE = ("CREATE TABLE IF NOT EXISTS optimum_certificates (problem_key TEXT NOT NULL, "
          "distortion REAL NOT NULL, lower_bits REAL NOT NULL, upper_bits REAL NOT NULL, "
          "source TEXT, seconds REAL, created_at REAL)")
#: certificates of this process, by problem key
_MEMORY: dict[str, list[Bound]] = {}
#: problem keys by the identity of the (read-only, cached) joint array; the array is kept
#: alive with its key so that its id cannot be reused
_KEYS: dict[int, tuple[np.ndarray, object, str]] = {}


def problem_key(problem: PrivacyProblem) -> str | None:
    """sha256 of the joint and the distortion; None for a distortion it cannot fingerprint."""
    cached = _KEYS.get(id(problem.joint))
    if cached is not None and cached[1] is problem.distortion:
        return cached[2]
    d = problem.distortion
    h = hashlib.sha256()
    joint = np.ascontiguousarray(problem.joint, dtype=np.float64)
    h.update(repr(joint.shape).encode())
    h.update(joint.tobytes())
    if isinstance(d, FeatureDistortion):
        h.update(f"feature:{d.metric}".encode())
        h.update(np.ascontiguousarray(d.points).tobytes())
    elif isinstance(d, MatrixDistortion) or d.n <= DENSE_LIMIT:
        h.update(b"matrix")
        h.update(np.ascontiguousarray(d.to_dense(), dtype=np.float64).tobytes())
    else:
        return None
    key = h.hexdigest()
    _KEYS[id(problem.joint)] = (problem.joint, problem.distortion, key)
    return key


class OptimumCache:
    """Certificates of one problem: this process's, plus the store's when one is named."""

    def __init__(self, problem: PrivacyProblem, path: str | Path | None = None) -> None:
        self.key = problem_key(problem)
        path = path if path is not None else sweep_store()
        self.path = Path(path) if path else None

    def _connect(self) -> sqlite3.Connection | None:
        if self.path is None or self.key is None or not self.path.exists():
            return None
        try:
            conn = sqlite3.connect(self.path, timeout=30.0)
            conn.execute(_TABLE)
            return conn
        except sqlite3.Error:
            return None  # the cache is an optimisation: a locked or foreign file is skipped

    def certificates(self) -> list[Bound]:
        found = list(_MEMORY.get(self.key, [])) if self.key else []
        conn = self._connect()
        if conn is not None:
            with conn:
                rows = conn.execute("SELECT distortion, lower_bits, upper_bits, source FROM "
                                    "optimum_certificates WHERE problem_key = ?", (self.key,))
                found += [Bound(float(d), float(lo), float(up), f"cache: {src}")
                          for d, lo, up, src in rows]
            conn.close()
        return found

    def add(self, certificate: Bound, seconds: float) -> None:
        if self.key is None:
            return
        _MEMORY.setdefault(self.key, []).append(certificate)
        conn = self._connect()
        if conn is None:
            return
        try:
            with conn:
                conn.execute("INSERT INTO optimum_certificates VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (self.key, certificate.distortion, certificate.lower_bits,
                              certificate.upper_bits, certificate.source, seconds, time.time()))
        except sqlite3.Error:
            pass
        finally:
            conn.close()
