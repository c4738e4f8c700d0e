"""Notebooks as logs: what the cells printed, found at the `.ipynb` line that holds it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from triage import load_packs, scan_paths
from triage.notebook import NotebookView
from triage.sources import discover
from triage.scan import WarningLog

from .conftest import CORPUS

SYNTHETIC = CORPUS.parent / "synthetic"
NOTEBOOK = SYNTHETIC / "hls4ml-seed-convert.ipynb"  # SYNTHETIC, in the layout Jupyter saves
PACKS = load_packs()


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8").split("\n")


def test_printed_lines_are_decoded_in_place_and_every_other_line_is_empty() -> None:
    raw = NOTEBOOK.read_bytes()
    view = NotebookView()
    out = _lines(view(raw))
    src = raw.decode("utf-8").split("\n")
    assert len(out) == len(src)  # line for line: a finding's line is the notebook's line
    assert out[19] == "Interpreting Sequential" and src[19].strip() == '"Interpreting Sequential\\n",'
    assert out[35] == "\x1b[0;31mRuntimeError\x1b[0m: stand-in message of the synthetic notebook"  # ANSI: read_blocks strips it
    assert "\u23ce" in out[34]  # a traceback frame holding line breaks stays on its line
    assert all(line == "" for i, line in enumerate(out) if i not in range(19, 25) and i not in range(32, 36))


def test_code_cells_are_kept_apart_at_their_lines_and_markdown_is_not_code() -> None:
    view = NotebookView()
    view(NOTEBOOK.read_bytes())
    code = view.code_text().split("\n")
    assert code[40] == "import hls4ml" and code[47] == "        'IOType': 'io_stream',"
    assert code[7] == ""  # the markdown cell's line that looks like a config line
    assert "config['LayerName']['x']" not in view.code_text()


def test_chunks_cut_anywhere_between_lines_give_the_same_view() -> None:
    raw = NOTEBOOK.read_bytes()
    whole = NotebookView()(raw)
    lines = raw.split(b"\n")
    for cut in (1, 18, 19, 33, 40, 50):
        view = NotebookView()
        head, rest = b"\n".join(lines[:cut]) + b"\n", b"\n".join(lines[cut:])
        assert view(head) + view(rest) == whole


def test_scan_finds_the_hls_error_and_the_ignored_keys_at_notebook_lines() -> None:
    result = scan_paths([str(NOTEBOOK)], PACKS)
    ids = {f.id: f for f in result.all_findings()}
    stop = ids["hls/xform-203-504-stop-unrolling"]
    assert (stop.evidence[0].line, stop.evidence[0].text[:40]) == (23, "ERROR: [XFORM 203-504] Stop unrolling lo")
    assert [e.line for e in ids["hls4ml/iotype-in-layer-config"].evidence] == [48]
    assert [e.line for e in ids["hls4ml/pragma-key-ignored"].evidence] == [49]
    assert [(u.line, u.text) for u in result.unexplained] == [
        (36, "RuntimeError: stand-in message of the synthetic notebook")]


def test_notebook_beside_a_bonded_iob_report_is_the_second_founding_case() -> None:
    report = next((CORPUS / "hls" / "cases").glob("002-*.rpt"))
    ids = {f.id for f in scan_paths([str(report), str(NOTEBOOK)], PACKS).findings}
    assert {"vivado/bonded-iob-over-100pct-standalone-top", "hls4ml/iotype-in-layer-config",
            "hls4ml/pragma-key-ignored"} <= ids


def test_a_notebook_on_one_line_is_scanned_as_plain_text_with_a_warning(tmp_path: Path) -> None:
    compact = tmp_path / "compact.ipynb"
    compact.write_text(json.dumps(json.loads(NOTEBOOK.read_text())), encoding="utf-8")
    warnings: list[str] = []
    result = scan_paths([str(compact)], PACKS, warn=warnings.append)
    assert any("scanned as plain text" in w for w in warnings)
    assert "hls/xform-203-504-stop-unrolling" in {f.id for f in result.all_findings()}  # the text is still there


def test_a_folder_walk_picks_up_notebooks(tmp_path: Path) -> None:
    shutil.copy(NOTEBOOK, tmp_path / "convert.ipynb")
    assert [Path(s.path).name for s in discover([str(tmp_path)], WarningLog(None))] == ["convert.ipynb"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"{", b' "text": [', b' "source": [', b'  "a\\nb",', b'  "\\ud800",', b"  ],",
                                 b'  "\\x",', b'"cell_type": "markdown",', b"\xff\xfe", b"plain text"]), max_size=30))
def test_any_lines_keep_their_count(lines: list[bytes]) -> None:
    raw = b"\n".join(lines) + b"\n"
    out = NotebookView()(raw)
    assert out.count(b"\n") == raw.count(b"\n")
