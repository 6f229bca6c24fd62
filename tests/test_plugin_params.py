"""Plugin parameters: shared ones declared once in a mixin, plugin-naming ones checked."""

from __future__ import annotations

import numpy as np
import pytest

import privbench as pb
from privbench.datasets.census import Census
from privbench.datasets.csv_table import CSVTable

SAMPLING = ["holdout", "holdout_seed", "design_fraction", "prior", "smoothing"]


def test_a_mixin_declares_the_sampling_parameters_once() -> None:
    assert Census.param_names()[-5:] == SAMPLING and CSVTable.param_names()[-5:] == SAMPLING
    assert Census.param_defaults()["smoothing"] == 1.0
    adapter = Census.create(top_k=20, holdout=0.25, prior="smoothed")
    assert (adapter.holdout, adapter.prior, adapter.holdout_seed) == (0.25, "smoothed", 0)
    assert "holdout=0.25" in repr(adapter)
    with pytest.raises(pb.PluginError, match="unknown parameter.*holdouts"):
        Census.create(holdouts=0.2)
    with pytest.raises(pb.ValidationError, match="holdout must be a number"):
        Census.create(holdout="abc")  # the type check sees the mixin's default too


def test_a_parameter_naming_a_plugin_is_checked_before_any_run(tmp_path, capsys) -> None:
    from privbench.cli import main

    code = main(["run", "-m", "sppm:lp_backend=nope", "-d", "synthetic:m=3", "--delta", "1",
                 "--db", str(tmp_path / "r.sqlite")])
    assert code == 2 and "unknown lp_backend 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "r.sqlite").exists()


def test_size_limited_checks_max_n_and_skips_larger_problems() -> None:
    class Dense(pb.SizeLimited, pb.MappingMechanism):
        name = "dense_test"
        size_advice = "or use a sparse one"

        def __init__(self, max_n: int = 4, scale: float = 1.0) -> None:
            self.max_n = max_n
            self.scale = scale

        def check_params(self) -> None:
            super().check_params()
            if self.scale <= 0:
                raise pb.ValidationError("dense_test: scale must be > 0")

        def run(self, problem, delta):
            return self.result(np.eye(problem.n))

    with pytest.raises(pb.ValidationError, match="dense_test: max_n must be an integer >= 1"):
        Dense.create(max_n=0)
    with pytest.raises(pb.ValidationError, match="scale must be > 0"):
        Dense.create(scale=-1.0)  # the mechanism's own checks still run
    problem = pb.load_dataset("synthetic", m=3)  # n = 8
    skip, reason = Dense.create().skip(problem)
    assert skip and reason == ("dense_test keeps dense 8 x 8 arrays; n = 8 exceeds max_n = 4 "
                               "(raise it with dense_test:max_n=8 if you have the memory and "
                               "time, or use a sparse one)")
    assert Dense.create(max_n=8).skip(problem) == (False, None)
    assert pb.get_mechanism("optimal", max_n=5).skip(pb.load_dataset("random", n=6))[1] \
        .startswith("optimal solves a dense convex program with n² = 36 variables; n = 6")
