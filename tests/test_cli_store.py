"""`runs list`, `runs show`, `ingest`, `retriage` through Typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from triage.cli_store import ingest, retriage, runs_app
from triage.errors import StoreError
from triage.model import Evidence, Finding, InputInfo, RunInfo, ScanResult
from triage.packs import PackSet
from triage.store import LogKeeper, open_store, scan_document

DATA = Path(__file__).parent / "data" / "store"

app = typer.Typer()
app.add_typer(runs_app, name="runs")
app.command("ingest")(ingest)
app.command("retriage")(retriage)
runner = CliRunner()


def result_doc(text: str, label: str) -> dict:  # type: ignore[type-arg]
    ev = Evidence("build/x.log", 3, text)
    finding = Finding("hls/root", "error", "Root cause", "because", "do this", [], 1, [ev])
    result = ScanResult(RunInfo(tool="vitis_hls", status="failed", inputs=[InputInfo("build/x.log", "log", 5, 50)]),
                        [finding], [])
    return scan_document(result, dimensions={"label": label}, packs=PackSet({}, [], "d0"))


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


def test_every_command_has_help() -> None:
    for args in (["runs", "list"], ["runs", "show"], ["ingest"], ["retriage"]):
        out = runner.invoke(app, [*args, "--help"])
        assert out.exit_code == 0 and "--db" in out.output


def test_ingest_then_list_and_show(tmp_path: Path, db: Path) -> None:
    doc = tmp_path / "r.json"
    doc.write_text(json.dumps(result_doc("[bold]not markup[/bold] ERROR: [XFORM 203-504]", "nightly")))
    first = runner.invoke(app, ["ingest", str(doc), "--db", str(db)])
    assert first.exit_code == 0, first.output
    assert "run 1 stored" in first.output
    again = runner.invoke(app, ["ingest", str(doc), "--db", str(db), "--json"])
    assert json.loads(again.output) == [{"file": str(doc), "run_id": 1, "duplicate": True, "undated": True}]

    listed = runner.invoke(app, ["runs", "list", "--db", str(db), "--json"])
    rows = json.loads(listed.output)
    assert [(r["id"], r["label"], r["status"], r["top"]) for r in rows] == [(1, "nightly", "failed", "hls/root")]
    table = runner.invoke(app, ["runs", "list", "--db", str(db)])
    assert "nightly" in table.output and "hls/root" in table.output
    assert runner.invoke(app, ["runs", "list", "--db", str(db), "--label", "other", "--json"]).output.strip() == "[]"

    shown = runner.invoke(app, ["runs", "show", "1", "--db", str(db)], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert "[bold]not markup[/bold] ERROR: [XFORM 203-504]" in shown.output  # log text is never markup
    assert "Root cause" in shown.output and "nightly" in shown.output
    data = json.loads(runner.invoke(app, ["runs", "show", "1", "--db", str(db), "--json"]).output)
    assert data["findings"][0]["cause_id"] == "hls/root" and data["result"]["dimensions"]["label"] == "nightly"


def test_triage_db_environment_variable(tmp_path: Path, db: Path) -> None:
    doc = tmp_path / "r.json"
    doc.write_text(json.dumps(result_doc("x", "env")))
    assert runner.invoke(app, ["ingest", str(doc)], env={"TRIAGE_DB": str(db)}).exit_code == 0
    assert db.exists()
    rows = json.loads(runner.invoke(app, ["runs", "list", "--json"], env={"TRIAGE_DB": str(db)}).output)
    assert [r["label"] for r in rows] == ["env"]


def test_reading_a_missing_database_is_a_store_error(db: Path) -> None:
    out = runner.invoke(app, ["runs", "list", "--db", str(db)])
    assert isinstance(out.exception, StoreError) and "no run database" in out.exception.message
    assert not db.exists()
    open_store(db).close()
    assert "no runs stored yet" in runner.invoke(app, ["runs", "list", "--db", str(db)]).output
    shown = runner.invoke(app, ["runs", "show", "7", "--db", str(db)])
    assert isinstance(shown.exception, StoreError) and "no run with id 7" in shown.exception.message


def test_retriage_command(tmp_path: Path, db: Path) -> None:
    from triage import load_packs, scan_paths

    log = tmp_path / "build.log"
    log.write_text("ERROR: WIDGET_EXPLODED code 9\n")
    packs = load_packs()
    keeper = LogKeeper()
    result = scan_paths([str(log)], packs, raw_sink=keeper.sink)
    with open_store(db) as store:
        store.record_run(result, packs=packs, dimensions={}, duration_s=0, logs=keeper)
    out = runner.invoke(app, ["retriage", "--db", str(db), "--packs", str(DATA / "extra-pack.yaml"), "--json"])
    assert out.exit_code == 0, out.output
    assert [(c["run_id"], c["added"], c["removed"]) for c in json.loads(out.output)] == [(1, ["test/widget-exploded"], [])]
    text = runner.invoke(app, ["retriage", "--db", str(db), "--packs", str(DATA / "extra-pack.yaml"), "--force"])
    assert "1 run(s) re-classified, 0 changed" in text.output
