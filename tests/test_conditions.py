"""Beyond one line: configs, metrics, versions, root causes and absence — the founding cases end to end."""

from __future__ import annotations

from pathlib import Path

from triage import scan_paths, scan_text

from .conftest import FIXTURES, PUBLIC, corpus

SEED = FIXTURES / "notes" / "dfc-a1-seed-dfc329.log"
ALLS = FIXTURES / "synthetic" / "perf-flow-model.alls"


def test_dfc_seed_with_model_script_names_both_lines(packs) -> None:
    result = scan_paths([str(SEED), str(ALLS)], packs)
    assert [f.id for f in result.findings] == ["dfc/perf-flow-manual-resources"]
    top = result.findings[0]
    assert top.severity == "error"
    assert f"{ALLS}:2 resources_param(...)" in top.workaround
    assert f"{ALLS}:3 performance_param(compiler_optimization_level=2)" in top.workaround
    assert "compiler_optimization_level=1" in top.workaround and "delete" in top.workaround
    assert "3.28" in (top.versions or "") and ">=3.29" in (top.versions or "")
    assert [(e.path, e.line) for e in top.evidence[:2]] == [(str(ALLS), 2), (str(ALLS), 3)]


def test_dfc_seed_alone_still_gives_the_cause_and_asks_for_the_script(packs) -> None:
    top = scan_paths([str(SEED)], packs).findings[0]
    assert top.id == "dfc/perf-flow-manual-resources"
    assert "model script" in top.workaround and ".alls" in top.workaround


def test_model_script_alone_is_a_finding_before_any_compile(packs) -> None:
    result = scan_paths([str(ALLS)], packs)
    assert [f.id for f in result.findings] == ["dfc/perf-flow-manual-resources"]


def test_real_model_zoo_scripts_are_not_flagged(packs) -> None:
    scripts = sorted((FIXTURES / "corpus" / "logs" / "dfc").glob("*.alls"))
    assert len(scripts) == 20
    result = scan_paths([str(p) for p in scripts], packs)
    assert [f.id for f in result.findings if f.severity != "info"] == []
    assert any(f.key.startswith("performance_param") for f in result.facts)


def test_hls4ml_bonded_iob_is_a_warning_quoting_the_figures(packs) -> None:
    result = scan_paths([str(corpus("hls/cases/002-"))], packs)
    iob = [f for f in result.findings if f.id == "vivado/bonded-iob-over-100pct-standalone-top"][0]
    assert iob.severity == "warning"
    assert "384" in iob.cause and "125" in iob.cause and "307.20" in iob.cause
    assert "out_of_context" in iob.workaround and "block design" in iob.workaround.lower()
    metric = [m for m in result.metrics if m.resource == "Bonded IOB"][0]
    assert (metric.used, metric.available, metric.percent) == (384, 125, 307.2)


def test_bonded_iob_with_config_beside_reports_ignored_keys(packs, tmp_path: Path) -> None:
    config = tmp_path / "hls4ml_config.yml"
    config.write_text(  # SYNTHETIC config in the shape of the seed issue
        "# SYNTHETIC hls4ml config for tests\nIOType: io_parallel\nHLSConfig:\n  Model:\n    ReuseFactor: 32\n"
        "    Strategy: Resource\n    Precision: ap_fixed<4,1>\n  LayerName:\n    dense:\n      IOType: io_stream\n"
        "      pragma: {unroll: factor=1, pipeline: ''}\n"
    )
    result = scan_paths([str(corpus("hls/cases/002-")), str(config)], packs)
    ids = {f.id: f for f in result.findings}
    assert ids["vivado/bonded-iob-over-100pct-standalone-top"].severity == "warning"
    assert "hls4ml/iotype-in-layer-config" in ids and "hls4ml/pragma-key-ignored" in ids
    assert any(e.path == str(config) for e in ids["hls4ml/iotype-in-layer-config"].evidence)


def test_hls_estimates_over_100_are_warned_with_the_caveat(packs) -> None:
    for rel, figure in (("logs/hls/102-", "272"), ("logs/hls4ml/520-", "531")):
        result = scan_paths([str(corpus(rel))], packs)
        f = [f for f in result.findings if f.id == "vivado/csynth-estimate-over-100pct"][0]
        assert f.severity == "warning" and "estimate" in f.cause.lower()
        assert figure in f.evidence[0].text
        assert any(m.percent and m.percent > 100 for m in result.metrics)


def test_slr_row_over_100_with_device_under_is_info(packs) -> None:
    result = scan_paths([str(corpus("logs/hls/107-"))], packs)
    assert [(f.id, f.severity) for f in result.findings] == [("vivado/csynth-slr-estimate-over-100pct", "info")]
    slr = [m for m in result.metrics if m.resource == "LUT" and m.scope.startswith("SLR")][0]
    device = [m for m in result.metrics if m.resource == "LUT" and m.scope == "device"][0]
    assert slr.percent == 201 and device.percent == 50


def test_symbol_lookup_error_is_the_root_of_the_allocator_failure(packs) -> None:
    result = scan_paths([str(corpus("dfc/cases/006-"))], packs)
    top = result.findings[0]
    assert "symbol" in top.id
    assert "dfc/allocation-failed" in [e.id for e in top.explained]


def test_version_outside_the_affected_range_suppresses_the_cause(packs) -> None:
    text = "[info] Hailo DFC Version: 3.28.0\n" + SEED.read_text()
    ids = [f.id for f in scan_text(text, packs).all_findings()]
    assert "dfc/perf-flow-manual-resources" not in ids and "dfc/allocation-failed" in ids
    text = "[info] Hailo DFC Version: 3.29.0\n" + SEED.read_text()
    assert scan_text(text, packs).findings[0].id == "dfc/perf-flow-manual-resources"


def test_log_that_stops_mid_phase_is_reported_incomplete(packs) -> None:
    result = scan_paths([str(corpus("logs/vivado/211-"))], packs)
    f = [f for f in result.findings if f.id == "triage/log-incomplete"][0]
    assert f.severity == "warning" and "impl" in f.cause
    assert result.run.status == "unknown"
    (where,) = f.evidence  # the line the log stops at, with what came before it
    assert (where.line, where.text) == (269, "Phase 1 Build RT Design")
    assert where.before[0].startswith("INFO: [Route 35-254] Multithreading enabled")


def test_dfc_utilization_list_becomes_metrics(packs) -> None:
    line = ("Detailed error is: Failed to save enough resources to fit in the required parameters (in a recoverable "
            "manner): SCs: 326/384, 16bit SCs: 0/384, APUs: 149/120, IAs: 149/192, L3 weights: 138/768, L3 ios: 200/768, LCUs: 149/96")
    result = scan_text(line, packs)
    apus = [m for m in result.metrics if m.resource == "APUs"][0]
    assert (apus.used, apus.available) == (149, 120) and apus.over


def test_flow_log_trace_closes_the_phase_it_completed(packs) -> None:
    """The `.autopilot/db/autopilot.flow.log` trace ends a phase with `Command csim_design done;`: a complete real
    trace is not incomplete, and a command that `done; error code: 2;` does not close its phase."""
    done = PUBLIC / "hls/990-HJL2020-s-FPGAZYNQ_TESTCONV-flow-log-csim-done.log"
    result = scan_paths([str(done)], packs)
    assert result.run.phase == "csim" and result.run.status == "passed"
    assert "triage/log-incomplete" not in [f.id for f in result.findings]
    failed = "Execute   csynth_design \nCommand   csynth_design done; error code: 2; 10.032 sec.\n"
    assert scan_text(done.read_text() + failed, packs).run.status != "passed"


def test_vivado_simulator_logs_name_their_release_and_a_built_snapshot_passes(packs) -> None:
    """xelab prints `Built simulation snapshot` only when elaboration succeeded; xsim's own log has no line that
    says a simulation passed; and inside an HLS co-simulation the simulator's lines neither end the HLS run nor
    name its tool."""
    elab = scan_paths([str(PUBLIC / "vivado/1464-Datamancer-xelab-2019.2-clean.log")], packs).run
    assert (elab.tool, elab.tool_version, elab.phase, elab.status) == ("vivado", "2019.2", "elaborate", "passed")
    sim = scan_paths([str(PUBLIC / "vivado/934-spimtib-xsim-simulate-clean.log")], packs).run
    assert (sim.phase, sim.status) == ("simulate", "unknown")
    cosim = (PUBLIC / "hls/013-Ahrfry-vasado-example.log").read_text().splitlines(keepends=True)
    cut = "".join(cosim[: next(i for i, ln in enumerate(cosim) if ln.startswith("Built simulation snapshot")) + 1])
    run = scan_text(cut, packs).run
    assert run.tool == "vivado_hls" and run.status != "passed"
    hosted = scan_paths([str(PUBLIC / "hls/094-Imam-f-RL-SOC-Tutorial-Vitis-VecDotProduct.log")], packs).run
    assert hosted.tool == "vitis_hls" and hosted.phase == "cosim"


def test_hailortcli_result_block_ends_a_benchmark(packs) -> None:
    """`hailortcli benchmark` prints its Summary (and `run` its `> Inference result:`) only when every
    measurement ran: a real one passes, the same output cut before it does not, and the cut one is reported
    as stopping mid-benchmark."""
    path = PUBLIC / "hailort/298-bedrock-r8000-benchmark-overcurrent-dvm.log"
    run = scan_paths([str(path)], packs).run
    assert (run.tool, run.phase, run.status) == ("hailort", "benchmark", "passed")
    lines = path.read_text().splitlines(keepends=True)
    cut = scan_text("".join(lines[:4]), packs)
    assert cut.run.status == "unknown"
    assert "triage/log-incomplete" in [f.id for f in cut.findings]
    ran = scan_paths([str(PUBLIC / "hailort/085-happs91-hailortcli-run-clean.log")], packs).run
    assert ran.status == "passed"


def test_vpp_compile_passes_when_it_made_its_xo_and_a_later_link_reopens_the_run(packs) -> None:
    compile_log = PUBLIC / "vitis/208-nmavuso-ese5320_final_project-vpp-compile-clean.log"
    assert scan_paths([str(compile_log)], packs).run.status == "passed"
    link = (PUBLIC / "vitis/036-greywolf37-FPGA_accelerated_CNN-clean-vpp-link-sw-emu-aws.log").read_text()
    started = "".join(link.splitlines(keepends=True)[:13])  # up to the link's own build summary line
    assert "60-1548" in started.splitlines()[-1]
    assert scan_text(compile_log.read_text() + started, packs).run.status != "passed"
