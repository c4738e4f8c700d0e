"""Knowledge-base lookups without a log: explain a pasted line, list and show causes, generate the index."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model import SEVERITY_RANK, ScanResult
from .packs import Cause, PackSet

if TYPE_CHECKING:  # `kb search`, `kb show` and `packs list` need neither the scanner nor difflib
    from .scan import Matcher


@dataclass
class Explanation:
    text: str
    result: ScanResult
    closest: list[tuple[Cause, float]]
    message_id: str | None = None  # the tool's message id in the text, when no signature matched it
    same_id: list[Cause] = field(default_factory=list)  # known causes of that message, worded otherwise

    def to_dict(self) -> dict[str, Any]:
        from .formats import finding_dict

        return {
            "text": self.text,
            "findings": [finding_dict(f) for f in self.result.findings],
            "message_id": self.message_id,
            "same_message_id": [c.to_dict() for c in self.same_id],
            "closest": [dict(c.to_dict(), similarity=round(score, 3)) for c, score in self.closest],
        }


def explain(text: str, packs: PackSet, matcher: Matcher | None = None, closest: int = 3) -> Explanation:
    """Run the matcher on pasted text; when nothing matches, rank the causes whose examples look closest."""
    from .scan import scan_text  # noqa: PLC0415

    result = scan_text(text, packs, matcher)
    if result.findings:
        return Explanation(text, result, [])
    from .advice import message_id  # noqa: PLC0415

    mid = message_id(text)
    same = packs.by_message.get(mid.split()[-1], []) if mid else []
    near = [(c, score) for c, score in closest_causes(text, packs, closest + len(same)) if c not in same][:closest]
    return Explanation(text, result, near, mid, same[:closest])


SHORTLIST = 40  # causes the full-text index proposes for the character-level comparison


def closest_causes(text: str, packs: PackSet, limit: int = 3) -> list[tuple[Cause, float]]:
    """Similarity of the masked text to the masked examples (numbers, paths, names ignored) of the causes
    that share words with it: the full-text index shortlists them, so the cost does not grow with the
    knowledge base."""
    import difflib  # noqa: PLC0415

    from .fingerprint import normalise  # noqa: PLC0415

    wanted = normalise(text)[:500]
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    words = " ".join(re.findall(r"\w+", text)[:64])  # as the index splits them; no phrase quoting
    ids = [r["id"] for r in search(packs, words, SHORTLIST)]
    causes = [packs.causes[i] for i in ids if i in packs.causes]
    # `ratio()` is quadratic in Python. The longest common subsequence bounds it from above (the blocks it
    # matches are one such subsequence) and costs a few integer operations a character: examples are
    # compared best bound first, and once a bound falls below the `limit`-th best score so far no example
    # left can change the ranking. The scores are the ones comparing every example gives.
    masks = _char_masks(wanted)
    bounded: list[tuple[float, int, str]] = []
    for rank, cause in enumerate(causes):
        for example in dict.fromkeys(normalise(e)[:500] for e in cause.examples):
            total = len(example) + len(wanted)
            bound = 2.0 * _lcs_length(example, masks, len(wanted)) / total if total else 1.0
            bounded.append((bound, rank, example))
    bounded.sort(key=lambda b: -b[0])
    best = [0.0] * len(causes)
    for bound, rank, example in bounded:
        if bound < _kth_best(best, limit):
            break
        if bound <= best[rank]:
            continue
        matcher.set_seq1(example)
        best[rank] = max(best[rank], matcher.ratio())
    scored = sorted(zip(causes, best), key=lambda cs: (-cs[1], cs[0].id))
    return [cs for cs in scored[:limit] if cs[1] > 0.2]


def _kth_best(scores: list[float], k: int) -> float:
    return sorted(scores, reverse=True)[k - 1] if 0 < k <= len(scores) else 0.0


def _char_masks(text: str) -> dict[str, int]:
    """For each character of `text`, the bit set of where it occurs."""
    masks: dict[str, int] = {}
    for i, ch in enumerate(text):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    return masks


def _lcs_length(a: str, masks: dict[str, int], n: int) -> int:
    """The length of the longest common subsequence of `a` and the `n`-character text of `masks`
    (bit-parallel: Allison and Dix, 1986; Hyyrö, 2004)."""
    v = (1 << n) - 1
    for mask in filter(None, map(masks.get, a)):  # a character `b` lacks leaves the row as it is
        u = v & mask
        v = (v + u) | (v - u)  # carries only move up: bits past n never reach the n that count
    return n - (v & ((1 << n) - 1)).bit_count()


def search(packs: PackSet, query: str, limit: int = 20) -> list[dict[str, Any]]:
    """Ranked full-text search over titles, causes, workarounds and example lines (`ftsquery`), on the same
    index the store keeps beside its runs."""
    return _search(packs.digest, lambda: packs, query, limit)


def search_packs(extra: Iterable[str | Path], query: str, limit: int = 20) -> list[dict[str, Any]]:
    """`search` over the packs `load_packs(extra)` loads, without loading them when their index is cached
    (the index is keyed by their content and the loader's code: a changed pack is loaded, and checked, first)."""
    from .packs import load_packs, pack_digest  # noqa: PLC0415

    return _search(pack_digest(extra), lambda: load_packs(extra), query, limit)


def _search(digest: str, load: Callable[[], PackSet], query: str, limit: int) -> list[dict[str, Any]]:
    from .ftsquery import search_causes  # noqa: PLC0415

    try:
        with knowledge_db(digest, load) as conn:
            return search_causes(conn, query, limit)
    except sqlite3.Error:  # a damaged cached index: a cache is an optimisation, so index in memory
        with knowledge_db(digest, load, cached=False) as conn:
            return search_causes(conn, query, limit)


KB_CODE = ("store.py", "kb.py", "packs.py", "literals.py", "model.py")  # what the index is built by and from


@contextmanager
def knowledge_db(digest: str, load: Callable[[], PackSet], cached: bool = True) -> Iterator[sqlite3.Connection]:
    """The full-text index of the packs with this digest (`load` loads them), read-only: built once by the
    store and kept in the cache, so a lookup neither indexes every cause again nor imports sqlite-utils. In
    memory when there is no cache."""
    from . import cache as disk  # noqa: PLC0415

    path = disk.path_for("kb", digest, disk.code_hash(KB_CODE), ".db") if cached else None
    conn = None
    if path is not None:
        try:
            if not path.is_file():
                _build_knowledge_db(load(), path)
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            disk.touch(path)
        except (OSError, sqlite3.Error):
            conn = None
    if conn is not None:
        try:
            yield conn
        finally:
            conn.close()
        return
    from .store import open_store  # noqa: PLC0415

    store = open_store(None)
    try:
        store.sync_causes(load())
        yield store.conn
    finally:
        store.close()


def _build_knowledge_db(packs: PackSet, path: Path) -> None:
    from . import cache as disk  # noqa: PLC0415
    from .store import open_store  # noqa: PLC0415

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    store = open_store(tmp)
    try:
        store.sync_causes(packs)
        store.conn.execute("PRAGMA journal_mode=DELETE")  # one file, readable without write access
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
    import difflib  # noqa: PLC0415

    near = difflib.get_close_matches(wanted, list(packs.causes), n=3, cutoff=0.5)
    return f"did you mean {', '.join(near)}?" if near else "`triage packs list` shows every id"
