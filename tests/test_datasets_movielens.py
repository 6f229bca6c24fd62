"""movielens adapter: the preference formula, 100K and 1M formats, bad input, real copy."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.datasets import movielens as ml

GENRES = ("unknown", "Action", "Comedy", "Drama")


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRIVBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PRIVBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIVBENCH_OFFLINE", "1")


def write_100k(folder: Path, *, users: list[str] | None = None,
               ratings: list[str] | None = None, items: list[str] | None = None) -> Path:
    """A tiny ml-100k in the official format: tabs in u.data, '|' elsewhere, Latin-1 u.item."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "u.genre").write_text("".join(f"{g}|{i}\n" for i, g in enumerate(GENRES)) + "\n")
    flags = {1: "0|1|0|0", 2: "0|0|1|0", 3: "0|1|1|0", 4: "0|0|0|1", 5: "1|0|0|0"}
    titles = {1: "Heat (1995)", 2: "Café au lait (1993)", 3: "True Lies (1994)",
              4: "Léon (1994)", 5: "Unknown (1996)"}
    items = items or [f"{i}|{titles[i]}|01-Jan-1995||http://us.imdb.com/x|{flags[i]}"
                      for i in titles]
    (folder / "u.item").write_bytes(("\n".join(items) + "\n").encode("latin-1"))
    users = users or ["1|24|M|technician|85711", "2|53|F|other|94043", "3|23|M|writer|32067",
                      "4|33|F|other|15213"]
    (folder / "u.user").write_text("\n".join(users) + "\n")
    ratings = ratings or [
        "1\t1\t5\t874965758", "1\t3\t4\t876893171", "1\t2\t3\t878542960",
        "2\t2\t4\t888551441", "2\t4\t5\t888551442",
        "3\t1\t4\t879270459", "3\t3\t2\t879270460",
        "4\t4\t5\t889751712", "4\t2\t4\t889751713", "4\t5\t1\t889751714",
    ]
    (folder / "u.data").write_text("\n".join(ratings) + "\n")
    return folder


def write_1m(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "movies.dat").write_bytes((
        "1::Toy Story (1995)::Animation|Children's|Comedy\n"
        "2::Jumanji (1995)::Adventure|Children's|Fantasy\n"
        "3::Cité des enfants perdus, La (1995)::Adventure|Sci-Fi\n"
        "4::Heat (1995)::Action|Crime|Thriller\n").encode("latin-1"))
    (folder / "users.dat").write_text("1::F::1::10::48067\n2::M::56::16::70072\n"
                                      "3::M::25::15::55117\n")
    (folder / "ratings.dat").write_text(
        "1::1::5::978300760\n1::2::3::978302109\n2::3::4::978301968\n2::4::5::978300275\n"
        "3::4::3::978824291\n3::1::4::978302268\n")
    return folder


def test_preference_formula_by_hand() -> None:
    # 3 movies: m0 in {g0}, m1 in {g0, g1}, m2 in {g1}; movies per genre: g0 = 2, g1 = 2
    genres = np.array([[1, 0], [1, 1], [0, 1]])
    # user 0 rated m0 and m1 (m0 twice: counted once); user 1 rated m2 only
    pref = ml.genre_preferences(np.array([0, 0, 0, 1]), np.array([0, 1, 0, 2]), 3, genres)
    # user 0: share g0 = 2/2, g1 = 1/2 -> / 2 movies each; user 1: g1 = 1/1 / 2; user 2: none
    assert np.allclose(pref, [[0.5, 0.25], [0.0, 0.5], [0.0, 0.0]])


def test_top_genre_profile_ties_and_zeros() -> None:
    pref = np.array([[0.1, 0.3, 0.3, 0.0], [0.0, 0.0, 0.2, 0.0], [0.4, 0.1, 0.2, 0.3]])
    bits = ml.top_genre_profile(pref, 2)
    assert bits.tolist() == [[0, 1, 1, 0],   # tie at 0.3 keeps both: the two largest
                             [0, 0, 1, 0],   # only one positive preference: one bit
                             [1, 0, 0, 1]]
    assert ml.top_genre_profile(np.array([[0.2, 0.2, 0.2]]), 1).tolist() == [[1, 0, 0]]


def test_100k_fixture(tmp_path: Path) -> None:
    write_100k(tmp_path / "ml-100k")
    problem = ml.MovieLens(top_genres=2, data_dir=str(tmp_path)).load()
    assert problem.attributes == GENRES
    assert problem.private_labels == ("F", "M")
    prefs = problem.catalog.tables["preferences"]
    # user 1 rated movies 1 (Action), 3 (Action, Comedy), 2 (Comedy) of 5;
    # movies per genre: unknown 1, Action 2, Comedy 2, Drama 1
    assert prefs.loc[1].tolist() == pytest.approx([0, (2 / 3) / 2, (2 / 3) / 2, 0])
    # user 4 rated 4 (Drama), 2 (Comedy), 5 (unknown): unknown and Drama (1 movie) win
    assert prefs.loc[4].tolist() == pytest.approx([1 / 3, 0, (1 / 3) / 2, 1 / 3])
    records = problem.records.set_index("user_id")
    symbol = {u: problem.symbols[records.loc[u, "symbol"]] for u in records.index}
    assert symbol == {1: ("Action", "Comedy"), 2: ("Comedy", "Drama"), 3: ("Action", "Comedy"),
                      4: ("unknown", "Drama")}
    assert problem.n == 3 and problem.symbols[0] == ("Action", "Comedy")
    assert problem.joint[:, 0] * 4 == pytest.approx([0, 2])  # both are men
    assert records["n_ratings"].to_dict() == {1: 3, 2: 2, 3: 2, 4: 3}
    assert len(problem.ratings.table) == 10
    titles = problem.catalog.tables["movies"]["title"].tolist()
    assert "Café au lait (1993)" in titles and "Léon (1994)" in titles  # Latin-1 decoded
    D = problem.distortion.to_dense()
    assert D[0, 1] == 2 and D[1, 2] == 2 and D[0, 2] == 4
    assert problem.features.shape == (4, 4)
    assert problem.name == "movielens[variant=100k,top_genres=2]"


def test_100k_from_official_zip(tmp_path: Path) -> None:
    folder = write_100k(tmp_path / "src" / "ml-100k")
    archive = tmp_path / "data" / "ml-100k.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        for f in folder.iterdir():
            zf.write(f, arcname=f"ml-100k/{f.name}")
    from_zip = ml.MovieLens(top_genres=2, data_dir=str(archive.parent)).load()
    from_dir = ml.MovieLens(top_genres=2, data_dir=str(folder)).load()
    assert np.allclose(from_zip.joint, from_dir.joint)
    assert str(archive) in from_zip.meta["files"]


def test_1m_fixture(tmp_path: Path) -> None:
    write_1m(tmp_path / "ml-1m")
    problem = ml.MovieLens(variant="1m", top_genres=1, data_dir=str(tmp_path)).load()
    assert problem.attributes == ml.GENRES_1M
    assert len(problem.records) == 3
    # user 1: Toy Story (Animation, Children's, Comedy), Jumanji (Adventure, Children's,
    # Fantasy); Children's has 2 movies, the others 1 -> share 1/2 / 1 = 0.5 beats 1 / 2
    prefs = problem.catalog.tables["preferences"].loc[1]
    assert prefs["Children's"] == pytest.approx(0.5)
    assert prefs["Animation"] == pytest.approx(0.5)
    records = problem.records.set_index("user_id")
    assert problem.symbols[records.loc[1, "symbol"]] == ("Animation",)  # tie: genre order
    assert "Cité des enfants perdus, La (1995)" in problem.catalog.tables["movies"]["title"].tolist()
    assert problem.name.startswith("movielens[variant=1m")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"ratings": ["1\t1\t5\t874965758", "9\t1\t4\t874965759"]},
     r"u.data, line 2: its user_id is not in .*u.user"),
    ({"ratings": ["1\t1\t5\t874965758", "2\t77\t4\t874965759"]},
     r"u.data, line 2: its item_id is not in .*u.item"),
    ({"ratings": ["1\t1\t5", "2\t1\t4\t874965759"]},
     r"u.data, line 1: expected 4 '\\t'-separated fields"),
    ({"ratings": ["1\t1\tfive\t874965758"]}, r"u.data, line 1: rating must be an integer"),
    ({"ratings": ["1\t1\t9\t874965758", "2\t2\t3\t1"]}, r"u.data, line 1: rating must be 1..5"),
    ({"users": ["1|24|M|technician|85711", "2|53|X|other|94043"]},
     r"u.user, line 2: gender must be one of F, M \(field 3\)"),
    ({"users": ["1|24|M|technician|85711", "1|53|F|other|94043"]},
     r"u.user, line 2: duplicate user id \(the user_id of line 1\)"),
    ({"items": ["1|Heat (1995)|01-Jan-1995||http://x|0|1|0"]},
     r"u.item, line 1: expected 9 '\|'-separated fields"),
])
def test_bad_100k_files(tmp_path: Path, kwargs: dict, match: str) -> None:
    write_100k(tmp_path / "ml-100k", **kwargs)
    with pytest.raises(pb.DataError, match=match):
        ml.MovieLens(top_genres=2, data_dir=str(tmp_path)).load()


def test_single_gender_and_bad_parameters(tmp_path: Path) -> None:
    write_100k(tmp_path / "ml-100k", users=["1|24|M|a|1", "2|53|M|b|2", "3|23|M|c|3",
                                            "4|33|M|d|4"])
    with pytest.raises(pb.DataError, match="needs two values"):
        ml.MovieLens(top_genres=2, data_dir=str(tmp_path)).load()
    with pytest.raises(pb.ValidationError, match="variant must be one of 100k, 1m"):
        ml.MovieLens(variant="25m", data_dir=str(tmp_path)).load()
    with pytest.raises(pb.ValidationError, match="top_genres must be a positive integer"):
        ml.MovieLens(top_genres=0, data_dir=str(tmp_path)).load()
    with pytest.raises(pb.ValidationError, match="exceeds the 4 genres"):
        ml.MovieLens(top_genres=5, data_dir=str(tmp_path)).load()


def test_missing_files_error_says_how(tmp_path: Path) -> None:
    folder = write_100k(tmp_path / "ml-100k")
    (folder / "u.user").unlink()
    with pytest.raises(pb.DataError) as info:
        ml.MovieLens(data_dir=str(tmp_path)).load()
    text = str(info.value)
    assert "u.data, u.user, u.item, u.genre not found" in text
    assert "ml-100k.zip" in text and "privbench data fetch movielens" in text


# -- the real copy -------------------------------------------------------------------

@pytest.mark.realdata
def test_real_movielens_100k(real_data_dir: Path) -> None:
    problem = ml.MovieLens(variant="100k", data_dir=str(real_data_dir)).load()
    assert len(problem.records) == 943
    assert problem.meta["n_ratings"] == 100000 and problem.meta["n_movies"] == 1682
    assert len(problem.attributes) == 19
    assert (problem.records["gender"] == "F").sum() == 273  # u.user: 273 F, 670 M
    assert np.all(problem.features.sum(axis=1) == 6)  # every user has >= 6 genres rated
    assert problem.n == problem.meta["n_distinct_profiles"]
    assert problem.prior_mi_bits == pytest.approx(0.5331, abs=1e-4)  # pinned (measured)
    assert len(problem.ratings.table) == 100000


def test_1m_found_through_environment(tmp_path: Path, monkeypatch) -> None:
    write_1m(tmp_path / "data" / "ml-1m")
    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(tmp_path / "data"))
    problem = ml.MovieLens(variant="ml-1m", top_genres=2).load()
    assert problem.meta["origin"] == "PRIVBENCH_DATA_DIR" and len(problem.records) == 3


@pytest.mark.realdata
def test_real_movielens_cli_run(real_data_dir: Path, monkeypatch, capsys, host) -> None:
    import json

    from privbench.cli import main as cli_main

    monkeypatch.setenv("PRIVBENCH_DATA_DIR", str(real_data_dir))
    code = cli_main(["run", "-m", "expmec", "-d", "movielens:variant=100k", "--delta", "0.1",
                     "--json", "--no-store"])
    assert code == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["status"] == "ok"
    assert record["mi_bits"] <= record["prior_mi_bits"] + 1e-9
