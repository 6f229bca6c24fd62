"""``sweep --dry-run`` refuses what the sweep refuses, with the same message, and an error
about a key of a sweep file names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from privbench.cli import main

GRID = {"mechanisms": '["expmec"]', "datasets": '["synthetic:m=3"]', "deltas": "[0.5]",
        "baselines": "false"}
SHORT = "name,age,city,income\na,30,x,lo\nb,40,y,hi\nn,33\nc,50,z,lo\n"


def _spec(tmp_path: Path, **keys: str) -> Path:
    path = tmp_path / "grid.toml"
    path.write_text("".join(f"{k} = {v}\n" for k, v in {**GRID, **keys}.items()))
    return path


def _err(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


# (the key and its value in grid.toml, options, what the message says after the key)
CASES = [
    ("datasets", '["synthetic:m=3", "synthetic:m=99"]', [],
     "'datasets': Error creating dataset \"synthetic\": synthetic: m must be an integer in "
     "1..24; got 99"),
    ("datasets", '["csv:path={short},private=income"]', [],
     "'datasets': dataset 'csv:path={short},private=income': csv: {short}: Expected 4 fields "
     "in line 4, saw 2"),
    ("executor", '"nosuch"', [], "'executor': unknown executor 'nosuch'"),
    ("executor", '"process:max_mem_mb=-1"', [], "'executor': Error creating executor "
     "\"process\": process: max_mem_mb must be a number > 0; got -1"),
    ("mechanisms", '["spm"]', [], "'mechanisms': unknown mechanism 'spm' (did you mean"),
    ("mechanisms", '["expmec:beta=-1"]', [], "'mechanisms': Error creating mechanism "
     "\"expmec\": expmec: beta must be a finite number >= 0; got -1"),
    ("deltas", "[-0.5]", [], "'deltas': delta must be a finite number >= 0 (here: a "
     "distortion budget); got -0.5"),
    ("seeds", "[-1]", [], "'seeds': seed must be an integer in [0, 2^63 - 1]; got -1"),
    ("replicate_seeds", "[-1]", [], "'replicate_seeds': seed must be an integer in"),
    ("lp_backends", '["nosuch"]', [], "'lp_backends': unknown lp_backend 'nosuch'"),
    ("skip_metrics", '["nosuch"]', [], "'skip_metrics': unknown metric to skip 'nosuch'"),
    ("metrics", '["nosuch"]', [], "'metrics': unknown metric 'nosuch'"),
    # the file's workers = under the in-process default executor (was blamed on --workers)
    ("workers", "4", [], "'workers': workers = 4 needs an executor that runs in worker "
     "processes"),
]


@pytest.mark.parametrize(("key", "value", "options", "message"), CASES)
def test_dry_run_refuses_what_the_sweep_refuses_naming_file_and_key(
        tmp_path, capsys, key, value, options, message) -> None:
    short = tmp_path / "short.csv"
    short.write_text(SHORT)
    spec = _spec(tmp_path, **{key: value.replace("{short}", str(short))})
    db = tmp_path / "r.sqlite"
    code, out, dry = _err(capsys, ["sweep", str(spec), "--dry-run", "--db", str(db), *options])
    assert (code, out) == (2, "")
    assert dry.startswith(f"privbench sweep: error: {spec}: "
                          f"{message.replace('{short}', str(short))}"), dry
    code, _, real = _err(capsys, ["sweep", str(spec), "--db", str(db), *options])
    assert (code, real) == (2, dry)
    assert not db.exists()


@pytest.mark.parametrize(("keys", "options", "message"), [
    # a value on the command line is not the file's: the error does not name the file
    ({}, ["--no-metric", "nosuch"], "unknown metric to skip 'nosuch'"),
    ({"executor": '"process"'}, ["--max-mem", "10"], "--max-mem must be >= 512 MB"),
    ({}, ["--executor", "nosuch"], "unknown executor 'nosuch'"),
])
def test_options_from_the_command_line_are_checked_without_the_file(
        tmp_path, capsys, keys, options, message) -> None:
    spec = _spec(tmp_path, **keys)
    code, out, dry = _err(capsys, ["sweep", str(spec), "--dry-run", *options])
    assert (code, out) == (2, "")
    assert dry.startswith(f"privbench sweep: error: {message}"), dry
    code, _, real = _err(capsys, ["sweep", str(spec), "--no-store", *options])
    assert (code, real) == (2, dry)


def test_the_command_lines_executor_replaces_the_files(tmp_path, capsys) -> None:
    spec = _spec(tmp_path, executor='"nosuch"')
    code, out, _ = _err(capsys, ["sweep", str(spec), "--dry-run", "--executor", "local"])
    assert code == 0 and out.split() == ["expmec|synthetic[m=3]|delta=0.5|seed=None"]


def test_run_flags_name_no_file(capsys) -> None:
    code, _, err = _err(capsys, ["run", "-m", "spm", "-d", "synthetic:m=3", "--delta", "0.5",
                                 "--no-store"])
    assert code == 2 and err.startswith("privbench run: error: unknown mechanism 'spm'")
