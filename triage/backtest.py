"""Backtest pack changes over the stored history before they ship: `kb draft` and `packs test --against-db`.

What a changed pack would do to the runs already stored (their kept logs): how many failed and passed runs
each changed cause hits in the last 30 and 90 days (a hit on a passed run is a false alarm), the failed
runs it newly explains (no known error before, one after), and the runs where it would hide a cause
that is reported today (now nested under another, or gone). Elastic-recheck checks queries against
successful jobs and Jenkins' failure analyzer re-scans on demand; this does both before a pack is saved.

A run is compared with its classification under `baseline` (the stored one when the run was classified
with those packs, else a re-scan), or with what is stored when no baseline is given.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .model import ScanResult
from .packs import PackSet
from .scan import Matcher, scan_sources

WINDOWS = (30, 90)
STATUSES = ("failed", "passed", "unknown")


@dataclass
class RunChange:
    run_id: int
    created: str
    status: str  # as stored: what the compile did
    added: list[str] = field(default_factory=list)  # causes found that were not before
    hidden: list[str] = field(default_factory=list)  # reported before, now explained by another cause
    lost: list[str] = field(default_factory=list)  # found before, not found now
    newly_explained: bool = False  # failed with no known error before, has one now
    lines_explained: int = 0  # unexplained error lines before that are not any more

    @property
    def changed(self) -> bool:
        return bool(self.added or self.hidden or self.lost or self.lines_explained)


@dataclass
class Backtest:
    causes: dict[str, dict[int, dict[str, int]]]  # cause id -> window in days -> run status -> runs hit
    # (every cause found in the runs looked at; with `prefilter`, only the focus causes' counts are whole)
    changes: list[RunChange]
    runs: int  # runs in the period whose logs were kept whole (all looked at)
    not_kept: int  # runs in the period that could not be looked at (log not kept, or only in part)
    windows: tuple[int, ...] = WINDOWS

    @property
    def newly_explained(self) -> list[RunChange]:
        return [c for c in self.changes if c.newly_explained]

    @property
    def hiding(self) -> list[RunChange]:
        return [c for c in self.changes if c.hidden or c.lost]

    @property
    def explaining(self) -> list[RunChange]:
        """Runs with error lines no cause explained before that one explains now."""
        return [c for c in self.changes if c.lines_explained]

    def changed_causes(self) -> list[str]:
        return sorted({cid for c in self.changes for cid in c.added + c.hidden + c.lost})

    def hits(self, cause_id: str, days: int, status: str) -> int:
        return self.causes.get(cause_id, {}).get(days, {}).get(status, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs, "not_kept": self.not_kept, "windows": list(self.windows),
            "causes": {cid: {f"{d}d": dict(by) for d, by in w.items()} for cid, w in self.causes.items()},
            "newly_explained": [c.run_id for c in self.newly_explained],
            "explaining": [{"run_id": c.run_id, "lines": c.lines_explained} for c in self.explaining],
            "hiding": [{"run_id": c.run_id, "hidden": c.hidden, "lost": c.lost} for c in self.hiding],
            "changes": [c.__dict__ for c in self.changes if c.changed],
        }


def backtest(store: Any, candidate: PackSet, focus: Iterable[str], *, baseline: PackSet | None = None,
             prefilter: bool = False, windows: tuple[int, ...] = WINDOWS, now: datetime | None = None,
             progress: Callable[[int, int], None] | None = None) -> Backtest:
    """Compare `candidate` with `baseline` (or with the stored classification) on every stored run of the
    last `max(windows)` days whose logs were kept whole; count the hits of the `focus` causes.

    `prefilter`: only runs where a focus cause's own signatures match a line can change (true when the
    focus causes are new and nothing refers to them, as for a draft); the others are not re-scanned.
    """
    now = now or datetime.now(timezone.utc)
    cutoffs = {d: _iso(now - timedelta(days=d)) for d in windows}
    focus = list(dict.fromkeys(focus))
    rows = store.runs(since=cutoffs[max(windows)], limit=None)
    counts: dict[str, dict[int, dict[str, int]]] = {}
    changes: list[RunChange] = []
    matchers: dict[str, Matcher] = {}
    signatures = [s for cid in focus if cid in candidate.causes for s in candidate.causes[cid].signatures]
    looked = not_kept = 0
    for n, row in enumerate(rows):
        if progress is not None:
            progress(n, len(rows))
        with tempfile.TemporaryDirectory(prefix="triage-backtest-") as tmp:
            sources = store.kept_sources(int(row["id"]), tmp)
            if not sources:
                not_kept += 1
                continue
            looked += 1
            if prefilter and not _any_line_matches(sources, signatures):
                continue
            before = _classified(store, row, baseline, sources, matchers)
            after = before if row.get("packs_digest") == candidate.digest and baseline is None else \
                _scan(candidate, sources, matchers)
        change = _compare(row, before, after)
        changes.append(change)
        status = str(row.get("status") or "unknown")
        for cid in {f.id for f in after.all_findings()}:
            by_window = counts.setdefault(cid, {d: dict.fromkeys(STATUSES, 0) for d in windows})
            for d, cutoff in cutoffs.items():
                if str(row.get("created") or "") >= cutoff:
                    by_window[d][status if status in STATUSES else "unknown"] += 1
    for cid in focus:
        counts.setdefault(cid, {d: dict.fromkeys(STATUSES, 0) for d in windows})
    return Backtest(counts, changes, looked, not_kept, tuple(windows))


def _classified(store: Any, row: dict[str, Any], baseline: PackSet | None, sources: list[Any],
                matchers: dict[str, Matcher]) -> ScanResult:
    from .store import result_from_doc

    if baseline is None or row.get("packs_digest") == baseline.digest:
        return result_from_doc(store.run(int(row["id"]))["result"])
    return _scan(baseline, sources, matchers)


def _scan(packs: PackSet, sources: list[Any], matchers: dict[str, Matcher]) -> ScanResult:
    matcher = matchers.get(packs.digest)
    if matcher is None:
        matcher = matchers[packs.digest] = Matcher(packs)
    return scan_sources(packs, sources, matcher=matcher)


def _any_line_matches(sources: list[Any], signatures: list[Any]) -> bool:
    """Does any line of `sources` match one of `signatures`? (literal first, regex only on those lines)"""
    from .notebook import NotebookView, is_notebook
    from .sources import ReadStats, open_binary, read_blocks

    gates = [([lit.casefold() for lit in s.literals] if s.ignore_case else list(s.literals), s) for s in signatures]
    for source in sources:
        with open_binary(source) as stream:
            view = NotebookView() if is_notebook(source.path) else None
            for block in read_blocks(stream, ReadStats(), lambda _m: None, source.display, view=view):
                folded = block.text.casefold()
                for lits, sig in gates:
                    hay = folded if sig.ignore_case else block.text
                    if not any(lit in hay for lit in lits):
                        continue
                    for line in block.text.split("\n"):
                        probe = line.casefold() if sig.ignore_case else line
                        if any(lit in probe for lit in lits):
                            try:
                                if sig.match(line) is not None:
                                    return True
                            except TimeoutError:
                                continue
    return False


def _compare(row: dict[str, Any], before: ScanResult, after: ScanResult) -> RunChange:
    top_before, top_after = {f.id for f in before.findings}, {f.id for f in after.findings}
    all_before, all_after = {f.id for f in before.all_findings()}, {f.id for f in after.all_findings()}
    known = lambda r: any(f.severity == "error" for f in r.findings)  # noqa: E731
    unexplained_after = {u.fingerprint for u in after.unexplained}
    return RunChange(
        run_id=int(row["id"]), created=str(row.get("created") or ""), status=str(row.get("status") or "unknown"),
        added=sorted(all_after - all_before),
        hidden=sorted((top_before - top_after) & all_after),
        lost=sorted(all_before - all_after),
        newly_explained=before.run.status == "failed" and not known(before) and known(after),
        lines_explained=sum(1 for u in before.unexplained if u.fingerprint not in unexplained_after),
    )


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
