"""The team's view over a history of real fixture runs (tests/history.py: eight jobs, six nights): what changed,
the jobs grid, causes, honest numbers, the per-run pages every link points to, the index; and the run
history's store commands (the knowledge base beside the findings, the document table, kept logs, prune,
embedded logs). Checked through the parsed DOM, never by substring."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from triage import load_packs, scan_paths
from triage.report import build_nightly_context, render_nightly, write_nightly
from triage.store import open_store, scan_document

from .test_report import by_id, classes, dom, find_all, text

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("demo_history", ROOT / "tests" / "history.py")
history = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
spec.loader.exec_module(history)  # type: ignore[union-attr]

LAST = history.night(history.NIGHTS - 1)  # the last night: 2025-03-09


@pytest.fixture(scope="module")
def farm(tmp_path_factory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("farm")
    packs = load_packs()
    store = open_store(tmp / "farm.db")
    history.build_history(store, packs)
    out = tmp / "reports"
    last = history.write_pages(store, out, packs)
    yield store, packs, out, last
    store.close()


def page(farm) -> Any:  # type: ignore[no-untyped-def]
    return dom(farm[3].read_text(encoding="utf-8"))


def labels_in(root: Any, ident: str) -> set[str]:
    return {li.get("data-label") for li in find_all(by_id(root, ident), "li") if li.get("data-label")}


def test_what_changed_lists_regressed_and_fixed_jobs(farm) -> None:  # type: ignore[no-untyped-def]
    root = page(farm)
    # passed on the night before, failed on the last one (and the reverse), as the history was built
    assert labels_in(root, "regressed") == {"yolov8n-hailo8l", "xfeat-hailo8"}
    assert labels_in(root, "fixed") == {"resnet18-hailo8", "bilstm-hailo8l"}
    assert text(by_id(root, "t-regressed")) == "2" and text(by_id(root, "t-fixed")) == "2"
    yolo = next(li for li in find_all(by_id(root, "regressed"), "li") if li.get("data-label") == "yolov8n-hailo8l")
    links = [a.get("href") for a in find_all(yolo, "a", "run-link")]
    assert len(links) == 2 and all(h.startswith("runs/") for h in links)  # the passing run, then the failing one
    assert text(find_all(yolo, "span", "cause-id")[0]) == "dfc/partition-no-valid-contexts"


def test_new_causes_at_the_top_leave_info_notes_folded(farm) -> None:  # type: ignore[no-untyped-def]
    store, packs, _, _ = farm
    root = page(farm)
    new = by_id(root, "new")
    top = [li for li in new if li.tag == "li" and li.get("data-cause")]
    assert top and all(packs.causes[li.get("data-cause")].severity != "info" for li in top)
    folded = find_all(find_all(new, "details")[0], "li")
    assert folded and all(packs.causes[li.get("data-cause")].severity == "info" for li in folded)
    assert text(by_id(root, "t-new")).split()[0] == str(len(top))


def test_grid_has_one_row_per_job_and_one_cell_per_night(farm) -> None:  # type: ignore[no-untyped-def]
    root = page(farm)
    rows = {r.get("data-label"): r for r in find_all(by_id(root, "grid"), "tr", "job")}
    assert set(rows) == set(history.JOBS)
    bilstm = [c.get("data-status") for c in find_all(rows["bilstm-hailo8l"], "td", "cell")]
    assert bilstm[-history.NIGHTS:] == ["failed", "passed"] * 3 and set(bilstm[:-history.NIGHTS]) == {"none"}
    words = {label: r.get("data-word") for label, r in rows.items()}
    assert words["bilstm-hailo8l"] == "FLAKY" and words["conv2d-vivado-hls"] == "FAILING"
    assert words["jet-tagger-vitis"] == "PASSING" and words["yolov8n-hailo8l"] == "FAILING"
    # a failing cell names its top cause and links to that run's page
    cell = find_all(rows["yolov8n-hailo8l"], "td", "cell")[-1]
    assert "st-failed" in classes(cell) and cell.get("title").endswith("dfc/partition-no-valid-contexts")
    assert find_all(cell, "a")[0].get("href") == f"runs/{cell.get('data-run')}.html"
    # the worst jobs first
    order = [r.get("data-word") for r in find_all(by_id(root, "grid"), "tr", "job")]
    assert order == sorted(order, key=lambda w: {"FAILING": 0, "FLAKY": 1, "UNKNOWN": 2, "PASSING": 3}[w])


def test_every_link_resolves_to_a_file_in_the_output_folder(farm) -> None:  # type: ignore[no-untyped-def]
    _, _, out, _ = farm
    pages = sorted(out.glob("nightly-*.html")) + [out / "index.html"] + sorted((out / "runs").glob("*.html"))
    assert len(pages) > 40
    checked = 0
    for path in pages:
        root = dom(path.read_text(encoding="utf-8"))
        anchors = {el.get("id") for el in root.iter() if isinstance(el.tag, str) and el.get("id")}
        for a in find_all(root, "a"):
            href = a.get("href") or ""
            parts = urlsplit(href)
            if parts.scheme in ("http", "https"):
                continue
            if href.startswith("#"):
                assert href[1:] in anchors, f"{path.name}: {href}"
            else:
                assert (path.parent / parts.path).resolve().is_file(), f"{path.name}: {href}"
            checked += 1
    assert checked > 300


def test_run_pages_show_the_dimensions_and_are_rewritten_only_when_the_run_changes(farm) -> None:  # type: ignore[no-untyped-def]
    store, packs, out, _ = farm
    root = page(farm)
    first = find_all(by_id(root, "runs"), "tr", "run")[0]
    run_page = out / "runs" / f"{first.get('data-run')}.html"
    dims = {dd.get("data-dim"): text(dd) for dd in find_all(dom(run_page.read_text()), "dd", "dim")}
    assert {"label", "model", "branch", "commit", "device"} <= set(dims)
    assert text(find_all(first, "td", "dims")[0]) and dims["commit"].startswith("5eed")
    before = run_page.stat().st_mtime_ns
    write_nightly(store, out, day=LAST.date(), packs=packs, now=LAST + timedelta(days=1))
    assert run_page.stat().st_mtime_ns == before  # same run, same document: not rendered again


def test_a_long_history_writes_pages_only_for_the_runs_the_page_names(farm, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A page over the whole history names a bounded set of runs; it must not write a page per stored run."""
    from triage import report

    store, packs, _, _ = farm
    monkeypatch.setattr(report, "MAX_RUN_ROWS", 5)
    out = tmp_path / "all"
    first = history.night(0)
    path = write_nightly(store, out, since=first, until=LAST + timedelta(days=1), packs=packs,
                         now=LAST + timedelta(days=1))
    root = dom(path.read_text(encoding="utf-8"))
    linked = {urlsplit(a.get("href")).path for a in find_all(root, "a") if (a.get("href") or "").startswith("runs/")}
    written = {f"runs/{p.name}" for p in (out / "runs").glob("*.html")}
    assert written == linked  # every link resolves, and nothing else was rendered
    assert len(written) < history.NIGHTS * len(history.JOBS) == int(text(by_id(root, "t-runs")))


def test_classification_rate_leaves_generic_causes_out(farm) -> None:  # type: ignore[no-untyped-def]
    store, packs, _, _ = farm
    root = page(farm)
    failed = [r for r in find_all(by_id(root, "runs"), "tr", "run") if r.get("data-status") == "failed"]
    generic_only = 0
    specific = 0
    for row in failed:
        doc = store.document(int(row.get("data-run")))
        found = [f for f in _flat(doc["findings"]) if f["severity"] in ("error", "warning")]
        if any(not f.get("generic") for f in found):
            specific += 1
        elif found:
            generic_only += 1
    assert generic_only >= 1 and specific >= 1  # xfeat fails on a catch-all only
    assert text(by_id(root, "classification-rate")) == f"{specific / len(failed) * 100:.0f} %"
    assert text(by_id(root, "t-failed")) == str(len(failed))


def _flat(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for f in findings:
        out.append(f)
        out.extend(_flat(f.get("explains") or []))
    return out


def test_trends_share_one_scale_and_leave_gaps_where_nothing_ran(farm) -> None:  # type: ignore[no-untyped-def]
    root = page(farm)
    sparks = find_all(by_id(root, "causes"), "svg", "spark")
    assert len(sparks) > 5
    scales = {s.get("aria-label").rsplit("scale 0 – ", 1)[1] for s in sparks}
    assert len(scales) == 1  # one scale for every cause
    # the first periods of the window lie before the first night: no run, so no line there
    first = sparks[0].get("aria-label").split(": ", 1)[1].split(" (")[0].split()
    assert first[: 10 - history.NIGHTS] == ["–"] * (10 - history.NIGHTS)
    assert all(p.get("points").split()[0].split(",")[0] != "0.0" for s in sparks for p in find_all(s, "polyline"))


def test_info_notes_are_folded_and_errors_come_first(farm) -> None:  # type: ignore[no-untyped-def]
    store, packs, _, _ = farm
    root = page(farm)
    main = [r.get("data-severity") for r in find_all(by_id(root, "cause-table"), "tr", "cause")]
    assert main and "info" not in main and main == sorted(main, key=["error", "warning"].index)
    notes = find_all(by_id(root, "notes"), "tr", "cause")
    assert notes and {r.get("data-severity") for r in notes} == {"info"}
    for row in find_all(by_id(root, "cause-table"), "tr", "cause")[:3]:  # first sentence of the workaround
        want = packs.causes[row.get("data-cause")].workaround.split(". ")[0]
        assert text(find_all(row, "div", "workaround")[0]).removeprefix("Workaround. ").startswith(want[:40])


def test_qor_changes_carry_absolute_figures(farm) -> None:  # type: ignore[no-untyped-def]
    root = page(farm)
    block = [b for b in find_all(by_id(root, "qor"), "div", "qor") if b.get("data-label") == "cnn-vivado-synth"][0]
    iob = [li for li in find_all(block, "li", "qor-change") if li.get("data-resource") == "Bonded IOB"][0]
    assert "worse" in classes(iob) and text(find_all(iob, "span", "after")[0]) == "307 %"
    assert text(find_all(iob, "span", "absolute")[0]).endswith("384 of 125 used)")
    # the job was retargeted (xcu250 -> a Zynq part): the page says the percentages are of different devices
    moved = find_all(block, "p", "part-change")
    assert len(moved) == 1 and "xcu250figd2104-2L → 7z020clg400-1" in text(moved[0])


def test_index_has_one_row_per_page_with_its_counts(farm) -> None:  # type: ignore[no-untyped-def]
    _, _, out, _ = farm
    root = dom((out / "index.html").read_text(encoding="utf-8"))
    rows = find_all(by_id(root, "reports"), "tr")[1:]
    assert [r.get("data-href") for r in rows] == [f"nightly-{history.night(i).date()}.html"
                                                   for i in reversed(range(history.NIGHTS))]
    last = rows[0]
    nightly = page(farm)
    assert text(find_all(last, "td", "regressed")[0]) == text(by_id(nightly, "t-regressed"))
    assert text(find_all(last, "td", "failed-n")[0]) == text(by_id(nightly, "t-failed"))
    assert find_all(last, "svg", "spark")
    # every row's trend on one scale, the largest count of the column (a quiet week must not draw as high)
    failed = [int(text(find_all(r, "td", "failed-n")[0])) for r in rows]
    scales = {find_all(r, "svg", "spark")[0].get("aria-label").rsplit("scale 0 – ", 1)[1] for r in rows}
    assert min(failed) < max(failed) and scales == {f"{max(failed)})"}
    assert f"0 – {max(failed)}" in text(find_all(by_id(root, "reports"), "th")[-1])


def test_unexplained_groups_carry_the_tools_own_advice(tmp_path: Path) -> None:
    """A Vivado error no cause explains shows the Resolution: line Vivado printed below it, with its id."""
    packs = load_packs(extra=[ROOT / "tests" / "data" / "empty-pack.yaml"], builtin=False, cache=False)
    store = open_store(tmp_path / "a.db")
    log = ROOT / "fixtures/corpus/logs/vivado/216-blackfenzer-vivado_tester-runme.log"
    doc = scan_document(scan_paths([os.path.relpath(log)], packs), packs=packs)
    # synthetic status: the log's own run ends well; its job is marked failed, as a later step could fail it
    doc["run"]["status"] = "failed"
    store.ingest({**doc, "dimensions": {"label": "impl"}, "created": (LAST + timedelta(hours=2)).isoformat()})
    end = LAST + timedelta(days=1)
    root = dom(render_nightly(build_nightly_context(store, LAST, end, now=end, packs=packs)))
    store.close()
    advice = [d for d in find_all(by_id(root, "unexplained"), "div", "advice")
              if d.get("data-message-id") == "Common 17-55"]
    assert len(advice) == 1 and text(advice[0]).endswith("returns at least one valid object.")
    assert text(advice[0]).startswith("Common 17-55 advises:")


def test_nightly_context_is_linear_in_the_history(tmp_path: Path) -> None:
    """Same page for the same period, whatever lies before the window: older runs cost a query, not a pass."""
    packs = load_packs()
    store = open_store(tmp_path / "h.db")
    history.build_history(store, packs)
    end = LAST + timedelta(days=1)
    a = build_nightly_context(store, LAST, end, now=end, packs=packs)
    doc = scan_document(scan_paths([os.path.relpath(history.CASES / history.PASS_DFC)], packs), packs=packs)
    for i in range(40):  # a long past, well before the trend window
        store.ingest({**doc, "dimensions": {"label": f"old-{i}"}, "created": "2020-01-01T00:00:00+00:00"}, force=True)
    b = build_nightly_context(store, LAST, end, now=end, packs=packs)
    assert render_nightly(a) == render_nightly(b).replace(  # the hygiene counts read the whole store
        str(b["hygiene"]["pack_causes"] - len(b["hygiene"]["never_seen"])),
        str(a["hygiene"]["pack_causes"] - len(a["hygiene"]["never_seen"])))
    store.close()


# ---------------------------------------------------------------------------------------------------------
# The run history in the store


def triage(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, cwd=ROOT, env=full,
                          input=stdin, timeout=300)


def test_a_database_only_scan_wrote_joins_findings_to_their_workaround(tmp_path: Path) -> None:
    db = tmp_path / "triage.db"
    log = os.path.relpath(history.CASES / "dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log", ROOT)
    assert triage("scan", log, "--db", str(db)).returncode == 1
    out = subprocess.run([str(Path(sys.executable).parent / "sqlite-utils"), "query", str(db),
                          "select f.cause_id, c.workaround from findings f join causes c on c.id = f.cause_id"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["cause_id"] for r in rows} == {"dfc/partition-no-valid-contexts", "dfc/allocation-failed"}
    assert all(r["workaround"] for r in rows)
    conn = sqlite3.connect(db)
    fks = {(r[3], r[2]) for r in conn.execute("pragma foreign_key_list(findings)")}
    assert ("cause_id", "causes") in fks and ("run_id", "runs") in fks
    assert conn.execute("select count(*) from signatures").fetchone()[0] >= conn.execute("select count(*) from causes").fetchone()[0]
    assert conn.execute("select result_json from runs").fetchall() == [(None,)]  # the document has its own table
    assert json.loads(conn.execute("select document from documents").fetchone()[0])["findings"]


def test_runs_log_prints_the_kept_text_and_names_the_inputs(tmp_path: Path) -> None:
    db = tmp_path / "triage.db"
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"first input\r\nERROR: [Flux 9-99] one\n")
    b.write_bytes(b"second input\n")
    triage("scan", str(a), str(b), "--db", str(db), "--no-store" if False else "--force")
    assert triage("runs", "log", "1", "--input", "1", "--db", str(db)).stdout == a.read_bytes()
    assert triage("runs", "log", "1", "--input", "2", "--db", str(db)).stdout == b.read_bytes()
    many = triage("runs", "log", "1", "--db", str(db))
    assert many.returncode == 2 and b"run 1 has 2 inputs" in many.stderr and b"--input N: 1 " in many.stderr
    missing = triage("runs", "log", "1", "--input", "3", "--db", str(db))
    assert missing.returncode == 2 and b"no input 3" in missing.stderr and b"Traceback" not in missing.stderr
    triage("scan", str(b), "--db", str(db), "--no-keep-log", "--force")
    gone = triage("runs", "log", "2", "--db", str(db))
    assert gone.returncode == 2 and b"was not kept" in gone.stderr


def test_runs_prune_deletes_old_runs_and_everything_they_own(tmp_path: Path) -> None:
    packs = load_packs()
    db = tmp_path / "p.db"
    with open_store(db) as store:
        history.build_history(store, packs)
    before = sqlite3.connect(db).execute("select count(*), sum(status = 'failed') from runs").fetchone()
    kept_failed = triage("runs", "prune", "--older-than", "2025-03-07", "--keep-failed", "--json", "--db", str(db))
    assert kept_failed.returncode == 0, kept_failed.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("select count(*) from runs where created < '2025-03-07' and status != 'failed'").fetchone() == (0,)
    assert conn.execute("select count(*) from runs where created < '2025-03-07'").fetchone()[0] > 0  # failed ones stay
    out = json.loads(triage("runs", "prune", "--older-than", "2025-03-07", "--json", "--db", str(db)).stdout)
    assert out["removed"] > 0 and out["bytes_after"] <= out["bytes_before"]
    for table in ("runs", "findings", "evidence", "unexplained", "inputs", "documents", "metrics"):
        column = "created" if table == "runs" else "run_id"
        if table == "runs":
            assert conn.execute("select count(*) from runs where created < '2025-03-07'").fetchone() == (0,)
        else:
            orphans = conn.execute(f"select count(*) from {table} where {column} not in (select id from runs)").fetchone()
            assert orphans == (0,), table
    assert conn.execute("select count(*) from runs").fetchone()[0] == before[0] - kept_failed_count(kept_failed) - out["removed"]


def kept_failed_count(proc: subprocess.CompletedProcess[bytes]) -> int:
    return int(json.loads(proc.stdout)["removed"])


def test_an_embedded_log_lets_an_ingested_run_be_retriaged(tmp_path: Path) -> None:
    log = os.path.relpath(history.CASES / "dfc/cases/006-mz113-dfc328-compiler-symbol-lookup-error.log", ROOT)
    doc_path = tmp_path / "result.json"
    made = triage("scan", log, "--format", "json", "--no-store", "--embed-log", "--label", "ci-job")
    assert made.returncode == 1
    doc = json.loads(made.stdout)
    embedded = doc["run"]["inputs"][0]["log"]
    assert embedded["encoding"] == "zstd+base64" and embedded["truncated"] is False
    doc_path.write_bytes(made.stdout)
    db = tmp_path / "farm.db"
    assert triage("ingest", str(doc_path), "--db", str(db)).returncode == 0
    assert triage("runs", "log", "1", "--db", str(db)).stdout == (ROOT / log).read_bytes()
    stored = json.loads(sqlite3.connect(db).execute("select document from documents").fetchone()[0])
    assert "log" not in stored["run"]["inputs"][0]  # kept once, in `inputs`, not again in the document
    again = triage("retriage", "--db", str(db), "--force", "--json")
    assert again.returncode == 0, again.stderr
    assert not any(c.get("skipped") for c in json.loads(again.stdout))
    bad = dict(doc)
    bad["run"] = {**doc["run"], "inputs": [{**doc["run"]["inputs"][0], "log": {"encoding": "zstd+base64", "data": "@@@"}}]}
    doc_path.write_text(json.dumps(bad))
    refused = triage("ingest", str(doc_path), "--db", str(tmp_path / "other.db"))
    assert refused.returncode == 2 and b"not base64" in refused.stderr
