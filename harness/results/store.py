"""The results store: SQLite, one row per run, one transaction per run.

Its layout (schema version 3: the runner's fields in ``runs``, every output in ``outputs``)
is :mod:`privbench.results.layout`.

WAL journaling and a commit per run mean that killing a sweep (even with SIGKILL)
loses at most the runs in flight; ``--resume`` skips runs whose key is already stored
with a final status (ok, invalid, skip). Runs that errored or timed out are retried.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from privbench.protocol.errors import PrivbenchError, StoreReadError, StoreWriteError
from privbench.results import layout

DEFAULT_DB = Path(".privbench") / "results.sqlite"
#: tries to open (and create) a database that other processes are creating too
OPEN_ATTEMPTS = 8
FINAL_STATUSES = ("ok", "invalid", "skip")
#: SQLite's application_id of a privbench store ("pbrs"), set when it is created
APPLICATION_ID = 0x70627273
#: the tables a privbench store held before it carried the mark (accepted without it)
LEGACY_TABLES = ("runs", "outputs", "claims", "optimum_certificates")
#: a claim not renewed for this long belongs to a sweep that died (any host); the sweep
#: that holds it renews it every :data:`HEARTBEAT_S`
CLAIM_LEASE_S = 300.0
HEARTBEAT_S = 30.0
#: how far in the future a claim's date may be (clocks of two hosts differ): a claim dated
#: later is invalid, not a lease that never runs out
CLAIM_CLOCK_SKEW_S = 60.0
#: the store's schema version (SQLite ``PRAGMA user_version``). 0: a store written before
#: privbench recorded one; 1: the runs table with the core metric's outputs as columns and
#: the others as JSON, its index and the claims table; 2: the runner's fields in ``runs``
#: and every output in ``outputs`` (:mod:`privbench.results.layout`); 3: why a metric
#: failed in the runner's field ``metric_errors`` of ``runs`` (was an output
#: ``<metric>_error``). Older stores are migrated by the first command that writes to
#: them and read in place by the others.
SCHEMA_VERSION = 3


class ResultStore:
    """``with ResultStore(path) as store: store.add(record)``."""

    def __init__(self, path: str | Path = DEFAULT_DB, *, create: bool = True) -> None:
        """Open (``create``: or create) the store at ``path``.

        A ``runs`` table without privbench's ``run_key`` and ``status`` columns belongs
        to something else: it is refused and left untouched. ``create=False`` (reading
        commands) never adds the table to a database that lacks it.
        """
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise PrivbenchError(f"results database {self.path} is a directory; expected a file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PrivbenchError(f"cannot create the folder of results database {self.path}: "
                                 f"{exc.strerror or exc} ({exc.filename})") from None
        for attempt in range(OPEN_ATTEMPTS):
            try:
                self._open(create)
                return
            except sqlite3.OperationalError as exc:
                # several processes creating one database race for the WAL switch
                if "locked" not in str(exc) or attempt == OPEN_ATTEMPTS - 1:
                    why = _why_unwritable(self.path) if create else ""
                    raise PrivbenchError(f"cannot open results database {self.path}: {exc}{why}"
                                         f"{'; choose another --db or --no-store' if why else ''}"
                                         ) from None
                time.sleep(0.05 * 2 ** attempt)
            except sqlite3.DatabaseError as exc:
                raise PrivbenchError(f"cannot open results database {self.path}: {exc} (a corrupted "
                                     "or foreign file? choose another --db)") from None

    def _open(self, create: bool) -> None:
        # reading commands open the file read-only: a store in a read-only folder, or a
        # read-only file, is readable (results, report, compare, regress)
        self.conn = sqlite3.connect(self.path, timeout=30.0) if create else _read_only(self.path)
        try:
            self._check_owner(create)
            version = self._check_version()
            if create:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self._upgrade(version)
        except BaseException:
            self.conn.close()
            raise

    def _check_version(self) -> int:
        """The store's schema version; a newer one than this privbench knows is refused."""
        version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise PrivbenchError(
                f"{self.path} was written by a newer privbench (store schema version {version}); "
                f"this privbench reads and writes schema version {SCHEMA_VERSION} and older: "
                "upgrade privbench, or choose another --db")
        return version

    def _upgrade(self, version: int) -> None:
        """Create a new store, or migrate an older one to :data:`SCHEMA_VERSION` in one
        transaction; the old file is copied beside it (``FILE.v0.bak``) until the
        migration commits, so a failure leaves it as it was, and the copy is named."""
        if version == SCHEMA_VERSION:
            return
        has_runs = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                     "name = 'runs'").fetchone() is not None
        backup = self.path.with_name(f"{self.path.name}.v{version}.bak") if has_runs else None
        if backup is not None:
            with sqlite3.connect(backup) as copy:
                self.conn.backup(copy)
            copy.close()
        try:
            self._create()
        except sqlite3.Error as exc:
            raise StoreWriteError(f"cannot migrate {self.path} from store schema version "
                                  f"{version} to {SCHEMA_VERSION}: {exc}; the store is unchanged"
                                  f"{f' (a copy: {backup})' if backup else ''}") from None
        if backup is not None:
            backup.unlink(missing_ok=True)
            self._compact()

    def _compact(self) -> None:
        """Give back the pages the old layout left free (a 517-run store of the suite:
        32 MB after the move, 16.9 MB compacted; 15.0 MB in version 1); optional: a store
        another process holds open stays as it is, and SQLite reuses the pages."""
        try:
            self.conn.execute("VACUUM")
        except sqlite3.Error:
            pass

    def check_writable(self) -> None:
        """Fail before any run is computed when the database cannot take a record.

        A write is tried (the schema version set to itself) and rolled back: ``BEGIN
        IMMEDIATE`` alone succeeds on a read-only store file in WAL mode (its lock lives in
        the shared-memory file), and the first record would only fail once computed.
        """
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
            self.conn.execute(f"PRAGMA user_version = {version}")
        except sqlite3.Error as exc:
            raise StoreWriteError(f"results database {self.path} cannot be written: {exc}"
                                  f"{_why_unwritable(self.path)}; choose another --db or "
                                  "--no-store") from None
        finally:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")

    def _check_owner(self, create: bool) -> None:
        """Refuse, without writing a byte, a database that is not privbench's: another
        application's ``application_id``, or tables of its own and no privbench mark."""
        app_id = int(self.conn.execute("PRAGMA application_id").fetchone()[0])
        if app_id not in (0, APPLICATION_ID):
            raise PrivbenchError(f"{self.path} belongs to another application (SQLite "
                                 f"application_id {app_id:#x}); choose another --db")
        tables = {row[0] for row in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")} - {"sqlite_sequence"}
        tables = {t for t in tables if not t.startswith("sqlite_stat")}
        if "runs" in tables:
            existing = {row[1] for row in self.conn.execute("PRAGMA table_info(runs)")}
            if not {"run_key", "status"} <= existing:
                raise PrivbenchError(
                    f"{self.path} has a table 'runs' that is not a privbench results table "
                    "(no run_key/status columns); choose another --db")
        elif not create:
            raise PrivbenchError(
                f"{self.path} is not a privbench results database (no table 'runs'); run "
                f"`privbench sweep` or `privbench run --db {self.path}` first")
        foreign = sorted(tables - set(LEGACY_TABLES))
        if app_id == 0 and foreign:  # stores made before the mark hold only privbench's tables
            raise PrivbenchError(
                f"{self.path} is not a privbench results database (tables "
                f"{', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''} and no "
                "privbench mark); it was left untouched; choose another --db")
        if app_id == 0 and create:
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def _create(self) -> None:
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
            if version == SCHEMA_VERSION:
                return  # another process created or migrated it meanwhile
            if layout.is_old(self.conn):
                layout.migrate(self.conn)  # versions 0 and 1: outputs move to their table
            elif version == 2:
                layout.migrate_v2(self.conn)  # failed metrics move to the runner's field
            elif not self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                       "name = 'runs'").fetchone():
                layout.create_runs(self.conn)
            self.conn.execute("CREATE INDEX IF NOT EXISTS runs_key ON runs(run_key, status)")
            self.conn.execute("CREATE TABLE IF NOT EXISTS claims (run_key TEXT PRIMARY KEY, "
                              "owner TEXT NOT NULL, host TEXT, pid INTEGER, claimed_at TEXT)")
            self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the store is unusable afterwards."""
        self.conn.close()

    def add(self, record: dict[str, Any], *, sweep_id: str | None = None) -> int:
        """Insert one run record in its own transaction; returns its row id."""
        row = {name: record.get(name) for name in layout.RUN_COLUMN_NAMES}
        row["sweep_id"] = sweep_id or record.get("sweep_id")
        row["created_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        for name in layout.RUN_JSON:
            row[name] = json.dumps(record.get(name) or {}, sort_keys=True, default=str)
        try:
            with self.conn:
                return layout.insert(self.conn, row, record)
        except sqlite3.Error as exc:
            raise StoreWriteError(f"could not store the run in {self.path}: {exc}") from None

    def claim(self, keys: Iterable[str], owner: str,
              fingerprints: dict[str, str | None] | None = None, *,
              steal: bool = False) -> list[str]:
        """Claim the runs of ``keys`` that are neither done nor claimed by a live process,
        in one transaction, so that concurrent ``--resume`` sweeps split the work instead
        of both running it.

        With ``fingerprints`` (run key -> fingerprint of the code that would run it) a run
        counts as done only when a final row carries the same fingerprint: a row made by
        other code is stale and is claimed again. A claim is taken over when its process is
        dead (same host) or its lease ran out (no heartbeat for :data:`CLAIM_LEASE_S`, any
        host: a killed sweep in a container whose hostname changed), its date is in the
        future (an invalid lease), or its holder is implausible (same host: a process that
        is not a Python interpreter, or that started after the claim was taken). ``steal``
        takes over every claim on ``keys`` (``--resume --steal-claims``).
        """
        host, pid = socket.gethostname(), os.getpid()
        keys = list(keys)
        wanted = set(keys)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            done = self.fresh_keys(fingerprints) if fingerprints is not None else self.done_keys()
            now = datetime.now(UTC)
            for key, c_host, c_pid, at in self.conn.execute(
                    "SELECT run_key, host, pid, claimed_at FROM claims").fetchall():
                if (steal and key in wanted) or not _honoured(c_host, c_pid, at, host, now):
                    self.conn.execute("DELETE FROM claims WHERE run_key = ?", (key,))
            stamp = now.isoformat(timespec="seconds")
            self.conn.executemany(
                "INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?, ?)",
                [(k, owner, host, pid, stamp) for k in keys if k not in done])
            mine = {r[0] for r in self.conn.execute("SELECT run_key FROM claims WHERE owner = ?",
                                                    (owner,))}
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.conn.execute("ROLLBACK") if self.conn.in_transaction else None
            raise StoreWriteError(f"cannot claim runs in {self.path}: {exc}") from None
        return [k for k in keys if k in mine]

    def fresh_keys(self, fingerprints: dict[str, str | None]) -> set[str]:
        """Keys of ``fingerprints`` stored with a final status by the same code."""
        marks = ",".join("?" for _ in FINAL_STATUSES)
        rows = self.conn.execute(
            f"SELECT DISTINCT run_key, fingerprint FROM runs WHERE status IN ({marks})",
            FINAL_STATUSES)
        return {key for key, fp in rows
                if fp is not None and key in fingerprints and fingerprints[key] == fp}

    def data_changed(self, current: dict[str, dict[str, str] | None]) -> set[str]:
        """Keys of ``current`` (run key -> the data files a run would read now, name ->
        sha256) whose last final row read other files (its ``provenance.data_files``):
        the data set was edited since, so the row is stale whatever the code."""
        wanted = {k: v for k, v in current.items() if v}
        if not wanted:
            return set()
        marks = ",".join("?" for _ in FINAL_STATUSES)
        last: dict[str, Any] = {}
        for key, prov in self.conn.execute(
                f"SELECT run_key, provenance FROM runs WHERE status IN ({marks}) ORDER BY rowid",
                FINAL_STATUSES):
            if key in wanted:
                last[key] = prov
        changed = set()
        for key, prov in last.items():
            try:
                stored = json.loads(prov or "{}").get("data_files")
            except (ValueError, AttributeError):
                stored = None
            if stored != wanted[key]:
                changed.add(key)
        return changed

    def release(self, owner: str) -> None:
        """Drop ``owner``'s claims (its runs are stored, or it is stopping).

        :raises StoreWriteError: the store cannot be written; the claims then lapse by
            themselves (their holder is gone, or their lease runs out).
        """
        try:
            with self.conn:
                self.conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))
        except sqlite3.Error as exc:
            raise StoreWriteError(
                f"cannot release this sweep's claims in {self.path}: {exc} (every run it "
                "finished is stored; the claims lapse once this process has ended, or "
                f"{CLAIM_LEASE_S / 60:g} minutes after their last renewal)") from None

    def done_keys(self, statuses: Iterable[str] = FINAL_STATUSES) -> set[str]:
        """The run keys with a stored record in one of ``statuses`` (what ``--resume`` skips)."""
        statuses = tuple(statuses)
        marks = ",".join("?" for _ in statuses)
        rows = self.conn.execute(
            f"SELECT DISTINCT run_key FROM runs WHERE status IN ({marks})", statuses
        )
        return {r[0] for r in rows}

    def frame(self, *, latest: bool = False) -> pd.DataFrame:
        """All runs as a DataFrame with JSON columns decoded (``latest``: last row per key)."""
        try:  # rowid: the order rows were stored in, even in a table without an id column
            old = layout.is_old(self.conn)  # a store opened read-only is read in place
            df = pd.read_sql_query(f"SELECT {'' if old else 'rowid AS _rowid_, '}* FROM runs "
                                   "ORDER BY rowid", self.conn)
            rows = [] if old else self.conn.execute("SELECT * FROM outputs").fetchall()
        except (sqlite3.Error, pd.errors.DatabaseError) as exc:
            raise StoreReadError(f"cannot read the runs of {self.path}: {exc} (a corrupted "
                                 "file? `sqlite3 FILE .recover` may save the rest)") from None
        before_v3 = "metric_errors" not in df  # read in place: failed metrics in outputs
        if old:
            df = layout.read_old(_decode_json(df, self.path, (*layout.RUN_JSON, "metrics")))
        else:
            df, bad = layout.attach_outputs(df, rows)
            df = _decode_json(df, self.path, layout.RUN_JSON,
                              set(df.index[df["_rowid_"].isin(bad)])).drop(columns="_rowid_")
        if before_v3:
            df = layout.read_v2(df)
        if latest and not df.empty:
            df = df.drop_duplicates("run_key", keep="last").reset_index(drop=True)
        return df

    def count(self) -> int:
        """Number of stored rows (every attempt of every run)."""
        return int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


class ClaimHeartbeat:
    """Renew ``owner``'s claims every :data:`HEARTBEAT_S` from a daemon thread with its own
    connection, so that a run longer than the lease keeps its claim."""

    def __init__(self, path: str | Path, owner: str) -> None:
        self.path, self.owner = Path(path), owner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="privbench-claims", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                conn = sqlite3.connect(self.path, timeout=5.0)
                with conn:
                    conn.execute("UPDATE claims SET claimed_at = ? WHERE owner = ?",
                                 (datetime.now(UTC).isoformat(timespec="seconds"), self.owner))
                conn.close()
            except sqlite3.Error:
                continue  # busy: the next beat renews it

    def __enter__(self) -> ClaimHeartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def open_existing(path: str | Path) -> ResultStore:
    """Open a store that must already exist (reports, exports)."""
    p = Path(path)
    if not p.is_file():
        raise PrivbenchError(f"no results database at {p}; run `privbench sweep` or `privbench run --db {p}` first")
    return ResultStore(p, create=False)


def _decode_json(df: pd.DataFrame, path: Path, names: tuple[str, ...],
                 bad: set[int] | None = None) -> pd.DataFrame:
    """JSON columns ``names`` decoded; a row whose JSON is damaged (or one of ``bad``, by
    position) is left out, and said so on stderr (naming the row ids), so that one bad row
    does not block every reading command."""
    bad = set(bad or ())
    for name in names:
        if name not in df:
            df[name] = [{} for _ in range(len(df))]
            continue
        decoded = []
        for pos, text in enumerate(df[name]):
            try:
                value = json.loads(text) if isinstance(text, str) and text else {}
            except ValueError:
                value = None
            if not isinstance(value, dict):
                value = {}
                bad.add(pos)
            decoded.append(value)
        df[name] = decoded
    if bad:
        ids = df["id"].iloc[sorted(bad)].tolist() if "id" in df else sorted(bad)
        import sys
        print(f"privbench: skipped {len(bad)} row(s) of {path} whose JSON fields are damaged "
              f"(id {', '.join(map(str, ids[:10]))}{', ...' if len(ids) > 10 else ''})",
              file=sys.stderr)
        df = df.drop(df.index[sorted(bad)]).reset_index(drop=True)
    return df


def _why_unwritable(path: Path) -> str:
    """Why the file system keeps privbench from writing the store ``path``, as a clause for
    an error message (`` (the file is read-only)``), or "" when it does not say."""
    folder = path.parent
    if not folder.is_dir():
        return f" (its folder {folder} does not exist)"
    if path.exists() and not os.access(path, os.W_OK):
        return f" (the file {path} is read-only)"
    if not os.access(folder, os.W_OK | os.X_OK):
        return (f" (its folder {folder} is not writable: SQLite creates the store, its "
                "write-ahead log and its shared-memory file there)")
    return ""


def _read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection: ``mode=ro``, or, where SQLite cannot even create its shared
    memory file (a WAL store in a read-only folder), ``immutable=1`` (nobody can write
    there either; a write-ahead log left by a killed writer is then not read)."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30.0)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=30.0)


def _expired(claimed_at: str | None, now: datetime) -> bool:
    """Whether a claim's lease ran out or was never valid: unreadable, or dated more
    than :data:`CLAIM_CLOCK_SKEW_S` in the future (year 9999 is no lease)."""
    try:
        at = datetime.fromisoformat(str(claimed_at))
    except (ValueError, TypeError):
        return True
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    age = (now - at).total_seconds()
    return age > CLAIM_LEASE_S or age < -CLAIM_CLOCK_SKEW_S


def _honoured(c_host: str | None, c_pid: int | None, at: str | None, host: str,
              now: datetime) -> bool:
    """A claim holds while its lease is fresh and, on this host, its holder plausible."""
    if _expired(at, now):
        return False
    return c_host != host or _plausible(c_pid, at)


def _plausible(pid: int | None, claimed_at: str | None) -> bool:
    """Whether process ``pid`` (this host) could be the sweep that took a claim at
    ``claimed_at``: alive, a Python interpreter, started before the claim (Linux: from
    /proc; elsewhere alive is enough)."""
    if not _alive(pid):
        return False
    proc = Path(f"/proc/{int(pid)}")  # type: ignore[arg-type]
    try:
        cmd = (proc / "cmdline").read_bytes().split(b"\0")[0]
        stat_fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
    except (OSError, IndexError, StopIteration, ValueError):
        return True
    if b"python" not in Path(cmd.decode("utf-8", "replace")).name.encode() and b"privbench" not in cmd:
        return False
    started = boot + int(stat_fields[19]) / os.sysconf("SC_CLK_TCK")
    try:
        at = datetime.fromisoformat(str(claimed_at))
    except (ValueError, TypeError):
        return False
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return started <= at.timestamp() + 2.0  # the claim is stamped in whole seconds


def _alive(pid: int | None) -> bool:
    """Whether process ``pid`` (on this host) still runs."""
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
