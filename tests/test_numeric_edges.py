"""Numbers and messages: signed zero in run keys, joint-level notions
near 1e308 and on NaN or negative joints, plugin errors that name the plugin and its
parameters, unparsable sweep files, failed metrics said in the terminal and in compare."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from privbench.cli import main
from privbench.measures.notions import JOINT_NOTIONS
from privbench.protocol.errors import ValidationError
from privbench.running.specs import RunSpec

FAST = ("--no-metric", "optimum", "--no-metric", "mapping_behaviour")


def test_signed_zero_is_one_run(tmp_path, capsys) -> None:
    capsys.readouterr()
    assert main(["run", "-m", "identity", "-d", "synthetic:m=2", "--delta=0", "--delta=-0.0",
                 "--no-store", "--json", *FAST]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert len(lines) == 1 and str(lines[0]["delta"]) == "0.0"  # was: two runs, two keys
    spec = tmp_path / "z.toml"
    spec.write_text('mechanisms = ["expmec:beta=0.0", "expmec:beta=-0.0"]\n'
                    'datasets = ["synthetic:m=2"]\ndeltas = [0.0, -0.0, 1]\nbaselines = false\n'
                    'skip_metrics = ["optimum", "mapping_behaviour"]\n')
    db = tmp_path / "z.sqlite"
    assert main(["sweep", str(spec), "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        keys = [r[0] for r in conn.execute("SELECT run_key FROM runs")]
    assert len(keys) == len(set(keys)) == 2 and not any("-0.0" in k for k in keys), keys
    assert RunSpec("m", "d", -0.0, {"x": [-0.0, {"y": -0.0}]}).key == \
        RunSpec("m", "d", 0.0, {"x": [0.0, {"y": 0.0}]}).key


@pytest.mark.parametrize("name", sorted(JOINT_NOTIONS))
def test_joint_notions_scale_before_summing(name) -> None:
    Q = np.array([[0.3, 0.1, 0.05], [0.05, 0.2, 0.3]])
    f = JOINT_NOTIONS[name]
    expected = f(Q)
    # the largest entry 1.5e308: its sum (5e308) overflows unless Q is scaled first
    for big in (Q * 1e300, Q / Q.max() * 1.5e308, Q * 1e-300):
        assert f(big) == pytest.approx(expected, rel=1e-9, abs=1e-12), (name, big.max())


@pytest.mark.parametrize("name", sorted(JOINT_NOTIONS))
@pytest.mark.parametrize("bad", [np.nan, -0.125, np.inf])
def test_joint_notions_refuse_nan_negative_and_infinite_entries(name, bad) -> None:
    Q = np.array([[0.3, 0.1], [0.2, 0.4]])
    Q[0, 1] = bad
    with pytest.raises(ValidationError, match="finite non-negative"):
        JOINT_NOTIONS[name](Q)


def test_a_plugin_error_names_the_plugin_and_its_parameters(capsys) -> None:
    capsys.readouterr()
    assert main(["run", "-m", "ppan:lambda_lr=1e9", "-d", "synthetic:m=2", "--delta", "0.5",
                 "--no-store", "--json", *FAST]) == 0
    (rec,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert rec["status"] == "error"
    assert rec["error"].startswith("mechanism ppan[lambda_lr=1000000000.0] failed: OverflowError")
    assert "Traceback" in rec["metrics"]["traceback"]


@pytest.mark.parametrize("text", [
    "mechanisms = " + "[" * 20000 + "]" * 20000 + "\n",
    'mechanisms = ["identity"]\ndatasets = ["synthetic"]\ndeltas = [1]\nname = '
    + "[" * 3000 + "]" * 3000 + "\n",
    "x = {" + "a = {" * 5000 + "}" * 5001 + "\n",
])
def test_a_sweep_file_that_cannot_be_parsed_is_exit_2_naming_it(tmp_path, capsys, text) -> None:
    spec = tmp_path / "deep.toml"
    spec.write_text(text)
    capsys.readouterr()
    assert main(["sweep", str(spec), "--db", str(tmp_path / "r.sqlite")]) == 2  # was: exit 1
    err = capsys.readouterr().err
    assert str(spec) in err and "internal error" not in err, err


def test_a_failed_metric_is_one_line_in_the_terminal_and_in_compare(hostile, tmp_path, capsys
                                                                     ) -> None:
    db = tmp_path / "r.sqlite"
    capsys.readouterr()
    assert main(["run", "-m", "identity", "-m", "expmec", "-d", "synthetic:m=2", "--delta", "0.5",
                 "--delta", "1", "-M", "hostile_exits", "--db", str(db), *FAST]) == 0
    err = capsys.readouterr().err
    line = "metric hostile_exits failed on 4 runs: PluginAbort: metric 'hostile_exits' called sys.exit(5)"
    assert err.count("metric hostile_exits failed") == 1 and line in err, err
    assert main(["compare", "--db", str(db)]) == 0
    assert "metric hostile_exits failed on 4 runs" in capsys.readouterr().out
