"""The scan pipeline on real fixtures: findings, evidence, root causes, detection, status."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage import load_packs, scan_paths, scan_text
from triage.gate import HyperscanGate, PythonGate, candidates
from triage.packs import builtin_pack_dir
from triage.scan import Matcher, scan_sources
from triage.sources import Source

from .conftest import CORPUS, FIXTURES, corpus

SEED = FIXTURES / "notes" / "dfc-a1-seed-dfc329.log"
HIT = "Performance Flow requires automatic resource utilization"  # a real line of the seed log


def test_seed_dfc_failure_gives_root_cause_with_evidence(packs) -> None:
    result = scan_paths([str(SEED)], packs)
    assert [f.id for f in result.findings] == ["dfc/perf-flow-manual-resources"]
    top = result.findings[0]
    assert top.severity == "error" and top.count == 2
    assert [e.line for e in top.evidence] == [5, 7]
    # the generic allocation failure is shown under its root cause, not beside it
    assert [f.id for f in top.explained] == ["dfc/allocation-failed"]
    ev = top.evidence[0]
    assert ev.before == ["[info] Starting Hailo allocation and compilation flow", "[error] Mapping Failed (allocation time: 0s)"][-3:] or len(ev.before) == 3
    assert ev.after[0] == "[error] Failed to produce compiled graph"
    assert result.run.tool == "dfc" and result.run.phase == "compile" and result.run.status == "failed"
    assert result.unexplained == []


LINK_FAILED = "clang++: error: linker command failed with exit code 1 (use -v to see invocation)"  # generic


def test_generic_wrapper_is_listed_under_the_error_above_it(packs) -> None:
    # a real Vitis HLS csim log: lld's undefined symbol, then clang++'s generic "linker command failed"; no
    # `explains` ties the two causes, their order in the log does
    log = FIXTURES / "public/hls/1094-Ariqfadh-FAST-HLS-vitis-2024.2-csim-lld-undefined-symbol.log"
    result = scan_paths([str(log)], packs)
    errors = [f for f in result.findings if f.severity == "error"]
    assert [f.id for f in errors] == ["hls/csim-undefined-reference"]
    assert "family/link-step-failed" in [f.id for f in errors[0].explained]
    assert not packs.causes["hls/csim-undefined-reference"].generic and packs.causes["family/link-step-failed"].generic
    assert "family/link-step-failed" not in packs.causes["hls/csim-undefined-reference"].explains


def test_generic_wrapper_alone_or_far_below_an_error_stays_a_finding(packs) -> None:
    assert [f.id for f in scan_text(LINK_FAILED, packs).findings] == ["family/link-step-failed"]
    # an unrelated error long before it is not what the wrapper reports
    far = "\n".join([HIT] + [f"filler {i}" for i in range(300)] + [LINK_FAILED])
    assert sorted(f.id for f in scan_text(far, packs).findings) == ["dfc/perf-flow-manual-resources",
                                                                    "family/link-step-failed"]
    near = "\n".join([HIT] + [f"filler {i}" for i in range(20)] + [LINK_FAILED])
    top = [f for f in scan_text(near, packs).findings if f.severity == "error"]
    assert [f.id for f in top] == ["dfc/perf-flow-manual-resources"]
    assert "family/link-step-failed" in [f.id for f in top[0].explained]


def test_context_is_three_lines_each_side(packs) -> None:
    text = "\n".join([f"filler {i}" for i in range(10)] + [HIT] + [f"after {i}" for i in range(10)])
    result = scan_text(text, packs)
    ev = result.findings[0].evidence[0]
    assert ev.line == 11 and ev.before == ["filler 7", "filler 8", "filler 9"] and ev.after == ["after 0", "after 1", "after 2"]


def test_context_crosses_block_boundaries(packs, tmp_path: Path) -> None:
    lines = [f"{i:05d} padding padding padding" for i in range(4000)]
    lines[2000] = HIT
    log = tmp_path / "x.log"
    log.write_text("\n".join(lines) + "\n")
    from triage import sources

    original = sources.BLOCK_BYTES
    sources.BLOCK_BYTES = 997  # odd, small blocks: every hit sits near a boundary somewhere
    try:
        small = scan_paths([str(log)], packs, jobs=1)
    finally:
        sources.BLOCK_BYTES = original
    big = scan_paths([str(log)], packs, jobs=1)
    ev_small = small.all_findings()[0].evidence[0]
    ev_big = big.all_findings()[0].evidence[0]
    assert ev_small.line == ev_big.line == 2001
    assert ev_small.before == ev_big.before == lines[1997:2000]
    assert ev_small.after == ev_big.after == lines[2001:2004]
    assert small.run.inputs[0].lines == 4000


def test_hls_stop_unrolling_real_case(packs) -> None:
    result = scan_paths([str(corpus("hls/cases/005-"))], packs)
    ids = [f.id for f in result.findings]
    assert ids[0] == "hls/xform-203-504-stop-unrolling"
    assert result.findings[0].severity == "error"


def test_clean_real_logs_have_no_error_finding(packs) -> None:
    clean = ["logs/hls/001-", "logs/hls/002-", "logs/hls/004-", "logs/hls/006-", "logs/hls/009-", "logs/hls/010-",
             "logs/hls/012-", "logs/hls/015-", "logs/hls/017-", "logs/hls/020-", "logs/hls/023-",
             "dfc/cases/034-", "dfc/cases/053-"]
    for rel in clean:
        result = scan_paths([str(corpus(rel))], packs)
        errors = [f.id for f in result.all_findings() if f.severity == "error"]
        assert errors == [], f"{rel}: {errors}"


def test_detects_tool_version_and_part(packs) -> None:
    r = scan_paths([str(corpus("logs/hls/020-"))], packs)
    assert (r.run.tool, r.run.tool_version) == ("vitis_hls", "2022.1")
    assert r.run.status == "passed"
    r = scan_paths([str(corpus("dfc/cases/005-"))], packs)
    assert (r.run.tool, r.run.tool_version) == ("dfc", "3.30.0")
    r = scan_paths([str(corpus("logs/hls/102-"))], packs)
    assert r.run.tool == "vivado_hls" and r.run.part == "xc7z020-clg400-1"


def test_incomplete_log_is_not_passed(packs) -> None:
    r = scan_paths([str(corpus("logs/vivado/211-"))], packs)
    assert r.run.status != "passed"


def test_script_lines_are_not_unexplained_errors(packs) -> None:
    r = scan_paths([str(corpus("logs/hls4ml/506-"))], packs)
    assert r.unexplained == [] and r.run.status != "failed"


def test_unexplained_lines_are_kept_and_grouped(packs) -> None:
    text = "ERROR: frobnicator 12 exploded at 0x7fff\nERROR: frobnicator 13 exploded at 0x7ffe\nall good\n"
    r = scan_text(text, packs)
    assert len(r.unexplained) == 1 and r.unexplained[0].count == 2 and r.unexplained[0].line == 1
    assert r.run.status == "failed"


def test_traceback_header_explained_by_the_exception_below(packs) -> None:
    r = scan_paths([str(corpus("dfc/cases/012-"))], packs)
    assert not any("Traceback" in u.text for u in r.unexplained)


def test_traceback_and_its_unexplained_exception_line_are_one_entry(packs) -> None:
    # a traceback that ends in an exception no cause explains is one unexplained entry: the exception line
    text = 'Traceback (most recent call last):\n  File "build.py", line 3, in <module>\n    run()\n'
    r = scan_text(text + "frobnicate.FrobError: the frobnicator exploded at 0x7fff\n", packs)
    assert [(u.line, u.text.split(":", 1)[0]) for u in r.unexplained] == [(4, "frobnicate.FrobError")]
    # a real FINN build whose traceback ends in `subprocess.CalledProcessError` (a generic cause): nothing is left
    r = scan_paths([str(FIXTURES / "public/finn/005-Xilinx-finn-32-cannot-stat-bitfile.log")], packs)
    assert r.unexplained == [] and "family/python-subprocess-command-failed" in {f.id for f in r.all_findings()}
    # a traceback cut before its exception line keeps its header: it is all there is
    r = scan_paths([str(FIXTURES / "public/finn/002-Xilinx-finn-26-vivado-hls-not-found.log")], packs)
    assert [u.line for u in r.unexplained if "Traceback" in u.text] == [5]
    # unless it is chained to an exception a cause explains (cut inside "During handling of the above ...")
    r = scan_paths([str(FIXTURES / "public/finn/009-Xilinx-finn-927-stitched-ip-all-verilog-srcs-missing.log")], packs)
    assert "finn/stitched-ip-copy-failed" in [f.id for f in r.findings] and r.unexplained == []


@pytest.mark.parametrize(("fixture", "cause", "exception_line"), [
    ("corpus/dfc/cases/044-ghnote-concat-op-indexerror-random-calib.log", "dfc/concat-op-low-rank-index-error", 3),
    ("public/dfc/063-saltypretz3l-lfm25-tile-head-repeat-traceback.log", "dfc/parse-tile-head-repeat", 13),
    # a notebook's JSON output: the frame's quotes are escaped, four frames between it and the exception
    ("public/dfc/061-codetam-hailo-project-mnist-profiler-indexerror.log", "dfc/profiler-rank2-tensor-indexerror", 137),
])
def test_the_exception_line_of_a_frame_a_cause_explains_is_explained_with_it(fixture, cause, exception_line,
                                                                              packs) -> None:
    path = FIXTURES / fixture
    assert "IndexError:" in path.read_text(encoding="utf-8").splitlines()[exception_line - 1]
    r = scan_paths([str(path)], packs)
    assert cause in [f.id for f in r.findings] and r.unexplained == []
    # without the cause that explains the frame, the exception line is what the run has to say
    bare = load_packs([builtin_pack_dir() / "triage.yaml"], builtin=False)
    assert exception_line in [u.line for u in scan_paths([str(path)], bare).unexplained]
def test_several_inputs_form_one_run_and_parallel_equals_serial(packs) -> None:
    paths = [str(corpus("dfc/cases/043-")), str(corpus("hls/cases/005-")), str(corpus("logs/hls/013-"))]
    serial = scan_paths(paths, packs, jobs=1)
    parallel = scan_paths(paths, packs, jobs=2)
    assert serial.to_dict() == parallel.to_dict()
    assert len(serial.run.inputs) == 3


def test_gzip_input_gives_the_same_findings(packs, tmp_path: Path) -> None:
    src = corpus("dfc/cases/043-")
    gz = tmp_path / (src.name + ".gz")
    gz.write_bytes(gzip.compress(src.read_bytes()))
    plain = scan_paths([str(src)], packs)
    zipped = scan_paths([str(gz)], packs)
    assert [f.id for f in plain.all_findings()] == [f.id for f in zipped.all_findings()]


def test_folder_scan_picks_recognised_files(packs, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "vitis_hls.log").write_bytes(corpus("hls/cases/005-").read_bytes())
    (tmp_path / "notes.txt").write_text("ERROR: not a log we pick\n")
    r = scan_paths([str(tmp_path)], packs)
    assert [Path(i.path).name for i in r.run.inputs] == ["vitis_hls.log"]


def test_python_and_hyperscan_gates_agree_on_every_fixture(packs) -> None:
    pytest.importorskip("hyperscan")
    py, hs = Matcher(packs, "python"), Matcher(packs, "hyperscan")
    assert isinstance(py.gate, PythonGate) and isinstance(hs.gate, HyperscanGate)
    files = [p for p in CORPUS.rglob("*") if p.is_file() and not p.name.endswith(".expected.yaml")]
    assert len(files) > 150
    for path in files:
        src = [Source(str(path), "log", path.stat().st_size)]
        a = scan_sources(packs, src, matcher=py).to_dict()
        b = scan_sources(packs, src, matcher=hs).to_dict()
        assert a == b, path.name


def test_gate_candidates_match_naive_search() -> None:
    literals = [("Stop unrolling", False), ("killed", True), ("[error]", False), ("ab", False)]
    text = "x\nnothing\n[error] Stop unrolling now\nKILLED by oom\nabc\n"
    gate = PythonGate(literals)
    got = candidates(gate, text.encode())
    assert got == {2: {0, 2}, 3: {1}, 4: {3}}


def _naive_candidates(literals: list[tuple[str, bool]], text: str) -> dict[int, set[int]]:
    """Case-insensitive literals fold ASCII letters, as both gates do (on the bytes)."""
    found: dict[int, set[int]] = {}
    for n, line in enumerate(text.encode().split(b"\n")):
        ids = {i for i, (lit, fold) in enumerate(literals)
               if (lit.encode().lower() in line.lower() if fold else lit.encode() in line)}
        if ids:
            found[n] = ids
    return found


# A small alphabet forces what real literals do: shared prefixes, overlaps, a literal inside another, hits at
# the first and last character of a line or block, both cases of one letter.
_LIT_CHARS = st.sampled_from("abAB[] :_e")


@settings(max_examples=400, deadline=None)
@given(literals=st.lists(st.tuples(st.text(_LIT_CHARS, min_size=1, max_size=7), st.booleans()), min_size=1, max_size=12),
       text=st.text(st.sampled_from("abAB[] :_e\nxé"), max_size=300))
def test_python_gate_equals_a_naive_search(literals: list[tuple[str, bool]], text: str) -> None:
    assert candidates(PythonGate(literals), text.encode()) == _naive_candidates(literals, text)


def test_python_gate_equals_hyperscan_on_real_lines(packs) -> None:
    pytest.importorskip("hyperscan")
    py, hs = Matcher(packs, "python"), Matcher(packs, "hyperscan")
    data = b"".join(p.read_bytes() for p in sorted((CORPUS / "logs").rglob("*.log")))
    got = candidates(py.gate, data)
    assert len(got) > 1000
    assert got == candidates(hs.gate, data)


def test_one_large_file_split_across_processes_equals_the_serial_scan(packs, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from triage import split

    real = []
    for rel in ("logs/hls/013-", "dfc/cases/043-", "hls/cases/005-", "logs/vivado/212-", "dfc/cases/006-"):
        real += corpus(rel).read_bytes().splitlines(keepends=True)
    rng = random.Random(7)
    log = tmp_path / "big.log"
    log.write_bytes(b"".join(rng.choice(real) for _ in range(60000)))
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1000)
    assert len(split.plan_ranges(str(log), 3)) == 3
    serial = scan_paths([str(log)], packs, jobs=1)
    parallel = scan_paths([str(log)], packs, jobs=3)
    assert serial.findings and serial.run.inputs[0].lines == parallel.run.inputs[0].lines
    assert [f.id for f in serial.all_findings()] == [f.id for f in parallel.all_findings()]
    assert [(f.count, [(e.line, e.text, e.before, e.after) for e in f.evidence]) for f in serial.all_findings()] == \
        [(f.count, [(e.line, e.text, e.before, e.after) for e in f.evidence]) for f in parallel.all_findings()]
    assert serial.run == parallel.run


RING_PACK = """pack: ring
tool: any
causes:
""" + "".join(f"""  - id: ring/{a}
    title: {a.upper()}
    severity: error
    cause: Long enough cause text for the loader to accept it.
    workaround: Long enough workaround text for the loader to accept it.
    explains: [ring/{b}]
    signatures:
      - {{regex: '{a} fails', match: ['{a} fails']}}
""" for a, b in (("alpha", "beta"), ("beta", "gamma"), ("gamma", "alpha")))


def test_causes_that_explain_each_other_in_a_ring_are_listed_once_under_one_root(tmp_path: Path) -> None:
    """Three causes explaining each other in a ring used to make the root search loop for ever (a real pack
    pair did it through the same-line rule); now each finding is listed exactly once."""
    (tmp_path / "ring.yaml").write_text(RING_PACK)
    packs = load_packs(extra=[tmp_path / "ring.yaml"], builtin=False, cache=False)
    result = scan_text("alpha fails\nbeta fails\ngamma fails\n", packs)
    assert len(result.findings) == 1
    top = result.findings[0]
    assert sorted([top.id, *(e.id for e in top.explained)]) == ["ring/alpha", "ring/beta", "ring/gamma"]


@pytest.mark.parametrize(("line", "error"), [
    ("\tParameter LP_RESP_SLVERROR bound to: 2'b10 ", False),  # public/vivado/065, a clean synthesis
    # synthetic, the clocking-wizard form the Vivado journal echoes for every clk_wiz IP
    ("set_property -dict [list CONFIG.CLKOUT1_PHASE_ERROR {96.948} CONFIG.CLKOUT1_JITTER {130.958}] [get_ips clk_wiz_0]",
     False),
    ("VITIS-AI-3.0 [VAIQ_ERROR][QUANTIZER_TORCH_CALIB_RESULT_MISMATCH]", True),  # public/vitis/216
    ("CUDA_ERROR_OUT_OF_MEMORY: out of memory", True),
    ("ERROR: frobnicator exploded", True),
])
def test_error_as_the_tail_of_a_name_is_not_an_error_line(line: str, error: bool) -> None:
    empty = load_packs(extra=[Path(__file__).parent / "data" / "empty-pack.yaml"], builtin=False, cache=False)
    r = scan_text(line + "\n", empty)
    assert (len(r.unexplained) == 1) is error and (r.run.status == "failed") is error


def test_an_unexplained_line_of_a_known_message_names_the_causes_of_that_message() -> None:
    from triage.formats import result_dict
    from triage.store import result_from_doc

    packs = load_packs()
    # a real Synth 8-439 line (patterns/vivado-synth.yaml) reworded, and a message no cause has an example of
    result = scan_text("ERROR: [Synth 8-439] could not find module 'vga_timingTimeOut' in any library [C:/x/vga.v:75]\n"
                       "ERROR: [Frob 99-1] frobnicated the widget\n", packs)
    known, unknown = result.unexplained
    assert "vivado/synth-8-439-module-not-found" in known.known and known.known[0].startswith("vivado/")
    assert all(not packs.causes[k].generic for k in known.known) and unknown.known == []
    doc = result_dict(result)
    assert doc["unexplained"][0]["known_causes"] == known.known
    assert result_from_doc(doc).unexplained[0].known == known.known  # as `runs show` reads it back


def test_an_error_line_whose_cause_does_not_apply_to_the_run_is_unexplained_not_lost() -> None:
    packs = load_packs()
    line = "ERROR: Result mismatch at index 3"  # what a test bench prints: hls/csim-testbench-error-message, csim only
    outside = scan_text(f"INFO: start\n{line}\n", packs)
    assert [u.text for u in outside.unexplained] == [line] and not outside.findings
    assert outside.run.status == "failed"
    inside = scan_text(f"INFO: [SIM 211-2] *************** CSIM start ***************\n{line}\n", packs)
    assert "hls/csim-testbench-error-message" in {f.id for f in inside.all_findings()} and not inside.unexplained


def test_a_title_takes_a_capture_from_a_later_evidence_line() -> None:
    # Place 30-574 names the net only in the XDC line it proposes, lines after the error itself
    log = FIXTURES / "public/vivado/080-pulp-platform-pulpissimo-322-place-30-574.log"
    (finding,) = [f for f in scan_text(log.read_text(), load_packs()).findings
                  if f.id == "vivado/place-30-574-clock-on-non-clock-pin"]
    assert not finding.evidence[0].captures  # the error line captures nothing
    assert finding.title.startswith("Clock pad_reset_IBUF ")
    assert "[get_nets pad_reset_IBUF]" in finding.workaround


def test_a_chained_traceback_header_is_not_an_error_line_of_its_own() -> None:
    # a real log cut off inside the second traceback of a chain whose first exception a cause explains
    log = FIXTURES / "public/hailort/005-ace343-whisper-arch-mismatch.log"
    result = scan_text(log.read_text(), load_packs())
    assert [f.id for f in result.findings] == ["hailort/hef-arch-mismatch"]
    assert result.unexplained == []
    # chained to an exception no cause explains, the header stays: with the log cut, it is all there is of the
    # second error
    text = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'x'\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n")
    assert [u.text for u in scan_text(text, load_packs()).unexplained] == [
        "KeyError: 'x'", "Traceback (most recent call last):"]


def test_lines_past_a_findings_evidence_cap_are_not_unexplained(packs) -> None:
    # a real Yocto log: ten disk-monitor lines of one cause (5 kept as evidence); two of the later ones are also
    # read by a cause that does not apply to the run, which must not make them "unexplained"
    log = FIXTURES / "public/vitis/786-yocto-pitrezor-14-diskmon-stoptasks-then-abort.log"
    result = scan_paths([str(log)], packs)
    top = result.findings[0]
    assert top.id == "vitis/bitbake-disk-space-monitor-stop" and top.count == 10 and len(top.evidence) == 5
    assert result.unexplained == []
