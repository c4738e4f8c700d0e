"""Strange log text never breaks a scan: binary data, broken UTF-8, ANSI colours, CRLF/CR, NUL bytes,
a 10 MB line, a truncated .gz, empty stdin, a missing or unreadable path, a terminal on stdin.

Where a signature must be found, the line is a real one from
fixtures/corpus/dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log (or a real fixture is
read as is); the damage around it is synthetic and generated here.
"""

from __future__ import annotations

import gzip
import json
import os
import pty
import random
import select
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from triage import scan_paths
from triage.sources import LINE_CAP

from .conftest import ROOT, corpus

# Real lines (043-ghnote-bilstm-hailo8l-automri-partition-failure.log, lines 2 and 3).
MAPPING_FAILED = "  [error] Mapping Failed (allocation time: 1m 44s)"
NO_PARTITION = (
    "  Compiler could not find a valid partition to contexts. Most commom error is: Automri finished with too many "
    "resources on context_2 with 62/184 failures."
)


def scan(path: Path, packs):  # type: ignore[no-untyped-def]
    warnings: list[str] = []
    result = scan_paths([str(path)], packs, warn=warnings.append)
    return result, warnings


def first_lines(result) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {f.id: f.evidence[0].line for f in result.all_findings()}


def cli(*args: str, stdin: bytes | None = b"", timeout: float = 60, **kwargs) -> subprocess.CompletedProcess[bytes]:  # type: ignore[no-untyped-def]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "triage", *args], input=stdin, capture_output=True,
                          timeout=timeout, cwd=ROOT, env=env, **kwargs)


def sample(lines: list[str], newline: bytes = b"\n") -> bytes:
    return newline.join(line.encode("utf-8") for line in lines) + newline


LINES = ["compile start", MAPPING_FAILED, NO_PARTITION, "", "done"]


def test_lf_reference(packs, tmp_path: Path) -> None:
    log = tmp_path / "lf.log"
    log.write_bytes(sample(LINES))
    result, warnings = scan(log, packs)
    assert warnings == []
    assert first_lines(result) == {"dfc/partition-no-valid-contexts": 3, "dfc/allocation-failed": 2}
    assert result.run.inputs[0].lines == 5


@pytest.mark.parametrize("newline", [b"\r\n", b"\r\r\n"], ids=["crlf", "cr-cr-lf"])
def test_crlf_and_double_cr_keep_line_numbers(packs, tmp_path: Path, newline: bytes) -> None:
    log = tmp_path / "eol.log"
    log.write_bytes(sample(LINES, newline))
    result, _ = scan(log, packs)
    assert first_lines(result) == {"dfc/partition-no-valid-contexts": 3, "dfc/allocation-failed": 2}
    assert result.run.inputs[0].lines == 5
    ev = result.all_findings()[0].evidence[0]
    assert "\r" not in ev.text and all("\r" not in x for x in ev.before + ev.after)


def test_a_lone_cr_does_not_end_a_line(packs, tmp_path: Path) -> None:
    """As for `grep -n`: a progress bar redrawn with CRs is one line (its CRs shown as ␍), so the lines
    after it keep the numbers an editor shows."""
    log = tmp_path / "progress.log"
    log.write_bytes(b"Calibration:  50%|#####     | 32/64\rCalibration: 100%|##########| 64/64\n"
                    + sample(LINES[1:3]) + b"done\r")
    result, _ = scan(log, packs)
    assert first_lines(result) == {"dfc/partition-no-valid-contexts": 3, "dfc/allocation-failed": 2}
    assert result.run.inputs[0].lines == 4
    ev = next(f for f in result.all_findings() if f.id == "dfc/allocation-failed").evidence[0]
    assert ev.before == ["Calibration:  50%|#####     | 32/64\u240dCalibration: 100%|##########| 64/64"]
    assert ev.after[-1] == "done"


def test_crlf_split_across_read_blocks(packs, tmp_path: Path) -> None:
    from triage import sources

    block = sources.BLOCK_BYTES
    # put a CR exactly at the end of the first block and its LF at the start of the next
    head = b"x" * (block - 1) + b"\r\n"
    log = tmp_path / "split.log"
    log.write_bytes(head + sample(LINES[1:], b"\r\n"))
    result, _ = scan(log, packs)
    assert first_lines(result) == {"dfc/partition-no-valid-contexts": 3, "dfc/allocation-failed": 2}
    assert result.run.inputs[0].lines == 5


def test_real_ansi_coloured_log(packs) -> None:
    # a real hailo_sdk.core.log with colour codes around `Mapping Failed`
    log = corpus("logs/dfc/405-")
    raw = log.read_bytes()
    assert b"\x1b[1;41mMapping Failed" in raw
    result, _ = scan(log, packs)
    hit = next(f for f in result.all_findings() if f.id == "dfc/allocation-failed")
    texts = [e.text for e in hit.evidence]
    assert any("Mapping Failed (allocation time: 4s)" in t for t in texts)
    assert all("\x1b" not in t for t in texts)
    ansi_line = raw.split(b"\n").index(next(x for x in raw.split(b"\n") if b"\x1b[1;41mMapping Failed" in x)) + 1
    assert ansi_line in [e.line for e in hit.evidence]


def test_ansi_inside_the_signature_text(packs, tmp_path: Path) -> None:
    log = tmp_path / "ansi.log"
    log.write_bytes(b"\x1b[0m\x1b[31m  [error] \x1b[1mMapping\x1b[0m Failed\x1b[0m\n\x1b]0;title\x07ok\n")
    result, _ = scan(log, packs)
    assert first_lines(result) == {"dfc/allocation-failed": 1}
    assert result.all_findings()[0].evidence[0].text == "  [error] Mapping Failed"


def test_broken_utf8_and_latin1_bytes(packs, tmp_path: Path) -> None:
    log = tmp_path / "broken.log"
    log.write_bytes(b"\xff\xfe\xc3(caf\xe9 \xe2\x82\n" + MAPPING_FAILED.encode() + b" \xc0\xaf\n" + b"\xed\xa0\x80end\n")
    result, warnings = scan(log, packs)
    assert first_lines(result) == {"dfc/allocation-failed": 2}
    assert "\ufffd" in result.all_findings()[0].evidence[0].text
    assert result.run.inputs[0].lines == 3


def test_nul_bytes(packs, tmp_path: Path) -> None:
    log = tmp_path / "nul.log"
    log.write_bytes(b"\x00\x00\x00\n" + MAPPING_FAILED.encode() + b"\x00\n" + b"a\x00b\n" + NO_PARTITION.encode() + b"\n")
    result, _ = scan(log, packs)
    assert first_lines(result) == {"dfc/partition-no-valid-contexts": 4, "dfc/allocation-failed": 2}
    ev = next(f for f in result.all_findings() if f.id == "dfc/allocation-failed").evidence[0]
    assert "\x00" not in ev.text and all("\x00" not in x for x in ev.before + ev.after)


def test_binary_data_through_the_cli(tmp_path: Path) -> None:
    rng = random.Random(20240229)
    blob = bytes(rng.getrandbits(8) for _ in range(300_000))
    log = tmp_path / "firmware.log"
    log.write_bytes(blob + b"\n" + MAPPING_FAILED.encode() + b"\n" + blob[:5000])
    proc = cli("scan", "--no-store", "--format", "json", str(log))
    assert proc.returncode in (0, 1), proc.stderr
    assert b"Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert "dfc/allocation-failed" in [f["id"] for f in doc["findings"]]
    assert doc["run"]["inputs"][0]["bytes"] == log.stat().st_size


def test_binary_input_is_named_as_such(packs, tmp_path: Path) -> None:
    """A HEF or ELF passed by mistake gets a warning, so its empty result does not read as a clean run."""
    rng = random.Random(7)
    elf = b"\x7fELF\x02\x01\x01" + bytes(rng.choice([0, 0, 0, 1, 2, 3, 64, 65, 200]) for _ in range(9000))
    log = tmp_path / "model.hef"
    log.write_bytes(elf)
    _, warnings = scan(log, packs)
    assert [w for w in warnings if "binary data, not a text log" in w], warnings
    proc = cli("scan", "--no-store", str(log))
    assert proc.returncode == 0 and b"binary data, not a text log" in proc.stderr and b"Traceback" not in proc.stderr


def test_nul_filled_start_of_a_real_log_is_still_text(packs) -> None:
    """This vivado.log starts with 300 NUL bytes (the stretch a crash leaves in a file being written)."""
    real = ROOT / "fixtures/public/vivado/179-ATaylorCEngFIET-Hackster-ex-bd-segment-excluded.log"
    assert real.read_bytes().startswith(b"\x00" * 64)
    _, warnings = scan(real, packs)
    assert not [w for w in warnings if "binary" in w], warnings


def test_ten_megabyte_line_is_capped_and_numbering_continues(packs, tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    with log.open("wb") as fh:
        fh.write(b"compile start\n")
        fh.write(MAPPING_FAILED.encode() + b" " + b"x" * (10 * 1024 * 1024) + b"\n")  # line 2: 10 MiB
        fh.write(b"between\n")
        fh.write(NO_PARTITION.encode() + b"\n")  # line 4
        fh.write(b"done\n")
    result, warnings = scan(log, packs)
    capped = [w for w in warnings if "line longer than" in w]
    assert capped == [f"{log}:2: line longer than {LINE_CAP // (1 << 20)} MiB; matched its first MiB only"]
    assert first_lines(result) == {"dfc/partition-no-valid-contexts": 4, "dfc/allocation-failed": 2}
    assert result.run.inputs[0].lines == 5
    assert result.run.inputs[0].bytes == log.stat().st_size
    ev = next(f for f in result.all_findings() if f.id == "dfc/allocation-failed").evidence[0]
    assert ev.text.endswith(" … (cut at 2000 characters)")  # evidence is bounded too, and says so
    assert len(ev.text) == 2000 + len(" … (cut at 2000 characters)")


def test_long_unexplained_error_lines_do_not_hang_the_scan(tmp_path: Path) -> None:
    """Error lines no cause explains are fingerprinted; a 1 MiB `ERROR xxx…` line without a slash once took
    hours there (the path mask retried at every character). A hang guard: the whole CLI gets a minute."""
    log = tmp_path / "long-errors.log"
    log.write_bytes(b"ERROR " + b"x" * (LINE_CAP - 10) + b"\n" + b"ERROR " + b"yz-" * 100_000 + b"\n"
                    + b"ERROR " + b"a/" * 200_000 + b"\n")
    result = cli("scan", "--no-store", "--format", "json", str(log), timeout=60)
    assert result.returncode == 1, result.stderr[-2000:]
    unexplained = json.loads(result.stdout)["unexplained"]
    assert [u["line"] for u in unexplained] == [1, 2, 3]


def test_long_metric_lines_and_script_statements_do_not_hang_the_scan(tmp_path: Path) -> None:
    """Utilization lists (`SCs: 326/384, ...`) and model-script commands are read with regexes of their own;
    runs of words or spaces without the expected `:` or `=` once made them quadratic and cubic."""
    log = tmp_path / "compile.log"
    log.write_bytes(b"SCs: " + b"a " * 400_000 + b"1/2\n" + b"TOTAL: " + b"b " * 400_000 + b"(5%)\n")
    script = tmp_path / "model.alls"
    script.write_bytes(b"x" + b" " * 500_000 + b"y\n" + b"a, " * 100_000 + b"= f(1)\n"
                       + b"performance_param(compiler_optimization_level=max)\n")
    result = cli("scan", "--no-store", "--format", "json", str(log), str(script), timeout=60)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    doc = json.loads(result.stdout)
    assert [i["lines"] for i in doc["run"]["inputs"]] == [2, 3]


def test_long_line_signature_after_the_first_mib_is_not_matched(packs, tmp_path: Path) -> None:
    # documents the cap: text beyond the first MiB of a line is not looked at
    log = tmp_path / "late.log"
    log.write_bytes(b"y" * (2 * LINE_CAP) + MAPPING_FAILED.encode() + b"\nnext\n")
    result, warnings = scan(log, packs)
    assert first_lines(result) == {}
    assert any(":1: line longer than" in w for w in warnings)
    assert result.run.inputs[0].lines == 2


def test_truncated_gzip_scans_what_was_readable(packs, tmp_path: Path) -> None:
    rng = random.Random(7)
    filler = [f"INFO: [HLS 200-10] step {i} {rng.getrandbits(64):x}" for i in range(20_000)]
    text = "\n".join(["start", MAPPING_FAILED, *filler, NO_PARTITION]) + "\n"
    data = gzip.compress(text.encode())
    log = tmp_path / "build.log.gz"
    log.write_bytes(data[: len(data) // 2])
    result, warnings = scan(log, packs)
    truncated = [w for w in warnings if "input ends early" in w]
    assert len(truncated) == 1 and truncated[0].startswith(f"{log}: input ends early (truncated gzip)")
    assert first_lines(result) == {"dfc/allocation-failed": 2}  # the cut-off tail is not invented
    lines = result.run.inputs[0].lines
    assert 2 < lines < len(filler)
    # the count in the warning is taken before the cut-off partial last line is flushed
    said = int(truncated[0].split("scanned the ")[1].split()[0])
    assert said in (lines - 1, lines)


def test_truncated_gzip_through_the_cli(tmp_path: Path) -> None:
    data = gzip.compress(("\n".join([MAPPING_FAILED] * 5000) + "\n").encode())
    log = tmp_path / "cut.log.gz"
    log.write_bytes(data[:-20])
    proc = cli("scan", "--no-store", "--format", "json", str(log))
    assert proc.returncode == 1
    assert b"Traceback" not in proc.stderr
    assert b"input ends early" in proc.stderr
    assert json.loads(proc.stdout)["findings"][0]["id"] == "dfc/allocation-failed"


def test_gzip_header_only(tmp_path: Path) -> None:
    log = tmp_path / "header.log.gz"
    log.write_bytes(b"\x1f\x8b")
    proc = cli("scan", "--no-store", "--format", "json", str(log))
    assert proc.returncode in (0, 1)
    assert b"Traceback" not in proc.stderr
    assert b"starts like gzip but does not decompress; read as plain text" in proc.stderr
    assert json.loads(proc.stdout)["run"]["inputs"][0]["bytes"] == 2  # the two bytes are all there is


@pytest.mark.parametrize("via", ["stdin", "file"])
def test_text_that_starts_with_the_gzip_magic_is_read_as_text(tmp_path: Path, via: str) -> None:
    """Found by the fuzz run: such input used to be dropped as a broken gzip, with the error line in it."""
    data = b"\x1f\x8b" + MAPPING_FAILED.encode() + b"\n"
    if via == "stdin":
        proc = cli("scan", "--no-store", "--format", "json", "-", stdin=data)
    else:
        log = tmp_path / "odd.log"
        log.write_bytes(data)
        proc = cli("scan", "--no-store", "--format", "json", str(log))
    assert proc.returncode == 1, proc.stderr
    assert b"read as plain text" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["findings"][0]["id"] == "dfc/allocation-failed"
    assert doc["run"]["inputs"][0]["bytes"] == len(data)


@pytest.mark.parametrize("data", [b"", b"\n", b"  \r\n\t\n"], ids=["nothing", "newline", "whitespace"])
def test_empty_stdin_in_a_real_process_exits_2_and_stores_nothing(tmp_path: Path, data: bytes) -> None:
    """What `triage scan $UNSET_VAR` becomes in CI: a gate must not go green on a log that never came."""
    db = tmp_path / "runs.db"
    proc = cli("scan", "--db", str(db), "--format", "json", stdin=data)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.splitlines()[0] == "error: nothing to scan: standard input is empty"
    assert "--allow-empty" in err and "Traceback" not in err
    assert not db.exists() or sqlite3.connect(db).execute("select count(*) from runs").fetchone()[0] == 0
    allowed = cli("scan", "--no-store", "--format", "json", "--allow-empty", "-", stdin=data)
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["run"]["inputs"][0]["bytes"] == len(data)


def test_empty_file_is_an_input_error_and_among_others_a_warning(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    alone = cli("scan", "--no-store", str(empty))
    assert alone.returncode == 2
    assert alone.stderr.decode().splitlines()[0] == f"error: nothing to scan: {empty} is empty"
    good = tmp_path / "good.log"
    good.write_bytes(sample(LINES))
    both = cli("scan", "--no-store", "--format", "json", str(empty), str(good))
    assert both.returncode == 1
    assert f"warning: {empty}: empty" in both.stderr.decode()


def test_stdin_without_dash_when_piped() -> None:
    proc = cli("scan", "--no-store", "--format", "json", stdin=sample(LINES))
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["run"]["inputs"][0]["path"] == "<stdin>"
    assert doc["findings"][0]["id"] == "dfc/partition-no-valid-contexts"


def test_missing_path_among_good_ones_stops_before_scanning(tmp_path: Path) -> None:
    good = tmp_path / "good.log"
    good.write_bytes(sample(LINES))
    proc = cli("scan", "--no-store", str(good), str(tmp_path / "missing.log"))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.splitlines()[0] == f"error: no such file or folder: {tmp_path / 'missing.log'}"
    assert "Traceback" not in err
    assert proc.stdout == b""


def test_unreadable_content_is_one_line_error() -> None:
    # /proc/self/mem opens for anyone (root included) but reading offset 0 fails with EIO
    if not Path("/proc/self/mem").exists():
        pytest.skip("needs /proc")
    proc = cli("scan", "--no-store", "/proc/self/mem")
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == "error: cannot read /proc/self/mem: Input/output error"


def test_terminal_on_stdin_without_path_prints_usage_and_exits_2() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pid, fd = pty.fork()
    if pid == 0:  # child: stdin, stdout and stderr are the terminal
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "triage", "scan", "--no-store"], env)
    output = b""
    deadline = time.monotonic() + 60
    status = None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            output += chunk
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail(f"triage scan waited on the terminal: {output!r}")
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            output += chunk
    except OSError:
        pass
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 2
    assert b"usage: triage scan" in output
    assert b"Traceback" not in output
