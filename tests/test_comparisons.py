"""Comparisons that say what is real (issue 33): baselines in every sweep, replicates,
paired significance in compare."""

from __future__ import annotations

import pytest

from privbench.running.plan import BASELINES, load_sweep_file, plan_runs


def _spec(tmp_path, extra: str = "", mechanisms: str = '"expmec"'):
    path = tmp_path / "s.toml"
    path.write_text(f"mechanisms = [{mechanisms}]\ndatasets = [\"synthetic:m=3\"]\n"
                    f"deltas = [0.5, 1.0]\n{extra}", encoding="utf-8")
    return load_sweep_file(path)


def test_sweeps_add_the_installed_baselines_at_every_budget(tmp_path, host):
    runs = plan_runs(_spec(tmp_path), load_datasets=False)
    installed = [b for b in BASELINES if b in host.mechanisms()]
    assert "identity" in installed
    assert sorted({r.mechanism for r in runs}) == sorted({"expmec", *installed})
    for name in installed:
        assert sorted(r.delta for r in runs if r.mechanism == name) == [0.5, 1.0]


def test_baselines_can_be_left_out_and_are_never_doubled(tmp_path, host):
    runs = plan_runs(_spec(tmp_path, "baselines = false\n"), load_datasets=False)
    assert {r.mechanism for r in runs} == {"expmec"}
    runs = plan_runs(_spec(tmp_path, mechanisms='"identity", "expmec"'), load_datasets=False)
    assert sum(r.mechanism == "identity" for r in runs) == 2


def test_baselines_must_be_a_boolean(tmp_path):
    from privbench.protocol.errors import ValidationError
    with pytest.raises(ValidationError, match="baselines"):
        _spec(tmp_path, 'baselines = "yes"\n')
