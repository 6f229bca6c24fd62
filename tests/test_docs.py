"""The README stays short and the docs stay findable: links resolve, every page is in the
index, no history language."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted((REPO / "docs").rglob("*.md"))  # reference pages and docs/studies/
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_at_most_300_lines() -> None:
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_no_history_language_in_readme_or_docs() -> None:
    for path in [REPO / "README.md", *PAGES]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\bsessions?\b", text, re.I), f"{path.name} says 'session'"


def test_relative_links_resolve() -> None:
    for path in [REPO / "README.md", *PAGES]:
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (path.parent / target).exists(), f"{path.name} links {target}, which is missing"


def test_the_index_lists_every_page_and_the_readme_links_the_index() -> None:
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    listed = set(LINK.findall(index))
    pages = [p.relative_to(REPO / "docs").as_posix() for p in PAGES]
    missing = [p for p in pages if p != "index.md" and p not in listed]
    assert not missing, f"docs/index.md does not list {missing}"
    assert "(docs/index.md)" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_keeps_the_two_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert ("python3 -m venv .venv && .venv/bin/pip install -e '.[main]' && .venv/bin/privbench "
            "report --sweep specs/toy.toml --db toy.sqlite --out toy-report && .venv/bin/privbench "
            "compare --db toy.sqlite") in text
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/pytest -q" in text
    assert "pytest -q" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.realdata
def test_table1_facts_the_faithfulness_page_states(real_data_dir: Path) -> None:
    """On the public Adult files, under the census adapter's own preprocessing (decades,
    missing rows dropped, top 300, counts): Country's I(A; F) is exactly 0, marital status
    beats education and sex beats race, the reverse of the SPPM paper's Table 1."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("table1_search", REPO / "tools" / "table1_search.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    raw = tool.load(real_data_dir / "adult", with_test=True)
    raw = raw[~raw.isin(["?"]).any(axis=1)]
    assert len(raw) == 45_222
    per, whole = tool.table(raw, "decade", "marital-status", "as given", "counts", 300)
    assert per["country"] == 0.0 and tool.PAPER["country"] == 0.047
    assert per["marital"] > per["education"] and per["sex"] > per["race"]
    assert tool.PAPER["marital"] < tool.PAPER["education"] and tool.PAPER["sex"] < tool.PAPER["race"]
    assert 0.3 < whole < 0.4
    # the census adapter, an independent path, gives the same whole-profile leakage and
    # the same table up to which profiles tie at the 300th place
    import privbench as pb

    adapter = pb.get_dataset("census", data_dir=str(real_data_dir / "adult"), top_k=300)
    assert adapter.load().prior_mi_bits == pytest.approx(whole, abs=1e-9)
    pairs = list(zip(adapter.attribute_mi()["mi_bits"], per.values(), strict=True))
    assert all(abs(a - b) < 2e-3 for a, b in pairs)


def test_the_run_json_contract_in_docs_cli_names_every_record_field() -> None:
    """docs/cli.md's ``--json`` row lists the record's fields in the order ``--json``
    prints them (protocol/record.py's RECORD_FIELDS), so a field added to the record is
    documented or this fails."""
    from privbench.protocol.record import RECORD_FIELDS

    row = next(line for line in (REPO / "docs" / "cli.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `--json` |"))
    named = list(dict.fromkeys(n for n in re.findall(r"`([a-z_]+)`", row) if n in RECORD_FIELDS))
    assert named == list(RECORD_FIELDS), named
