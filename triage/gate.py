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
    """A regex matching where any of `words` starts, shaped as a trie (shared prefixes factored); it may
    stop at the shortest word, which is all a gate needs."""
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


# ASCII characters from the most to the least frequent in compile logs (measured on the real corpus): the
# pure-Python gate anchors each literal at its rarest character, so the regex engine's scan for the
# anchor's first character rarely stops.
CHAR_FREQUENCY = (" _-eto1nari|s0lpducm26f:3yg=5.4/,x8hSIvb'79UNF[]PRL()OADT*HwjCMB+VEG><kW#z;qX\\%Y\"JK$&{}@?~!ZQ^`")
_RANK = {ch: i for i, ch in enumerate(CHAR_FREQUENCY)}
ANCHOR_MIN = 4  # characters kept after the anchor point
RARE_FROM = 30  # ranks from here on count as rare enough to anchor on


def choose_anchor_chars(words: Sequence[str]) -> set[str]:
    """A small set of rare characters such that (nearly) every word contains one: greedy set cover.

    Fewer distinct first characters means the engine's scan stops less often."""
    def spots(word: str) -> set[str]:
        return {c for c in word[: max(1, len(word) - ANCHOR_MIN + 1)] if _RANK.get(c, len(_RANK)) >= RARE_FROM}

    remaining = {w: spots(w) for w in words}
    chosen: set[str] = set()
    while True:
        counts: dict[str, int] = {}
        for chars in remaining.values():
            for c in chars:
                counts[c] = counts.get(c, 0) + 1
        if not counts:
            return chosen
        best = max(sorted(counts), key=lambda c: (counts[c], _RANK.get(c, len(_RANK))))
        chosen.add(best)
        remaining = {w: chars for w, chars in remaining.items() if best not in chars}


def anchor_of(word: str, chosen: set[str]) -> str:
    """`word` from its anchor point on: the rarest of the chosen characters, else its rarest character."""
    spots = range(max(1, len(word) - ANCHOR_MIN + 1))
    picks = [i for i in spots if word[i] in chosen] or list(spots)
    start = max(picks, key=lambda i: (_RANK.get(word[i], len(_RANK)), -i))
    return word[start:]


class PythonGate:
    """The pure-Python literal pass: every literal is anchored at a rare character and all anchors form one
    trie-shaped regex, so the engine's scan for the first character rarely stops; case-insensitive literals
    run the same way over a lowercased copy of the block. A hit is then confirmed per line with `in`."""

    name = "python"

    def __init__(self, literals: Sequence[tuple[str, bool]]) -> None:
        self._ids: dict[tuple[str, bool], list[int]] = {}
        for i, (lit, fold) in enumerate(literals):
            key = (lit.lower() if fold else lit, fold)
            self._ids.setdefault(key, []).append(i)
        self.exact_words = sorted(w for w, f in self._ids if not f)  # what a `grep -F` comparison would search
        self.folded_words = sorted(w for w, f in self._ids if f)
        self._passes: list[tuple[re.Pattern[str], dict[str, list[str]], bool]] = []
        for fold in (False, True):
            words = sorted(w for w, f in self._ids if f is fold)
            if not words:
                continue
            chosen = choose_anchor_chars(words)
            anchors = {w: anchor_of(w, chosen) for w in words}
            by_first: dict[str, list[str]] = {}
            for w, anchor in anchors.items():
                by_first.setdefault(anchor[0], []).append(w)
            self._passes.append((re.compile(_trie_pattern(sorted(set(anchors.values())))), by_first, fold))

    def candidates(self, text: str) -> Candidates:
        found: Candidates = {}
        for pattern, by_first, fold in self._passes:
            self._scan(pattern, by_first, fold, text.lower() if fold else text, found)
        return found

    def _scan(self, pattern: re.Pattern[str], by_first: dict[str, list[str]], fold: bool, text: str,
              found: Candidates) -> None:
        line, counted = 0, 0
        search = pattern.search
        m = search(text)
        while m is not None:
            start = m.start()
            m = search(text, start + 1)  # anchors may overlap: never skip past one
            line += text.count("\n", counted, start)
            counted = start
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", start)
            hay = text[line_start:line_end if line_end >= 0 else len(text)]
            # The words anchored on this character: each other word is confirmed by its own anchor.
            hits = [w for w in by_first[text[start]] if w in hay]
            if hits:
                ids = found.setdefault(line, set())
                for word in hits:
                    ids.update(self._ids[(word, fold)])


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
