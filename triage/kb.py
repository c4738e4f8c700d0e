"""Knowledge-base lookups without a log: explain a pasted line, list and show causes, generate the index."""

from __future__ import annotations

import difflib
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .fingerprint import normalise
from .model import SEVERITY_RANK, ScanResult
from .packs import Cause, PackSet
from .scan import Matcher, scan_text

if TYPE_CHECKING:
    from .store import Store


@dataclass
class Explanation:
    text: str
    result: ScanResult
    closest: list[tuple[Cause, float]]

    def to_dict(self) -> dict[str, Any]:
        from .formats import finding_dict

        return {
            "text": self.text,
            "findings": [finding_dict(f) for f in self.result.findings],
            "closest": [dict(c.to_dict(), similarity=round(score, 3)) for c, score in self.closest],
        }


def explain(text: str, packs: PackSet, matcher: Matcher | None = None, closest: int = 3) -> Explanation:
    """Run the matcher on pasted text; when nothing matches, rank the causes whose examples look closest."""
    result = scan_text(text, packs, matcher)
    near: list[tuple[Cause, float]] = []
    if not result.findings:
        near = closest_causes(text, packs, closest)
    return Explanation(text, result, near)


SHORTLIST = 40  # causes the full-text index proposes for the character-level comparison


def closest_causes(text: str, packs: PackSet, limit: int = 3) -> list[tuple[Cause, float]]:
    """Similarity of the masked text to the masked examples (numbers, paths, names ignored) of the causes
    that share words with it: the full-text index shortlists them, so the cost does not grow with the
    knowledge base."""
    wanted = normalise(text)[:500]
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    with knowledge_db(packs) as store:
        words = " ".join(re.findall(r"\w+", text)[:64])  # as the index splits them; no phrase quoting
        ids = [r["id"] for r in store.search_causes(words, limit=SHORTLIST)]
    scored = []
    for cause in (packs.causes[i] for i in ids if i in packs.causes):
        best = 0.0
        for example in cause.examples:
            matcher.set_seq1(normalise(example)[:500])
            if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
                continue
            best = max(best, matcher.ratio())
        scored.append((cause, best))
    scored.sort(key=lambda cs: (-cs[1], cs[0].id))
    return [cs for cs in scored[:limit] if cs[1] > 0.2]


def search(packs: PackSet, query: str, limit: int = 20) -> list[dict[str, Any]]:
    """Ranked full-text search over titles, causes, workarounds and example lines.

    Goes through the store's FTS table (an in-memory store here), the same one `runs` and reports read.
    """
    with knowledge_db(packs) as store:
        return store.search_causes(query, limit=limit)


def knowledge_db(packs: PackSet) -> Store:
    """The knowledge base as a (read-only) store with its full-text index: built once per pack set and
    kept in the cache, so a lookup does not index every cause again. In memory when there is no cache."""
    from . import cache as disk  # noqa: PLC0415
    from .store import Store, open_store  # noqa: PLC0415

    path = disk.path_for("kb", packs.digest, disk.code_hash(["store.py", "kb.py"]), ".db")
    if path is not None:
        try:
            if not path.is_file():
                _build_knowledge_db(packs, path)
            from sqlite_utils import Database  # noqa: PLC0415

            disk.touch(path)
            return Store(Database(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)), str(path))
        except (OSError, sqlite3.Error):
            pass  # a cache is an optimisation: index in memory instead
    store = open_store(None)
    store.sync_causes(packs)
    return store


def _build_knowledge_db(packs: PackSet, path: Path) -> None:
    from . import cache as disk  # noqa: PLC0415
    from .store import open_store  # noqa: PLC0415

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    store = open_store(tmp)
    try:
        store.sync_causes(packs)
        store.db.conn.execute("PRAGMA journal_mode=DELETE")  # one file, readable without write access
    finally:
        store.close()
    os.replace(tmp, path)
    disk.prune("kb", current=path)


def list_causes(packs: PackSet, tool: str | None = None) -> list[Cause]:
    causes = [c for c in packs.causes.values() if tool is None or c.tool == tool or c.id.startswith(f"{tool}/")]
    return sorted(causes, key=lambda c: (c.tool, SEVERITY_RANK[c.severity], c.id))


def causes_index_markdown(packs: PackSet) -> str:
    """The generated index of every known cause (docs/causes.md), kept in sync by a test."""
    lines = [
        "# Known causes",
        "",
        "Generated from the packs in `patterns/` by `triage kb index`; do not edit by hand.",
        "",
        f"{len(packs.causes)} causes.",
        "",
        "| id | severity | title | tool | versions |",
        "|---|---|---|---|---|",
    ]
    for c in list_causes(packs):
        cells = [f"`{c.id}`", c.severity, c.title, c.tool, c.versions or ""]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def closest_ids(packs: PackSet, wanted: str) -> str:
    near = difflib.get_close_matches(wanted, list(packs.causes), n=3, cutoff=0.5)
    return f"did you mean {', '.join(near)}?" if near else "`triage packs list` shows every id"
