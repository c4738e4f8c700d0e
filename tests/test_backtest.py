"""Backtests on a run database built from real fixtures, with runs of known ages: the hits are counted."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from triage import load_packs, scan_paths
from triage.backtest import backtest
from triage.draft import draft_from_store, draft_from_text, with_draft
from triage.packs import builtin_pack_dir
from triage.store import LogKeeper, open_store

from .conftest import corpus

NOW = datetime(2025, 6, 30, 12, 0, tzinfo=timezone.utc)
CONCAT = "dfc/cases/044-"  # failed: a known root cause, and `IndexError: tuple index out of range` unexplained
PARTITION = "dfc/cases/043-"  # failed: allocation failure lines
PASSED = "logs/dfc/402-"  # passed, with optimizer warnings


def record(store, packs, rel: str, label: str, days_ago: float, keep: bool = True) -> int:  # type: ignore[no-untyped-def]
    path = str(corpus(rel))
    result = scan_paths([path], packs)
    outcome = store.record_run(result, packs=packs, dimensions={"label": label}, duration_s=0.1,
                               logs=LogKeeper(keep=keep), created=NOW - timedelta(days=days_ago))
    return outcome.run_id


@pytest.fixture()
def history(tmp_path: Path, packs):  # type: ignore[no-untyped-def]
    store = open_store(tmp_path / "runs.db")
    ids = {
        "concat-5d": record(store, packs, CONCAT, "a", 5),
        "concat-40d": record(store, packs, CONCAT, "b", 40),
        "concat-100d": record(store, packs, CONCAT, "c", 100),  # older than 90 days: not looked at
        "passed-3d": record(store, packs, PASSED, "d", 3),
        "concat-not-kept": record(store, packs, CONCAT, "e", 2, keep=False),
    }
    yield store, ids
    store.close()


def test_draft_hits_are_counted_per_window_and_status(history, packs) -> None:
    store, ids = history
    draft = draft_from_store(store, packs, run_id=ids["concat-5d"])
    assert draft.regex == "IndexError: tuple index out of range"
    bt = backtest(store, with_draft(packs, draft), [draft.cause_id], baseline=packs, prefilter=True, now=NOW)
    assert (bt.runs, bt.not_kept) == (3, 1)  # 5d, 40d and passed; 100d is out of the period
    assert bt.causes[draft.cause_id] == {30: {"failed": 1, "passed": 0, "unknown": 0},
                                         90: {"failed": 2, "passed": 0, "unknown": 0}}
    assert [c.run_id for c in bt.explaining] == [ids["concat-5d"], ids["concat-40d"]]
    assert all(c.lines_explained == 1 and c.added == [draft.cause_id] for c in bt.explaining)
    assert bt.newly_explained == [] and bt.hiding == []  # the runs already had their root cause


def test_a_draft_that_hits_a_passed_run_says_so(history, packs) -> None:
    store, _ = history
    line = next(x for x in corpus(PASSED).read_text().splitlines() if "Reducing output bits" in x)
    draft = draft_from_text(line, packs, tool="dfc")
    bt = backtest(store, with_draft(packs, draft), [draft.cause_id], baseline=packs, prefilter=True, now=NOW)
    assert bt.hits(draft.cause_id, 30, "passed") == 1 and bt.hits(draft.cause_id, 90, "passed") == 1
    assert bt.hits(draft.cause_id, 90, "failed") == 0


def test_newly_explained_run(tmp_path: Path) -> None:
    """With packs that know nothing about DFC allocation, a failed DFC run has no known cause."""
    subset = load_packs([builtin_pack_dir() / "triage.yaml"], builtin=False)
    with open_store(tmp_path / "runs.db") as store:
        unknown = record(store, subset, PARTITION, "x", 1)
        record(store, subset, CONCAT, "y", 1)
        run = store.run(unknown)
        assert run["status"] == "failed" and not run["findings"]
        line = next(u for u in run["result"]["unexplained"] if "valid partition" in u["text"])
        draft = draft_from_store(store, subset, fingerprint_=line["fingerprint"])
        bt = backtest(store, with_draft(subset, draft), [draft.cause_id], baseline=subset, prefilter=True, now=NOW)
    assert [c.run_id for c in bt.newly_explained] == [unknown]
    assert bt.hits(draft.cause_id, 30, "failed") == 1


def test_against_db_reports_a_cause_it_would_hide(history, packs, tmp_path: Path) -> None:
    store, ids = history
    mine = tmp_path / "site.yaml"
    mine.write_text(
        "pack: site\ntool: dfc\ncauses:\n"
        "  - id: site/concat-on-1d-signal\n    title: Concat of 1-D signals in the optimizer\n    severity: error\n"
        "    cause: Our 1-D audio models reach the optimizer's concat with rank-2 tensors.\n"
        "    workaround: Use the reshaped export of the audio model.\n"
        "    explains: [dfc/concat-op-low-rank-index-error]\n"
        "    signatures:\n      - regex: 'IndexError: tuple index out of range'\n"
        "        match: ['IndexError: tuple index out of range']\n", encoding="utf-8")
    candidate = load_packs([mine])
    bt = backtest(store, candidate, ["site/concat-on-1d-signal"], now=NOW)
    assert {c.run_id for c in bt.hiding} == {ids["concat-5d"], ids["concat-40d"]}
    assert all(c.hidden == ["dfc/concat-op-low-rank-index-error"] for c in bt.hiding)
    assert bt.hits("site/concat-on-1d-signal", 90, "failed") == 2
    assert bt.changed_causes() == ["dfc/concat-op-low-rank-index-error", "site/concat-on-1d-signal"]
