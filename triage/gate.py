"""The literal gate: a few fast passes over a block find every line containing any signature's literal.

Full regexes then run only on those candidate lines. Two implementations behind one interface: a
pure-Python one (each literal anchored at one character; one regex pass per anchor character, which the
engine runs as a tight scan for that character) and, when the optional `hyperscan` package is installed,
Intel Hyperscan's multi-literal matcher. Both return the same candidates, so findings are identical.
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
    """A regex matching where any of `words` starts, shaped as a trie (shared prefixes factored); it
    stops at the shortest word, which is all a gate needs (the caller confirms the whole literal)."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        if "" in node:
            return ""
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items())]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return build(trie)


# How often each printable ASCII character occurs in compile logs, per 100,000 characters (measured over
# the real logs of the corpus: Vivado, Vivado/Vitis HLS, hls4ml and Hailo DFC output).
CHAR_PER_100K = {
    ' ': 34023, '_': 5226, '-': 3445, 'e': 3328, 't': 2773, 'o': 2760, '1': 2652, 'r': 2341, 'n': 2337,
    'i': 2216, 'a': 2150, '0': 2038, 's': 1944, 'p': 1704, '|': 1674, 'm': 1532, 'd': 1526, 'u': 1482,
    'l': 1432, 'c': 1425, '2': 1337, '6': 1301, ':': 1141, 'f': 1025, '3': 779, 'y': 779, 'g': 726, '5': 679,
    '/': 630, '.': 626, '4': 549, '=': 519, 'x': 478, 'S': 463, 'I': 447, 'h': 447, '8': 444, "'": 418,
    'N': 369, ',': 342, 'v': 341, '[': 329, ']': 328, 'b': 327, '7': 323, '9': 323, 'P': 320, 'F': 311,
    'L': 297, 'U': 297, 'R': 295, 'O': 289, '(': 281, ')': 281, 'A': 258, 'D': 250, '*': 230, 'H': 220,
    'j': 211, 'T': 204, 'M': 192, 'C': 176, 'B': 175, 'w': 142, 'G': 131, 'E': 115, 'W': 95, 'k': 92, '>': 88,
    '<': 82, 'V': 78, ';': 67, 'q': 60, '+': 59, 'z': 49, 'X': 28, '\\': 24, '#': 23, '%': 13, 'J': 12, 'Y': 10,
    '"': 9, '&': 6, 'K': 5, '$': 4, '@': 2, '{': 2, '}': 2, '!': 1, '?': 1, 'Q': 1, 'Z': 1, '^': 1, '`': 1,
    '~': 1,
}

PASS_COST = 0.28      # ns per character of text for one pass (the engine's scan for one character)
ATTEMPT_COST = 14.0   # ns per occurrence of that character (trying the suffixes anchored on it)
ANCHOR_MIN = 4        # characters a literal keeps from its anchor on, so the engine filters most tries


def _share(ch: str) -> float:
    return CHAR_PER_100K.get(ch, 1) / 100_000


def _anchor_key(ch: str, fold: bool) -> str:
    """The characters one anchor needs passes for: both cases of a letter in a case-insensitive literal."""
    return ch.lower() + ch.upper() if fold and ch.lower() != ch.upper() else ch


def _spots(word: str, fold: bool) -> list[tuple[int, str]]:
    return [(i, _anchor_key(word[i], fold)) for i in range(max(1, len(word) - ANCHOR_MIN + 1))]


def choose_pass_chars(words: Sequence[tuple[str, bool]]) -> set[str]:
    """The characters to run passes for: greedy weighted set cover, where a pass costs a scan of the text
    plus a try at every occurrence of its character, and every literal must contain a chosen character.

    Rare characters are cheap but cover few literals; a common one covers many but is tried often."""
    chosen: set[str] = set()

    def cost(key: str) -> float:
        return sum(PASS_COST + _share(ch) * ATTEMPT_COST for ch in key if ch not in chosen)

    remaining = [{key for _, key in _spots(w, fold)} for w, fold in words]
    while remaining:
        counts: dict[str, int] = {}
        for keys in remaining:
            for key in keys:
                counts[key] = counts.get(key, 0) + 1
        best = max(sorted(counts), key=lambda k: counts[k] / max(cost(k), 1e-9))
        chosen.update(best)
        remaining = [keys for keys in remaining if not any(set(k) <= chosen for k in keys)]
    return chosen


class PythonGate:
    """The pure-Python literal pass. Each literal is anchored at one character (chosen so that few, cheap
    passes cover them all); one regex per anchor character, `c(?=suffixes)`, starts with that literal
    character, which the engine scans for in a tight loop instead of testing a class at every position.
    A hit names the literals it may begin; each is confirmed in place with `startswith`."""

    name = "python"

    def __init__(self, literals: Sequence[tuple[str, bool]]) -> None:
        ids: dict[tuple[str, bool], list[int]] = {}
        for i, (lit, fold) in enumerate(literals):
            ids.setdefault((lit.lower() if fold else lit, fold), []).append(i)
        self.exact_words = sorted(w for w, f in ids if not f)  # what a `grep -F` comparison would search
        self.folded_words = sorted(w for w, f in ids if f)
        chosen = choose_pass_chars(list(ids))
        # anchor -> (exact suffix -> [(word, offset of the anchor, literal ids)], [case-insensitive words])
        anchored: dict[str, tuple[dict[str, list[tuple[str, int, tuple[int, ...]]]], list]] = {}
        for (word, fold), lit_ids in ids.items():
            offset, key = min((spot for spot in _spots(word, fold) if set(spot[1]) <= chosen),
                              key=lambda spot: (sum(_share(c) for c in spot[1]), spot[0]))
            entry = (word, offset, tuple(lit_ids))
            for ch in key:
                exact, folded = anchored.setdefault(ch, ({}, []))
                if fold:
                    folded.append(entry)
                else:
                    exact.setdefault(word[offset + 1:], []).append(entry)
        self._passes: list[tuple[re.Pattern[str], dict[str, list], list]] = []
        for ch, (exact, folded) in sorted(anchored.items()):
            suffixes = sorted(exact)
            # the trie reports the shortest suffix it met: map that to every literal it may begin
            shortest = [s for s in suffixes if not any(s != t and s.startswith(t) for t in suffixes)]
            table = {t: [e for s in suffixes if s.startswith(t) for e in exact[s]] for t in shortest}
            branches = []
            if exact:
                branches.append("(" + _trie_pattern(suffixes) + ")")
            if folded:
                branches.append("(?i:" + _trie_pattern(sorted({w[o + 1:] for w, o, _ in folded})) + ")")
            self._passes.append((re.compile(re.escape(ch) + "(?=" + "|".join(branches) + ")"), table, folded))

    def candidates(self, text: str) -> Candidates:
        hits: list[tuple[int, tuple[int, ...]]] = []
        add = hits.append
        for pattern, table, folded in self._passes:
            for m in pattern.finditer(text):
                start = m.start()
                suffix = m.group(1) if table else None
                if suffix is not None:
                    for word, offset, lit_ids in table[suffix]:
                        if start >= offset and text.startswith(word, start - offset):
                            add((start, lit_ids))
                for word, offset, lit_ids in folded:
                    begin = start - offset
                    if begin >= 0 and text[begin:begin + len(word)].lower() == word:
                        add((start, lit_ids))
        found: Candidates = {}
        hits.sort(key=lambda hit: hit[0])
        line, counted = 0, 0
        for start, lit_ids in hits:
            line += text.count("\n", counted, start)
            counted = start
            ids_here = found.get(line)
            if ids_here is None:
                found[line] = set(lit_ids)
            else:
                ids_here.update(lit_ids)
        return found


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
