"""census adapter: the UCI Adult format, the prior it builds, bad input, the real copy."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main as cli_main
from privbench.datasets import census
from privbench.datasets._alphabet import map_accuracy
from privbench.measures.information import mutual_information_of_joint

# age, workclass, fnlwgt, education, education-num, marital-status, occupation,
# relationship, race, sex, capital-gain, capital-loss, hours-per-week, native-country, income
TRAIN = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K",  # noqa: E501
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, <=50K",  # noqa: E501
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, 0, 0, 40, United-States, <=50K",  # noqa: E501
    "31, Private, 45781, Masters, 14, Never-married, Prof-specialty, Not-in-family, White, Female, 14084, 0, 50, United-States, >50K",  # noqa: E501
    "42, Private, 159449, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 5178, 0, 40, United-States, >50K",  # noqa: E501
    "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, >50K",  # noqa: E501
    "37, Private, 280464, Some-college, 10, Married-civ-spouse, Exec-managerial, Husband, Black, Male, 0, 0, 80, United-States, >50K",  # noqa: E501
]
TEST = [
    "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, <=50K.",  # noqa: E501
    "38, Private, 89814, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, 0, 0, 50, United-States, <=50K.",  # noqa: E501
    "44, Private, 160323, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 7688, 0, 40, United-States, >50K.",  # noqa: E501
    "34, Private, 198693, 10th, 6, Never-married, Other-service, Not-in-family, White, Male, 0, 0, 30, ?, <=50K.",  # noqa: E501
]


def write_adult(folder: Path, train: list[str] = TRAIN, test: list[str] = TEST) -> Path:
    """adult.data / adult.test exactly as UCI ships them (header line, dots, blank end)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adult.data").write_text("\n".join(train) + "\n\n", encoding="latin-1")
    (folder / "adult.test").write_text(
        "|1x3 Cross validator\n" + "\n".join(test) + "\n\n", encoding="latin-1")
    return folder


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real cache, no PRIVBENCH_DATA_DIR, no network."""
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")


def test_parses_official_format(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    frame = census.parse_adult((folder / "adult.test").read_text(), "adult.test")
    assert len(frame) == len(TEST)
    assert set(frame["income"]) == {"<=50K", ">50K"}  # trailing dots stripped
    assert frame["line"].tolist() == [2, 3, 4, 5]  # the validator line is line 1
    assert frame["age"].tolist() == [25, 38, 44, 34]


def test_prior_from_fixture(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    problem = census.Census(top_k="all", data_dir=str(folder)).load()
    # rows with '?' in a public attribute (occupation, native-country) are dropped
    assert problem.meta["rows_read"] == 11
    assert problem.meta["rows_dropped"] == 2
    assert len(problem.records) == 9
    assert problem.private_labels == ("<=50K", ">50K")
    assert problem.attributes == census.ATTRIBUTES
    # two profiles appear in both files (38 HS-grad divorced, 4x Bachelors married exec),
    # twice each; the tie is broken by the attribute codes ('30-39' < '40-49')
    assert problem.n == 7
    top = problem.symbols[0]
    assert top == ("30-39", "HS-grad", "Divorced", "Handlers-cleaners", "White", "Male",
                   "United-States")
    assert problem.joint[:, 0] * 9 == pytest.approx([2, 0])
    assert problem.joint[:, 1] * 9 == pytest.approx([0, 2])
    income = problem.records["income"].map({"<=50K": 0, ">50K": 1}).to_numpy()
    assert (problem.records["private"].to_numpy() == income).all()
    assert problem.records["split"].value_counts().to_dict() == {"train": 6, "test": 3}
    # Hamming distortion over the 7 attributes, zero diagonal
    D = problem.distortion.to_dense()
    assert D.shape == (7, 7) and np.all(np.diag(D) == 0) and D.max() <= 7
    a = problem.symbols.index(("30-39", "Masters", "Never-married", "Prof-specialty", "White",
                               "Female", "United-States"))
    b = problem.symbols.index(("30-39", "Bachelors", "Never-married", "Adm-clerical", "White",
                               "Male", "United-States"))
    assert D[a, b] == 3  # education, occupation, sex differ
    # features: one-hot of the 7 attributes, one 1 per attribute
    assert problem.features.shape[0] == 9
    assert (problem.features.sum(axis=1) == 7).all()
    assert problem.prior_mi_bits == pytest.approx(mutual_information_of_joint(problem.joint))
    assert problem.meta["map_accuracy"] == pytest.approx(map_accuracy(problem.joint))


def test_top_k_cuts_alphabet_and_marks_records(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    problem = census.Census(top_k=1, data_dir=str(folder)).load()
    assert problem.n == 1 and problem.name == "census[top_k=1]"
    inside = problem.records["symbol"] >= 0
    assert inside.sum() == 2 and (problem.records.loc[~inside, "symbol"] == -1).all()
    assert problem.meta["coverage"] == pytest.approx(2 / 9)


def test_missing_keep_and_split(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    kept = census.Census(top_k="all", missing="keep", data_dir=str(folder)).load()
    assert len(kept.records) == 11
    assert any("?" in s for s in kept.symbols)
    train = census.Census(top_k="all", split="train", data_dir=str(folder)).load()
    assert set(train.records["split"]) == {"train"} and len(train.records) == 6
    assert "split=train" in train.name


def test_only_adult_data_needed_for_train_split(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    (folder / "adult.test").unlink()
    assert len(census.Census(split="train", data_dir=str(folder)).load().records) == 6
    with pytest.raises(pb.DataError, match="adult.test"):
        census.Census(split="both", data_dir=str(folder)).load()


def test_attribute_mi_table(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    adapter = census.Census(top_k="all", data_dir=str(folder))
    problem = adapter.load()
    table = adapter.attribute_mi(problem)
    assert table["attribute"].tolist() == list(census.ATTRIBUTES)
    # by hand: sex vs income over the 9 users: F -> 1 x >50K; M -> 5 x <=50K, 3 x >50K
    joint = np.array([[0, 5], [1, 3]], dtype=float)
    sex = table.set_index("attribute").loc["sex", "mi_bits"]
    assert sex == pytest.approx(mutual_information_of_joint(joint))
    # the identity mapping releases every attribute as it is
    after = adapter.attribute_mi(problem, mapping=np.eye(problem.n))
    assert np.allclose(after["mi_bits_released"], after["mi_bits"])
    # a mapping to one symbol leaks nothing
    collapse = np.zeros((problem.n, problem.n))
    collapse[0, :] = 1
    assert np.allclose(adapter.attribute_mi(problem, mapping=collapse)["mi_bits_released"], 0)
    # scope=all includes users outside top_k
    cut = census.Census(top_k=1, data_dir=str(folder))
    full = cut.attribute_mi(scope="all")
    assert full.set_index("attribute").loc["sex", "mi_bits"] == pytest.approx(sex)


@pytest.mark.parametrize(("line", "match"), [
    ("39, State-gov, 77516, Bachelors, 13", r"line 2: expected 15 comma-separated fields"),
    (TRAIN[0].replace("<=50K", "maybe"), r"line 2: income must be <=50K or >50K"),
    (TRAIN[0].replace("39,", "thirty,", 1), r"line 2: column 'age' must be an integer"),
])
def test_malformed_line_names_file_and_line(tmp_path: Path, line: str, match: str) -> None:
    folder = write_adult(tmp_path / "d", train=[TRAIN[0], line, TRAIN[1]])
    with pytest.raises(pb.DataError, match=match) as info:
        census.Census(data_dir=str(folder)).load()
    assert str(folder / "adult.data") in str(info.value)


def test_bad_parameters(tmp_path: Path) -> None:
    folder = write_adult(tmp_path / "d")
    for params, match in [({"top_k": 0}, "top_k must be >= 1"),
                          ({"top_k": "many"}, "top_k must be a positive integer or 'all'"),
                          ({"split": "validation"}, "split must be one of both, train, test"),
                          ({"missing": "impute"}, "missing must be one of drop, keep"),
                          ({"download": "maybe"}, "download must be true or false")]:
        with pytest.raises(pb.ValidationError, match=match):
            census.Census(data_dir=str(folder), **params).load()
    with pytest.raises(pb.ValidationError, match="is not an existing folder"):
        census.Census(data_dir=str(tmp_path / "nowhere")).load()


def test_empty_alphabet_after_filtering(tmp_path: Path) -> None:
    only_missing = [r for r in TRAIN if "?" in r]
    folder = write_adult(tmp_path / "d", train=only_missing, test=[TEST[3]])
    with pytest.raises(pb.DataError, match="alphabet is empty"):
        census.Census(data_dir=str(folder)).load()


def test_single_income_class_is_an_error(tmp_path: Path) -> None:
    low = [r for r in TRAIN if "<=50K" in r]
    folder = write_adult(tmp_path / "d", train=low, test=[TEST[0]])
    with pytest.raises(pb.DataError, match="needs at least two values"):
        census.Census(top_k="all", data_dir=str(folder)).load()


def test_not_found_lists_places_and_how_to(tmp_path: Path, monkeypatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(empty))
    with pytest.raises(pb.DataError) as info:
        census.Census(data_dir=str(empty)).load()
    text = str(info.value)
    assert "adult.data, adult.test not found" in text
    assert "PRIVBENCH_OFFLINE is set" in text
    assert f"data_dir: {empty}" in text and f"PRIVBENCH_DATA_DIR: {empty}" in text
    assert str(tmp_path / "cache") in text
    assert "privbench data fetch census" in text
    assert not (tmp_path / "cache").exists()  # nothing cached


# -- the real copy -------------------------------------------------------------------

@pytest.mark.realdata
def test_real_adult_top300(real_data_dir: Path) -> None:
    adapter = census.Census(top_k=300, data_dir=str(real_data_dir))
    problem = adapter.load()
    assert problem.n == 300
    assert problem.meta["rows_read"] == 32561 + 16281
    assert len(problem.records) == 45222  # the usual count without missing values
    share_low = (problem.records["private"] == 0).mean()
    assert 0.74 < share_low < 0.78  # "roughly 76%" (SPPM paper)
    # pinned (measured: 0.3421 bits); a range would let nats (0.237) or a wrong prior pass
    assert problem.prior_mi_bits == pytest.approx(0.3421, abs=1e-4)
    info = adapter.info()
    assert info["files"]["found"] is True
    assert all(f["official_sha256"] for f in info["files"]["files"].values())


@pytest.mark.realdata
def test_real_adult_from_official_archive(real_data_dir: Path, tmp_path: Path) -> None:
    """adult.zip as UCI serves it (files at the top level), read without extracting."""
    src = real_data_dir / "adult"
    if not (src / "adult.data").is_file():
        src = real_data_dir
    archive = tmp_path / "uci" / "adult.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        for name in ("adult.data", "adult.test"):
            zf.write(src / name, arcname=name)
        zf.writestr("adult.names", "| names\n")
    from_zip = census.Census(top_k=300, data_dir=str(archive.parent)).load()
    from_dir = census.Census(top_k=300, data_dir=str(real_data_dir)).load()
    assert from_zip.n == 300
    assert np.allclose(from_zip.joint, from_dir.joint)


@pytest.mark.realdata
def test_real_adult_cli_run(real_data_dir: Path, monkeypatch, capsys, host) -> None:
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(real_data_dir))
    code = cli_main(["run", "-m", "expmec", "-d", "census:top_k=300", "--delta", "0.1",
                     "--json", "--no-store"])
    assert code == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["status"] == "ok" and line["n"] == 300
    assert line["mi_bits"] <= line["prior_mi_bits"] + 1e-9


@pytest.mark.realdata
@pytest.mark.parametrize("mechanism", ["identity", "sppm"])
def test_real_adult_holdout_run(real_data_dir: Path, mechanism: str, monkeypatch, capsys,
                                host) -> None:
    """The held-out study's command: the held-out fields, and identity's held-out leakage computed
    again from the held-out rows' raw columns (age by decade written out here)."""
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(real_data_dir))
    code = cli_main(["run", "-m", mechanism, "-d", "census:top_k=300,holdout=0.3,holdout_seed=1",
                     "--delta", "0.3", "--json", "--no-store"])
    assert code == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["status"] == "ok"
    m = record["metrics"]
    for key in ("holdout_mi_bits", "holdout_distortion", "holdout_auc", "holdout_map_accuracy"):
        assert isinstance(m[key], float), key
    problem = census.Census(top_k=300, holdout=0.3, holdout_seed=1,
                            data_dir=str(real_data_dir)).load()
    per_class = np.bincount(np.concatenate([problem.records["private"],
                                            problem.holdout.records["private"]]))
    assert per_class.sum() == 45222
    assert m["holdout_users"] == len(problem.holdout.records) == sum(
        round(0.3 * c) for c in per_class)  # stratified: 30% of each income class
    if mechanism != "identity":
        assert m["holdout_distortion"] > 0
        return

    def profile(frame):
        decade = (frame["age"].astype(int) // 10).astype(str)
        rest = frame[["education", "marital-status", "occupation", "race", "sex",
                      "native-country"]].astype(str)
        return decade + "|" + rest.agg("|".join, axis=1)

    alphabet = set(profile(problem.records)[problem.records["symbol"] >= 0])
    assert len(alphabet) == 300
    held = problem.holdout.records
    key = profile(held)
    inside = key.isin(alphabet)
    assert m["holdout_outside"] == int((~inside).sum())
    import pandas as pd

    table = pd.crosstab(held["income"][inside], key[inside]).to_numpy(dtype=float)
    P = table / table.sum()
    ind = P.sum(1, keepdims=True) @ P.sum(0, keepdims=True)
    nz = P > 0
    assert m["holdout_mi_bits"] == pytest.approx(float(np.sum(P[nz] * np.log2(P[nz] / ind[nz]))),
                                                 abs=1e-12)
    assert m["holdout_distortion"] == 0.0
