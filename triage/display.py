"""Text on its way to a reader: cut with a marker that says so, never silently; and made safe for a terminal.

Log text, file names, labels, pack prose and ingested documents are all untrusted. Bound for a terminal (or a
CI log, which GitHub and GitLab read for workflow commands line by line) every such string goes through
`for_terminal`: C0 and C1 controls other than tab, DEL and the bidirectional overrides are shown as escapes
(`\\x1b`, `\\u202e`) rather than acted on, and a string that is not valid UTF-8 shows U+FFFD. `one_line` also
escapes line ends, for sinks where a newline would start a new command (stderr, `--tee`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, TypeVar

T = TypeVar("T")

EVIDENCE_CHARS = 2000  # what a finding or an unexplained line keeps of a log line

# C0 controls but tab and LF, DEL, C1 controls, bidi embeddings/overrides/isolates and marks, lone surrogates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_TAB = "\t"


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters followed by `… (cut at N characters)`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … (cut at {limit} characters)"


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch == _TAB:
        return ch
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """`text` with controls (but tab and newline), bidi overrides and lone surrogates made visible."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def one_line(text: str) -> str:
    """`terminal_safe`, and line ends escaped too: for a stderr line or anything a CI log parses per line."""
    return _UNSAFE_LINE.sub(_escape, text) if _UNSAFE_LINE.search(text) else text


def shown_path(path: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept as surrogates to reopen the file) become U+FFFD."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "replace")


# Fields whose text is prose, printed inside a panel: their paragraphs stay. Every other string (a name, a label,
# a path, a log line) is one line: a newline in it could put a workflow command at the start of a CI log line.
PROSE = frozenset({"cause", "workaround", "message", "description"})


def for_terminal(value: T) -> T:
    """A copy of `value` (strings, lists, dicts, dataclasses of them) with every string made safe: `one_line`,
    or `terminal_safe` for the prose fields."""
    return _safe(value, False)  # type: ignore[no-any-return]


def _safe(value: Any, prose: bool) -> Any:
    if isinstance(value, str):
        return terminal_safe(value) if prose else one_line(value)
    if isinstance(value, list):
        return [_safe(v, prose) for v in value]
    if isinstance(value, tuple):
        return tuple(_safe(v, prose) for v in value)
    if isinstance(value, dict):
        return {_safe(k, False): _safe(v, k in PROSE) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _safe(getattr(value, f.name), f.name in PROSE) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    return value
