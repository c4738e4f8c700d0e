"""Knowledge that generalises: the held-back measure, family causes, generic causes, and the tool's own advice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import html5lib
import pytest
from rich.console import Console
from typer.testing import CliRunner

from triage import load_packs, scan_paths
from triage.cli import app
from triage.console import print_result
from triage.errors import InputError, PackError
from triage.evaluate import evaluate, heldback_text, load_cases
from triage.formats import result_dict, to_json
from triage.kb import explain
from triage.report import build_result_context, render_run

from .conftest import CORPUS, FIXTURES, PUBLIC

PACKS = load_packs()
HELDBACK = FIXTURES / "heldback"
RUNME_216 = CORPUS / "logs/vivado/216-blackfenzer-vivado_tester-runme.log"


def _real_text_outside_heldback() -> str:
    parts = []
    for root in (CORPUS, PUBLIC, FIXTURES / "notes"):
        for p in root.rglob("*"):
            if p.is_file() and not p.name.endswith(".expected.yaml"):
                parts.append(p.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n"))
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------------------
# The held-back measure


def test_no_pack_example_was_written_from_a_held_back_file() -> None:
    """An example found in a held-back file must also be found in a real source that is not held back: the
    same stable message in two logs is fine, a line only the held-back case has is a leak."""
    held = heldback_text(HELDBACK)
    elsewhere = _real_text_outside_heldback()
    leaks = [(c.id, e) for c in PACKS.causes.values() for e in c.examples
             if len(e.strip()) >= 20 and e.strip() in held and e.strip() not in elsewhere]
    assert not leaks, f"pack examples taken from held-back files: {leaks[:5]}"


def test_held_back_cases_load_and_name_real_files() -> None:
    cases = load_cases(HELDBACK)
    for case in cases:
        assert case.source.startswith("http"), case.id
        for f in case.files:
            assert f.is_file() and HELDBACK in f.parents
    assert len({c.id for c in cases}) == len(cases)


@pytest.fixture()
def small_heldback(tmp_path: Path) -> Path:
    """A held-back folder built from real corpus fixtures with known outcomes."""
    (tmp_path / "dfc").mkdir()
    (tmp_path / "hls").mkdir()
    shutil.copy(CORPUS / "dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log", tmp_path / "dfc/fail.log")
    shutil.copy(CORPUS / "dfc/cases/034-community19530-dfc530-successful-compilation.log", tmp_path / "dfc/clean.log")
    shutil.copy(CORPUS / "hls/cases/001-hls4ml-fixture-csynth-clean-vivado2020.1.rpt", tmp_path / "hls/clean.rpt")
    (tmp_path / "cases.yaml").write_text(
        "cases:\n"
        "  - {id: partition, files: [dfc/fail.log], source: 'https://example.org/1', kind: fail,\n"
        "     cause: contexts cannot be partitioned, mention: [[partition, context]]}\n"
        "  - {id: wrong-words, files: [dfc/fail.log], source: 'https://example.org/1', kind: fail,\n"
        "     cause: a cause nobody wrote, mention: [[flux capacitor]]}\n"
        "  - {id: clean-dfc, files: [dfc/clean.log], source: 'https://example.org/2', kind: clean, cause: passes}\n"
        "  - {id: clean-report, files: [hls/clean.rpt], source: 'https://example.org/3', kind: clean, cause: passes}\n"
        "  - {id: trap-on-failure, files: [dfc/fail.log], source: 'https://example.org/1', kind: trap,\n"
        "     cause: not a trap at all, mention: [[partition]]}\n",
        encoding="utf-8")
    return tmp_path


def test_evaluate_scores_each_kind_on_real_fixtures(small_heldback: Path) -> None:
    report = evaluate(PACKS, small_heldback)
    right = {o.case.id: o.right for o in report.outcomes}
    assert right == {"partition": True, "wrong-words": False, "clean-dfc": True, "clean-report": True,
                     "trap-on-failure": False}  # an error finding is never a trap explained
    assert (report.by_kind["fail"].right, report.by_kind["fail"].total) == (1, 2)
    assert report.by_family[("hailo", "clean")].total == 1 and report.by_family[("hls", "clean")].right == 1
    assert report.to_dict()["figures"]["clean"] == {"right": 2, "total": 2}


def test_generic_findings_never_count_as_the_right_cause(small_heldback: Path, tmp_path_factory) -> None:
    packs_dir = tmp_path_factory.mktemp("generic")
    (packs_dir / "catchall.yaml").write_text(
        "pack: catchall\ntool: dfc\ncauses:\n"
        "  - id: mine/anything-failed\n    title: Something about a partition failed\n    severity: error\n"
        "    generic: true\n    cause: A step failed; this catch-all says which one, not why it did.\n"
        "    workaround: Read the first error line above this one; it names the reason for the failure.\n"
        "    signatures:\n      - regex: 'Automri finished with too many resources'\n"
        "        match: ['Automri finished with too many resources on context_0 with 24/50 failures.']\n",
        encoding="utf-8")
    (small_heldback / "cases.yaml").write_text(
        "cases:\n  - {id: p, files: [dfc/fail.log], source: 'https://example.org/1', kind: fail, cause: c,\n"
        "     mention: [[partition]]}\n", encoding="utf-8")
    only_generic = load_packs(extra=[packs_dir], builtin=False, cache=False)
    assert not evaluate(only_generic, small_heldback).outcomes[0].right


@pytest.mark.parametrize("body, message", [
    ("cases:\n  - {id: a, files: [missing.log], source: s, kind: fail, cause: c, mention: [[x]]}\n", "file not found"),
    ("cases:\n  - {id: a, files: [x.log], source: s, kind: broken, cause: c}\n", "kind must be one of"),
    ("cases:\n  - {id: a, files: [x.log], source: s, kind: fail, cause: c}\n", "needs `mention`"),
    ("cases:\n  - {id: a, files: [x.log], source: s, kind: fail, cause: c, mention: [[Upper]]}\n", "lower-case"),
    ("cases:\n  - {id: a, files: [x.log], source: s, kind: clean, cause: c, colour: red}\n", "unknown key"),
])
def test_bad_cases_file_is_a_one_line_input_error(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "x.log").write_text("ok\n")
    (tmp_path / "cases.yaml").write_text(body)
    with pytest.raises(InputError, match=message):
        load_cases(tmp_path)


def test_an_unquoted_no_in_mention_is_named_as_a_yaml_boolean(tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text("ok\n")
    (tmp_path / "cases.yaml").write_text(
        "cases:\n  - {id: a, files: [x.log], source: s, kind: fail, cause: c, mention: [[no, none], [clock]]}\n")
    with pytest.raises(InputError, match="lower-case") as info:
        load_cases(tmp_path)
    assert "quote it ('no')" in (info.value.hint or "")


def cli(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, args, catch_exceptions=False)


def test_packs_eval_cli_prints_the_three_figures(small_heldback: Path) -> None:
    res = cli(["packs", "eval", "--cases", str(small_heldback)])
    assert res.exit_code == 0, res.output
    assert "failures with the right cause: 1/2 (50 %)" in res.output
    assert "clean runs without an error finding: 2/2 (100 %)" in res.output
    assert "traps explained without an error: 0/1 (0 %)" in res.output
    # the wrong cases are named only on request: reading them while writing packs would spoil the measure
    assert "wrong-words" not in res.output and "2 cases wrong" in res.output
    listed = cli(["packs", "eval", "--cases", str(small_heldback), "--list-wrong"]).output
    assert "wrong [fail] wrong-words" in listed and "wrong [trap] trap-on-failure" in listed
    data = json.loads(cli(["packs", "eval", "--cases", str(small_heldback), "--json"]).output)
    assert [c["id"] for c in data["cases"] if not c["right"]] == ["wrong-words", "trap-on-failure"]


# ---------------------------------------------------------------------------------------------------------
# Family causes


FAMILIES = ["family/out-of-memory", "family/disk-full", "family/licence-checkout", "family/permission-denied",
            "family/program-not-found", "family/shared-library-missing", "family/numpy-abi-mismatch",
            "family/tool-version-mismatch", "family/part-not-installed", "family/tool-crashed",
            "family/python-module-missing", "family/python-api-changed"]


@pytest.mark.parametrize("cause_id", FAMILIES)
def test_each_family_has_two_distinct_real_example_lines(cause_id: str) -> None:
    cause = PACKS.causes[cause_id]
    assert cause.family and not cause.generic and cause.tool == "any"
    assert len(set(cause.examples)) >= 2 and len(cause.references) >= 2


def test_a_specific_cause_on_the_same_line_replaces_the_family_finding() -> None:
    """The corpus case 076 crash line is known to a specific HLS cause: the family finding disappears."""
    path = CORPUS / "hls/cases/076-hls4ml-tutorial-53-realloc-abnormal-termination-vivado-docker.log"
    ids = {f.id for f in scan_paths([str(path)], PACKS).all_findings()}
    assert "hls/vivado-abnormal-termination" in ids and "family/tool-crashed" not in ids
    family_only = load_packs(extra=[Path("patterns/family.yaml")], builtin=False, cache=False)
    assert [f.id for f in scan_paths([str(path)], family_only).findings] == ["family/tool-crashed"]


def test_a_family_finding_on_other_lines_is_listed_under_the_specific_cause() -> None:
    result = scan_paths([str(CORPUS / "logs/hls/011-BenBBear-vivado-stream-convolution-vivado_hls.log")], PACKS)
    licence = next(f for f in result.findings if f.id == "hls/vivado-license-not-found")
    family = next(f for f in licence.explained if f.id == "family/licence-checkout")
    assert family.title == "No licence for Synthesis on xc7z020"
    assert "family/licence-checkout" not in {f.id for f in result.findings}


def test_no_family_cause_fires_on_a_passed_corpus_run() -> None:
    for golden in sorted(FIXTURES.rglob("*.expected.yaml")):
        if "status: passed" not in golden.read_text(encoding="utf-8"):
            continue
        log = golden.with_name(golden.name[: -len(".expected.yaml")])
        if not log.is_file():
            continue
        ids = {f.id for f in scan_paths([str(log)], PACKS).all_findings()}
        assert not {i for i in ids if i.startswith("family/")}, (log, ids)


# ---------------------------------------------------------------------------------------------------------
# Generic causes


def test_generic_is_a_boolean_pack_key(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "pack: p\ntool: any\ncauses:\n  - id: p/x\n    title: T\n    severity: error\n    generic: maybe\n"
        "    cause: Long enough cause text for the loader to accept it.\n"
        "    workaround: Long enough workaround text for the loader to accept it.\n"
        "    signatures:\n      - {regex: 'flux fails', match: ['flux fails']}\n")
    with pytest.raises(PackError, match="'generic' and 'family' must be true or false"):
        load_packs(extra=[tmp_path], builtin=False, cache=False)


def test_catch_alls_are_generic_and_say_so_in_json_and_terminal() -> None:
    assert PACKS.causes["dfc/tool-crashed"].generic and PACKS.causes["hls/vivado-command-failed"].generic
    assert not PACKS.causes["dfc/perf-flow-manual-resources"].generic
    result = scan_paths([str(CORPUS / "logs/hls/011-BenBBear-vivado-stream-convolution-vivado_hls.log")], PACKS)
    flat = {f["id"]: f for top in result_dict(result)["findings"] for f in [top, *top["explains"]]}
    assert flat["hls/vivado-command-failed"]["generic"] is True
    assert flat["hls/vivado-license-not-found"]["generic"] is False


# ---------------------------------------------------------------------------------------------------------
# The tool's own advice for lines nobody explained


ADVICE = "If [get_<value>] was used to populate the object, check to make sure this command returns at least one valid object."


@pytest.fixture(scope="module")
def unexplained_run():  # type: ignore[no-untyped-def]
    """The real runme.log scanned with no packs at all: every error line is unexplained."""
    packs = load_packs(extra=[Path(__file__).parent / "data" / "empty-pack.yaml"], builtin=False, cache=False)
    return scan_paths([str(RUNME_216)], packs)


def test_advice_is_the_resolution_line_below_the_error(unexplained_run) -> None:  # type: ignore[no-untyped-def]
    row = next(u for u in unexplained_run.unexplained if u.message_id == "Common 17-55")
    assert row.line == 59 and row.advice == ADVICE
    lines = RUNME_216.read_text(encoding="utf-8").split("\n")
    assert lines[row.line].startswith("Resolution: ")  # the very next line of the file


def test_advice_reaches_json_terminal_and_html(unexplained_run) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(to_json(unexplained_run))
    row = next(u for u in doc["unexplained"] if u["message_id"] == "Common 17-55")
    assert row["advice"] == ADVICE
    console = Console(width=200, record=True, color_system=None)
    print_result(console, unexplained_run)
    shown = " ".join(console.export_text().split())
    assert "advice: If [get_<value>] was used" in shown and "valid object. [Common 17-55]" in shown
    page = html5lib.parse(render_run(build_result_context(result_dict(unexplained_run))), namespaceHTMLElements=False)
    advice = [el for el in page.iter() if isinstance(el.tag, str) and "advice" in (el.get("class") or "").split()]
    assert any(el.get("data-message-id") == "Common 17-55" and ADVICE in "".join(el.itertext()) for el in advice)


def test_a_bare_status_line_gets_the_readable_hailort_error_before_it(tmp_path: Path) -> None:
    # synthetic: the two HailoRT line shapes, in the order HailoRT prints them
    log = tmp_path / "hailort.log"
    log.write_text("[HailoRT] [error] Failed to open the flux device\n"
                   "[HailoRT] [error] CHECK_SUCCESS failed with status=HAILO_FLUX_FAIL(99)\n")
    packs = load_packs(extra=[Path(__file__).parent / "data" / "empty-pack.yaml"], builtin=False, cache=False)
    rows = scan_paths([str(log)], packs).unexplained
    assert rows[1].advice == "Failed to open the flux device" and rows[0].advice is None


def test_a_cause_gated_on_phases_applies_only_where_the_log_shows_one(tmp_path: Path) -> None:
    """The test-bench ERROR cause assumes csim; a pip error line of a real log is not one."""
    pip_log = PUBLIC / "hls4ml/018-hls4ml-tutorial-28-conifer-requires-python38.log"
    assert "hls/csim-testbench-error-message" not in {f.id for f in scan_paths([str(pip_log)], PACKS).all_findings()}
    # synthetic: the same kind of line inside the csim phase markers Vivado HLS prints
    csim = tmp_path / "vivado_hls.log"
    csim.write_text("INFO: [SIM 211-2] *************** CSIM start ***************\nERROR: Results differ from golden\n"
                    "INFO: [SIM 211-1] CSim done with 0 errors.\n")
    assert "hls/csim-testbench-error-message" in {f.id for f in scan_paths([str(csim)], PACKS).all_findings()}


@pytest.mark.parametrize(("when", "error"), [("phases: [csimm]", "unknown phase 'csimm' in when.phases"),
                                           ("tools: [hls]", "unknown tool 'hls' in when.tools")])
def test_when_names_known_phases_and_tools(tmp_path: Path, when: str, error: str) -> None:
    (tmp_path / "p.yaml").write_text(
        "pack: p\ntool: any\ncauses:\n  - id: p/x\n    title: T\n    severity: error\n"
        "    cause: Long enough cause text for the loader to accept it.\n"
        "    workaround: Long enough workaround text for the loader to accept it.\n"
        f"    when: {{{when}}}\n"
        "    signatures:\n      - {regex: 'flux fails', match: ['flux fails']}\n")
    with pytest.raises(PackError, match=error):
        load_packs(extra=[tmp_path], builtin=False, cache=False)


def test_a_cause_gated_on_tools_stays_out_of_other_tools_runs(packs, matcher) -> None:
    """TensorFlow's no-driver notice is harmless for hls4ml; in a DFC run the optimizer's GPU line says what it
    costs, so the hls4ml cause must not speak there. A pasted line of no known tool still gets it."""
    line = "failed call to cuInit"
    dfc = PUBLIC / "dfc/062-codetam-hailo-project-mnist-optimize-level0-cpu.log"
    hls4ml = PUBLIC / "hls4ml/059-L1JetTagger-qk-tf-cuinit-no-driver.log"
    assert line in dfc.read_text(encoding="utf-8") and line in hls4ml.read_text(encoding="utf-8")
    in_dfc = scan_paths([str(dfc)], PACKS)
    assert in_dfc.run.tool == "dfc" and "hls4ml/tensorflow-no-cuda-driver" not in {f.id for f in in_dfc.all_findings()}
    assert "hls4ml/tensorflow-no-cuda-driver" in {f.id for f in scan_paths([str(hls4ml)], PACKS).all_findings()}
    pasted = next(x for x in hls4ml.read_text(encoding="utf-8").splitlines() if line in x)
    assert "hls4ml/tensorflow-no-cuda-driver" in {f.id for f in explain(pasted, packs, matcher).result.all_findings()}
    # the tool of a run without a banner comes from its other findings: a TAPPAS build's C++ error is not HLS's
    tappas = scan_paths([str(PUBLIC / "hailort/056-ace319-tappas-build-hailometa.log")], PACKS)
    assert tappas.run.tool == "hailort" and "hls/cxx-compiler-error" not in {f.id for f in tappas.all_findings()}



def test_a_plain_vivado_simulation_error_is_not_a_co_simulation_failure(tmp_path: Path) -> None:
    """VRFC errors of a student's own HDL (real xsim logs) got the HLS co-simulation cause; they must not, while
    the same kind of line inside an HLS co-simulation still says the simulator rejected the generated RTL."""
    cosim_ids = {"hls/cosim-vhdl-elaboration-failed", "hls/cosim-rtl-compile-error"}
    for name in ("001-MIRAC2021-EGRE429-spawn-failed-launch-simulation.log",
                 "060-gal65-ENEL373-project-xsim-formal-port-missing-webtalk.log"):
        found = {f.id for f in scan_paths([str(PUBLIC / "vivado" / name)], PACKS).all_findings()}
        assert "vivado/xsim-step-failed" in found and not found & cosim_ids, name
    # synthetic: a VRFC error between the cosim markers Vivado HLS prints
    log = tmp_path / "vivado_hls.log"
    log.write_text("INFO: [COSIM 212-47] Using XSIM for RTL simulation.\nStarting C/RTL cosimulation ...\n"
                   "ERROR: [VRFC 10-666] expression has 2 elements ; expected 1 [/s/sim/vhdl/top.vhd:12]\n"
                   "ERROR: [COSIM 212-303] Aborting co-simulation: RTL simulation failed.\n")
    top = scan_paths([str(log)], PACKS).findings
    assert top[0].id == "hls/cosim-rtl-compile-error" and top[0].generic
    assert "hls/cosim-failed" in {e.id for e in top[0].explained} or "hls/cosim-rtl-simulation-failed" in {
        e.id for e in top[0].explained}
