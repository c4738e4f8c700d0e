"""Crashes and concurrency with real scan results: writers killed at random points, and writers racing a
nightly report. The database must always open, pass `PRAGMA integrity_check`, and hold only whole runs."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from triage import load_packs, scan_paths
from triage.report import build_nightly_context, render_nightly
from triage.store import open_store, scan_document

from .conftest import ROOT, corpus

WRITER = textwrap.dedent("""
    import json, sys
    print("starting", flush=True)
    from triage.store import open_store

    db, doc = sys.argv[1:3]
    document = json.loads(open(doc).read())
    with open_store(db) as store:
        for i in range(100000):
            document["dimensions"]["label"] = f"run-{i}"
            print(f"write {i}", flush=True)  # the parent kills on one of these lines: mid-write
            store.ingest(document, force=True)
""")


def _document(tmp_path: Path) -> tuple[Path, dict]:  # type: ignore[type-arg]
    result = scan_paths([str(corpus("dfc/cases/043-")), str(corpus("hls/cases/005-"))], load_packs())
    doc = scan_document(result, dimensions={"label": "x"})
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return path, doc


def _whole_runs_only(db: Path, findings_per_run: int, inputs_per_run: int) -> int:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        if "runs" not in tables:  # killed before its first migration committed: an empty database
            assert not tables, tables
            return 0
        runs = conn.execute("select count(*) from runs").fetchone()[0]
        per_run = conn.execute(
            "select r.id, (select count(*) from findings f where f.run_id = r.id),"
            " (select count(*) from inputs i where i.run_id = r.id) from runs r").fetchall()
        assert all(f == findings_per_run and i == inputs_per_run for _, f, i in per_run), "a partial run"
        orphans = conn.execute("select count(*) from findings where run_id not in (select id from runs)").fetchone()[0]
        assert orphans == 0
        return runs
    finally:
        conn.close()


def test_writer_killed_at_random_points_leaves_only_whole_runs(tmp_path: Path) -> None:
    """The writer says when a write begins; the kill follows that line at once, so it lands inside the
    write (or the start-up and migrations, on the trials that kill at "starting") however busy the
    machine is."""
    doc_path, doc = _document(tmp_path)
    findings = sum(1 + len(f["explains"]) for f in doc["findings"])
    db = tmp_path / "t.db"
    rng = random.Random(20)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    total = 0
    for trial in range(20):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(doc_path)], env=env,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        target = "starting" if trial % 5 == 0 else f"write {rng.randint(0, 4)}"
        for line in child.stdout:
            if line.strip() == target:
                break
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL, "the writer ended before it was killed"
        runs = _whole_runs_only(db, findings, len(doc["run"]["inputs"]))
        assert runs >= total  # nothing committed is ever lost
        total = runs
    assert total > 0
    with open_store(db) as store:  # and it still takes writes
        assert not store.ingest(doc, force=True).duplicate


def _race_writer(path: str, worker: int, doc: dict, barrier) -> None:  # type: ignore[no-untyped-def,type-arg]
    barrier.wait()
    with open_store(path) as store:
        for i in range(50):
            doc["dimensions"]["label"] = f"w{worker}"
            doc["dimensions"]["model"] = f"m{i}"
            store.ingest(doc)


def test_eight_writers_and_a_nightly_report_at_once(tmp_path: Path) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs the fork start method")
    _, doc = _document(tmp_path)
    packs = load_packs()
    path = str(tmp_path / "shared.db")
    open_store(path).close()
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(9)
    procs = [ctx.Process(target=_race_writer, args=(path, w, json.loads(json.dumps(doc)), barrier)) for w in range(8)]
    for p in procs:
        p.start()
    barrier.wait()
    rendered = 0
    now = datetime.now(timezone.utc) + timedelta(minutes=1)
    while any(p.is_alive() for p in procs) or rendered == 0:
        with open_store(path, create=False) as store:
            html = render_nightly(build_nightly_context(store, now - timedelta(days=1), now, packs=packs, now=now))
        assert "<html" in html
        rendered += 1
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    with open_store(path) as store:
        assert store.db.execute("select count(*) from runs").fetchone()[0] == 400
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert rendered >= 1


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found |= {int(c) for c in task.read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's parent-death signal is Linux-only")
def test_workers_stop_when_the_scan_is_killed(tmp_path: Path) -> None:
    """A CI job that kills `triage` on a timeout must not leave its workers scanning a big log."""
    log = tmp_path / "big.log"
    with log.open("w") as fh:  # synthetic: a log of unexplained error lines, slow to scan on purpose
        for i in range(1_200_000):
            fh.write(f"ERROR: odd thing {i} in stage {i % 97}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "triage", "scan", "--no-store", "-j", "2", str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    deadline = time.monotonic() + 120  # bounds a hang only
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.05)
    assert len(workers) >= 2, "the scan never started its workers"
    proc.kill()  # at once: a worker still starting up must end too (it checks its parent after asking)
    proc.wait()
    deadline = time.monotonic() + 60  # a bound on a hang, not a wait: the loop ends when they are gone
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert not left, "workers kept scanning after the scan was killed"
