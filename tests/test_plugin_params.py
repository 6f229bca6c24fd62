"""Plugin parameters: shared ones declared once in a mixin, plugin-naming ones checked."""

from __future__ import annotations

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
