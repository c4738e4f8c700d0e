"""Compressed and UTF-16 logs as users really produce them: read completely, or said so — never a silent pass.

The log is the real failing DFC compile of fixtures/corpus/dfc/cases/043-…; the copies (gzip with padding or a
bad CRC, zstd, xz, bz2, UTF-16, cut short, with junk after) are derived from it here.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from triage import scan_paths
from triage.decode import Unreadable, codec_of
from triage.sources import Source, open_binary

from .conftest import ROOT, corpus

REAL = corpus("dfc/cases/043-")
TEXT = REAL.read_bytes()


def compressed(codec: str, data: bytes = TEXT) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "zstd":
        return zstandard.ZstdCompressor(write_checksum=True).compress(data)
    if codec == "xz":
        return lzma.compress(data)
    return bz2.compress(data)


CODECS = ["gzip", "zstd", "xz", "bz2"]


def scan(path: Path, packs):  # type: ignore[no-untyped-def]
    warnings: list[str] = []
    return scan_paths([str(path)], packs, warn=warnings.append), warnings


def found(result) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    return [(f.id, f.evidence[0].line) for f in result.all_findings()]


@pytest.fixture(scope="module")
def plain(packs):  # type: ignore[no-untyped-def]
    result = scan_paths([str(REAL)], packs)
    assert result.findings and result.run.status == "failed"
    return result


@pytest.mark.parametrize("codec", CODECS)
def test_each_compression_reads_like_the_plain_log(packs, plain, tmp_path: Path, codec: str) -> None:
    path = tmp_path / f"compile.log.{codec}"
    path.write_bytes(compressed(codec))
    result, warnings = scan(path, packs)
    assert warnings == []
    assert found(result) == found(plain)
    assert (result.run.inputs[0].lines, result.run.inputs[0].bytes) == (plain.run.inputs[0].lines, len(TEXT))


@pytest.mark.parametrize("codec", CODECS)
def test_several_members_or_frames_are_read_one_after_another(packs, plain, tmp_path: Path, codec: str) -> None:
    half = TEXT.index(b"\n", len(TEXT) // 2) + 1
    path = tmp_path / "two.log"
    path.write_bytes(compressed(codec, TEXT[:half]) + compressed(codec, TEXT[half:]))
    result, warnings = scan(path, packs)
    assert warnings == [] and found(result) == found(plain)


@pytest.mark.parametrize("codec", CODECS)
def test_a_cut_copy_keeps_what_it_read_and_says_it_is_cut(packs, tmp_path: Path, codec: str) -> None:
    big = TEXT * 4000  # 2.7 MB: several blocks of every codec, so the cut falls after some of them
    data = compressed(codec, big)
    path = tmp_path / "cut.log"
    path.write_bytes(data[: len(data) * 3 // 4])
    result, warnings = scan(path, packs)
    cut = [w for w in warnings if "input ends early" in w]
    assert len(cut) == 1 and (f"truncated {codec}" in cut[0] or "corrupt" in cut[0]), warnings
    assert result.findings  # the lines before the cut are scanned
    assert 0 < result.run.inputs[0].lines < big.count(b"\n")


@pytest.mark.parametrize("codec", CODECS)
def test_padding_and_junk_after_the_data_are_noted(packs, plain, tmp_path: Path, codec: str) -> None:
    for tail, what in ((b"\x00" * 4096, "zero padding"), (b"garbage!\n", "not")):
        path = tmp_path / f"tail-{len(tail)}.log"
        path.write_bytes(compressed(codec) + tail)
        result, warnings = scan(path, packs)
        assert found(result) == found(plain), (codec, tail[:8])
        assert result.run.inputs[0].lines == plain.run.inputs[0].lines
        assert [w for w in warnings if f"{len(tail)} bytes after the {codec} data ignored" in w and what in w], warnings


def test_a_gzip_with_a_bad_crc_keeps_its_last_lines(packs, plain, tmp_path: Path) -> None:
    """The CRC is checked at the end, where the error lines are: every line is scanned, and the warning says the
    data fails its check."""
    data = bytearray(gzip.compress(TEXT * 8))
    data[-8] ^= 0xFF  # the CRC32 of the trailer
    path = tmp_path / "crc.log.gz"
    path.write_bytes(bytes(data))
    result, warnings = scan(path, packs)
    assert result.run.inputs[0].lines == (TEXT * 8).count(b"\n")
    assert [w for w in warnings if "gzip data fails its CRC check" in w]
    assert [(f.id, f.count) for f in result.all_findings()] == [(f.id, 8 * f.count) for f in plain.all_findings()]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_with_a_bom_reads_like_the_plain_log(packs, plain, tmp_path: Path, encoding: str) -> None:
    """PowerShell's `>` writes UTF-16 LE with a BOM; lines and findings are those of the UTF-8 original."""
    bom = "\ufeff".encode(encoding)
    path = tmp_path / "ps.log"
    path.write_bytes(bom + TEXT.decode("utf-8").encode(encoding))
    result, warnings = scan(path, packs)
    assert found(result) == found(plain)
    assert result.run.inputs[0].lines == plain.run.inputs[0].lines
    assert warnings == [f"{path}: read as UTF-16 text"]
    gz = tmp_path / "ps.log.gz"  # and inside a gzip too
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert found(scan(gz, packs)[0]) == found(plain)


def test_utf8_bom_is_not_part_of_the_first_line(packs, tmp_path: Path) -> None:
    path = tmp_path / "bom.log"
    first = TEXT.split(b"\n", 1)[0]
    path.write_bytes(b"\xef\xbb\xbf" + TEXT)
    result, _ = scan(path, packs)
    assert result.run.inputs[0].bytes == len(TEXT)
    with open_binary(Source(str(path), "log")) as stream:
        assert stream.read(len(first)) == first


def test_binary_junk_that_starts_like_utf16_is_read_as_bytes(packs, tmp_path: Path) -> None:
    path = tmp_path / "junk.log"
    path.write_bytes(b"\xff\xfe\xc3(caf\xe9 \xe2\x82\n" + TEXT)
    result, warnings = scan(path, packs)
    assert warnings == [] and result.findings


def test_magic_bytes_are_recognised_exactly() -> None:
    assert [codec_of(compressed(c)[:10]) for c in CODECS] == CODECS
    assert codec_of(b"BZh is a word\n") is None and codec_of(b"INFO: start") is None


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_decompression_bomb_is_read_in_bounded_memory(tmp_path: Path, codec: str) -> None:
    """256 MiB of zeros in a few hundred KB: the reader's memory stays near its block size (it once copied its
    pending buffer on every read). Measured as the peak RSS of a scan in its own process."""
    path = tmp_path / "bomb.log"
    with open(path, "wb") as fh:
        if codec == "gzip":
            with gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=9) as gz:
                for _ in range(256):
                    gz.write(b"\x00" * (1 << 20))
        else:
            with zstandard.ZstdCompressor(level=3).stream_writer(fh, closefd=False) as z:
                for _ in range(256):
                    z.write(b"\x00" * (1 << 20))
    assert path.stat().st_size < 2 << 20
    code = ("import resource, sys\nfrom triage.sources import Source, open_binary\n"
            "s = open_binary(Source(sys.argv[1], 'log'))\nn = 0\n"
            "while chunk := s.read1(1 << 20):\n    n += len(chunk)\n"
            # VmHWM is this process's own peak: ru_maxrss also counts the parent's pages a vfork shared
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
            "print(n, int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, check=True)
    total, peak_kib = map(int, out.stdout.split())
    assert total == 256 << 20
    assert peak_kib < 64 * 1024, f"peak RSS {peak_kib} KiB"  # about 20 MiB; copying the pending buffer: 256


def test_reading_past_an_error_raises_once_what_was_read_is_returned(tmp_path: Path) -> None:
    data = gzip.compress(TEXT)
    path = tmp_path / "cut.gz"
    path.write_bytes(data[:-12])
    stream = open_binary(Source(str(path), "log"))
    got = io.BytesIO()
    with pytest.raises(Unreadable, match="truncated gzip"):
        while chunk := stream.read1(4096):
            got.write(chunk)
    assert TEXT.startswith(got.getvalue()) and len(got.getvalue()) > len(TEXT) // 2
    assert resource  # (imported for the bomb test)


def test_a_folder_scan_picks_compressed_logs_and_reports(packs, plain, tmp_path: Path) -> None:
    for codec, ext in (("zstd", "zst"), ("xz", "xz"), ("bz2", "bz2")):
        (tmp_path / f"compile-{codec}.log.{ext}").write_bytes(compressed(codec))
    result, warnings = scan(tmp_path, packs)
    assert len(result.run.inputs) == 3 and warnings == []
    assert all(i.kind == "log" and i.lines == plain.run.inputs[0].lines for i in result.run.inputs)
