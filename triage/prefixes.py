"""The prefix a CI runner or build service writes before every line a tool printed.

The raw log of a GitHub Actions or Azure Pipelines job starts each line with an ISO time stamp
(`2024-05-01T12:34:56.1234567Z `), GitLab's timestamped job log adds a stream marker (`...Z 00O `), Jenkins'
Timestamper brackets the stamp (`[2024-05-01T12:34:56.789Z] `), Docker BuildKit's plain progress prints the
step and its seconds (`#12 3.456 `), Docker Compose names the service, padded, before a bar (`frigate  | `,
`hailo-app-1  | `), and the s6-log supervisor of a container such as Frigate stamps every line of its services
(`2024-08-24 21:51:44.835191724  `: nanoseconds, two spaces); a compose log pasted from a CI job has all three,
and pasted into an issue or forum post as a Markdown quote, each line starts with `> ` as well. Last come the
launchers and loggers that name the process: `ros2 launch` (`[face_recognition_node-1] `), torchrun
(`[rank1]: `) and syslog/journald (`Jan  3 04:56:56 host kernel: `, which leaves the kernel's own `[ 1362.79] `).
A signature anchored at the start of the tool's own line (`^ERROR: [HLS 200-70]`) would miss every line of such a
log, so a line that fails is tried again on the text after the prefixes. Only these formats: a tool's own time
stamp (HailoRT's `[2024-05-01 12:34:56.789]`, the SDK's `12:07:32 ERROR :`, Python logging's
`2024-05-01 12:34:56,123 - `) is part of the line its signatures are written for, and a logger's upper-case level
before a bar (`INFO | common.core | ...`) is not a service name.
"""

from __future__ import annotations

import re

from .lazyre import lazy

_STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)"
SHIPPED = lazy(re.compile, rf"(?:{_STAMP}(?: \d\d[OE]\+?)? |\[{_STAMP}\] |#\d+ \d+\.\d+ )")
QUOTE = lazy(re.compile, r"(?:> ?)*> ")  # Markdown's quote marks, nested or not
COMPOSE = lazy(re.compile, r"[a-z0-9][a-z0-9_.-]{0,62} {1,40}\| ")  # service names are lower-case
S6_STAMP = lazy(re.compile, r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9}  ")  # nanoseconds, two spaces
PROCESS = lazy(re.compile, r"(?:\[[A-Za-z_][\w.]{0,80}-\d+\] "  # ros2 launch: the node and its instance
                           r"|\[rank\d+\]: "  # torchrun: the rank
                           r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]{1,64} [\w.@/-]{1,64}(?:\[\d+\])?: )")  # syslog

_last = ("", "")  # the line asked last and its answer (a tuple: read and replaced in one step)


def without_prefix(line: str) -> str:
    """`line` after the quote marks of a forum post and the prefixes a runner, BuildKit, Compose, s6-log and a
    process's launcher or logger put before it, in that order, each at most once; the same object when it has
    none."""
    global _last  # noqa: PLW0603 - a one-line memo: every signature tried on a line asks for the same line
    first = line[:1]
    if not ("a" <= first <= "z" or first.isdigit() or first in "#[>ADFJMNOS"):
        return line  # many lines: one character compared
    if line is _last[0]:
        return _last[1]
    end = 0
    for pattern in (QUOTE, SHIPPED, COMPOSE, S6_STAMP, PROCESS):
        m = pattern.match(line, end)
        if m is not None:
            end = m.end()
    body = line[end:] if end else line
    _last = (line, body)
    return body
