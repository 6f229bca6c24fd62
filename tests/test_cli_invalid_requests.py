"""Invalid requests exit 2 before anything runs or is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.running.specs import parse_spec


def _csv(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        # bad parameter values (not only unknown names) are invalid requests
        (["-m", "expmec:beta=-1", "-d", "synthetic:m=3"], "beta must be a finite number >= 0"),
        (["-m", "expmec:beta=nan", "-d", "synthetic:m=3"], "beta must be a finite number"),
        (["-m", "randomized_response:epsilon=-2", "-d", "synthetic:m=3"], "epsilon must be"),
        (["-m", "quantized:n_clusters=0", "-d", "synthetic:m=3"], "n_clusters must be"),
        (["-m", "quantized:inner=nope", "-d", "synthetic:m=3"], "unknown mechanism 'nope'"),
        (["-m", "nullspace:variant=3", "-d", "synthetic:m=3"], "variant must be 1 or 2"),
        (["-m", "nullspace:test_fraction=1.5", "-d", "synthetic:m=3"], "test_fraction must be"),
        (["-m", "laplace:scale=-1", "-d", "synthetic:m=3"], "scale must be a number >= 0"),
        (["-m", "laplace:match=bogus", "-d", "synthetic:m=3"], "match must be one of"),
        (["-m", "tradeoff:v=2", "-d", "synthetic:m=3"], "v must be in (0, 1]"),
        (["-m", "tradeoff:p=0", "-d", "synthetic:m=3"], "p must be an integer >= 1"),
        (["-m", "tradeoff:objective=svm", "-d", "synthetic:m=3"], "objective must be one of"),
        (["-m", "tradeoff:executor=nope", "-d", "synthetic:m=3"], "unknown executor 'nope'"),
        (["-m", "expmec", "-d", "synthetic:m=abc"], "parameter m must be a number (int, default 6); got 'abc'"),
        (["-m", "expmec", "-d", "random:concentration=abc"],
         "parameter concentration must be a number"),
        (["-m", "expmec", "-d", "synthetic:m=0"], "m must be an integer in 1..24"),
        (["-m", "expmec:beta=1,beta=2", "-d", "synthetic:m=3"], "'beta' given twice"),
        # time limits and worker counts
        (["-m", "expmec", "-d", "synthetic:m=3", "--timeout", "-1"], "--timeout must be a positive"),
        (["-m", "expmec", "-d", "synthetic:m=3", "--timeout", "nan"], "--timeout must be a positive"),
        (["-m", "expmec", "-d", "synthetic:m=3", "--workers", "0"], "--workers must be"),
    ],
)
def test_bad_values_are_invalid_requests(argv, reason, capsys, db_path: Path) -> None:
    assert main(["run", *argv, "--delta", "1", "--db", str(db_path)]) == 2
    assert reason in capsys.readouterr().err
    assert not db_path.exists()


@pytest.mark.parametrize(
    ("name", "text", "params", "reason"),
    [
        ("gone.csv", None, "private=income", "does not exist"),
        ("one.csv", "age,income\n30,x\n40,x\n", "private=income", "takes one value only"),
        ("ragged.csv", "age,income\n30,a\n40,b,extra\n", "private=income", "line 3"),
        ("nocol.csv", "age,income\n30,a\n40,b\n", "private=salary", "unknown private column"),
        ("head.csv", "age,income\n", "private=income", "alphabet is empty"),
        ("inf.csv", "age,income\n30,a\ninf,b\n", "private=income,distortion=l1",
         "column 'age' of"),
    ],
)
def test_bad_csv_is_an_invalid_request(tmp_path, capsys, db_path, name, text, params,
                                       reason) -> None:
    path = _csv(tmp_path, name, text) if text is not None else str(tmp_path / name)
    rc = main(["run", "-m", "identity", "-d", f"csv:path={path},{params}", "--delta", "1",
               "--db", str(db_path)])
    assert rc == 2
    err = capsys.readouterr().err
    assert reason in err and name in err
    assert not db_path.exists()


def test_csv_missing_value_names_the_physical_line(tmp_path: Path) -> None:
    # blank lines are skipped by the parser and a quoted field spans two lines:
    # the error must still point at the line of the file, not at the row index + 2
    path = _csv(tmp_path, "gaps.csv", 'age,income\n"30\n",a\n\n\n40,b\n,a\n')
    with pytest.raises(pb.PrivbenchError, match="line 7: missing value in column 'age'"):
        pb.load_dataset("csv", path=path, private="income", missing="error")


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("timeout = nan\n", "'timeout' must be a positive number"),
        ("timeout = true\n", "'timeout' must be a positive number"),
        ("timeout = inf\n", "'timeout' must be a positive number"),
        ('workers = "abc"\n', "'workers' must be an integer >= 1"),
        ("workers = 0\n", "'workers' must be an integer >= 1"),
        ("executor = 3\n", "'executor' must be an executor name"),
    ],
)
def test_malformed_sweep_values(tmp_path, capsys, db_path, extra, reason) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=3"]\n'
                    f"deltas = [1.0]\n{extra}")
    assert main(["sweep", str(spec), "--db", str(db_path)]) == 2
    err = capsys.readouterr().err
    assert reason in err and "spec.toml" in err
    assert not db_path.exists()


def test_sweep_timeout_flag_and_bad_dataset(tmp_path, capsys, db_path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=3"]\ndeltas = [1.0]\n')
    assert main(["sweep", str(spec), "--db", str(db_path), "--timeout", "-3"]) == 2
    assert "--timeout must be a positive" in capsys.readouterr().err
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=3", "synthetic:m=99"]\n'
                    "deltas = [1.0]\n")
    assert main(["sweep", str(spec), "--db", str(db_path)]) == 2
    assert "synthetic: m must be an integer in 1..24; got 99" in capsys.readouterr().err
    assert not db_path.exists()


def test_parse_spec_rejects_a_key_given_twice() -> None:
    with pytest.raises(pb.ValidationError, match="given twice"):
        parse_spec("expmec:beta=1,beta=2", what="mechanism")


def test_api_rejects_bad_values_as_validation_errors() -> None:
    with pytest.raises(pb.ValidationError, match="beta"):
        pb.get_mechanism("expmec", beta=-1.0)
    assert pb.get_mechanism("expmec", beta=0.5).beta == 0.5


def test_results_table_blank_cells_for_ok_runs(capsys, db_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # rich: no folding of cells
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--json",
                 "--db", str(db_path)]) == 0
    capsys.readouterr()
    assert main(["results", "--db", str(db_path), "--status", "ok"]) == 0
    out = capsys.readouterr().out
    assert "ok: " not in out  # no error line for an ok run (was "ok: nan")
    assert "│ nan" not in out and "identity" in out
    with pytest.raises(SystemExit) as exc:
        main(["results", "--db", str(db_path), "--status", "bogus"])
    assert exc.value.code == 2


def test_valid_run_still_stores(capsys, db_path: Path) -> None:
    assert main(["run", "-m", "expmec", "-d", "synthetic:m=3", "--delta", "1", "--json",
                 "--timeout", "300", "--db", str(db_path)]) == 0
    (record,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert record["status"] == "ok" and db_path.exists()


def test_metrics_reject_a_matrix_that_is_not_a_mapping() -> None:
    problem = pb.PrivacyProblem.from_arrays(joint=[[0.3, 0.1], [0.1, 0.5]],
                                            distortion=[[0, 1], [1, 0]])
    with pytest.raises(pb.ValidationError, match="column 0 sums to 2"):
        pb.metrics.mutual_information(problem, [[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(pb.ValidationError, match="negative entry"):
        pb.metrics.expected_distortion(problem, [[1.5, 0.0], [-0.5, 1.0]])
    with pytest.raises(pb.ValidationError, match="shape"):
        pb.metrics.mutual_information(problem, [[1.0]])
    assert pb.metrics.expected_distortion(problem, [[0.5, 0.0], [0.5, 1.0]]) == \
        pytest.approx(0.5 * 0.4)


def test_sparse_and_non_numeric_distortion_matrices() -> None:
    import scipy.sparse as sp

    joint = [[0.3, 0.1], [0.1, 0.5]]
    problem = pb.PrivacyProblem.from_arrays(joint=joint,
                                            distortion=sp.csr_array([[0.0, 1.0], [1.0, 0.0]]))
    assert problem.distortion.to_dense().tolist() == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(pb.ValidationError, match="numeric"):
        pb.PrivacyProblem.from_arrays(joint=joint, distortion=[["a", "b"], ["c", "d"]])


def test_dry_run_loads_the_data_as_the_sweep_does(tmp_path, capsys, db_path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('mechanisms = ["identity"]\n'
                    f'datasets = ["csv:path={tmp_path / "absent.csv"},private=x"]\n'
                    "deltas = [1.0]\n")
    assert main(["sweep", str(spec), "--db", str(db_path), "--dry-run"]) == 2
    dry = capsys.readouterr()
    assert dry.out == "" and "absent.csv does not exist" in dry.err
    assert main(["sweep", str(spec), "--db", str(db_path)]) == 2
    assert capsys.readouterr().err == dry.err
    assert not db_path.exists()


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        # a flag that would do nothing is refused like --max-mem under the local executor
        (["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--full"],
         "--full needs --json"),
        (["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--workers", "2"],
         "--workers 2 needs an executor that runs in worker processes (dask, process); "
         "'local' runs one run at a time"),
        (["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--executor", "local",
          "--max-mem", "2000"], "--max-mem needs an executor that runs in worker processes"),
        (["sweep", "{spec}", "--full"], "--full needs --json"),
        (["sweep", "{spec}", "--workers", "3"], "--workers 3 needs an executor"),
        (["report", "--out", "{out}", "--executor", "nosuch"], "--executor applies to --sweep"),
        (["report", "--out", "{out}", "--workers", "0"], "--workers applies to --sweep"),
        (["report", "--out", "{out}", "--workers", "2", "--executor", "process"],
         "--executor and --workers apply to --sweep"),
    ],
)
def test_flags_that_would_do_nothing_are_refused(argv, reason, capsys, tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('mechanisms = ["identity"]\ndatasets = ["synthetic:m=3"]\ndeltas = [1.0]\n')
    out = tmp_path / "report"
    db = tmp_path / "r.sqlite"
    argv = [a.format(spec=spec, out=out) for a in argv]
    assert main([*argv, "--db", str(db)]) == 2
    assert reason in " ".join(capsys.readouterr().err.split())
    assert not db.exists() and not out.exists()


def test_one_worker_is_what_the_local_executor_is(capsys, tmp_path: Path) -> None:
    assert main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--workers", "1",
                 "--no-store", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "ok"
