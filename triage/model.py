"""Plain data returned by the library: what a scan found. No behaviour beyond (de)serialisation."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .configs import Fact
    from .metrics import Metric

SEVERITIES = ("error", "warning", "info")
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


@dataclass
class InputInfo:
    path: str
    kind: str
    lines: int
    bytes: int = 0


@dataclass
class RunInfo:
    tool: str = "unknown"
    tool_version: str | None = None
    phase: str | None = None
    part: str | None = None
    status: str = "unknown"
    inputs: list[InputInfo] = field(default_factory=list)


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

    def worst_severity(self) -> str | None:
        ranks = [SEVERITY_RANK[f.severity] for f in self.findings]
        return SEVERITIES[min(ranks)] if ranks else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
