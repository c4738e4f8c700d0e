"""Plain data returned by the library: what a scan found. No behaviour beyond (de)serialisation."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .configs import Fact
    from .metrics import Metric

SEVERITIES = ("error", "warning", "info")
RUN_TOOLS = ("dfc", "hailort", "vivado_hls", "vitis_hls", "vivado", "hls4ml", "finn", "unknown")  # `run.tool`
RUN_STATUSES = ("failed", "passed", "unknown")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


@dataclass
class Evidence:
    path: str
    line: int
    text: str
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    captures: dict[str, str] = field(default_factory=dict)


@dataclass
class Finding:
    id: str
    severity: str
    title: str
    cause: str
    workaround: str
    references: list[str]
    count: int
    evidence: list[Evidence]
    tool: str = ""
    versions: str | None = None
    explained: list[Finding] = field(default_factory=list)
    generic: bool = False  # a catch-all or family cause: the step or class that failed, not why

    @property
    def first_line(self) -> tuple[str, int]:
        return (self.evidence[0].path, self.evidence[0].line) if self.evidence else ("", 0)


@dataclass
class Unexplained:
    path: str
    line: int
    text: str
    count: int
    fingerprint: str
    advice: str | None = None  # the tool's own advice printed with the line (Resolution:, first HailoRT error)
    message_id: str | None = None  # e.g. "Common 17-55", "HLS 200-1505"
    known: list[str] = field(default_factory=list)  # causes of that message, none of whose signatures matched


@dataclass
class InputInfo:
    path: str
    kind: str
    lines: int
    bytes: int = 0
    blank: bool = False  # nothing but whitespace was read (not part of the JSON document)
    unread: str | None = None  # why it could not be read to its end (the warnings say so too)


@dataclass
class RunInfo:
    tool: str = "unknown"
    tool_version: str | None = None
    phase: str | None = None
    part: str | None = None
    status: str = "unknown"
    inputs: list[InputInfo] = field(default_factory=list)


@dataclass(frozen=True)
class Counts:
    """How many of each a run has: the one definition every view shows (terminal, JSON, `runs list`,
    `runs show`, HTML). `error`/`warning`/`info` count top-level findings (what the exit code looks at);
    `explained` counts the findings listed under one of them as its consequence; `unexplained` counts the
    distinct error lines no cause explains."""

    error: int = 0
    warning: int = 0
    info: int = 0
    explained: int = 0
    unexplained: int = 0

    @classmethod
    def of(cls, findings: Iterable[tuple[str, bool]], unexplained: int) -> Counts:
        """From (severity, explained by another finding) pairs, one per finding of the run."""
        tally = {"error": 0, "warning": 0, "info": 0, "explained": 0}
        for severity, explained in findings:
            key = "explained" if explained else severity
            if key in tally:
                tally[key] += 1
        return cls(**tally, unexplained=unexplained)

    @property
    def findings(self) -> int:
        return self.error + self.warning + self.info

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def text(self) -> str:
        """`2 errors, 1 warning, 3 explained, 1 unexplained error line` (zero counts left out)."""
        parts = [f"{n} {word}{'' if n == 1 else 's'}" for n, word in
                 ((self.error, "error"), (self.warning, "warning")) if n]
        if self.info:
            parts.append(f"{self.info} info")
        if self.explained:
            parts.append(f"{self.explained} explained")
        if self.unexplained:
            parts.append(f"{self.unexplained} unexplained error line{'' if self.unexplained == 1 else 's'}")
        return ", ".join(parts) or "no findings"


@dataclass
class ScanResult:
    run: RunInfo
    findings: list[Finding]
    unexplained: list[Unexplained]
    warnings: list[str] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)

    def all_findings(self) -> list[Finding]:
        """Top-level findings and those they explain, flattened."""
        out: list[Finding] = []
        for f in self.findings:
            out.append(f)
            out.extend(f.explained)
        return out

    def counts(self) -> Counts:
        return Counts.of([(f.severity, False) for f in self.findings]
                         + [(sub.severity, True) for f in self.findings for sub in _nested(f)], len(self.unexplained))

    def worst_severity(self) -> str | None:
        ranks = [SEVERITY_RANK[f.severity] for f in self.findings]
        return SEVERITIES[min(ranks)] if ranks else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _nested(finding: Finding) -> list[Finding]:
    out: list[Finding] = []
    for sub in finding.explained:
        out.append(sub)
        out.extend(_nested(sub))
    return out
