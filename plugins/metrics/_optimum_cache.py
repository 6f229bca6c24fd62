"""Certificates on I*(D) shared between runs: per process, and in the results store.

Every mapping run on the same data set (same joint, same distortion) can reuse the
certified bounds earlier runs paid for (:mod:`privbench.measures.optimum` combines them
at any distortion). The sweep's results store keeps them in a table of the metric's own,
``optimum_certificates`` (:func:`privbench.protocol.shared.sweep_store`; outside a sweep,
this process only).

A certificate read from a file is not trusted as found: each row carries an HMAC-SHA256
of its problem key and numbers under a key private to this user (``certificate.key`` in
privbench's cache folder, mode 0600), so a row forged or edited in a database someone
sent, or written on another machine, fails the check and is ignored (the metric then
certifies the run itself). Rows must also be sane: finite, 0 <= lower <= upper, lower
<= I(A;B).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import sqlite3
import time
from pathlib import Path

import numpy as np

from privbench.measures.optimum import Bound
from privbench.protocol.distortion import DENSE_LIMIT, FeatureDistortion, MatrixDistortion
from privbench.protocol.problem import PrivacyProblem
from privbench.protocol.shared import sweep_store

_TABLE = ("CREATE TABLE IF NOT EXISTS optimum_certificates (problem_key TEXT NOT NULL, "
          "distortion REAL NOT NULL, lower_bits REAL NOT NULL, upper_bits REAL NOT NULL, "
          "source TEXT, seconds REAL, created_at REAL, mac TEXT)")
#: slack of the sanity checks on a stored certificate (bits)
SANE_TOL = 1e-9
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


@functools.cache
def _secret() -> bytes:
    """This user's certificate key: created once (0600) in privbench's cache folder; a
    per-process key when the folder cannot be used (certificates then stay in-process)."""
    base = os.environ.get("PRIVBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "privbench")
    path = Path(base) / "certificate.key"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except OSError:
        pass
    return secrets.token_bytes(32)


def _mac(key: str, distortion: float, lower: float, upper: float, source: str | None) -> str:
    text = f"{key}|{float(distortion)!r}|{float(lower)!r}|{float(upper)!r}|{source or ''}"
    return hmac.new(_secret(), text.encode(), hashlib.sha256).hexdigest()


def _sane(distortion: float, lower: float, upper: float, prior_bits: float) -> bool:
    values = np.array([distortion, lower, upper], dtype=float)
    return bool(np.isfinite(values).all() and distortion >= 0 and -SANE_TOL <= lower
                and lower <= upper + SANE_TOL and lower <= prior_bits + SANE_TOL)


class OptimumCache:
    """Certificates of one problem: this process's, plus the store's when one is named."""

    def __init__(self, problem: PrivacyProblem, path: str | Path | None = None) -> None:
        self.key = problem_key(problem)
        self.prior_bits = float(problem.prior_mi_bits)
        #: rows of the store that failed the check (forged, edited, another machine's)
        self.rejected = 0
        path = path if path is not None else sweep_store()
        self.path = Path(path) if path else None

    def _connect(self) -> sqlite3.Connection | None:
        if self.path is None or self.key is None or not self.path.exists():
            return None
        try:
            conn = sqlite3.connect(self.path, timeout=30.0)
            conn.execute(_TABLE)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(optimum_certificates)")}
            if "mac" not in columns:  # a table from before certificates were signed
                conn.execute("ALTER TABLE optimum_certificates ADD COLUMN mac TEXT")
            return conn
        except sqlite3.Error:
            return None  # the cache is an optimisation: a locked or foreign file is skipped

    def certificates(self) -> list[Bound]:
        found = list(_MEMORY.get(self.key, [])) if self.key else []
        conn = self._connect()
        if conn is not None:
            with conn:
                rows = conn.execute("SELECT distortion, lower_bits, upper_bits, source, mac "
                                    "FROM optimum_certificates WHERE problem_key = ?",
                                    (self.key,)).fetchall()
            for d, lo, up, src, mac in rows:
                try:
                    d, lo, up = float(d), float(lo), float(up)
                except (TypeError, ValueError):
                    self.rejected += 1
                    continue
                if not (isinstance(mac, str) and hmac.compare_digest(
                        mac, _mac(self.key, d, lo, up, src))) or not _sane(d, lo, up, self.prior_bits):
                    self.rejected += 1
                    continue
                found.append(Bound(d, lo, up, f"cache: {src}"))
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
                d, lo, up = (float(certificate.distortion), float(certificate.lower_bits),
                             float(certificate.upper_bits))
                conn.execute("INSERT INTO optimum_certificates (problem_key, distortion, "
                             "lower_bits, upper_bits, source, seconds, created_at, mac) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (self.key, d, lo, up, certificate.source, seconds, time.time(),
                              _mac(self.key, d, lo, up, certificate.source)))
        except sqlite3.Error:
            pass
        finally:
            conn.close()
