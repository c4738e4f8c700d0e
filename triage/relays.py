"""Message ids that another tool prints again under its own prefix.

Two Vitis steps run a tool and repeat its messages with their own prefix in place of the tool's, keeping the
numbers (so the id still names one message):
- `v++ -c` runs Vitis HLS on a kernel: `ERROR: [v++ 214-124] use of undeclared identifier` is
  `[HLS 214-124]`, `INFO: [v++ 204-61]` is `[SCHED 204-61]`;
- `v++ -l` runs Vivado for the platform link (its VPL step): `ERROR: [VPL 30-640] Place Check` is
  `[Place 30-640]`, `[VPL 12-13638] Failed runs(s)` is `[Vivado 12-13638]`, and a DRC check `[DRC UTLZ-1]`
  becomes `[VPL UTLZ-1]`.
A signature of such a tool's cause is widened here to accept the relaying prefix wherever it names one of the
tool's message ids, so each cause is written once and found in both logs.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# What may follow a prefix that names an id: ` 200-`, ` 20[07]-`, `(?: 204)?-69`, ` (?:207-`, ` [0-9]`, ` \d+`
# (not ` 2020\.1`, a release).
_NUMBER_AHEAD = r"(?= \d{1,3}(?:-|\[|\(\?)|\(\?: \d| \(\?:\d| \[\d| \\d)"
# `DRC` is followed by a check name instead (`[DRC NSTD-1]`, `[DRC (?P<check>...)]`).
_CHECK_AHEAD = r"(?= [A-Z]| \(\?| \[A-Z)"


@dataclass(frozen=True)
class Relay:
    tools: frozenset[str]  # the causes' tools whose message ids are relayed
    prefix: str  # the relaying prefix, as a regex fragment
    words: tuple[str, ...]  # the prefixes of the tool's message ids followed by a number
    checks: tuple[str, ...] = ()  # prefixes followed by a check name

    @functools.cached_property
    def _patterns(self) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
        """A lone prefix naming an id (not the tail of a longer word such as XSIM), a group of prefixes only
        (`(?:RTGEN|HLS|XFORM)` before an id, which the relay joins), and an id in a declared literal. Compiled on
        first use: only a pack being validated needs them, not a pack set loaded from the cache."""
        numbered = "|".join(sorted(self.words, key=len, reverse=True))
        named = "|".join(self.checks) or "(?!)"
        lone = (rf"(?<![A-Za-z0-9_\\])(?:(?:{numbered})(?![A-Za-z0-9_]){_NUMBER_AHEAD}"
                rf"|(?:{named})(?![A-Za-z0-9_]){_CHECK_AHEAD})")
        group = rf"\(\?:((?:{numbered})(?:\|(?:{numbered}))*)\){_NUMBER_AHEAD}"
        literal = rf"(?<![A-Za-z0-9_])(?:(?:{numbered}) (?=\d+-)|(?:{named}) (?=[A-Z]))"
        return re.compile(lone), re.compile(group), re.compile(literal)

    def widen(self, pattern: str) -> str:
        """`pattern` accepting the relayed form of every message id it names; unchanged if it names none."""
        if self.prefix in pattern:
            return pattern  # written for the relayed form already
        lone, group, _ = self._patterns
        grouped = group.sub(lambda m: f"(?:{m.group(1)}|{self.prefix})", pattern)
        return lone.sub(lambda m: f"(?:{m.group(0)}|{self.prefix})", grouped)

    def widen_literal(self, literal: str) -> tuple[str, ...]:
        """A declared literal, and its relayed twin when it holds one of the tool's message ids."""
        twin = self._patterns[2].sub(self.prefix.replace("\\", "") + " ", literal)
        return (literal,) if twin == literal else (literal, twin)


RELAYS = (
    Relay(frozenset({"vivado_hls", "vitis_hls", "hls"}), r"v\+\+",
          ("HLS", "XFORM", "SCHED", "BIND", "RTGEN", "RTMG", "SYN", "SYNCHK", "APCC", "COSIM", "SIM", "IMPL",
           "ANALYSIS", "SYSC", "SCA", "VHDL", "VLOG")),  # Vitis HLS ids are 200-214
    Relay(frozenset({"vivado"}), "VPL",
          ("Synth", "Place", "Route", "Opt", "Physopt", "Pwropt", "Power", "Timing", "Constraints", "Common",
           "Vivado", "Vivado_Tcl", "Coretcl", "Project", "Runs", "IP_Flow", "BD", "BD_TCL", "Netlist", "Designutils",
           "Device", "Memdata", "HDL", "filemgmt", "Board", "Updatemem", "Chipscope", "Pfi", "Hsi", "Drc", "DRC"),
          checks=("DRC",)),
)


def relays_for(tool: str) -> tuple[Relay, ...]:
    """The relays of a cause's tool (none for most)."""
    return tuple(r for r in RELAYS if tool in r.tools)


def widen(pattern: str, tool: str) -> str:
    """`pattern` of a cause of `tool`, accepting every prefix that relays the tool's message ids."""
    for relay in relays_for(tool):
        pattern = relay.widen(pattern)
    return pattern


def widen_literal(literal: str, tool: str) -> tuple[str, ...]:
    """A declared literal of a cause of `tool`, and its relayed twins."""
    out = (literal,)
    for relay in relays_for(tool):
        out = tuple(dict.fromkeys(t for lit in out for t in relay.widen_literal(lit)))
    return out
