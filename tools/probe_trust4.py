"""Issue 41's classes re-run as a new user would, with new cases, classified like
tools/probe_trust.py (whose machinery it uses: each case in its own folder, the real
``privbench`` command in a subprocess, plugins loaded from the case's folder).

    .venv/bin/python tools/probe_trust4.py               # every case; exit 1 if one is not ok
    .venv/bin/python tools/probe_trust4.py --only owns/  # one family
    .venv/bin/python tools/probe_trust4.py --list

Families: ``owns`` (what report and export may write, delete or follow), ``promises``
(a run that breaks what its mechanism promises), ``stores`` (schema versions, read-only
stores, claims), ``numbers`` (signed zero, joint notions near 1e308, messages that name
the plugin, unparsable sweep files, failed metrics), ``figures`` (hostile figure plugins).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_trust as pt  # noqa: E402 - the classifier and the case machinery
from probe_trust import FAST, Case, _last_line, expect, refused, succeeded  # noqa: E402

from privbench.results.store import SCHEMA_VERSION  # noqa: E402 - the version this privbench writes

BEFORE = set(pt.CASES)
case = pt.case


def _store(c: Case, db: str = "r.sqlite", *extra: str) -> None:
    succeeded(c.cli("run", "-m", "identity", "-m", "expmec", "-d", "synthetic:m=3", "--delta",
                    "0.5", "--delta", "2", *FAST, "--db", db, *extra))


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and not p.is_symlink()}


# ------------------------------------------------------------------------------- owns
@case("owns")
def report_into_a_folder_of_the_users(c: Case) -> None:
    """--out names a folder of the user's (dotfiles, notes): refused, nothing touched."""
    _store(c)
    home = c.tmp / "mine"
    for name, text in {".bashrc": "alias x=y", "notes/todo.md": "- a", "figures/f.svg": "<svg/>"}.items():
        c.write(f"mine/{name}", text)
    before = _tree(home)
    r = c.cli("report", "--db", "r.sqlite", "--out", "mine")
    expect(_tree(home) == before, "trust hole", "the user's folder changed")
    refused(r, "not empty", "--force")


@case("owns")
def force_twice_keeps_every_user_file(c: Case) -> None:
    """--force, then a second report: the user's files stay byte for byte."""
    _store(c)
    c.write("site/paper.tex", "\\section{x}")
    c.write("site/figures/fig1.pdf", "%PDF-1.4 mine")
    c.write("site/figures/data.csv", "a,b\n1,2\n")
    mine = {k: v for k, v in _tree(c.tmp / "site").items()}
    succeeded(c.cli("report", "--db", "r.sqlite", "--out", "site", "--force"))
    succeeded(c.cli("report", "--db", "r.sqlite", "--out", "site", "--static"))
    after = _tree(c.tmp / "site")
    lost = [k for k, v in mine.items() if after.get(k) != v]
    expect(not lost, "trust hole", f"user files changed or deleted: {lost}")
    expect("index.html" in after, "unexpected", "no index.html written")


def _linked_report(c: Case, link: str, target_is_dir: bool) -> None:
    _store(c)
    succeeded(c.cli("report", "--db", "r.sqlite", "--out", "site"))
    outside = c.tmp / "outside"
    c.write("outside/keep.txt", "precious")
    place = c.tmp / "site" / link
    if place.is_dir():
        for p in place.iterdir():
            p.unlink()
        place.rmdir()
    elif place.exists():
        place.unlink()
    place.symlink_to(outside if target_is_dir else outside / "keep.txt")
    before = _tree(outside)
    r = c.cli("report", "--db", "r.sqlite", "--out", "site", "--static")
    expect(_tree(outside) == before and (outside / "keep.txt").exists(), "trust hole",
           f"report wrote or deleted through {link}")
    refused(r, "symbolic link")


@case("owns")
def figures_folder_is_a_link(c: Case) -> None:
    _linked_report(c, "figures", True)


@case("owns")
def plotly_js_is_a_link(c: Case) -> None:
    _linked_report(c, "plotly.min.js", False)


@case("owns")
def solvers_md_is_a_link(c: Case) -> None:
    """A link where the report writes a file (figures/*.md only with a table figure) or any other name."""
    _linked_report(c, "index.html", False)


@case("owns")
def forged_manifest_names_files_outside(c: Case) -> None:
    """A manifest (received with a shared report) listing ../victim instead of its files:
    nothing outside goes, and the report's own files, no longer listed, are not replaced
    either (exit 2 naming one); without the manifest's lies, --force writes beside them."""
    _store(c)
    succeeded(c.cli("report", "--db", "r.sqlite", "--out", "site"))
    c.write("victim.txt", "v")
    c.write("site/.privbench-manifest.json", json.dumps(
        {"files": {"../victim.txt": "0" * 64, "/etc/hostname": "0" * 64, "figures/../../victim.txt": "0"}}))
    r = c.cli("report", "--db", "r.sqlite", "--out", "site")
    if r.code != 0:
        refused(r, "privbench did not write")
    expect((c.tmp / "victim.txt").exists(), "trust hole", "a file outside the folder was deleted")
    succeeded(c.cli("report", "--db", "r.sqlite", "--out", "fresh"))


@case("owns")
def export_over_a_users_table(c: Case) -> None:
    _store(c)
    c.write("budget.csv", "month,amount\n1,2\n")
    r = c.cli("results", "--db", "r.sqlite", "--export", "budget.csv")
    expect((c.tmp / "budget.csv").read_text() == "month,amount\n1,2\n", "trust hole", "budget.csv replaced")
    refused(r, "budget.csv")
    succeeded(c.cli("results", "--db", "r.sqlite", "--export", "runs.csv"))
    succeeded(c.cli("results", "--db", "r.sqlite", "--export", "runs.csv"))  # its own: replaced


@case("owns")
def export_through_a_link(c: Case) -> None:
    _store(c)
    c.write("elsewhere/out.csv", "theirs")
    (c.tmp / "runs.csv").symlink_to(c.tmp / "elsewhere" / "out.csv")
    r = c.cli("results", "--db", "r.sqlite", "--export", "runs.csv")
    expect((c.tmp / "elsewhere/out.csv").read_text() == "theirs", "trust hole", "written through a link")
    refused(r, "symbolic link")


# ------------------------------------------------------------------------------- promises
LIAR = '''
import numpy as np
import privbench as pb


class Liar(pb.MappingMechanism):
    """Promises 0.1-LIP (or independence) and returns the identity."""
    name = "liar"
    delta_role = "epsilon"
    respects_budget = False

    def __init__(self, what: str = "lip") -> None:
        self.what = what

    def promises(self, delta):
        return {"lip": {"lip_epsilon": delta}, "ldp": {"ldp_epsilon_private": delta},
                "independent": {"mi_bits": 0.0}}[self.what]

    def run(self, problem, delta):
        return self.result(np.eye(problem.n))


@pb.hookimpl
def privbench_register_mechanisms():
    return [Liar]
'''


@case("promises")
def lip_optimal_large_epsilons(c: Case) -> None:
    """lip_optimal (and notion=ldp) at 12, 25, 60, 1e5 and 1e308 nats: ok and within ε."""
    eps = ("12", "25", "60", "1e5", "1e308")
    for notion, field in (("lip", "lip_epsilon_nats"), ("ldp", "ldp_epsilon_nats")):
        r = c.cli("run", "-m", f"lip_optimal:notion={notion}", "-d", "synthetic:m=4",
                  *[a for e in eps for a in ("--delta", e)], *FAST, "--json", "--no-store",
                  timeout=180)
        succeeded(r)
        for rec in pt.json_lines(r):
            value = rec.get("metrics", {}).get(field)
            expect(rec.get("status") == "ok", "silent wrong" if rec.get("status") != "invalid"
                   else "unexpected", f"{notion} ε={rec.get('delta')}: {rec.get('status')} {rec.get('error')}")
            expect(isinstance(value, int | float) and value <= float(rec["delta"]) * (1 + 1e-9) + 1e-9,
                   "silent wrong", f"{notion} ε={rec.get('delta')} measured {value}")


@case("promises")
def a_liar_is_invalid(c: Case) -> None:
    """A third-party mechanism whose mapping breaks its promise is stored invalid, with the
    measured value."""
    c.plugin("probe_liar", LIAR)
    for what, words in (("lip", "lip_epsilon = inf"), ("ldp", "ldp_epsilon_private = inf"),
                        ("independent", "mi_bits =")):
        r = c.cli("run", "-m", f"liar:what={what}", "-d", "synthetic:m=3", "--delta", "0.2",
                  *FAST, "--json", "--no-store")
        succeeded(r)
        [rec] = pt.json_lines(r) or [{}]
        expect(rec.get("status") == "invalid", "silent wrong", f"{what}: stored {rec.get('status')}")
        expect(words in str(rec.get("error")), "unexpected", f"{what}: {rec.get('error')}")


@case("promises")
def perfect_privacy_keeps_independence(c: Case) -> None:
    r = c.cli("run", "-m", "perfect_privacy", "-m", "constant", "-d", "synthetic:m=4", "--delta",
              "1", *FAST, "--json", "--no-store")
    succeeded(r)
    for rec in pt.json_lines(r):
        kept = rec.get("metrics", {}).get("promises", {}).get("mi_bits", {}).get("kept")
        expect(rec.get("status") == "ok" and kept is True, "unexpected",
               f"{rec.get('mechanism')}: {rec.get('status')} {rec.get('error')} promise {kept}")


# ------------------------------------------------------------------------------- stores
def _set_version(c: Case, db: str, version: int, extra: str = "") -> None:
    conn = sqlite3.connect(c.tmp / db)
    if extra:
        conn.execute(extra)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()


@case("stores")
def a_store_from_the_future(c: Case) -> None:
    """A store of a newer privbench (version 7, a new NOT NULL column): every command refuses."""
    _store(c)
    _set_version(c, "r.sqlite", 7, "ALTER TABLE runs ADD COLUMN shard INTEGER NOT NULL DEFAULT 0")
    for args in (("run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", *FAST),
                 ("results",), ("compare",), ("report", "--out", "site")):
        r = c.cli(*args, "--db", "r.sqlite")
        refused(r, "schema version 7", f"schema version {SCHEMA_VERSION}")
    expect(len(c.rows("r.sqlite", "SELECT id FROM runs")) == 4, "silent wrong", "rows added")


@case("stores")
def an_old_store_is_migrated(c: Case) -> None:
    """A store of an older privbench (no version, fewer columns): the next run migrates it."""
    conn = sqlite3.connect(c.tmp / "old.sqlite")
    conn.execute("PRAGMA application_id = 1885500019")
    conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, run_key TEXT NOT NULL, mechanism TEXT,"
                 " dataset TEXT, delta REAL, status TEXT, mi_bits REAL, metrics TEXT, params TEXT,"
                 " created_at TEXT NOT NULL)")
    conn.execute("INSERT INTO runs (run_key, mechanism, dataset, delta, status, mi_bits, metrics,"
                 " params, created_at) VALUES ('k', 'identity', 'synthetic', 1, 'ok', 0.25, '{}',"
                 " '{}', '2024-05-01T00:00:00+00:00')")
    conn.commit()
    conn.close()
    _store(c, "old.sqlite")
    version = c.rows("old.sqlite", "PRAGMA user_version")[0][0]
    expect(version == SCHEMA_VERSION, "silent wrong", f"user_version {version} after the migration")
    expect(len(c.rows("old.sqlite", "SELECT id FROM runs")) == 5, "trust hole", "old row lost")
    old = c.rows("old.sqlite", "SELECT value FROM outputs WHERE run_id = 1 AND name = 'mi_bits'")
    expect(old == [(0.25,)], "trust hole", f"the old row's mi_bits became {old}")
    expect(not list(c.tmp.glob("old.sqlite.v0.bak")), "unexpected", "backup left after commit")


@case("stores")
def a_store_in_a_read_only_folder(c: Case) -> None:
    """results, report, compare and regress read a store in a read-only folder (bind mount
    for root, chmod otherwise), WAL files gone."""
    _store(c, "shared/r.sqlite")
    for extra in (c.tmp / "shared").glob("r.sqlite-*"):
        extra.unlink()
    ro = c.tmp / "ro"
    ro.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["mount", "--bind", str(c.tmp / "shared"), str(ro)]).returncode or \
                subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)]).returncode:
            return
    else:
        ro.rmdir()
        (c.tmp / "shared").rename(ro)
        ro.chmod(0o555)
    try:
        for args in (("results",), ("compare",), ("report", "--out", str(c.tmp / "site"))):
            r = c.cli(*args, "--db", str(ro / "r.sqlite"))
            if r.problem() is None:
                expect(r.code in (0, 1) and "readonly" not in r.err, "unexpected",
                       f"{args[0]}: exit {r.code}: {_last_line(r.err)}")
        r = c.cli("regress", str(ro / "r.sqlite"), str(ro / "r.sqlite"), "--no-runtime")
        succeeded(r)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(ro)])
        else:
            ro.chmod(0o755)


def _claims_case(c: Case, claims: list[tuple[str, int, datetime]], *extra: str) -> pt.Result:
    spec = c.spec(["identity"], [0.5, 1.0, 2.0])
    r = c.cli("sweep", spec, "--dry-run")
    keys = r.out.split()
    succeeded(c.cli("sweep", c.spec(["identity"], [9.0], name="init.toml"), "--db", "r.sqlite"))
    conn = sqlite3.connect(c.tmp / "r.sqlite")
    for key, (host, pid, at) in zip(keys, claims, strict=False):
        conn.execute("INSERT INTO claims VALUES (?, 'ghost', ?, ?, ?)",
                     (key, host, pid, at.isoformat(timespec="seconds")))
    conn.commit()
    conn.close()
    return c.cli("sweep", spec, "--db", "r.sqlite", "--resume", *extra)


@case("stores")
def claims_that_are_no_lease(c: Case) -> None:
    """Three claims: dated an hour ahead, dated year 9999 by a live Python process (this
    probe), a fresh one held by a live process that is not a sweep (pid 1): all taken over."""
    now = datetime.now(UTC)
    here = socket.gethostname()
    r = _claims_case(c, [("other-host", 77, now + timedelta(hours=1)),
                         (here, os.getpid(), datetime(9999, 12, 31, tzinfo=UTC)),
                         (here, 1, now - timedelta(seconds=3))])
    succeeded(r)
    expect("3 to run of 3" in r.err, "silent wrong", f"claims honoured: {_last_line(r.err)}")


@case("stores")
def steal_claims_of_a_live_looking_sweep(c: Case) -> None:
    now = datetime.now(UTC)
    r = _claims_case(c, [("far-host", 9, now), ("far-host", 9, now), ("far-host", 9, now)])
    succeeded(r)
    expect("3 claimed by another sweep" in r.err and "--steal-claims" in r.err, "unexpected",
           f"fresh claims not honoured or not explained: {_last_line(r.err)}")
    r = c.cli("sweep", str(c.tmp / "spec.toml"), "--db", "r.sqlite", "--resume", "--steal-claims")
    succeeded(r)
    expect("3 to run of 3" in r.err, "unexpected", _last_line(r.err))


# ------------------------------------------------------------------------------- numbers
@case("numbers")
def signed_zero_and_float_spellings(c: Case) -> None:
    """Δ = 0, -0.0, 0e0, -0e5 and a parameter -0.0 vs 0.0: one run per distinct number."""
    spec = c.write("z.toml", 'mechanisms = ["expmec:beta=0.0", "expmec:beta=-0.0", "identity"]\n'
                   'datasets = ["synthetic:m=3"]\ndeltas = [0, -0.0, 0e0, -0e5, 0.5, 5e-1]\n'
                   + pt.SPEC_TAIL)
    succeeded(c.cli("sweep", str(spec), "--db", "r.sqlite"))
    keys = [k for (k,) in c.rows("r.sqlite", "SELECT run_key FROM runs")]
    expect(len(keys) == len(set(keys)) == 4, "silent wrong", f"{len(keys)} rows: {keys}")
    r = c.cli("run", "-m", "identity", "-d", "synthetic:m=3", "--delta=-0.0", "--delta=0",
              *FAST, "--json", "--no-store")
    succeeded(r)
    expect(len(pt.json_lines(r)) == 1, "silent wrong", f"{len(pt.json_lines(r))} runs")


NOTIONS_SNIPPET = r'''
import json, math, numpy as np
from privbench.measures.notions import JOINT_NOTIONS
Q = np.array([[0.2, 0.05, 0.125], [0.125, 0.3, 0.2]])
out = {}
for name, f in JOINT_NOTIONS.items():
    small, huge = f(Q), f(Q / Q.max() * 1.7e308)
    refused = []
    for bad in (math.nan, -1e-300, math.inf):
        R = Q.copy(); R[1, 2] = bad
        try:
            f(R)
        except ValueError:
            refused.append(bad)
    out[name] = [small, huge, len(refused)]
print(json.dumps(out))
'''


@case("numbers")
def joint_notions_at_the_float_edge(c: Case) -> None:
    r = subprocess.run([sys.executable, "-c", NOTIONS_SNIPPET], capture_output=True, text=True,
                       timeout=120, env=c.env, cwd=c.tmp)
    expect(r.returncode == 0, "crash", _last_line(r.stderr))
    for name, (small, huge, refused_n) in json.loads(r.stdout).items():
        expect(abs(small - huge) <= 1e-9 * max(1.0, abs(small)), "silent wrong",
               f"{name}: {small} at 1, {huge} near 1.7e308")
        expect(refused_n == 3, "silent wrong", f"{name} accepted a NaN, negative or infinite entry")


@case("numbers")
def plugin_errors_name_plugin_and_parameter(c: Case) -> None:
    for mech in ("ppan:lambda_lr=1e9", "ppan:lambda_lr=1e300"):
        # the store, not --json: a record's metrics.traceback would read as a crash here
        db = f"{mech.split('=')[1]}.sqlite"
        r = c.cli("run", "-m", mech, "-d", "synthetic:m=3", "--delta", "0.5", *FAST, "--db", db)
        if r.code == 2:  # refused at plan time
            refused(r, "ppan", "lambda_lr")
            continue
        succeeded(r)
        [rec] = c.records(db) or [{}]
        expect("ppan[" in r.err and "lambda_lr=" in r.err or rec.get("status") != "error",
               "unexpected", f"{mech}: the terminal says {_last_line(r.err)}")
        if rec.get("status") == "error":
            expect("ppan[" in str(rec.get("error")) and "lambda_lr=" in str(rec.get("error")),
                   "unexpected", f"{mech}: {rec.get('error')}")


@case("numbers")
def sweep_files_that_cannot_be_parsed(c: Case) -> None:
    for name, text in (("tables.toml", "a = {" * 3000 + "}" * 3000),
                       ("arrays.toml", 'mechanisms = ["identity"]\ndatasets = ["synthetic"]\n'
                        "deltas = " + "[" * 4000 + "1" + "]" * 4000),
                       ("utf16.toml", None)):
        path = c.tmp / name
        if text is None:
            path.write_bytes('mechanisms = ["identity"]'.encode("utf-16"))
        else:
            path.write_text(text)
        r = c.cli("sweep", str(path), "--db", "r.sqlite")
        refused(r, name)


FAILING_METRIC = '''
import privbench as pb


class Flaky(pb.Metric):
    name = "probe_flaky"
    default = False

    def compute(self, problem, result, *, delta, seed=None):
        if delta > 1:
            raise ZeroDivisionError("no budget to divide")
        return {}


@pb.hookimpl
def privbench_register_metrics():
    return [Flaky]
'''


@case("numbers")
def a_metric_that_fails_on_some_runs(c: Case) -> None:
    c.plugin("probe_flaky", FAILING_METRIC)
    r = c.cli("run", "-m", "identity", "-m", "expmec", "-d", "synthetic:m=3", "--delta", "0.5",
              "--delta", "2", "--delta", "3", "-M", "probe_flaky", *FAST, "--db", "r.sqlite")
    succeeded(r)
    line = "metric probe_flaky failed on 4 runs: ZeroDivisionError: no budget to divide"
    expect(line in r.err, "unexpected", f"run says: {_last_line(r.err)}")
    spec = c.spec(["identity"], [2.0, 3.0], extra='metrics = ["probe_flaky"]\n')
    r = c.cli("sweep", spec, "--db", "s.sqlite")
    succeeded(r)
    expect("metric probe_flaky failed on 2 runs" in r.err, "unexpected", f"sweep: {_last_line(r.err)}")
    r = c.cli("compare", "--db", "r.sqlite")
    succeeded(r)
    expect("metric probe_flaky failed on 4 runs" in r.out, "unexpected", "compare does not say it")


# ------------------------------------------------------------------------------- figures
FIGURES = '''
import math
import privbench as pb

CASES = {
    "raises": None,
    "text_five": [{"label": "t", "x": [1, 2], "y": [1, 2], "text": 5}],
    "none_trace": [None],
    "nan_size": [{"label": "t", "x": [1, 2], "y": [1, 2], "size": math.nan}],
    "inf_width": [{"label": "t", "x": [1, 2], "y": [1, 2], "width": -math.inf}],
    "million": [{"label": "t", "x": list(range(10**6)), "y": [1.0] * 10**6}],
    "x_is_text": [{"label": "t", "x": "12", "y": [1, 2]}],
    "dict_not_list": {"label": "t"},
    "nan_points": [{"label": "t", "x": [1, math.nan, math.inf], "y": [math.inf, 2, -math.inf],
                    "y_low": [math.nan] * 3}],
}


def make(what):
    class Hostile(pb.Figure):
        name = "probe_fig_" + what
        scope = "instance"
        order = 1

        def plot(self, runs, **options):
            if CASES[what] is None:
                raise RuntimeError("figure exploded")
            return CASES[what]

        def get_metadata(self, runs, **options):
            return {"title": what, "xrange": [math.nan, 1], "ylabel": "</script><b>y"}
    return Hostile


@pb.hookimpl
def privbench_register_figures():
    return [make(w) for w in CASES]
'''


@case("figures")
def hostile_figures_fail_alone(c: Case) -> None:
    c.plugin("probe_figures", FIGURES)
    _store(c)
    r = c.cli("report", "--db", "r.sqlite", "--out", "site", timeout=240)
    succeeded(r)
    page = (c.tmp / "site" / "index.html").read_text()
    found = re.search(r'<script type="application/json" id="pb-plots">(.*?)</script>', page, re.S)
    expect(found, "unexpected", "no plot data on the page")

    def nan(name: str) -> None:
        raise ValueError(name)

    try:
        plots = json.loads(found.group(1), parse_constant=nan)
    except ValueError as exc:
        raise pt.Verdict("silent wrong", f"the page's JSON holds {exc}: JSON.parse throws") from None
    failed = {w for w in ("raises", "text_five", "none_trace", "nan_size", "inf_width", "million",
                          "x_is_text", "dict_not_list") if f"probe_fig_{w}&#39; failed" in page}
    expect(len(failed) == 8, "unexpected", f"only {sorted(failed)} say they failed")
    expect(any("privacy-distortion" in k for k in plots) and len(plots) > 5, "silent wrong",
           f"the other figures are gone ({len(plots)} plots)")
    expect("</script><b>" not in page.split('id="pb-plots">')[1].split("</script>")[0],
           "trust hole", "a label closed the page's script")


NEW = [name for name in pt.CASES if name not in BEFORE]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="cases whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--keep", action="store_true", help="keep the cases' folders")
    args = parser.parse_args(argv)
    names = [n for n in NEW if not args.only or any(o in n for o in args.only)]
    if args.list:
        print("\n".join(names))
        return 0
    outcomes = []
    for name in names:
        kind, detail, seconds = pt.run_case(name, pt.CASES[name], keep=args.keep)
        outcomes.append((name, kind, detail, seconds))
        print(f"{kind:>12}  {seconds:6.1f} s  {name}{'  ' + detail if detail else ''}", flush=True)
    print(pt.summary(outcomes).replace("probe_trust:", "probe_trust4:"))
    return 0 if all(kind == "ok" for _, kind, _, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
