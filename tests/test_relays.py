"""Message ids relayed under another prefix (HLS by v++ -c, Vivado by the VPL step of v++ -l): one cause, found
under either prefix."""

from __future__ import annotations

from pathlib import Path

import pytest
import regex

from triage import load_packs
from triage.kb import explain
from triage.relays import widen, widen_literal

from .conftest import PUBLIC


@pytest.mark.parametrize(("pattern", "relayed", "plain", "tool"), [
    (r"\[HLS 214-124\] use of undeclared identifier", "ERROR: [v++ 214-124] use of undeclared identifier 'x'",
     "ERROR: [HLS 214-124] use of undeclared identifier 'x'", "vitis_hls"),
    (r"\[(?:SCHED(?: 204)?-69|HLS 200-885)\] Unable", "WARNING: [v++ 200-885] Unable to schedule",
     "WARNING: [SCHED 204-69] Unable to schedule", "vivado_hls"),
    (r"\[(?:RTGEN|HLS|XFORM) \d+-\d+\] =====", "INFO: [v++ 206-100] =====", "INFO: [XFORM 203-1] =====", "hls"),
    (r"\[HLS (?:207-3776|214-124)\] use of", "ERROR: [v++ 207-3776] use of", "ERROR: [HLS 207-3776] use of", "hls"),
    (r"\[Place 30-640\] Place Check", "ERROR: [VPL 30-640] Place Check : This design", "ERROR: [Place 30-640] Place Check",
     "vivado"),
    (r"\[DRC (?P<check>NSTD|UCIO)-1\]", "ERROR: [VPL UCIO-1] Unconstrained", "ERROR: [DRC NSTD-1] Unspecified", "vivado"),
    (r"\[(?:Vivado 12-13638|Common 17-69)\] ", "ERROR: [VPL 12-13638] Failed runs(s) : 'impl_1'",
     "ERROR: [Common 17-69] Command failed", "vivado"),
])
def test_widened_pattern_matches_both_prefixes(pattern: str, relayed: str, plain: str, tool: str) -> None:
    wide = regex.compile(widen(pattern, tool))
    assert regex.search(pattern, relayed) is None  # the case the widening is for
    assert wide.search(relayed) and wide.search(plain)


@pytest.mark.parametrize(("pattern", "tool"), [
    (r"\[XSIM 43-3321\] Static elaboration", "hls"),  # Vivado's simulator, not an HLS prefix
    (r"\[VRFC 10-2063\] Module", "hls"),
    (r"\[SIM 1\] 'csim_design' failed", "hls"),  # an old id without the 2xx number
    (r"\[v\+\+ 200-1470\] Pipelining result", "hls"),  # written for v++ already
    (r"HLS Tcl script does not exist", "hls"),
    (r"Vivado 2020\.1 is installed", "vivado"),  # a release, not a message id
    (r"\[Place 30-640\] Place Check", "hls4ml"),  # a tool nothing relays
])
def test_pattern_without_relayable_id_is_unchanged(pattern: str, tool: str) -> None:
    assert widen(pattern, tool) == pattern


def test_declared_literal_gets_its_relayed_twin() -> None:
    assert widen_literal("[HLS 200-885] Unable", "hls") == ("[HLS 200-885] Unable", "[v++ 200-885] Unable")
    assert widen_literal("[XSIM 43-3321]", "hls") == ("[XSIM 43-3321]",)
    assert widen_literal("[DRC UTLZ-1] Resource", "vivado") == ("[DRC UTLZ-1] Resource", "[VPL UTLZ-1] Resource")


def test_only_relayed_tools_are_widened(tmp_path: Path) -> None:
    body = ("    cause: Stand-in cause text long enough to be a cause of its own here.\n"
            "    workaround: Stand-in workaround text long enough to be actionable here.\n"
            "    signatures:\n      - regex: '\\[HLS 200-9999\\] stand-in'\n"
            "        match: ['ERROR: [HLS 200-9999] stand-in']\n")
    for tool in ("vitis_hls", "hls4ml"):
        (tmp_path / f"{tool}.yaml").write_text(
            f"pack: mine-{tool}\ntool: {tool}\ncauses:\n  - id: mine/{tool}\n    title: T\n    severity: error\n" + body)
    packs = load_packs(extra=[tmp_path], builtin=False, cache=False)
    hls, other = packs.causes["mine/vitis_hls"].signatures[0], packs.causes["mine/hls4ml"].signatures[0]
    assert hls.match("ERROR: [v++ 200-9999] stand-in") is not None
    assert other.match("ERROR: [v++ 200-9999] stand-in") is None
    assert "[v++ 200-9999] stand-in" in hls.literals  # the gate hands the relayed line to the regex


def test_relayed_hls_error_of_a_real_vpp_log_is_explained() -> None:
    line = next(ln for ln in (PUBLIC / "vitis").glob("242-*.log").__next__().read_text().splitlines()
                if ln.startswith("ERROR: [v++ 214-124]"))
    found = {f.id for f in explain(line, load_packs()).result.all_findings()}
    assert "hls/clang-undeclared-identifier" in found
