"""Verdicts a statistician would sign.

Each case of the issue's "What was measured" is reproduced: a 1e-8-bit difference between
X and (1 - ε)X + εI; identity vs constant on 5 users; identical replicates and 1e-17
rounding; SPPM tolerance twins within their certified gaps; and a run stopped at its cap
without its certificate. Every test here was checked by breaking the rule by hand once.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.cli import main
from privbench.cli._compare_uncertainty import verdict
from privbench.plugins.metrics.bootstrap import BootstrapIntervals
from privbench.results.significance import collapse_replicates
from privbench.results.store import ResultStore
from privbench.results.verdicts import (
    EQUAL,
    IDENTICAL,
    NOT_DISTINGUISHABLE,
    SIGNIFICANT,
    TOO_FEW_USERS,
    WITHIN_GAP,
    Resolution,
    decide,
    resolution,
)

WORDS = (SIGNIFICANT, NOT_DISTINGUISHABLE, EQUAL, TOO_FEW_USERS, IDENTICAL)


def _out(name: str) -> pb.Output:
    return pb.get_host().outputs()[name]


def _row(label: str, problem: pb.PrivacyProblem, X, **extra) -> pd.Series:
    """A collapsed compare row for mapping ``X``: its bootstrap metrics and values."""
    result = pb.MechanismResult("mapping", mapping=sp.csc_array(X))
    metrics = BootstrapIntervals(resamples=200, seed=0).compute(problem, result, delta=1.0)
    metrics.update(extra.pop("metrics", {}))
    for name in ("maximal_leakage", "total_variation"):
        metrics[name] = metrics["bootstrap"]["estimates"][name]
    row = {"label": label, "metrics": metrics, "replicates": 1, "gap_bits": None,
           "mi_bits": pb.metrics.mutual_information(problem, X),
           "distortion": pb.metrics.expected_distortion(problem, X), **extra}
    return pd.Series(row)


@pytest.fixture(scope="module")
def surrogate():
    return pb.load_dataset("politics_tv_surrogate")


@pytest.fixture(scope="module")
def mapping(surrogate):
    return pb.get_mechanism("expmec").solve(surrogate, delta=0.5).mapping.toarray()


@pytest.mark.parametrize("name", ["mi_bits", "maximal_leakage", "total_variation"])
def test_a_1e_8_difference_is_equal_within_resolution(surrogate, mapping, name) -> None:
    """X against (1 - ε)X + εI, ε = 1e-7: the paired resamples move together, so the
    interval excludes 0, yet the difference is far below anything a solver resolves."""
    mixed = (1 - 1e-7) * mapping + 1e-7 * np.eye(surrogate.n)
    a, b = _row("mixed", surrogate, mixed), _row("x", surrogate, mapping)
    diff = a["metrics"]["bootstrap"]["estimates"][name] - b["metrics"]["bootstrap"]["estimates"][name]
    assert 0 < abs(diff) < 1e-7  # the issue measured 8.3e-9 bits (I) and 8.4e-9 (maximal leakage)
    text = verdict(a, b, _out(name))
    assert EQUAL in text and SIGNIFICANT not in text, text


def test_two_lp_runs_that_differ_by_solver_tolerance_are_not_ranked(surrogate) -> None:
    """maxleak_optimal by HiGHS and by scipy: the same LP optimum to ~1e-15, two mappings
    (the LP is degenerate) that differ on resamples; never "significant"."""
    rows = [_row(b, surrogate, pb.get_mechanism("maxleak_optimal", lp_backend=b)
                 .solve(surrogate, delta=0.5).mapping.toarray()) for b in ("highs", "scipy")]
    for name in ("maximal_leakage", "mi_bits"):
        text = verdict(rows[1], rows[0], _out(name))
        assert SIGNIFICANT not in text and TOO_FEW_USERS not in text, text
        assert NOT_DISTINGUISHABLE in text or EQUAL in text, text


def test_a_real_difference_stays_significant(surrogate, mapping) -> None:
    ident = np.eye(surrogate.n)
    text = verdict(_row("identity", surrogate, ident), _row("x", surrogate, mapping),
                   _out("mi_bits"))
    assert "significant, less private" in text, text


def test_significance_is_paired_not_by_overlapping_intervals() -> None:
    """Single-run intervals overlap almost entirely; the paired differences are all 0.01:
    significant (deciding by non-overlap of the two intervals would say not)."""
    rng = np.random.default_rng(0)
    base = 0.3 + 0.05 * rng.standard_normal(200)
    rows = []
    for label, shift in (("a", 0.01), ("b", 0.0)):
        samples = (base + shift).tolist()
        rows.append(pd.Series({"label": label, "replicates": 1, "gap_bits": None,
                               "mi_bits": 0.3 + shift, "metrics": {
                                   "mi_bits_ci95": [float(np.percentile(samples, 2.5)),
                                                    float(np.percentile(samples, 97.5))],
                                   "bootstrap": {"key": "k", "users": 1000,
                                                 "samples": {"mi_bits": samples},
                                                 "estimates": {"mi_bits": 0.3 + shift}}}}))
    lo_a, hi_a = rows[0]["metrics"]["mi_bits_ci95"]
    lo_b, hi_b = rows[1]["metrics"]["mi_bits_ci95"]
    assert lo_a < hi_b and lo_b < hi_a  # the intervals overlap
    assert "significant, less private" in verdict(rows[0], rows[1], _out("mi_bits"))


@pytest.mark.filterwarnings("ignore:csv. 100% of the 5 users:UserWarning")
def test_five_users_are_too_few_to_tell(tmp_path) -> None:
    """The issue's 5-row CSV: identity vs constant was "0.8685 [0.1624, 1.031] ...
    significant" although 7.5 % of the paired differences are exactly 0."""
    path = tmp_path / "five.csv"
    path.write_text("a,x,y\n0,0,0\n1,1,0\n0,0,1\n1,1,1\n0,1,0\n", encoding="utf-8")
    problem = pb.load_dataset("csv", path=str(path), private="a")
    ident = np.eye(problem.n)
    const = np.zeros((problem.n, problem.n))
    const[0, :] = 1.0
    a, b = _row("identity", problem, ident), _row("constant", problem, const)
    text = verdict(a, b, _out("mi_bits"))
    assert TOO_FEW_USERS in text and "5 users" in text and SIGNIFICANT not in text, text


def test_many_zero_differences_are_too_few_to_tell() -> None:
    """With enough users but a paired distribution with an atom at 0 above 2.5 %."""
    diffs = np.r_[np.zeros(10), np.linspace(0.1, 0.3, 190)]  # 5 % exactly 0
    res = resolution((0.3, 0.1))
    found = decide(0.2, 0.05, 0.3, res, users=500, diffs=diffs)
    assert found.word == TOO_FEW_USERS and "5 %" in found.reason
    ok = decide(0.2, 0.05, 0.3, res, users=500, diffs=diffs[5:])  # 2.6 % ... still too many
    assert ok.word == TOO_FEW_USERS
    fine = decide(0.2, 0.05, 0.3, res, users=500, diffs=diffs[6:])  # 4 of 194: 2.06 %
    assert fine.word == SIGNIFICANT
    assert decide(0.2, 0.05, 0.3, res, users=19).word == TOO_FEW_USERS
    assert decide(0.2, 0.05, 0.3, res, users=20).word == SIGNIFICANT


def _boot_row(label: str, value: float, samples: list[float], **extra) -> pd.Series:
    metrics = {"bootstrap": {"key": "k", "users": 1000, "samples": {"mi_bits": samples,
                                                                   "maximal_leakage": samples},
                             "estimates": {"mi_bits": value, "maximal_leakage": value}},
               "maximal_leakage": value, **extra.pop("metrics", {})}
    return pd.Series({"label": label, "mi_bits": value, "replicates": 1, "gap_bits": None,
                      "metrics": metrics, **extra})


def _twins(gap_a, gap_b):
    """Two runs 4e-4 bits apart on every resample (the census SPPM tolerance twins)."""
    base = np.linspace(0.10, 0.13, 200)
    return (_boot_row("sppm", 0.1168, (base + 4e-4).tolist(), gap_bits=gap_a, delta=0.5,
                      distortion=0.5),
            _boot_row("sppm[tol=0.0001]", 0.1164, base.tolist(), gap_bits=gap_b, delta=0.5,
                      distortion=0.5))


def test_a_difference_within_both_certified_gaps_is_equal_within_resolution() -> None:
    a, b = _twins(1e-3, 1e-4)
    text = verdict(a, b, _out("mi_bits"))
    assert EQUAL in text and WITHIN_GAP in text, text


def test_an_uncertified_more_private_twin_keeps_the_gap_verdict() -> None:
    """census top 300: sppm[tol=1e-4] stopped at its cap with gap 2.07e-4 bits, 4.5e-4 below
    the certified sppm (gap 1e-3): within sppm's own gap, equal within resolution; the
    reverse (the less private side uncertified) is not ranked."""
    a, b = _twins(1e-3, 2.07e-4)
    b["metrics"]["converged"] = False
    a["metrics"]["converged"] = True
    text = verdict(a, b, _out("mi_bits"))
    assert EQUAL in text and WITHIN_GAP in text, text
    a["metrics"]["converged"], b["metrics"]["converged"] = False, True
    text = verdict(a, b, _out("mi_bits"))
    assert "not ranked: sppm is not certified" in text and EQUAL not in text, text


def test_the_less_private_runs_own_gap_counts_the_other_ones_does_not() -> None:
    """sppm (gap 1e-3) 4e-4 bits above an expmec-like run (no certificate) at the same Δ:
    the optimum there is at most expmec's value, so sppm's excess is within its own gap,
    solver tolerance. Reversed (the run without a certificate is the less private one, its
    value final), the more private run's gap excuses nothing: significant."""
    a, b = _twins(1e-3, None)
    text = verdict(a, b, _out("mi_bits"))
    assert EQUAL in text and WITHIN_GAP in text and "less private run's" in text, text
    a, b = _twins(None, 1e-3)
    assert "significant, less private" in verdict(a, b, _out("mi_bits"))
    a, b = _twins(3e-4, None)  # the excess 4e-4 is beyond the gap: a finding
    assert "significant, less private" in verdict(a, b, _out("mi_bits"))
    a, b = _twins(1e-3, None)
    b["distortion"] = 0.6  # the other run spends more than the certified run's Δ = 0.5:
    assert "significant, less private" in verdict(a, b, _out("mi_bits"))  # no bound then
    a, b = _twins(1e-3, None)
    a["metrics"]["converged"] = False  # stopped at its cap: its gap certifies nothing
    text = verdict(a, b, _out("mi_bits"))
    assert "not ranked: sppm is not certified" in text and EQUAL not in text, text


def test_two_runs_at_zero_on_the_sample_are_not_ranked_by_a_biased_paired_interval() -> None:
    """census top 50 at Δ = 1.2: optimal (1.5e-11 bits, gap 1.5e-11) against perfect_privacy
    (7e-17): both intervals [0, 0]; on every resample perfect_privacy's mapping leaks more
    (its plug-in bias is larger), so the bias-corrected paired interval, [1.1e-4, 9.9e-4],
    excluded its own estimate and read 'significant, less private'."""
    rng = np.random.default_rng(0)
    pp = rng.uniform(2e-4, 1.2e-3, 200)
    opt = pp - rng.uniform(1e-4, 1e-3, 200)
    ci0 = {"mi_bits_ci95": [0.0, 0.0]}
    a = _boot_row("optimal", 1.535e-11, opt.tolist(), metrics=dict(ci0))
    b = _boot_row("perfect_privacy", 7.4e-17, pp.tolist(), metrics=dict(ci0))
    text = verdict(a, b, _out("mi_bits"))
    assert "significant" not in text and "not distinguishable" in text, text
    assert "[0, 0]" in text and "[" not in text.split("(paired")[0], text
    b["metrics"]["mi_bits_ci95"] = [0.0, 2e-3]  # one run's leakage is not at its boundary
    assert "neither leaks" not in verdict(a, b, _out("mi_bits"))


def test_the_gaps_bound_i_only() -> None:
    a, b = _twins(1e-3, 1e-4)
    assert "significant, less private" in verdict(a, b, _out("maximal_leakage"))


def test_min_diff_is_a_practical_floor() -> None:
    a, b = _twins(None, None)
    assert "significant" in verdict(a, b, _out("mi_bits"))
    text = verdict(a, b, _out("mi_bits"), min_diff=1e-3)
    assert EQUAL in text and "--min-diff 0.001" in text, text


def _replicates(label: str, value: float, sd: float, boot: bool = True) -> pd.Series:
    row = _boot_row(label, value, [value] * 200) if boot else pd.Series(
        {"label": label, "mi_bits": value, "gap_bits": None, "metrics": {}})
    row["replicates"] = 3
    row["mi_bits_sd"] = sd
    return row


@pytest.mark.parametrize("noise", [0.0, 1e-17, 3e-17])
def test_identical_replicates_do_not_flip_on_rounding(noise) -> None:
    """seeds = [0, 1, 2] on deterministic mechanisms: "0.2293 [0.2293, 0.2293] (over
    replicates): significant" came from a 1e-17 sd; the test shown must not depend on it."""
    a, b = _replicates("x", 0.2293, noise, boot=False), _replicates("y", 0.1, 0.0, boot=False)
    text = verdict(a, b, _out("mi_bits"))
    assert IDENTICAL in text and SIGNIFICANT not in text, text
    a, b = _replicates("x", 0.2293, noise), _replicates("y", 0.2293, 0.0)
    text = verdict(a, b, _out("mi_bits"))
    assert "paired bootstrap" in text and EQUAL in text, text


@pytest.mark.parametrize("noise", [0.0, 1e-17])
def test_a_difference_between_exact_values_stands_as_measured(noise) -> None:
    """synthetic m = 4 at Δ = 4, seeds [0, 1, 2]: expmec 0.3645 bits above optimal read
    'identical across replicates', as if the two were equal. On a distribution (no user
    records) the values are exact: beyond the resolution the difference is significant,
    within it (rounding, the less private run's certified gap) equal."""
    exact = {"user_records": 0}
    a, b = (_replicates(label, value, sd, boot=False) for label, value, sd in
            (("expmec", 0.6499, noise), ("optimal", 0.2854, 0.0)))
    for row in (a, b):
        row["metrics"], row["delta"], row["distortion"] = dict(exact), 4.0, 4.0
    text = verdict(a, b, _out("mi_bits"))
    assert "(exact): significant, less private" in text and IDENTICAL not in text, text
    assert "(exact): significant, more private" in verdict(b, a, _out("mi_bits"))
    a["mi_bits"], a["gap_bits"] = 0.2854 + 1.8e-5, 1.9e-5  # sppm, within its own gap
    text = verdict(a, b, _out("mi_bits"))
    assert "(exact): " + EQUAL in text and WITHIN_GAP in text, text
    a["metrics"]["user_records"] = 45_222  # sampled users: the seeds carry no spread
    a["mi_bits"] = 0.6499
    assert IDENTICAL in verdict(a, b, _out("mi_bits"))


def test_one_seed_of_a_randomized_mechanism_is_not_an_exact_value() -> None:
    """pram at one seed on a distribution is one draw: no '(exact)' verdict; expmec is."""
    exact = {"user_records": 0}
    for mechanism, is_exact in (("pram", False), ("expmec", True)):
        a = pd.Series({"label": mechanism, "mechanism": mechanism, "mi_bits": 0.6,
                       "gap_bits": None, "replicates": 1, "metrics": dict(exact)})
        b = pd.Series({"label": "optimal", "mechanism": "optimal", "mi_bits": 0.3,
                       "gap_bits": None, "replicates": 1, "metrics": dict(exact)})
        assert ("(exact)" in verdict(a, b, _out("mi_bits"))) is is_exact


def test_replicates_that_vary_are_tested_over_replicates() -> None:
    a, b = _replicates("x", 0.30, 0.01, boot=False), _replicates("y", 0.10, 0.01, boot=False)
    text = verdict(a, b, _out("mi_bits"))
    assert "over replicates" in text and "significant, less private" in text


def test_collapse_keeps_the_draws_of_replicates_equal_to_rounding() -> None:
    runs = pd.DataFrame([{"instance": f"toy[seed={s}]", "label": "x", "delta": 1.0,
                          "mi_bits": 0.2293 + s * 1e-17, "distortion": 0.5,
                          "metrics": {"bootstrap": {"key": "k"}, "mi_bits_ci95": [0.2, 0.3]}}
                         for s in range(3)])
    one = collapse_replicates(runs, ["mi_bits"]).iloc[0]
    assert one["replicates"] == 3 and "bootstrap" in one["metrics"]
    runs.loc[1, "mi_bits"] = 0.25
    assert "bootstrap" not in collapse_replicates(runs, ["mi_bits"]).iloc[0]["metrics"]


def test_decide_never_says_significant_below_the_floor() -> None:
    res = Resolution(1e-3, "test", 1e-12)
    assert decide(5e-4, 4e-4, 6e-4, res).word == EQUAL
    assert decide(5e-4, -1e-2, 1e-2, res).word == NOT_DISTINGUISHABLE
    assert decide(5e-3, 2e-3, 8e-3, res).word == SIGNIFICANT
    assert decide(5e-3, 5e-4, 8e-3, res).word == NOT_DISTINGUISHABLE  # reaches inside ±floor
    assert decide(-5e-3, -8e-3, -2e-3, res, higher=False).better is True


# -- uncertified runs are visible everywhere and never ranked as final --------------------

def _record(mech: str, delta: float, mi: float, **extra) -> dict:
    metrics = extra.pop("metrics", {})
    return {"mechanism": mech, "dataset": "toy", "params": {}, "dataset_params": {},
            "delta": delta, "status": "ok", "mi_bits": mi, "prior_mi_bits": 1.0,
            "distortion": extra.pop("distortion", delta), "n": 4,
            "metrics": {"dataset_name": "toy", **metrics}, "run_key": f"{mech}|toy|{delta}",
            **extra}


def _uncertified_store(tmp_path: Path) -> Path:
    """sppm stopped at its cap (I 0.246, gap 0.246) vs a certified smoothed_dual (0.166)."""
    base = np.linspace(0.15, 0.18, 200)
    boot = {"key": "k", "users": 1000, "estimates": {}}
    db = tmp_path / "u.sqlite"
    with ResultStore(db) as s:
        s.add(_record("sppm", 1.0, 0.246, gap_bits=0.246, metrics={
            "converged": False, "mi_bits_ci95": [0.23, 0.26],
            "bootstrap": {**boot, "samples": {"mi_bits": (base + 0.08).tolist()}}}))
        s.add(_record("smoothed_dual", 1.0, 0.166, gap_bits=8e-4, metrics={
            "converged": True, "mi_bits_ci95": [0.15, 0.18],
            "bootstrap": {**boot, "samples": {"mi_bits": base.tolist()}}}))
    return db


def test_compare_never_ranks_an_uncertified_run_as_final(tmp_path, capsys) -> None:
    db = _uncertified_store(tmp_path)
    assert main(["compare", "--db", str(db), "--budget", "1"]) == 0
    text = capsys.readouterr().out
    row = next(ln for ln in text.splitlines() if ln.startswith("│ sppm") and "interval" not in ln
               and "0.246 (not certified" in ln)
    assert "gap 0.246 bits" in row
    verdict_text = re.sub(r"\s+", " ", text[text.index("vs smoothed_dual"):])
    assert "not ranked: sppm is not certified" in verdict_text
    assert "significant, less private" not in verdict_text
    assert re.search(r"│ sppm†?\*", text)  # the ranking table marks it
    assert "× smoothed_dual" in text and "× sppm" not in text  # never the ratios' reference
    assert "not certified" in text and "gap up to 0.246 bits" in re.sub(r"\s+", " ", text)


def test_run_table_report_and_json_mark_an_uncertified_run(tmp_path, capsys) -> None:
    from privbench.cli.common import print_table
    from privbench.plugins.reporters import tables
    from privbench.running.records import record_json

    record = _record("sppm", 1.0, 0.246, gap_bits=0.246, metrics={"converged": False})
    print_table([record])
    shown = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "ok*" in shown and "not certified" in shown and "0.246" in shown
    assert json.loads(record_json(record))["metrics"]["converged"] is False
    df = pb.load_runs(_uncertified_store(tmp_path))
    runs = tables.run_table(df)
    col = runs["header"].index("certified")
    cells = {r[0]: r[col] for r in runs["rows"]}
    assert cells["sppm"] == "no (gap 0.246 bits)" and cells["smoothed_dual"] == "yes"
    summary = tables.tradeoff_summary(df)
    assert [r[0] for r in summary["rows"]].count("sppm *") == 1 and "not certified" in summary["note"]


def test_compare_says_why_a_ratio_below_a_certified_optimum_is_not_printed(tmp_path, capsys
                                                                           ) -> None:
    """The issue's 0.94x against SPPM's certified optimum from two points: the ratio is
    the chord's, not a finding."""
    db = tmp_path / "c.sqlite"
    with ResultStore(db) as s:
        for d, mi in ((0.0, 0.8), (2.0, 0.0)):
            s.add(_record("sppm", d, mi, gap_bits=1e-3, metrics={"converged": True}))
        s.add(_record("expmec", 0.5, 0.2))
    assert main(["compare", "--db", str(db), "--budget", "2", "--target", "0.25",
                 "--reference", "sppm"]) == 0
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "needs 0.36x" not in text and "x the distortion of sppm" not in text
    assert "expmec: no ratio to sppm" in text and "see note" in text
    assert "read on the straight segment between its measured points E[d] = 0 and 2" in text
    from privbench.plugins.reporters import tables

    summary = tables.tradeoff_summary(pb.load_runs(db))
    row = next(r for r in summary["rows"] if r[0] == "expmec")
    assert "see note" in row and "not a finding" in summary["note"]


def test_the_note_names_the_point_a_one_point_reference_was_read_at(tmp_path, capsys) -> None:
    """census top 50: optimal measured at Δ = 1.2 only, perfect privacy at E[d] = 1.054; the
    note said optimal's curve 'is read between optimal's measured points (E[d] = 1.2)'."""
    db = tmp_path / "c.sqlite"
    with ResultStore(db) as s:
        s.add(_record("sppm", 2.0, 0.0, gap_bits=1e-3, metrics={"converged": True}))
        s.add(_record("expmec", 0.5, 0.2))
    assert main(["compare", "--db", str(db), "--budget", "2", "--target", "0.25",
                 "--reference", "sppm"]) == 0
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "expmec: no ratio to sppm" in text and "between" not in text.split("no ratio")[1]
    assert "at its least measured distortion, E[d] = 2 (its only point)" in text, text


def test_a_ratio_below_an_uncertified_reference_is_a_finding(tmp_path, capsys) -> None:
    """A reference that stopped at its cap certifies nothing optimal: beating it is real."""
    db = tmp_path / "c.sqlite"
    with ResultStore(db) as s:
        for d, mi in ((0.0, 0.8), (2.0, 0.0)):
            s.add(_record("sppm", d, mi, gap_bits=0.3, metrics={"converged": d == 0.0}))
        s.add(_record("expmec", 0.5, 0.2))
    assert main(["compare", "--db", str(db), "--budget", "2", "--target", "0.25",
                 "--reference", "sppm"]) == 0
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "expmec needs 0.36x the distortion of sppm" in text and "no ratio" not in text


def test_min_diff_must_be_a_number_at_least_zero(tmp_path, capsys) -> None:
    db = _uncertified_store(tmp_path)
    assert main(["compare", "--db", str(db), "--min-diff", "-1"]) == 2
    assert "--min-diff" in capsys.readouterr().err


def test_every_verdict_has_one_of_the_five_words(tmp_path, capsys) -> None:
    db = _uncertified_store(tmp_path)
    assert main(["compare", "--db", str(db), "--budget", "1", "--min-diff", "0.5"]) == 0
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "--min-diff 0.5" in text and EQUAL in text
    assert math.isclose(0.246 - 0.166, 0.08)
    assert any(w in text for w in WORDS)


def test_compare_reads_a_run_a_rounding_over_its_budget_at_that_budget(tmp_path, capsys) -> None:
    """The issue's case: SPPM's run at Δ = 1 spent 1 + 2.2e-16; its maximal leakage "at
    Δ ≤ 1" read 0.4919 (its Δ = 0.5 point) instead of its own 0.0488."""
    db = tmp_path / "b.sqlite"
    with ResultStore(db) as s:
        s.add(_record("sppm", 0.5, 0.3, metrics={"maximal_leakage": 0.4919}))
        s.add(_record("sppm", 1.0, 0.02, distortion=1.0 + 2.2e-16,
                      metrics={"maximal_leakage": 0.0488}))
    assert main(["compare", "--db", str(db), "--budget", "1", "--by", "maximal_leakage"]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("│ sppm"))
    assert [c.strip() for c in row.strip("│").split("│")][2] == "0.0488"


@pytest.mark.slow
def test_deterministic_replicates_are_compared_by_the_paired_bootstrap(tmp_path) -> None:
    """seeds = [0, 1, 2] on deterministic mechanisms (the issue: "0.2293 [0.2293, 0.2293]
    (over replicates): significant"): one row each, ± 0, compared resample by resample."""
    import subprocess
    import sys

    spec = tmp_path / "s.toml"
    spec.write_text('mechanisms = ["expmec", "sppm"]\ndatasets = ["politics_tv_surrogate"]\n'
                    "deltas = [0.3]\nseeds = [0, 1, 2]\n", encoding="utf-8")
    db = tmp_path / "r.sqlite"
    for argv in (["sweep", str(spec), "--db", str(db)], ["compare", "--db", str(db)]):
        done = subprocess.run([sys.executable, "-m", "privbench", *argv], check=True,
                              capture_output=True, text=True, cwd=tmp_path)
    text = re.sub(r"\s+", " ", done.stdout)
    verdicts = text.replace("(paired bootstrap, or over replicates)", "")  # the title
    assert "(n=3)" in verdicts and "(over replicates)" not in verdicts
    assert "(paired bootstrap): significant, less private" in verdicts  # expmec vs sppm
    assert not re.search(r"± [0-9.]+e-1\d", text)  # SPPM's replicates differ by 4e-18


def test_run_json_keeps_converged_false_and_the_gap(capsys) -> None:
    """`privbench run --json` of an SPPM run stopped at its cap: converged false and its
    gap; the table marks it ok* and not certified."""
    argv = ["run", "-m", "sppm:iterations=2,mode=frank-wolfe", "-d", "synthetic:m=4", "--delta", "0.5",
            "--no-store"]
    assert main([*argv, "--json"]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert line["status"] == "ok" and line["metrics"]["converged"] is False
    assert line["gap_bits"] is not None and line["gap_bits"] > 0
    assert main(argv) == 0
    shown = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "ok*" in shown and "* not certified" in shown


def test_the_bootstrap_test_does_not_flip_on_rounding_noise() -> None:
    """One mapping evaluated twice in another order: every resample differs by ~1e-17."""
    base = np.linspace(0.2, 0.26, 200)
    noise = 1e-17 * (1 + np.arange(200) % 3)  # all positive: the raw interval excludes 0
    a = _boot_row("x", 0.2293 + 2e-17, (base + noise).tolist())
    b = _boot_row("y", 0.2293, base.tolist())
    text = verdict(a, b, _out("mi_bits"))
    assert EQUAL in text and SIGNIFICANT not in text, text


def test_replicate_spread_of_rounding_is_shown_as_zero() -> None:
    """Identical replicates computed in another order differ by ~1e-18: that is rounding,
    shown as ± 0 (SPPM printed "0.0264 ± 4.2e-18 (n=3)"); a real spread is kept."""
    from privbench.results.significance import Replicates

    assert str(Replicates(0.0264, 4.2e-18, 3)) == "0.0264 ± 0 (n=3)"
    assert str(Replicates(0.0264, 1e-3, 3)) == "0.0264 ± 0.001 (n=3)"


def test_interval_ends_of_rounding_size_print_as_zero() -> None:
    """The constant mapping's interval read [0, 8.171e-17]: ends within the absolute
    numeric floor print as 0; a small real end (1e-9 bits) is kept."""
    from privbench.cli._compare_uncertainty import _interval_cell

    assert _interval_cell((0.0, 8.171e-17)) == "[0, 0]"
    assert _interval_cell((-3e-17, 1e-9)) == "[0, 1e-09]"
    assert _interval_cell(None) == "—"


def test_a_run_says_whether_its_values_are_exact(tmp_path, capsys) -> None:
    """metrics.user_records: 0 on a distribution (synthetic), the users behind a CSV."""
    path = tmp_path / "five.csv"
    path.write_text("a,x,y\n0,0,0\n1,1,0\n0,0,1\n1,1,1\n0,1,0\n", encoding="utf-8")
    for dataset, users in (("synthetic:m=3", 0), (f"csv:path={path},private=a", 5)):
        assert main(["run", "-m", "identity", "-d", dataset, "--delta", "0.5", "--no-store",
                     "--json", "--no-metric", "bootstrap"]) == 0
        (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()
                   if x.startswith("{")]
        assert line["metrics"]["user_records"] == users
