"""Every entry of the knowledge notes: `explain` on its verbatim line returns its cause, `kb search` finds it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from triage.kb import explain

from .conftest import FIXTURES

ROWS = []
for path in sorted((FIXTURES / "notes").glob("*.yaml")):
    for row in yaml.safe_load(path.read_text(encoding="utf-8")):
        for i, line in enumerate(row.get("lines") or []):
            ROWS.append(pytest.param(row["cause"], line, id=f"{path.stem}:{row['entry']}:{i + 1}"))
ENTRIES = [pytest.param(row["cause"], row["phrase"], id=f"{p.stem}:{row['entry']}")
           for p in sorted((FIXTURES / "notes").glob("*.yaml"))
           for row in yaml.safe_load(p.read_text(encoding="utf-8"))]


def test_notes_cover_both_toolchains() -> None:
    assert len(ENTRIES) >= 100


@pytest.mark.parametrize(("cause_id", "line"), ROWS)
def test_explain_returns_the_entry(packs, matcher, cause_id: str, line: str) -> None:
    result = explain(line, packs, matcher)
    found = {f.id for f in result.result.all_findings()}
    assert cause_id in found, f"got {sorted(found)}"


@pytest.fixture(scope="module")
def kb_store(packs):
    from triage.store import open_store

    store = open_store(None)
    store.sync_causes(packs)
    yield store
    store.close()


@pytest.mark.parametrize(("cause_id", "phrase"), ENTRIES)
def test_kb_search_finds_the_entry_by_a_phrase_of_its_message(kb_store, cause_id: str, phrase: str) -> None:
    ids = [r["id"] for r in kb_store.search_causes(phrase, limit=10)]
    assert cause_id in ids, f"{phrase!r} -> {ids}"
