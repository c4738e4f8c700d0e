"""Golden results for fixtures: what `triage packs test` checks and a pack author runs before sending a pack.

A golden `<file>.expected.yaml` sits beside its fixture and states the run's status and every finding
(top-level and explained) with its severity. The comparison is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError
from .model import ScanResult
from .packs import PackSet
from .scan import Matcher, scan_sources
from .sources import Source, kind_of

SUFFIX = ".expected.yaml"


@dataclass
class Golden:
    path: Path
    inputs: list[Path]
    status: str | None
    findings: dict[str, str]


@dataclass
class GoldenOutcome:
    golden: Golden
    got_status: str
    got: dict[str, str]

    @property
    def ok(self) -> bool:
        return self.got == self.golden.findings and (self.golden.status is None or self.got_status == self.golden.status)

    def diff(self) -> list[str]:
        lines = []
        want, got = self.golden.findings, self.got
        for cid in sorted(set(want) | set(got)):
            if want.get(cid) != got.get(cid):
                lines.append(f"{cid}: expected {want.get(cid) or 'absent'}, got {got.get(cid) or 'absent'}")
        if self.golden.status is not None and self.got_status != self.golden.status:
            lines.append(f"status: expected {self.golden.status}, got {self.got_status}")
        return lines


@dataclass
class CauseStats:
    failing: int = 0  # fixtures whose run failed (true positives, for an error cause)
    clean: int = 0  # fixtures whose run passed or is unknown (false positives, for an error cause)


@dataclass
class PacksTestReport:
    outcomes: list[GoldenOutcome]
    stats: dict[str, CauseStats] = field(default_factory=dict)
    uncovered: list[Path] = field(default_factory=list)

    @property
    def failures(self) -> list[GoldenOutcome]:
        return [o for o in self.outcomes if not o.ok]


def find_goldens(root: Path) -> list[Path]:
    return sorted(root.rglob(f"*{SUFFIX}"))


def read_golden(path: Path) -> Golden:
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read golden: {exc}", where=str(path)) from None
    base = path.name[: -len(SUFFIX)]
    inputs = [path.parent / p for p in data.get("inputs") or [base]]
    return Golden(path, inputs, data.get("status"), dict(data.get("findings") or {}))


def run_golden(golden: Golden, packs: PackSet, matcher: Matcher) -> ScanResult:
    sources = [Source(str(p), kind_of(p.name), p.stat().st_size) for p in golden.inputs]
    return scan_sources(packs, sources, matcher=matcher)


def flat_findings(result: ScanResult) -> dict[str, str]:
    return {f.id: f.severity for f in result.all_findings()}


def write_golden(golden: Golden, result: ScanResult) -> None:
    data: dict[str, Any] = {}
    base = golden.path.name[: -len(SUFFIX)]
    names = [p.name for p in golden.inputs]
    if names != [base]:
        data["inputs"] = names
    data["status"] = result.run.status
    data["findings"] = dict(sorted(flat_findings(result).items()))
    golden.path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def test_goldens(packs: PackSet, root: Path, update: bool = False) -> PacksTestReport:
    """Every golden under `root`; a missing folder or one without goldens is an input error (`0/0 goldens
    match` would pass a pack that was never tested)."""
    hint = "run it in the repository, or give --fixtures DIR: fixtures with <file>.expected.yaml beside them"
    if not root.is_dir():
        raise InputError("no fixtures folder here", where=str(root), hint=hint)
    goldens = find_goldens(root)
    if not goldens:
        raise InputError("no goldens (*.expected.yaml) in this folder", where=str(root), hint=hint)
    matcher = Matcher(packs)
    outcomes: list[GoldenOutcome] = []
    stats: dict[str, CauseStats] = {cid: CauseStats() for cid in packs.causes}
    covered: set[Path] = set()
    for path in goldens:
        golden = read_golden(path)
        covered.update(p.resolve() for p in golden.inputs)
        result = run_golden(golden, packs, matcher)
        if update:
            write_golden(golden, result)
            golden = read_golden(path)
        got = flat_findings(result)
        outcomes.append(GoldenOutcome(golden, result.run.status, got))
        failing = (golden.status or result.run.status) == "failed"
        for cid in got:
            s = stats.setdefault(cid, CauseStats())
            if failing:
                s.failing += 1
            else:
                s.clean += 1
    fixtures = [p for p in root.rglob("*") if p.is_file() and not p.name.endswith(SUFFIX)
                and p.suffix not in (".md",) and "notes" not in p.relative_to(root).parts
                and p.relative_to(root).parts[0] not in ("synthetic", "heldback")]
    uncovered = sorted(p for p in fixtures if p.resolve() not in covered)
    return PacksTestReport(outcomes, stats, uncovered)
