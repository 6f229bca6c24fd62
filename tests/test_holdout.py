"""Held-out evaluation: the design/held-out split of row-based data sets, the
sampled and smoothed priors, and the held-out metrics, checked against computations
from the rows themselves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privbench as pb
from privbench.cli import main
from privbench.plugins.metrics.holdout import HoldoutAttack, HoldoutLeakage
from privbench.running.runner import RunSpec, execute_run

SURROGATE = "politics_tv_surrogate"


def mi_bits_of_counts(table: pd.DataFrame) -> float:
    """I(A; B) in bits of a contingency table (rows a, columns b), written out here."""
    P = table.to_numpy(dtype=float)
    P = P / P.sum()
    pa, pb_ = P.sum(axis=1, keepdims=True), P.sum(axis=0, keepdims=True)
    nz = P > 0
    return float(np.sum(P[nz] * np.log2(P[nz] / (pa @ pb_)[nz])))


def key_of(frame: pd.DataFrame, cols: list[str]) -> pd.Series:
    """Each row's public profile as one string."""
    return frame[cols].astype(str).agg("|".join, axis=1)


def profile_table(n_users: int = 600, seed: int = 3) -> pd.DataFrame:
    """A CSV-like table: private y, three public columns correlated with it."""
    rng = np.random.default_rng(seed)
    y = rng.choice(["no", "yes", "maybe"], size=n_users, p=[0.5, 0.3, 0.2])
    lean = np.select([y == "yes", y == "maybe"], [0.35, 0.15], 0.0)
    cols = {f"c{k}": np.where(rng.random(n_users) < 0.3 + lean, "hi", "lo") for k in range(3)}
    cols["c3"] = rng.choice(["a", "b", "c", "d"], size=n_users)
    return pd.DataFrame({"y": y, **cols})


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    profile_table().to_csv(path, index=False)
    return path


def load_csv(path: Path, **params) -> pb.PrivacyProblem:
    return pb.load_dataset("csv", path=str(path), private="y", **params)


def test_default_sampling_changes_nothing(csv_file: Path) -> None:
    plain = load_csv(csv_file)
    explicit = load_csv(csv_file, holdout=0, holdout_seed=7, design_fraction=1.0,
                        prior="empirical")
    assert plain.holdout is None and explicit.holdout is None
    assert plain.name == explicit.name == "csv[people.csv]"
    np.testing.assert_array_equal(plain.joint, explicit.joint)
    pd.testing.assert_frame_equal(plain.records, explicit.records)
    assert plain.meta == explicit.meta
    assert len(plain.records) == 600  # every user, in file order
    assert plain.records.index.tolist() == list(range(600))


def test_split_is_stratified_disjoint_and_complete(csv_file: Path) -> None:
    problem = load_csv(csv_file, holdout=0.3, holdout_seed=1)
    design, held = problem.records, problem.holdout.records
    assert len(design) + len(held) == 600
    table = profile_table()
    for label, count in table["y"].value_counts().items():
        index = problem.private_labels.index(label)
        assert (held["private"] == index).sum() == round(0.3 * count)
        assert (design["private"] == index).sum() == count - round(0.3 * count)
    # the held-out rows are rows of the file, and not design rows
    key = ["y", "c0", "c1", "c2", "c3"]
    both = pd.concat([design[key], held[key]])
    assert both.value_counts().sort_index().equals(table[key].value_counts().sort_index())
    assert problem.meta["n_design_users"] == len(design)
    assert problem.meta["n_holdout_users"] == len(held)
    assert "holdout=0.3,holdout_seed=1" in problem.name
    # the prior is the design rows' empirical joint only
    counts = pd.crosstab(design["y"], key_of(design, ["c0", "c1", "c2", "c3"]))
    assert problem.n == counts.shape[1]
    assert problem.prior_mi_bits == pytest.approx(mi_bits_of_counts(counts), abs=1e-12)


def test_split_depends_on_the_seed_only(csv_file: Path) -> None:
    a = load_csv(csv_file, holdout=0.3, holdout_seed=1).holdout.records
    b = load_csv(csv_file, holdout=0.3, holdout_seed=1).holdout.records
    c = load_csv(csv_file, holdout=0.3, holdout_seed=2).holdout.records
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_design_fractions_are_nested_and_share_the_holdout(tmp_path: Path) -> None:
    path = tmp_path / "ids.csv"
    table = profile_table().assign(uid=[f"u{i}" for i in range(600)])
    table.to_csv(path, index=False)

    def load(fraction: float) -> pb.PrivacyProblem:
        return pb.load_dataset("csv", path=str(path), private="y",
                               public=["c0", "c1", "c2", "c3"], holdout=0.2, holdout_seed=4,
                               design_fraction=fraction)

    small, mid, full = load(0.1), load(0.5), load(1.0)
    ids = [set(p.records["uid"]) for p in (small, mid, full)]
    assert ids[0] < ids[1] < ids[2]
    assert len(ids[2]) == 600 - len(full.holdout.records)
    for p in (small, mid):
        pd.testing.assert_frame_equal(p.holdout.records[["uid", "y"]],
                                      full.holdout.records[["uid", "y"]])
    # at least one design user of every private value, even at a tiny fraction
    tiny = load(0.001)
    assert sorted(tiny.records["private"].unique()) == [0, 1, 2]


def test_smoothed_prior_adds_pseudo_users_per_cell(csv_file: Path) -> None:
    empirical = load_csv(csv_file, holdout=0.3, holdout_seed=1)
    smoothed = load_csv(csv_file, holdout=0.3, holdout_seed=1, prior="smoothed", smoothing=0.5)
    users = empirical.meta["n_design_users"]
    cells = empirical.joint.size
    expected = (empirical.joint * users + 0.5) / (users + 0.5 * cells)
    np.testing.assert_allclose(smoothed.joint, expected, rtol=1e-12)
    assert "prior=smoothed(0.5)" in smoothed.name
    assert smoothed.prior_mi_bits < empirical.prior_mi_bits  # smoothing pulls towards independence


def test_holdout_outside_the_design_alphabet_is_counted(csv_file: Path) -> None:
    problem = load_csv(csv_file, holdout=0.5, holdout_seed=3, top_k=8)
    cols = ["c0", "c1", "c2", "c3"]
    alphabet = {"|".join(str(v) for v in s) for s in problem.symbols}
    held = problem.holdout.records
    inside = key_of(held, cols).isin(alphabet)
    assert problem.holdout.n_outside == int((~inside).sum()) > 0
    assert (held["symbol"].to_numpy() >= 0).tolist() == inside.tolist()
    assert problem.holdout.joint.sum() == inside.sum()


@pytest.mark.parametrize("param, value, expected", [
    ("holdout", 1.0, "holdout must be a fraction in [0, 1)"),
    ("holdout", -0.1, "holdout must be a fraction in [0, 1)"),
    ("holdout", "abc", "holdout must be a number"),
    ("design_fraction", 0, "design_fraction must be in (0, 1]"),
    ("holdout_seed", -1, "holdout_seed must be an integer >= 0"),
    ("prior", "banana", "prior must be one of empirical, smoothed"),
    ("smoothing", 0, "smoothing must be > 0"),
])
def test_bad_sampling_parameters_exit_2_naming_them(param, value, expected, tmp_path: Path,
                                                    capsys) -> None:
    db = tmp_path / "r.sqlite"
    code = main(["run", "-m", "identity", "-d", f"{SURROGATE}:{param}={value}", "--delta", "0.1",
                 "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err and SURROGATE in err
    assert not db.exists()  # nothing stored


def test_identity_holdout_metrics_match_the_rows(csv_file: Path) -> None:
    record = execute_run(RunSpec(mechanism="identity", dataset="csv", delta=0.0, seed=0,
                                 dataset_params={"path": str(csv_file), "private": "y",
                                                 "holdout": 0.3, "holdout_seed": 5}))
    assert record["status"] == "ok", record.get("error")
    m = record["metrics"]
    problem = load_csv(csv_file, holdout=0.3, holdout_seed=5)
    held = problem.holdout.records
    cols = ["c0", "c1", "c2", "c3"]
    design_profiles = set(key_of(problem.records, cols))
    inside = held[key_of(held, cols).isin(design_profiles)]
    table = pd.crosstab(inside["y"], key_of(inside, cols))
    assert m["holdout_mi_bits"] == pytest.approx(mi_bits_of_counts(table), abs=1e-12)
    assert m["holdout_prior_mi_bits"] == pytest.approx(m["holdout_mi_bits"], abs=1e-12)
    assert m["holdout_distortion"] == pytest.approx(0.0, abs=1e-15)
    assert m["holdout_users"] == len(held)
    assert m["holdout_outside"] == len(held) - len(inside)
    assert m["design_users"] == len(problem.records)
    assert m["holdout_mi_gap_bits"] == pytest.approx(m["holdout_mi_bits"] - record["mi_bits"])
    # the MAP adversary of the design prior, on held-out users, by counting
    guess = {}
    for profile, rows in problem.records.groupby(key_of(problem.records, cols)):
        guess[profile] = rows["y"].value_counts().sort_index().idxmax()  # ties: first label
    hits = sum(guess[k] == y for k, y in zip(key_of(inside, cols), inside["y"], strict=True))
    assert m["holdout_map_accuracy"] == pytest.approx(hits / len(inside), abs=1e-12)


def test_expmec_holdout_distortion_is_the_held_out_average(csv_file: Path) -> None:
    problem = load_csv(csv_file, holdout=0.3, holdout_seed=5)
    mech = pb.get_mechanism("expmec")
    mech.prepare(problem, pb.RunContext(seed=0))
    result = mech.run(problem, 0.8)
    out = HoldoutLeakage().compute(problem, result, delta=0.8)
    X = result.mapping.toarray() if hasattr(result.mapping, "toarray") else np.asarray(result.mapping)
    D = problem.distortion.to_dense()
    q = problem.holdout.joint.sum(axis=0)
    assert out["holdout_distortion"] == pytest.approx(float(np.sum(q / q.sum() * (X * D).sum(0))),
                                                      rel=1e-12)
    Q = problem.holdout.joint / problem.holdout.joint.sum()
    R = Q @ X.T
    ind = R.sum(1, keepdims=True) @ R.sum(0, keepdims=True)
    nz = R > 0
    assert out["holdout_mi_bits"] == pytest.approx(float(np.sum(R[nz] * np.log2(R[nz] / ind[nz]))),
                                                   abs=1e-12)


def _problem_with_holdout(design: list[list[float]], held: list[list[float]]) -> pb.PrivacyProblem:
    records = pd.DataFrame({"private": [0], "symbol": [0]})
    return pb.PrivacyProblem.from_arrays(design, [[0.0, 1.0], [1.0, 0.0]],
                                         holdout=pb.Holdout(np.asarray(held, float), records))


def test_holdout_attack_uses_the_design_beliefs() -> None:
    """Hand example: the held-out users have the design's correlation reversed. The design
    adversary guesses a0 from b0 and a1 from b1: right on 0.1 + 0.1 of the held-out mass;
    its AUC is P(b1 | a1) P(b0 | a0) + 0.5 (P(b0 | a1) P(b0 | a0) + P(b1 | a1) P(b1 | a0))
    = 0.2 * 0.2 + 0.5 (0.8 * 0.2 + 0.2 * 0.8) = 0.2."""
    problem = _problem_with_holdout([[0.4, 0.1], [0.1, 0.4]], [[0.1, 0.4], [0.4, 0.1]])
    identity = pb.MechanismResult(kind="mapping", mapping=np.eye(2))
    out = HoldoutAttack().compute(problem, identity, delta=0.0)
    assert out["holdout_map_accuracy"] == pytest.approx(0.2)
    assert out["holdout_map_accuracy_prior"] == pytest.approx(0.2)
    assert out["holdout_auc"] == pytest.approx(0.2)
    # when the held-out users look like the design users, the design numbers come back
    same = _problem_with_holdout([[0.3, 0.1], [0.2, 0.4]], [[30, 10], [20, 40]])
    out = HoldoutAttack().compute(same, identity, delta=0.0)
    assert out["holdout_map_accuracy"] == pytest.approx(0.7)
    assert out["holdout_auc"] == pytest.approx(_auc_by_pairs([[0.3, 0.1], [0.2, 0.4]]))


def _auc_by_pairs(joint: list[list[float]]) -> float:
    """AUC of scoring b by p(a1 | b), counting every (positive, negative) pair."""
    P = np.asarray(joint, float)
    score = P[1] / P.sum(0)
    pos, neg = P[1] / P[1].sum(), P[0] / P[0].sum()
    return float(sum(pos[i] * neg[j] * (1.0 if score[i] > score[j] else
                                        0.5 if score[i] == score[j] else 0.0)
                     for i in range(P.shape[1]) for j in range(P.shape[1])))


def test_holdout_metrics_skip_problems_without_holdout() -> None:
    record = execute_run(RunSpec(mechanism="identity", dataset="synthetic", delta=0.0,
                                 dataset_params={"m": 2}))
    assert record["status"] == "ok"
    assert not any(k.startswith("holdout") for k in record["metrics"])


def test_surrogate_run_carries_the_holdout_fields(capsys) -> None:
    code = main(["run", "-m", "sppm", "-d", f"{SURROGATE}:holdout=0.3,holdout_seed=1",
                 "--delta", "0.3", "--json", "--no-store"])
    out = capsys.readouterr().out
    assert code == 0, out
    (record,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    m = record["metrics"]
    for key in ("holdout_mi_bits", "holdout_distortion", "holdout_auc", "holdout_map_accuracy"):
        assert isinstance(m[key], float), key
    assert 0.0 <= m["holdout_mi_bits"] <= m["holdout_prior_mi_bits"] + 1e-9


def test_classifier_attacks_test_on_held_out_records() -> None:
    pytest.importorskip("sklearn")
    record = execute_run(RunSpec(mechanism="expmec", dataset=SURROGATE, delta=0.5, seed=0,
                                 dataset_params={"holdout": 0.3, "holdout_seed": 1},
                                 metrics=("nb_attack", "lr_attack")))
    assert record["status"] == "ok", record.get("error")
    m = record["metrics"]
    for p in ("nb", "lr"):
        assert 0.0 <= m[f"{p}_holdout_auc"] <= 1.0
        assert 0.0 <= m[f"{p}_holdout_accuracy"] <= 1.0
        assert m[f"{p}_holdout_records"] == m["holdout_users"] - m["holdout_outside"]


def test_plugin_bias_is_miller_madow() -> None:
    from privbench.plugins.metrics.holdout import plugin_bias_bits

    counts = np.array([[3.0, 1.0, 0.0], [2.0, 4.0, 0.0]])  # 10 users, 2 values of A
    released = np.array([[0.3, 0.1, 0.0], [0.2, 0.4, 0.0]])  # 2 reachable outputs
    assert plugin_bias_bits(counts, released) == pytest.approx(1 * 1 / (2 * 10 * np.log(2)))
    # independent A and B: the plug-in leakage of many small samples averages near it
    rng = np.random.default_rng(0)
    n, users = 6, 400
    shows = []
    for _ in range(300):
        a = rng.integers(0, 2, users)
        b = rng.integers(0, n, users)
        table = np.zeros((2, n))
        np.add.at(table, (a, b), 1.0)
        shows.append(pb.metrics.mutual_information(
            pb.PrivacyProblem.from_arrays(table, np.ones((n, n)) - np.eye(n)), np.eye(n)))
    expected = plugin_bias_bits(np.ones((2, n)) * users / (2 * n), np.ones((2, n)))
    assert np.mean(shows) == pytest.approx(expected, rel=0.15)


def test_report_draws_holdout_and_learning_curve_figures(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    from privbench.plugins.reporters.html import build_report
    from privbench.results.store import ResultStore

    db = tmp_path / "runs.sqlite"
    with ResultStore(db) as store:
        for fraction in (0.2, 1.0):
            for delta in (0.2, 0.6):
                store.add(execute_run(RunSpec(
                    mechanism="expmec", dataset=SURROGATE, delta=delta, seed=0,
                    dataset_params={"holdout": 0.3, "holdout_seed": 1,
                                    "design_fraction": fraction})))
    host = pb.get_host()
    index, figures = build_report(db, tmp_path / "report", figures=host.figures(),
                                  outputs=host.outputs())
    names = sorted(f.name for f in figures)
    assert sum(n.endswith("-design-vs-holdout.csv") for n in names) == 2  # one per design size
    assert [n for n in names if "learning-curve" in n] == [
        "politics-tv-surrogate-learning-curve-politics-tv-surrogate-holdout-0-3-holdout-seed-1.csv"]
    assert "Learning curve: held-out leakage against design size" in index.read_text()
