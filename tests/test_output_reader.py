"""An output is declared once and read one way: intervals, priors and errors are declared
relations of an output (``of=``, ``relation=``), not name patterns; ``outputs_of`` is the one
reader behind figures, views, compare and export; a misspelt output is an error."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

import privbench as pb
from privbench.cli import main
from privbench.plugins.figures.common import aggregate
from privbench.protocol.figure import column
from privbench.protocol.outputs import Declared, interval_of, outputs_of
from privbench.results.export import export_frame
from privbench.results.store import ResultStore
from privbench.results.views import output_values

ROOT = Path(__file__).resolve().parents[1]

#: a leakage whose interval and prior have names no pattern would guess
LEAK = pb.Output("leak", "bits", "lower", "a leakage")
BAND = pb.Output("leak_band", "bits", "neutral", "95 % interval of leak", of="leak",
                 relation="interval")
NONE_LEAK = pb.Output("leak_without", "bits", "lower", "leak with no mechanism", of="leak",
                      relation="prior")
WHY = pb.Output("leak_why", "none", "neutral", "why leak is missing", of="leak", relation="error")
DECLARED = Declared([LEAK, BAND, NONE_LEAK, WHY, pb.Output("distortion", "distortion")])


def _runs() -> pd.DataFrame:
    return pd.DataFrame({
        "label": ["a", "b"], "delta": [1.0, 1.0], "distortion": [0.5, None],
        "mi_bits": [0.3, None],
        "metrics": [{"leak": 0.25, "leak_band": [0.2, 0.3], "leak_without": 1.0,
                     "leak_ci95": [9.0, 9.0], "distortion": 0.7},
                    {"leak_why": "no mapping", "distortion": 0.8}],
    })


def test_a_related_output_names_its_parent_and_one_of_three_relations() -> None:
    assert (BAND.of, BAND.relation) == ("leak", "interval")
    for bad in ({"of": "leak"}, {"relation": "interval"}, {"of": "leak", "relation": "ci"},
                {"of": "x", "relation": "prior", "name": "x"}):
        kwargs = {"name": "y", "unit": "bits", **bad}
        with pytest.raises(ValueError, match="related output|itself"):
            pb.Output(**kwargs)
    assert DECLARED.related("leak", "interval") is BAND
    assert DECLARED.related("leak", "prior") is NONE_LEAK
    assert DECLARED.related("leak", "error") is WHY
    assert DECLARED.related("distortion", "interval") is None
    with pytest.raises(pb.ValidationError, match="unknown relation 'intervall'.*'interval'"):
        DECLARED.related("leak", "intervall")
    assert DECLARED.relations("interval") == {"leak": BAND}


def _plain(values: pd.Series) -> list:
    return [None if not isinstance(v, list | tuple) and pd.isna(v) else v for v in values]


def test_one_reader_takes_a_column_or_the_value_under_metrics_and_follows_relations() -> None:
    runs = _runs()
    assert _plain(outputs_of(runs, "leak", outputs=DECLARED)) == [0.25, None]
    # the record's column where it holds a value, else the one stored under metrics
    assert _plain(outputs_of(runs, "distortion", outputs=DECLARED)) == [0.5, 0.8]
    assert _plain(outputs_of(runs, "leak", "prior", outputs=DECLARED)) == [1.0, None]
    assert _plain(outputs_of(runs, "leak", "error", outputs=DECLARED)) == [None, "no mapping"]
    # the declared interval, not the key a suffix rule would pick (leak_ci95 is a decoy)
    assert _plain(interval_of(runs, "leak", outputs=DECLARED)) == [(0.2, 0.3), None]
    numeric = outputs_of(runs, "leak", numeric=True, outputs=DECLARED)
    assert numeric.iloc[0] == 0.25 and math.isnan(numeric.iloc[1])
    # no relation declared: nothing, not a guess
    assert outputs_of(runs, "distortion", "interval", outputs=DECLARED).isna().all()


def test_a_misspelt_output_is_an_error_naming_the_declared_ones() -> None:
    with pytest.raises(pb.ValidationError, match=r"unknown output 'leek' \(did you mean 'leak'\?\);"
                                                 r" declared outputs: distortion, leak, "):
        outputs_of(_runs(), "leek", outputs=DECLARED)
    # a name some run stores is read even when no loaded plugin declares it (old stores)
    assert outputs_of(_runs(), "leak_ci95", outputs=DECLARED).iloc[0] == [9.0, 9.0]


def test_the_loaded_plugins_declarations_serve_figures_views_and_compare(host) -> None:
    runs = _runs()
    with pytest.raises(pb.ValidationError, match="did you mean 'mi_bits'"):
        column(runs, "mi_bts")  # a figure's typo: was an all-None column, no figure drawn
    with pytest.raises(pb.ValidationError, match="did you mean 'mi_bits'"):
        output_values(runs, "mi_bts")  # views and compare
    assert host.declared_outputs().related("mi_bits", "prior").name == "prior_mi_bits"
    assert host.declared_outputs().related("mi_bits", "interval").name == "mi_bits_ci95"

    class Misspelt(pb.Figure):
        name = "misspelt"
        reads = ("distortoin",)

        def plot(self, runs, **options):
            return []

    with pytest.raises(pb.ValidationError, match="did you mean 'distortion'"):
        Misspelt().applies(runs)


def test_every_built_in_interval_prior_and_error_is_declared_as_a_relation(host) -> None:
    table = host.declared_outputs()
    intervals = table.relations("interval")
    for name in ("mi_bits", "distortion", "maximal_leakage", "lip_epsilon", "guessing_entropy"):
        assert intervals[name].name == f"{name}_ci95"
    assert table.relations("prior")["mi_bits"].name == "prior_mi_bits"
    assert table.relations("error")["nb_auc"].name == "nb_error"
    # every related output points at an output that is itself declared
    for out in table.values():
        if out.of:
            assert out.of in table, (out.name, out.of)


def test_figures_and_exports_find_an_interval_by_its_declaration(tmp_path, host) -> None:
    class Notion(pb.Metric):
        name = "notion"
        default = False
        outputs = (LEAK, BAND, NONE_LEAK, WHY)

    class Plugin:
        @pb.hookimpl
        def privbench_register_metrics(self):
            return [Notion]

    host.register(Plugin(), name="notion-plugin")
    runs = _runs()
    points = aggregate(runs.iloc[:1], "distortion", "leak")
    assert (points["y_low"].iloc[0], points["y_high"].iloc[0]) == (0.2, 0.3)  # not the decoy
    flat = export_frame(runs.assign(status="ok", run_key=["k1", "k2"]), host.outputs())
    assert flat["leak_band_lo"].iloc[0] == 0.2 and flat["leak_band_hi"].iloc[0] == 0.3
    assert "leak_ci95_lo" not in flat.columns  # an undeclared suffix is no interval
    cols = list(flat.columns)
    assert cols.index("leak") < cols.index("leak_band_lo") < cols.index("leak_band_hi")
    db = tmp_path / "r.sqlite"
    with ResultStore(db) as store:
        store.add({"mechanism": "m", "dataset": "d", "status": "ok", "delta": 1.0,
                   "run_key": "k", "metrics": {"leak": 0.5, "leak_band": [0.4, 0.6]}})
    assert main(["results", "--db", str(db), "--export", str(tmp_path / "x.csv")]) == 0
    exported = pd.read_csv(tmp_path / "x.csv")
    assert exported["leak_band_hi"].iloc[0] == 0.6


#: name patterns readers used instead of declarations
PATTERNS = (r'f"prior_\{', r'\}_ci95"', r'endswith\("_ci95"\)', r'endswith\(CI_SUFFIX\)')


def test_no_reader_builds_an_interval_or_prior_name_from_a_pattern() -> None:
    readers = [*(ROOT / "harness").rglob("*.py"), *(ROOT / "plugins" / "figures").rglob("*.py"),
               *(ROOT / "plugins" / "reporters").rglob("*.py")]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in readers
             for m in re.finditer("|".join(PATTERNS), p.read_text(encoding="utf-8"))]
    assert not found, found


def test_one_run_is_read_the_same_way(host) -> None:
    record = {"mi_bits": None, "distortion": 0.5,
              "metrics": {"mi_bits": 0.25, "converged": False, "mi_bits_ci95": [0.2, 0.3]}}
    assert pb.output_of(record, "mi_bits") == 0.25  # the field is empty: the stored value
    assert pb.output_of(record, "distortion") == 0.5
    assert pb.output_of(record, "converged") is False
    assert pb.output_of(record, "mi_bits", "interval") == [0.2, 0.3]
    assert pb.output_of(record, "mi_bits", "prior") is None  # declared, not stored here
    row = pd.Series(record)
    assert pb.output_of(row, "mi_bits") == 0.25
    with pytest.raises(pb.ValidationError, match="did you mean 'converged'"):
        pb.output_of(record, "convergd")


def test_the_paired_resamples_are_found_by_their_declared_payload_not_by_name() -> None:
    """A metric that declares its per-resample values under another name is paired just
    the same: the host looks for ``payload="resamples"``, never for the bootstrap's name."""
    from privbench.protocol.outputs import resamples_of

    draws = pb.Output("draws", "none", "neutral", "per-resample values", payload="resamples")
    payload = {"samples": {"mi_bits": [0.1, 0.2]}, "key": "k"}
    assert resamples_of({"draws": payload}, outputs={"draws": draws}) == payload
    assert resamples_of({"bootstrap": payload}, outputs={"draws": draws}) is None
    assert Declared([draws, LEAK]).carrying("resamples") == ("draws",)
    with pytest.raises(ValueError, match="payload must be one of"):
        pb.Output("x", "none", payload="resample")
    with pytest.raises(pb.ValidationError, match="unknown payload"):
        Declared([draws]).carrying("samples")


def test_the_built_in_bootstrap_declares_its_payload(host) -> None:
    from privbench.protocol.outputs import declared

    assert declared().carrying("resamples") == ("bootstrap",)
