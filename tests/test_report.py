"""HTML reports: contexts from stored real fixture runs, checked through the parsed DOM (html5lib)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import html5lib
import pytest
import typer
from typer.testing import CliRunner

from triage import load_packs, scan_paths
from triage.cli_report import nightly, report
from triage.formats import result_dict
from triage.report import (
    build_nightly_context,
    build_result_context,
    build_run_context,
    nightly_period,
    parse_span,
    render_nightly,
    render_run,
    write_nightly,
    write_result_report,
)
from triage.errors import StoreError, TriageError
from triage.store import open_store

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
NOW = datetime(2025, 3, 10, 6, 0, tzinfo=UTC)
SINCE = NOW - timedelta(hours=24)

# (label, fixture, created): real corpus logs, stored at chosen times around the period [SINCE, NOW).
OLD = NOW - timedelta(days=5)
PREV = NOW - timedelta(hours=36)
RUNS = [
    ("resnet", "dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log", OLD),
    ("yolo", "dfc/cases/006-mz113-dfc328-compiler-symbol-lookup-error.log", PREV),
    ("bilstm", "dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log", PREV),
    ("yolo", "dfc/cases/037-beetle-hailomz-either-model-name-or-yaml.log", NOW - timedelta(hours=20)),
    ("resnet", "logs/dfc/405-mnmfullmetal-hailo_compiler-hailo_sdk.core.log", NOW - timedelta(hours=18)),
    ("bilstm", "dfc/cases/034-community19530-dfc530-successful-compilation.log", NOW - timedelta(hours=16)),
    ("alexnet", "logs/hls/001-2Martina-AlexNet-vivado_hls.log", NOW - timedelta(hours=14)),
    ("iob", "hls/cases/002-hls4ml-fixture-vivado_synth-bonded-iob-307pct.rpt", NOW - timedelta(hours=12)),
]
# Synthetic (generated here, not from the corpus): a failure no pack explains.
MYSTERY = "step 1 ok\nERROR: [Flux 9-99] flux capacitor at 0x7f3a overloaded in /tmp/build_42/a.cpp\nERROR: [Flux 9-99] flux capacitor at 0x7f3b overloaded in /tmp/build_43/b.cpp\n"


# ---------------------------------------------------------------------------------------------------------
# DOM helpers


def dom(text: str) -> Any:
    return html5lib.parse(text, namespaceHTMLElements=False)


def classes(el: Any) -> set[str]:
    return set((el.get("class") or "").split())


def find_all(root: Any, tag: str = "*", cls: str | None = None, **attrs: str) -> list[Any]:
    out = []
    for el in root.iter():
        if not isinstance(el.tag, str) or (tag != "*" and el.tag.rsplit("}", 1)[-1] != tag):
            continue  # SVG elements keep their namespace: compare local names
        if cls is not None and cls not in classes(el):
            continue
        if any(el.get(k.replace("_", "-")) != v for k, v in attrs.items()):
            continue
        out.append(el)
    return out


def by_id(root: Any, ident: str) -> Any:
    found = find_all(root, id=ident)
    assert len(found) == 1, f"expected one element with id {ident}, got {len(found)}"
    return found[0]


def text(el: Any) -> str:
    return " ".join("".join(el.itertext()).split())


def direct_cards(el: Any) -> list[Any]:
    """Finding cards directly under `el` (not those nested in another card)."""
    return [c for c in el if c.tag == "article" and "finding" in classes(c)]


def flat_findings(findings: list[Any]) -> list[Any]:
    out = []
    for f in findings:
        out.append(f)
        out.extend(flat_findings(f.explained))
    return out


# ---------------------------------------------------------------------------------------------------------
# A store with real fixture runs


@pytest.fixture(scope="module")
def packs():  # type: ignore[no-untyped-def]
    return load_packs()


@pytest.fixture(scope="module")
def stored(tmp_path_factory, packs):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("store")
    mystery = tmp / "mystery-build.log"
    mystery.write_text(MYSTERY)
    store = open_store(tmp / "triage.db")
    results: list[tuple[int, str, Any, datetime]] = []
    for label, rel, created in RUNS + [("mystery", str(mystery), NOW - timedelta(hours=10))]:
        path = rel if rel.startswith("/") else str(CORPUS / rel)
        result = scan_paths([path], packs)
        outcome = store.record_run(result, packs=packs, dimensions={"label": label}, duration_s=0.5,
                                   created=created, force=True)
        results.append((outcome.run_id, label, result, created))
    yield store, results
    store.close()


def current(results):  # type: ignore[no-untyped-def]
    return [(rid, label, r) for rid, label, r, created in results if SINCE <= created < NOW]


# ---------------------------------------------------------------------------------------------------------
# Per-run report


def test_run_report_cards_nest_explained_findings_with_evidence(stored):  # type: ignore[no-untyped-def]
    store, results = stored
    rid, label, result, _ = next(x for x in results if x[1] == "resnet" and x[3] > SINCE)
    root = dom(render_run(build_run_context(store, rid, now=NOW)))
    section = by_id(root, "findings")
    top = direct_cards(section)
    assert [text(c.find(".//h3")) for c in top] == [f.title for f in result.findings]
    explained = [f for f in result.findings if f.explained]
    assert explained, "fixture should have a root cause that explains another finding"
    for f in explained:
        card = next(c for c in top if c.get("data-cause") == f.id)
        nested = find_all(card, "div", "nested")[0]
        assert [c.get("data-cause") for c in direct_cards(nested)] == [e.id for e in f.explained]
    cards = find_all(section, "article", "finding")
    assert sorted(c.get("data-cause") for c in cards) == sorted(f.id for f in flat_findings(result.findings))
    # evidence: the hit line carries its own line number, context lines the ones around it
    first = result.findings[0]
    ev = first.evidence[0]
    card = next(c for c in top if c.get("data-cause") == first.id)
    rows = find_all(find_all(card, "table", "log")[0], "tr")
    hit = [r for r in rows if "hit" in classes(r)]
    assert len(hit) == 1 and text(hit[0][0]) == str(ev.line)
    numbers = [int(text(r[0])) for r in rows]
    assert numbers == list(range(ev.line - len(ev.before), ev.line + len(ev.after) + 1))
    # header: tool, status, label
    assert text(find_all(root, "dd", "status")[0]) == result.run.status
    assert text(find_all(root, "dd", "dim", data_dim="label")[0]) == "resnet"
    # the counts are the run's `Counts`: top-level errors, and the findings they explain apart
    counts = result.counts()
    assert text(by_id(root, "n-error")) == str(sum(1 for f in result.findings if f.severity == "error")) == str(counts.error)
    assert text(by_id(root, "n-explained")) == str(sum(len(f.explained) for f in result.findings)) == str(counts.explained)


def test_references_are_links_and_result_json_renders_the_same(stored, packs):  # type: ignore[no-untyped-def]
    store, results = stored
    rid, _, result, _ = next(x for x in results if x[1] == "iob")
    from_store = dom(render_run(build_run_context(store, rid, now=NOW)))
    from_json = dom(render_run(build_result_context(json.loads(json.dumps(result_dict(result))), now=NOW)))
    titles = [[text(h) for h in find_all(d, "h3", "title")] for d in (from_store, from_json)]
    assert titles[0] == titles[1] == [f.title for f in flat_findings(result.findings)]
    refs = [f for f in result.findings if f.references][0].references
    hrefs = [a.get("href") for a in find_all(from_json, "a") if (a.get("href") or "").startswith("http")]
    assert hrefs[: len(refs)] == refs


def test_run_report_from_tables_when_result_json_missing(stored):  # type: ignore[no-untyped-def]
    store, results = stored
    rid, _, result, _ = next(x for x in results if x[1] == "yolo" and x[3] > SINCE)
    full = build_run_context(store, rid, now=NOW)
    saved = store.db["runs"].get(rid)["result_json"]
    store.db["runs"].update(rid, {"result_json": None})
    try:
        rebuilt = build_run_context(store, rid, now=NOW)
    finally:
        store.db["runs"].update(rid, {"result_json": saved})
    assert [f["id"] for f in rebuilt["findings"]] == [f["id"] for f in full["findings"]]
    assert rebuilt["summary"] == full["summary"]


def test_missing_run_is_a_store_error(stored):  # type: ignore[no-untyped-def]
    store, _ = stored
    with pytest.raises(StoreError):
        build_run_context(store, 999_999)


def test_metrics_bars_mark_100_percent_and_flag_overuse():  # type: ignore[no-untyped-def]
    # synthetic metrics (the scan does not extract them from these fixtures)
    doc = {"run": {"tool": "vivado", "status": "unknown", "inputs": []}, "findings": [], "unexplained": [],
           "metrics": [{"resource": "LUT", "scope": "top", "used": 500, "available": 1000, "percent": 50.0, "kind": "utilization"},
                       {"resource": "DSP", "scope": "top", "used": 300, "available": 150, "percent": None, "kind": "utilization"},
                       {"resource": "WNS", "scope": "clk", "used": -0.25, "available": None, "percent": None, "kind": "timing"}]}
    root = dom(render_run(build_result_context(doc, now=NOW)))
    rows = {r.get("data-resource"): r for r in find_all(root, "tr", "metric") if r.get("data-resource")}
    assert set(rows) == {"LUT", "DSP"}
    assert "level-over" in classes(rows["DSP"]) and "level-ok" in classes(rows["LUT"])
    assert text(find_all(rows["DSP"], "td", "pct")[0]) == "200.0 %"
    # the scale is 0-100 % whatever the largest figure: LUT at 50 % fills half the 300-wide bar, DSP at
    # 200 % fills it and gets an overflow mark with its absolute figures
    assert float(find_all(rows["LUT"], "rect", "fill-ok")[0].get("width")) == 150.0
    assert not find_all(rows["LUT"], "polygon", "overflow")
    assert float(find_all(rows["DSP"], "rect", "fill-over")[0].get("width")) == 300.0
    assert find_all(rows["DSP"], "polygon", "overflow")
    assert text(find_all(rows["DSP"], "span", "over-note")[0]) == "200.0 %: 300 used of 150"
    assert [text(r[0]) for r in find_all(root, "tr", "negative")] == ["WNS"]


def test_write_result_report_for_scan_html(tmp_path, packs):  # type: ignore[no-untyped-def]
    result = scan_paths([str(CORPUS / "dfc/cases/006-mz113-dfc328-compiler-symbol-lookup-error.log")], packs)
    out = write_result_report(result, tmp_path / "sub" / "run.html", now=NOW)
    root = dom(out.read_text())
    assert [c.get("data-cause") for c in direct_cards(by_id(root, "findings"))] == [f.id for f in result.findings]


# ---------------------------------------------------------------------------------------------------------
# Nightly report


def test_nightly_sets_counts_and_classification_rate(stored, packs):  # type: ignore[no-untyped-def]
    store, results = stored
    root = dom(render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)))
    now_runs = current(results)
    before = [(label, r, created) for _, label, r, created in results if created < SINCE]
    prev = [(label, r) for label, r, created in before if created >= SINCE - timedelta(hours=24)]
    seen_now = {f.id for _, _, r in now_runs for f in flat_findings(r.findings)}
    seen_before = {f.id for _, r, _ in before for f in flat_findings(r.findings)}
    labels_now = {label for _, label, _ in now_runs}
    pairs_now = {(f.id, label) for _, label, r in now_runs for f in flat_findings(r.findings)}
    pairs_prev = {(f.id, label) for label, r in prev for f in flat_findings(r.findings) if label in labels_now}

    def listed(ident: str, attr: str = "data-cause") -> set[Any]:
        return {li.get(attr) for li in find_all(by_id(root, ident), "li") if li.get(attr)}

    expect_new, expect_recurring = seen_now - seen_before, seen_now & seen_before
    expect_resolved = pairs_prev - pairs_now
    assert expect_new and expect_recurring and expect_resolved  # the fixture exercises all three
    assert listed("new") == expect_new
    assert listed("recurring") == expect_recurring
    resolved = {(li.get("data-cause"), li.get("data-label")) for li in find_all(by_id(root, "resolved"), "li") if li.get("data-cause")}
    assert resolved == expect_resolved

    # causes table: total occurrences and runs affected per cause
    rows = {r.get("data-cause"): r for r in find_all(by_id(root, "causes"), "tr", "cause")}
    assert set(rows) == seen_now
    for cid, row in rows.items():
        hits = [f for _, _, r in now_runs for f in flat_findings(r.findings) if f.id == cid]
        assert text(find_all(row, "td", "count")[0]) == str(sum(f.count for f in hits))
        assert text(find_all(row, "td", "runs")[0]) == str(len(hits))
        assert find_all(row, "polyline"), "each cause has a sparkline"

    # runs table and the classification rate
    run_rows = find_all(by_id(root, "runs"), "tr", "run")
    assert sorted(int(r.get("data-run")) for r in run_rows) == sorted(rid for rid, _, _ in now_runs)
    failed = [r for _, _, r in now_runs if r.run.status == "failed"]
    classified = [r for r in failed if any(f.severity in ("error", "warning") and not f.generic for f in flat_findings(r.findings))]
    assert 0 < len(classified) < len(failed)
    assert text(by_id(root, "classification-rate")) == f"{len(classified) / len(failed) * 100:.0f} %"
    assert text(by_id(root, "t-failed")) == str(len(failed))
    first_failed = run_rows[0]
    assert first_failed.get("data-status") == "failed"


def test_nightly_runs_table_stops_after_the_runs_that_need_a_look(stored, packs, monkeypatch):  # type: ignore[no-untyped-def]
    import triage.report

    store, results = stored
    now_runs = current(results)
    statuses = [r.run.status for _, _, r in now_runs]
    assert "failed" in statuses and "passed" in statuses
    monkeypatch.setattr(triage.report, "MAX_RUN_ROWS", 2)
    root = dom(render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)))
    rows = root.findall(".//tr[@data-run]")
    assert len(rows) == 2
    assert all(r.get("data-status") == "failed" for r in rows[: min(2, statuses.count("failed"))])
    assert root.find(".//*[@id='t-runs']").text == str(len(now_runs))  # the total still counts every run
    hidden = "".join(root.find(".//*[@id='runs-hidden']").itertext())
    assert hidden.startswith(f"{len(now_runs) - 2} more runs not listed")
    assert f"{statuses.count('passed')} passed" in hidden and "--limit 0" in hidden


def test_nightly_unexplained_groups_by_fingerprint(stored, packs):  # type: ignore[no-untyped-def]
    store, results = stored
    ctx = build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)
    root = dom(render_nightly(ctx))
    groups = find_all(by_id(root, "unexplained"), "tr", "group")
    mystery = next(r for _, label, r, _ in results if label == "mystery")
    assert mystery.run.status == "failed" and len(mystery.unexplained) == 1  # two lines, one fingerprint
    assert [g.get("data-fingerprint") for g in groups] == [mystery.unexplained[0].fingerprint]
    assert text(find_all(groups[0], "td", "count")[0]) == "2"
    assert text(find_all(groups[0], "td", "runs")[0]) == "1"
    assert "[Flux 9-99]" in text(find_all(groups[0], "div", "text")[0])


def test_nightly_rule_hygiene(stored, packs):  # type: ignore[no-untyped-def]
    store, results = stored
    root = dom(render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)))
    passed = [r for _, _, r in current(results) if r.run.status == "passed"]
    on_passed = {f.id for r in passed for f in flat_findings(r.findings)}
    assert on_passed
    assert {li.get("data-cause") for li in find_all(by_id(root, "fired-on-passed"), "li") if li.get("data-cause")} == on_passed
    ever = {f.id for _, _, r, _ in results for f in flat_findings(r.findings)}
    never = {li.get("data-cause") for li in find_all(by_id(root, "never-seen"), "li") if li.get("data-cause")}
    assert never == set(packs.causes) - ever


def test_nightly_qor_changes_between_latest_two_runs(tmp_path):  # type: ignore[no-untyped-def]
    # synthetic metric documents ingested like results from CI
    store = open_store(tmp_path / "q.db")

    def doc(created: datetime, dsp: float, wns: float, lut: float) -> dict[str, Any]:
        return {"run": {"tool": "vivado", "status": "passed", "inputs": []}, "findings": [], "unexplained": [],
                "dimensions": {"label": "dsp-net"}, "created": created.isoformat(),
                "metrics": [{"resource": "DSP", "scope": "top", "used": dsp, "available": 100, "percent": dsp, "kind": "utilization"},
                            {"resource": "LUT", "scope": "top", "used": lut, "available": 100, "percent": lut, "kind": "utilization"},
                            {"resource": "WNS", "scope": "clk", "used": wns, "kind": "timing"}]}

    store.ingest(doc(NOW - timedelta(days=3), 50, 0.5, 40), force=True)
    store.ingest(doc(NOW - timedelta(hours=30), 78, 0.2, 40), force=True)
    store.ingest(doc(NOW - timedelta(hours=2), 96, -0.1, 41), force=True)
    root = dom(render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW)))
    block = find_all(by_id(root, "qor"), "div", "qor")
    assert [b.get("data-label") for b in block] == ["dsp-net"]
    changes = {li.get("data-resource"): li for li in find_all(block[0], "li", "qor-change")}
    assert set(changes) == {"DSP", "WNS"}  # LUT moved by 1 point: not a change
    dsp = changes["DSP"]
    assert (text(find_all(dsp, "span", "before")[0]), text(find_all(dsp, "span", "after")[0])) == ("78 %", "96 %")
    assert "worse" in classes(dsp)
    assert text(find_all(changes["WNS"], "span", "note")[0]) == "turned negative"
    store.close()


def test_write_nightly_and_index(stored, packs, tmp_path):  # type: ignore[no-untyped-def]
    store, _ = stored
    for day in ("2025-03-08", "2025-03-09"):
        write_nightly(store, tmp_path, day=day, packs=packs, now=NOW)
    path = write_nightly(store, tmp_path, since="24h", until=NOW, packs=packs, now=NOW)
    assert path.name == "nightly-2025-03-10.html"
    daily = path.read_text()
    # a longer period gets a page of its own: it neither overwrites the day's page nor titles itself with one date
    week = write_nightly(store, tmp_path, since="7d", until=NOW, packs=packs, now=NOW)
    assert week.name == "nightly-2025-03-10-7d.html" and path.read_text() == daily
    assert text(dom(week.read_text()).find(".//h1")) == "triage nightly 2025-03-03 – 2025-03-10 (7 days)"
    hours = write_nightly(store, tmp_path, since="90m", until=NOW, packs=packs, now=NOW)
    assert hours.name == "nightly-2025-03-10-90m.html"
    assert text(dom(hours.read_text()).find(".//h1")) == "triage nightly 2025-03-10 04:30 – 06:00 UTC (90 min)"
    root = dom((tmp_path / "index.html").read_text())
    rows = find_all(by_id(root, "reports"), "tr")[1:]
    listed = [r.get("data-href") for r in rows]
    assert sorted(listed) == sorted(["nightly-2025-03-10.html", "nightly-2025-03-10-7d.html",
                                     "nightly-2025-03-10-90m.html", "nightly-2025-03-09.html", "nightly-2025-03-08.html"])
    assert listed[-2:] == ["nightly-2025-03-09.html", "nightly-2025-03-08.html"]  # newest period first
    for row in rows:  # every page with its run and failure counts, as the page itself says them
        page = dom((tmp_path / row.get("data-href")).read_text())
        cells = row.findall("td")
        assert (text(cells[1]), text(cells[2])) == (text(by_id(page, "t-runs")), text(by_id(page, "t-failed")))
    day = dom((tmp_path / "nightly-2025-03-09.html").read_text())
    # 2025-03-09 00:00-24:00 holds the runs created 20, 18, 16, 14, 12 and 10 h before 03-10 06:00
    assert text(by_id(day, "t-runs")) == "6"


def test_rendering_is_deterministic(stored, packs):  # type: ignore[no-untyped-def]
    store, _ = stored
    a = render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs))
    b = render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs))
    assert a == b


def test_periods_and_spans():  # type: ignore[no-untyped-def]
    assert parse_span("24h") == timedelta(hours=24) and parse_span("2w") == timedelta(weeks=2)
    assert nightly_period(day="2025-03-09") == (datetime(2025, 3, 9, tzinfo=UTC), datetime(2025, 3, 10, tzinfo=UTC))
    assert nightly_period(since="7d", now=NOW) == (NOW - timedelta(days=7), NOW)
    for bad in ("yesterday", "0h", "-3d"):
        with pytest.raises(TriageError):
            parse_span(bad)
    with pytest.raises(TriageError):
        nightly_period(day="2025-13-01")


# ---------------------------------------------------------------------------------------------------------
# Escaping: log text, labels and file names never become markup


PAYLOAD = "<script>document.title='pwned'</script><img src=x onerror=\"document.body.appendChild(document.createElement('xss'))\">"


def plant(tmp_path: Path, packs: Any) -> tuple[Any, Path]:
    """A synthetic log whose name, error line and evidence context carry markup."""
    name = tmp_path / "<img src=x onerror=alert(1)>.log"
    example = packs.causes["dfc/hailomz-missing-model-name"].examples[0]
    name.write_text(f"ERROR: {PAYLOAD}\n{PAYLOAD}\n{example}\n")
    return scan_paths([str(name)], packs), name


def assert_inert(root: Any) -> None:
    assert not find_all(root, "script")
    assert not find_all(root, "img")
    assert not find_all(root, "xss")
    assert not [el for el in root.iter() if any(k.startswith("on") for k in el.attrib)]


def test_markup_in_logs_labels_and_file_names_is_escaped(tmp_path, packs):  # type: ignore[no-untyped-def]
    result, name = plant(tmp_path, packs)
    assert result.unexplained and result.findings
    store = open_store(tmp_path / "x.db")
    rid = store.record_run(result, packs=packs, dimensions={"label": PAYLOAD}, duration_s=0.1,
                           created=NOW - timedelta(hours=1)).run_id
    run_page = dom(render_run(build_run_context(store, rid, now=NOW)))
    nightly_page = dom(render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)))
    for root in (run_page, nightly_page):
        assert_inert(root)
    assert text(find_all(run_page, "dd", "dim", data_dim="label")[0]) == PAYLOAD
    assert text(find_all(run_page, "span", "path")[0]) == str(name)
    assert PAYLOAD in text(by_id(run_page, "unexplained"))
    assert any(PAYLOAD == text(row[1]) for row in find_all(by_id(run_page, "findings"), "tr"))
    assert text(find_all(nightly_page, "td", "label-name")[0]) == PAYLOAD
    store.close()


def test_control_characters_in_labels_are_shown_as_escapes(tmp_path, packs):  # type: ignore[no-untyped-def]
    """A terminal title sequence in a label reads on the page as `runs list` shows it, not as raw bytes."""
    result, _ = plant(tmp_path, packs)
    label = "nightly\x1b]0;pwned\x07\u202e"
    store = open_store(tmp_path / "x.db")
    rid = store.record_run(result, packs=packs, dimensions={"label": label}, duration_s=0.1,
                           created=NOW - timedelta(hours=1)).run_id
    pages = (render_run(build_run_context(store, rid, now=NOW)),
             render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)))
    for page in pages:
        assert "\x1b" not in page and "\x07" not in page and "\u202e" not in page
        assert "nightly\\x1b]0;pwned\\x07\\u202e" in page
    assert text(find_all(dom(pages[1]), "td", "label-name")[0]) == "nightly\\x1b]0;pwned\\x07\\u202e"
    store.close()


# ---------------------------------------------------------------------------------------------------------
# CLI (the lead registers these as top-level commands)


@pytest.fixture()
def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(report)
    app.command()(nightly)
    return app


def test_cli_report_and_nightly(stored, cli, tmp_path):  # type: ignore[no-untyped-def]
    store, results = stored
    db = store.where
    runner = CliRunner()
    out = tmp_path / "last.html"
    res = runner.invoke(cli, ["report", "--last", "--db", db, "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"run_id": results[-1][0], "path": str(out)}
    assert direct_cards(by_id(dom(out.read_text()), "findings")) == []  # the mystery run: nothing known
    res = runner.invoke(cli, ["nightly", "--db", db, "--date", "2025-03-09", "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r" / "nightly-2025-03-09.html").is_file() and (tmp_path / "r" / "index.html").is_file()
    res = runner.invoke(cli, ["report", "--db", db])
    assert isinstance(res.exception, TriageError)
    res = runner.invoke(cli, ["nightly", "--db", db, "--since", "soon", "--out", str(tmp_path / "r")])
    assert isinstance(res.exception, TriageError)


def test_run_page_names_the_known_causes_of_an_unexplained_message(packs):  # type: ignore[no-untyped-def]
    from triage import scan_text

    # a real Synth 8-439 line (patterns/vivado-synth.yaml) reworded, so no signature knows it
    result = scan_text("ERROR: [Synth 8-439] could not find module 'vga_timingTimeOut' in any library [C:/x/vga.v:75]\n",
                       packs)
    root = dom(render_run(build_result_context(json.loads(json.dumps(result_dict(result))), now=NOW)))
    known = find_all(root, "div", "known")
    assert len(known) == 1 and "Synth 8-439" in text(known[0])
    assert "vivado/synth-8-439-module-not-found" in [text(c) for c in known[0].iter("code")]


def test_nightly_names_the_known_causes_of_an_unexplained_message(tmp_path, packs):  # type: ignore[no-untyped-def]
    log = tmp_path / "synth.log"
    # a real Synth 8-439 line (patterns/vivado-synth.yaml) reworded, so no signature knows it
    log.write_text("ERROR: [Synth 8-439] could not find module 'vga_timingTimeOut' in any library [C:/x/vga.v:75]\n")
    store = open_store(tmp_path / "triage.db")
    try:
        store.record_run(scan_paths([str(log)], packs), packs=packs, dimensions={"label": "synth"}, duration_s=0.1,
                         created=NOW - timedelta(hours=2), force=True)
        root = dom(render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)))
    finally:
        store.close()
    known = find_all(by_id(root, "unexplained"), "div", "known")
    assert len(known) == 1 and "Synth 8-439" in text(known[0])
    assert "vivado/synth-8-439-module-not-found" in [text(c) for c in known[0].iter("code")]
