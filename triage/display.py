"""Text on its way to a reader: cut with a marker that says so, never silently."""

from __future__ import annotations

EVIDENCE_CHARS = 2000  # what a finding or an unexplained line keeps of a log line


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters followed by `… (cut at N characters)`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … (cut at {limit} characters)"
