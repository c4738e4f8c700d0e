"""Fingerprints group unexplained lines that differ only in numbers, paths, hex and temp names.

The masking rules are ordered data. Tool message ids (`[XFORM 203-504]`, `[Synth 8-7129]`) are kept
intact: they are the most useful part of a fingerprint.
"""

from __future__ import annotations

import hashlib

import regex

from .lazyre import lazy

MESSAGE_ID = lazy(regex.compile, r"\[[A-Za-z][\w]*(?: [A-Za-z][\w]*)? \d+-\d+\]")

MASKS: tuple[tuple[str, str], ...] = (
    (r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?", "<TIME>"),
    (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<TIME>"),
    (r"\b0x[0-9a-fA-F]+\b", "<HEX>"),
    (r"\b[0-9a-f]{12,}\b", "<HEX>"),
    # starts only where a token starts: tried at every character of a long token, it was quadratic
    (r"(?<![\w.+~@-])(?:[A-Za-z]:|[\w.+~@-]+)?(?:[\\/][\w.+~@-]+){2,}[\\/]?", "<PATH>"),
    (r"\b(?:tmp|temp)[\w-]*\b", "<TMP>"),
    (r"\b\d+(?:\.\d+)?\b", "<N>"),
)
_COMPILED = tuple((lazy(regex.compile, p), r) for p, r in MASKS)



def _slot(index: int) -> str:
    """A placeholder no mask can touch: private-use characters, no digits."""
    return "\ue000" + "".join(chr(0xE001 + int(d)) for d in str(index)) + "\ue000"


FINGERPRINT_CHARS = 2000  # what an unexplained line keeps of its text; the rest does not group it


def normalise(text: str) -> str:
    """The line (its first FINGERPRINT_CHARS characters) with variable parts masked and spaces folded;
    message ids untouched."""
    text = text[:FINGERPRINT_CHARS]
    kept: list[str] = []

    def keep(m: regex.Match[str]) -> str:
        kept.append(m.group(0))
        return _slot(len(kept) - 1)

    masked = MESSAGE_ID.sub(keep, text.strip())
    for pattern, replacement in _COMPILED:
        masked = pattern.sub(replacement, masked)
    masked = " ".join(masked.split())
    for i, original in enumerate(kept):
        masked = masked.replace(_slot(i), original)
    return masked


def fingerprint(text: str) -> str:
    return hashlib.sha1(normalise(text).encode("utf-8")).hexdigest()[:12]
