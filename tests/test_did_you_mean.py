"""Every name a user types gets a "did you mean" when it is close to a known one."""

from __future__ import annotations

import pytest

from privbench.cli import main
from privbench.protocol.errors import did_you_mean
from privbench.results.store import ResultStore


def _store(db) -> None:
    with ResultStore(db) as s:
        for mech in ("sppm", "expmec"):
            for d in (1.0, 2.0):
                s.add({"mechanism": mech, "dataset": "toy", "params": {}, "dataset_params": {},
                       "delta": d, "status": "ok", "mi_bits": 0.5 / d, "prior_mi_bits": 1.0,
                       "distortion": d, "n": 4, "metrics": {"dataset_name": "toy"},
                       "run_key": f"{mech}|toy|delta={d}"})


@pytest.mark.parametrize(("argv", "suggestion"), [
    (["run", "-m", "spm", "-d", "synthetic:m=3", "--delta", "1", "--no-store"], "'sppm'"),
    (["run", "-m", "sppm", "-d", "synthetc:m=3", "--delta", "1", "--no-store"], "'synthetic'"),
    (["run", "-m", "sppm", "-d", "synthetic:m=3", "--delta", "1", "-M", "bootstrp",
      "--no-store"], "'bootstrap'"),
    (["plugins", "info", "spm"], "'sppm'"),
    (["compare", "--by", "maximal_leakag"], "'maximal_leakage'"),
    (["compare", "--reference", "expmc"], "'expmec'"),
])
def test_unknown_names_suggest_the_closest(argv, suggestion, host, tmp_path, capsys) -> None:
    if argv[0] == "compare":
        _store(tmp_path / "r.sqlite")
        argv = [*argv, "--db", str(tmp_path / "r.sqlite")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"(did you mean {suggestion}" in err, err


def test_nothing_close_suggests_nothing() -> None:
    assert did_you_mean("zzz", ["sppm", "expmec"]) == ""
