"""The bootstrap metric on samples where A is exactly independent of the symbol (every
cell count the product of its two margins): a true zero leakage, where every term of a
maximum (LIP, LDP ε, t-closeness) is 0 to rounding and the winner of
:func:`bs.winner_upper_end` is tied with its truncation point. Each notion's interval is
finite and reaches the value under independence (0, or G(A) for guessing entropy), and
one notion whose interval fails loses that interval only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privbench as pb
from privbench.plugins.metrics import bootstrap as bs


def product_problem(private: list[int], public: list[int], scale: int) -> pb.PrivacyProblem:
    """One record per user of the exact product table ``private`` x ``public`` x ``scale``
    (cell (a, j) holds private[a] * public[j] * scale users), as a problem with records."""
    counts = np.outer(private, public) * scale
    a, j = np.nonzero(counts >= 0)
    reps = counts[a, j]
    records = pd.DataFrame({"private": np.repeat(a, reps), "symbol": np.repeat(j, reps)})
    n = len(public)
    D = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(float)
    return pb.PrivacyProblem.from_arrays(counts.astype(float), D, records=records)


def csv_problem(tmp_path: Path) -> pb.PrivacyProblem:
    """The reported case through the csv adapter: priv 2:3:5 by pub 1:2:3:4, x10."""
    rows = [f"{p},{q}" for p, cp in enumerate([2, 3, 5]) for q, cq in enumerate([1, 2, 3, 4])
            for _ in range(cp * cq * 10)]
    path = tmp_path / "indep.csv"
    path.write_text("priv,pub\n" + "\n".join(rows) + "\n")
    return pb.load_dataset("csv", path=str(path), private="priv", public=["pub"],
                           distortion="l1")


#: (table: private margin, public margin, scale; None = the csv case) and mechanism; the
#: csv case and the last two crashed before the fix, the others passed by rounding's luck
CASES = {
    "csv 2:3:5 x 1:2:3:4, rr": (None, "randomized_response"),
    "2 x 3 uniform, rr": (([1, 1], [1, 1, 1], 100), "randomized_response"),
    "4 x 5 skewed, identity": (([1, 2, 4, 8], [5, 1, 1, 2, 3], 40), "identity"),
    "2:3:5 x 1:2:3:4 x5, rr": (([2, 3, 5], [1, 2, 3, 4], 5), "randomized_response"),
    "1:2:3 x 4:3:2:1, identity": (([1, 2, 3], [4, 3, 2, 1], 10), "identity"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_intervals_cover_zero_leakage_on_an_exact_product(case: str, tmp_path: Path) -> None:
    """Finite intervals reaching the value under independence for every notion, no error.
    Before the fix of winner_upper_end's tie (its conditional law evaluated on a window
    narrower than rounding): ``ValueError: ... is NaN; solver cannot continue`` from
    brentq on three of these, the whole metric lost."""
    table, mechanism = CASES[case]
    problem = csv_problem(tmp_path) if table is None else product_problem(*table)
    result = pb.get_mechanism(mechanism).solve(problem, delta=0.5)
    out = bs.BootstrapIntervals().compute(problem, result, delta=0.5)
    boundary = bs.independent_estimates(problem, result.mapping)
    for name, side in bs.BOUNDARY_SIDE.items():
        lo, hi = out[f"{name}_ci95"]
        assert np.isfinite(lo) and np.isfinite(hi), (name, lo, hi)
        assert lo - 1e-12 <= boundary[name] <= hi + 1e-12, (name, lo, hi, boundary[name])
        if side > 0:
            assert lo == 0.0, (name, lo)


def test_winner_upper_end_has_no_answer_on_an_exact_tie() -> None:
    """Terms equal to rounding (0 and 2.2e-16, as an independent sample's LIP terms):
    the winner sits on its truncation point, so no θ_ĵ puts mass below θ̂_ĵ: None (the
    caller keeps the intersection bound), never NaN nor an end below θ̂_ĵ."""
    rng = np.random.default_rng(3)
    est = np.array([np.finfo(float).eps, 0.0, np.finfo(float).eps, -0.0])
    cells = 0.05 * rng.standard_normal((200, 4))
    assert bs.winner_upper_end(est, cells, bounds=(-np.inf, np.inf)) is None


def test_one_notions_failing_interval_loses_that_interval_only(monkeypatch,
                                                              tmp_path: Path) -> None:
    """A notion whose interval raises (here the maxima's winner end, as the tie's NaN did)
    leaves the other notions' intervals and the samples stored, and the run's
    ``metric_errors`` names the intervals lost (before: the whole metric failed, every
    ``*_ci95`` gone)."""
    from privbench.running.runner import RunSpec, execute_run

    def broken(*args: object, **kwargs: object) -> float:
        raise ValueError("solver cannot continue")

    csv_problem(tmp_path)  # writes indep.csv
    monkeypatch.setattr(bs, "winner_upper_end", broken)
    record = execute_run(RunSpec(
        mechanism="randomized_response", dataset="csv", delta=0.5,
        dataset_params={"path": str(tmp_path / "indep.csv"), "private": "priv",
                        "public": ["pub"], "distortion": "l1"}))
    assert record["status"] == "ok", record["error"]
    lost = ("lip_epsilon_ci95", "ldp_epsilon_private_ci95", "t_closeness_ci95")
    assert record["metric_errors"] == {"bootstrap": "; ".join(
        f"{k}: ValueError: solver cannot continue" for k in lost)}
    m = record["metrics"]
    assert not set(lost) & set(m) and "bootstrap" in m
    kept = [f"{name}_ci95" for name in bs.BOUNDARY_SIDE if f"{name}_ci95" not in lost]
    for key in (*kept, "distortion_ci95"):
        assert np.isfinite(m[key]).all(), key
    assert m["mi_bits_ci95"][0] == 0.0
