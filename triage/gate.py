"""The literal gate: one pass over a block finds every line containing any signature's literal.

Full regexes then run only on those candidate lines. Two implementations behind one interface: a
pure-Python one (a trie-shaped regex, so the engine follows one path per position instead of trying
every literal) and, when the optional `hyperscan` package is installed, Intel Hyperscan's multi-literal
matcher. Both return the same candidates, so findings are identical.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Protocol

Candidates = dict[int, set[int]]  # line index within the block -> ids of the literals on that line


class Gate(Protocol):
    name: str

    def candidates(self, text: str) -> Candidates: ...


def _trie_pattern(words: Sequence[str]) -> str:
    """A regex equivalent to the alternation of `words`, shaped as a trie (shared prefixes factored)."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # A word ending here is enough: the shortest literal already proves the line is a candidate.
        return "" if "" in node else body

    return build(trie)


class PythonGate:
    """Trie regexes (one case-sensitive, one case-insensitive) run with `re.finditer` over the block."""

    name = "python"

    def __init__(self, literals: Sequence[tuple[str, bool]]) -> None:
        self._ids: dict[tuple[str, bool], list[int]] = {}
        for i, (lit, fold) in enumerate(literals):
            key = (lit.casefold() if fold else lit, fold)
            self._ids.setdefault(key, []).append(i)
        exact = sorted({k for k, fold in self._ids if not fold})
        folded = sorted({k for k, fold in self._ids if fold})
        self._exact = re.compile(_trie_pattern(exact)) if exact else None
        self._folded = re.compile(_trie_pattern(folded), re.IGNORECASE) if folded else None
        self._exact_words = exact
        self._folded_words = folded

    def candidates(self, text: str) -> Candidates:
        found: Candidates = {}
        if self._exact is not None:
            self._scan(self._exact, self._exact_words, False, text, found)
        if self._folded is not None:
            self._scan(self._folded, self._folded_words, True, text, found)
        return found

    def _scan(self, pattern: re.Pattern[str], words: list[str], fold: bool, text: str, found: Candidates) -> None:
        pos, line = 0, 0
        while True:
            m = pattern.search(text, pos)
            if m is None:
                return
            start = m.start()
            line += text.count("\n", pos, start)
            line_end = text.find("\n", start)
            if line_end < 0:
                line_end = len(text)
            hay = text[text.rfind("\n", 0, start) + 1:line_end]
            if fold:
                hay = hay.casefold()
            # The trie stops at the shortest word: collect every literal of the line at once.
            ids = found.setdefault(line, set())
            for word in words:
                if word in hay:
                    ids.update(self._ids[(word, fold)])
            pos = line_end + 1
            line += 1


class HyperscanGate:
    """Hyperscan block mode over the UTF-8 bytes of the block (optional extra `triage[fast]`)."""

    name = "hyperscan"

    def __init__(self, literals: Sequence[tuple[str, bool]]) -> None:
        import hyperscan  # noqa: PLC0415 - optional dependency

        self._hs = hyperscan
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        flags = [(hyperscan.HS_FLAG_CASELESS if fold else 0) for _, fold in literals]
        self._db.compile(
            expressions=[re.escape(lit).encode("utf-8") for lit, _ in literals],
            ids=list(range(len(literals))), elements=len(literals), flags=flags,
        )
        self._scratch = hyperscan.Scratch(self._db)

    def candidates(self, text: str) -> Candidates:
        data = text.encode("utf-8")
        ends: list[tuple[int, int]] = []

        def on_match(lit_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            ends.append((end, lit_id))

        self._db.scan(data, match_event_handler=on_match, scratch=self._scratch)
        found: Candidates = {}
        if not ends:
            return found
        ends.sort()
        pos, line = 0, 0
        for end, lit_id in ends:
            line += data.count(b"\n", pos, end - 1)
            pos = end - 1
            found.setdefault(line, set()).add(lit_id)
        return found


def make_gate(literals: Sequence[tuple[str, bool]], prefer: str | None = None) -> Gate:
    """The fastest gate available: hyperscan when installed, unless TRIAGE_MATCHER=python says otherwise."""
    choice = prefer or os.environ.get("TRIAGE_MATCHER", "auto")
    if choice in ("auto", "hyperscan"):
        try:
            return HyperscanGate(literals)
        except ImportError:
            if choice == "hyperscan":
                raise
    return PythonGate(literals)
