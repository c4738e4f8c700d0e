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


def test_readme_install_lines_name_this_distribution() -> None:
    """`pip install triage` is an unrelated PyPI project: every install line names ours."""
    import re
    import tomllib

    name = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    assert name != "triage"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    installs = re.findall(r"pip install '?([\w.-]+)", readme)
    assert installs and all(target in (name, ".") for target in installs), installs
