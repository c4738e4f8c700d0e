from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = FIXTURES / "corpus"
PUBLIC = FIXTURES / "public"  # real excerpts found in the public record after the corpus

# The suite exercises the pure-Python gate, the one every install has; hyperscan (the `fast` extra) is
# compared with it on every fixture by tests that ask for it by name. `TRIAGE_MATCHER=hyperscan make test`
# runs the whole suite on hyperscan instead.
os.environ.setdefault("TRIAGE_MATCHER", "python")

# Property tests draw the same examples on every run: a generated case that is slow (a regex whose strings
# explode) then shows on the developer's machine first, never as a one-off stall in CI. `make fuzz` explores.
settings.register_profile("suite", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own database and no user packs: nothing leaks from the developer's machine."""
    monkeypatch.setenv("TRIAGE_DB", str(tmp_path_factory.mktemp("db") / "triage.db"))
    monkeypatch.delenv("TRIAGE_PACKS", raising=False)
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "pack-cache"))
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="session")
def packs():
    from triage import load_packs

    return load_packs()


@pytest.fixture(scope="session")
def matcher(packs):
    from triage import Matcher

    return Matcher(packs)


def corpus(rel: str) -> Path:
    """A real fixture by a unique prefix of its path below fixtures/corpus."""
    hits = sorted(p for p in CORPUS.glob(rel + "*") if not p.name.endswith(".expected.yaml"))
    assert len(hits) == 1, f"{rel}: {hits}"
    return hits[0]


def public(rel: str) -> Path:
    """A real fixture by a unique prefix of its path below fixtures/public."""
    hits = sorted(p for p in PUBLIC.glob(rel + "*") if not p.name.endswith(".expected.yaml"))
    assert len(hits) == 1, f"{rel}: {hits}"
    return hits[0]


os.environ.setdefault("COLUMNS", "120")
