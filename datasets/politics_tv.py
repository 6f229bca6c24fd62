"""Politics-and-TV (quantized-mapping paper, section IV) and a calibrated surrogate.

``politics_tv`` reads the documented format from a user's file: one row per user,
``age, gender, state, politics, r_1, ..., r_50`` with ``r_i`` in 0..5 (0 = not rated),
comma separated (tab also accepted), with or without a header row (a header's rating
column names become the show names). Private A = politics; public B = the ratings of
the chosen shows: ``shows=all`` or ``top5`` (any ``topN``: the N most seen shows, i.e.
with the most non-zero ratings, ties by column order), as ``ratings=binary`` (1 when
r >= 4, as in the paper) or ``stars`` (0..5). The alphabet is the set of distinct
observed vectors (``top_k`` keeps the most frequent). Distortion: Hamming for binary,
l2 for stars (the paper's choice for each), or any of hamming|l1|l2|sq_l2.

The survey itself was never published. ``politics_tv_surrogate`` generates a data set
in the same format from a documented model calibrated to the paper's statistics:
1,218 users, 744 Democrats and 474 Republicans, 50 shows in 6 genre panels, about one
third of the shows correlated with politics, and for the 5 most seen shows binarised an
empirical I(A; B) of about 0.191 bits and a MAP accuracy of about 71%. Everything it
produces carries "surrogate" in its name and ``meta["surrogate"] = True``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import privbench as pb

from ._alphabet import check_private, parse_top_k, prior_summary
from ._common import check_choice, read_table
from ._files import check_file_size
from ._sampling import RowSampledMixin, RowSampling, sample_alphabet

if TYPE_CHECKING:
    import pandas as pd

DEMOGRAPHICS = ("age", "gender", "state", "politics")
DISTORTIONS = ("hamming", "l1", "l2", "sq_l2")
PARTY_ALIASES = {"d": "Democrat", "dem": "Democrat", "democrat": "Democrat",
                 "democratic": "Democrat", "r": "Republican", "rep": "Republican",
                 "republican": "Republican"}


def _parse_shows(value: Any, n_shows: int, dataset: str) -> int | None:
    """``all`` -> None; ``top5`` / ``top 5`` / 5 -> 5."""
    text = str(value).strip().lower().replace(" ", "")
    if text == "all":
        return None
    digits = text.removeprefix("top")
    if digits.isdigit() and int(digits) >= 1:
        k = int(digits)
        if k > n_shows:
            raise pb.ValidationError(f"{dataset}: shows={value!r} asks for {k} shows but the "
                                     f"data have {n_shows}")
        return k
    raise pb.ValidationError(f"{dataset}: shows must be 'all' or 'topN' such as 'top5'; "
                             f"got {value!r}")


def check_survey_params(dataset: str, ratings: Any, distortion: Any, top_k: Any) -> None:
    """The survey adapters' values that need no data (checked as the adapter is created,
    so that `data info` refuses them as `run` does); :func:`survey_problem` checks them
    again."""
    check_choice(dataset, "ratings", ratings, ("binary", "stars"))
    if distortion is not None:
        check_choice(dataset, "distortion", distortion, DISTORTIONS)
    parse_top_k(top_k, dataset=dataset)


def most_seen(ratings: np.ndarray, k: int | None) -> np.ndarray:
    """Column indices of the k shows with the most non-zero ratings (all when k is None)."""
    if k is None:
        return np.arange(ratings.shape[1])
    seen = (ratings > 0).sum(axis=0)
    return np.sort(np.argsort(-seen, kind="stable")[:k])


def survey_problem(frame: pd.DataFrame, show_names: list[str], *, ratings: str, shows: Any,
                   top_k: Any, distortion: Any, dataset: str, name: str,
                   meta: dict[str, Any], sampling: RowSampling | None = None) -> pb.PrivacyProblem:
    """The prior p(politics, ratings of the chosen shows) of a survey table."""
    import pandas as pd

    ratings = check_choice(dataset, "ratings", ratings, ("binary", "stars"))
    metric = "hamming" if ratings == "binary" else "l2"
    if distortion is not None:
        metric = check_choice(dataset, "distortion", distortion, DISTORTIONS)
    k_shows = _parse_shows(shows, len(show_names), dataset)
    top = parse_top_k(top_k, dataset=dataset)
    stars = frame[[f"r_{i + 1}" for i in range(len(show_names))]].to_numpy(dtype=np.int64)
    chosen = most_seen(stars, k_shows)
    public = stars[:, chosen]
    if ratings == "binary":
        public = (public >= 4).astype(np.int64)
    private, labels = check_private(frame["politics"], dataset=dataset, column="politics")
    sampling = sampling or RowSampling()
    sampled = sample_alphabet(public, private, len(labels), top, sampling, dataset=dataset)
    alphabet, design = sampled.alphabet, sampled.design
    rows = frame.drop(columns=["line"], errors="ignore").copy()
    rows.insert(0, "user_id", np.arange(1, len(frame) + 1))
    records = rows.iloc[design].reset_index(drop=True)
    records["private"] = private[design]
    records["symbol"] = alphabet.symbol
    joint = sampled.joint
    users, items = np.nonzero(stars)
    long = pd.DataFrame({"user_id": users + 1, "item_id": items + 1,
                         "rating": stars[users, items]})
    chosen_names = [show_names[i] for i in chosen]
    return pb.PrivacyProblem.from_arrays(
        joint=joint,
        distortion=pb.FeatureDistortion(alphabet.codes, metric),
        symbols=[tuple(int(v) for v in row) for row in alphabet.codes],
        attributes=chosen_names,
        private_labels=labels,
        records=records,
        features=public[design].astype(float),
        name=name[:-1] + sampling.label() + "]",
        meta={**meta, "ratings": ratings, "shows": "all" if k_shows is None else f"top{k_shows}",
              "distortion": metric, "top_k": top if top is not None else "all",
              "chosen_shows": ", ".join(chosen_names), **prior_summary(joint, alphabet),
              **sampled.meta()},
        coding=pb.ProfileCoding([sorted(set(public[:, j].tolist())) or [0]
                                 for j in range(public.shape[1])], alphabet.codes,
                                public[design]),
        holdout=sampled.holdout_part(rows, private, public.astype(float)),
        # coordinate j of a profile is show chosen[j] (item_id = column index + 1)
        ratings=pb.Ratings(long, pd.DataFrame(
            (np.arange(1, len(show_names) + 1)[:, None] == (chosen + 1)[None, :]).astype(float),
            index=pd.Index(np.arange(1, len(show_names) + 1), name="item_id"))),
        catalog=pb.Catalog({"shows": pd.DataFrame({"item_id": np.arange(1, len(show_names) + 1),
                                                   "name": show_names}),
                            "chosen_shows": pd.DataFrame({"show": chosen.tolist()})}),
    )


def read_survey(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """Parse the documented format; a malformed line names the file and the line."""
    try:
        check_file_size(f"politics_tv: {path}", path.stat().st_size)
        raw = path.read_bytes()
    except OSError as exc:
        raise pb.DataError(f"politics_tv: cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    lines = text.replace("\r\n", "\n").split("\n")
    first = next((i for i, x in enumerate(lines) if x.strip()), None)
    if first is None:
        raise pb.DataError(f"{path}: the file is empty; expected one row per user: "
                           "age, gender, state, politics, r_1, ..., r_50")
    sep = "\t" if "\t" in lines[first] and "," not in lines[first] else ","
    head = [f.strip() for f in lines[first].split(sep)]
    if len(head) < 5:
        raise pb.DataError(
            f"{path}, line {first + 1}: expected at least 5 {sep!r}-separated fields "
            f"(age, gender, state, politics, r_1, ...); found {len(head)}")
    has_header = not head[4].lstrip("-").isdigit()
    n_shows = len(head) - 4
    if has_header:
        show_names = head[4:]
        lines[first] = ""  # keep the line numbers of the data rows
    else:
        show_names = [f"show {i + 1}" for i in range(n_shows)]
    columns = DEMOGRAPHICS + tuple(f"r_{i + 1}" for i in range(n_shows))
    try:
        frame = read_table("\n".join(lines), str(path), sep, columns, ints=columns[4:])
    except pb.DataError as exc:
        if "the file is empty" in str(exc):
            raise pb.DataError(f"{path}: no data rows after the header") from None
        raise
    stars = frame[list(columns[4:])].to_numpy()
    bad = (stars < 0) | (stars > 5)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise pb.DataError(f"{path}, line {int(frame['line'].iloc[r])}: rating r_{c + 1} must "
                           f"be in 0..5 (0 = not rated; field {c + 5})")
    for col in DEMOGRAPHICS:
        frame[col] = frame[col].astype(str).str.strip()
    empty = frame["politics"] == ""
    if empty.any():
        raise pb.DataError(f"{path}, line {int(frame.loc[empty, 'line'].iloc[0])}: the "
                           "politics field is empty")
    frame["politics"] = frame["politics"].map(lambda v: PARTY_ALIASES.get(v.lower(), v))
    return frame, show_names


class PoliticsTV(RowSampledMixin, pb.DatasetAdapter):
    """Politics-and-TV (quantized-mapping paper, section IV) read from a user's own file.

    :param path: the survey file (one row per user: age, gender, state, politics, r_1..r_50
        with ratings 0..5, 0 = not rated); required.
    :param ratings: how a rating is released: ``binary`` (1 when r >= 4, the paper's) or
        ``stars`` (0..5).
    :param shows: the shows in the public profile: ``topN`` (the N most seen, e.g. ``top5``,
        the paper's) or ``all`` 50.
    :param top_k: keep only the top_k most frequent rating vectors as the alphabet (an
        integer >= 1), or ``all`` (default) for every observed one.
    :param distortion: the distortion between rating vectors: ``hamming``, ``l1``, ``l2`` or
        ``sq_l2`` (default: hamming for binary ratings, l2 for stars).
    """

    name = "politics_tv"
    description = ("Politics-and-TV survey from a user's file: TV ratings public, "
                   "politics private")
    source = ("your own copy of the Politics-and-TV survey (never published); format in "
              "the quantized-mapping paper, section IV")
    licence = "whatever applies to your file"
    citation = ("S. Salamatian, A. Zhang, F. du Pin Calmon, S. Bhamidipati, N. Fawaz, "
                "B. Kveton, P. Oliveira, N. Taft. How to hide the elephant- or the donkey- "
                "in the room: practical privacy against statistical inference for large "
                "data. IEEE GlobalSIP 2013.")

    def __init__(self, path: str | None = None, ratings: str = "binary", shows: str = "top5",
                 top_k: int | str | None = "all", distortion: str | None = None,
                 **sampling: Any) -> None:
        self.path = path
        self.ratings = ratings
        self.shows = shows
        self.top_k = top_k
        self.distortion = distortion
        super().__init__(**sampling)

    def check_params(self) -> None:
        check_survey_params(self.name, self.ratings, self.distortion, self.top_k)
        super().check_params()

    def load(self) -> pb.PrivacyProblem:
        if not self.path:
            raise pb.ValidationError(
                "politics_tv: path=FILE is required (one row per user: age, gender, state, "
                "politics, r_1..r_50); the survey was never published, see "
                "politics_tv_surrogate for a calibrated stand-in")
        path = Path(self.path).expanduser()
        if not path.is_file():
            raise pb.DataError(f"politics_tv: {path} does not exist or is not a file")
        frame, show_names = read_survey(path)
        tag = f"ratings={self.ratings},shows={self.shows}"
        return survey_problem(frame, show_names, ratings=self.ratings, shows=self.shows,
                              top_k=self.top_k, distortion=self.distortion, dataset=self.name,
                              name=f"politics_tv[{tag}]",
                              meta={"source": str(path), "surrogate": False},
                              sampling=self.sampling())

    def info(self) -> dict[str, Any]:
        data = super().info()
        data["format"] = "one row per user: age, gender, state, politics, r_1..r_50 (0..5)"
        if self.path:
            path = Path(self.path).expanduser()
            data["files"] = {"found": path.is_file(), "path": str(path),
                             "bytes": path.stat().st_size if path.is_file() else None}
        return data


# -- the surrogate ---------------------------------------------------------------------

PANELS = (("Sitcoms", 9), ("Reality Shows", 8), ("TV series", 9), ("Talk Shows", 8),
          ("News", 8), ("Sports", 8))
TARGET_MI_BITS = 0.191  # paper: top-5 most seen shows, binarised
TARGET_MAP_ACCURACY = 0.71
AGE_GROUPS = ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")
AGE_WEIGHTS = (0.22, 0.32, 0.2, 0.14, 0.08, 0.04)
STATES = ("AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT "
          "NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY").split()
#: the five most seen shows: (panel index, seen rate, like rate, lean); lean > 0 favours
#: Democrats, < 0 Republicans, in units of the calibrated log-odds difference
TOP5 = ((0, 0.85, 0.55, 0.0), (4, 0.82, 0.30, -1.0), (3, 0.80, 0.30, 1.0),
        (2, 0.78, 0.30, 1.0), (5, 0.76, 0.40, 0.0))
N_OTHER_CORRELATED = 14  # 3 of the top 5 + 14 others = 17 of 50, about one third
DESIGN_SEED = 20121106  # fixes the show design; the ``seed`` parameter draws the users


def show_design() -> pd.DataFrame:
    """The 50 shows of the surrogate: panel, name, seen rate, like rate and lean.

    The top five are fixed (``TOP5``); the other 45 get seen rates in [0.1, 0.5) and
    like rates in [0.35, 0.65) from a fixed design seed, and 14 of them a lean of
    ±(1..2) (seen and like log-odds move with politics); the rest are neutral.
    """
    import pandas as pd

    rng = np.random.default_rng(DESIGN_SEED)
    rows: list[dict[str, Any]] = []
    top_by_panel: dict[int, list[tuple[float, float, float]]] = {}
    for panel, seen, like, lean in TOP5:
        top_by_panel.setdefault(panel, []).append((seen, like, lean))
    for p, (panel, size) in enumerate(PANELS):
        fixed = top_by_panel.get(p, [])
        for i in range(size):
            if i < len(fixed):
                seen, like, lean = fixed[i]
                top = True
            else:
                seen, like, lean, top = rng.uniform(0.1, 0.5), rng.uniform(0.35, 0.65), 0.0, False
            rows.append({"panel": panel, "name": f"{panel} {i + 1}", "seen": seen, "like": like,
                         "lean": lean, "top5": top})
    design = pd.DataFrame(rows)
    others = np.flatnonzero(~design["top5"].to_numpy())
    pick = rng.choice(others, size=N_OTHER_CORRELATED, replace=False)
    signs = np.where(np.arange(N_OTHER_CORRELATED) % 2 == 0, 1.0, -1.0)
    design.loc[pick, "lean"] = signs * rng.uniform(1.0, 2.0, N_OTHER_CORRELATED)
    design["correlated"] = design["lean"] != 0
    return design


def _party_rates(base: np.ndarray, lean: np.ndarray, kappa: float) -> tuple[np.ndarray, ...]:
    """Rates for Democrats and Republicans: log-odds base ± kappa * lean / 2."""
    from scipy.special import expit, logit

    z = logit(base)
    return expit(z + kappa * lean / 2), expit(z - kappa * lean / 2)


def top5_prior(kappa: float, p_dem: float) -> np.ndarray:
    """The model's p(A, B) over the 32 binarised top-5 profiles (A: Democrat, Republican).

    For the top five only liking depends on politics, so which shows are the most seen
    does not; b = 1 when the show was seen and liked.
    """
    seen = np.array([t[1] for t in TOP5])
    like_d, like_r = _party_rates(np.array([t[2] for t in TOP5]),
                                  np.array([t[3] for t in TOP5]), kappa)
    cells = np.array(list(itertools.product((0, 1), repeat=len(TOP5))))
    out = []
    for prior, like in ((p_dem, like_d), (1 - p_dem, like_r)):
        b1 = seen * like
        out.append(prior * np.prod(np.where(cells == 1, b1, 1 - b1), axis=1))
    return np.vstack(out)


CALIBRATION_REPLICATES = 256
CALIBRATION_SEED = 1218


@functools.lru_cache(maxsize=16)
def _calibration_draws(n_users: int, n_democrats: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(CALIBRATION_SEED)
    return (rng.random((CALIBRATION_REPLICATES, n_democrats)),
            rng.random((CALIBRATION_REPLICATES, n_users - n_democrats)))


def expected_empirical(kappa: float, n_users: int, n_democrats: int) -> tuple[float, float]:
    """Mean plug-in I(A; B) (bits) and in-sample MAP accuracy of the top-5 binarised
    profile over simulated surveys of ``n_users`` users (common random numbers, so the
    result is a smooth, deterministic function of kappa)."""
    prior = top5_prior(kappa, n_democrats / n_users)
    cond = prior / prior.sum(axis=1, keepdims=True)
    draws = _calibration_draws(n_users, n_democrats)
    cells = cond.shape[1]
    counts = np.zeros((CALIBRATION_REPLICATES, 2, cells))
    for a in range(2):
        cdf = np.cumsum(cond[a])
        cdf[-1] = 1.0
        idx = np.searchsorted(cdf, draws[a], side="right")
        offset = np.arange(CALIBRATION_REPLICATES)[:, None] * cells
        counts[:, a, :] = np.bincount((idx + offset).ravel(),
                                      minlength=CALIBRATION_REPLICATES * cells
                                      ).reshape(CALIBRATION_REPLICATES, cells)
    P = counts / n_users
    pa = P.sum(axis=2, keepdims=True)
    pb = P.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * np.log2(P / (pa * pb)), 0.0)
    mi = terms.sum(axis=(1, 2))
    acc = P.max(axis=1).sum(axis=1)
    return float(mi.mean()), float(acc.mean())


@functools.lru_cache(maxsize=16)
def calibrate(n_users: int, n_democrats: int, target_bits: float = TARGET_MI_BITS) -> float:
    """The politics effect kappa whose *expected empirical* top-5 I(A; B) is the target.

    The plug-in estimate from n users overshoots the model's I (by about
    (|A| - 1)(|B| - 1) / (2 n ln 2) bits), so kappa is solved on the mean estimate over
    simulated surveys of the same size rather than on the model's I; the value of one
    generated data set then scatters around the target (standard deviation ~0.015 bits).
    """

    def gap(kappa: float) -> float:
        return expected_empirical(kappa, n_users, n_democrats)[0] - target_bits

    if gap(0.0) >= 0:
        return 0.0
    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
        if hi > 64:
            raise pb.ValidationError(f"politics_tv_surrogate: cannot reach I = {target_bits} "
                                     f"bits with {n_democrats} of {n_users} Democrats")
    from scipy.optimize import brentq

    return float(brentq(gap, 0.0, hi, xtol=1e-6))


def generate_survey(seed: int = 0, n_users: int = 1218, n_democrats: int = 744
                    ) -> tuple[pd.DataFrame, list[str], pd.DataFrame]:
    """A surrogate survey table in the documented format, its show names and design.

    Users are conditionally independent given politics: each show is seen with its
    party's seen rate and, if seen, liked (4 or 5 stars) with its party's like rate,
    otherwise rated 1..3. Demographics are drawn independently of everything else.
    """
    import pandas as pd

    design = show_design()
    kappa = calibrate(n_users, n_democrats)
    rng = np.random.default_rng(seed)
    politics = np.array(["Democrat"] * n_democrats + ["Republican"] * (n_users - n_democrats))
    rng.shuffle(politics)
    dem = politics == "Democrat"
    lean = design["lean"].to_numpy()
    seen_lean = np.where(design["top5"], 0.0, lean)  # top five: only liking moves
    seen_d, seen_r = _party_rates(design["seen"].to_numpy(), seen_lean, kappa)
    like_d, like_r = _party_rates(design["like"].to_numpy(), lean, kappa)
    seen_p = np.where(dem[:, None], seen_d, seen_r)
    like_p = np.where(dem[:, None], like_d, like_r)
    seen = rng.random(seen_p.shape) < seen_p
    liked = rng.random(seen_p.shape) < like_p
    high = np.where(rng.random(seen_p.shape) < 0.45, 5, 4)
    low = rng.choice(np.array([1, 2, 3]), size=seen_p.shape, p=[0.25, 0.35, 0.40])
    stars = np.where(seen, np.where(liked, high, low), 0)
    frame = pd.DataFrame({
        "age": rng.choice(AGE_GROUPS, size=n_users, p=AGE_WEIGHTS),
        "gender": rng.choice(np.array(["F", "M"]), size=n_users),
        "state": rng.choice(np.array(STATES), size=n_users),
        "politics": politics,
    })
    for i in range(stars.shape[1]):
        frame[f"r_{i + 1}"] = stars[:, i]
    design = design.assign(kappa=kappa)
    return frame, design["name"].tolist(), design


class PoliticsTVSurrogate(RowSampledMixin, pb.DatasetAdapter):
    """A seeded surrogate of Politics-and-TV, calibrated to the paper's statistics (not the real survey).

    :param seed: the generator's seed (an integer >= 0): each seed gives another survey of the
        same model.
    :param ratings: how a rating is released: ``binary`` (1 when r >= 4, the paper's) or
        ``stars`` (0..5).
    :param shows: the shows in the public profile: ``topN`` (the N most seen, e.g. ``top5``,
        the paper's) or ``all`` 50.
    :param top_k: keep only the top_k most frequent rating vectors as the alphabet (an
        integer >= 1), or ``all`` (default) for every observed one.
    :param distortion: the distortion between rating vectors: ``hamming``, ``l1``, ``l2`` or
        ``sq_l2`` (default: hamming for binary ratings, l2 for stars).
    :param n_users: the number of users generated (1,218 in the paper).
    :param n_democrats: how many of them are Democrats, the rest Republicans (744 in the
        paper; between 1 and n_users - 1).
    """

    name = "politics_tv_surrogate"
    description = ("SURROGATE Politics-and-TV: seeded generator calibrated to the paper's "
                   "statistics (not the real survey)")
    source = ("generated (surrogate): calibrated to the published statistics of the "
              "quantized-mapping paper, section IV; the real survey was never published")
    licence = "generated"
    citation = PoliticsTV.citation
    test_parameters = {"ratings": ["binary", "stars"], "shows": ["top5"]}

    def __init__(self, seed: int = 0, ratings: str = "binary", shows: str = "top5",
                 top_k: int | str | None = "all", distortion: str | None = None,
                 n_users: int = 1218, n_democrats: int = 744, **sampling: Any) -> None:
        self.seed = seed
        self.ratings = ratings
        self.shows = shows
        self.top_k = top_k
        self.distortion = distortion
        self.n_users = n_users
        self.n_democrats = n_democrats
        super().__init__(**sampling)

    def check_params(self) -> None:
        self._check()
        check_survey_params(self.name, self.ratings, self.distortion, self.top_k)
        super().check_params()

    def _check(self) -> None:
        for param in ("seed", "n_users", "n_democrats"):
            value = getattr(self, param)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise pb.ValidationError(f"{self.name}: {param} must be an integer >= 0; "
                                         f"got {value!r}")
        if not 0 < self.n_democrats < self.n_users:
            raise pb.ValidationError(
                f"{self.name}: n_democrats must be between 1 and n_users - 1 (both parties "
                f"present); got {self.n_democrats} of {self.n_users}")

    def generate(self) -> pd.DataFrame:
        """The surrogate survey table (documented format, show names as column names)."""
        self._check()
        frame, names, _ = generate_survey(self.seed, self.n_users, self.n_democrats)
        return frame.rename(columns={f"r_{i + 1}": n for i, n in enumerate(names)})

    def to_csv(self, path: str | Path) -> Path:
        """Write the surrogate in the documented format (with a header row)."""
        path = Path(path)
        self.generate().to_csv(path, index=False)
        return path

    def load(self) -> pb.PrivacyProblem:
        self._check()
        frame, names, design = generate_survey(self.seed, self.n_users, self.n_democrats)
        tag = f"seed={self.seed},ratings={self.ratings},shows={self.shows}"
        problem = survey_problem(
            frame, names, ratings=self.ratings, shows=self.shows, top_k=self.top_k,
            distortion=self.distortion, dataset=self.name,
            name=f"politics_tv_surrogate[{tag}]",
            meta={"source": "SURROGATE: generated, calibrated to the quantized-mapping "
                            "paper's published statistics; not the real survey",
                  "surrogate": True, "seed": self.seed,
                  "calibration_kappa": float(design["kappa"].iloc[0]),
                  "target_mi_bits": TARGET_MI_BITS,
                  "target_map_accuracy": TARGET_MAP_ACCURACY},
            sampling=self.sampling())
        return dataclasses.replace(problem, catalog=pb.Catalog(
            {**problem.catalog.tables, "surrogate_design": design}))

    def info(self) -> dict[str, Any]:
        data = super().info()
        data["surrogate"] = True
        data["calibration"] = {
            "users": 1218, "democrats": 744, "republicans": 474, "shows": 50,
            "panels": {p: n for p, n in PANELS},
            "target_top5_binary_mi_bits": TARGET_MI_BITS,
            "target_top5_binary_map_accuracy": TARGET_MAP_ACCURACY,
            "correlated_shows": int(show_design()["correlated"].sum()),
        }
        return data


@pb.hookimpl
def privbench_register_datasets() -> list[type]:
    return [PoliticsTV, PoliticsTVSurrogate]
