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
