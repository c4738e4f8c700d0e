"""What users really hand over, read as the bytes of a text: gzip, zstd, xz and bz2 (streamed, memory bounded
by the read size, linear in the output), and UTF-16 text (PowerShell's default) turned into UTF-8.

Fail closed: a stream that cannot be read to its end keeps every byte it gave and then raises `Unreadable` on
every read (the reader warns and says how far it got); trailing padding or garbage after a complete stream is
noted, never dropped silently. Input that starts with the two gzip magic bytes but does not decompress from its
first bytes is read as it is, as text, with a note: those bytes are all there is.
"""

from __future__ import annotations

import bz2
import codecs
import io
import lzma
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO

CHUNK = 1 << 16  # compressed bytes read at a time
ZSTD_READ = 1 << 14  # decompressed bytes asked of zstd at a time: what a corrupt frame's end can cost

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"
BZ2_MAGIC = (b"BZh", (b"1AY&SY", b"\x17rE8P\x90"))  # "BZh" + level digit + a block or end-of-stream magic
MAGIC_BYTES = 10  # enough to recognise any compression
SNIFF_BYTES = 258  # a BOM and the 128 code units after it


class Unreadable(EOFError):
    """The stream could not be read to its end; the message says why (`truncated gzip`, `bad CRC`, ...)."""


def codec_of(head: bytes) -> str | None:
    """`gzip`, `zstd`, `xz` or `bz2` from a stream's first bytes, else None."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(BZ2_MAGIC[0]) and head[3:4].isdigit() and head[3:4] != b"0" and head[4:10] in BZ2_MAGIC[1]:
        return "bz2"
    return None


def bom_of(head: bytes) -> str | None:
    """The text encoding a byte-order mark announces (UTF-16 either way, or UTF-8's), else None.

    FF FE also starts plenty of binary junk: UTF-16 is believed when the text after the mark is what compile
    logs are, mostly ASCII, so at least half of its code units have a zero high byte.
    """
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    for bom, high in ((codecs.BOM_UTF16_LE, 1), (codecs.BOM_UTF16_BE, 0)):
        if head.startswith(bom):
            units = head[2:2 + 2 * 128]
            pairs = len(units) // 2
            if pairs and sum(1 for i in range(pairs) if units[2 * i + high] == 0) * 2 >= pairs:
                return "utf-16"
            return None
    return None


def needs_decoding(head: bytes) -> bool:
    """Whether bytes at an offset are not the text itself (compressed, or not UTF-8): no range scans then."""
    return codec_of(head) is not None or bom_of(head) not in (None, "utf-8-sig")


class _Raw(io.RawIOBase):
    """Base of the decoding layers: `_fill(size)` returns up to `size` bytes, b"" at the end."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.failure: str | None = None  # raised once what was read before it has been returned

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._fill(len(view))
        if not data and self.failure is not None:  # raised on every read from here on: never a quiet end
            raise Unreadable(self.failure)
        view[: len(data)] = data
        return len(data)

    def _fill(self, size: int) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError


class _Members(_Raw):
    """gzip, xz or bz2: members (streams) one after another, each through a fresh decompressor."""

    def __init__(self, raw: BinaryIO, codec: str, notes: list[str]) -> None:
        super().__init__(notes)
        self.raw = raw
        self.codec = codec
        self.new: Callable[[], Any] = {
            "gzip": _GzipMember,
            "xz": lambda: lzma.LZMADecompressor(lzma.FORMAT_AUTO),
            "bz2": bz2.BZ2Decompressor,
        }[codec]
        self.magic = {"gzip": GZIP_MAGIC, "xz": XZ_MAGIC, "bz2": b"BZh"}[codec]
        self.decoder = self.new()
        self.pending = b""  # compressed input not handed to the decoder yet
        self.head = bytearray()  # what was read before the first decompressed byte, in case it is not compressed
        self.produced = 0
        self.as_text = False
        self.done = False

    def _read_raw(self) -> bytes:
        data = self.raw.read(CHUNK)
        if self.produced == 0 and not self.as_text:
            self.head += data
        return data

    def _fill(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size and not self.done:
            if self.as_text:
                data = self.pending or self.raw.read(min(CHUNK, size - len(out)))
                self.pending = b""
                self.done = not data
                out += data
                continue
            if self.decoder.eof:
                bad = getattr(self.decoder, "bad", None)
                self.failure = self.failure or bad  # said once every byte has been returned
                self._next_member()
                continue
            if not self.pending and (self.codec == "gzip" or self.decoder.needs_input):
                self.pending = self._read_raw()
                if not self.pending:
                    if self.produced == 0 and self.codec == "gzip":
                        self._as_text("nothing decompressed")
                        continue
                    self.done = True
                    self.failure = f"truncated {self.codec}"
                    break
            try:
                # at most CHUNK per call: a check that fails at a block's end costs that call's output only
                piece = self._step(min(CHUNK, size - len(out)))
            except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
                if self.produced == 0 and self.codec == "gzip":  # two magic bytes prove little: text it is
                    self._as_text(str(exc))
                    continue
                self.failure = _reason(self.codec, exc)
                self.done = True
                break
            self.produced += len(piece)
            if self.produced:
                self.head = bytearray()
            out += piece
        return bytes(out)

    def _step(self, room: int) -> bytes:
        if self.codec == "gzip":
            piece = self.decoder.decompress(self.pending, room)
            self.pending = self.decoder.unconsumed_tail
            return piece
        data, self.pending = (self.pending, b"") if self.decoder.needs_input else (b"", self.pending)
        return self.decoder.decompress(data, room)

    def _next_member(self) -> None:
        """After a complete member: another one, zero padding (ignored, noted), or trailing data (noted)."""
        rest = self.decoder.unused_data + self.pending
        self.pending = b""
        while len(rest) < len(self.magic):
            more = self.raw.read(CHUNK)
            if not more:
                break
            rest += more
        if not rest:
            self.done = True
            return
        if rest.startswith(self.magic):
            self.decoder = self.new()
            self.pending = rest
            return
        extra, zeros = len(rest), not rest.strip(b"\x00")
        while more := self.raw.read(CHUNK):
            extra += len(more)
            zeros = zeros and not more.strip(b"\x00")
        what = "zero padding" if zeros else "data that is not"
        self.notes.append(f"{extra} bytes after the {self.codec} data ignored ({what}{'' if zeros else ' ' + self.codec})")
        self.done = True

    def _as_text(self, why: str) -> None:
        self.as_text = True
        self.pending, self.head = bytes(self.head), bytearray()  # every byte read so far, none decompressed
        self.notes.append(f"starts like {self.codec} but does not decompress; read as plain text")

    def close(self) -> None:
        self.raw.close()
        super().close()


class _GzipMember:
    """One gzip member with the decompressor interface of zlib's: the header and the trailer are read here and
    the deflate data by raw zlib, so a failed CRC or length check is known after the data has been handed out
    (`bad`), instead of as an exception that takes the call's output with it."""

    def __init__(self) -> None:
        self.header = b""
        self.inflate: Any = None
        self.crc = 0
        self.size = 0
        self.trailer = b""
        self.eof = False
        self.unused_data = b""
        self.unconsumed_tail = b""
        self.bad: str | None = None

    def decompress(self, data: bytes, max_length: int) -> bytes:
        self.unconsumed_tail = b""
        if self.inflate is None:
            self.header += data
            end = _gzip_header_end(self.header)
            if end is None:
                return b""
            data, self.header = self.header[end:], b""
            self.inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        out = b""
        if not self.inflate.eof:
            out = self.inflate.decompress(data, max_length)
            self.crc = zlib.crc32(out, self.crc)
            self.size += len(out)
            if not self.inflate.eof:
                self.unconsumed_tail = self.inflate.unconsumed_tail
                return out
            data = self.inflate.unused_data
        self.trailer += data
        if len(self.trailer) >= 8:
            crc, size = int.from_bytes(self.trailer[:4], "little"), int.from_bytes(self.trailer[4:8], "little")
            if crc != self.crc:
                self.bad = "gzip data fails its CRC check: it is corrupt"
            elif size != self.size & 0xFFFFFFFF:
                self.bad = "gzip data fails its length check: it is corrupt"
            self.unused_data, self.trailer, self.eof = self.trailer[8:], b"", True
        return out


def _gzip_header_end(head: bytes) -> int | None:
    """Where RFC 1952's member header ends in `head` (None: not all of it yet); zlib.error when it is not one."""
    if len(head) < 10:
        return None
    if head[:2] != GZIP_MAGIC or head[2] != 8 or head[3] & 0xE0:
        raise zlib.error("not a gzip header")
    flags, pos = head[3], 10
    if flags & 4:  # FEXTRA
        if len(head) < pos + 2:
            return None
        pos += 2 + int.from_bytes(head[pos:pos + 2], "little")
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            nul = head.find(b"\x00", pos)
            if nul < 0:
                if len(head) > (1 << 20):
                    raise zlib.error("gzip header field without its end")
                return None
            pos = nul + 1
    if flags & 2:  # FHCRC
        pos += 2
    return pos if len(head) >= pos else None


class _Zstd(_Raw):
    """zstd frames one after another. The library's reader bounds each read's output; a walk over the frame and
    block headers (no decompression) tells a complete stream from a cut-off one and finds trailing data."""

    def __init__(self, raw: BinaryIO, notes: list[str]) -> None:
        import zstandard

        super().__init__(notes)
        self.raw = raw
        self.walk = _ZstdFrames()
        self.reader = zstandard.ZstdDecompressor().stream_reader(_Tap(raw, self.walk), read_across_frames=True,
                                                                 closefd=False)
        self.errors: tuple[type[BaseException], ...] = (zstandard.ZstdError, OSError)
        self.produced = 0
        self.done = False

    def _fill(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size and not self.done:
            try:
                piece = self.reader.read(min(ZSTD_READ, size - len(out)))
            except self.errors as exc:
                self.done = True
                if self.walk.trailing:
                    self._trailing()
                else:
                    self.failure = _reason("zstd", exc)
                break
            if not piece:
                self.done = True
                self.walk.finish()
                if self.walk.trailing:
                    self._trailing()
                elif not self.walk.complete:
                    self.failure = "truncated zstd"
                break
            self.produced += len(piece)
            out += piece
        return bytes(out)

    def _trailing(self) -> None:
        extra, zeros = self.walk.trailing, self.walk.trailing_zeros
        while more := self.raw.read(CHUNK):
            extra += len(more)
            zeros = zeros and not more.strip(b"\x00")
        what = "zero padding" if zeros else "data that is not zstd"
        self.notes.append(f"{extra} bytes after the zstd data ignored ({what})")

    def close(self) -> None:
        self.raw.close()
        super().close()


class _Tap(io.RawIOBase):
    """Hands the zstd reader the compressed bytes, through the frame walk; stops at trailing data."""

    def __init__(self, raw: BinaryIO, walk: _ZstdFrames) -> None:
        self.raw = raw
        self.walk = walk

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.walk.trailing:
            return 0
        data = self.raw.read(min(len(buffer), CHUNK))
        keep = self.walk.feed(data)
        memoryview(buffer).cast("B")[:keep] = data[:keep]
        return keep


class _ZstdFrames:
    """RFC 8878's frame layout, walked header by header: where each frame ends, whether the last one did."""

    SKIPPABLE = range(0x184D2A50, 0x184D2A60)

    def __init__(self) -> None:
        self.need = 0  # content bytes to pass before the next header
        self.buf = b""  # the start of a header cut by a read
        self.state = "frame"  # frame | block | checksum
        self.checksum = False
        self.complete = True  # the walk stands between two frames
        self.trailing = 0  # bytes after the last frame that are not a frame
        self.trailing_zeros = True

    def feed(self, data: bytes) -> int:
        """Walk `data`; return how many of its bytes belong to zstd frames (the rest is trailing data)."""
        if self.trailing:
            self._trail(data)
            return 0
        carried = len(self.buf)
        buf, self.buf = self.buf + data, b""
        pos = 0
        while pos < len(buf):
            if self.need:
                step = min(self.need, len(buf) - pos)
                self.need -= step
                pos += step
                continue
            used = self._header(buf[pos:pos + 18])
            if used == 0:
                self.buf = buf[pos:]
                break
            if used < 0:
                self.trailing_zeros = True
                self._trail(buf[pos:])
                return max(0, pos - carried)
            pos += used
        return len(data)

    def finish(self) -> None:
        """At the end of the input: a cut-off header between frames is trailing data, inside one a cut."""
        if self.buf and self.state == "frame" and not self.need and not self.trailing:
            self._trail(self.buf)
        elif self.buf or self.need:
            self.complete = False

    def _trail(self, data: bytes) -> None:
        self.trailing += len(data)
        self.trailing_zeros = self.trailing_zeros and not data.strip(b"\x00")

    def _header(self, b: bytes) -> int:
        """Bytes one header at the start of `b` uses; 0 when `b` holds only its start; -1: not zstd."""
        if self.state == "frame":
            if len(b) < 4:
                skippable = 0x50 <= b[0] <= 0x5F and b"\x2a\x4d\x18".startswith(b[1:])
                return 0 if ZSTD_MAGIC.startswith(b) or skippable else -1
            magic = int.from_bytes(b[:4], "little")
            if magic in self.SKIPPABLE:
                if len(b) < 8:
                    return 0
                self.need = int.from_bytes(b[4:8], "little")
                return 8
            if b[:4] != ZSTD_MAGIC:
                return -1
            if len(b) < 5:
                return 0
            fhd = b[4]
            single, dict_flag, fcs_flag = fhd >> 5 & 1, fhd & 3, fhd >> 6
            size = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
            if len(b) < size:
                return 0
            self.checksum = bool(fhd >> 2 & 1)
            self.state, self.complete = "block", False
            return size
        if self.state == "block":
            if len(b) < 3:
                return 0
            header = int.from_bytes(b[:3], "little")
            last, kind, size = header & 1, header >> 1 & 3, header >> 3
            self.need = 1 if kind == 1 else size
            if last:
                self.state = "checksum" if self.checksum else "frame"
                self.complete = not self.checksum
            return 3
        if len(b) < 4:
            return 0
        self.state, self.complete = "frame", True
        return 4


def _reason(codec: str, exc: BaseException) -> str:
    text = str(exc).lower()
    if "crc" in text or "check" in text or "checksum" in text:
        return f"{codec} data fails its check (corrupt near the end)"
    return f"corrupt {codec} data: {str(exc)[:120] or exc.__class__.__name__}"


class _Utf16(_Raw):
    """UTF-16 text (either byte order, with its BOM) re-encoded as UTF-8, streamed."""

    def __init__(self, raw: BinaryIO, notes: list[str]) -> None:
        super().__init__(notes)
        self.raw = raw
        self.decoder = codecs.getincrementaldecoder("utf-16")("replace")
        self.pending = b""
        self.done = False
        notes.append("read as UTF-16 text")

    def _fill(self, size: int) -> bytes:
        while len(self.pending) < size and not self.done:
            data = self.raw.read(CHUNK)
            self.done = not data
            self.pending += self.decoder.decode(data, final=self.done).encode("utf-8", "surrogatepass")
        out, self.pending = self.pending[:size], self.pending[size:]
        return out

    def close(self) -> None:
        self.raw.close()
        super().close()


class Decoded(io.BufferedReader):
    """The outermost stream: buffered, with the notes the layers left (read them after the last read)."""

    def __init__(self, raw: io.RawIOBase, notes: list[str]) -> None:
        super().__init__(raw, buffer_size=1 << 20)
        self.notes = notes


def text_stream(buffered: io.BufferedReader) -> io.BufferedReader:
    """`buffered` as text bytes: decompressed when its first bytes say so, then UTF-16 turned into UTF-8."""
    notes: list[str] = []
    head = _peek(buffered)
    codec = codec_of(head)
    stream: io.BufferedReader = buffered
    if codec == "zstd":
        stream = Decoded(_Zstd(buffered, notes), notes)  # type: ignore[arg-type]
    elif codec is not None:
        stream = Decoded(_Members(buffered, codec, notes), notes)  # type: ignore[arg-type]
    inner = _peek(stream, SNIFF_BYTES)
    if bom_of(inner) == "utf-16":
        return Decoded(_Utf16(stream, notes), notes)  # type: ignore[arg-type]
    if bom_of(inner) == "utf-8-sig":
        stream.read(len(codecs.BOM_UTF8))
    if stream is buffered:
        return buffered
    return stream


def _peek(stream: io.BufferedReader, size: int = MAGIC_BYTES) -> bytes:
    """The first bytes, or none when reading fails (the first read raises the failure again, to the reader)."""
    try:
        return stream.peek(size)[:size]
    except EOFError:
        return b""
