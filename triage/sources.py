"""Find the inputs of a run and stream them as blocks of clean text lines.

Memory is bounded by the block size, whatever the size of the log: files are read in binary blocks,
cut at line ends, decoded with replacement, stripped of ANSI escapes.

Lines are counted as `grep -n` counts them, so every `file:line` points where an editor, `sed -n` or
GitHub shows that line: a LF ends a line, the CRs just before it are part of the line end (CRLF, and the
CR CR LF that Windows tools write through a second conversion), and a lone CR inside a line (a progress
bar redrawing itself) is shown as `␍`.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO


from .decode import Unreadable, text_stream
from .display import shown_path
from .errors import InputError
from .quotes import fold_bytes

BLOCK_BYTES = 1 << 20
LINE_CAP = 1 << 20  # matching looks at the first MiB of a longer line
STDIN = "-"

# CSI and OSC sequences, two-character escapes, and any stray ESC left over (a cut-off sequence)
ANSI_RE = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\x1b")
CR_RE = re.compile(rb"\r+\n")  # a line end; any CR left after it is inside a line
CR_MARK = "\u240d".encode()  # ␍

# Files picked when walking a folder (an explicitly named file is always scanned).
RECOGNISED = (
    "*.log", "*.log.gz", "*.log.zst", "*.log.xz", "*.log.bz2", "*.rpt", "*.rpt.gz", "*.rpt.zst", "*.rpt.xz",
    "*.rpt.bz2", "*csynth.xml", "*.alls", "hls4ml_config.yml",
    "hls4ml_config.yaml", "hls4ml_config.json", "runme.log", "vivado*.log", "vitis_hls.log",
    "*_utilization*.txt", "*utilization_report*.txt", "*.log.[0-9]", "*.ipynb",
)
REPORT_GLOBS = ("*.rpt", "*.rpt.gz", "*.rpt.zst", "*.rpt.xz", "*.rpt.bz2", "*csynth.xml", "*utilization*.txt", "*timing*.txt")
CONFIG_GLOBS = ("*.alls", "*.yml", "*.yaml", "*.json", "*.py", "*.tcl", "*.toml")


def kind_of(name: str) -> str:
    base = os.path.basename(name).lower()
    if any(fnmatch.fnmatch(base, g) for g in REPORT_GLOBS):
        return "report"
    if any(fnmatch.fnmatch(base, g) for g in CONFIG_GLOBS):
        return "config"
    return "log"


def recognised(name: str) -> bool:
    base = os.path.basename(name)
    return any(fnmatch.fnmatch(base, g) for g in RECOGNISED)


@dataclass
class Source:
    """One input of a run: a file path, or '-' for standard input."""

    path: str
    kind: str
    size: int = 0

    @property
    def display(self) -> str:
        """The name shown and stored: a file name that is not UTF-8 shows U+FFFD (`path` keeps its bytes)."""
        return "<stdin>" if self.path == STDIN else shown_path(self.path)


@dataclass
class Block:
    """Complete lines of one source: `data` is their cleaned bytes (LF line ends, no ANSI escapes), with a
    final LF. The gate reads the bytes; only the lines it picks are decoded (`text` decodes them all)."""

    data: bytes
    first_line: int
    n_lines: int = -1  # counted by whoever reads the block first (the gate counts them as it goes)

    @property
    def text(self) -> str:
        return decode(self.data)

    def line_count(self) -> int:
        if self.n_lines < 0:
            self.n_lines = self.data.count(b"\n")
        return self.n_lines


@dataclass
class ReadStats:
    lines: int = 0
    bytes: int = 0
    capped_lines: list[int] = field(default_factory=list)
    truncated: str | None = None  # why the input could not be read to its end
    blank: bool = True  # until a character other than whitespace is read


def discover(paths: list[str], warn: Callable[[str], None]) -> list[Source]:
    """Turn command-line paths into sources: explicit files always, folders walked for known names.

    A folder scan says how many files it skipped and why (one warning per folder), so a build folder
    whose logs are named unusually is not mistaken for a clean one.
    """
    sources: list[Source] = []
    for raw in paths:
        if raw == STDIN:
            sources.append(Source(STDIN, "log"))
            continue
        path = Path(raw)
        try:
            st = path.stat()
        except FileNotFoundError:
            raise InputError(f"no such file or folder: {shown_path(raw)}", hint="check the path") from None
        except OSError as exc:
            raise InputError(f"cannot read {shown_path(raw)}: {exc.strerror}") from None
        if stat.S_ISDIR(st.st_mode):
            skipped = Skipped()
            found = list(_walk(path, warn, skipped))
            if skipped.total:
                warn(f"{shown_path(raw)}: {skipped.summary(len(found))}")
            elif not found:
                warn(f"{shown_path(raw)}: empty folder")
            sources.extend(found)
        else:
            if not os.access(path, os.R_OK):
                raise InputError(f"cannot read {shown_path(raw)}: permission denied")
            sources.append(Source(str(path), kind_of(raw), st.st_size))
    return sources


@dataclass
class Skipped:
    """What a folder walk left out, by reason (with the first name of each, as an example)."""

    reasons: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, name: str) -> None:
        self.reasons.setdefault(reason, []).append(name)

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.reasons.values())

    def summary(self, scanned: int) -> str:
        head = f"scanned {scanned} file{'' if scanned == 1 else 's'}" if scanned else \
            "no log, report or config file to scan"
        if not self.total:
            return head
        parts = []
        for reason, names in sorted(self.reasons.items()):
            example = f" (e.g. {names[0]}; name one explicitly to scan it)" if reason == NOT_RECOGNISED else ""
            parts.append(f"{len(names)} {reason}{example}")
        return f"{head}; skipped {self.total}: {', '.join(parts)}"


NOT_RECOGNISED = "not named like a log, report or config"


def _walk(root: Path, warn: Callable[[str], None], skipped: Skipped) -> Iterator[Source]:
    def on_error(exc: OSError) -> None:
        warn(f"skipped {shown_path(str(exc.filename))}: {exc.strerror}")
        skipped.add("unreadable folder", shown_path(str(exc.filename)))

    for folder, dirs, files in os.walk(root, onerror=on_error, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if not recognised(name):
                skipped.add(NOT_RECOGNISED, shown_path(name))
                continue
            full = os.path.join(folder, name)
            try:
                st = os.stat(full)  # follows a file symlink; a dangling or looping one raises
            except OSError as exc:
                warn(f"skipped {shown_path(full)}: {exc.strerror or exc}")
                skipped.add("broken link", shown_path(full))
                continue
            if not stat.S_ISREG(st.st_mode):
                warn(f"skipped {shown_path(full)}: not a regular file")
                skipped.add("not a regular file", shown_path(full))
                continue
            if not os.access(full, os.R_OK):
                warn(f"skipped {shown_path(full)}: permission denied")
                skipped.add("unreadable", shown_path(full))
                continue
            yield Source(full, kind_of(name), st.st_size)


def open_binary(source: Source, limit: int | None = None) -> BinaryIO:
    """Open a source for binary reading as text bytes: decompressed (gzip, zstd, xz, bz2: told by their magic
    bytes) and UTF-16 re-encoded as UTF-8 (told by its BOM). `limit`: read at most that many bytes of the file
    (the size it had when a parallel scan planned it, so the bytes hashed are the bytes scanned)."""
    if source.path == STDIN:
        raw: BinaryIO = sys.stdin.buffer if sys.stdin is not None else None  # type: ignore[assignment]
        if raw is None or raw.closed:
            raise InputError("cannot read standard input: it is closed", hint="pipe a log in, or name a file")
    else:
        try:
            raw = open(source.path, "rb")  # noqa: SIM115 - closed by the caller
        except OSError as exc:
            raise InputError(f"cannot read {source.display}: {exc.strerror}") from None
    if limit is not None:
        raw = _Limited(raw, limit)  # type: ignore[assignment]
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    try:
        return text_stream(buffered)
    except OSError as exc:
        raise InputError(f"cannot read {source.display}: {exc.strerror or exc}") from None
    except ValueError:  # stdin closed under us
        raise InputError("cannot read standard input: it is closed", hint="pipe a log in, or name a file") from None


class _Limited(io.RawIOBase):
    """The first `limit` bytes of a binary file."""

    def __init__(self, raw: BinaryIO, limit: int) -> None:
        self.raw = raw
        self.left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.left <= 0:
            return 0
        data = self.raw.read(min(len(buffer), self.left))
        memoryview(buffer).cast("B")[: len(data)] = data
        self.left -= len(data)
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


def clean_bytes(chunk: bytes) -> bytes:
    """Normalise a chunk of whole lines: LF only (a lone CR shown as `␍`), no ANSI escapes, typographic
    quotes as ASCII ones (see `quotes`).

    Line ends and escapes are handled on the bytes with one regex pass each (several times faster than
    `str.replace` chains on large blocks), and only when present: the checks are memchr-fast.
    """
    if b"\r" in chunk:
        chunk = CR_RE.sub(b"\n", chunk)
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r", CR_MARK)
    if b"\x1b" in chunk:
        chunk = ANSI_RE.sub(b"", chunk)
    return fold_bytes(chunk)


def decode(data: bytes) -> str:
    """Cleaned bytes as text: UTF-8 with replacement, NUL shown as `␀`. Decoding line by line gives the
    same text as decoding the block (LF is never part of a multi-byte sequence)."""
    text = data.decode("utf-8", "replace")
    if "\x00" in text:
        text = text.replace("\x00", "\u2400")
    return text


def clean_text(chunk: bytes) -> str:
    """Decode and normalise a chunk of whole lines: UTF-8 with replacement, no ANSI, LF only, no NUL."""
    return decode(clean_bytes(chunk))


BINARY_SNIFF = 8192  # bytes of an input's start looked at to tell binary data from a log
_CONTROLS = bytes(sorted(set(range(1, 32)) - {9, 10, 12, 13, 27})) + b"\x7f"  # not tab, LF, FF, CR, ESC


def binary_note(head: bytes) -> str | None:
    """Why `head` (an input's first bytes) looks like binary data rather than a log, else None.

    A HEF, bitstream, ELF or model file passed by mistake is scanned anyway (it is what the user named), but
    saying so keeps its empty result from reading as a clean run. Text has almost no control bytes besides
    tab, line ends and ANSI escapes. NUL bytes are left out of the count: a log written when the machine
    crashed can start or end with a stretch of them and is still text.
    """
    rest = head[:BINARY_SNIFF].replace(b"\x00", b"")
    controls = len(rest) - len(rest.translate(None, _CONTROLS))
    if len(rest) >= 64 and controls * 16 > len(rest):
        return (f"binary data, not a text log ({controls} of its first {len(rest)} bytes besides NULs are "
                "control bytes); scanned as text")
    return None


def read_blocks(stream: BinaryIO, stats: ReadStats, warn: Callable[[str], None], display: str,
                block_bytes: int = BLOCK_BYTES, raw_sink: Callable[[bytes], None] | None = None,
                first_line: int = 1, view: Callable[[bytes], bytes] | None = None) -> Iterator[Block]:
    """Yield blocks of whole lines; `raw_sink` receives every byte read, unchanged (for --tee); `view` turns
    each chunk of whole lines into the text to scan, line for line (a notebook's printed output)."""
    pending = b""
    skipping = False  # inside the unmatched tail of an over-long line
    line_no = first_line
    sniffed = False
    while True:
        try:
            # read1: return what a pipe has now, so findings appear while the build still runs
            raw = stream.read1(block_bytes) if hasattr(stream, "read1") else stream.read(block_bytes)
        except (EOFError, OSError) as exc:
            stats.truncated = _why(exc)
            warn(f"{display}: input ends early ({stats.truncated}); scanned the {stats.lines} lines that were readable")
            raw = b""
        eof = not raw
        if raw:
            stats.bytes += len(raw)
            if raw_sink is not None:
                raw_sink(raw)
        if skipping:
            cut = raw.find(b"\n")
            if cut < 0:
                if eof:
                    break
                continue
            raw = raw[cut + 1:]
            skipping = False
        buffer = pending + raw
        if eof:
            chunk, pending = buffer, b""
            if chunk.endswith(b"\r"):  # the CRs of a last line end without its LF
                chunk = chunk.rstrip(b"\r") + b"\n"
        else:
            cut = buffer.rfind(b"\n")
            if cut < 0:
                if len(buffer) >= LINE_CAP:
                    stats.capped_lines.append(line_no)
                    warn(f"{display}:{line_no}: line longer than {LINE_CAP // (1 << 20)} MiB; matched its first MiB only")
                    chunk, pending, skipping = buffer[:LINE_CAP] + b"\n", b"", True
                else:
                    pending = buffer
                    continue
            else:
                chunk, pending = buffer[:cut + 1], buffer[cut + 1:]
        if chunk:
            if not sniffed and (len(chunk) >= 64 or eof):  # a pipe's first read can be one short line
                sniffed = True
                note = binary_note(chunk)
                if note:
                    warn(f"{display}: {note}")
            data = clean_bytes(chunk if view is None else view(chunk))
            if not data.endswith(b"\n"):
                data += b"\n"
            if stats.blank and not data.isspace():
                stats.blank = False  # (only ASCII white space is blank: not the separators str.isspace counts)
            block = Block(data, line_no)
            yield block
            n = block.line_count()
            line_no += n
            stats.lines += n
        if eof:
            break
    for note in getattr(stream, "notes", ()):
        warn(f"{display}: {note}")


def _why(exc: BaseException) -> str:
    if isinstance(exc, Unreadable):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or exc.__class__.__name__
