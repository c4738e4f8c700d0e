"""Message ids that another tool prints again under its own prefix.

`v++ -c` runs Vitis HLS on a kernel and relays every HLS message with `v++` in place of the HLS prefix:
`ERROR: [v++ 214-124] use of undeclared identifier` is `[HLS 214-124]`, `INFO: [v++ 204-61]` is
`[SCHED 204-61]` (the numbers are kept, so the id still names one message). A signature of an HLS cause
is widened here to accept the relaying prefix wherever it names an HLS message id, so each cause is
written once and found in both logs.
"""

from __future__ import annotations

import re

# The tools whose causes are relayed, and by which prefix (a regex fragment).
RELAYED_TOOLS = frozenset({"vivado_hls", "vitis_hls", "hls"})
RELAY = r"v\+\+"

# Prefixes of HLS message ids (200-214); `XSIM`, `VRFC` and the like are Vivado's and not relayed.
HLS_PREFIXES = ("HLS", "XFORM", "SCHED", "BIND", "RTGEN", "RTMG", "SYN", "SYNCHK", "APCC", "COSIM", "SIM",
                "IMPL", "ANALYSIS", "SYSC", "SCA", "VHDL", "VLOG")
_WORD = "|".join(sorted(HLS_PREFIXES, key=len, reverse=True))
# What may follow a prefix that names an id: ` 200-`, `(?: 204)?-69`, ` (?:207-`, ` [0-9]`, ` \d+`.
_ID_AHEAD = r"(?= 2|\(\?: 2| \(\?:2| \[2| \\d)"
# A lone prefix (not the tail of a longer word such as XSIM, nor already relayed).
_LONE = re.compile(rf"(?<![A-Za-z0-9_\\])(?:{_WORD})(?![A-Za-z0-9_]){_ID_AHEAD}")
# A group of prefixes only, `(?:RTGEN|HLS|XFORM) \d+-\d+`: the relay joins the group.
_GROUP = re.compile(rf"\(\?:((?:{_WORD})(?:\|(?:{_WORD}))*)\){_ID_AHEAD}")


def widen(pattern: str) -> str:
    """`pattern` accepting the relayed form of every HLS message id it names; unchanged if it names none."""
    if RELAY in pattern:
        return pattern  # written for the relayed form already
    grouped = _GROUP.sub(lambda m: f"(?:{m.group(1)}|{RELAY})", pattern)
    out, last = [], 0
    for m in _LONE.finditer(grouped):
        if _inside_group(grouped, m.start()):
            continue
        out += [grouped[last:m.start()], f"(?:{m.group(0)}|{RELAY})"]
        last = m.end()
    return "".join(out) + grouped[last:]


def _inside_group(pattern: str, pos: int) -> bool:
    """Whether the prefix at `pos` is a member of a group the relay already joined."""
    close = pattern.find(")", pos)
    return close != -1 and pattern[pos:close].endswith(RELAY) and "(" not in pattern[pos:close]


_LITERAL_ID = re.compile(rf"(?<![A-Za-z0-9_])(?:{_WORD}) (?=2\d\d-)")


def widen_literal(literal: str) -> tuple[str, ...]:
    """A declared literal, and its relayed twin when it holds an HLS message id."""
    twin = _LITERAL_ID.sub("v++ ", literal)
    return (literal,) if twin == literal else (literal, twin)
