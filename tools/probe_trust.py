"""Re-run issue 32's hostile cases as a new user would, and classify each outcome.

    .venv/bin/python tools/probe_trust.py               # every case; exit 1 if one is not ok
    .venv/bin/python tools/probe_trust.py --only csv/   # the cases whose name contains csv/
    .venv/bin/python tools/probe_trust.py --list

Each case runs in its own temporary folder (its own store, cache folder and HOME), calls the
real ``privbench`` command in a subprocess with a timeout, and loads hostile plugins the way
docs/writing-plugins.md tells a user (``PRIVBENCH_PLUGIN_MODULES``, the module on
``PYTHONPATH``; the plugins are ``tools/probe_trust_plugins.py``). Outcomes:

- crash: a Python traceback on stderr, an exit status other than 0/1/2/3/124/143, a hang past
  the case's timeout, or processes left running after the command returned;
- silent wrong: the command succeeded and a stored or printed value is not the expected one;
- trust hole: a secret environment value echoed, a foreign database touched, an unknown
  boolean accepted;
- unexpected: none of those, but not what the case expects either (a valid request refused);
- ok.

Every command gets ``PROBE_API_TOKEN`` (a random secret) in its environment; any output
holding it is a trust hole.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = Path(__file__).with_name("probe_trust_plugins.py")
#: exit statuses docs/cli.md and docs/reliability.md document
EXIT_CODES = frozenset({0, 1, 2, 3, 124, 143})
SECRET = "probe-secret-" + os.urandom(8).hex()
CLASSES = ("ok", "crash", "silent wrong", "trust hole", "unexpected")
#: the slow default metrics, off where a case does not need them
FAST = ("--no-metric", "optimum", "--no-metric", "mapping_behaviour")
SPEC_TAIL = 'skip_metrics = ["optimum", "mapping_behaviour"]\nbaselines = false\n'
#: address space of every command (and its workers): 8 GiB
MAX_AS_BYTES = 8 * 2**30
RUN4 = ("run", "-d", "synthetic:m=4", "--delta", "1", *FAST)


def privbench_command() -> list[str]:
    """The ``privbench`` script beside this interpreter (the venv's), else ``-m privbench``."""
    script = Path(sys.executable).with_name("privbench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "privbench"]


@dataclass
class Result:
    """One finished command."""

    args: list[str]
    code: int | None
    out: str
    err: str
    seconds: float
    timeout: float
    hung: bool = False
    left: int = 0

    def problem(self) -> str | None:
        """Why this command counts as a crash, or None."""
        if self.hung:
            return f"hung past {self.timeout:g} s: {' '.join(self.args[:4])}{_stuck_at(self.err)}"
        for stream in (self.err, self.out):
            if "Traceback (most recent call last)" in stream:
                return "traceback: " + _last_line(stream)
            if "Exception ignored" in stream:
                return "noise on exit: " + _last_line(stream)
        if self.code not in EXIT_CODES:
            return f"exit {self.code}: {_last_line(self.err)}"
        if self.left:
            return f"{self.left} process(es) left running after the command returned"
        return None


def _stuck_at(err: str) -> str:
    """Where the main thread of a hung command was, from faulthandler's dump."""
    dump = err.rpartition("Current thread")[2] or err.rpartition("Thread 0x")[2]
    frames = [line.strip() for line in dump.splitlines() if line.strip().startswith("File ")]
    return f" (main thread at {' <- '.join(frames[:3])})" if frames else ""


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "(nothing)"


class Verdict(Exception):  # noqa: N818 - raised to end a case with its class
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def expect(condition: object, kind: str, detail: str) -> None:
    """End the case as ``kind`` unless ``condition`` holds."""
    if not condition:
        raise Verdict(kind, detail)


def _session_processes(sid: int) -> list[Any]:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getsid(proc.pid) == sid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def _reap(sid: int, grace: float = 10.0) -> int:
    """Processes of the command's session still alive after ``grace`` s; killed."""
    deadline = time.monotonic() + grace
    alive = _session_processes(sid)
    while alive and time.monotonic() < deadline:
        time.sleep(0.25)
        alive = _session_processes(sid)
    for proc in alive:
        try:
            proc.kill()
        except Exception:  # noqa: BLE001, S110 - gone already
            pass
    return len(alive)


def _limited(then: Callable[[], None] | None) -> Callable[[], None]:
    """Cap the command's address space (:data:`MAX_AS_BYTES`), so that a case that makes
    privbench read gigabytes fails alone instead of taking the shared machine's memory;
    SIGINT back to its default."""
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MAX_AS_BYTES, MAX_AS_BYTES))
        # a Ctrl-C reaches the command as from a terminal, even when the probe runs as a
        # background job (which inherits SIGINT ignored)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if then is not None:
            then()
    return limit


class Case:
    """A case's folder, environment and commands."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.results: list[Result] = []
        home = tmp / "home"
        home.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PRIVBENCH_")}
        self.env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
                        PRIVBENCH_CACHE_DIR=str(tmp / "cache"), PRIVBENCH_OFFLINE="1",
                        PYTHONPATH=str(tmp), PROBE_API_TOKEN=SECRET, COLUMNS="200",
                        PYTHONFAULTHANDLER="1")
        self.env.pop("PYTHONWARNINGS", None)

    def plugin(self, module: str = "probe_hostile", source: str | None = None) -> None:
        """Write a plugin module into the folder and register it as a user would."""
        path = self.tmp / f"{module}.py"
        path.write_text(source if source is not None else HOSTILE.read_text())
        loaded = [m for m in self.env.get("PRIVBENCH_PLUGIN_MODULES", "").split(",") if m]
        self.env["PRIVBENCH_PLUGIN_MODULES"] = ",".join([*loaded, module])

    def write(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def spec(self, mechanisms: list[str], deltas: list[float], datasets: tuple[str, ...] = ("synthetic:m=4",),
             extra: str = "", name: str = "spec.toml") -> str:
        text = (f"mechanisms = {json.dumps(mechanisms)}\ndatasets = {json.dumps(list(datasets))}\n"
                f"deltas = {json.dumps(deltas)}\n{SPEC_TAIL}{extra}")
        return str(self.write(name, text))

    def start(self, *args: str, env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen:
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        popen["preexec_fn"] = _limited(popen.get("preexec_fn"))
        return subprocess.Popen([*privbench_command(), *args], cwd=self.tmp, env={**self.env, **(env or {})},
                                text=True, start_new_session=True, **popen)

    def cli(self, *args: str, timeout: float = 90, env: dict[str, str] | None = None, **popen: Any) -> Result:
        """Run ``privbench ARGS``; a hang is killed (its whole session) and recorded."""
        began = time.monotonic()
        proc = self.start(*args, env=env, **popen)
        return self.finish(proc, list(args), began, timeout)

    def finish(self, proc: subprocess.Popen, args: list[str], began: float, timeout: float) -> Result:
        hung = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            proc.send_signal(signal.SIGABRT)  # faulthandler prints where every thread is
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        result = Result(args, proc.returncode, out or "", err or "", time.monotonic() - began, timeout,
                        hung=hung, left=_reap(proc.pid))
        self.results.append(result)
        return result

    def rows(self, db: str, sql: str, params: tuple = ()) -> list[tuple]:
        path = self.tmp / db
        if not path.exists():
            return []
        conn = sqlite3.connect(path)
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()

    def records(self, db: str, where: str = "1") -> list[dict[str, Any]]:
        """Stored runs as dicts (outputs parsed: ``mi_bits``, ``prior_mi_bits`` and the rest
        under ``metrics``; ``metric_errors`` parsed), in stored order (store schema version 3:
        ``runs`` + ``outputs``)."""
        cols = ("id", "run_key", "mechanism", "params", "status", "error", "metric_errors")
        rows = self.rows(db, f"SELECT {', '.join(cols)} FROM runs WHERE {where} ORDER BY id")
        outputs: dict[int, dict[str, Any]] = {}
        for run_id, name, value, text in self.rows(db, "SELECT run_id, name, value, json FROM outputs"):
            try:
                outputs.setdefault(run_id, {})[name] = json.loads(text) if text is not None else value
            except ValueError:
                continue
        found = []
        for row in rows:
            record = dict(zip(cols, row, strict=True))
            record["metric_errors"] = json.loads(record["metric_errors"] or "{}")
            metrics = dict(outputs.get(record["id"], {}))
            record.update(mi_bits=metrics.pop("mi_bits", None),
                          prior_mi_bits=metrics.pop("prior_mi_bits", None), metrics=metrics)
            found.append(record)
        return found

    def latest(self, db: str) -> dict[str, dict[str, Any]]:
        """The last stored record of each run key."""
        return {r["run_key"]: r for r in self.records(db)}


def json_lines(result: Result) -> list[dict[str, Any]]:
    found = []
    for line in result.out.splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def succeeded(result: Result) -> None:
    """A valid request: exit 0 (a crash is classified from the result itself)."""
    if result.problem() is None:
        expect(result.code == 0, "unexpected", f"exit {result.code}: {_last_line(result.err)}")


def refused(result: Result, *words: str, db: str | None = None, case: Case | None = None,
            kind: str = "unexpected") -> None:
    """A bad request: exit 2, the message names ``words``, nothing stored."""
    if result.problem() is not None:
        return
    expect(result.code == 2, kind, f"exit {result.code} for a bad request: {_last_line(result.err)}")
    missing = [w for w in words if w.lower() not in result.err.lower()]
    expect(not missing, "unexpected", f"message does not name {missing}: {_last_line(result.err)}")
    if db and case:
        expect(not case.rows(db, "SELECT id FROM runs"), "silent wrong", "rows stored for a refused request")


def close(value: Any, expected: float, tol: float = 1e-6) -> bool:
    return isinstance(value, int | float) and abs(value - expected) <= tol * max(1.0, abs(expected))


# ----------------------------------------------------------------------------------- registry

CASES: dict[str, Callable[[Case], None]] = {}


def case(group: str) -> Callable[[Callable[[Case], None]], Callable[[Case], None]]:
    def register(fn: Callable[[Case], None]) -> Callable[[Case], None]:
        CASES[f"{group}/{fn.__name__}"] = fn
        return fn
    return register


def run_case(name: str, fn: Callable[[Case], None], keep: bool = False) -> tuple[str, str, float]:
    """Run one case in a fresh folder; its class, a detail and the seconds it took."""
    tmp = Path(tempfile.mkdtemp(prefix="probe-" + name.replace("/", "-") + "-"))
    c = Case(tmp)
    began = time.monotonic()
    kind, detail = "ok", ""
    try:
        fn(c)
    except Verdict as v:
        kind, detail = v.kind, v.detail
    except Exception as exc:  # noqa: BLE001 - the probe's own failure is reported, not hidden
        kind, detail = "unexpected", f"probe error: {type(exc).__name__}: {exc}"
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for r in c.results:
        if SECRET in r.out or SECRET in r.err:
            return "trust hole", f"a secret environment value echoed by {' '.join(r.args[:3])}", 0.0
    crashes = [p for p in (r.problem() for r in c.results) if p]
    if crashes and kind not in ("trust hole",):
        kind, detail = "crash", crashes[0]
    return kind, detail, time.monotonic() - began


# ------------------------------------------------------------------- stale results (group 1)

MECHANISM = '''
import numpy as np
import privbench as pb
VERSION_LINE


class Versioned(pb.MappingMechanism):
    name = "NAME"

    def __init__(self) -> None:
        pass

    def run(self, problem, delta):
        return self.result(np.eye(problem.n), code_version=VERSION)


@pb.hookimpl
def privbench_register_mechanisms():
    return [Versioned]
'''


def versioned(name: str, version_line: str) -> str:
    """A module plugin ``name`` whose runs carry ``code_version`` (set by ``version_line``)."""
    return MECHANISM.replace("NAME", name).replace("VERSION_LINE", version_line)


METRIC = '''
import privbench as pb


class Version(pb.Metric):
    name = "probe_version"
    outputs = (pb.Output("probe_metric_version", "count"),)

    def compute(self, problem, result, *, delta, seed=None):
        return {{"probe_metric_version": {version}}}


@pb.hookimpl
def privbench_register_metrics():
    return [Version]
'''


def _versions(c: Case, db: str, mechanism: str, key: str = "code_version") -> list[Any]:
    return [r["metrics"].get(key) for k, r in sorted(c.latest(db).items()) if r["mechanism"] == mechanism]


@case("stale")
def module_plugin_edited(c: Case) -> None:
    """Edit a module plugin's mechanism: --resume re-runs its runs and keeps the others."""
    c.plugin("probe_mine", versioned("mine", "VERSION = 1"))
    spec = c.spec(["mine", "identity"], [0.5, 1.0])
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite"))
    before = {r["id"] for r in c.records("r.sqlite", "mechanism = 'identity'")}
    expect(len(before) == 2 and _versions(c, "r.sqlite", "mine") == [1, 1], "unexpected", "first sweep")
    c.write("probe_mine.py", versioned("mine", "VERSION = 2"))
    r = c.cli("sweep", spec, "--db", "r.sqlite", "--resume")
    succeeded(r)
    expect(_versions(c, "r.sqlite", "mine") == [2, 2], "silent wrong",
           f"--resume after an edit kept the old rows ({_last_line(r.err)})")
    after = {r["id"] for r in c.records("r.sqlite", "mechanism = 'identity'")}
    expect(after == before, "unexpected", "--resume re-ran the unedited identity runs")
    expect("stale" in r.err, "unexpected", "--resume did not say how many runs were stale")


@case("stale")
def package_helper_edited(c: Case) -> None:
    """Edit a module the plugin package imports; report --sweep re-runs its runs."""
    c.write("probe_pkg/__init__.py", versioned("packaged", "from probe_pkg.core import VERSION"))
    c.write("probe_pkg/core.py", "VERSION = 1\n")
    c.env["PRIVBENCH_PLUGIN_MODULES"] = "probe_pkg"
    spec = c.spec(["packaged"], [1.0])
    succeeded(c.cli("report", "--sweep", spec, "--db", "r.sqlite", "--out", "out", timeout=150))
    c.write("probe_pkg/core.py", "VERSION = 2\n")
    succeeded(c.cli("report", "--sweep", spec, "--db", "r.sqlite", "--out", "out", timeout=150))
    expect(_versions(c, "r.sqlite", "packaged") == [2], "silent wrong",
           "report --sweep after editing the package's helper module kept the old row")


@case("stale")
def metric_plugin_edited(c: Case) -> None:
    """Edit a metric plugin: --resume re-runs the runs it measured."""
    c.plugin("probe_metric", METRIC.format(version=1))
    spec = c.spec(["identity"], [0.5, 1.0])
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite"))
    c.write("probe_metric.py", METRIC.format(version=2))
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite", "--resume"))
    got = _versions(c, "r.sqlite", "identity", "probe_metric_version")
    expect(got == [2, 2], "silent wrong", f"--resume after a metric edit kept {got}")


@case("stale")
def keep_stale_reuses(c: Case) -> None:
    """--keep-stale reuses the rows of edited code (nothing re-run)."""
    c.plugin("probe_mine", versioned("mine", "VERSION = 1"))
    spec = c.spec(["mine"], [1.0])
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite"))
    c.write("probe_mine.py", versioned("mine", "VERSION = 2"))
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite", "--resume", "--keep-stale"))
    expect(len(c.records("r.sqlite")) == 1, "unexpected", "--keep-stale re-ran a stale run")
    listing = c.cli("results", "--db", "r.sqlite")
    succeeded(listing)
    expect("†" in listing.out, "silent wrong", "results does not mark a row made by other code")


# --------------------------------------------------------------------------------- csv files

def _csv_record(c: Case, text: str, params: str = "") -> dict[str, Any]:
    c.write("t.csv", text)
    r = c.cli("run", "-m", "identity", "-d", f"csv:path=t.csv,private=income{params}", "--delta", "1",
              *FAST, "--json", "--no-store")
    succeeded(r)
    records = json_lines(r)
    expect(len(records) == 1 and records[0]["status"] == "ok", "unexpected", "no ok record")
    return records[0]


@case("csv")
def leading_zero_codes(c: Case) -> None:
    """Zip codes 02134 and 2134 are two symbols under Hamming: I(zip; income) = 1 bit."""
    record = _csv_record(c, "zip,income\n02134,high\n2134,low\n02134,high\n2134,low\n")
    expect(close(record["prior_mi_bits"], 1.0), "silent wrong", f"prior {record['prior_mi_bits']} bits, not 1")


@case("csv")
def missing_keep(c: Case) -> None:
    """Empty cells are their own category with missing=keep: I = H(0.4) bits."""
    import math

    record = _csv_record(c, "x,income\ninf,high\n,low\ninf,high\n,low\n1,low\n", ",missing=keep")
    h = -(0.4 * math.log2(0.4) + 0.6 * math.log2(0.6))
    expect(close(record["prior_mi_bits"], h), "silent wrong", f"prior {record['prior_mi_bits']}, not {h:.5f}")


@case("csv")
def duplicated_header(c: Case) -> None:
    c.write("t.csv", "p,p,income\n1,2,high\n3,4,low\n")
    r = c.cli("run", "-m", "identity", "-d", "csv:path=t.csv,private=income", "--delta", "1", "--no-store")
    refused(r, "duplicate", kind="silent wrong")


@case("csv")
def proc_self_environ(c: Case) -> None:
    r = c.cli("run", "-m", "identity", "-d", "csv:path=/proc/self/environ,private=x", "--delta", "1",
              "--no-store")
    expect(not any(w in r.err for w in ("HOME=", "PATH=")), "trust hole", "environment echoed")
    refused(r, "environ")


@case("csv")
def cell_value_echoed(c: Case) -> None:
    """A cell that is not a number under a numeric distortion: named, not echoed."""
    c.write("t.csv", f"age,income\n{SECRET},high\n3,low\n4,high\n")
    r = c.cli("run", "-m", "identity", "-d", "csv:path=t.csv,private=income,distortion=l1", "--delta", "1",
              "--no-store")
    refused(r, "t.csv")


@case("csv")
def million_distinct_values(c: Case) -> None:
    """10^6 distinct values: no dense one-hot; the run is ok (or skipped) and plausible."""
    with open(c.tmp / "t.csv", "w") as f:
        f.write("user,income\n")
        f.writelines(f"u{i},{'high' if i % 2 else 'low'}\n" for i in range(10**6))
    r = c.cli("run", "-m", "identity", "-d", "csv:path=t.csv,private=income,top_k=10", "--delta", "1", *FAST,
              "--json", "--no-store", timeout=240)
    if r.code == 2:
        return  # refused with a message: fine
    succeeded(r)
    [record] = json_lines(r) or [{}]
    expect(record.get("status") in ("ok", "skip"), "unexpected", f"status {record.get('status')}")
    prior = record.get("prior_mi_bits")
    expect(prior is None or -1e-9 <= prior <= 1 + 1e-9, "silent wrong", f"prior {prior} bits > H(income)")


@case("csv")
def sparse_3gb_file(c: Case) -> None:
    with open(c.tmp / "big.csv", "wb") as f:
        f.truncate(3 * 2**30)
    r = c.cli("run", "-m", "identity", "-d", "csv:path=big.csv,private=x", "--delta", "1", "--no-store")
    refused(r, "big.csv", "limit")


def _adult_folder(c: Case) -> Path:
    import zipfile

    folder = c.tmp / "data"
    folder.mkdir()
    row = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
           "White, Male, 2174, 0, 40, United-States, <=50K\n")
    with zipfile.ZipFile(folder / "adult.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("adult.data", row * 2000)
        z.writestr("adult.test", "|x\n" + row.replace("K\n", "K.\n") * 2000)
    return folder


@case("csv")
def corrupt_zip(c: Case) -> None:
    folder = _adult_folder(c)
    data = bytearray((folder / "adult.zip").read_bytes())
    data[200:400] = bytes(b ^ 0x5A for b in data[200:400])
    (folder / "adult.zip").write_bytes(bytes(data))
    r = c.cli("run", "-m", "identity", "-d", f"census:data_dir={folder}", "--delta", "1", "--no-store")
    refused(r, "adult.zip")


@case("csv")
def census_3gb_files(c: Case) -> None:
    folder = c.tmp / "data"
    folder.mkdir()
    for name in ("adult.data", "adult.test"):
        with open(folder / name, "wb") as f:
            f.truncate(3 * 2**30)
    r = c.cli("run", "-m", "identity", "-d", f"census:data_dir={folder}", "--delta", "1", "--no-store",
              timeout=120)
    refused(r, "adult")


# ---------------------------------------------------------------------------- grids, claims

@case("grid")
def duplicated_entries(c: Case) -> None:
    """deltas [0.5, 0.5, 0.50], a mechanism twice, an LP backend twice: each run once."""
    spec = c.spec(["identity", "identity", "optimal"], [0.5, 0.5, 0.50], extra='lp_backends = ["highs", "highs"]\n')
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite", timeout=150))
    keys = [r["run_key"] for r in c.records("r.sqlite")]
    expect(len(keys) == 2 == len(set(keys)), "silent wrong", f"{len(keys)} rows for 2 runs: {keys}")
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite", "--resume", timeout=150))
    expect(len(c.records("r.sqlite")) == 2, "silent wrong", "--resume stored repeated rows")


@case("grid")
def dead_claim_from_another_host(c: Case) -> None:
    """Claims an hour old from a host that is gone do not make --resume skip runs forever."""
    from datetime import UTC, datetime, timedelta

    spec = c.spec(["identity"], [0.5, 1.0])
    dry = c.cli("sweep", spec, "--dry-run")
    succeeded(dry)
    keys = dry.out.split()
    expect(len(keys) == 2, "unexpected", f"--dry-run listed {keys}")
    succeeded(c.cli("run", "-m", "identity", "-d", "synthetic:m=2", "--delta", "9", *FAST, "--db", "r.sqlite"))
    at = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="seconds")
    with sqlite3.connect(c.tmp / "r.sqlite") as conn:
        conn.executemany("INSERT INTO claims VALUES (?, 'other-owner', 'gone-host', 1, ?)",
                         [(k, at) for k in keys])
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite", "--resume"))
    stored = {r["run_key"] for r in c.records("r.sqlite")}
    expect(set(keys) <= stored, "silent wrong", "runs claimed by a dead sweep on another host were skipped")


# ---------------------------------------------------------------------------- hostile plugins

def _hostile_run(c: Case, what: str, *extra: str, others: tuple[str, ...] = ("identity",),
                 timeout: float = 90) -> Result:
    c.plugin()
    mechs = [a for m in (f"hostile:what={what}", *others) for a in ("-m", m)]
    return c.cli(*RUN4, *mechs, "--db", "r.sqlite", *extra, timeout=timeout)


def _status(c: Case, mechanism: str) -> list[str]:
    return [r["status"] for r in c.records("r.sqlite", f"mechanism = '{mechanism}'")]


@case("plugins")
def rogue_metric(c: Case) -> None:
    c.plugin()
    succeeded(c.cli(*RUN4, "-m", "identity", "-M", "probe_rogue", "--db", "r.sqlite"))
    [r] = c.records("r.sqlite") or [{}]
    expect(r.get("status") == "ok" and close(r.get("mi_bits"), 1.0), "silent wrong",
           f"a metric overwrote fields: status {r.get('status')}, mi_bits {r.get('mi_bits')}")


@case("plugins")
def metric_claims_mi_bits(c: Case) -> None:
    c.plugin()
    r = c.cli(*RUN4, "-m", "identity", "-M", "probe_claims_mi", "--db", "r.sqlite")
    if r.code == 2:
        return  # refused at plan time
    succeeded(r)
    [rec] = c.records("r.sqlite") or [{}]
    expect(close(rec.get("mi_bits"), 1.0), "silent wrong", f"mi_bits {rec.get('mi_bits')} (true: 1.0)")


@case("plugins")
def stats_named_like_fields(c: Case) -> None:
    succeeded(_hostile_run(c, "field_stats", others=()))
    [r] = c.records("r.sqlite") or [{}]
    expect(close(r.get("mi_bits"), 1.0) and r.get("run_key", "").startswith("hostile"), "silent wrong",
           f"stats overwrote fields: {r.get('mi_bits')}, {r.get('run_key')}")


def _damaged(what: str) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        succeeded(_hostile_run(c, what))
        expect(_status(c, "hostile") == ["invalid"], "silent wrong", f"stored as {_status(c, 'hostile')}")
        expect(_status(c, "identity") == ["ok"], "unexpected", "the other run was not stored ok")
    check.__name__ = f"damaged_{what}"
    return check


for _what in ("unknown_kind", "empty_records", "empty_selection", "gap_negative", "gap_text", "gap_nan",
              "complex", "self_stats", "deep_stats"):
    case("plugins")(_damaged(_what))


def _patch(what: str, executor: str) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        base = c.cli(*RUN4, "-m", "expmec", "--json", "--no-store")
        succeeded(base)
        [truth] = [r["mi_bits"] for r in json_lines(base)] or [None]
        c.plugin()
        spec = c.spec([f"hostile:what={what}", "expmec"], [1.0],
                      extra=f'executor = "{executor}"\nworkers = 1\n')
        succeeded(c.cli("sweep", spec, "--db", "r.sqlite", timeout=150))
        order = [r["mechanism"] for r in c.records("r.sqlite")]
        expect(order == ["hostile", "expmec"], "unexpected", f"runs stored in the order {order}")
        [got] = [r["mi_bits"] for r in c.records("r.sqlite", "mechanism = 'expmec'")]
        expect(close(got, truth), "silent wrong", f"expmec {got} bits after the patch, alone {truth}")
    check.__name__ = f"{what}_{executor}"
    return check


for _what in ("patch_numpy", "patch_information"):
    case("plugins")(_patch(_what, "local"))
    case("plugins")(_patch(_what, "process"))


@case("plugins")
def fork(c: Case) -> None:
    c.plugin()
    spec = c.spec(["hostile:what=fork", "identity"], [0.5, 1.0])
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite"))
    keys = [r["run_key"] for r in c.records("r.sqlite")]
    expect(len(keys) == 4 == len(set(keys)), "silent wrong", f"{len(keys)} rows for 4 runs")


def _exits(how: str, where: str, executor: str = "local") -> Callable[[Case], None]:
    def check(c: Case) -> None:
        r = _hostile_run(c, f"{how}_in_{where}", "--executor", executor)
        if where in ("init", "check_params"):
            refused(r, "hostile", db="r.sqlite", case=c)
            return
        succeeded(r)
        expected = ["ok"] if where == "repr" else ["error"]
        expect(_status(c, "hostile") == expected, "silent wrong" if "ok" in _status(c, "hostile") else "unexpected",
               f"hostile stored as {_status(c, 'hostile')}, expected {expected}")
        expect(_status(c, "identity") == ["ok"], "unexpected", "the other run's result was lost")
    check.__name__ = f"{how}_in_{where}" + ("" if executor == "local" else f"_{executor}")
    return check


for _how in ("exit", "interrupt"):
    for _where in ("init", "check_params", "skip", "repr", "run"):
        case("plugins")(_exits(_how, _where))
    case("plugins")(_exits(_how, "run", "process"))

HOOK = '''
import os
import sys

import privbench as pb


@pb.hookimpl
def privbench_register_mechanisms():
    if os.environ.get("PROBE_HOOK") == "exit":
        sys.exit(3)
    raise KeyboardInterrupt
'''


def _hook(how: str) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        c.plugin("probe_hook", HOOK)
        c.env["PROBE_HOOK"] = how
        listing = c.cli("plugins")
        succeeded(listing)
        expect("probe_hook" in listing.out and "broken" in listing.out, "unexpected", "hook not listed broken")
        succeeded(c.cli(*RUN4, "-m", "identity", "--no-store"))
    check.__name__ = f"hook_{how}"
    return check


def _metric(name: str) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        c.plugin()
        succeeded(c.cli(*RUN4, "-m", "identity", "-M", name, "--db", "r.sqlite"))
        [r] = c.records("r.sqlite") or [{}]
        expect(r.get("status") == "ok" and close(r.get("mi_bits"), 1.0), "unexpected",
               f"run lost to a failing metric: {r.get('status')}")
        expect(name in r.get("metric_errors", {}), "silent wrong",
               "the metric's failure is not recorded (the run's metric_errors)")
    check.__name__ = f"metric_{name.removeprefix('probe_')}"
    return check


def _reporter(how: str) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        c.plugin()
        succeeded(c.cli(*RUN4, "-m", "identity", "--db", "r.sqlite"))
        r = c.cli("report", "--db", "r.sqlite", "--out", "out", "--reporter", "probe_reporter",
                  env={"PROBE_REPORTER": how})
        refused(r, "probe_reporter")
        expect(len(r.err.strip().splitlines()) <= 2, "unexpected", f"not one line: {r.err[:200]}")
    check.__name__ = f"reporter_{how}"
    return check


for _how in ("exit", "interrupt"):
    case("plugins")(_hook(_how))
for _name in ("probe_exit", "probe_interrupt"):
    case("plugins")(_metric(_name))
for _how in ("exit", "interrupt", "raise"):
    case("plugins")(_reporter(_how))


# ------------------------------------------------------------------------------ bad requests

def _bad(name: str, words: tuple[str, ...], *args: str, dataset: str = "synthetic:m=4") -> None:
    def check(c: Case) -> None:
        c.write("t.csv", "a,b\n1,x\n2,y\n")
        r = c.cli("run", "-m", "identity", "-d", dataset, "--delta", "1", *FAST, *args, "--db", "r.sqlite")
        refused(r, *words, db="r.sqlite", case=c)
    check.__name__ = name
    case("requests")(check)


_bad("seed_23_digits", ("seed",), "--seed", "12345678901234567890123")
_bad("max_mem_inf", ("--max-mem",), "--executor", "process", "--max-mem", "inf")
_bad("max_mem_1e300", ("--max-mem",), "--executor", "process", "--max-mem", "1e300")
_bad("random_n_1e9", ("random", "n"), dataset="random:n=1000000000")
_bad("random_seed_negative", ("random", "seed"), dataset="random:seed=-1")
_bad("csv_sep_ab", ("sep",), dataset="csv:path=t.csv,private=b,sep=ab")


@case("requests")
def max_mem_900(c: Case) -> None:
    """A 900 MB limit is enough for a toy problem: the run ends ok, in seconds."""
    r = c.cli("run", "-m", "expmec", "-d", "synthetic:m=5", "--delta", "1", *FAST, "--executor", "process",
              "--max-mem", "900", "--timeout", "60", "--db", "r.sqlite", timeout=150)
    succeeded(r)
    statuses = [x["status"] for x in c.records("r.sqlite")]
    expect(statuses == ["ok"], "crash" if statuses == ["timeout"] else "unexpected",
           f"stored {statuses} after {r.seconds:.0f} s")


# ----------------------------------------------------------------------------------- hangs

def _hang(what: str, executor: str = "local") -> None:
    def check(c: Case) -> None:
        extra = ("--executor", executor, "--workers", "1") if executor != "local" else ()
        r = _hostile_run(c, what, "--timeout", "2", *extra, timeout=240)
        if r.problem() is not None:
            return
        expect(r.code in (0, 124), "unexpected", f"exit {r.code}: {_last_line(r.err)}")
        hostile = _status(c, "hostile")
        expect("ok" not in hostile, "silent wrong", f"a run that swallowed its timeout stored as {hostile}")
        if r.code == 0:
            expect(hostile == ["timeout"], "unexpected", f"hostile stored as {hostile}")
            expect(_status(c, "identity") == ["ok"], "unexpected", "the other run was lost")
    check.__name__ = what + ("" if executor == "local" else f"_{executor}")
    case("hangs")(check)


for _what in ("swallow", "cancel_timer", "block_alarm", "swallow_once"):
    _hang(_what)
_hang("swallow", "process")


def _dask_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


if _dask_installed():
    _hang("swallow_once", "dask")
    _hang("swallow", "dask")


@case("hangs")
def non_daemon_thread(c: Case) -> None:
    r = _hostile_run(c, "thread", timeout=60)
    succeeded(r)
    expect(_status(c, "hostile") == ["ok"], "unexpected", f"stored {_status(c, 'hostile')}")


SLEEPY = '''
import time

import privbench as pb

time.sleep(600)


@pb.hookimpl
def privbench_register_mechanisms():
    return []
'''


@case("hangs")
def sleep_at_import(c: Case) -> None:
    c.plugin("probe_sleepy", SLEEPY)
    r = c.cli(*RUN4, "-m", "identity", "--no-store", timeout=150)
    succeeded(r)


@case("signals")
def sigterm_process_executor(c: Case) -> None:
    """SIGTERM to run --executor process: exit 143, a message, no worker left running."""
    import psutil

    c.plugin()
    began = time.monotonic()
    args = [*RUN4, "-m", "hostile:what=sleep", "--delta", "0.5", "--executor", "process", "--workers", "2",
            "--db", "r.sqlite"]
    proc = c.start(*args)
    parent = psutil.Process(proc.pid)
    workers: list[Any] = []
    while time.monotonic() - began < 90 and len(workers) < 2 and proc.poll() is None:
        time.sleep(0.5)
        workers = [p for p in parent.children(recursive=True) if "python" in p.name().lower()]
    expect(workers, "unexpected", "the pool never started")
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    r = c.finish(proc, args, began, 60)
    if r.problem() is None:
        expect(r.code == 143 and "SIGTERM" in r.err, "unexpected", f"exit {r.code}: {_last_line(r.err)}")
    _, alive = psutil.wait_procs(workers, timeout=5)
    expect(not alive, "crash", f"{len(alive)} orphaned worker(s)")


# ------------------------------------------------------------------------- outputs, stores

def _stored(c: Case, db: str = "r.sqlite", deltas: tuple[str, ...] = ("1",)) -> None:
    args = [a for d in deltas for a in ("--delta", d)]
    succeeded(c.cli("run", "-m", "identity", "-d", "synthetic:m=4", *args, *FAST, "--db", db))


@case("io")
def closed_stdout(c: Case) -> None:
    _stored(c)
    r = c.cli("results", "--db", "r.sqlite", stdout=None, preexec_fn=lambda: os.close(1))
    expect(r.code in (0, 1), "unexpected", f"exit {r.code}")


@case("io")
def broken_pipe(c: Case) -> None:
    _stored(c, deltas=tuple(str(d) for d in range(1, 30)))
    began = time.monotonic()
    proc = c.start("results", "--db", "r.sqlite", "--limit", "0")
    proc.stdout.close()
    r = c.finish(proc, ["results"], began, 60)
    expect(r.code in (0, 1), "unexpected", f"exit {r.code}")


def _tiny_disk(c: Case) -> Path | None:
    """A 64 KiB tmpfs in the case's folder (root only), filled up; None when it cannot mount."""
    mount = c.tmp / "full"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        return None
    return mount


def _unmount(mount: Path) -> None:
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@case("io")
def full_disk_report(c: Case) -> None:
    _stored(c)
    mount = _tiny_disk(c)
    try:
        out = str(mount / "out") if mount else "/dev/full/out"
        if mount:
            with open(mount / "filler", "wb") as f:
                f.write(b"\0" * 60_000)
        r = c.cli("report", "--db", "r.sqlite", "--out", out, timeout=120)
    finally:
        if mount:
            _unmount(mount)
    if r.problem() is None:
        expect(r.code == 3 and "No space" in r.err, "unexpected", f"exit {r.code}: {_last_line(r.err)}")


@case("io")
def full_disk_export(c: Case) -> None:
    _stored(c)
    (c.tmp / "full.csv").symlink_to("/dev/full")
    r = c.cli("results", "--db", "r.sqlite", "--export", "full.csv")
    if r.problem() is None:
        expect(r.code == 3 and "full.csv" in r.err, "unexpected", f"exit {r.code}: {_last_line(r.err)}")


@case("io")
def full_disk_store(c: Case) -> None:
    mount = _tiny_disk(c)
    if mount is None:
        return
    try:
        with open(mount / "filler", "wb") as f:
            try:
                f.write(b"\0" * 70_000)
            except OSError:
                pass
        r = c.cli("run", "-m", "identity", "-d", "synthetic:m=4", "--delta", "1", *FAST,
                  "--db", str(mount / "r.sqlite"))
    finally:
        _unmount(mount)
    if r.problem() is None:
        expect(r.code in (2, 3), "unexpected", f"exit {r.code} on a full disk: {_last_line(r.err)}")


@case("io")
def runs_table_without_id(c: Case) -> None:
    _stored(c)
    with sqlite3.connect(c.tmp / "r.sqlite") as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)") if r[1] != "id"]
        conn.execute(f"CREATE TABLE copy AS SELECT {', '.join(columns)} FROM runs")
        conn.execute("DROP TABLE runs")
        conn.execute("ALTER TABLE copy RENAME TO runs")
    r = c.cli("results", "--db", "r.sqlite")
    succeeded(r)
    expect("identity" in r.out, "silent wrong", "the stored run is not listed")


@case("io")
def non_json_metrics_row(c: Case) -> None:
    _stored(c, deltas=("1", "2"))
    with sqlite3.connect(c.tmp / "r.sqlite") as conn:
        conn.execute("UPDATE outputs SET json = '{not json' WHERE run_id = 1 AND name = 'promises'")
    r = c.cli("results", "--db", "r.sqlite")
    succeeded(r)
    expect("id 1" in r.err, "silent wrong", "the damaged row was dropped without a word")
    succeeded(c.cli("compare", "--db", "r.sqlite", "--reference", "identity"))
    succeeded(c.cli("report", "--db", "r.sqlite", "--out", "out", timeout=120))


@case("io")
def corrupted_page(c: Case) -> None:
    with sqlite3.connect(c.tmp / "r.sqlite") as conn:
        conn.execute("PRAGMA page_size = 1024")
    _stored(c)
    with sqlite3.connect(c.tmp / "r.sqlite") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.executemany("INSERT INTO runs (run_key, mechanism, dataset, status, created_at, provenance) "
                         "SELECT run_key || ?, mechanism, dataset, status, created_at, provenance FROM runs "
                         "WHERE id = 1", [(str(i),) for i in range(300)])
    path = c.tmp / "r.sqlite"
    data = bytearray(path.read_bytes())
    pages = len(data) // 1024
    for page in range(pages // 2, pages - 1):
        data[page * 1024 + 8: page * 1024 + 200] = b"\xff" * 192
    path.write_bytes(bytes(data))
    for command in (("results",), ("compare", "--reference", "identity"), ("regress", "r.sqlite", "r.sqlite")):
        r = c.cli(*command, "--db", "r.sqlite") if command[0] != "regress" else c.cli(*command)
        if r.problem() is None:
            expect(r.code in (2, 3), "unexpected", f"{command[0]}: exit {r.code}: {_last_line(r.err)}")


# ------------------------------------------------------------------ environment, foreign files

def _offline(value: str) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        r = c.cli("data", "fetch", "census", env={"PRIVBENCH_OFFLINE": value, "https_proxy": "http://127.0.0.1:9",
                                                  "http_proxy": "http://127.0.0.1:9"})
        if value == "on":
            expect(r.code != 0 and "offline" in r.err.lower(), "trust hole",
                   f"PRIVBENCH_OFFLINE=on read as online: exit {r.code}: {_last_line(r.err)}")
        else:
            refused(r, "PRIVBENCH_OFFLINE", kind="trust hole")
    check.__name__ = f"offline_{value}"
    return check


for _value in ("on", "2", "maybe"):
    case("env")(_offline(_value))


@case("env")
def trace_plugins_maybe(c: Case) -> None:
    refused(c.cli("plugins", env={"PRIVBENCH_TRACE_PLUGINS": "maybe"}), "PRIVBENCH_TRACE_PLUGINS",
            kind="trust hole")


def _foreign(app_id: int) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        path = c.tmp / "other.sqlite"
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, run_key TEXT, status TEXT)")
            conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
            if app_id:
                conn.execute(f"PRAGMA application_id = {app_id}")
        conn.close()
        before = path.read_bytes()
        for args in ((*RUN4, "-m", "identity"), ("results",), ("report", "--out", "out")):
            r = c.cli(*args, "--db", "other.sqlite")
            expect(path.read_bytes() == before and not (c.tmp / "other.sqlite-wal").exists(), "trust hole",
                   f"{args[0]} touched another application's database")
            refused(r, "other.sqlite", kind="trust hole")
    check.__name__ = "foreign_db" + ("_marked" if app_id else "")
    return check


case("env")(_foreign(0))
case("env")(_foreign(0x12345678))


@case("env")
def forged_certificate(c: Case) -> None:
    argv = ("run", "-m", "expmec", "-d", "random:n=12,seed=3", "--delta", "0.2", "--json", "--db", "r.sqlite")
    first = c.cli(*argv, timeout=150)
    succeeded(first)
    [truth] = [r["metrics"]["optimum_lower_bits"] for r in json_lines(first)] or [None]
    with sqlite3.connect(c.tmp / "r.sqlite") as conn:
        conn.execute("UPDATE optimum_certificates SET lower_bits = lower_bits + 0.05, upper_bits = upper_bits + 0.05")
    second = c.cli(*argv, timeout=150)
    succeeded(second)
    [metrics] = [r["metrics"] for r in json_lines(second)] or [{}]
    expect(close(metrics.get("optimum_lower_bits"), truth, 1e-4), "silent wrong",
           f"a forged certificate was used: lower {metrics.get('optimum_lower_bits')} "
           f"(source {metrics.get('optimum_source')}), true {truth}")


@case("env")
def regress_text_mi_bits(c: Case) -> None:
    _stored(c, "base.sqlite")
    _stored(c, "new.sqlite")
    with sqlite3.connect(c.tmp / "new.sqlite") as conn:
        conn.execute("UPDATE runs SET mi_bits = 'x'")
    refused(c.cli("regress", "base.sqlite", "new.sqlite"), "mi_bits", kind="silent wrong")


@case("env")
def certificate_keyed_by_distortion(c: Case) -> None:
    """One joint under two distortions: the second run's optimum is not the first's."""
    c.write("t.csv", "x,income\n1,high\n2,low\n3,high\n1,high\n2,high\n3,low\n")
    found = []
    for distortion in ("hamming", "l1"):
        r = c.cli("run", "-m", "expmec", "-d", f"csv:path=t.csv,private=income,distortion={distortion}",
                  "--delta", "0.3", "--json", "--db", "r.sqlite", timeout=150)
        succeeded(r)
        found += [x["metrics"].get("optimum_source") for x in json_lines(r)]
    expect(len(found) == 2 and all(found), "unexpected", f"no optimum certified: {found}")
    expect(found[1] != "cache", "silent wrong",
           f"the l1 problem used the Hamming problem's certificate ({found})")


@case("env")
def unusable_cache_folder_online(c: Case) -> None:
    """Online, a cache folder that is a file: one line naming it, the network untouched."""
    (c.tmp / "cachefile").write_text("not a folder\n")
    r = c.cli("data", "fetch", "census", env={"PRIVBENCH_CACHE_DIR": str(c.tmp / "cachefile"),
                                              "PRIVBENCH_OFFLINE": "0", "https_proxy": "http://127.0.0.1:9",
                                              "http_proxy": "http://127.0.0.1:9"})
    refused(r, "cachefile")


@case("env")
def unusable_cache_folder(c: Case) -> None:
    (c.tmp / "cachefile").write_text("not a folder\n")
    r = c.cli("run", "-m", "expmec", "-d", "random:n=12,seed=3", "--delta", "0.2", "--json", "--no-store",
              env={"PRIVBENCH_CACHE_DIR": str(c.tmp / "cachefile")}, timeout=150)
    if r.problem() is None and r.code != 2:
        succeeded(r)
        expect([x["status"] for x in json_lines(r)] == ["ok"], "unexpected", "the run failed")


# ------------------------------------------------------- beyond the list: same classes

def _sigint_or_term(executor: str, sig: int) -> Callable[[Case], None]:
    def check(c: Case) -> None:
        import psutil

        c.plugin()
        began = time.monotonic()
        args = [*RUN4, "-m", "hostile:what=sleep", "--delta", "0.5", "--executor", executor, "--workers", "1",
                "--timeout", "300", "--db", "r.sqlite"]
        proc = c.start(*args)
        parent = psutil.Process(proc.pid)
        workers: list[Any] = []
        while time.monotonic() - began < 120 and not workers and proc.poll() is None:
            time.sleep(0.5)
            workers = [p for p in parent.children(recursive=True) if "python" in p.name().lower()]
        expect(workers, "unexpected", "no worker process started")
        time.sleep(6)
        workers = parent.children(recursive=True)
        proc.send_signal(sig)
        r = c.finish(proc, args, began, 90)
        expected = 130 if sig == signal.SIGINT else 143  # 128 + the signal, as shells report it
        if r.code == expected:
            r.code = 0  # what the user asked for (130 is no crash after a Ctrl-C)
        elif r.problem() is None:
            raise Verdict("unexpected", f"exit {r.code} after {signal.Signals(sig).name}: {_last_line(r.err)}")
        _, alive = psutil.wait_procs(workers, timeout=10)
        expect(not alive, "crash", f"{len(alive)} orphaned worker(s) after {signal.Signals(sig).name}")
    check.__name__ = f"{signal.Signals(sig).name.lower()}_{executor}_executor"
    return check


case("signals")(_sigint_or_term("process", signal.SIGINT))
if _dask_installed():
    case("signals")(_sigint_or_term("dask", signal.SIGTERM))


@case("plugins")
def fork_process(c: Case) -> None:
    c.plugin()
    spec = c.spec(["hostile:what=fork", "identity"], [0.5, 1.0], extra='executor = "process"\nworkers = 1\n')
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite", timeout=150))
    keys = [r["run_key"] for r in c.records("r.sqlite")]
    expect(len(keys) == 4 == len(set(keys)), "silent wrong", f"{len(keys)} rows for 4 runs")


for _what in ("nan_mapping", "negative_mapping"):
    case("plugins")(_damaged(_what))


@case("plugins")
def non_finite_stats_in_json(c: Case) -> None:
    """Stats holding NaN and infinity: --json lines are strict JSON (no bare NaN)."""
    r = _hostile_run(c, "nan_stats", "--json", others=())
    succeeded(r)
    lines = [x for x in r.out.splitlines() if x.startswith("{")]
    expect(lines, "unexpected", "no JSON line")

    def refuse(name: str) -> None:
        raise ValueError(name)

    for line in lines:
        try:
            json.loads(line, parse_constant=refuse)
        except ValueError as exc:
            raise Verdict("silent wrong", f"--json printed a non-JSON value: {exc}") from None


def _request(name: str, words: tuple[str, ...], *args: str, command: str = "run") -> None:
    def check(c: Case) -> None:
        c.write("bad.toml", 'mechanisms = ["identity"\ndatasets = 3\n')
        c.write("nan.toml", 'mechanisms = ["identity"]\ndatasets = ["synthetic:m=4"]\ndeltas = [nan]\n')
        base = ("run", "-m", "identity", "-d", "synthetic:m=4") if command == "run" else (command,)
        r = c.cli(*base, *args, "--db", "r.sqlite")
        refused(r, *words, db="r.sqlite", case=c)
    check.__name__ = name
    case("requests")(check)


_request("delta_nan", ("delta",), "--delta", "nan")
_request("delta_inf", ("delta",), "--delta", "inf")
_request("delta_negative", ("delta",), "--delta", "-1")
_request("timeout_zero", ("timeout",), "--delta", "1", "--timeout", "0")
_request("timeout_nan", ("timeout",), "--delta", "1", "--timeout", "nan")
_request("workers_zero", ("workers",), "--delta", "1", "--executor", "process", "--workers", "0")
_request("repeat_zero", ("repeat",), "--delta", "1", "--repeat", "0")
_request("spec_not_toml", ("bad.toml",), "bad.toml", command="sweep")
_request("spec_delta_nan", ("delta",), "nan.toml", command="sweep")
_request("unknown_mechanism_param", ("nope",), "--delta", "1", "-m", "expmec:nope=1")


def _odd_db(name: str, make: Callable[[Path], None], codes: tuple[int, ...], untouched: bool) -> None:
    def check(c: Case) -> None:
        path = c.tmp / ("missing/folder/r.sqlite" if name == "db_in_missing_folder" else "r.sqlite")
        make(path)
        before = path.read_bytes() if path.is_file() else None
        r = c.cli(*RUN4, "-m", "identity", "--db", str(path))
        if untouched and before is not None:
            expect(path.read_bytes() == before, "trust hole", "a file that is no store was written")
        if r.problem() is None:
            expect(r.code in codes, "unexpected", f"exit {r.code}: {_last_line(r.err)}")
    check.__name__ = name
    case("io")(check)


_odd_db("db_in_missing_folder", lambda p: None, (0,), False)
_odd_db("db_is_a_folder", lambda p: p.mkdir(), (2, 3), True)
_odd_db("db_empty_file", lambda p: p.write_bytes(b""), (0,), False)
_odd_db("db_text_file", lambda p: p.write_text("name,total\nx,1\n" * 50), (2, 3), True)


@case("stale")
def csv_data_edited(c: Case) -> None:
    """Edit the csv a sweep read: --resume does not keep the numbers of the old file."""
    c.write("t.csv", "zip,income\n1,high\n2,low\n1,high\n2,low\n")
    spec = c.spec(["identity"], [1.0], datasets=("csv:path=t.csv,private=income",))
    succeeded(c.cli("sweep", spec, "--db", "r.sqlite"))
    c.write("t.csv", "zip,income\n1,high\n1,low\n2,high\n2,low\n")  # zip now says nothing
    r = c.cli("sweep", spec, "--db", "r.sqlite", "--resume")
    succeeded(r)
    [latest] = c.latest("r.sqlite").values()
    expect(close(latest["prior_mi_bits"], 0.0), "silent wrong",
           f"--resume kept I = {latest['prior_mi_bits']} bits of the old file (now 0): {_last_line(r.err)}")


SHADOW = '''
import numpy as np
import privbench as pb


class Shadow(pb.MappingMechanism):
    name = "identity"

    def __init__(self) -> None:
        pass

    def run(self, problem, delta):
        mapping = np.zeros((problem.n, problem.n))
        mapping[0, :] = 1.0
        return self.result(mapping)


@pb.hookimpl
def privbench_register_mechanisms():
    return [Shadow]
'''


@case("plugins")
def shadows_a_builtin(c: Case) -> None:
    """A plugin registering a mechanism named like a built-in does not replace it silently."""
    c.plugin("probe_shadow", SHADOW)
    r = c.cli(*RUN4, "-m", "identity", "--json", "--no-store")
    if r.code == 2:
        return
    succeeded(r)
    [record] = json_lines(r) or [{}]
    expect(close(record.get("mi_bits"), 1.0), "silent wrong", f"identity gave {record.get('mi_bits')} bits")


@case("plugins")
def prints_to_stdout_under_json(c: Case) -> None:
    """A mechanism that prints: every --json line is still one JSON record."""
    r = _hostile_run(c, "print", "--json")
    succeeded(r)
    bad = [x for x in r.out.splitlines() if x.strip() and not x.startswith("{")]
    expect(not bad, "unexpected", f"--json stream holds {bad[:2]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="cases whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--keep", action="store_true", help="keep the cases' folders")
    args = parser.parse_args(argv)
    names = [n for n in CASES if not args.only or any(o in n for o in args.only)]
    if args.list:
        print("\n".join(names))
        return 0
    outcomes = []
    for name in names:
        kind, detail, seconds = run_case(name, CASES[name], keep=args.keep)
        outcomes.append((name, kind, detail, seconds))
        print(f"{kind:>12}  {seconds:6.1f} s  {name}{'  ' + detail if detail else ''}", flush=True)
    print(summary(outcomes))
    return 0 if all(kind == "ok" for _, kind, _, _ in outcomes) else 1


def summary(outcomes: list[tuple[str, str, str, float]]) -> str:
    counts = {k: sum(1 for _, kind, _, _ in outcomes if kind == k) for k in CLASSES}
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    return (f"probe_trust: {len(outcomes)} cases: " + ", ".join(f"{v} {k}" for k, v in counts.items())
            + f"; {sum(s for *_, s in outcomes):.0f} s on {machine}")


if __name__ == "__main__":
    sys.exit(main())
