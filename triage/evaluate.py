"""The held-back measure: how often the knowledge names the right cause on real cases it was not written from.

`fixtures/heldback/cases.yaml` lists real public logs that no pack example, regex or cause text may come from,
each with the accepted cause and the words a correct explanation must contain. Scanning them with the packs of
today (or of any earlier commit) gives the three figures the team watches: failures explained right, clean
runs without an error finding, and benign-but-alarming runs explained without an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError
from .model import Finding, ScanResult
from .packs import PackSet
from .scan import Matcher, scan_sources
from .sources import Source, kind_of

KINDS = ("fail", "clean", "trap")
CASE_KEYS = {"id", "files", "source", "kind", "warning_ok", "cause", "mention", "batch", "note"}
CASES_FILE = "cases.yaml"
# held-back folders by toolchain family: the three the measure reports on
FAMILIES = {"dfc": "hailo", "hailomz": "hailo", "hailort": "hailo", "hailo-integrations": "hailo",
            "hls": "hls", "hls4ml": "hls", "vivado": "vivado", "vitis": "vivado", "finn": "vivado", "pynq": "vivado"}


@dataclass
class Case:
    id: str
    files: list[Path]
    source: str
    kind: str
    cause: str
    mention: list[list[str]]
    warning_ok: bool = False

    @property
    def family(self) -> str:
        """The toolchain family of the folder the case's first file lives in."""
        folder = self.files[0].parent.name if self.files else ""
        return FAMILIES.get(folder, folder)


@dataclass
class CaseOutcome:
    case: Case
    right: bool
    found: list[tuple[str, str]]  # (id, severity) of every finding, top-level and explained
    answer: str | None = None  # the id of the finding that satisfied the case, if any


@dataclass
class Figure:
    right: int = 0
    total: int = 0

    @property
    def text(self) -> str:
        pct = f"{self.right / self.total * 100:.0f} %" if self.total else "n/a"
        return f"{self.right}/{self.total} ({pct})"


@dataclass
class EvalReport:
    outcomes: list[CaseOutcome]
    by_kind: dict[str, Figure] = field(default_factory=dict)
    by_family: dict[tuple[str, str], Figure] = field(default_factory=dict)  # (toolchain family, kind) -> figure

    @property
    def wrong(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if not o.right]

    def to_dict(self) -> dict[str, Any]:
        return {
            "figures": {kind: {"right": f.right, "total": f.total} for kind, f in self.by_kind.items()},
            "families": [{"family": fam, "kind": kind, "right": f.right, "total": f.total}
                         for (fam, kind), f in sorted(self.by_family.items())],
            "cases": [{"id": o.case.id, "kind": o.case.kind, "family": o.case.family, "right": o.right,
                       "answer": o.answer, "found": [{"id": i, "severity": s} for i, s in o.found]}
                      for o in self.outcomes],
        }


def load_cases(root: Path) -> list[Case]:
    """Read and check `cases.yaml`: every file exists, ids are unique, `mention` is groups of words."""
    path = root / CASES_FILE
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise InputError(f"cannot read held-back cases: {exc.strerror}", where=str(path),
                         hint="the folder needs a cases.yaml with a top-level `cases:` list") from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {getattr(exc, 'problem', exc)}", where=str(path)) from None
    raw_cases = data.get("cases") if isinstance(data, dict) else None
    if raw_cases is None:
        raw_cases = []
    if not isinstance(raw_cases, list):
        raise InputError("`cases` must be a list", where=str(path))
    cases: list[Case] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_cases):
        cases.append(_case(raw, root, f"{path} (case {i + 1})", seen))
    return cases


def _case(raw: Any, root: Path, where: str, seen: set[str]) -> Case:
    if not isinstance(raw, dict):
        raise InputError("a case is a mapping", where=where)
    unknown = sorted(set(raw) - CASE_KEYS)
    if unknown:
        raise InputError(f"unknown key '{unknown[0]}' in a case", where=where, hint=f"allowed: {', '.join(sorted(CASE_KEYS))}")
    cid = raw.get("id")
    if not isinstance(cid, str) or not cid or cid in seen:
        raise InputError(f"missing or duplicate case id {cid!r}", where=where)
    seen.add(cid)
    where = f"{where} [{cid}]"
    kind = raw.get("kind")
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}", where=where)
    files = raw.get("files")
    if not isinstance(files, list) or not files or any(not isinstance(f, str) for f in files):
        raise InputError("`files` must be a non-empty list of paths relative to the held-back folder", where=where)
    paths = [root / f for f in files]
    for p in paths:
        if not p.is_file():
            raise InputError(f"file not found: {p}", where=where)
    mention = raw.get("mention") or []
    if isinstance(mention, list):  # a year or a version written bare reads as an int: it means the same text
        mention = [[str(w) if type(w) is int else w for w in g] if isinstance(g, list) else g for g in mention]
    if not isinstance(mention, list) or any(
            not isinstance(g, list) or not g or any(not isinstance(w, str) or w != w.lower() for w in g) for g in mention):
        booleans = [w for g in mention if isinstance(g, list) for w in g if isinstance(w, bool)]
        raise InputError("`mention` must be a list of groups of lower-case words", where=where,
                         hint="YAML reads an unquoted no/yes/on/off/true/false as a boolean: quote it ('no')"
                         if booleans else
                         "e.g. [[driver], [version, mismatch]]; quote words YAML reads as numbers: '2.0'")
    if kind != "clean" and not mention:
        raise InputError("a fail or trap case needs `mention`: the words a right explanation contains", where=where)
    for key in ("source", "cause"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise InputError(f"missing '{key}'", where=where)
    return Case(cid, paths, raw["source"], kind, raw["cause"], mention, bool(raw.get("warning_ok", False)))


def finding_text(f: Finding) -> str:
    """What a reader of the finding sees, lower-cased: its id, title, cause and workaround (captures filled)."""
    return " ".join((f.id, f.title, f.cause, f.workaround)).lower()


def satisfies(f: Finding, mention: list[list[str]]) -> bool:
    text = finding_text(f)
    return all(any(word in text for word in group) for group in mention)


def judge(case: Case, result: ScanResult) -> CaseOutcome:
    """Right or wrong, by the case's kind. A generic catch-all never counts as naming the cause."""
    found = result.all_findings()
    errors = [f for f in found if f.severity == "error"]
    answer: Finding | None = None
    if case.kind == "fail":
        answer = next((f for f in errors if not f.generic and satisfies(f, case.mention)), None)
        right = answer is not None
    elif case.kind == "clean":
        right = not errors
    else:
        allowed = ("info", "warning") if case.warning_ok else ("info",)
        answer = next((f for f in found if f.severity in allowed and satisfies(f, case.mention)), None)
        right = not errors and answer is not None
    return CaseOutcome(case, right, [(f.id, f.severity) for f in found], answer.id if answer else None)


def evaluate(packs: PackSet, root: Path) -> EvalReport:
    matcher = Matcher(packs)
    report = EvalReport([])
    for case in load_cases(root):
        sources = [Source(str(p), kind_of(p.name), p.stat().st_size) for p in case.files]
        outcome = judge(case, scan_sources(packs, sources, matcher=matcher))
        report.outcomes.append(outcome)
        for fig in (report.by_kind.setdefault(case.kind, Figure()),
                    report.by_family.setdefault((case.family, case.kind), Figure())):
            fig.total += 1
            fig.right += outcome.right
    return report


def heldback_text(root: Path) -> str:
    """Every held-back file's text, for the test that no pack example was written from one."""
    parts = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in (CASES_FILE, "README.md"):
            parts.append(p.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n"))
    return "\n".join(parts)
