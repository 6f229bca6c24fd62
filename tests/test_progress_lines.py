"""Sweep progress lines name the run whole (seed included) and say the elapsed time and an
estimate of the time left; no timing is asserted, only what the line says."""

from __future__ import annotations

import io
import re

from privbench.running.progress import RunProgress, _duration


def _record(seed: int) -> dict:
    return {"status": "ok", "mechanism": "sppm", "params": {"tol": 1e-4}, "dataset": "synthetic",
            "dataset_params": {"m": 6}, "delta": 1.0, "seed": seed, "runtime_s": 0.25}


def test_lines_name_the_seed_and_give_elapsed_and_eta() -> None:
    stream = io.StringIO()
    with RunProgress(3, stream=stream) as progress:
        for seed in (0, 1, 2):
            progress.advance(_record(seed))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    assert re.fullmatch(r"\[1/3\] ok +sppm\[tol=0\.0001\] on synthetic\[m=6\] delta=1\.0 seed=0 "
                        r"\(0\.25 s\); elapsed \d+ s, ETA \d+ s", lines[0]), lines[0]
    assert "seed=2" in lines[2] and "ETA" not in lines[2]  # nothing left to estimate


def test_durations_read_as_a_person_would() -> None:
    assert [_duration(s) for s in (4.4, 185, 3720)] == ["4 s", "3 min 5 s", "1 h 2 min"]


def test_a_relative_budget_reads_as_its_fraction_of_d_const() -> None:
    stream = io.StringIO()
    record = {**_record(0), "delta": 0.28322064607362246, "metrics": {"relative_delta": 0.1}}
    with RunProgress(1, stream=stream) as progress:
        progress.advance(record)
    line = stream.getvalue().splitlines()[0]
    assert " delta=0.283221 (0.1 x d_const) seed=0 " in line, line
