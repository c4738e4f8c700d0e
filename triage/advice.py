"""The tool's own advice for an error line that no cause explains.

Vivado and HLS follow many messages with a `Resolution:` line, the DFC parser follows a failed parse with the end
nodes it recommends, HailoRT prints one readable error before a chain of bare status codes. When triage has no
cause for a line, that advice is the best thing it can show beside it. Like the fingerprint masks, the rules are
ordered data; the scanner feeds them the lines around each unexplained line.
"""

from __future__ import annotations

import regex

from .lazyre import lazy

# A line within AFTER_REACH lines below the error that carries the tool's advice, first rule first.
AFTER_RULES: tuple[regex.Pattern[str], ...] = (
    lazy(regex.compile, r"^\s*(?:Resolution|Explanation):\s*(?P<advice>\S.*)"),  # Vivado, Vivado HLS, Vitis HLS
    # the DFC parser
    lazy(regex.compile, r"^\s*(?P<advice>Please try to parse the model again, using these end node names:.*)"),
)
AFTER_REACH = 6
# A line that starts the next Vivado/HLS message: advice below it belongs to that message, not to ours.
NEXT_MESSAGE = lazy(regex.compile, r"^\s*(?:INFO|WARNING|ERROR|CRITICAL WARNING): \[")

# A line that only carries a status code; the advice is the readable error printed shortly before it.
STATUS_ONLY = lazy(regex.compile, r"failed with status=|failed with status |status = \d+\s*$")
READABLE_BEFORE = lazy(
    regex.compile, r"\[HailoRT\] \[(?:error|critical)\] (?P<advice>(?!.*(?:failed with status|status = \d)).*\w.*)")
BEFORE_REACH = 60

MESSAGE_ID = lazy(regex.compile, r"\[(?P<id>[A-Z][A-Za-z+]*(?: [A-Za-z+]+)* \d+-\d+)\]")
ADVICE_CAP = 1000


TIMEOUT_S = 0.05  # the rules are linear; the bound only keeps a hostile line from costing more
LINE_CAP = 4000


def _search(pattern: regex.Pattern[str], text: str, anchored: bool = False) -> regex.Match[str] | None:
    try:
        return (pattern.match if anchored else pattern.search)(text[:LINE_CAP], timeout=TIMEOUT_S)
    except TimeoutError:
        return None


def message_id(text: str) -> str | None:
    """The tool's message id in a line (`Common 17-55`, `HLS 200-1505`, `v++ 60-702`), if it has one."""
    m = _search(MESSAGE_ID, text[:400])
    return m.group("id") if m else None


def message_count(text: str) -> int:
    """How many tool messages (`[Id N-M]`) a line holds: more than one when output was pasted together."""
    try:
        return len(MESSAGE_ID.findall(text[:LINE_CAP], timeout=TIMEOUT_S))
    except TimeoutError:
        return 0


def advice_after(line: str) -> str | None:
    """The advice a line below the error carries, if it is such a line."""
    for rule in AFTER_RULES:
        m = _search(rule, line, anchored=True)
        if m:
            return m.group("advice").strip()[:ADVICE_CAP]
    return None


def ends_message(line: str) -> bool:
    return _search(NEXT_MESSAGE, line[:200], anchored=True) is not None


def needs_readable_before(text: str) -> bool:
    return _search(STATUS_ONLY, text) is not None


def readable_error(text: str) -> str | None:
    """The message of a HailoRT error line that says something, not only a status code."""
    if "[HailoRT]" not in text:
        return None
    m = _search(READABLE_BEFORE, text)
    return m.group("advice").strip()[:ADVICE_CAP] if m else None
