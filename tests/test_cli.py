"""The command line: contract, exit codes, one-line errors, help on every command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from triage.cli import app

from .conftest import FIXTURES, ROOT, corpus, public

runner = CliRunner()
SEED = FIXTURES / "notes" / "dfc-a1-seed-dfc329.log"


def run(*args: str, input: str | bytes | None = None):  # noqa: A002
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def test_json_contract_on_piped_stdin() -> None:
    result = run("scan", "-", "--format", "json", "--no-store", input=SEED.read_bytes())
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert set(doc) >= {"run", "findings", "unexplained"}
    assert set(doc["run"]) >= {"tool", "tool_version", "inputs", "status"}
    (info,) = doc["run"]["inputs"]
    assert {k: info[k] for k in ("path", "kind", "lines", "bytes")} == {"path": "<stdin>", "kind": "log", "lines": 7, "bytes": 368}
    f = doc["findings"][0]
    assert set(f) >= {"id", "severity", "title", "cause", "workaround", "references", "count", "evidence"}
    assert f["id"] == "dfc/perf-flow-manual-resources"
    assert {"path", "line", "text"} <= set(f["evidence"][0])


def test_exit_codes_follow_fail_on() -> None:
    clean = str(corpus("logs/hls/002-"))  # passed, with one warning finding
    assert run("scan", clean, "--no-store").exit_code == 0
    assert run("scan", clean, "--no-store", "--fail-on", "warning").exit_code == 1
    assert run("scan", str(SEED), "--no-store", "--fail-on", "never").exit_code == 0


def test_empty_stdin_is_an_input_error_unless_allowed(tmp_path: Path) -> None:
    from triage.errors import InputError

    db = tmp_path / "e.db"
    result = runner.invoke(app, ["scan", "-", "--format", "json", "--db", str(db)], input=b"")
    assert isinstance(result.exception, InputError) and result.exception.exit_code == 2
    assert result.stdout == ""
    assert not db.exists() or run("runs", "list", "--db", str(db), "--json").stdout.strip() == "[]"
    allowed = run("scan", "-", "--format", "json", "--no-store", "--allow-empty", input=b"")
    assert allowed.exit_code == 0
    assert json.loads(allowed.stdout)["run"]["inputs"][0]["lines"] == 0


def test_missing_path_is_one_line_error_exit_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "triage", "scan", "no/such/file.log", "--no-store"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: no such file or folder: no/such/file.log")
    assert "Traceback" not in proc.stderr


def test_text_output_shows_cause_workaround_and_unexplained() -> None:
    result = run("scan", str(SEED), "--no-store")
    out = result.stdout
    assert "Performance flow" in out or "Performance Flow" in out
    assert "workaround:" in out and "dfc/perf-flow-manual-resources" in out


def test_text_output_escapes_rich_markup_in_log_text(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("ERROR: [b]x[/b] [red]y\n")
    out = run("scan", str(log), "--no-store").stdout
    assert "ERROR: [b]x[/b] [red]y" in out


def test_explain_and_kb_show_json() -> None:
    line = "[error] BackendAllocatorException: Compilation failed: Performance Flow requires automatic resource utilization"
    doc = json.loads(run("explain", line, "--json").stdout)
    assert doc["findings"][0]["id"] == "dfc/perf-flow-manual-resources"
    near = json.loads(run("explain", "ERROR: [XFORM 203-504] Stop unroling loop", "--json").stdout)
    assert near["findings"] == [] and near["message_id"] == "XFORM 203-504"
    assert near["same_message_id"][0]["id"] == "hls/xform-203-504-stop-unrolling"
    entry = json.loads(run("kb", "show", "dfc/perf-flow-manual-resources", "--json").stdout)
    assert entry["severity"] == "error" and entry["references"] and entry["examples"]


def test_kb_show_unknown_id_suggests() -> None:
    proc = subprocess.run([sys.executable, "-m", "triage", "kb", "show", "dfc/perf-flow-manual-resource"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "did you mean dfc/perf-flow-manual-resources" in proc.stderr


def test_packs_list_filters_by_tool() -> None:
    doc = json.loads(run("packs", "list", "--tool", "dfc", "--json").stdout)
    assert doc and all(c["tool"] == "dfc" or c["id"].startswith("dfc/") for c in doc)


def test_packs_test_is_green() -> None:
    result = run("packs", "test")
    assert result.exit_code == 0, result.stdout[-3000:]
    assert "goldens match; 0 fixtures without a golden" in result.stdout


def test_every_command_has_help() -> None:
    from typer.main import get_command

    root = get_command(app)
    todo = [((), root)]
    seen = 0
    while todo:
        path, cmd = todo.pop()
        result = run(*path, "--help")
        assert result.exit_code == 0, path
        assert "Usage" in result.stdout
        seen += 1
        subcommands = getattr(cmd, "commands", None) or {}
        todo.extend(((*path, name), sub) for name, sub in subcommands.items())
    assert seen >= 8


def test_python_dash_m_works() -> None:
    proc = subprocess.run([sys.executable, "-m", "triage", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("triage ")


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_user_packs_option_adds_causes(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "p.yaml").write_text(
        "pack: site\ntool: vivado\ncauses:\n"
        "  - id: site/frobnicator\n    title: Frobnicator exploded\n    severity: warning\n"
        "    cause: The site-local frobnicator step runs out of scratch space on shared build hosts.\n"
        "    workaround: Clean /scratch on the build host or set FROB_TMP to a larger disk before the run.\n"
        "    signatures:\n      - regex: 'frobnicator exploded'\n        match: ['ERROR: frobnicator exploded']\n"
    )
    log = tmp_path / "a.log"
    log.write_text("ERROR: frobnicator exploded\n")
    result = run("scan", str(log), "--packs", str(tmp_path), "--format", fmt, "--no-store")
    assert "site/frobnicator" in result.stdout
    assert result.exit_code == 0  # a warning does not fail at the default --fail-on error


def test_counts_agree_across_every_view(tmp_path: Path) -> None:
    """Real logs with explained findings (414), an unexplained error line (xsim 203) and CRLF (011): the counts
    of `scan --format json`, `runs list`, `runs show` and the HTML report are one and the same."""
    db = str(tmp_path / "c.db")
    inputs = [str(corpus("logs/dfc/414-")), str(public("vivado/203-")), str(corpus("logs/hls/011-"))]
    doc = json.loads(run("scan", *inputs, "--db", db, "--format", "json").stdout)
    top = doc["findings"]
    expected = {"error": sum(f["severity"] == "error" for f in top), "warning": sum(f["severity"] == "warning" for f in top),
                "info": sum(f["severity"] == "info" for f in top), "explained": sum(len(f["explains"]) for f in top),
                "unexplained": len(doc["unexplained"])}
    assert expected["explained"] and expected["unexplained"] and expected["error"]
    assert doc["counts"] == expected
    (row,) = json.loads(run("runs", "list", "--db", db, "--json").stdout)
    assert row["counts"] == expected and (row["errors"], row["warnings"]) == (expected["error"], expected["warning"])
    table = run("runs", "list", "--db", db).stdout
    assert f"{expected['error']}E {expected['warning']}W {expected['info']}I +{expected['explained']} explained" in table
    shown = run("runs", "show", "1", "--db", db).stdout
    words = f"{expected['error']} errors, {expected['warning']} warning"
    assert words in shown and shown.count("  explains ") == expected["explained"]  # one line per explained one
    assert json.loads(run("runs", "show", "1", "--db", db, "--json").stdout)["result"]["counts"] == expected
    html_path = tmp_path / "r.html"
    assert run("report", "1", "--db", db, "--out", str(html_path)).exit_code == 0
    html = html_path.read_text(encoding="utf-8")
    tiles = {k: int(v) for k, v in re.findall(r'id="n-(\w+)">(\d+)<', html)}
    assert tiles == expected


def triage(*args: str, cwd: Path = ROOT, stdin: bytes | None = b"") -> subprocess.CompletedProcess[str]:
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "triage", *args], input=stdin.decode() if stdin is not None else None,
                          capture_output=True, text=True, cwd=cwd, env=env)


@pytest.mark.parametrize("args, first, hint", [
    (["scna"], "error: no such command 'scna'", "did you mean 'scan'?"),
    (["runs", "list", "--status", "faild"],
     "error: invalid value for '--status': 'faild' is not one of 'failed', 'passed', 'unknown'", "--help"),
    (["runs", "list", "--tool", "vivad"], "error: invalid value for '--tool': 'vivad' is not one of", "--help"),
    (["scan", "--jobs", "-3", "x.log"], "error: invalid value for '--jobs' / '-j': -3 is not in the range x>=0", "--help"),
    (["runs", "show", "123456789012345678901"], "error: invalid value for 'ID': 123456789012345678901 is not in", "--help"),
    (["scan", "--frobnicate"], "error: no such option: --frobnicate", "--help"),
    (["packs", "list", "--tool", "vivad"], "error: invalid value for '--tool': 'vivad' is not a tool", ", vivado, "),
], ids=["command-typo", "status", "tool", "jobs", "id-overflow", "option", "pack-tool"])
def test_usage_errors_are_one_line_errors_in_the_house_style(tmp_path: Path, args: list[str], first: str,
                                                             hint: str) -> None:
    proc = triage(*args, "--db", str(tmp_path / "x.db")) if args[0] == "runs" else triage(*args)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(first), proc.stderr
    assert lines[1].startswith("  --> ") and "triage" in lines[1] and lines[2].startswith("  help: ") and hint in lines[2]
    assert "Usage:" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, stdin, first", [
    (["explain", "  "], b"", "error: nothing to explain: the text is empty"),
    (["explain", "-"], b"\n\n", "error: nothing to explain: the text is empty"),
    (["kb", "search", ""], b"", "error: nothing to search for: the query is empty"),
], ids=["explain-blank", "explain-empty-stdin", "search-empty"])
def test_nothing_to_explain_or_search_is_an_input_error(args: list[str], stdin: bytes, first: str) -> None:
    """Not "no known cause matches" (exit 1), which would read as a real line nobody has explained."""
    proc = triage(*args, stdin=stdin)
    assert proc.returncode == 2 and proc.stderr.splitlines()[0] == first, proc.stderr
    assert "Traceback" not in proc.stderr and not proc.stdout


def test_runs_list_filters_that_match_nothing_say_so(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    run("scan", str(SEED), "--db", db)
    assert "no stored run matches --status passed" in run("runs", "list", "--db", db, "--status", "passed").stdout


@pytest.mark.parametrize("where", ["missing", "outside", "no-goldens"])
def test_packs_test_without_fixtures_is_an_input_error(tmp_path: Path, where: str) -> None:
    if where == "missing":
        proc = triage("packs", "test", "--fixtures", str(tmp_path / "nonexistent"))
    elif where == "outside":  # the default `fixtures` folder is the repository's
        proc = triage("packs", "test", cwd=tmp_path)
    else:
        (tmp_path / "f").mkdir()
        (tmp_path / "f" / "a.log").write_text("ERROR: x\n")
        proc = triage("packs", "test", "--fixtures", str(tmp_path / "f"))
    assert proc.returncode == 2, proc.stdout[-500:]
    assert proc.stderr.startswith("error: no ") and "goldens match" not in proc.stdout


def test_jobs_beyond_the_cores_are_clamped(tmp_path: Path) -> None:
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    proc = triage("scan", "--no-store", "-j", "200", str(SEED))
    assert proc.returncode == 1
    assert f"warning: --jobs 200: using {cores}, the cores this process may run on" in proc.stderr


def test_scan_json_records_created_and_ingest_dates_the_run_by_it(tmp_path: Path) -> None:
    """A farm's results ingested the next morning belong to the night they ran in, not to the ingest."""
    from datetime import UTC, datetime, timedelta

    before = datetime.now(UTC).replace(microsecond=0)
    doc = json.loads(run("scan", str(SEED), "--no-store", "--format", "json").stdout)
    created = datetime.fromisoformat(doc["created"])
    assert before <= created <= datetime.now(UTC) and doc["created"].endswith("Z")
    night = (created - timedelta(days=1)).replace(hour=23, minute=10)
    doc["created"] = night.strftime("%Y-%m-%dT%H:%M:%SZ")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc))
    db = str(tmp_path / "farm.db")
    assert run("ingest", str(path), "--db", db).exit_code == 0
    (row,) = json.loads(run("runs", "list", "--db", db, "--json").stdout)
    assert row["created"] == doc["created"]
    out = tmp_path / "reports"
    assert run("nightly", "--db", db, "--date", night.date().isoformat(), "--out", str(out)).exit_code == 0
    page = (out / f"nightly-{night.date().isoformat()}.html").read_text(encoding="utf-8")
    assert re.search(r'id="t-runs">1<', page)


def test_ingest_refuses_a_created_that_is_not_a_date(tmp_path: Path) -> None:
    doc = json.loads(run("scan", str(SEED), "--no-store", "--format", "json").stdout)
    doc["created"] = "last tuesday"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    proc = triage("ingest", str(path), "--db", str(tmp_path / "x.db"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: created: 'last tuesday' is not an ISO 8601 date-time")


def test_a_command_runs_with_only_its_part_of_the_app_and_the_same_help() -> None:
    from typer.main import get_command

    from triage.cli import app_for

    kb = get_command(app_for(["kb", "search", "x"]))
    assert set(kb.commands) == {"kb"} and set(kb.commands["kb"].commands) == {"search"}  # type: ignore[attr-defined]
    assert set(get_command(app_for(["scan", "-"])).commands) == {"scan"}
    for whole in (["--help"], ["--version"], ["scna"], []):  # the command list, the version, "did you mean"
        assert app_for(whole) is app
    for group in (["kb"], ["kb", "--help"], ["kb", "serch", "x"], ["runs", "--json"]):  # a group's own help and errors
        assert set(get_command(app_for(group)).commands[group[0]].commands) == \
            set(get_command(app).commands[group[0]].commands)  # type: ignore[attr-defined]
    for args in (["scan", "--help"], ["kb", "search", "--help"], ["runs", "--help"], ["kb", "serch", "x"],
                 ["runs", "list", "--help"], ["packs", "list", "--help"]):
        assert runner.invoke(app_for(args), args).output == runner.invoke(app, args).output
