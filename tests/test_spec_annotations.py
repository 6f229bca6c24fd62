"""``NAME:k=v`` values are converted by the annotation of the parameter they are for: a
``str`` parameter keeps its text, ``none`` is None only where None is admitted, and the
values that converted before convert the same (same stored params, same run keys)."""

from __future__ import annotations

import json
import typing
from typing import Any

import numpy as np
import pytest

import privbench as pb
from privbench.cli import main
from privbench.running import specs
from privbench.running.plan import SweepSpec, plan_runs


class TypedProbe(pb.MappingMechanism):
    """A third-party mechanism with typed parameters; it releases B as is."""

    name = "typed_probe"

    def __init__(self, kind: str = "colsum", keep: float = 1.0, label: str | None = None,
                 count: int = 1, flag: bool = False, loose=None) -> None:  # noqa: ANN001
        self.kind = kind
        self.keep = keep
        self.label = label
        self.count = count
        self.flag = flag
        self.loose = loose

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        return self.result(np.eye(problem.n) * self.keep / self.keep)  # keep=None: TypeError


class _Plugin:
    @pb.hookimpl
    def privbench_register_mechanisms(self):
        return [TypedProbe]


@pytest.fixture
def probe(host):
    host.register(_Plugin(), name="typed-probe-plugin")
    return host


def _run(spec: str, capsys) -> tuple[int, dict[str, Any] | None, str]:
    """``privbench run -m SPEC``: exit status, the record's params, stderr."""
    code = main(["run", "-m", spec, "-d", "synthetic:m=2", "--delta", "1", "--json",
                 "--no-store", "--no-metric", "optimum"])
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    return code, (lines[0]["params"] if lines else None), err


@pytest.mark.parametrize("text", ["nan", "1", "inf", "true", "yes", "no", "none", "1e-4"])
def test_a_str_parameter_keeps_its_text(probe, capsys, text: str) -> None:
    """Before: nan, 1, inf, true, yes, no became numbers and booleans (exit 2, "must be
    str"), and none became None silently."""
    code, params, err = _run(f"typed_probe:kind={text}", capsys)
    assert code == 0, err
    assert params is not None and params["kind"] == text


@pytest.mark.parametrize(("spec", "key", "value"), [
    ('typed_probe:kind="nan"', "kind", "nan"),
    ('typed_probe:kind="1"', "kind", "1"),
    ("typed_probe:kind='none'", "kind", "none"),
    ('typed_probe:kind=" a b "', "kind", " a b "),
    ('typed_probe:label="none"', "label", "none"),  # str | None: quoted, the text
    ("typed_probe:label=none", "label", None),  # str | None: None admitted
])
def test_quotes_around_a_str_value_are_stripped(probe, capsys, spec: str, key: str,
                                                value: str | None) -> None:
    """Before: the quotes stayed part of the value ('"nan"')."""
    code, params, err = _run(spec, capsys)
    assert code == 0, err
    assert params is not None and params[key] == value


@pytest.mark.parametrize(("spec", "want"), [
    ("typed_probe:keep=none", "a number (float, default 1.0)"),
    ("typed_probe:keep=null", "a number (float, default 1.0)"),
    ('typed_probe:keep="0.5"', "a number (float, default 1.0)"),
    ("typed_probe:flag=none", "bool (default False)"),
    ("typed_probe:count=none", "a number (int, default 1)"),
])
def test_none_where_the_annotation_refuses_it_exits_2(probe, capsys, spec: str, want: str
                                                      ) -> None:
    """Before: keep=none passed the type check (None is skipped) and the run failed with a
    raw TypeError."""
    code, params, err = _run(spec, capsys)
    key, _, text = spec.partition(":")[2].partition("=")
    assert code == 2 and params is None
    assert (f'mechanism "typed_probe": parameter {key} must be {want}; got {text!r}'
            in err), err


@pytest.mark.parametrize(("text", "value"), [
    ("keep=1e-3", 0.001), ("keep=1", 1), ("count=3", 3), ("flag=yes", True), ("flag=False", False),
    ("loose=none", None), ("loose=1", 1), ("loose=true", True), ("loose=[a,b]", ["a", "b"]),
    ('loose="x"', '"x"'),  # un-annotated: the spelling decides, quotes and all, as before
])
def test_numbers_and_bools_for_parameters_annotated_so(probe, capsys, text: str, value: Any
                                                        ) -> None:
    code, params, err = _run(f"typed_probe:{text}", capsys)
    assert code == 0, err
    key = text.partition("=")[0]
    assert params is not None and params[key] == value and type(params[key]) is type(value)


def test_sweeps_convert_the_same_way(probe) -> None:
    runs = plan_runs(SweepSpec(mechanisms=["typed_probe:kind=1,label=none"],
                               datasets=["synthetic:m=2"], deltas=[1.0]), load_datasets=False)
    assert runs[0].mechanism_params == {"kind": "1", "label": None}
    with pytest.raises(pb.ValidationError, match="parameter keep must be a number"):
        plan_runs(SweepSpec(mechanisms=["typed_probe:keep=none"], datasets=["synthetic:m=2"],
                            deltas=[1.0]), load_datasets=False)


def test_a_dataset_spec_is_converted_by_the_adapters_annotations(host) -> None:
    assert specs.parse_spec("csv:private=1,top_k=5,holdout=0.25", what="dataset", kind="dataset") \
        == ("csv", {"private": "1", "top_k": 5, "holdout": 0.25})
    assert specs.parse_spec("csv:private=1", what="dataset") == ("csv", {"private": 1})  # no kind


#: keys and parameters planned before the conversion read annotations: they must not move
#: (``--resume`` finds a stored run by its key)
KEYS_BEFORE = [
    ("sppm:tol=1e-4", "sppm[tol=0.0001]|synthetic[m=3]|delta=0.5|seed=None", {"tol": 0.0001}),
    ("sppm:tol=1", "sppm[tol=1]|synthetic[m=3]|delta=0.5|seed=None", {"tol": 1}),
    ("sppm:mode=dual,iterations=30,coarse_start=false,lp_backend=highs",
     "sppm[coarse_start=False,iterations=30,lp_backend=highs,mode=dual]|synthetic[m=3]|"
     "delta=0.5|seed=None",
     {"mode": "dual", "iterations": 30, "coarse_start": False, "lp_backend": "highs"}),
    ("expmec:beta=1", "expmec[beta=1]|synthetic[m=3]|delta=0.5|seed=None", {"beta": 1}),
    ("optimal:max_n=100", "optimal[max_n=100]|synthetic[m=3]|delta=0.5|seed=None",
     {"max_n": 100}),
]
DATASET_KEYS_BEFORE = [
    ("census:top_k=300,private=marital-status",
     "identity|census[private=marital-status,top_k=300]|delta=0.5|seed=None",
     {"top_k": 300, "private": "marital-status"}),
    ("census:top_k=all", "identity|census[top_k=all]|delta=0.5|seed=None", {"top_k": "all"}),
    ("csv:path=t.csv,private=b,public=[region,age]",
     "identity|csv[path=t.csv,private=b,public=['region', 'age']]|delta=0.5|seed=None",
     {"path": "t.csv", "private": "b", "public": ["region", "age"]}),
    ("random:n=6,seed=2", "identity|random[n=6,seed=2]|delta=0.5|seed=None", {"n": 6, "seed": 2}),
    ("census:top_k=none,split=train", "identity|census[split=train,top_k=None]|delta=0.5|seed=None",
     {"top_k": None, "split": "train"}),  # top_k: int | str | None, as parse_top_k reads it
]


def _same(got: dict[str, Any], want: dict[str, Any]) -> bool:
    return got == want and all(type(got[k]) is type(want[k]) for k in want)


@pytest.mark.parametrize(("mechanism", "key", "params"), KEYS_BEFORE)
def test_run_keys_of_existing_mechanism_spellings_do_not_change(host, mechanism: str, key: str,
                                                                params: dict[str, Any]) -> None:
    [run] = plan_runs(SweepSpec(mechanisms=[mechanism], datasets=["synthetic:m=3"],
                                deltas=[0.5]), load_datasets=False)
    assert run.key == key and _same(run.mechanism_params, params)


@pytest.mark.parametrize(("dataset", "key", "params"), DATASET_KEYS_BEFORE)
def test_run_keys_of_existing_dataset_spellings_do_not_change(host, dataset: str, key: str,
                                                              params: dict[str, Any]) -> None:
    [run] = plan_runs(SweepSpec(mechanisms=["identity"], datasets=[dataset], deltas=[0.5]),
                      load_datasets=False)
    assert run.key == key and _same(run.dataset_params, params)


@pytest.mark.parametrize(("annotation", "kinds"), [
    ("str", {"str"}), ("float | None", {"float", "none"}), ("int | str", {"int", "str"}),
    ("list[str] | str | None", {"list", "str", "none"}), ("Optional[int]", {"int", "none"}),
    ("typing.Union[float, None]", {"float", "none"}), (int, {"int"}), (bool, {"bool"}),
    (int | None, {"int", "none"}), (typing.Optional[str], {"str", "none"}),  # noqa: UP045
    ("Any", None), ("object", None), ("tuple", None), ("Path | None", None), (typing.Any, None),
])
def test_annotations_are_read_as_written(annotation: Any, kinds: set[str] | None) -> None:
    assert specs.admitted(annotation) == (None if kinds is None else frozenset(kinds))
