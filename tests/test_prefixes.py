"""Lines a CI runner, BuildKit, Compose, s6-log, a launcher, a logger or a forum quote prefixed: a signature
anchored at the tool's line start still matches them, and a tool's own time stamp is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage import load_packs
from triage.prefixes import without_prefix
from triage.scan import scan_text

PREFIXES = [
    "2024-05-01T12:34:56.1234567Z ",  # GitHub Actions, Azure Pipelines
    "2024-05-01T12:34:56.123456Z 00O ",  # GitLab, timestamped job log
    "2024-05-01T12:34:56.123456Z 01E+ ",
    "[2024-05-01T12:34:56.789Z] ",  # Jenkins Timestamper
    "2024-05-01T12:34:56+02:00 ",
    "#12 345.6 ",  # Docker BuildKit, plain progress
    "frigate  | ",  # Docker Compose, the service padded to the longest name
    "hailo-app-1  | ",  # Compose v2: project, service and replica
    "frigate-hailo  | 2024-08-24 21:51:44.835191724  ",  # Compose, then the s6-log stamp of Frigate's services
    "2024-05-01T12:34:56.1234567Z web    | ",  # a CI job's stamp, then Compose
    "> ",  # a Markdown quote of an issue or forum post
    "> > ",  # nested, as a reply quotes a quote
    ">> ",
    "> frigate  | ",  # a quoted compose log
    "[face_recognition_node-1] ",  # ros2 launch
    "[rank1]: ",  # torchrun
    "Dec 13 10:00:01 raspberrypi hailort_service[812]: ",  # syslog / journald
    "Jan  3 04:56:56 xilinx-k26-som-2021_2 kernel: ",
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_prefix_is_removed(prefix: str) -> None:
    assert without_prefix(prefix + "ERROR: [HLS 200-70] x") == "ERROR: [HLS 200-70] x"


@pytest.mark.parametrize("line", [
    "[2024-05-01 12:34:56.789] [1234] [HailoRT] [error] CHECK failed",  # HailoRT's own stamp
    "12:07:32 ERROR : (XSDB Server)ERROR: [Hsi 55-1594] Core emacps",  # the SDK's own stamp
    "2024-05-01 12:34:56,123 - hailo_sdk_client - ERROR",  # Python logging
    "2024-05-01T12:34:56.1234567ZERROR: no separator",
    "#12 DONE 0.5s",  # BuildKit's step status, not a relayed line
    "INFO | common.core | Using default model: yolov8s",  # a logger's level before a bar, not a service
    "ERROR  | hailo_apps | x",
    "warning: a | b",  # a bar with no service name before it
    "frigate| x",
    ">x",  # no space after the mark
    "[Synth 8-439] module 'x' not found",  # a message id, not a launcher's process name
    "[HailoRT] [error] CHECK failed",
    "[ 1362.791145] hailo: Probing",  # the kernel's own stamp
    "December 3 2026: x",
    "x > y",
    "2024-08-24 21:51:44.835191724 Traceback (most recent call last):",  # one space: not s6-log's stamp
    "",
])
def test_other_lines_are_untouched(line: str) -> None:
    assert without_prefix(line) is line


def _anchored_examples() -> list[tuple[str, str]]:
    packs = load_packs()
    return [(cause.id, example) for cause in packs.causes.values() for sig in cause.signatures if sig.pattern.startswith("^")
            for example in cause.examples if sig.match(example) is not None]


ANCHORED = _anchored_examples()


def test_packs_have_anchored_signatures() -> None:
    assert len(ANCHORED) >= 50  # the case this is for


@pytest.mark.parametrize("prefix", [PREFIXES[0], PREFIXES[5], PREFIXES[8], PREFIXES[10], PREFIXES[14], PREFIXES[16]])
def test_anchored_signatures_match_prefixed_lines(prefix: str) -> None:
    packs = load_packs()
    by_id = packs.causes
    missed = []
    for cause_id, example in ANCHORED:
        plain = {tuple(sorted(caps.items())) for s in by_id[cause_id].signatures if (caps := s.match(example))}
        shipped = {tuple(sorted(caps.items())) for s in by_id[cause_id].signatures
                   if (caps := s.match(prefix + example))}
        if shipped != plain:
            missed.append((cause_id, example))
    assert not missed


@pytest.mark.parametrize("prefix", ["2024-05-01T12:34:56.1234567Z ", "petalinux  | ", "> "])
def test_scan_of_a_prefixed_log_finds_the_cause_and_keeps_the_line(prefix: str) -> None:
    packs = load_packs()
    line = prefix + "ERROR: oe_runmake failed"
    result = scan_text(line + "\n", packs)
    assert [f.id for f in result.findings] == ["vitis/bitbake-task-failed"]
    assert result.findings[0].evidence[0].text == line  # the evidence is the line as the log has it


def test_a_quoted_real_line_meets_an_anchored_signature() -> None:
    """A forum quote of xsim's fatal line (pandablocks #84): `^FATAL_ERROR: ...` matches it after the `> `."""
    packs = load_packs()
    log = Path(__file__).resolve().parent.parent / "fixtures/public/vivado/1378-pandablocks-84-xsim-kernel-fatal-error-quoted.log"
    result = scan_text(log.read_text(encoding="utf-8"), packs)
    found = {f.id: f for f in result.all_findings()}
    assert "vivado/xsim-runtime-fatal" in found
    assert found["vivado/xsim-runtime-fatal"].evidence[0].text.startswith("> FATAL_ERROR:")
