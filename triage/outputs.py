"""Renderings for the pipelines triage runs inside: JSON Lines, JUnit XML, SARIF 2.1.0, GitHub workflow
commands, GitLab Code Quality, plain text — plus the streaming helpers behind `--tee`, `--format jsonl` and the progress bar.

`render()` and the `to_*` functions are pure: they return a string and print nothing. The streaming
classes write to the streams they are given (stdout/stderr by default) as the scan goes.

Choices made for CI readers (documented in docs/ci.md):

- JUnit: one test case per cause found, named by its stable id (so Jenkins and GitLab keep its history).
  A finding at or above `fail_on` is a `<failure>` (message = title, body = cause, workaround, evidence,
  references); a finding below it, or one explained by another finding, is `<skipped>` with the same body,
  because both Jenkins and GitLab list skipped cases visibly while passed cases hide their output. Error
  lines that no cause explains form one more case. An empty report is never written (Jenkins' `junit`
  step fails on a report without test cases): a clean run gives one passing case.
- SARIF: every cause of the loaded packs is a rule; each finding is one result at its first evidence line,
  further evidence lines are related locations. Paths are made relative to the working folder (forward
  slashes); standard input is the URI `%3Cstdin%3E`.
- GitHub: `::error` / `::warning` / `::notice` per finding, with GitHub's escaping rules. A finding that
  another one explains is a `::notice` whatever its severity: GitHub shows at most 10 annotations of a
  level per step, and a generic wrapper on the root cause's line would only repeat it as a second error.
- GitLab Code Quality (`artifacts:reports:codequality`): one issue per finding and per unexplained error line.
  The fingerprint is the cause id (or the masked line) and the file, not the line number, so a merge
  request's widget says which failures are new and which were fixed even when the log's lines shift. An
  explained finding is `info`, like GitHub's notice.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePath
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, BinaryIO, TextIO
from urllib.parse import quote, urlsplit

from .display import one_line, terminal_safe
from .fingerprint import fingerprint
from .formats import evidence_dict, finding_dict, to_json, unexplained_dict
from .lazyre import lazy
from .model import SEVERITY_RANK, Evidence, Finding, ScanResult, Unexplained
from .packs import Cause, PackSet
from .sources import STDIN, Source

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

FORMATS = ("text", "short", "json", "jsonl", "junit", "sarif", "github", "gitlab")
RawSink = Callable[[Source, bytes], None]  # same shape as triage.scan.RawSink

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
GITHUB_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}
GITLAB_SEVERITY = {"error": "critical", "warning": "major", "info": "info"}
UNEXPLAINED_ID = "triage/unexplained-error-line"
GITHUB_MAX_UNEXPLAINED = 10  # GitHub shows at most 10 annotations of each level per step
PROGRESS_MIN_BYTES = 20 * 1024 * 1024
TEXT_WIDTH = 100


def render(result: ScanResult, fmt: str, packs: PackSet, *, fail_on: str = "error",
           base_dir: str | os.PathLike[str] | None = None) -> str:
    """The whole result in one of `FORMATS`, ending with a newline.

    `fail_on` (error|warning|info|never) decides which findings are JUnit failures; `base_dir` (default:
    the working folder) is what SARIF and GitHub paths are made relative to.
    """
    if fmt == "json":
        return to_json(result) + "\n"
    if fmt == "jsonl":
        return to_jsonl(result)
    if fmt == "junit":
        return to_junit(result, fail_on=fail_on)
    if fmt == "sarif":
        return to_sarif(result, packs, base_dir=base_dir)
    if fmt == "github":
        return to_github(result, base_dir=base_dir)
    if fmt == "gitlab":
        return to_gitlab(result, base_dir=base_dir)
    if fmt == "text":
        return to_text(result)
    if fmt == "short":
        return to_short(result)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


# ---------------------------------------------------------------------------------------------------------
# shared helpers


def _explained_by(result: ScanResult) -> dict[str, str]:
    """id of each nested finding -> id of the top-level finding that explains it."""
    return {sub.id: top.id for top in result.findings for sub in top.explained}


def _flat(result: ScanResult) -> list[tuple[Finding, str | None]]:
    roots = _explained_by(result)
    return [(f, roots.get(f.id)) for f in result.all_findings()]


def relative_path(path: str, base_dir: str | os.PathLike[str] | None = None) -> str | None:
    """`path` relative to `base_dir` with forward slashes; absolute when outside it; None for stdin."""
    if path in ("<stdin>", STDIN) or (path.startswith("<") and path.endswith(">")):
        return None
    p = PurePath(path)
    if p.is_absolute():
        base = Path(base_dir).absolute() if base_dir is not None else Path.cwd()
        try:
            p = p.relative_to(base)
        except ValueError:
            try:
                p = Path(path).resolve().relative_to(base.resolve())
            except (ValueError, OSError):
                return p.as_posix()
    text = p.as_posix()
    return text[2:] if text.startswith("./") else text


def artifact_uri(path: str, base_dir: str | os.PathLike[str] | None = None) -> tuple[str, bool]:
    """(SARIF artifact URI, is it relative to the source root)."""
    rel = relative_path(path, base_dir)
    if rel is None:
        return quote(path, safe=""), False
    if PurePath(rel).is_absolute():
        return "file://" + quote(rel if rel.startswith("/") else "/" + rel, safe="/:"), False
    return quote(rel, safe="/"), True


def _valid_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and not any(c.isspace() for c in url)


# ---------------------------------------------------------------------------------------------------------
# text and JSON Lines


def to_text(result: ScanResult, width: int = TEXT_WIDTH) -> str:
    """The terminal summary without colours, for `--format text --output FILE`."""
    from rich.console import Console

    from .console import print_result

    buffer = io.StringIO()
    print_result(Console(file=buffer, width=width, color_system=None, force_terminal=False, highlight=False,
                         soft_wrap=False), result)
    return buffer.getvalue()


def to_short(result: ScanResult) -> str:
    """`path:line: severity: title [id]` per root finding and unexplained line, then the closing line."""
    from rich.console import Console

    from .console import print_short

    buffer = io.StringIO()
    print_short(Console(file=buffer, width=TEXT_WIDTH, color_system=None, force_terminal=False, highlight=False),
                result)
    return buffer.getvalue()


def jsonl_finding(f: Finding, explained_by: str | None) -> dict[str, Any]:
    record = {"type": "finding", **finding_dict(f), "explained_by": explained_by}
    del record["explains"]
    return record


def jsonl_summary(result: ScanResult) -> dict[str, Any]:
    run = result.run
    return {
        "type": "summary",
        "run": {"tool": run.tool, "tool_version": run.tool_version, "status": run.status, "phase": run.phase,
                "part": run.part,
                "inputs": [{"path": i.path, "kind": i.kind, "lines": i.lines, "bytes": i.bytes} for i in run.inputs]},
        "findings": [{"id": f.id, "severity": f.severity, "count": f.count, "explained_by": root}
                     for f, root in _flat(result)],
        "counts": result.counts().to_dict(),
        "unexplained": [unexplained_dict(u) for u in result.unexplained],
        "warnings": list(result.warnings),
    }


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def to_jsonl(result: ScanResult) -> str:
    """One `{"type": "finding", ...}` line per finding (nested ones flattened), then one summary line."""
    lines = [_line(jsonl_finding(f, root)) for f, root in _flat(result)]
    lines.append(_line(jsonl_summary(result)))
    return "".join(lines)


class JsonlStream:
    """`--format jsonl`: a finding line the moment a cause is first hit, the summary line at the end.

    Streamed lines carry the first evidence (its after-context may still be incomplete) and no count;
    the summary line written by `finish()` is authoritative (counts, root causes, version filtering).
    """

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.written = 0

    def on_finding(self, cause: Cause, evidence: Evidence) -> None:
        record = {
            "type": "finding", "id": cause.id, "severity": cause.severity, "title": cause.title,
            "cause": cause.cause, "workaround": cause.workaround, "references": list(cause.references),
            "tool": cause.tool, "versions": cause.versions, "evidence": [evidence_dict(evidence)],
        }
        self.out.write(_line(record))
        self.out.flush()
        self.written += 1

    __call__ = on_finding

    def finish(self, result: ScanResult) -> None:
        self.out.write(_line(jsonl_summary(result)))
        self.out.flush()


# ---------------------------------------------------------------------------------------------------------
# JUnit XML


_XML_INVALID = lazy(re.compile, "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """Replace characters XML 1.0 cannot carry (control characters, lone surrogates) by `\\xNN`."""
    return _XML_INVALID.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _evidence_block(ev: Evidence, context: bool) -> list[str]:
    where = f"{ev.path}:{ev.line}"
    if not context:
        return [f"  {where}: {ev.text}"]
    out = [f"    {ev.line - len(ev.before) + i:>6} | {line}" for i, line in enumerate(ev.before)]
    out.append(f"  > {ev.line:>6} | {ev.text}")
    out.extend(f"    {ev.line + 1 + i:>6} | {line}" for i, line in enumerate(ev.after))
    return [f"  {where}", *out]


def finding_report(f: Finding, explained_by: str | None = None) -> str:
    """Plain-text body of a finding: cause, workaround, evidence with context, references."""
    lines = [f"{f.severity.upper()}: {f.title} [{f.id}]"]
    if explained_by:
        lines.append(f"explained by: {explained_by}")
    if f.versions:
        lines.append(f"versions: {f.versions}")
    lines += ["", f"cause: {f.cause}", "", f"workaround: {f.workaround}", "",
              f"evidence ({f.count} hit{'s' if f.count != 1 else ''}):"]
    for i, ev in enumerate(f.evidence):
        lines += _evidence_block(ev, context=i == 0)
    if f.explained:
        lines += ["", "explains: " + ", ".join(sub.id for sub in f.explained)]
    if f.references:
        lines += ["", "references:", *(f"  {r}" for r in f.references)]
    return "\n".join(lines) + "\n"


def _advice(u: Unexplained) -> str:
    """`Common 17-55 advises: <the tool's own advice>`, or '' when the tool printed none."""
    return f"{u.message_id or 'the tool'} advises: {u.advice}" if u.advice else ""


def _unexplained_report(items: list[Unexplained]) -> str:
    lines = ["Error lines that no known cause explains:"]
    for u in items:
        lines.append(f"  {u.path}:{u.line}: {u.text}" + (f"  (x{u.count})" if u.count > 1 else ""))
        if u.advice:
            lines.append(f"    {_advice(u)}")
    return "\n".join(lines) + "\n"


def _fails(severity: str, fail_on: str) -> bool:
    return fail_on != "never" and SEVERITY_RANK[severity] <= SEVERITY_RANK[fail_on]


def to_junit(result: ScanResult, *, fail_on: str = "error") -> str:
    """One `testsuite` named 'triage' with one test case per cause found (see the module docstring)."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415 - only this format writes XML

    cases: list[ET.Element] = []
    counts = {"failures": 0, "skipped": 0}

    def case(classname: str, name: str, path: str | None, line: int | None) -> ET.Element:
        el = ET.Element("testcase", {"classname": classname, "name": name, "time": "0"})
        if path is not None:
            el.set("file", _xml_text(path))
        if line:
            el.set("line", str(line))
        cases.append(el)
        return el

    def outcome(el: ET.Element, tag: str, message: str, body: str, kind: str | None = None) -> None:
        child = ET.SubElement(el, tag, {"message": _xml_text(message)})
        if kind:
            child.set("type", kind)
        child.text = _xml_text(body)
        counts["failures" if tag == "failure" else "skipped"] += 1

    top_failing = False
    for f, root in _flat(result):
        path, line = f.first_line
        el = case(f"triage.{f.id.split('/', 1)[0]}", f.id, path or None, line or None)
        body = finding_report(f, root)
        if root is None and _fails(f.severity, fail_on):
            top_failing = True
            outcome(el, "failure", f"{f.severity}: {f.title}", body, f.severity)
        else:
            why = f"explained by {root}" if root else f"{f.severity} below --fail-on {fail_on}"
            outcome(el, "skipped", f"{f.severity}: {f.title} ({why})", body)
    if result.unexplained:
        first = result.unexplained[0]
        el = case("triage.unexplained", UNEXPLAINED_ID, first.path, first.line)
        n = len(result.unexplained)
        message = f"{n} error line{'s' if n != 1 else ''} that no known cause explains"
        if result.run.status == "failed" and not top_failing and fail_on != "never":
            outcome(el, "failure", message, _unexplained_report(result.unexplained), "unexplained")
        else:
            outcome(el, "skipped", message, _unexplained_report(result.unexplained))
    if not cases:
        el = case("triage.scan", "triage/no-known-failure", None, None)
        ET.SubElement(el, "system-out").text = "No known cause and no error line found.\n"

    run = result.run
    attrs = {"name": "triage", "tests": str(len(cases)), "failures": str(counts["failures"]), "errors": "0",
             "skipped": str(counts["skipped"]), "time": "0"}
    suites = ET.Element("testsuites", dict(attrs))
    suite = ET.SubElement(suites, "testsuite", dict(attrs))
    props = ET.SubElement(suite, "properties")
    for key, value in (("tool", run.tool), ("tool_version", run.tool_version), ("status", run.status),
                       ("phase", run.phase), ("part", run.part),
                       ("inputs", ", ".join(i.path for i in run.inputs))):
        if value:
            ET.SubElement(props, "property", {"name": key, "value": _xml_text(value)})
    suite.extend(cases)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# ---------------------------------------------------------------------------------------------------------
# SARIF 2.1.0


def sarif_rule(cause: Cause) -> dict[str, Any]:
    markdown = [f"**Cause.** {cause.cause}", f"**Workaround.** {cause.workaround}"]
    if cause.versions:
        markdown.append(f"**Affected versions.** {cause.versions}")
    if cause.references:
        markdown.append("**References**\n\n" + "\n".join(f"- <{r}>" for r in cause.references))
    tags = [t for t in (cause.tool, cause.phase, cause.severity, cause.pack) if t]
    rule: dict[str, Any] = {
        "id": cause.id,
        "shortDescription": {"text": cause.title},
        "fullDescription": {"text": cause.cause},
        "help": {"text": cause.workaround, "markdown": "\n\n".join(markdown)},
        "defaultConfiguration": {"level": SARIF_LEVEL[cause.severity]},
        "properties": {"tags": list(dict.fromkeys(tags)), "severity": cause.severity, "tool": cause.tool,
                       "status": cause.status},
    }
    urls = [r for r in cause.references if _valid_url(r)]
    if urls:
        rule["helpUri"] = urls[0]
    if cause.versions:
        rule["properties"]["versions"] = cause.versions
    return rule


def _unexplained_rule() -> dict[str, Any]:
    text = "A line that looks like an error (ERROR, [error], Traceback, ...Exception:, CRITICAL WARNING, Killed) " \
           "but matches no known signature."
    return {
        "id": UNEXPLAINED_ID,
        "shortDescription": {"text": "Error line no known cause explains"},
        "fullDescription": {"text": text},
        "help": {"text": "Read the line and its neighbours; if it is a recurring failure, add a signature to a "
                         "pattern pack.", "markdown": text},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["unexplained"]},
    }


def _physical(path: str, line: int, text: str, before: list[str], after: list[str],
              base_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    uri, relative = artifact_uri(path, base_dir)
    location: dict[str, Any] = {"uri": uri}
    if relative:
        location["uriBaseId"] = "%SRCROOT%"
    line = max(1, line)
    region: dict[str, Any] = {"startLine": line, "snippet": {"text": text}}
    physical: dict[str, Any] = {"artifactLocation": location, "region": region}
    if before or after:
        physical["contextRegion"] = {"startLine": max(1, line - len(before)), "endLine": line + len(after),
                                     "snippet": {"text": "\n".join([*before, text, *after])}}
    return physical


def to_sarif(result: ScanResult, packs: PackSet, *, base_dir: str | os.PathLike[str] | None = None) -> str:
    """A SARIF 2.1.0 log with one run: the findings as results, their causes as rules."""
    from . import __version__

    # Only the rules the results use: all 200+ causes would make every file ~0.5 MB for nothing.
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for f, root in _flat(result):
        if f.id not in index:
            index[f.id] = len(rules)
            cause = packs.causes.get(f.id)
            rules.append(sarif_rule(cause) if cause is not None else  # else: from packs other than those given
                         {"id": f.id, "shortDescription": {"text": f.title}, "fullDescription": {"text": f.cause},
                          "help": {"text": f.workaround}, "defaultConfiguration": {"level": SARIF_LEVEL[f.severity]}})
        text = f.evidence[0].text.strip() if f.evidence else ""
        res: dict[str, Any] = {
            "ruleId": f.id, "ruleIndex": index[f.id], "level": SARIF_LEVEL[f.severity], "kind": "fail",
            "message": {"text": f"{f.title}: {text}" if text else f.title},
            "occurrenceCount": max(1, f.count),
            "properties": {"severity": f.severity, "cause": f.cause, "workaround": f.workaround,
                           "count": f.count, "explainedBy": root},
        }
        if f.evidence:
            ev = f.evidence[0]
            res["locations"] = [{"physicalLocation": _physical(ev.path, ev.line, ev.text, ev.before, ev.after,
                                                               base_dir)}]
            res["partialFingerprints"] = {"triageCause/v1": f"{f.id}:{fingerprint(ev.text)}"}
            related = [{"id": i, "message": {"text": "another line of the same cause"},
                        "physicalLocation": _physical(e.path, e.line, e.text, [], [], base_dir)}
                       for i, e in enumerate(f.evidence[1:], start=1)]
            if related:
                res["relatedLocations"] = related
        results.append(res)
    if result.unexplained:
        index[UNEXPLAINED_ID] = len(rules)
        rules.append(_unexplained_rule())
        for u in result.unexplained:
            results.append({
                "ruleId": UNEXPLAINED_ID, "ruleIndex": index[UNEXPLAINED_ID], "level": "warning", "kind": "review",
                "message": {"text": f"No known cause explains: {u.text.strip()}"
                                    + (f"\n\n{_advice(u)}" if u.advice else "")},
                "occurrenceCount": max(1, u.count),
                "locations": [{"physicalLocation": _physical(u.path, u.line, u.text, [], [], base_dir)}],
                "partialFingerprints": {"triageCause/v1": f"{UNEXPLAINED_ID}:{u.fingerprint}"},
            })
    run = result.run
    log = {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "triage", "version": __version__, "semanticVersion": __version__,
                                "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": {"tool": run.tool, "toolVersion": run.tool_version, "status": run.status,
                           "phase": run.phase, "part": run.part, "packsDigest": packs.digest},
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------------------
# GitHub workflow commands


def _finding_message(f: Finding, root: str | None) -> str:
    """Cause, workaround, first evidence line, what explains it and the references: the body of a GitHub
    annotation and of a GitLab Code Quality issue."""
    path, line = f.first_line
    message = [f.cause, "", f"Workaround: {f.workaround}"]
    if f.evidence:
        message += ["", f"Evidence ({f.count} hit{'s' if f.count != 1 else ''}): {path}:{line}: "
                        f"{f.evidence[0].text.strip()}"]
    if root:
        message += ["", f"Explained by {root}."]
    if f.references:
        message += ["", "See " + " ".join(f.references)]
    return "\n".join(message)


def escape_data(text: str) -> str:
    """GitHub's escaping of a workflow command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """GitHub's escaping of a workflow command's property value (message rules plus `:` and `,`)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_command(level: str, message: str, *, file: str | None = None, line: int | None = None,
                   title: str | None = None) -> str:
    props = []
    if file:
        props.append(f"file={escape_property(terminal_safe(file))}")
        if line:
            props.append(f"line={line}")
    if title:
        props.append(f"title={escape_property(terminal_safe(title))}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{escape_data(terminal_safe(message))}"


def to_github(result: ScanResult, *, base_dir: str | os.PathLike[str] | None = None) -> str:
    """`::error` / `::warning` / `::notice` lines, one per finding, then up to 10 unexplained error lines."""
    out: list[str] = []
    for f, root in _flat(result):
        path, line = f.first_line
        file = relative_path(path, base_dir) if path else None
        level = "notice" if root else GITHUB_COMMAND[f.severity]
        out.append(github_command(level, _finding_message(f, root), file=file, line=line or None,
                                  title=f"{f.title} [{f.id}]"))
    for u in result.unexplained[:GITHUB_MAX_UNEXPLAINED]:
        advice = f"\n\n{_advice(u)}" if u.advice else ""
        out.append(github_command("warning", u.text.strip() + (f" (x{u.count})" if u.count > 1 else "") + advice,
                                  file=relative_path(u.path, base_dir), line=u.line,
                                  title="Error line no known cause explains"))
    if len(result.unexplained) > GITHUB_MAX_UNEXPLAINED:
        out.append(github_command("notice", f"{len(result.unexplained) - GITHUB_MAX_UNEXPLAINED} more unexplained "
                                            "error lines: see `triage scan --format json`."))
    return "".join(line + "\n" for line in out)


def _gitlab_issue(check: str, description: str, body: str, severity: str, path: str, line: int,
                  base_dir: str | os.PathLike[str] | None, key: str) -> dict[str, Any]:
    where = relative_path(path, base_dir) if path else None
    shown = where or (path or STDIN)
    digest = hashlib.sha256(f"{check}\0{shown}\0{key}".encode("utf-8", "surrogatepass")).hexdigest()
    return {"type": "issue", "check_name": check, "description": one_line(description),
            "content": {"body": terminal_safe(body)}, "categories": ["Bug Risk"], "severity": severity,
            "fingerprint": digest[:32], "location": {"path": one_line(shown), "lines": {"begin": max(line, 1)}}}


def to_gitlab(result: ScanResult, *, base_dir: str | os.PathLike[str] | None = None) -> str:
    """A GitLab Code Quality report: a JSON array of Code Climate issues, findings first."""
    issues = []
    for f, root in _flat(result):
        path, line = f.first_line
        issues.append(_gitlab_issue(f.id, f"{f.title} [{f.id}]", _finding_message(f, root),
                                    "info" if root else GITLAB_SEVERITY[f.severity], path, line, base_dir, ""))
    for u in result.unexplained:
        text = u.text.strip() + (f" (x{u.count})" if u.count > 1 else "")
        issues.append(_gitlab_issue(UNEXPLAINED_ID, f"Error line no known cause explains: {text}",
                                    _advice(u) if u.advice else text, "major", u.path, u.line, base_dir,
                                    u.fingerprint))
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------------------
# streaming: --tee, sink chains, progress


def finding_line(cause: Cause, evidence: Evidence) -> str:
    """The one line `--tee` prints on stderr when a cause is first hit: the `--format short` line."""
    from .console import short_line

    return short_line(evidence.path, evidence.line, cause.severity, cause.title, cause.id)


class TeeWriter:
    """`--tee`: every byte read goes to stdout unchanged and at once; each new finding goes to stderr.

    If the reader of stdout goes away (`| head`), copying stops and the scan goes on.
    """

    def __init__(self, out: BinaryIO | None = None, err: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout.buffer
        self.err = err if err is not None else sys.stderr
        self.broken = False

    def sink(self, source: Source, data: bytes) -> None:
        if self.broken:
            return
        try:
            self.out.write(data)
            self.out.flush()
        except BrokenPipeError:
            self.broken = True
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.out.fileno())  # no second BrokenPipeError when Python flushes at exit
                os.close(devnull)

    def on_finding(self, cause: Cause, evidence: Evidence) -> None:
        self.err.write(one_line(finding_line(cause, evidence)) + "\n")
        self.err.flush()


def chain_sinks(*sinks: RawSink | None) -> RawSink | None:
    """One RawSink calling each given one in order (None entries dropped; None when nothing is left)."""
    active = [s for s in sinks if s is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]

    def chained(source: Source, data: bytes) -> None:
        for sink in active:
            sink(source, data)

    return chained


def chain_findings(*callbacks: Callable[[Cause, Evidence], None] | None) -> Callable[[Cause, Evidence], None] | None:
    """One OnFinding calling each given one in order (None entries dropped)."""
    active = [c for c in callbacks if c is not None]
    if not active:
        return None

    def chained(cause: Cause, evidence: Evidence) -> None:
        for cb in active:
            cb(cause, evidence)

    return chained if len(active) > 1 else active[0]


def expected_bytes(source: Source) -> int:
    """Bytes the scan will read from `source`: its size, or a gzip's uncompressed size from its trailer."""
    if source.path == STDIN or source.size <= 0:
        return 0
    if source.size >= 18:
        try:
            with open(source.path, "rb") as fh:
                if fh.read(2) == b"\x1f\x8b":
                    fh.seek(-4, os.SEEK_END)
                    isize = int.from_bytes(fh.read(4), "little")
                    return isize if isize >= source.size else source.size  # ISIZE wraps at 4 GiB
        except OSError:
            return source.size
    return source.size


class NoProgress:
    """The progress bar when none is shown: same interface, does nothing."""

    active = False
    console = None

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def sink(self, source: Source, data: bytes) -> None:
        return None

    def source_done(self, source: Source) -> None:
        return None


class BytesProgress:
    """A transient Rich progress bar on stderr over the total bytes of the sources.

    Advance it with `.sink` (a RawSink, chainable) or, when files are scanned in worker processes, with
    `.source_done(source)` per finished file. Print diagnostics through `.console` while it is shown.
    """

    active = True

    def __init__(self, sources: Iterable[Source], console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        self.sources = list(sources)
        self.expected = {id(s): expected_bytes(s) for s in self.sources}
        self.seen: dict[int, int] = {}
        self.total = sum(self.expected.values())
        self.console = console if console is not None else Console(stderr=True)
        self.progress = Progress(
            TextColumn("[progress.description]{task.description}"), BarColumn(), DownloadColumn(),
            TransferSpeedColumn(), TimeRemainingColumn(), console=self.console, transient=True,
        )
        self.task = self.progress.add_task("scanning", total=self.total or None)
        self._current: int | None = None

    def __enter__(self) -> BytesProgress:
        self.progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.progress.stop()

    def _advance(self, source: Source, seen: int) -> None:
        key = id(source)
        cap = self.expected.get(key, 0)
        before = min(self.seen.get(key, 0), cap)
        self.seen[key] = seen
        delta = min(seen, cap) - before
        if key != self._current:
            self._current = key
            from rich.markup import escape  # the description column reads markup: a file name is not

            self.progress.update(self.task, description=escape(one_line(_short(source.display))))
        if delta > 0:
            self.progress.advance(self.task, delta)

    def sink(self, source: Source, data: bytes) -> None:
        self._advance(source, self.seen.get(id(source), 0) + len(data))

    def source_done(self, source: Source) -> None:
        self._advance(source, self.expected.get(id(source), 0))

    @property
    def completed(self) -> int:
        return int(self.progress.tasks[0].completed)


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1):]


def progress_for(sources: Iterable[Source], stderr_is_tty: bool, tee: bool, *, folders: bool = False,
                 min_bytes: int = PROGRESS_MIN_BYTES, console: Any = None) -> BytesProgress | NoProgress:
    """A progress bar for large inputs (more than `min_bytes` in total, or a folder of several files) —
    never with `--tee`, never when stderr is not a terminal, never for stdin alone (its size is unknown)."""
    sources = list(sources)
    if tee or not stderr_is_tty:
        return NoProgress()
    total = sum(expected_bytes(s) for s in sources)
    if total <= 0:
        return NoProgress()
    if total > min_bytes or (folders and len(sources) > 1):
        return BytesProgress(sources, console)
    return NoProgress()


@contextlib.contextmanager
def output_stream(path: str | os.PathLike[str] | None) -> Iterator[IO[str]]:
    """`--output FILE` (UTF-8, LF) or stdout when None; for formats written as they go (jsonl)."""
    if path is None or str(path) == "-":
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        yield fh
