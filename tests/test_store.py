"""The run store: migrations, de-duplication, kept logs, concurrency, crash safety, ingest, retriage, search."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from triage import load_packs, scan_paths
from triage.errors import InputError, StoreError, TriageError
from triage.metrics import Metric
from triage.model import Evidence, Finding, InputInfo, RunInfo, ScanResult, Unexplained
from triage.packs import PackSet
from triage.sources import Source
from triage.store import (
    MIGRATION_NAMES, ZSTD_MAGIC, LogKeeper, apply_migrations, default_db_path, dimensions, open_store, parse_since,
    result_from_doc, scan_document, unpack_log,
)

DATA = Path(__file__).parent / "data" / "store"
NO_PACKS = PackSet(causes={}, files=[], digest="test-digest")

# Shipped migrations never change: editing, renaming or reordering one breaks existing databases.
SHIPPED = [
    "m001_runs_and_inputs", "m002_findings_and_evidence", "m003_unexplained", "m004_metrics",
    "m005_causes_with_fts", "m006_views", "m007_metrics_line_and_unit",
]


@pytest.fixture(scope="module")
def packs() -> PackSet:
    return load_packs()


def make_result(tag: str = "a", path: str = "build/vitis_hls.log") -> ScanResult:
    """A synthetic result: a root-cause error explaining a warning, and one unexplained line."""
    ev = Evidence(path, 12, f"ERROR: [XFORM 203-504] stop unrolling {tag}", before=["b1", "b2"], after=["a1"],
                  captures={"loop": "L1"})
    child = Finding("hls/child", "warning", "Child", "c", "w", [], 2, [Evidence(path, 20, "WARNING: child")])
    root = Finding("hls/root", "error", "Root", "c", "w", ["https://example.org"], 1, [ev], tool="vitis_hls",
                   explained=[child])
    run = RunInfo(tool="vitis_hls", tool_version="2023.1", phase="csynth", status="failed",
                  inputs=[InputInfo(path, "log", 40, 1000)])
    unexplained = [Unexplained(path, 30, "ERROR: /tmp/x/y.cpp:42 something 0xdeadbeef", 3, "fp1")]
    return ScanResult(run, [root], unexplained)


def count(store, table: str) -> int:  # type: ignore[no-untyped-def]
    return store.db[table].count


# ---------------------------------------------------------------------------------------------------------
# Migrations


def test_migration_list_is_append_only() -> None:
    assert MIGRATION_NAMES[: len(SHIPPED)] == SHIPPED


@pytest.mark.parametrize("k", range(len(MIGRATION_NAMES) + 1))
def test_open_migrates_from_every_earlier_version(tmp_path: Path, k: int) -> None:
    path = tmp_path / "old.db"
    db = Database(path)
    with db.atomic():
        apply_migrations(db, upto=k)
    if k >= 1:  # a run stored by that older version survives the upgrade
        db["runs"].insert({"created": "2024-01-01T00:00:00Z", "input_hash": "h", "status": "failed", "label": "old"})
    db.close()
    with open_store(path) as store:
        names = [r["name"] for r in store.db["migrations"].rows_where(order_by="rowid")]
        assert names == MIGRATION_NAMES
        assert {"run_findings", "latest_run_per_label"} <= set(store.db.view_names())
        assert store.db["causes_fts"].exists()
        outcome = store.record_run(make_result(), packs=NO_PACKS, dimensions={"label": "new"}, duration_s=1.0)
        assert not outcome.duplicate
        labels = [r["label"] for r in store.db["runs"].rows_where(order_by="id")]
        assert labels == (["old", "new"] if k >= 1 else ["new"])


def test_reopening_applies_nothing(tmp_path: Path) -> None:
    open_store(tmp_path / "t.db").close()
    with open_store(tmp_path / "t.db") as store:
        applied = [r["applied"] for r in store.db["migrations"].rows]
        assert len(applied) == len(MIGRATION_NAMES)
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_in_memory_store_has_the_schema() -> None:
    with open_store(None) as store:
        assert {"runs", "inputs", "findings", "evidence", "metrics", "unexplained", "causes"} <= set(store.db.table_names())
        assert store.last_run_id() is None


def test_missing_database_when_not_creating(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run database"):
        open_store(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError) as info:
        open_store(bad)
    assert "not a usable triage database" in info.value.message
    assert "\n" not in info.value.message


# ---------------------------------------------------------------------------------------------------------
# Recording


def test_record_run_writes_every_table() -> None:
    result = make_result()
    result.metrics = [Metric("LUT", 120.0, 100.0, 120.0, "SLR0", "utilization", "util.rpt", 7)]
    log = b"line one\nERROR: [XFORM 203-504] stop unrolling a\n"
    with open_store(None) as store:
        out = store.record_run(result, packs=NO_PACKS, dimensions={"label": "nightly", "model": "resnet"},
                               duration_s=2.5, logs={"build/vitis_hls.log": log},
                               created=datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc))
        run = store.run(out.run_id)
        assert run["created"] == "2024-05-01T12:00:00Z"
        assert (run["label"], run["model"], run["tool"], run["status"]) == ("nightly", "resnet", "vitis_hls", "failed")
        assert run["packs_digest"] == "test-digest" and run["duration_s"] == 2.5
        assert [(f["cause_id"], f["parent_cause_id"]) for f in run["findings"]] == [("hls/root", None), ("hls/child", "hls/root")]
        assert run["findings"][0]["first_line"] == 12
        assert run["inputs"][0]["sha256"] == hashlib.sha256(log).hexdigest()
        assert store.kept_log(out.run_id, "build/vitis_hls.log") == log
        assert run["result"]["dimensions"]["model"] == "resnet"
        ev = next(store.db["evidence"].rows_where("cause_id = ?", ["hls/root"]))
        assert json.loads(ev["before"]) == ["b1", "b2"] and json.loads(ev["captures"]) == {"loop": "L1"}
        un = next(store.db["unexplained"].rows)
        assert un["normalised"] == "ERROR: <PATH>:<N> something <HEX>"
        metric = next(store.db["metrics"].rows)
        assert (metric["resource"], metric["percent"], metric["line"], metric["scope"]) == ("LUT", 120.0, 7, "SLR0")
        assert [r["cause_id"] for r in store.db["run_findings"].rows_where("label = ?", ["nightly"])] == ["hls/root", "hls/child"]
        rebuilt = result_from_doc(run["result"])
        assert rebuilt.findings[0].explained[0].id == "hls/child" and rebuilt.metrics[0].resource == "LUT"


def test_identical_rescan_is_not_duplicated(tmp_path: Path, packs: PackSet) -> None:
    log = tmp_path / "vitis_hls.log"
    log.write_text("INFO: start\nERROR: [HLS 200-70] Compilation errors found\n")

    def scan_and_store(store, **kw):  # type: ignore[no-untyped-def]
        keeper = LogKeeper()
        result = scan_paths([str(log)], packs, raw_sink=keeper.sink)
        dims = dimensions(label=kw.pop("label", "a"), env={})
        return store.record_run(result, packs=packs, dimensions=dims, duration_s=0.1, logs=keeper, **kw)

    with open_store(tmp_path / "t.db") as store:
        first = scan_and_store(store)
        again = scan_and_store(store)
        assert again.run_id == first.run_id and again.duplicate
        assert count(store, "runs") == 1 and count(store, "inputs") == 1
        other_label = scan_and_store(store, label="b")
        forced = scan_and_store(store, force=True)
        assert not other_label.duplicate and not forced.duplicate
        log.write_text("INFO: start\nERROR: [HLS 200-70] Compilation errors found\nINFO: one more line\n")
        changed = scan_and_store(store)
        assert not changed.duplicate
        assert count(store, "runs") == 4
        assert store.last_run_id() == changed.run_id


def test_hashes_file_inputs_the_sink_did_not_see(tmp_path: Path, packs: PackSet) -> None:
    """A scan run in worker processes gets no raw sink: the store hashes and keeps the files itself."""
    log = tmp_path / "a.log"
    log.write_bytes(b"ERROR: something odd\n")
    result = scan_paths([str(log)], packs)
    with open_store(None) as store:
        out = store.record_run(result, packs=packs, dimensions={}, duration_s=0.0)
        assert store.run(out.run_id)["inputs"][0]["sha256"] == hashlib.sha256(b"ERROR: something odd\n").hexdigest()
        assert store.kept_log(out.run_id, str(log)) == b"ERROR: something odd\n"
        assert store.record_run(result, packs=packs, dimensions={}, duration_s=0.0).duplicate


def test_log_keeper_cap_hash_and_stdin() -> None:
    keeper = LogKeeper(cap_bytes=100)
    stdin = Source("-", "log")
    data = bytes(range(256)) * 2
    for i in range(0, len(data), 64):
        keeper.sink(stdin, data[i:i + 64])
    assert keeper.hashes() == {"<stdin>": hashlib.sha256(data).hexdigest()}
    blob, truncated = keeper.logs()["<stdin>"]
    assert truncated and blob is not None and blob.startswith(ZSTD_MAGIC) and unpack_log(blob) == data[:100]
    keeper.sink(stdin, b"more")  # still usable after logs()
    assert keeper.hashes()["<stdin>"] == hashlib.sha256(data + b"more").hexdigest()
    for hash_only in (LogKeeper(keep=False), LogKeeper(cap_bytes=0)):
        hash_only.sink(stdin, b"abc")
        assert hash_only.logs() == {"<stdin>": (None, False)}
        assert hash_only.hashes()["<stdin>"] == hashlib.sha256(b"abc").hexdigest()


def test_kept_logs_are_zstd_frames_and_survive_more_bytes_and_empty_logs() -> None:
    keeper = LogKeeper()
    stdin = Source("-", "log")
    keeper.sink(stdin, b"first part\n")
    first, _ = keeper.logs()["<stdin>"]
    keeper.sink(stdin, b"second part\n")  # after logs(): a new frame, concatenated to the first
    blob, truncated = keeper.logs()["<stdin>"]
    assert blob is not None and blob.startswith(first) and not truncated
    assert unpack_log(blob) == b"first part\nsecond part\n"
    empty = LogKeeper()
    empty.sink(Source("-", "log"), b"")
    blob, _ = empty.logs()["<stdin>"]
    assert blob is not None and unpack_log(blob) == b""


def test_runs_kept_as_zlib_by_earlier_versions_still_read_and_retriage(tmp_path: Path, packs: PackSet) -> None:
    log = tmp_path / "build.log"
    text = b"INFO: starting\nERROR: WIDGET_EXPLODED code 7\nINFO: done\n"
    log.write_bytes(text)
    with open_store(tmp_path / "t.db") as store:
        keeper = LogKeeper()
        result = scan_paths([str(log)], packs, raw_sink=keeper.sink)
        run_id = store.record_run(result, packs=packs, dimensions={}, duration_s=0, logs=keeper).run_id
        store.db.execute("update inputs set log = ? where run_id = ?", [zlib.compress(text, 1), run_id])
        store.db.conn.commit()
        assert store.kept_log(run_id, str(log)) == text
        log.unlink()
        changes = {c.run_id: c for c in store.retriage(load_packs(extra=[DATA / "extra-pack.yaml"]))}
        assert changes[run_id].added == ["test/widget-exploded"]


def test_default_database_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_DB", str(tmp_path / "env.db"))
    assert default_db_path() == tmp_path / "env.db"
    open_store(None, default=True).close()
    assert (tmp_path / "env.db").exists()
    monkeypatch.delenv("TRIAGE_DB")
    assert default_db_path().name == "triage.db" and "triage" in str(default_db_path().parent)


def test_dimensions_from_ci_environment() -> None:
    assert dimensions(env={"GITHUB_REF_NAME": "main", "GITHUB_SHA": "abc"})["branch"] == "main"
    gitlab = dimensions(env={"CI_COMMIT_REF_NAME": "dev", "CI_COMMIT_SHA": "def"})
    assert (gitlab["branch"], gitlab["commit"]) == ("dev", "def")
    jenkins = dimensions(env={"BRANCH_NAME": "rel", "GIT_COMMIT": "123"})
    assert (jenkins["branch"], jenkins["commit"]) == ("rel", "123")
    explicit = dimensions(label="l", branch="mine", commit="c0", device="hailo8", env={"GITHUB_REF_NAME": "main"})
    assert (explicit["branch"], explicit["commit"], explicit["device"], explicit["label"]) == ("mine", "c0", "hailo8", "l")
    assert dimensions(env={})["host"]
    assert set(dimensions(env={})) == {"label", "model", "branch", "commit", "host", "device"}


# ---------------------------------------------------------------------------------------------------------
# Reading


def test_runs_filters_and_latest_per_label() -> None:
    with open_store(None) as store:
        def add(day: int, label: str, tag: str, status: str = "failed") -> int:
            r = make_result(tag)
            r.run.status = status
            return store.record_run(r, packs=NO_PACKS, dimensions={"label": label}, duration_s=0,
                                    created=datetime(2024, 5, day, tzinfo=timezone.utc)).run_id

        a1, b1, a2 = add(1, "a", "x"), add(2, "b", "y", "passed"), add(3, "a", "z")
        assert [r["id"] for r in store.runs()] == [a2, b1, a1]
        assert [r["id"] for r in store.runs(label="a")] == [a2, a1]
        assert [r["id"] for r in store.runs(status="passed")] == [b1]
        assert [r["id"] for r in store.runs(since="2024-05-02")] == [a2, b1]
        assert store.runs(tool="vivado") == []
        assert store.runs(limit=1)[0]["top"] == "hls/root"
        assert store.runs()[0]["errors"] == 1 and store.runs()[0]["findings"] == 1
        latest = {r["label"]: r["id"] for r in store.db["latest_run_per_label"].rows}
        assert latest == {"a": a2, "b": b1}
        with pytest.raises(StoreError, match="no run with id"):
            store.run(999)


def test_parse_since() -> None:
    now = datetime(2024, 5, 10, 12, 0, tzinfo=timezone.utc)
    assert parse_since("24h", now) == "2024-05-09T12:00:00Z"
    assert parse_since("7d", now) == "2024-05-03T12:00:00Z"
    assert parse_since("2024-05-01") == "2024-05-01T00:00:00Z"
    assert parse_since(None) is None
    with pytest.raises(TriageError, match="cannot read --since"):
        parse_since("yesterday-ish")


# ---------------------------------------------------------------------------------------------------------
# Ingest


def test_scan_json_ingest_round_trip(tmp_path: Path, packs: PackSet) -> None:
    log = tmp_path / "hailo_sdk.core.log"
    log.write_text("[error] Mapping Failed (allocation time: 0s)\n[error] Failed to produce compiled graph\n")
    keeper = LogKeeper()
    result = scan_paths([str(log)], packs, raw_sink=keeper.sink)
    dims = dimensions(label="ci", model="yolo", branch="main", commit="abc", device="hailo8", env={})
    # machine 1: `scan --format json` prints this document
    scanned_at = datetime(2024, 5, 1, 8, 30, tzinfo=timezone.utc)
    text = json.dumps(scan_document(result, dimensions=dims, packs=packs, duration_s=1.25, keeper=keeper,
                                    created=scanned_at))
    # machine 2: ingest
    with open_store(tmp_path / "farm.db") as farm:
        out = farm.ingest(json.loads(text))
        run = farm.run(out.run_id)
        assert {k: run[k] for k in dims} == dims
        assert run["packs_digest"] == packs.digest and run["duration_s"] == 1.25
        assert run["created"] == "2024-05-01T08:30:00Z"  # when it was scanned, not when ingested
        assert [f["cause_id"] for f in run["findings"]] == [f.id for f in result.all_findings()]
        assert run["result"]["findings"] == json.loads(text)["findings"]
        assert run["inputs"][0]["sha256"] == keeper.hashes()[str(log)]
        assert farm.ingest(json.loads(text)).duplicate
    # the same scan stored locally has the same input hash as the ingested one
    with open_store(None) as local:
        local_id = local.record_run(result, packs=packs, dimensions=dims, duration_s=1.25, logs=keeper).run_id
        assert local.run(local_id)["input_hash"] == run["input_hash"]


def test_ingest_documents_without_dimensions_or_hashes(tmp_path: Path, packs: PackSet) -> None:
    from triage.formats import to_json

    log = tmp_path / "a.log"
    log.write_text("[error] Mapping Failed\n")
    plain = json.loads(to_json(scan_paths([str(log)], packs)))  # an older scan document
    with open_store(None) as store:
        first = store.ingest(plain)
        assert not first.duplicate and store.ingest(plain).duplicate
        assert store.run(first.run_id)["label"] is None


def test_ingest_rejects_what_is_not_a_result(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ nope")
    with open_store(None) as store:
        with pytest.raises(InputError, match="not JSON"):
            store.ingest_file(bad)
        with pytest.raises(InputError, match="not a triage scan result"):
            store.ingest({"hello": 1})
        assert count(store, "runs") == 0


# ---------------------------------------------------------------------------------------------------------
# Re-triage


def test_retriage_picks_up_a_cause_added_later(tmp_path: Path, packs: PackSet) -> None:
    log = tmp_path / "build.log"
    log.write_text("INFO: starting\nERROR: WIDGET_EXPLODED code 7\nINFO: done\n")
    with open_store(tmp_path / "t.db") as store:
        keeper = LogKeeper()
        result = scan_paths([str(log)], packs, raw_sink=keeper.sink)
        assert "test/widget-exploded" not in {f.id for f in result.all_findings()}
        run_id = store.record_run(result, packs=packs, dimensions={}, duration_s=0, logs=keeper).run_id
        unkept = store.ingest({"run": {"inputs": []}, "findings": []}).run_id
        log.unlink()  # the build folder is gone; the kept copy remains

        newer = load_packs(extra=[DATA / "extra-pack.yaml"])
        changes = {c.run_id: c for c in store.retriage(newer)}
        assert changes[run_id].added == ["test/widget-exploded"] and changes[run_id].removed == []
        assert changes[unkept].skipped == "log not kept"
        run = store.run(run_id)
        assert "test/widget-exploded" in [f["cause_id"] for f in run["findings"]]
        assert run["findings"][0]["first_path"] == str(log)  # the original path, not the temporary copy
        assert run["packs_digest"] == newer.digest and run["result"]["retriaged"]
        assert not any("WIDGET_EXPLODED" in u["text"] for u in store.db["unexplained"].rows_where("run_id = ?", [run_id]))
        assert run_id not in {c.run_id for c in store.retriage(newer)}  # already classified with these packs
        back = {c.run_id: c for c in store.retriage(packs)}
        assert back[run_id].removed == ["test/widget-exploded"]


# ---------------------------------------------------------------------------------------------------------
# Knowledge base search


@pytest.fixture(scope="module")
def kb() -> object:
    store = open_store(None)
    store.sync_causes(load_packs(extra=[DATA / "search-pack.yaml"], builtin=False))
    yield store
    store.close()


@pytest.mark.parametrize(("query", "expected"), [
    ("[ZXFORM 903-504]", "test/bracketed-message-id"),
    ("QuuxAllocatorException: Compilation failed", "test/colon-exception"),
    ('"Zorbo Flow"', "test/phrase"),
    ("res_param(x=-1)", "test/phrase"),
    ("zorbo AND flow NOT phrase", "test/flow-unrelated"),  # operators are words, not syntax
    ("ZXFORM 903-504 WORD-NOT-IN-ANY-CAUSE", "test/bracketed-message-id"),  # falls back to any token
])
def test_search_with_special_characters(kb, query: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    hits = kb.search_causes(query)
    assert hits and hits[0]["id"] == expected, [h["id"] for h in hits]


def test_search_phrase_is_a_phrase(kb) -> None:  # type: ignore[no-untyped-def]
    assert [h["id"] for h in kb.search_causes('"Zorbo Flow" needs automatic')] == ["test/phrase"]


def test_sync_causes_replaces_the_knowledge(tmp_path: Path) -> None:
    with open_store(None) as store:
        assert store.sync_causes(load_packs(extra=[DATA / "search-pack.yaml"], builtin=False))
        assert not store.sync_causes(load_packs(extra=[DATA / "search-pack.yaml"], builtin=False))
        store.sync_causes(load_packs(extra=[DATA / "extra-pack.yaml"], builtin=False))
        assert [r["id"] for r in store.db["causes"].rows] == ["test/widget-exploded"]
        assert store.search_causes("Zorbo") == []
        assert store.search_causes("widget")[0]["references"] == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_search_never_raises(kb, query: str) -> None:  # type: ignore[no-untyped-def]
    kb.search_causes(query)


@settings(max_examples=30, deadline=None)
@given(st.text(max_size=200))
def test_store_round_trips_any_text(text: str) -> None:
    result = make_result()
    result.unexplained[0].text = text
    result.findings[0].evidence[0].text = text
    with open_store(None) as store:
        run = store.run(store.record_run(result, packs=NO_PACKS, dimensions={}, duration_s=0).run_id)
        assert run["result"]["unexplained"][0]["text"] == text
        assert next(store.db["evidence"].rows)["text"] == text


# ---------------------------------------------------------------------------------------------------------
# Failure and concurrency


def test_full_disk_is_one_clear_error_and_nothing_half_written(tmp_path: Path) -> None:
    with open_store(tmp_path / "t.db") as store:
        store.record_run(make_result("small"), packs=NO_PACKS, dimensions={}, duration_s=0)
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages + 3}")
        big = os.urandom(2 * 1024 * 1024)  # incompressible
        with pytest.raises(StoreError) as info:
            store.record_run(make_result("big"), packs=NO_PACKS, dimensions={}, duration_s=0,
                             logs={"build/vitis_hls.log": big})
        assert info.value.message == "database or disk is full: the run was not stored"
        assert count(store, "runs") == 1 and count(store, "inputs") == 1 and count(store, "findings") == 2
        store.db.execute("PRAGMA max_page_count = 1073741823")
        assert not store.record_run(make_result("later"), packs=NO_PACKS, dimensions={}, duration_s=0).duplicate


def _writer(path: str, worker: int, n: int, barrier) -> None:  # type: ignore[no-untyped-def]
    barrier.wait()
    with open_store(path) as store:  # all open a fresh database at once: migrations race too
        for i in range(n):
            tag = f"{worker}-{i}"
            store.record_run(make_result(tag), packs=NO_PACKS, dimensions={"label": f"w{worker}"}, duration_s=0,
                             logs={"build/vitis_hls.log": f"log {tag}\n".encode()})


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs the fork start method")
    ctx = multiprocessing.get_context("fork")
    path = str(tmp_path / "shared.db")
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=_writer, args=(path, w, 50, barrier)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    with open_store(path) as store:
        assert count(store, "runs") == 400
        assert count(store, "inputs") == 400 and count(store, "findings") == 800
        per_label = {r["label"]: r["n"] for r in store.db.query("select label, count(*) as n from runs group by label")}
        assert per_label == {f"w{w}": 50 for w in range(8)}
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


CHILD = textwrap.dedent("""
    import json, sys, time, pathlib
    from triage.store import Store, open_store

    db, doc, marker = sys.argv[1:4]
    original = Store._insert

    def stall(self, table, rows):
        if table == "evidence":  # the run, its inputs and findings are written by now
            pathlib.Path(marker).write_text("in transaction")
            time.sleep(60)
        return original(self, table, rows)

    Store._insert = stall
    open_store(db).ingest(json.loads(pathlib.Path(doc).read_text()))
""")


def test_writer_killed_mid_transaction_leaves_no_partial_run(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with open_store(db) as store:
        store.record_run(make_result("before"), packs=NO_PACKS, dimensions={}, duration_s=0)
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(scan_document(make_result("killed"), dimensions={"label": "killed"})))
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(doc), str(marker)])
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, "the writer exited before reaching the transaction"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(10)
    assert child.returncode == -signal.SIGKILL
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    with open_store(db) as store:
        assert count(store, "runs") == 1 and count(store, "inputs") == 1 and count(store, "findings") == 2
        assert list(store.db["runs"].rows_where("label = ?", ["killed"])) == []
        assert not store.ingest(json.loads(doc.read_text())).duplicate  # and the database still takes writes


def test_a_folder_as_the_database_path_is_one_line_error(tmp_path: Path) -> None:
    """Not sqlite's "unable to open database file ... for writing", which sends the user to check permissions."""
    for create in (True, False):
        with pytest.raises(StoreError, match="the run database path is a folder") as info:
            open_store(tmp_path, create=create)
        assert "triage.db" in (info.value.hint or "")
    assert list(tmp_path.iterdir()) == []
