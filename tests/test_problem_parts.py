"""Typed problem parts replace the string-keyed ``extras``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.plugins.metrics.mapping import FeatureLeakage


class _NeedsRatings(pb.MappingMechanism):
    name = "needs_ratings"
    needs = ("ratings",)

    def __init__(self) -> None:
        pass

    def run(self, problem, delta):
        return self.result(sp.identity(problem.n, format="csc"))


class _Misspelt(pb.Metric):
    name = "misspelt_metric"
    needs = frozenset({"mappping"})


class _Hook:
    @pb.hookimpl
    def privbench_register_mechanisms(self):
        return [_NeedsRatings]

    @pb.hookimpl
    def privbench_register_metrics(self):
        return [_Misspelt]


def test_a_run_without_a_needed_part_is_a_clean_skip(host) -> None:
    host.pm.register(_Hook(), name="parts-test")
    spec = pb.RunSpec(mechanism="needs_ratings", dataset="synthetic", dataset_params={"m": 3},
                      delta=1.0)
    record = pb.execute_run(spec.to_dict())
    assert record["status"] == "skip" and "ratings" in record["error"]
    row = next(r for r in host.plugins() if r.name == "misspelt_metric")
    assert row.status == "broken" and "mappping" in row.reason


def test_missing_parts_and_run_copies() -> None:
    problem = pb.load_dataset("politics_tv_surrogate")
    assert problem.missing_parts(("ratings", "coding", "targets", "records")) == ["targets"]
    view = problem.for_run()
    view.ratings.table.loc[0, "rating"] = -99.0
    with pytest.raises(ValueError, match="read-only"):
        view.coding.profile_codes[0, 0] = 7
    assert problem.ratings.table.loc[0, "rating"] != -99.0


def test_per_attribute_leakage_is_one_computation(tmp_path) -> None:
    """Table 1: the data set's attribute_mi and the feature_leakage metric agree."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 400)
    b = rng.integers(0, 4, 400)
    private = np.where(rng.random(400) < 0.3 + 0.2 * (a == 1), "yes", "no")
    path = tmp_path / "t.csv"
    path.write_text("private,a,b\n" + "".join(f"{p},a{x},b{y}\n" for p, x, y in zip(private, a, b, strict=True)))
    adapter = pb.get_dataset("csv", path=str(path), private="private")
    problem = adapter.load()
    table = adapter.attribute_mi(problem, np.eye(problem.n))
    result = pb.MechanismResult(kind="mapping", mapping=sp.identity(problem.n, format="csc"))
    metric = FeatureLeakage().compute(problem, result, delta=0.0)["feature_mi"]
    np.testing.assert_allclose(table["mi_bits"], [v["before"] for v in metric.values()], rtol=1e-12)
    np.testing.assert_allclose(table["mi_bits_released"], [v["after"] for v in metric.values()],
                               rtol=1e-12)
    # an independent count: I(A; F_0) from the records of users inside the alphabet
    records = problem.records[problem.records["symbol"] >= 0]
    codes = problem.coding.record_codes[records.index.to_numpy(), 0]
    joint = np.zeros((problem.n_private, codes.max() + 1))
    np.add.at(joint, (records["private"].to_numpy(), codes), 1.0)
    assert table["mi_bits"].iloc[0] == pytest.approx(pb.metrics.mutual_information_of_joint(joint),
                                                     rel=1e-9)
