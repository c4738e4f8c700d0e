"""Cut one large log into line-aligned byte ranges, so both cores can scan a single file.

Each range knows the number of its first line (a LF ends a line, as the reader and `grep -n` count
them), and the lines just around it for evidence context.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

from .decode import SNIFF_BYTES, needs_decoding
from .sources import Source, clean_text

SPLIT_MIN_BYTES = 32 << 20  # below this one process is quicker: the pool costs ~0.15 s of CPU (start-up, each
# range repeats the first sight of its distinct lines) and a busy machine has no core to spare for it
_READ = 4 << 20
_CONTEXT_BYTES = 64 << 10


@dataclass(frozen=True)
class Range:
    start: int
    end: int
    first_line: int


def plain_file(source: Source) -> bool:
    """A regular file of UTF-8 text, not compressed: only those can be read from an offset."""
    if source.path == "-" or not os.path.isfile(source.path):
        return False
    try:
        with open(source.path, "rb") as f:
            return not needs_decoding(f.read(SNIFF_BYTES))
    except OSError:
        return False


def plan_ranges(path: str, parts: int, size: int | None = None) -> list[Range]:
    """`parts` ranges of about equal size, each starting right after a line end, over the file's first `size`
    bytes (default: its size now)."""
    size = os.path.getsize(path) if size is None else size
    if parts < 2 or size < SPLIT_MIN_BYTES:
        return [Range(0, size, 1)]
    targets = [size * i // parts for i in range(1, parts)]
    cuts = [0]
    lines_before = [1]
    line = 1
    pos = 0
    with open(path, "rb") as f:
        while targets:
            chunk = f.read(min(_READ, size - pos))
            if not chunk:
                break
            while targets and pos + len(chunk) > targets[0]:
                # cut after the first LF at or after the target (the CRs of a CRLF come before it)
                offset = chunk.find(b"\n", max(0, targets[0] - pos))
                if offset < 0:
                    break
                cut_in_chunk = offset + 1
                cuts.append(pos + cut_in_chunk)
                lines_before.append(line + chunk.count(b"\n", 0, cut_in_chunk))
                targets.pop(0)
            line += chunk.count(b"\n")
            pos += len(chunk)
    cuts.append(size)
    ranges = [Range(cuts[i], cuts[i + 1], lines_before[i]) for i in range(len(cuts) - 1)]
    return [r for r in ranges if r.end > r.start]


class RangeReader(io.RawIOBase):
    """A binary stream over `[start, end)` of a file."""

    def __init__(self, path: str, start: int, end: int) -> None:
        self._f = open(path, "rb")  # noqa: SIM115 - closed with the reader
        self._f.seek(start)
        self._left = end - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._left <= 0:
            return 0
        n = self._f.readinto(memoryview(buffer)[: min(len(buffer), self._left)])
        self._left -= n or 0
        return n or 0

    def close(self) -> None:
        self._f.close()
        super().close()


def lines_before(path: str, offset: int, count: int) -> list[str]:
    """The last `count` lines before `offset` (for the before-context of a range's first lines)."""
    if offset <= 0:
        return []
    start = max(0, offset - _CONTEXT_BYTES)
    return _lines_at(path, start, offset - start)[-count:]


def lines_after(path: str, offset: int, count: int) -> list[str]:
    """The first `count` lines from `offset` (for the after-context of a range's last hits)."""
    return _lines_at(path, offset, _CONTEXT_BYTES)[:count]


def _lines_at(path: str, start: int, size: int) -> list[str]:
    with open(path, "rb") as f:
        f.seek(start)
        lines = clean_text(f.read(size)).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
