"""Terminal output at 80 and 120 columns, on a terminal and in a pipe (a CI log), on real fixtures.

Two kinds of test:
- invariants over every real fixture scanned with today's packs: no line wider than the screen (except a
  lone id, `path:line`, path or URL that is wider than the screen by itself), every finding's id and
  `path:line` whole on one line, no trailing spaces;
- golden files: a few real scan results, frozen as JSON in tests/data/console/, rendered exactly. They do
  not move when the packs change. `TRIAGE_UPDATE_GOLDENS=1 pytest tests/test_console.py` rewrites the
  expected text from the frozen results (freezing a new golden's result first); `TRIAGE_UPDATE_GOLDENS=rescan`
  also rescans every golden's fixture with today's packs.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from triage.console import (print_cause, print_cause_table, print_result, print_search, print_short, short_line,
                            summary)
from triage.formats import result_dict
from triage.model import Evidence, Finding, InputInfo, RunInfo, ScanResult, Unexplained
from triage.scan import WarningLog, scan_sources
from triage.tables import Column, print_table
from triage.sources import discover
from triage.store import result_from_doc

from .conftest import CORPUS, PUBLIC, ROOT, corpus

DATA = Path(__file__).parent / "data" / "console"
UPDATE = os.environ.get("TRIAGE_UPDATE_GOLDENS") in ("1", "rescan")
RESCAN = os.environ.get("TRIAGE_UPDATE_GOLDENS") == "rescan"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SCREENS = [(80, False), (80, True), (120, False), (120, True)]
SCREEN_IDS = ["80-pipe", "80-tty", "120-pipe", "120-tty"]

# Real fixtures whose results are frozen for the golden files, from each toolchain: a DFC root cause that
# explains a generic wrapper, a simulator crash with an error line nothing explains, a passed DFC compile with
# warnings and notes; Vivado HLS C++ errors under two generic wrappers, a long reference URL and notes; a
# Vivado implementation with an unexplained CRITICAL WARNING and the tool's own advice; FINN with
# references wider than 80 columns and a traceback nobody explains; HailoRT with repeated status checks.
GOLDEN = {
    "dfc-partition": "dfc/cases/043-",
    "xsim-unexplained": "vivado/203-4rshdeep-",
    "dfc-passed-warnings": "logs/dfc/402-",
    "hls-cxx-errors": "hls/002-AbhirupDas04-",
    "vivado-advice": "vivado/058-ATaylorCEngFIET-",
    "finn-unexplained": "finn/005-Xilinx-",
    "hailort-device-in-use": "hailort/030-irivvision-",
}


def render(result: ScanResult, width: int, tty: bool, **kwargs) -> str:  # type: ignore[no-untyped-def]
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=tty, color_system="standard" if tty else None,
                      highlight=False)
    print_result(console, result, **kwargs)
    out = buffer.getvalue()
    assert ("\x1b[" in out) == tty
    return ANSI.sub("", out)


def check_layout(text: str, result: ScanResult, width: int) -> None:
    lines = text.splitlines()
    for line in lines:
        assert line == line.rstrip(), f"trailing spaces: {line!r}"
        if len(line) > width:  # only a single token that cannot fit on any line may run past the width
            assert not re.search(r"\s", line.strip()) and len(line.strip()) > width - 2, line
    whole = set()
    for line in lines:
        whole.update(re.findall(r"(?<![\w/.-])[a-z0-9_]+/[a-z0-9][a-z0-9_.-]*(?![\w/-])", line))
        whole.update(re.findall(r"\S+:\d+", line))
    for f in result.all_findings():
        assert f.id in whole, f"{f.id} not whole on one line"
        for ev in f.evidence[:1]:
            assert f"{ev.path}:{ev.line}" in whole, f"{ev.path}:{ev.line} not whole on one line"
    for u in result.unexplained[:30]:
        assert f"{u.path}:{u.line}" in whole
        if u.advice and u.message_id and u.message_id not in u.advice:  # the id the advice is tagged with
            assert any(f"[{u.message_id}]" in line for line in lines), u.message_id


def scan(path: Path) -> ScanResult:
    from triage import load_packs

    return scan_sources(load_packs(), discover([str(path)], WarningLog(None)))


PUBLIC_SAMPLE = 8  # every 8th public fixture as well (all of them would take minutes)


def real_fixtures() -> list[Path]:
    def real(root: Path) -> list[Path]:
        return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith((".expected.yaml", ".md")))

    return real(CORPUS) + real(PUBLIC)[::PUBLIC_SAMPLE]


@pytest.fixture(scope="module")
def scanned(packs, matcher) -> list[ScanResult]:
    return [scan_sources(packs, discover([str(p.relative_to(ROOT))], WarningLog(None)), matcher=matcher)
            for p in real_fixtures()]


@pytest.mark.parametrize(("width", "tty"), SCREENS, ids=SCREEN_IDS)
def test_every_real_fixture_fits_the_screen(scanned, width, tty) -> None:
    assert len(scanned) > 100
    for result in scanned:
        check_layout(render(result, width, tty, duration_s=0.25), result, width)


@pytest.mark.parametrize(("width", "tty"), SCREENS, ids=SCREEN_IDS)
def test_every_real_fixture_fits_the_screen_in_full(scanned, width, tty) -> None:
    for result in scanned:
        if any(f.severity == "info" or f.explained for f in result.findings):
            check_layout(render(result, width, tty, verbose=True), result, width)


def _golden_fixture(rel: str) -> Path:
    """A real fixture by a unique prefix of its path below fixtures/corpus or fixtures/public."""
    hits = sorted(p for root in (CORPUS, PUBLIC) for p in root.glob(rel + "*") if not p.name.endswith(".expected.yaml"))
    assert len(hits) == 1, f"{rel}: {hits}"
    return hits[0]


def frozen(name: str) -> ScanResult:
    path = DATA / f"{name}.json"
    if UPDATE and (RESCAN or not path.exists()):
        fixture = _golden_fixture(GOLDEN[name])
        cwd = Path.cwd()
        os.chdir(fixture.parent)  # the paths a user in that folder would type
        try:
            result = scan(Path(fixture.name))
        finally:
            os.chdir(cwd)
        DATA.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result_dict(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result_from_doc(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(GOLDEN))
@pytest.mark.parametrize(("width", "tty"), SCREENS, ids=SCREEN_IDS)
def test_golden_output(name, width, tty) -> None:
    result = frozen(name)
    text = render(result, width, tty, duration_s=0.31, note="run 7 stored")
    expected = DATA / f"{name}.{width}-{'tty' if tty else 'pipe'}.txt"
    if UPDATE:
        expected.write_text(text, encoding="utf-8")
    assert text == expected.read_text(encoding="utf-8")
    check_layout(text, result, width)
    for line in text.splitlines():  # the golden results have short paths: every line fits
        assert len(line) <= width or line.startswith("https://") or line.startswith("    https://"), line


def test_root_cause_first_and_short() -> None:
    result = frozen("dfc-partition")
    text = render(result, 80, False)
    root, explained = result.findings[0], result.findings[0].explained[0]
    assert text.index(f"error[{root.id}]") < text.index(f"explains error[{explained.id}]")
    assert explained.cause[:40] not in text  # one line only...
    assert explained.cause[:40] in " ".join(render(result, 80, False, verbose=True).split())  # ...unless -v
    closing = text.rstrip("\n").rsplit("\n\n", 1)[1]  # the last paragraph, wrapped at 80 columns
    assert closing.startswith("1 error · status failed\n  043-ghnote-") and closing.endswith("(6 lines)")


def test_info_findings_collapse_to_one_line_each() -> None:
    result = frozen("dfc-passed-warnings")
    info = [f for f in result.findings if f.severity == "info"]
    assert info
    lines = render(result, 120, False).splitlines()
    for f in info:
        (line,) = [x for x in lines if f"info[{f.id}]" in x]
        assert line.endswith(f"{f.evidence[0].path}:{f.evidence[0].line}" + (f" ×{f.count}" if f.count > 1 else ""))
        assert f.workaround[:40] not in "\n".join(lines)


def test_unexplained_line_puts_its_location_first_and_gets_the_width() -> None:
    result = frozen("xsim-unexplained")
    (u,) = result.unexplained
    where = f"  {u.path}:{u.line}"
    lines = render(result, 120, False).splitlines()
    assert f"{where}  {u.text.strip()}" in lines
    lines = render(result, 80, False).splitlines()  # the location leaves too little: the text goes below it
    i = lines.index(where)
    assert lines[i + 1] == f"      {u.text.strip()}"


def test_unexplained_line_text_is_cut_and_the_advice_goes_below() -> None:
    text = "ERROR: [Synth 8-439] module 'nnet_dense_resource_ap_fixed_16_6_ap_fixed_16_6_config2_s' not found " * 3
    u = Unexplained("build/vivado.log", 1234, text, 3, "fp", advice="Resolution: check the module is in the sources.",
                    message_id="Synth 8-439")
    result = ScanResult(RunInfo(tool="vivado", status="failed", inputs=[InputInfo("build/vivado.log", "log", 2000)]),
                        [], [u])
    lines = render(result, 80, False).splitlines()
    i = next(n for n, x in enumerate(lines) if x.startswith("  build/vivado.log:1234 ×3  ERROR: [Synth 8-439]"))
    assert len(lines[i]) == 80 and lines[i].endswith("…")
    assert lines[i + 1] == "      advice: Resolution: check the module is in the sources. [Synth 8-439]"
    assert " ".join(lines[-2:]).startswith("no known cause, 1 unexplained error line · status failed")


def finding(fid: str, severity: str, title: str, path: str, line: int, count: int = 1) -> Finding:
    return Finding(fid, severity, title, "A cause long enough to wrap. " * 8, "A workaround. " * 10,
                   ["https://example.org/" + "x" * 120, "https://example.org/short"], count,
                   [Evidence(path, line, "ERROR: " + "word " * 40)])


def test_nothing_a_reader_copies_is_broken_on_a_narrow_screen() -> None:
    path = "project_1/project_1.runs/impl_1/design_1_wrapper_utilization_placed.rpt"
    f = finding("vivado/utilization-over-100-percent", "error", "Utilization over 100 % " * 4, path, 123456, 3)
    f.explained = [finding("vivado/place-30-640-place-check", "error", "Place check failed " * 4, path, 7, 2)]
    result = ScanResult(RunInfo(tool="vivado", status="failed", inputs=[InputInfo(path, "report", 123456)]), [f], [])
    for width in (60, 80):
        text = render(result, width, False)
        check_layout(text, result, width)
        assert "https://example.org/" + "x" * 120 in text.splitlines()  # a long URL on a line of its own
        assert f"{path}:123456" in text.splitlines()  # too long for `  --> ` before it: on a line of its own


def test_log_text_is_never_markup_or_terminal_control() -> None:
    text = "ERROR: [bold]x[/bold] \x1b]0;pwned\x07 \x1b[31mred\x08"
    result = ScanResult(RunInfo(status="failed", inputs=[InputInfo("a.log", "log", 1)]), [],
                        [Unexplained("a.log", 1, text, 1, "fp")])
    for tty in (False, True):
        buffer = io.StringIO()
        print_result(Console(file=buffer, width=120, force_terminal=tty, color_system="standard" if tty else None),
                     result)
        out = buffer.getvalue()
        assert "[bold]x[/bold]" in out and "\x1b]" not in out and "\x07" not in out and "\x08" not in out
        assert "\x1b[31m" not in out


def test_short_lines_are_the_tee_lines_then_the_closing_line() -> None:
    from triage.outputs import finding_line, to_short

    result = frozen("xsim-unexplained")
    lines = to_short(result).splitlines()
    assert len(lines) == len(result.findings) + len(result.unexplained) + 1
    for f, line in zip(result.findings, lines):
        assert line == short_line(f.evidence[0].path, f.evidence[0].line, f.severity, f.title, f.id)
        cause = type("C", (), {"severity": f.severity, "title": f.title, "id": f.id})()
        assert line == finding_line(cause, f.evidence[0])  # type: ignore[arg-type]
        assert re.fullmatch(rf"\S+:\d+: {f.severity}: .+ \[{re.escape(f.id)}\]", line)
    u = result.unexplained[0]
    assert lines[-2] == (f"{u.path}:{u.line}: warning: no known cause explains: {u.text.strip()} "
                         "[triage/unexplained-error-line]")
    assert lines[-1] == summary(result).plain


def test_short_format_cuts_a_long_unexplained_line() -> None:
    result = ScanResult(RunInfo(status="failed", inputs=[InputInfo("a.log", "log", 1)]), [],
                        [Unexplained("a.log", 1, "ERROR: " + "x" * 5000, 1, "fp")])
    buffer = io.StringIO()
    print_short(Console(file=buffer, width=80), result)
    first = buffer.getvalue().splitlines()[0]
    assert first.endswith(" … (cut at 160 characters) [triage/unexplained-error-line]") and len(first) < 300


def test_closing_line() -> None:
    run = RunInfo(tool="vivado_hls", status="failed", inputs=[InputInfo("compile.log", "log", 4120)])
    f = [finding("hls/a", "error", "A", "compile.log", 1), finding("hls/b", "error", "B", "compile.log", 2),
         finding("hls/c", "warning", "C", "compile.log", 3), finding("hls/d", "info", "D", "compile.log", 4)]
    result = ScanResult(run, f, [Unexplained("compile.log", 9, "ERROR: x", 1, "fp")])
    assert summary(result, 0.31).plain == ("2 errors, 1 warning, 1 info, 1 unexplained error line · status failed · "
                                           "compile.log (4,120 lines) · 0.31 s")
    assert summary(result, 0.31).plain.startswith(result.counts().text())  # the words every view uses
    run.inputs.append(InputInfo("b.rpt", "report", 1))
    assert summary(ScanResult(run, [], []), 12.4, "run 3 stored").plain == (
        "no known cause, no error line · status failed · 2 inputs (4,121 lines) · 12 s · run 3 stored")


# ---------------------------------------------------------------------------------------------------------
# the knowledge base and tables


def printed(fn, *args, width: int = 80, tty: bool = False) -> list[str]:  # type: ignore[no-untyped-def]
    buffer = io.StringIO()
    fn(Console(file=buffer, width=width, force_terminal=tty, color_system="standard" if tty else None,
               highlight=False), *args)
    return ANSI.sub("", buffer.getvalue()).splitlines()


def test_a_terminal_title_column_wraps_below_its_pipe_minimum_rather_than_pass_the_width() -> None:
    # a 61-character id leaves the title 39 columns of a 120-column terminal, one less than a pipe's minimum
    def table(console: Console) -> None:
        print_table(console, [Column("id", whole=True), Column("severity", whole=True), Column("tool", whole=True),
                              Column("title", min=40)],
                    [["a" * 54 + "/" + "b" * 6, "warning", "hls4ml", "x" * 100]])
    lines = printed(table, width=120, tty=True)
    assert max(len(x) for x in lines) <= 120 and len(lines) > 2  # the title wraps over several lines
    assert len(printed(table, width=120, tty=False)) == 2  # a pipe: one line, the row runs past the width


@pytest.mark.parametrize(("width", "tty"), SCREENS, ids=SCREEN_IDS)
def test_packs_list_never_breaks_an_id(packs, width, tty) -> None:
    causes = sorted(packs.causes.values(), key=lambda c: c.id)
    lines = printed(print_cause_table, causes, width=width, tty=tty)
    rows = [x for x in lines if re.match(r"[a-z0-9_]+/\S+\s", x)]
    assert [r.split()[0] for r in rows] == [c.id for c in causes]  # every id whole, once, in order
    if not tty:  # a pipe: one row per line, long titles cut
        assert len(lines) == len(causes) + 2
        assert any(r.endswith("…") for r in rows)
    else:  # a terminal: titles wrap or go below their row, and never past the width
        assert all(len(x) <= width for x in lines)
        titles = " ".join(" ".join(lines).split())
        assert all(" ".join(c.shown_title.split()) in titles for c in causes)


def test_a_stacked_row_with_no_text_adds_no_blank_line() -> None:
    # `runs list` on an 80-column terminal: the whole columns fill the width, labels go below their row;
    # a run without a label gets no line below it
    columns = [Column("id", whole=True), Column("top finding", whole=True), Column("label")]
    rows = [["1", "dfc/optimization-level-1-less-data" + "-x" * 20, ""], ["2", "dfc/gpu-selected" + "-x" * 25, "nightly"]]
    lines = printed(lambda console: print_table(console, columns, rows), width=80, tty=True)
    assert all(x.strip() for x in lines), lines
    assert [x.split()[0] for x in lines] == ["id", "1", "2", "nightly"]


def test_listings_show_a_templated_title_as_a_finding_shows_it(packs) -> None:
    templated = sorted((c for c in packs.causes.values() if "{{" in c.title), key=lambda c: c.id)
    assert templated  # `No licence for {{feature}} on {{device}}` and others
    lines = printed(print_cause_table, templated, width=200)
    assert not any("{{" in x for x in lines)
    assert [x.split("  ")[-1].strip() for x in lines[1:-1]] == [c.shown_title for c in templated]
    assert all("<" in c.shown_title for c in templated)
    shown = printed(print_cause, templated[0], width=80)
    assert "{{" not in shown[0] and shown[0].startswith(f"{templated[0].severity}[{templated[0].id}]: ")


def test_kb_search_table_in_a_pipe(packs) -> None:
    from triage.kb import search

    rows = search(packs, "allocation", 10)
    lines = printed(print_search, "allocation", rows, width=80)
    assert lines[0] == "Known causes for 'allocation':" and len(lines) == len(rows) + 2
    assert [x.split()[0] for x in lines[2:]] == [r["id"] for r in rows]


@pytest.mark.parametrize("width", [80, 120])
def test_kb_show_has_no_box_and_keeps_the_id(packs, width) -> None:
    cause = packs.causes["dfc/perf-flow-manual-resources"]
    lines = printed(print_cause, cause, width=width)
    assert lines[0].startswith(f"error[{cause.id}]: ")
    assert not any(ch in "".join(lines) for ch in "╭╮╰╯")
    assert all(len(x) <= width or not re.search(r"\s", x.strip()) for x in lines)
    for ref in cause.references:
        assert any(x.strip() == ref or x.strip() == f"see: {ref}" for x in lines)


def test_readme_shows_the_output_at_80_columns() -> None:
    from triage.outputs import to_short

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    golden = (DATA / "dfc-partition.80-pipe.txt").read_text(encoding="utf-8")
    assert f"$ triage scan 043-ghnote-bilstm-hailo8l-automri-partition-failure.log\n{golden}```" in readme, \
        "README: paste tests/data/console/dfc-partition.80-pipe.txt into the example"
    short = to_short(frozen("dfc-partition")).splitlines()
    assert short[0] in readme.splitlines() and short[1] + " · 0.31 s" in readme.splitlines(), \
        "README: the --format short example is to_short() of tests/data/console/dfc-partition.json"


def test_a_workaround_that_quotes_the_users_files_keeps_its_paragraphs() -> None:
    script = CORPUS.parent / "synthetic" / "hls4ml-seed-convert-indented.py"  # SYNTHETIC: the second founding case
    out = render(scan(script), 80, False)
    assert "\\x0a" not in out  # the break between the user's lines and the general advice is not escaped
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  workaround: In your files:"))
    advice = next(i for i, line in enumerate(lines) if "Delete the per-layer `IOType` key" in line)
    assert first < advice and lines[advice - 1] == ""
