"""MovieLens 100K / 1M as in the SPPM paper, section 4.1 ("Movie dataset").

A user's preference for genre g is the share of the user's rated movies that are in g
divided by the number of movies in g (in the catalogue):

    pref(u, g) = (|rated(u) ∩ movies(g)| / |rated(u)|) / |movies(g)|

The public profile B is the binary vector over genres with the ``top_genres`` (default
6) most preferred genres set; only genres with a positive preference are set, and ties
are broken by the genre order of the data set, so a profile is reproducible. Private A
= gender. The alphabet is the set of distinct observed profiles (most frequent first;
``top_k`` keeps the most frequent ones), the distortion is the Hamming distance.
Users with no rating are left out. ``private=age`` takes the seven age groups of
MovieLens 1M (under 18, 18-24, 25-34, 35-44, 45-49, 50-55, 56+; 100K's ages in years
fall into the same groups) and ``private=occupation`` the occupations (21 on both).
The ratings travel in the ``ratings`` part for the recommendation-quality metric.

Formats (official archives): 100K: ``u.data`` (tab separated user, item, rating,
timestamp), ``u.user`` (``|``: user, age, gender, occupation, zip), ``u.item``
(``|``, Latin-1: item, title, release date, video date, URL, one 0/1 flag per genre),
``u.genre`` (``|``: name, index). 1M: ``ratings.dat`` (``::``: user, movie, rating,
timestamp), ``users.dat`` (``::``: user, gender, age, occupation, zip), ``movies.dat``
(``::``, Latin-1: movie, title, genres separated by ``|``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

from . import _files
from ._alphabet import parse_top_k, prior_summary
from ._common import AttributeTableMixin, FileBackedAdapter, check_choice, read_table
from ._sampling import RowSampledMixin, sample_alphabet

if TYPE_CHECKING:
    import pandas as pd

GROUPLENS = "https://files.grouplens.org/datasets/movielens"
REMOTES = {
    "100k": _files.Remote(
        url=f"{GROUPLENS}/ml-100k.zip",
        sha256="50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229",
        cache_name="ml-100k.zip", size=4924029),
    "1m": _files.Remote(
        url=f"{GROUPLENS}/ml-1m.zip",
        sha256="a6898adb50b9ca05aa231689da44c217cb524e7ebd39d264c56e2832f2c54e20",
        cache_name="ml-1m.zip", size=5917549),
}
MEMBERS = {
    "100k": ("u.data", "u.user", "u.item", "u.genre"),
    "1m": ("ratings.dat", "users.dat", "movies.dat"),
}
CHECKSUMS = {
    "100k": {
        "u.data": "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
        "u.user": "f120e114da2e8cf314fd28f99417c94ae9ddf1cb6db8ce0e4b5995d40e90e62c",
        "u.item": "553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701",
        "u.genre": "9757e0d3e6b298159a80dd48eaf938114690e911e39af97a76949ef1663610bb",
    },
    "1m": {},
}
#: genre order of MovieLens 1M (README); genres not listed are appended in sorted order
GENRES_1M = ("Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
             "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
             "Romance", "Sci-Fi", "Thriller", "War", "Western")
GENDERS = ("F", "M")
#: ``private=`` choices
PRIVATE = ("gender", "age", "occupation")
#: the seven age groups of MovieLens 1M (README: 1, 18, 25, 35, 45, 50, 56 = lower bounds)
AGE_GROUPS = ("Under 18", "18-24", "25-34", "35-44", "45-49", "50-55", "56+")
AGE_BOUNDS = (18, 25, 35, 45, 50, 56)
#: MovieLens 1M's occupation codes (README), named as 100K's u.occupation spells them
#: where it has the same category
OCCUPATIONS_1M = ("other", "educator", "artist", "administrator", "student",
                  "customer service", "healthcare", "executive", "farmer", "homemaker",
                  "K-12 student", "lawyer", "programmer", "retired", "salesman", "scientist",
                  "self-employed", "technician", "tradesman", "unemployed", "writer")


def age_group(age: np.ndarray) -> np.ndarray:
    """Age (years, or 1M's group code 1/18/25/...) -> index into :data:`AGE_GROUPS`."""
    return np.searchsorted(np.asarray(AGE_BOUNDS), np.asarray(age), side="right")


def private_attribute(users: pd.DataFrame, private: str, variant: str, where: str
                      ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each user's private value index and the labels, for ``private=gender|age|occupation``
    (age in the seven 1M groups on both variants; occupations sorted by name); a
    DataError when the users with ratings (in file ``where``) share one value."""
    codes, labels = _private_codes(users, private, variant)
    if len(np.unique(codes)) < 2:
        raise pb.DataError(
            f"movielens: every user with ratings in {where} has {private} "
            f"{labels[int(codes[0])] if len(codes) else '(none)'}; the private "
            "attribute needs two values")
    return codes, labels


def _private_codes(users: pd.DataFrame, private: str, variant: str
                   ) -> tuple[np.ndarray, tuple[str, ...]]:
    if private == "gender":
        return users["gender"].map({g: i for i, g in enumerate(GENDERS)}).to_numpy(), GENDERS
    if private == "age":
        return age_group(users["age"].to_numpy()).astype(np.int64), AGE_GROUPS
    names = users["occupation"].astype(str).str.strip()
    if variant == "1m":
        codes = users["occupation"].to_numpy()
        if ((codes < 0) | (codes >= len(OCCUPATIONS_1M))).any():
            raise pb.DataError("movielens: users.dat has an occupation code outside 0..20 "
                               "(the README's list)")
        names = users["occupation"].map(dict(enumerate(OCCUPATIONS_1M)))
    labels = tuple(sorted(set(names)))
    index = {v: k for k, v in enumerate(labels)}
    return names.map(index).to_numpy().astype(np.int64), labels


def how_to(variant: str) -> str:
    return (
        f"To supply the files: download ml-{variant}.zip from "
        f"https://grouplens.org/datasets/movielens/ and pass data_dir=FOLDER or set "
        f"PRIVBENCH_DATA_DIR=FOLDER, where FOLDER holds ml-{variant}.zip, its extracted "
        f"ml-{variant}/ folder or the files {', '.join(MEMBERS[variant])}; or run "
        f"`privbench data fetch movielens` (variant={variant}) where there is internet access."
    )


def genre_preferences(user_index: np.ndarray, item_index: np.ndarray, n_users: int,
                      item_genres: np.ndarray) -> np.ndarray:
    """pref[u, g] = (share of u's distinct rated movies in g) / (number of movies in g).

    :param user_index, item_index: one entry per rating (duplicates count once).
    :param item_genres: (items, genres) 0/1 flags of the catalogue.
    Genres without movies and users without ratings get preference 0.
    """
    G = np.asarray(item_genres, dtype=float)
    rated = sp.csr_array((np.ones(len(user_index)), (user_index, item_index)),
                         shape=(n_users, G.shape[0]))
    rated.sum_duplicates()
    rated.data[:] = 1.0
    in_genre = np.asarray(rated @ G)
    n_rated = np.asarray(rated.sum(axis=1)).reshape(-1, 1)
    share = np.divide(in_genre, n_rated, out=np.zeros_like(in_genre), where=n_rated > 0)
    size = G.sum(axis=0)
    return np.divide(share, size, out=np.zeros_like(share), where=size > 0)


def top_genre_profile(pref: np.ndarray, top: int) -> np.ndarray:
    """0/1 profile with the ``top`` largest positive preferences of each row set.

    Ties are broken by column order (a stable sort), so the profile is reproducible.
    """
    order = np.argsort(-pref, axis=1, kind="stable")[:, :top]
    rows = np.arange(pref.shape[0])[:, None]
    bits = np.zeros(pref.shape, dtype=np.int8)
    bits[rows, order] = (pref[rows, order] > 0).astype(np.int8)
    return bits


def _read_100k(source: _files.Source) -> dict[str, Any]:
    d = source.describe
    genres = read_table(_files.read_text(source, "u.genre", "latin-1"), d("u.genre"), "|",
                        ("genre", "index"), ints=("index",))
    if sorted(genres["index"]) != list(range(len(genres))):
        raise pb.DataError(f"{d('u.genre')}: genre indices must be 0..{len(genres) - 1} "
                           "without gaps")
    names = tuple(genres.sort_values("index")["genre"].str.strip())
    flags = tuple(f"g{i}" for i in range(len(names)))
    items = read_table(_files.read_text(source, "u.item", "latin-1"), d("u.item"), "|",
                       ("item_id", "title", "release_date", "video_release_date", "url", *flags),
                       ints=("item_id", *flags))
    bad = ~items[list(flags)].isin([0, 1]).all(axis=1)
    if bad.any():
        line = int(items.loc[bad, "line"].iloc[0])
        raise pb.DataError(f"{d('u.item')}, line {line}: genre flags must be 0 or 1")
    item_genres = items[list(flags)].to_numpy(dtype=np.int8)
    movies = items[["item_id", "title", "release_date"]].copy()
    users = read_table(_files.read_text(source, "u.user"), d("u.user"), "|",
                       ("user_id", "age", "gender", "occupation", "zip"), ints=("user_id", "age"),
                       choices={"gender": GENDERS})
    ratings = read_table(_files.read_text(source, "u.data"), d("u.data"), "\t",
                         ("user_id", "item_id", "rating", "timestamp"),
                         ints=("user_id", "item_id", "rating", "timestamp"))
    return {"genres": names, "item_genres": item_genres, "movies": movies, "items": items,
            "users": users, "ratings": ratings, "files": ("u.data", "u.user", "u.item")}


def _read_1m(source: _files.Source) -> dict[str, Any]:
    d = source.describe
    items = read_table(_files.read_text(source, "movies.dat", "latin-1"), d("movies.dat"),
                       "::", ("item_id", "title", "genres"), ints=("item_id",))
    lists = items["genres"].str.split("|")
    seen = sorted({g for gs in lists for g in gs if g} - set(GENRES_1M))
    names = GENRES_1M + tuple(seen)
    index = {g: k for k, g in enumerate(names)}
    item_genres = np.zeros((len(items), len(names)), dtype=np.int8)
    for r, gs in enumerate(lists):
        for g in gs:
            if g:
                item_genres[r, index[g]] = 1
    users = read_table(_files.read_text(source, "users.dat"), d("users.dat"), "::",
                       ("user_id", "gender", "age", "occupation", "zip"),
                       ints=("user_id", "age", "occupation"), choices={"gender": GENDERS})
    ratings = read_table(_files.read_text(source, "ratings.dat"), d("ratings.dat"), "::",
                         ("user_id", "item_id", "rating", "timestamp"),
                         ints=("user_id", "item_id", "rating", "timestamp"))
    return {"genres": names, "item_genres": item_genres,
            "movies": items[["item_id", "title", "genres"]].copy(), "items": items,
            "users": users, "ratings": ratings,
            "files": ("ratings.dat", "users.dat", "movies.dat")}


def _check_ids(frame: pd.DataFrame, column: str, where: str, what: str) -> None:
    dup = frame[column].duplicated()
    if dup.any():
        row = frame.loc[dup].iloc[0]
        first = int(frame.loc[frame[column] == row[column], "line"].iloc[0])
        raise pb.DataError(f"{where}, line {int(row['line'])}: duplicate {what} id (the "
                           f"{column} of line {first})")


class MovieLens(RowSampledMixin, AttributeTableMixin, FileBackedAdapter):
    """MovieLens 100K / 1M as in the SPPM paper, section 4.1 ("Movie dataset").

    :param variant: which release: ``100k`` (943 users) or ``1m`` (6,040 users).
    :param top_genres: the number of genres set in a user's binary profile: the ones the user
        prefers most (an integer from 1 to the number of genres, 19 in 100K, 18 in 1M).
    :param top_k: keep only the top_k most frequent profiles as the alphabet (an integer >= 1),
        or ``all`` (default) for every observed profile.
    :param private: the private attribute A: ``gender`` (the paper's), ``age`` (seven age
        groups) or ``occupation``.
    """

    name = "movielens"
    description = ("MovieLens 100K/1M: top-6 genre profile (binary), private gender, "
                   "Hamming distortion")
    source = "GroupLens Research, MovieLens 100K (ml-100k.zip) / 1M (ml-1m.zip)"
    homepage = "https://grouplens.org/datasets/movielens/"
    licence = ("GroupLens research-use licence: no redistribution without permission, "
               "acknowledge the data set in publications, no commercial use")
    citation = ("F. Maxwell Harper and Joseph A. Konstan. 2015. The MovieLens Datasets: "
                "History and Context. ACM TiiS 5(4), 19:1-19:19. https://doi.org/10.1145/2827872")
    test_parameters = {"variant": ["100k"], "top_genres": [3]}

    def __init__(self, variant: str = "100k", top_genres: int = 6, top_k: int | str | None = "all",
                 private: str = "gender", data_dir: str | None = None, download: bool = True,
                 **sampling: Any) -> None:
        self.variant = variant
        self.private = private
        self.top_genres = top_genres
        self.top_k = top_k
        self.data_dir = data_dir
        self.download = download
        super().__init__(**sampling)

    def _variant(self) -> str:
        value = str(self.variant).strip().lower().removeprefix("ml-")
        if value not in REMOTES:
            raise pb.ValidationError(f"movielens: variant must be one of "
                                     f"{', '.join(REMOTES)}; got {self.variant!r}")
        return value

    def check_params(self) -> None:
        check_choice(self.name, "private", self.private, PRIVATE)
        # the values that need no data, checked as the adapter is created (so that
        # `data info` refuses them as `run` does); load() checks them again
        self._top_genres()
        parse_top_k(self.top_k, dataset=self.name)
        super().check_params()

    def _top_genres(self) -> int:
        top = self.top_genres
        if isinstance(top, bool) or not isinstance(top, int) or top < 1:
            raise pb.ValidationError(
                f"movielens: top_genres must be a positive integer; got {top!r}")
        return top

    def file_spec(self) -> _files.FileSpec:
        v = self._variant()
        return _files.FileSpec(
            dataset=f"movielens (variant={v})", members=MEMBERS[v], folders=(f"ml-{v}",),
            archives=(f"ml-{v}.zip",), remotes=(REMOTES[v],), checksums=CHECKSUMS[v],
            how_to=how_to(v),
        )

    def fetch(self, force: bool = False, progress: bool = True) -> dict[str, Any]:
        out = super().fetch(force=force, progress=progress)
        out["variant"] = self._variant()
        return out

    def load(self) -> pb.PrivacyProblem:
        import pandas as pd

        variant = self._variant()
        top = self._top_genres()
        top_k = parse_top_k(self.top_k, dataset=self.name)
        sampling = self.sampling()
        source = self.locate()
        data = _read_100k(source) if variant == "100k" else _read_1m(source)
        users, items, ratings = data["users"], data["items"], data["ratings"]
        users_file, items_file, ratings_file = (source.describe(m) for m in (
            ("u.user", "u.item", "u.data") if variant == "100k"
            else ("users.dat", "movies.dat", "ratings.dat")))
        _check_ids(users, "user_id", users_file, "user")
        _check_ids(items, "item_id", items_file, "movie")
        names = data["genres"]
        if top > len(names):
            raise pb.ValidationError(
                f"movielens: top_genres = {top} exceeds the {len(names)} genres of the data")
        user_pos, item_pos = _rating_positions(users, items, ratings, users_file, items_file,
                                               ratings_file)
        pref = genre_preferences(user_pos, item_pos, len(users), data["item_genres"])
        n_ratings = np.bincount(user_pos, minlength=len(users))
        active = n_ratings > 0
        bits = top_genre_profile(pref, top)[active]
        users = users.loc[active].reset_index(drop=True)
        chosen = check_choice(self.name, "private", self.private, PRIVATE)
        private, private_labels = private_attribute(users, chosen, variant, users_file)
        sampled = sample_alphabet(bits, private, len(private_labels), top_k, sampling,
                                  dataset=self.name)
        alphabet, design = sampled.alphabet, sampled.design
        rows = users.drop(columns=["line"]).copy()
        rows["n_ratings"] = n_ratings[active]
        records = rows.iloc[design].reset_index(drop=True)
        records["private"] = private[design]
        records["symbol"] = alphabet.symbol
        joint = sampled.joint
        name = f"movielens[variant={variant},top_genres={top}"
        name += (f",top_k={top_k}" if top_k is not None else "") + (
            f",private={chosen}" if chosen != "gender" else "") + sampling.label() + "]"
        preferences = pd.DataFrame(pref[active], columns=list(names),
                                   index=pd.Index(users["user_id"], name="user_id"))
        meta = {
            "source": str(source.location), "origin": source.origin,
            "files": ", ".join(source.describe(m) for m in data["files"]),
            "data_files": dict(source.hashes),
            "variant": variant, "top_genres": top, "n_genres": len(names),
            **({"private": chosen} if chosen != "gender" else {}),
            "top_k": top_k if top_k is not None else "all",
            "n_ratings": int(len(ratings)), "n_movies": int(len(items)),
            "users_without_ratings": int((~active).sum()),
            **prior_summary(joint, alphabet),
            **sampled.meta(),
        }
        return pb.PrivacyProblem.from_arrays(
            joint=joint,
            distortion=pb.FeatureDistortion(alphabet.codes, "hamming"),
            symbols=[tuple(g for g, b in zip(names, row, strict=True) if b)
                     for row in alphabet.codes],
            attributes=names,
            private_labels=private_labels,
            records=records,
            features=bits[design].astype(float),
            name=name,
            meta=meta,
            coding=pb.ProfileCoding([[0, 1]] * len(names), alphabet.codes, bits[design]),
            holdout=sampled.holdout_part(rows, private, bits.astype(float)),
            ratings=pb.Ratings(
                ratings.drop(columns=["line"]).reset_index(drop=True),
                pd.DataFrame(data["item_genres"], columns=list(names),
                             index=pd.Index(items["item_id"], name="item_id"))),
            catalog=pb.Catalog({"movies": data["movies"].reset_index(drop=True),
                                "preferences": preferences}),
        )


def _rating_positions(users: pd.DataFrame, items: pd.DataFrame, ratings: pd.DataFrame,
                      users_file: str, items_file: str, ratings_file: str
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Row of each rating's user and movie; an unknown id or a rating outside 1..5 is a
    DataError naming the ratings file and line."""
    import pandas as pd

    user_pos = pd.Index(users["user_id"]).get_indexer(ratings["user_id"])
    item_pos = pd.Index(items["item_id"]).get_indexer(ratings["item_id"])
    for pos, col, what in ((user_pos, "user_id", users_file), (item_pos, "item_id", items_file)):
        if (pos < 0).any():
            r = int(np.flatnonzero(pos < 0)[0])
            raise pb.DataError(
                f"{ratings_file}, line {int(ratings['line'].iloc[r])}: its {col} "
                f"is not in {what}")
    bad = ~ratings["rating"].between(1, 5)
    if bad.any():
        r = int(np.flatnonzero(bad.to_numpy())[0])
        raise pb.DataError(f"{ratings_file}, line {int(ratings['line'].iloc[r])}: rating "
                           "must be 1..5")
    return user_pos, item_pos


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [MovieLens]
