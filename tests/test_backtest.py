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

from .conftest import corpus, public

NOW = datetime(2025, 6, 30, 12, 0, tzinfo=timezone.utc)
XSIM = public("vivado/203-")  # failed: a known root cause, and `ERROR: unknown error occurred` unexplained
PARTITION = corpus("dfc/cases/043-")  # failed: allocation failure lines
PASSED = corpus("logs/dfc/402-")  # passed, with optimizer warnings


def record(store, packs, fixture: Path, label: str, days_ago: float, keep: bool = True) -> int:  # type: ignore[no-untyped-def]
    path = str(fixture)
    result = scan_paths([path], packs)
    outcome = store.record_run(result, packs=packs, dimensions={"label": label}, duration_s=0.1,
                               logs=LogKeeper(keep=keep), created=NOW - timedelta(days=days_ago))
    return outcome.run_id


@pytest.fixture()
def history(tmp_path: Path, packs):  # type: ignore[no-untyped-def]
    store = open_store(tmp_path / "runs.db")
    ids = {
        "xsim-5d": record(store, packs, XSIM, "a", 5),
        "xsim-40d": record(store, packs, XSIM, "b", 40),
        "xsim-100d": record(store, packs, XSIM, "c", 100),  # older than 90 days: not looked at
        "passed-3d": record(store, packs, PASSED, "d", 3),
        "xsim-not-kept": record(store, packs, XSIM, "e", 2, keep=False),
    }
    yield store, ids
    store.close()


def test_draft_hits_are_counted_per_window_and_status(history, packs) -> None:
    store, ids = history
    draft = draft_from_store(store, packs, run_id=ids["xsim-5d"])
    assert draft.regex == "unknown error occurred"
    bt = backtest(store, with_draft(packs, draft), [draft.cause_id], baseline=packs, prefilter=True, now=NOW)
    assert (bt.runs, bt.not_kept) == (3, 1)  # 5d, 40d and passed; 100d is out of the period
    assert bt.causes[draft.cause_id] == {30: {"failed": 1, "passed": 0, "unknown": 0},
                                         90: {"failed": 2, "passed": 0, "unknown": 0}}
    assert [c.run_id for c in bt.explaining] == [ids["xsim-5d"], ids["xsim-40d"]]
    assert all(c.lines_explained == 1 and c.added == [draft.cause_id] for c in bt.explaining)
    assert bt.newly_explained == [] and bt.hiding == []  # the runs already had their root cause


def test_a_draft_that_hits_a_passed_run_says_so(history, packs) -> None:
    store, _ = history
    line = next(x for x in PASSED.read_text().splitlines() if "Reducing output bits" in x)
    draft = draft_from_text(line, packs, tool="dfc")
    bt = backtest(store, with_draft(packs, draft), [draft.cause_id], baseline=packs, prefilter=True, now=NOW)
    assert bt.hits(draft.cause_id, 30, "passed") == 1 and bt.hits(draft.cause_id, 90, "passed") == 1
    assert bt.hits(draft.cause_id, 90, "failed") == 0


def test_newly_explained_run(tmp_path: Path) -> None:
    """With packs that know nothing about DFC allocation, a failed DFC run has no known cause."""
    subset = load_packs([builtin_pack_dir() / "triage.yaml"], builtin=False)
    with open_store(tmp_path / "runs.db") as store:
        unknown = record(store, subset, PARTITION, "x", 1)
        record(store, subset, XSIM, "y", 1)
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
        "pack: site\ntool: vivado\ncauses:\n"
        "  - id: site/xsim-lift-testbench-crash\n    title: The lift testbench crashes the simulator\n    severity: error\n"
        "    cause: Our lift controller testbench forces a signal the simulator kernel cannot handle.\n"
        "    workaround: Drive the floor input from the testbench instead of add_force.\n"
        "    explains: [vivado/xsim-kernel-fatal-error]\n"
        "    signatures:\n      - regex: 'ERROR: unknown error occurred'\n"
        "        match: ['ERROR: unknown error occurred']\n", encoding="utf-8")
    candidate = load_packs([mine])
    bt = backtest(store, candidate, ["site/xsim-lift-testbench-crash"], now=NOW)
    assert {c.run_id for c in bt.hiding} == {ids["xsim-5d"], ids["xsim-40d"]}
    assert all(c.hidden == ["vivado/xsim-kernel-fatal-error"] for c in bt.hiding)
    assert bt.hits("site/xsim-lift-testbench-crash", 90, "failed") == 2
    assert bt.changed_causes() == ["site/xsim-lift-testbench-crash", "vivado/xsim-kernel-fatal-error"]
