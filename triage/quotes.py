"""Typographic quotes read as the ASCII quotes a signature is written with.

GCC (and so every csim, cosim and hls4ml build) quotes names as ‘x’ in a UTF-8 locale and as 'x' in the C
locale; forums, issue trackers and word processors turn the quotes of a pasted log into curly ones. A signature
written from one form must match the other, so the scanned text, the packs' regexes, literals and examples, and
a line given to `explain` all read ‘ ’ as ' and “ ” as ". Evidence is shown as it was read.
"""

from __future__ import annotations

import re

_TEXT = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_CURLY = re.compile("[\u2018\u2019\u201c\u201d]")
_ANY = re.compile(rb"\xe2\x80[\x98\x99\x9c\x9d]")  # one pass; `in` on their two lead bytes is slower where
_SINGLE = re.compile(rb"\xe2\x80[\x98\x99]")          # progress bars and box drawing (U+2500...) are frequent
_DOUBLE = re.compile(rb"\xe2\x80[\x9c\x9d]")


def fold(text: str) -> str:
    """`text` with typographic quotes as ASCII ones; the same object when it has none (most lines). Called for
    every signature tried on a line, so a line without them is only searched, never copied."""
    if text.isascii() or _CURLY.search(text) is None:
        return text
    return text.translate(_TEXT)


def fold_bytes(chunk: bytes) -> bytes:
    """The same on UTF-8 bytes, before decoding, so the literal gate sees what the regexes see."""
    if chunk.isascii() or _ANY.search(chunk) is None:  # isascii: word at a time, most blocks of most logs
        return chunk
    return _DOUBLE.sub(b'"', _SINGLE.sub(b"'", chunk))
