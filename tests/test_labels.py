"""What a person reads: declared output labels with units, short mechanism labels with
the full key in a legend, and compare's table within 80 columns with nothing cut."""

from __future__ import annotations

import re

import pandas as pd
from rich.cells import cell_len

import privbench as pb
from privbench.cli import main
from privbench.results.store import ResultStore
from privbench.results.views import short_labels

LONG = {"iterations": 1000, "mode": "optimal", "tol": 0.0001}


def test_builtin_outputs_read_with_label_and_unit(host) -> None:
    outputs = host.outputs()
    assert outputs["mi_bits"].display == "I(A; B̂) [bits]"
    assert outputs["lip_epsilon"].display == "LIP ε [nats]"
    assert outputs["maximal_leakage"].display == "maximal leakage [bits]"
    unlabelled = [name for name, out in outputs.items() if out.is_privacy and not out.label]
    assert unlabelled == []  # every built-in privacy notion declares what a reader sees
    assert pb.Output("x_leak", "bits", "lower").display == "x_leak [bits]"  # a plugin without


def _frame(labels: list[tuple[str, dict]]) -> pd.DataFrame:
    return pd.DataFrame({"mechanism": [m for m, _ in labels], "params": [p for _, p in labels],
                         "label": [pb.protocol.plugin.format_label(m, p) for m, p in labels]})


def test_short_labels_keep_only_the_parameters_that_differ() -> None:
    alone = short_labels(_frame([("sppm", LONG), ("expmec", {})]))
    assert alone == {"sppm[iterations=1000,mode=optimal,tol=0.0001]": "sppm", "expmec": "expmec"}
    two = short_labels(_frame([("sppm", LONG), ("sppm", {**LONG, "mode": "dual"})]))
    assert sorted(two.values()) == ["sppm[mode=dual]", "sppm[mode=optimal]"]


def _store(db) -> None:
    with ResultStore(db) as s:
        for mech, params in (("sppm", LONG), ("sppm", {**LONG, "mode": "dual"}), ("expmec", {})):
            for d, mi in ((1.0, 0.8), (4.0, 0.4), (16.0, 0.123456789)):
                s.add({"mechanism": mech, "dataset": "toy", "params": params,
                       "dataset_params": {}, "delta": d, "status": "ok", "mi_bits": mi,
                       "prior_mi_bits": 1.0, "distortion": d * 0.9, "n": 64,
                       "metrics": {"dataset_name": "toy[m=6]"},
                       "run_key": f"{mech}{params}|toy|delta={d}"})


def test_compare_fits_80_columns_and_cuts_nothing(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # a terminal 80 columns wide
    monkeypatch.setattr("rich.console.Console.is_terminal", property(lambda self: True))
    monkeypatch.setenv("NO_COLOR", "1")
    db = tmp_path / "r.sqlite"
    _store(db)
    assert main(["compare", "--db", str(db), "--target", "0.25", "--target", "0.1"]) == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # styles, not text
    wide = [line for line in text.splitlines() if cell_len(line) > 80]  # B̂: one cell
    assert wide == []
    assert "…" not in text
    rows = [line for line in text.splitlines() if line.startswith("│ ")]
    assert any(r.startswith("│ sppm[mode=optimal]") for r in rows)  # the table row: short
    assert any(r.startswith("│ sppm[mode=dual]") for r in rows)
    assert text.count("iterations=1000") == 2  # the full keys: in the legend only
    assert "sppm[mode=optimal] = sppm[iterations=1000,mode=optimal,tol=0.0001]" in text


def test_tradeoff_figure_titles_and_axes_use_the_label(host) -> None:
    from privbench.plugins.figures.tradeoff import PrivacyDistortion

    runs = pd.DataFrame({"delta": [1.0, 4.0], "distortion": [1.0, 4.0], "status": ["ok", "ok"],
                         "metrics": [{"lip_epsilon": 3.0}, {"lip_epsilon": 1.0}]})
    fig = PrivacyDistortion()
    option = next(o for o in fig.options(runs, host.outputs()) if o["output"] == "lip_epsilon")
    meta = fig.get_metadata(runs, **option)
    assert meta["ylabel"] == "LIP ε [nats]" and meta["title"].endswith("LIP ε [nats]")


def test_default_targets_lie_within_the_outputs_range(tmp_path, capsys) -> None:
    """MAP accuracy cannot go below max_a p(a) (0.651 on census); its default targets once
    were 25 % and 10 % of the largest value (0.2, 0.08), reached by no mechanism."""
    db = tmp_path / "r.sqlite"
    with ResultStore(db) as s:
        for mech, accs in (("a", (0.80, 0.70, 0.66)), ("b", (0.78, 0.75, 0.72))):
            for d, acc in zip((1.0, 2.0, 4.0), accs, strict=True):
                s.add({"mechanism": mech, "dataset": "toy", "params": {}, "dataset_params": {},
                       "delta": d, "status": "ok", "mi_bits": 0.1, "distortion": d, "n": 8,
                       "metrics": {"dataset_name": "toy", "map_accuracy": acc},
                       "run_key": f"{mech}|toy|delta={d}"})
    assert main(["compare", "--db", str(db), "--by", "map_accuracy"]) == 0
    text = capsys.readouterr().out
    targets = [float(t) for t in re.findall(r"MAP adversary accuracy≤([0-9.]+)", text)]
    assert targets and all(0.66 <= t <= 0.80 for t in targets), targets
    assert "E[d] for" in text and "not reached" not in text.split("│ a")[1].split("\n")[0]


def test_report_uses_short_labels_and_compares_rank_budget(tmp_path, host) -> None:
    db = tmp_path / "r.sqlite"
    _store(db)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "<code>sppm[mode=optimal]</code> = <code>sppm[iterations=1000,mode=optimal," in page
    assert "Ranked by I at Δ≤4 (the middle stored budget, where privbench compare" in page
    assert '"sppm[mode=dual]"' in page  # the legend's name in the figure data


def _roles_store(db) -> None:
    with ResultStore(db) as s:
        for mech, metrics in (("sppm", {}), ("watchdog", {}),
                              ("mondrian", {"note": "the identity: every profile already has "
                                                    ">= k = 10 users"})):
            for d, mi in ((0.5, 0.3), (1.0, 0.2), (2.0, 0.05)):
                s.add({"mechanism": mech, "dataset": "toy", "params": {}, "dataset_params": {},
                       "delta": d, "status": "ok", "mi_bits": mi, "prior_mi_bits": 0.4,
                       "distortion": d, "n": 8,
                       "metrics": {"dataset_name": "toy", **metrics},
                       "run_key": f"{mech}|toy|delta={d}"})


def test_delta_roles_and_mechanism_notes_are_said(tmp_path, capsys, host) -> None:
    db = tmp_path / "r.sqlite"
    _roles_store(db)
    assert main(["compare", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "│ watchdog (Δ read as ε)" in text and "│ mondrian (Δ unused)" in text
    assert re.search(r"^│ sppm\W", text, re.M) and "sppm (Δ" not in text  # budgeted: no mark
    assert "'(Δ read as ε)': the mechanism reads Δ as its privacy or noise level ε" in text
    assert "mondrian (Δ unused): the identity: every profile already has >= k = 10" in text


def test_a_wide_table_splits_in_two_at_80_columns(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("rich.console.Console.is_terminal", property(lambda self: True))
    monkeypatch.setenv("NO_COLOR", "1")
    db = tmp_path / "r.sqlite"
    _store(db)
    argv = ["compare", "--db", str(db), "--budget", "1", "--budget", "4", "--budget", "16",
            "--target", "0.5", "--target", "0.25", "--target", "0.13"]
    assert main(argv) == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert [line for line in text.splitlines() if cell_len(line) > 80] == []
    assert "(continued) the distortion each needs to reach a target" in text
    rows = [line for line in text.splitlines() if line.startswith("│ expmec")]
    assert len(rows) == 2  # once in each half
