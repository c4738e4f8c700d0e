"""What the commands print at 80 columns in a CI log: `scan` (default, `--format short`, `-q`, `-v`), the
tables, and `--help` of every command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from triage.cli import app

from .conftest import ROOT, corpus

runner = CliRunner()
PARTITION = "dfc/cases/043-"  # a real failing DFC compile: a root cause that explains a generic wrapper line
PASSED = "logs/dfc/402-"  # a real passed DFC compile with warnings and notes


def run(*args: str, width: int = 80, input: str | bytes | None = None):  # type: ignore[no-untyped-def]  # noqa: A002
    return runner.invoke(app, list(args), input=input, catch_exceptions=False, env={"COLUMNS": str(width)},
                         terminal_width=width)


def fits(text: str, width: int) -> bool:
    return all(len(line) <= width or not re.search(r"\s", line.strip()) for line in text.splitlines())


def test_scan_at_80_columns_in_a_ci_log(monkeypatch) -> None:
    log = corpus(PARTITION)
    monkeypatch.chdir(log.parent)
    result = run("scan", log.name, "--no-store")
    assert result.exit_code == 1
    out = result.stdout
    assert "╭" not in out and "┃" not in out  # no box to clip anything
    assert fits(out, 80)
    assert f"  --> {log.name}:3  (2 hits)" in out.splitlines()
    assert out.splitlines()[-2] == "1 error · status failed"


def test_short_format_is_one_line_per_finding_and_a_closing_line(monkeypatch) -> None:
    log = corpus(PARTITION)
    monkeypatch.chdir(log.parent)
    doc = json.loads(run("scan", log.name, "--no-store", "--format", "json").stdout)
    lines = run("scan", log.name, "--no-store", "--format", "short").stdout.splitlines()
    assert lines[:-1] == [f"{log.name}:{f['evidence'][0]['line']}: {f['severity']}: {f['title']} [{f['id']}]"
                          for f in doc["findings"]]
    assert re.fullmatch(rf"1 error · status failed · {re.escape(log.name)} \(6 lines\) · \d+\.\d+ s", lines[-1])


def test_quiet_prints_the_closing_line_and_keeps_the_exit_code(tmp_path) -> None:
    db = tmp_path / "t.db"
    failed = run("scan", str(corpus(PARTITION)), "-q", "--db", str(db))
    assert failed.exit_code == 1
    (line,) = failed.stdout.splitlines()
    assert line.startswith("1 error · status failed · ") and line.endswith(" · run 1 stored")
    again = run("scan", str(corpus(PARTITION)), "--quiet", "--db", str(db))
    assert again.stdout.rstrip().endswith(" · run 1 already stored")
    passed = run("scan", str(corpus(PASSED)), "-q", "--no-store")
    assert passed.exit_code == 0 and re.match(r"\d+ warnings?, \d+ info · status passed · ", passed.stdout)


def test_verbose_shows_notes_in_full() -> None:
    short = run("scan", str(corpus(PASSED)), "--no-store", width=120).stdout
    full = run("scan", str(corpus(PASSED)), "--no-store", "-v", width=120).stdout
    assert "also found (info and harmless" in short and "also found" not in full
    from triage import load_packs, scan_paths

    result = scan_paths([str(corpus(PASSED))], load_packs())
    notes = [f for f in result.findings if f.severity == "info" or "harmless" in f.title.lower()]
    explained = [sub for f in result.findings for sub in f.explained]
    assert notes and full.count("  workaround: ") == short.count("  workaround: ") + len(notes) + len(explained)


def test_text_output_to_a_file(tmp_path) -> None:
    out = tmp_path / "triage.txt"
    assert run("scan", str(corpus(PARTITION)), "--no-store", "-o", str(out)).exit_code == 1
    text = out.read_text(encoding="utf-8")
    assert "\x1b[" not in text and "error[dfc/" in text and text.splitlines()[-1].endswith("s")


def _commands() -> list[tuple[str, ...]]:
    from typer.main import get_command

    out, todo = [], [((), get_command(app))]
    while todo:
        path, cmd = todo.pop()
        out.append(path)
        todo.extend(((*path, name), sub) for name, sub in (getattr(cmd, "commands", None) or {}).items())
    return sorted(out)


@pytest.mark.parametrize("command", _commands(), ids=lambda c: " ".join(c) or "triage")
def test_help_reads_at_80_columns(command) -> None:
    proc = subprocess.run([sys.executable, "-m", "triage", *command, "--help"], capture_output=True, text=True,
                          cwd=ROOT, env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Usage: ")
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert not any(ch in proc.stdout for ch in "╭│╰")
    # option help starts at most 32 columns in: at least 46 columns of description
    for line in lines:
        m = re.match(r"  (-\S.*?)  +(\S.*)", line)
        if m:
            assert line.index(m.group(2)) <= 32, line
    commands = lines[lines.index("Commands:") + 1:] if "Commands:" in lines else []
    for line in commands:  # a command's one-line description is whole, not cut by click (`...`, `(e.g.`)
        if re.match(r"  [a-z]+ {2,}\S", line):
            assert line.endswith("."), line
            assert not line.endswith("...") and not line.endswith("e.g."), line


def test_runs_list_keeps_ids_and_timestamps_whole(tmp_path) -> None:
    db = tmp_path / "t.db"
    for rel in (PARTITION, PASSED, "dfc/cases/044-"):
        run("scan", str(corpus(rel)), "--db", str(db), "--label", "nightly-" + "x" * 40, "-q")
    out = run("runs", "list", "--db", str(db)).stdout.splitlines()
    assert len(out) == 4  # a header and one line per run
    for line in out[1:]:
        assert re.match(r"\s*\d+  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  nightly-x+…  dfc\s+\S+\s+(?:\d+[EWI] ?)+(?: \+\d+ explained)?  [a-z]+/\S+$", line), line
    doc = json.loads(run("runs", "list", "--db", str(db), "--json").stdout)
    assert [line.split()[-1] for line in out[1:]] == [r["top"] for r in doc]


def test_packs_list_in_a_pipe_is_one_row_per_cause() -> None:
    out = run("packs", "list").stdout.splitlines()
    ids = [c["id"] for c in json.loads(run("packs", "list", "--json").stdout)]
    assert out[0].split() == ["id", "severity", "tool", "title"]
    assert [line.split()[0] for line in out[1:-1]] == ids
    assert out[-1] == f"{len(ids)} causes"


def test_kb_search_and_explain_at_80_columns() -> None:
    out = run("kb", "search", "allocation").stdout
    assert fits(out, 80 + 40)  # the title keeps 40 columns in a pipe
    line = "[error] BackendAllocatorException: Compilation failed: Performance Flow requires automatic resource utilization"
    explained = run("explain", line).stdout
    assert "error[dfc/perf-flow-manual-resources]: " in explained and fits(explained, 80)
