"""Jupyter notebooks as logs: the text a notebook's cells printed, at the lines of the `.ipynb` file.

hls4ml and the Hailo tutorials are run from notebooks, so a conversion's traceback or a `build()`'s HLS log
is often only in the saved notebook. Jupyter writes it (nbformat, one JSON value per line) with each line a
cell printed as one string of an array: `"text"` of a stream output, `"traceback"` of an error,
`"text/plain"` of a result. Read line by line, every such string is decoded in place and every other line
becomes empty, so a finding's `file:line` is the line of the notebook that holds it, and the file streams
like any log. The `"source"` lines of code cells are kept apart: they are the conversion script that config
checks read (`config['LayerName'][...]`), at the same line numbers.
"""

from __future__ import annotations

import json
import re

SUFFIX = ".ipynb"
PRINTED = frozenset({b"text", b"traceback", b"text/plain"})  # arrays of what a cell printed
NEWLINE_MARK = "\u23ce"  # ⏎: a line break inside one string (a traceback frame), kept on one line

_OPEN = re.compile(rb'^\s*"([^"\\]+)": \[\s*$')  # `"text": [` opens an array
_CLOSE = re.compile(rb"^\s*\],?\s*$")
_STRING = re.compile(rb'^\s*"((?:[^"\\]|\\.)*)",?\s*$')  # one string element of an array
_CELL_TYPE = re.compile(rb'^\s*"cell_type": "(\w+)",?\s*$')


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


class NotebookView:
    """Turns chunks of whole lines of a notebook into the lines its cells printed (same number of lines),
    keeping the source of its code cells apart. The state (which array a line is in) carries across chunks.

    A notebook written on one line (compact JSON, not as Jupyter saves it) is passed through unchanged:
    `plain` is then set, and it is scanned as the text it is. An excerpt of a notebook's lines is read
    like the whole file."""

    def __init__(self, code_cap: int = 4 << 20) -> None:
        self.stack: list[bytes] = []
        self.cell_type = b"code"
        self.code: list[bytes] = []
        self.code_size = 0
        self.code_cap = code_cap
        self.plain: bool | None = None  # decided by the first line

    def __call__(self, chunk: bytes) -> bytes:
        lines = chunk.split(b"\n")  # the last item is b"" after a final LF, else the last line's text
        if self.plain is None and chunk:
            self.plain = not _laid_out(lines[0])
        if self.plain:
            return chunk
        printed: list[bytes] = []
        code: list[bytes] = []
        for line in lines:
            out, src = self._line(line)
            printed.append(out)
            code.append(src)
        self._keep_code(code[:-1] if chunk.endswith(b"\n") else code)
        return b"\n".join(printed)

    def code_text(self) -> str:
        """The code cells' source lines, every other line empty: what `read_python_script` reads."""
        return b"\n".join(self.code).decode("utf-8", "replace")

    def _line(self, line: bytes) -> tuple[bytes, bytes]:
        stack = self.stack
        if stack:
            m = _STRING.match(line)
            if m is not None:
                key = stack[-1]
                if key in PRINTED:
                    return _decoded(m.group(1)), b""
                if key == b"source" and self.cell_type == b"code":
                    return b"", _decoded(m.group(1))
                return b"", b""
            if _CLOSE.match(line):
                stack.pop()
                return b"", b""
        m = _OPEN.match(line)
        if m is not None:
            stack.append(m.group(1))
            return b"", b""
        m = _CELL_TYPE.match(line)
        if m is not None:
            self.cell_type = m.group(1)
        return b"", b""

    def _keep_code(self, code: list[bytes]) -> None:
        if self.code_size >= self.code_cap:
            return
        self.code.extend(code)
        self.code_size += sum(len(c) + 1 for c in code)


def _laid_out(first: bytes) -> bool:
    """Whether a first line is one of nbformat's one-value lines (`{`, `"key": [`, a string, a bracket), not
    the start of a whole notebook on one line (`{"cells": [...`) or text that is no notebook at all."""
    first = first.strip()
    return first in (b"{", b"}", b"},", b"]", b"],", b"[") or bool(_OPEN.match(first) or _STRING.match(first)) \
        or (first.startswith(b'"') and first.endswith((b",", b"{", b"[")) and len(first) < 1024)


def _decoded(escaped: bytes) -> bytes:
    """A JSON string's text on one line: its final line break dropped, any other shown as ⏎."""
    try:
        text = json.loads(b'"' + escaped + b'"')
    except ValueError:  # not valid JSON escapes: show the text as written
        return escaped
    if text.endswith("\n"):
        text = text[:-1]
    if "\n" in text:
        text = text.replace("\n", NEWLINE_MARK)
    return text.encode("utf-8", "surrogatepass")
