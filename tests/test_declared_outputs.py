"""Metrics declare their outputs (name, unit, direction); the host collects them."""

from __future__ import annotations

import pytest

import privbench as pb


def test_output_refuses_unknown_unit_and_direction():
    with pytest.raises(ValueError, match="unit"):
        pb.Output("x", "furlongs")
    with pytest.raises(ValueError, match="direction"):
        pb.Output("x", "bits", "sideways")


def test_output_direction_orders_values():
    assert pb.Output("mi_bits", "bits", "lower").better(0.1, 0.2)
    assert pb.Output("error", "probability", "higher").better(0.4, 0.2)
    assert not pb.Output("distortion", "distortion").is_privacy


def test_host_collects_declared_outputs():
    outputs = pb.get_host().outputs()
    assert outputs["mi_bits"].unit == "bits" and outputs["mi_bits"].direction == "lower"
    assert outputs["distortion"].direction == "neutral"
    assert outputs["runtime_s"].unit == "seconds"


@pytest.mark.slow
def test_run_json_names_the_unit_of_every_output_it_holds(tmp_path):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "privbench", "run", "-m", "expmec", "-d",
                          "synthetic:m=3", "--delta", "1", "--json", "--no-store"],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    record = json.loads(out.stdout.splitlines()[0])
    units = record["units"]
    assert units["mi_bits"] == "bits" and units["maximal_leakage"] == "bits"
    assert units["lip_epsilon"] == units["ldp_epsilon_private"] == "nats"
    assert units["guessing_entropy"] == "guesses"
    held = set(record) | set(record["metrics"])
    assert set(units) <= held  # only outputs the record holds
