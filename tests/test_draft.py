"""`triage kb draft`: from a stored run with an error nobody explains to a loaded, tested pack entry."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import regex
from typer.testing import CliRunner

from triage import load_packs, scan_paths
from triage.cli import app
from triage.draft import (Origin, _exception_line, _refuse_traceback_header, derive_regex, draft_from_store,
                          draft_from_text, draft_line, draftable, header_lines, suggest_title, write_draft)
from triage.errors import InputError, PackError
from triage.fingerprint import MESSAGE_ID, fingerprint, normalise
from triage.goldens import test_goldens as run_goldens
from triage.packs import builtin_pack_dir, load_pack_file
from triage.scan import WarningLog, scan_sources
from triage.sources import discover
from triage.store import LogKeeper, open_store

from .conftest import CORPUS, corpus, public

runner = CliRunner()
XSIM = "vivado/203-"  # a real failed simulation: a known cause, and `ERROR: unknown error occurred` explained by none
PARTITION = "dfc/cases/043-"
XFORM = "hls/cases/005-"


@pytest.fixture(scope="module")
def bare_packs():  # type: ignore[no-untyped-def]
    """Only triage's own pack: almost every error line of the corpus is unexplained with it."""
    return load_packs([builtin_pack_dir() / "triage.yaml"], builtin=False)


@pytest.fixture(scope="module")
def unexplained_lines(bare_packs) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    out = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file() and not p.name.endswith(".expected.yaml")):
        result = scan_sources(bare_packs, discover([str(path)], WarningLog(None)))
        out.extend((u.text, result.run.tool) for u in result.unexplained)
    return out


def _same_fingerprint_variant(line: str) -> str:
    """The line with every masked number changed: another line of the same fingerprint."""
    ids = [m.span() for m in MESSAGE_ID.finditer(line)]
    def bump(m: re.Match[str]) -> str:
        inside = any(a <= m.start() < b for a, b in ids)
        return m.group(0) if inside else str(int(m.group(0)) + 7)
    return re.sub(r"(?<![\w.])\d+(?![\w.])", bump, line)


def test_every_real_unexplained_line_drafts_a_regex_that_matches_its_fingerprint(unexplained_lines, bare_packs) -> None:
    assert len(unexplained_lines) > 80
    for text, tool in unexplained_lines:
        draft = draft_line(Origin(text, fingerprint(text), tool=tool), bare_packs)  # loads through the loader
        compiled = regex.compile(draft.regex)
        assert compiled.groups == len(compiled.groupindex)  # named groups only
        assert compiled.search(text), (text, draft.regex)
        variant = _same_fingerprint_variant(text)
        if normalise(variant) == normalise(text):
            assert compiled.search(variant), (variant, draft.regex)
        msgid = MESSAGE_ID.search(text)
        if msgid:  # keyed on the message id, as the built-in packs are
            assert draft.regex.startswith(regex.escape(msgid.group(0), special_only=True, literal_spaces=True)
                                          .replace("\\-", "-"))
        assert draft.cause_id.startswith(("dfc/", "hls/", "vivado/", "hls4ml/", "hailort/", "finn/", "site/"))


def test_draft_of_a_real_hls_line(bare_packs) -> None:
    line = next(x for x in corpus(XFORM).read_text().splitlines() if "XFORM 203-504" in x)
    assert derive_regex(line) == (r"\[XFORM 203-504\] Stop unrolling loop '(?P<loop>[^']+)' "
                                  r"\((?P<path>(?:[A-Za-z]:)?[\w.+~@\\/-]+):(?P<n>\d+(?:\.\d+)?)\) "
                                  r"in function '(?P<function>[^']+)'")
    assert suggest_title(line) == "Stop unrolling loop '…' (…) in function '…' (XFORM 203-504)"
    draft = draft_line(Origin(line, fingerprint(line), tool="vivado_hls"), load_packs())
    assert draft.cause_id == "hls/xform-203-504-stop-unrolling-loop-in-function"  # the built-in one has another id
    assert draft.tool == "vivado_hls" and draft.severity == "error"
    caps = regex.search(draft.regex, line).groupdict()
    assert caps["loop"] == "MultLoop" and caps["path"].endswith("nnet_dense_resource.h")


def _fill(pack: Path) -> None:
    text = pack.read_text(encoding="utf-8")
    text = re.sub(r"cause: 'TODO[^\n]*", "cause: 'The optimizer concatenates along an axis its inputs do not have.'", text)
    text = re.sub(r"workaround: 'TODO[^\n]*", "workaround: 'Reshape the inputs of the concat to 4-D NHWC.'", text)
    text = re.sub(r"- 'TODO: https[^\n]*", "- https://community.hailo.ai/t/concat-index-error/1", text)
    pack.write_text(text, encoding="utf-8")


def test_placeholders_are_refused_until_written(tmp_path: Path, bare_packs) -> None:
    line = "IndexError: tuple index out of range"
    draft = draft_line(Origin(line, fingerprint(line), tool="dfc"), bare_packs)
    (pack,) = write_draft(draft, tmp_path, bare_packs, header_lines(draft))
    text = pack.read_text(encoding="utf-8")
    assert text.startswith("# Drafted by `triage kb draft`")
    for field, fixed in (("cause", "'Because.'"), ("workaround", "'Do this.'"),
                         ("references", None)):
        with pytest.raises(PackError, match="placeholder of the draft") as err:
            load_pack_file(pack)
        assert field in str(err.value)
        if fixed:
            text = re.sub(rf"{field}: 'TODO[^\n]*", f"{field}: {fixed}", text)
        else:
            text = re.sub(r"\n  references:\n  - 'TODO[^\n]*", "", text)
        pack.write_text(text, encoding="utf-8")
    (cause,) = load_pack_file(pack)
    assert cause.id == "dfc/indexerror-tuple-index-out-of-range" and cause.signatures[0].pattern == draft.regex


def test_from_a_run_nobody_explains_to_a_tested_pack_entry(tmp_path: Path, bare_packs) -> None:
    """The whole path, with no regex written by hand: a stored run whose failure no cause explains ->
    a drafted pack -> placeholders filled -> it loads, its fixture golden passes, and retriage explains the run."""
    with open_store(tmp_path / "runs.db") as store:
        result = scan_paths([str(corpus(PARTITION))], bare_packs)
        run_id = store.record_run(result, packs=bare_packs, dimensions={"label": "x"}, duration_s=0.1,
                                  logs=LogKeeper()).run_id
        run = store.run(run_id)
        assert run["status"] == "failed" and not run["findings"]  # an unknown error
        fp = next(u["fingerprint"] for u in run["result"]["unexplained"] if "valid partition" in u["text"])

        draft = draft_from_store(store, bare_packs, fingerprint_=fp)
        drafts = tmp_path / "drafts"
        files = write_draft(draft, drafts, bare_packs)
        assert [f.relative_to(drafts).as_posix() for f in files] == [
            f"{draft.slug}.yaml", f"fixtures/{draft.slug}.log", f"fixtures/{draft.slug}.log.expected.yaml"]
        with pytest.raises(PackError, match="placeholder"):
            load_packs([drafts], builtin=False)
        _fill(files[0])

        packs = load_packs([builtin_pack_dir() / "triage.yaml", drafts], builtin=False)
        assert draft.cause_id in packs.causes
        report = run_goldens(packs, drafts / "fixtures")
        assert len(report.outcomes) == 1 and not report.failures and not report.uncovered
        (change,) = store.retriage(packs)
        assert change.run_id == run_id and change.added == [draft.cause_id]
        after = store.run(run_id)
        assert [f["cause_id"] for f in after["findings"]] == [draft.cause_id]
        assert not any("valid partition" in u["text"] for u in after["result"]["unexplained"])


def test_no_match_examples_come_from_passed_runs(tmp_path: Path, bare_packs) -> None:
    now = datetime.now(timezone.utc)
    with open_store(tmp_path / "runs.db") as store:
        for rel, label in ((PARTITION, "fail"), ("dfc/cases/053-", "ok"), ("logs/dfc/415-", "ok2")):
            result = scan_paths([str(corpus(rel))], bare_packs)
            store.record_run(result, packs=bare_packs, dimensions={"label": label}, duration_s=0.1, logs=LogKeeper(),
                             created=now - timedelta(hours=1))
        failed = store.runs(label="fail")[0]["id"]
        (row,) = [u for u in store.unexplained_lines(run_id=failed) if "Mapping Failed" in u["text"]]
        draft = draft_from_store(store, bare_packs, fingerprint_=row["fingerprint"])
    assert draft.regex == r"Mapping Failed \(allocation time: 1m 44s\)"
    assert "] Successful Mapping (allocation time: " in draft.no_match[0]  # the closest lines of the passed runs
    passed = corpus("dfc/cases/053-").read_text() + corpus("logs/dfc/415-").read_text()
    passed = re.sub(r"\x1b\[[0-9;]*m", "", passed)  # lines as a scan reads them: colour codes stripped
    assert 1 <= len(draft.no_match) <= 3
    for line in draft.no_match:
        assert line in passed and not regex.search(draft.regex, line)


def cli(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "80"})


def test_cli_draft_backtest_fill_and_retriage(tmp_path: Path) -> None:
    db, drafts = str(tmp_path / "runs.db"), tmp_path / "drafts"
    assert cli("scan", str(public(XSIM)), "--db", db, "-q").exit_code == 1
    shown = cli("runs", "show", "1", "--db", db).stdout
    (fp,) = re.findall(r"draft: triage kb draft ([0-9a-f]{12})", shown)

    made = cli("kb", "draft", fp, "--db", db, "--out", str(drafts))
    assert made.exit_code == 0, made.stdout
    assert "regex: unknown error occurred" in made.stdout
    assert re.search(r"vivado/unknown-error-occurred\s+1\s+0\s+1\s+0", made.stdout)  # 1 failed hit, 0 passed
    assert "explains error lines in: run 1 (1)" in made.stdout
    again = runner.invoke(app, ["kb", "draft", fp, "--db", db, "--out", str(drafts)])
    assert isinstance(again.exception, InputError) and "exists already" in str(again.exception)  # never overwritten

    checked = runner.invoke(app, ["packs", "check", "--packs", str(drafts)])
    assert isinstance(checked.exception, PackError)
    assert "'cause' is still the placeholder of the draft" in str(checked.exception)
    _fill(drafts / "vivado-unknown-error-occurred.yaml")
    assert cli("packs", "check", "--packs", str(drafts)).exit_code == 0
    tested = cli("packs", "test", "--packs", str(drafts), "--fixtures", str(drafts / "fixtures"), "--against-db",
                 "--db", db)
    assert tested.exit_code == 0, tested.stdout[-2000:]
    assert "1/1 goldens match" in tested.stdout and "hides: no cause" in tested.stdout
    table = tested.stdout.split("Causes: fixtures hit", 1)[1].split(" match examples", 1)[0]
    rows = [line.split() for line in table.splitlines() if re.match(r"[a-z0-9_]+/\S+\s", line)]
    assert rows == [["vivado/unknown-error-occurred", "error", "1", "0"]]  # the draft alone
    retriaged = cli("retriage", "--packs", str(drafts), "--db", db, "--json")
    assert json.loads(retriaged.stdout)[0]["added"] == ["vivado/unknown-error-occurred"]


def test_cli_draft_from_pasted_text_prints_the_yaml(tmp_path: Path) -> None:
    out = cli("kb", "draft", "--text", "ERROR: [Synth 8-9999] port 'clk_in' of module 'top' is unconnected",
              "--tool", "vivado", "--print", "--db", str(tmp_path / "none.db"))
    assert out.exit_code == 0, out.stdout
    assert "- id: vivado/synth-8-9999-port-of-module-is-unconnected" in out.stdout
    assert r"""- regex: '\[Synth 8-9999\] port ''(?P<port>[^'']+)'' of module ''(?P<module>[^'']+)'' is unconnected'""" \
        in out.stdout
    assert not (tmp_path / "triage-drafts").exists()


@pytest.mark.parametrize(("fixture", "line", "namespace", "tool"), [
    ("hailort/030-irivvision-", 4, "hailort/", "hailort"),  # `[HailoRT] [error] ...`: a detection rule
    ("hls/cases/005-", None, "hls/", "hls"),  # `[XFORM 203-504]`: a message id only the HLS tools print
    ("vivado/080-pulp-platform-", None, "vivado/", "vivado"),  # `[Place 30-574]`: Vivado's
])
def test_pasted_text_names_its_tool(fixture, line, namespace, tool, bare_packs) -> None:
    path = _any_fixture(fixture)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    text = lines[line - 1] if line else next(x for x in lines if x.startswith("ERROR: ["))
    draft = draft_from_text(text, bare_packs)
    assert draft.cause_id.startswith(namespace) and draft.tool == tool
    assert draft_from_text(text, bare_packs, tool="finn").cause_id.startswith("finn/")  # --tool wins
    assert draft_from_text("IndexError: tuple index out of range", bare_packs).cause_id.startswith("site/")


def _any_fixture(rel: str) -> Path:
    from .conftest import PUBLIC

    (hit,) = [p for root in (CORPUS, PUBLIC) for p in root.glob(rel + "*") if not p.name.endswith(".expected.yaml")]
    return hit


def test_nightly_page_offers_the_draft_command(tmp_path: Path, packs) -> None:
    from triage.report import build_nightly_context, render_nightly

    now = datetime.now(timezone.utc)
    with open_store(tmp_path / "runs.db") as store:
        result = scan_paths([str(public(XSIM))], packs)
        store.record_run(result, packs=packs, dimensions={"label": "n"}, duration_s=0.1, logs=LogKeeper(),
                         created=now - timedelta(hours=1))
        html = render_nightly(build_nightly_context(store, now - timedelta(days=1), now, now=now, packs=packs,
                                                    version="test"))
    (u,) = result.unexplained
    assert f'<div class="draft muted">triage kb draft {u.fingerprint}</div>' in html


def test_a_line_with_nothing_stable_is_a_clear_error(bare_packs) -> None:
    with pytest.raises(InputError, match="cannot draft a signature from 'ERROR: \\[Hs'") as err:
        draft_line(Origin("ERROR: [Hs", fingerprint("ERROR: [Hs"), tool="vivado"), bare_packs)  # a real line, cut off
    assert "--line N" in (err.value.hint or "")


def test_a_traceback_header_is_not_drafted(tmp_path: Path, bare_packs) -> None:
    # real FINN logs: 009's second (chained) traceback is cut before its exception line; 005's ends at line 13
    cut = _any_fixture("finn/009-Xilinx-")
    with open_store(tmp_path / "runs.db") as store:
        for path in (cut, _any_fixture("finn/005-Xilinx-")):
            store.record_run(scan_paths([str(path)], bare_packs), packs=bare_packs, dimensions={"label": path.name[:3]},
                             duration_s=0.1, logs=LogKeeper())
        (header,) = [u for u in store.run(1)["result"]["unexplained"] if "Traceback" in u["text"]]
        with pytest.raises(InputError, match="first line of a Python traceback") as err:
            draft_from_store(store, bare_packs, fingerprint_=header["fingerprint"])
        assert "--text" in (err.value.hint or "")  # nothing below it to point at
        # a header stored while its exception line is in the kept log: the hint names that line
        with pytest.raises(InputError) as err:
            _refuse_traceback_header(store, Origin("Traceback (most recent call last):", "fp", 2, str(_any_fixture(
                "finn/005-Xilinx-")), 2))
        assert err.value.hint.endswith("triage kb draft --run 2 --line 13")
    text = cut.read_text(encoding="utf-8")
    assert _exception_line(text.splitlines(), 1) == (4, text.splitlines()[3].strip())  # FileNotFoundError: ...
    assert _exception_line(text.splitlines(), 8) is None
    pasted = draft_from_text(text, bare_packs, tool="finn")  # a pasted traceback: its exception line
    assert pasted.match == [text.splitlines()[3].strip()]
    # IPython's layout (a real hls4ml notebook): `Exception   Traceback (most recent call last)`, frames as
    # `File ~/...`, `----> 3 from ...`, colour codes, then `Exception: ERROR: Unsupported layer type: ...`
    notebook = re.sub(r"\x1b\[[0-9;]*m", "", _any_fixture("hls4ml/036-hls4ml-tutorial-").read_text(encoding="utf-8"))
    assert not draftable(notebook.splitlines()[1])
    assert _exception_line(notebook.splitlines(), 2) == (
        17, "Exception: ERROR: Unsupported layer type: QConv2DBatchnorm")


def test_views_offer_no_draft_for_a_traceback_header(tmp_path: Path, packs) -> None:
    from rich.console import Console

    from triage.console import unexplained_lines
    from triage.report import build_nightly_context, render_nightly

    now = datetime.now(timezone.utc)
    result = scan_paths([str(_any_fixture("finn/002-Xilinx-"))], packs)  # a real traceback cut before its end
    (header,) = [u for u in result.unexplained if "Traceback" in u.text]
    with open_store(tmp_path / "runs.db") as store:
        store.record_run(result, packs=packs, dimensions={"label": "n"}, duration_s=0.1, logs=LogKeeper(),
                         created=now - timedelta(hours=1))
        html = render_nightly(build_nightly_context(store, now - timedelta(days=1), now, now=now, packs=packs,
                                                    version="test"))
    assert f'data-fingerprint="{header.fingerprint}"' in html
    assert f"triage kb draft {header.fingerprint}" not in html and "draft from its exception line" in html
    shown = " ".join(line.plain for line in unexplained_lines(Console(width=80), result.unexplained, drafts=True))
    assert f"triage kb draft {header.fingerprint}" not in shown
    assert all(f"triage kb draft {u.fingerprint}" in shown for u in result.unexplained if u is not header)
