"""A long run history: `runs list` streams (table and JSON) and says the same as the list it replaces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from triage import cli_store
from triage.cli_store import runs_app
from triage.store import open_store

from .test_cli_store import result_doc

app = typer.Typer()
app.add_typer(runs_app, name="runs")
runner = CliRunner()


@pytest.fixture()
def history(tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    with open_store(db) as store:
        for i in range(23):
            doc = result_doc(f"ERROR: [XFORM 203-504] line {i}", "a-much-longer-job-label" if i in (2, 7) else f"job-{i % 4}")
            doc["created"] = f"2025-03-{1 + i:02d}T06:00:00Z"
            store.ingest(doc, force=True)
    return db


def test_streamed_json_is_the_list(history: Path) -> None:
    with open_store(history) as store:
        expected = store.runs(limit=None)
    out = runner.invoke(app, ["runs", "list", "--db", str(history), "--limit", "0", "--json"]).output
    assert json.loads(out) == json.loads(json.dumps(expected, default=str)) and len(expected) == 23
    assert out == json.dumps(expected, indent=2, ensure_ascii=False, default=str) + "\n"
    assert [r["id"] for r in expected] == sorted((r["id"] for r in expected), reverse=True)  # newest first
    assert all(r["errors"] == 1 and r["findings"] == 1 and r["top"] == "hls/root" for r in expected)


def test_table_streams_in_slices_with_one_header(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_store, "RUNS_PER_TABLE", 5)
    out = runner.invoke(app, ["runs", "list", "--db", str(history), "--limit", "0"]).output
    lines = out.splitlines()
    assert lines[0].split() == ["id", "created", "(UTC)", "label", "tool", "status", "findings", "top", "finding"]
    rows = lines[1:]
    assert len(rows) == 23 and [int(r.split()[0]) for r in rows] == list(range(23, 0, -1))
    assert all(r.split()[-1] == "hls/root" for r in rows)
    # a slice keeps the columns of the slices before it (a wider cell widens them for the rest, never back)
    starts = [r.index("hls/root") for r in rows]
    assert starts == sorted(starts) and len(set(starts[:15])) == 1 and len(set(starts[15:])) == 1
