"""politics_tv (a user's survey file) and the calibrated politics_tv_surrogate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbench as pb
from privbench.datasets import politics_tv as ptv
from privbench.datasets._alphabet import map_accuracy
from privbench.measures.information import mutual_information_of_joint

#: tolerances of the calibration tests (see test docstrings)
MI_TOL_ONE_SEED = 0.04  # ~2 standard deviations of one data set's plug-in I (0.018 bits)
MAP_TOL_ONE_SEED = 0.025  # ~2.5 standard deviations of one data set's MAP accuracy
MI_TOL_MEAN = 0.012  # mean over 24 seeds: ~3 standard errors
MAP_TOL_MEAN = 0.01


def write_survey(path: Path, rows: list[str], header: bool = True, sep: str = ",") -> Path:
    n = len(rows[0].split(sep)) - 4
    head = sep.join(["age", "gender", "state", "politics"] + [f"Show {i + 1}" for i in range(n)])
    path.write_text(((head + "\n") if header else "") + "\n".join(rows) + "\n")
    return path


ROWS = [
    "25-34,F,CA,Democrat,5,0,4,1,0,2",
    "35-44,M,TX,Republican,0,5,1,0,4,0",
    "18-24,F,NY,D,4,0,5,0,0,3",
    "45-54,M,OH,R,1,4,0,0,5,0",
    "25-34,M,WA,democrat,5,3,4,2,0,0",
    "55-64,F,FL,Republican,0,5,2,0,0,1",
]


def test_reads_documented_format(tmp_path: Path) -> None:
    path = write_survey(tmp_path / "survey.csv", ROWS)
    problem = ptv.PoliticsTV(path=str(path), shows="all").load()
    assert problem.private_labels == ("Democrat", "Republican")  # D / democrat normalised
    assert problem.records["private"].tolist() == [0, 1, 0, 1, 0, 1]
    assert problem.attributes == tuple(f"Show {i}" for i in range(1, 7))  # from the header
    # binary: r >= 4
    assert problem.features[0].tolist() == [1, 0, 1, 0, 0, 0]
    assert problem.features[4].tolist() == [1, 0, 1, 0, 0, 0]  # as users 1 and 3
    assert problem.n == 3 and problem.joint[0, 0] == pytest.approx(3 / 6)  # all Democrats
    assert problem.meta["surrogate"] is False and problem.meta["distortion"] == "hamming"
    # long-format ratings for the recommendation metric: the non-zero ratings only
    assert len(problem.ratings.table) == sum(
        int(v) > 0 for r in ROWS for v in r.split(",")[4:])


def test_top_shows_binary_and_stars(tmp_path: Path) -> None:
    path = write_survey(tmp_path / "s.csv", ROWS, header=False)
    problem = ptv.PoliticsTV(path=str(path), shows="top2").load()
    # seen counts: show1 4, show2 4, show3 5, show4 2, show5 2, show6 3 -> shows 1/2/3
    # tie between shows 1 and 2 broken by column order: top2 = shows 1 and 3
    assert problem.attributes == ("show 1", "show 3")
    assert problem.meta["shows"] == "top2"
    stars = ptv.PoliticsTV(path=str(path), shows="top2", ratings="stars").load()
    assert stars.features[:, 0].tolist() == [5, 0, 4, 1, 5, 0]
    assert stars.distortion.name == "l2" and stars.meta["distortion"] == "l2"
    l1 = ptv.PoliticsTV(path=str(path), ratings="stars", distortion="l1", shows="all").load()
    assert l1.distortion.name == "l1"


def test_tab_separated_and_line_numbers(tmp_path: Path) -> None:
    rows = [r.replace(",", "\t") for r in ROWS]
    path = write_survey(tmp_path / "s.tsv", rows, sep="\t")
    assert ptv.PoliticsTV(path=str(path)).load().n >= 2
    bad = list(ROWS)
    bad[2] = "18-24,F,NY,D,4,0,7,0,0,3"
    path = write_survey(tmp_path / "bad.csv", bad)
    with pytest.raises(pb.DataError, match=r"bad.csv, line 4: rating r_3 must be in 0..5"):
        ptv.PoliticsTV(path=str(path)).load()


@pytest.mark.parametrize(("rows", "match"), [
    ([ROWS[0], "35-44,M,TX,Republican,0,5,1"], r"line 3: expected 10 ','-separated fields"),
    ([ROWS[0], "35-44,M,TX,Republican,0,five,1,0,4,0"], r"line 3: r_2 must be an integer"),
    ([ROWS[0], "35-44,M,TX,,0,5,1,0,4,0"], r"line 3: the politics field is empty"),
    ([ROWS[0], ROWS[2], ROWS[4]], r"politics.*takes one value only"),
])
def test_bad_survey_files(tmp_path: Path, rows: list[str], match: str) -> None:
    path = write_survey(tmp_path / "s.csv", rows)
    with pytest.raises(pb.DataError, match=match):
        ptv.PoliticsTV(path=str(path), shows="all").load()


def test_bad_parameters_and_missing_file(tmp_path: Path) -> None:
    path = write_survey(tmp_path / "s.csv", ROWS)
    with pytest.raises(pb.ValidationError, match="path=FILE is required"):
        ptv.PoliticsTV().load()
    with pytest.raises(pb.DataError, match="does not exist"):
        ptv.PoliticsTV(path=str(tmp_path / "nope.csv")).load()
    for params, match in [({"ratings": "likes"}, "ratings must be one of binary, stars"),
                          ({"shows": "top9"}, "asks for 9 shows but the data have 6"),
                          ({"shows": "some"}, "shows must be 'all' or 'topN'"),
                          ({"distortion": "cosine"}, "distortion must be one of")]:
        with pytest.raises(pb.ValidationError, match=match):
            ptv.PoliticsTV(path=str(path), **params).load()
    (tmp_path / "empty.csv").write_text("\n\n")
    with pytest.raises(pb.DataError, match="the file is empty"):
        ptv.PoliticsTV(path=str(tmp_path / "empty.csv")).load()
    write_survey(tmp_path / "header_only.csv", ROWS[:1])
    (tmp_path / "header_only.csv").write_text(
        (tmp_path / "header_only.csv").read_text().splitlines()[0] + "\n")
    with pytest.raises(pb.DataError, match="no data rows after the header"):
        ptv.PoliticsTV(path=str(tmp_path / "header_only.csv")).load()


# -- the surrogate ---------------------------------------------------------------------

def test_surrogate_shape_and_labels() -> None:
    adapter = ptv.PoliticsTVSurrogate(seed=0)
    frame = adapter.generate()
    assert len(frame) == 1218 and len(frame.columns) == 4 + 50
    assert frame["politics"].value_counts().to_dict() == {"Democrat": 744, "Republican": 474}
    ratings = frame.iloc[:, 4:].to_numpy()
    assert ratings.min() == 0 and ratings.max() == 5
    design = ptv.show_design()
    assert design.groupby("panel", sort=False).size().tolist() == [n for _, n in ptv.PANELS]
    assert design["panel"].nunique() == 6 and len(design) == 50
    problem = adapter.load()
    assert "surrogate" in problem.name and problem.meta["surrogate"] is True
    assert "SURROGATE" in problem.meta["source"]
    assert problem.describe()["surrogate"] is True  # travels into stores and reports
    assert problem.n <= 32 and problem.meta["shows"] == "top5"
    # the five most seen shows are the design's top five
    top = design.index[design["top5"]].tolist()
    assert problem.catalog.tables["chosen_shows"]["show"].tolist() == top
    assert ptv.PoliticsTVSurrogate(seed=0).load().joint.tolist() == problem.joint.tolist()
    assert ptv.PoliticsTVSurrogate(seed=1).load().joint.tolist() != problem.joint.tolist()


def test_surrogate_calibration_model() -> None:
    """The calibrated model's expected plug-in I is the paper's 0.191 bits (by construction,
    to the solver's tolerance) and its expected MAP accuracy is within one point of 71%."""
    kappa = ptv.calibrate(1218, 744)
    mi, acc = ptv.expected_empirical(kappa, 1218, 744)
    assert mi == pytest.approx(ptv.TARGET_MI_BITS, abs=1e-3)
    assert acc == pytest.approx(ptv.TARGET_MAP_ACCURACY, abs=0.01)
    # the model's own I is lower: the plug-in estimate from 1,218 users overshoots
    assert mutual_information_of_joint(ptv.top5_prior(kappa, 744 / 1218)) < mi


def test_surrogate_calibration_default_seed() -> None:
    """The default data set: top-5 binarised I and MAP accuracy near the paper's values."""
    problem = ptv.PoliticsTVSurrogate().load()
    assert abs(problem.prior_mi_bits - ptv.TARGET_MI_BITS) < MI_TOL_ONE_SEED
    assert abs(map_accuracy(problem.joint) - ptv.TARGET_MAP_ACCURACY) < MAP_TOL_ONE_SEED


def test_surrogate_calibration_over_seeds() -> None:
    """Averaged over 24 seeds the generated data sets hit the targets closely."""
    mis, accs = [], []
    for seed in range(100, 124):
        problem = ptv.PoliticsTVSurrogate(seed=seed).load()
        mis.append(problem.prior_mi_bits)
        accs.append(problem.meta["map_accuracy"])
    assert abs(np.mean(mis) - ptv.TARGET_MI_BITS) < MI_TOL_MEAN
    assert abs(np.mean(accs) - ptv.TARGET_MAP_ACCURACY) < MAP_TOL_MEAN


def test_surrogate_about_a_third_of_shows_correlated() -> None:
    from scipy.stats import chi2_contingency

    frame = ptv.PoliticsTVSurrogate(seed=0).generate()
    dem = (frame["politics"] == "Democrat").to_numpy()
    significant = 0
    for col in frame.columns[4:]:
        liked = (frame[col] >= 4).to_numpy()
        table = [[np.sum(dem & liked), np.sum(dem & ~liked)],
                 [np.sum(~dem & liked), np.sum(~dem & ~liked)]]
        significant += chi2_contingency(table)[1] < 1e-3
    assert 12 <= significant <= 22  # one third of 50 is ~17
    assert ptv.show_design()["correlated"].sum() == 17


def test_surrogate_round_trips_through_the_documented_format(tmp_path: Path) -> None:
    adapter = ptv.PoliticsTVSurrogate(seed=3)
    path = adapter.to_csv(tmp_path / "surrogate.csv")
    from_file = ptv.PoliticsTV(path=str(path)).load()
    direct = adapter.load()
    assert np.allclose(from_file.joint, direct.joint)
    assert from_file.attributes == direct.attributes
    assert "surrogate" not in from_file.name  # a file is labelled by what it is read as


def test_surrogate_bad_parameters() -> None:
    with pytest.raises(pb.ValidationError, match="n_democrats must be between 1"):
        ptv.PoliticsTVSurrogate(n_users=10, n_democrats=10).load()
    with pytest.raises(pb.ValidationError, match="seed must be an integer"):
        ptv.PoliticsTVSurrogate(seed=-1).load()


def test_both_adapters_registered(host) -> None:
    names = host.datasets()
    assert names["politics_tv"] is ptv.PoliticsTV
    assert names["politics_tv_surrogate"] is ptv.PoliticsTVSurrogate
    problem = pb.load_dataset("politics_tv_surrogate", ratings="stars")
    assert problem.meta["ratings"] == "stars" and "surrogate" in problem.name
