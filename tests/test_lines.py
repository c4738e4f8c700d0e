"""Every `file:line` triage reports is the line `grep -n` shows there.

Checked on every real file of the corpus as it is, and rewritten with each kind of line end (LF, CRLF,
the CR CR LF of a second Windows conversion, a mix); serial and split across processes; and in
multi-file and folder scans, where each evidence line must name the file it is in. The rewritten
copies are derived from the real files here (synthetic only in their line ends).
"""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from triage import scan_paths
from triage.model import ScanResult
from triage.scan import Matcher, scan_sources
from triage.sources import clean_text, discover

from .conftest import CORPUS, PUBLIC

REAL = sorted(p for root in (CORPUS, PUBLIC) for p in root.rglob("*")
              if p.is_file() and not p.name.endswith((".expected.yaml", ".md")))
LOGS = [p for p in REAL if p.name.endswith(".log")]
CUT = " … (cut at "


def scan_one(path: Path, matcher: Matcher) -> ScanResult:
    return scan_sources(matcher.packs, discover([str(path)], lambda _: None), matcher=matcher)


def grep_lines(data: bytes) -> list[bytes]:
    """The lines as `grep -n` numbers them: split at LF; a last line without LF still counts."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def shown(raw: bytes) -> str:
    """A raw line as triage shows it (decoded, no ANSI, no line-end CRs)."""
    return clean_text(raw + b"\n")[:-1]


def same_line(reported: str, raw: bytes) -> bool:
    text = shown(raw)
    if CUT in reported:  # a long line is shown cut, with a marker saying so
        reported = reported[: reported.index(CUT)]
        return text.startswith(reported)
    return reported == text or (len(text) > len(reported) and text.startswith(reported))


def check_result(result: ScanResult, lines_of: dict[str, list[bytes]]) -> int:
    """Every evidence line, its context and every unexplained line is the line grep shows at its number
    in the file it names. Returns how many lines were checked."""
    checked = 0
    for info in result.run.inputs:
        assert info.lines == len(lines_of[info.path]), info.path
    for f in result.all_findings():
        for ev in f.evidence:
            if ev.path not in lines_of:  # a config fact quotes its file too
                raise AssertionError(f"{f.id}: evidence names {ev.path}, not an input")
            lines = lines_of[ev.path]
            assert 1 <= ev.line <= max(1, len(lines)), (f.id, ev.path, ev.line)
            if f.id == "triage/log-incomplete" or not lines:
                continue
            if any(x.source == ev.path for x in result.facts) and ev.captures.get("key"):
                continue  # a config fact: `context` is the statement, possibly joined over lines
            assert same_line(ev.text, lines[ev.line - 1]), (f.id, ev.path, ev.line, ev.text[:200])
            for i, text in enumerate(ev.before):
                assert same_line(text, lines[ev.line - len(ev.before) + i - 1]), (f.id, ev.path, ev.line, "before", i)
            for i, text in enumerate(ev.after):
                assert same_line(text, lines[ev.line + i]), (f.id, ev.path, ev.line, "after", i)
            checked += 1
    for u in result.unexplained:
        assert same_line(u.text, lines_of[u.path][u.line - 1]), (u.path, u.line)
        checked += 1
    return checked


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_every_real_file_numbers_its_lines_as_grep(matcher: Matcher, path: Path) -> None:
    result = scan_one(path, matcher)
    check_result(result, {str(path): grep_lines(path.read_bytes())})


def _rewrite(data: bytes, kind: str) -> bytes:
    lines = re.split(rb"\r*\n", data)
    ends = {"lf": [b"\n"], "crlf": [b"\r\n"], "crcrlf": [b"\r\r\n"], "mixed": [b"\n", b"\r\n", b"\r\r\n", b"\r\n"]}[kind]
    out = bytearray()
    for i, line in enumerate(lines[:-1]):
        out += line + ends[i % len(ends)]
    return bytes(out + lines[-1])


@pytest.mark.parametrize("kind", ["lf", "crlf", "crcrlf", "mixed"])
def test_every_line_end_kind_numbers_lines_as_grep(matcher: Matcher, tmp_path: Path, kind: str) -> None:
    checked = 0
    paths = []
    for i, real in enumerate(LOGS):
        copy = tmp_path / f"{i:03d}-{real.name}"
        copy.write_bytes(_rewrite(real.read_bytes(), kind))
        paths.append(copy)
    for copy in paths:
        checked += check_result(scan_one(copy, matcher), {str(copy): grep_lines(copy.read_bytes())})
    assert checked > 300


def test_the_double_cr_log_of_the_issue(packs) -> None:
    """023's lines end in CR CR LF: `wc -l` says 606, grep says line 360 for the Synth 8-7080 warning."""
    log = CORPUS / "logs/hls/023-AkhilKushe-cabac-vitis_hls.log"
    result = scan_paths([str(log)], packs)
    assert result.run.inputs[0].lines == 606
    hit = next(e for f in result.all_findings() for e in f.evidence if "Parallel synthesis criteria" in e.text)
    if shutil.which("grep"):
        grep = subprocess.run(["grep", "-n", "Parallel synthesis criteria", str(log)], capture_output=True, text=True)
        assert grep.stdout.split(":", 1)[0] == str(hit.line) == "360"


def test_a_large_log_split_across_processes_numbers_lines_as_grep(packs, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Range starts are counted in LFs as well: every line of a split scan is where grep has it."""
    import random

    from triage import scan, split

    rng = random.Random(16)
    real = [line for p in LOGS for line in re.split(rb"(?<=\n)", p.read_bytes()) if line]
    log = tmp_path / "big.log"
    pieces = []
    for _ in range(40000):
        line = rng.choice(real).rstrip(b"\r\n")
        pieces.append(line + rng.choice([b"\n", b"\r\n", b"\r\r\n"]))
    log.write_bytes(b"".join(pieces))
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1000)
    monkeypatch.setattr(scan, "SPLIT_MIN_BYTES", 1000)
    assert len(split.plan_ranges(str(log), 3)) == 3
    parallel = scan_paths([str(log)], packs, jobs=3)
    serial = scan_paths([str(log)], packs, jobs=1)
    lines = {str(log): grep_lines(log.read_bytes())}
    assert check_result(parallel, lines) > 50
    check_result(serial, lines)
    assert [(f.id, [(e.path, e.line) for e in f.evidence]) for f in serial.all_findings()] == \
        [(f.id, [(e.path, e.line) for e in f.evidence]) for f in parallel.all_findings()]


@pytest.mark.parametrize("jobs", [1, 2])
def test_folder_and_multi_file_evidence_names_the_file_its_line_is_in(packs, jobs: int) -> None:
    folder = CORPUS / "logs" / "hls4ml"
    folder_result = scan_paths([str(folder)], packs, jobs=jobs)
    files = [Path(i.path) for i in folder_result.run.inputs]
    lines = {str(p): grep_lines(p.read_bytes()) for p in files}
    assert check_result(folder_result, lines) > 10
    # the same cause in two files: its evidence lists both, each with its own path
    spread = [f for f in folder_result.all_findings() if len({e.path for e in f.evidence}) > 1]
    assert spread, "the folder has a cause hit in two files"
    named = [str(CORPUS / "logs/hls/013-Almotaek-SHA256-solution1.log"), *map(str, files[:4]),
             str(CORPUS / "logs/hls/023-AkhilKushe-cabac-vitis_hls.log")]
    multi = scan_paths(named, packs, jobs=jobs)
    check_result(multi, {p: grep_lines(Path(p).read_bytes()) for p in named})


def test_terminal_names_the_file_of_an_evidence_line_from_another_input(packs) -> None:
    """The issue's case: under the header `508-…backup.log:62 (2 hits)` the second line is 510's line 25."""
    from triage.outputs import to_text

    folder = CORPUS / "logs" / "hls4ml"
    result = scan_paths([str(folder)], packs)
    finding = next(f for f in result.all_findings() if len({e.path for e in f.evidence[:2]}) == 2)
    first, second = finding.evidence[:2]
    from rich.console import Console

    from triage.console import finding_lines

    lines = finding_lines(Console(width=400, color_system=None), finding, verbose=True)
    text = "\n".join(line.plain for line in lines)
    assert f"--> {first.path}:{first.line}" in text
    assert f"--> {second.path}:{second.line}" in text  # its own file, not under the first one's header
