"""The prefix a CI runner or build service writes before every line a tool printed.

The raw log of a GitHub Actions or Azure Pipelines job starts each line with an ISO time stamp
(`2024-05-01T12:34:56.1234567Z `), GitLab's timestamped job log adds a stream marker (`...Z 00O `), Jenkins'
Timestamper brackets the stamp (`[2024-05-01T12:34:56.789Z] `), and Docker BuildKit's plain progress prints the
step and its seconds (`#12 3.456 `). A signature anchored at the start of the tool's own line
(`^ERROR: [HLS 200-70]`) would miss every line of such a log, so a line that fails is tried again on the text
after the prefix. Only these formats: a tool's own time stamp (HailoRT's `[2024-05-01 12:34:56.789]`, the SDK's
`12:07:32 ERROR :`) is part of the line its signatures are written for.
"""

from __future__ import annotations

import re

from .lazyre import lazy

_STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)"
SHIPPED = lazy(re.compile, rf"(?:{_STAMP}(?: \d\d[OE]\+?)? |\[{_STAMP}\] |#\d+ \d+\.\d+ )")


def without_prefix(line: str) -> str:
    """`line` after a CI runner's or BuildKit's prefix; the same object when it has none."""
    if not line[:1].isdigit() and line[:1] not in "#[":
        return line  # most lines: one character compared
    m = SHIPPED.match(line)
    return line if m is None else line[m.end():]
