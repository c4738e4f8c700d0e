"""Metrics read from the real reports and logs in fixtures/corpus, with the figures the tools printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.metrics import Metric, MetricStream, metrics_from_line, parse_metrics

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"


def _parse(pattern: str) -> list[Metric]:
    (path,) = [p for p in CORPUS.glob(pattern) if not p.name.endswith(".expected.yaml")]
    return parse_metrics(str(path), path.read_text(encoding="utf-8", errors="replace"))


def _one(metrics: list[Metric], resource: str, scope: str = "device", kind: str = "utilization") -> Metric:
    found = [m for m in metrics if m.resource == resource and m.scope == scope and m.kind == kind]
    assert len(found) == 1, [(m.resource, m.scope, m.kind) for m in metrics]
    return found[0]


def test_hls4ml_vivado_synth_bonded_iob_307_percent() -> None:
    ms = _parse("hls/cases/002-*.rpt")
    iob = _one(ms, "Bonded IOB")
    assert (iob.used, iob.available, iob.percent, iob.line) == (384, 125, 307.20, 96)
    assert iob.over
    lut = _one(ms, "Slice LUTs")  # the `*` footnote mark is dropped
    assert (lut.used, lut.available, lut.percent) == (1526, 53200, 2.87)
    assert _one(ms, "DSPs").percent == 30.00
    # sub-rows and unused primitives are not metrics
    assert not [m for m in ms if m.resource in ("LUT as Logic", "PHASER_REF", "RAMB18")]


def test_prohibited_column_layout() -> None:
    ms = _parse("logs/vivado/201-*.txt")
    iob = _one(ms, "Bonded IOB")
    assert (iob.used, iob.available, iob.percent, iob.line) == (112, 106, 105.66, 99)
    assert _one(ms, "Slice LUTs").available == 20800


def test_ultrascale_layout_and_slr_tables() -> None:
    ms = _parse("logs/vivado/202-*.rpt")
    assert _one(ms, "CLB LUTs").used == 7722
    assert _one(ms, "DSPs").percent == 3.80
    # SLR table: only non-empty SLRs; the SLR IO table gives Bonded IOB per SLR
    assert _one(ms, "DSPs", scope="SLR3").percent == 15.2
    assert _one(ms, "Bonded IOB", scope="SLR3").percent == 92.31
    assert not [m for m in ms if m.scope == "SLR0"]


def test_csynth_estimates_over_100_and_clock() -> None:
    ms = _parse("logs/hls/102-*.rpt")
    lut, ff = _one(ms, "LUT"), _one(ms, "FF")
    assert (lut.used, lut.available, lut.percent) == (145108, 53200, 272)
    assert (ff.used, ff.available, ff.percent) == (130220, 106400, 122)
    clock = _one(ms, "clock period", scope="myproject", kind="clock")
    assert (clock.used, clock.available, clock.unit) == (7.162, 5.00, "ns")
    assert clock.over
    assert _one(ms, "latency_max", scope="myproject", kind="latency").used == 7861645
    assert _one(ms, "interval_min", scope="myproject", kind="interval").used == 176450
    # detail tables further down also have `|Total` rows: only the summary is read
    assert len([m for m in ms if m.resource == "LUT"]) == 1


def test_csynth_slr_row_over_100_with_device_row_under() -> None:
    ms = _parse("logs/hls/107-*.rpt")
    slr, dev = _one(ms, "LUT", scope="SLR"), _one(ms, "LUT")
    assert (slr.percent, slr.available, slr.line) == (201, 432000, 69)
    assert (dev.percent, dev.available, dev.line) == (50, 1728000, 73)
    assert slr.over and not dev.over


def test_csynth_dsp_531_percent() -> None:
    ms = _parse("logs/hls4ml/520-*.rpt")
    assert _one(ms, "DSP48E").percent == 531
    # uncertainty (3.12 ns) larger than the target (2.5 ns): no meaningless negative budget
    assert not [m for m in ms if m.resource == "clock period (budget)"]


def test_vitis_synthesis_summary_negative_slack() -> None:
    ms = _parse("logs/hls/103-*.rpt")
    slack = _one(ms, "slack", scope="systolic_array", kind="timing")
    assert (slack.used, slack.unit, slack.line) == (-0.37, "ns", 22)
    assert _one(ms, "LUT", scope="systolic_array").used == 9516


def test_vivado_timing_summary() -> None:
    ms = _parse("logs/vivado/209-*.rpt")
    by_name = {m.resource: m for m in ms if m.kind == "timing"}
    assert "WNS" not in by_name  # `inf`: no constrained path, not a number
    assert by_name["TNS"].used == 0.0 and by_name["TNS"].scope == "mac_top"
    assert by_name["WPWS"].used == 4.5 and by_name["WPWS"].line == 145


def test_csynth_xml() -> None:
    ms = _parse("hls/cases/003-*.xml")
    dsp = _one(ms, "DSP48E")
    assert (dsp.used, dsp.available, dsp.percent) == (73, 220, 33.18)
    clock = _one(ms, "clock period", scope="myproject", kind="clock")
    assert (clock.used, clock.available) == (4.049, 5.00)
    assert _one(ms, "interval_max", scope="myproject", kind="interval").used == 8


def test_dfc_used_available_line_from_the_corpus_notes() -> None:
    # verbatim line quoted in fixtures/notes/dfc.yaml (DFC single-context failure)
    notes = (CORPUS.parent / "notes" / "dfc.yaml").read_text(encoding="utf-8")
    line = next(x for x in notes.splitlines() if "APUs: 149/120" in x)
    ms = {m.resource: m for m in metrics_from_line(line, path="compile.log", line_no=3)}
    assert set(ms) == {"SCs", "16bit SCs", "APUs", "IAs", "L3 weights", "L3 ios", "LCUs"}
    assert (ms["APUs"].used, ms["APUs"].available, ms["APUs"].percent) == (149, 120, 124.17)
    assert ms["LCUs"].over and not ms["SCs"].over
    assert ms["APUs"].line == 3 and ms["APUs"].scope == "network"


def test_dfc_total_counts_with_percent() -> None:
    ms = _parse("logs/dfc/415-*.log")
    lcus = _one(ms, "LCUs", scope="network")
    assert (lcus.used, lcus.available, lcus.percent, lcus.line) == (37, None, 57.8125, 1743)


def test_dfc_context_tables_streamed() -> None:
    path = next(CORPUS.glob("dfc/cases/035-*.log"))
    stream = MetricStream(str(path))
    found: list[Metric] = []
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        found.extend(stream.feed(line, no))
    ctx0 = "whisper_tiny_encoder_10s_hailo_final_context_0"
    total = {m.resource: m.percent for m in found if m.scope == ctx0}
    assert total == {"Control Utilization": 57.8, "Compute Utilization": 27.7, "Memory Utilization": 39.1}
    cluster = [m for m in found if m.scope == f"{ctx0}/cluster_0" and m.resource == "Control Utilization"]
    assert cluster[0].percent == 100.0 and cluster[0].line == 288
    assert len({m.scope for m in found if "/" not in m.scope}) == 9  # nine contexts


def test_hls_scheduler_clock_line() -> None:
    path = next(CORPUS.glob("hls/cases/016-*.log"))
    line = path.read_text(encoding="utf-8").splitlines()[3]
    ms = {m.resource: m for m in metrics_from_line(line, path=str(path), line_no=4)}
    assert (ms["clock period"].used, ms["clock period"].available) == (4.89, 5.0)
    assert not ms["clock period"].over
    assert ms["clock period (budget)"].available == 4.375 and ms["clock period (budget)"].over


@pytest.mark.parametrize("text", ["", "nothing here\n", "| Site Type |\n", "<AreaEstimates>", "|Total | 1 |\n"])
def test_no_metrics_and_no_crash_on_fragments(text: str) -> None:
    assert parse_metrics("x.rpt", text) == []


def test_plain_log_lines_give_nothing() -> None:
    assert metrics_from_line("[info] Compiling network") == []
    assert metrics_from_line("see https://example.com/a: 1/2") == []
