"""What can drift is generated and checked: the index of known causes."""

from __future__ import annotations

from triage.kb import causes_index_markdown

from .conftest import ROOT


def test_causes_index_is_in_sync(packs) -> None:
    expected = causes_index_markdown(packs)
    actual = (ROOT / "docs" / "causes.md").read_text(encoding="utf-8")
    assert actual == expected, "regenerate with: triage kb index > docs/causes.md"


def test_readme_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head = readme[:800]
    assert "make demo" in head and "make test" in head
