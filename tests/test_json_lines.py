"""``run --json`` lines hold the record without the bulky per-resample arrays unless
``--full`` (a census line was 32 KB, up to 134 KB); the top-level fields and
``metrics.converged`` stay (the ``--json`` contract, docs/cli.md)."""

from __future__ import annotations

import json

from privbench.running.records import record_json

RECORD = {"mechanism": "sppm", "dataset": "census", "status": "ok", "mi_bits": 0.1,
          "distortion": 0.3, "gap_bits": 1e-4, "runtime_s": 1.0, "delta": 0.3,
          "provenance": {"python": "3.11"},
          "metrics": {"converged": True, "mi_bits_ci95": [0.09, 0.11],
                      "bootstrap": {"resamples": 200, "key": "abc",
                                    "samples": {"mi_bits": [0.1234567] * 200}},
                      "posterior_roc": {"fpr": [i / 500 for i in range(500)]}}}


def test_json_line_leaves_bulky_values_out_and_says_so() -> None:
    slim = json.loads(record_json(RECORD, full=False))
    for key in ("status", "mi_bits", "distortion", "gap_bits", "runtime_s"):
        assert slim[key] == RECORD[key]
    assert slim["metrics"]["converged"] is True
    assert slim["metrics"]["mi_bits_ci95"] == [0.09, 0.11]
    assert slim["metrics"]["bootstrap"] == {"resamples": 200, "key": "abc"}
    assert "posterior_roc" not in slim["metrics"]
    assert slim["omitted"]["keys"] == ["bootstrap.samples", "posterior_roc"]
    assert len(record_json(RECORD, full=False)) < len(record_json(RECORD)) / 3


def test_full_keeps_everything_but_the_provenance() -> None:
    whole = json.loads(record_json(RECORD, full=True))
    assert len(whole["metrics"]["bootstrap"]["samples"]["mi_bits"]) == 200
    assert "omitted" not in whole and "provenance" not in whole
