"""The literal gate: one fast pass over a block's raw bytes finds every line containing a signature's literal.

Full regexes then run only on those candidate lines, and only those lines are decoded into text. Two
implementations behind one interface: a pure-Python one and, when the optional `hyperscan` package is
installed, Intel Hyperscan's multi-literal matcher. Both read the same bytes and return the same candidate
lines, so findings are identical. Case-insensitive literals fold ASCII letters (as Hyperscan does).
"""

from __future__ import annotations

import hashlib
import os
import re
from array import array
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

# A candidate line of a block: (index of the line in the block, start offset, end offset (its LF), literal ids)
Line = tuple[int, int, int, set[int]]


class Gate(Protocol):
    name: str

    def lines(self, data: bytes) -> tuple[list[Line], int]: ...


def candidates(gate: Gate, data: bytes) -> dict[int, set[int]]:
    """Line index -> literal ids: the gate's answer in the shape tests compare."""
    return {idx: ids for idx, _, _, ids in gate.lines(data)[0]}


def group_lines(data: bytes, hits: Iterable[tuple[int, Iterable[int]]]) -> tuple[list[Line], int]:
    """Hits (a byte offset inside a literal, its ids), in offset order, gathered into the lines they are
    on; and the number of LFs in the block. The LFs are counted once, as the hits move forward."""
    out: list[Line] = []
    index, counted, end = 0, 0, -1
    current: set[int] = set()
    for pos, ids in hits:
        if pos <= end:
            current.update(ids)
            continue
        start = data.rfind(b"\n", 0, pos) + 1
        index += data.count(b"\n", counted, start)
        counted = start
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        current = set(ids)
        out.append((index, start, end, current))
    return out, index + data.count(b"\n", counted)


_ESCAPED = [re.escape(bytes([b])) for b in range(256)]


def _trie_pattern(words: Sequence[bytes]) -> bytes:
    """A regex matching the longest of `words` that starts here, shaped as a trie (shared prefixes
    factored, so each byte is tested once whatever the number of words)."""
    end = -1
    trie: dict[int, dict] = {}
    for word in words:
        node = trie
        for byte in word:
            node = node.setdefault(byte, {})
        node[end] = {}

    def build(node: dict[int, dict]) -> bytes:
        out = bytearray()
        while True:  # a chain of single children is written as one run of bytes
            children = [b for b in node if b != end]
            if end in node or len(children) != 1:
                break
            out += _ESCAPED[children[0]]
            node = node[children[0]]
        children.sort()
        if not children:
            return bytes(out)
        branches = [_ESCAPED[b] + build(node[b]) for b in children]
        body = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
        if end in node:  # a word ends here: go on to a longer one if the text has it (greedy), else stop
            body = (b"(?:" + body + b")?") if len(branches) == 1 else body + b"?"
        return bytes(out) + body

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
_NON_ASCII_PER_100K = 50  # UTF-8 lead and continuation bytes (quotes, ␀, box drawing) are rare in these logs
PASS_COST = 0.4      # ns per byte of text for one pass (the engine's scan for one byte)
ATTEMPT_COST = 40.0  # ns per occurrence of that byte (trying the suffixes anchored on it)
ANCHOR_MIN = 4       # bytes a literal keeps from its anchor on, so the lookahead filters most tries


def _share(byte: int) -> float:
    """How often `byte` occurs in compile logs, per 100,000 bytes."""
    if byte >= 0x80:
        return _NON_ASCII_PER_100K
    return CHAR_PER_100K.get(chr(byte), 1)


def _folded_share(byte: int) -> float:
    """The same in lower-cased text, where a lower-case letter also stands for its capital."""
    return _share(byte) + (_share(byte - 32) if 97 <= byte <= 122 else 0)


def _spots(word: bytes) -> range:
    """The offsets a literal may be anchored at (any but its last ANCHOR_MIN - 1 bytes)."""
    return range(max(1, len(word) - ANCHOR_MIN + 1))


def choose_pass_bytes(words: Sequence[bytes], share: Any = _share) -> set[int]:
    """The bytes to run passes for: greedy weighted set cover, where a pass costs a scan of the text plus a
    try at every occurrence of its byte, and every literal must contain a chosen byte at one of its spots.

    Rare bytes are cheap but cover few literals; a common one covers many but is tried often. Counts are
    kept incrementally, so choosing is linear in the total size of the literals."""
    spots = [{w[i] for i in _spots(w)} for w in words]
    holders: dict[int, list[int]] = {}
    for i, s in enumerate(spots):
        for b in s:
            holders.setdefault(b, []).append(i)
    counts = {b: len(h) for b, h in holders.items()}
    covered = [False] * len(words)
    chosen: set[int] = set()
    while counts:
        best = max(sorted(counts), key=lambda b: counts[b] / (PASS_COST + share(b) / 100_000 * ATTEMPT_COST))
        chosen.add(best)
        for i in holders[best]:
            if not covered[i]:
                covered[i] = True
                for b in spots[i]:
                    if b in counts:
                        counts[b] -= 1
        counts = {b: n for b, n in counts.items() if n > 0 and b not in chosen}
    return chosen


Entry = tuple[bytes, int, tuple[int, ...]]  # a literal, the offset of its anchor byte, its ids


def _compile(source: bytes) -> tuple[re.Pattern[bytes], tuple[Any, ...] | bytes]:
    """The compiled pattern and a frozen form of it that a cached gate thaws without parsing again.

    A pass's trie is tens of KB of pattern for a large knowledge base; parsing it is most of the time a
    cached gate would still take at start-up. The frozen form is what the engine itself is built from
    (the standard library's internal compile step, split in two); when that step is not available, it
    is the source, compiled as usual on load."""
    try:
        from re import _compiler, _parser  # noqa: PLC0415

        parsed = _parser.parse(source, 0)
        code = _compiler._code(parsed, 0)
        index = [None] * parsed.state.groups
        for name, i in parsed.state.groupdict.items():
            index[i] = name
        frozen = (source, parsed.state.flags, array("I", code), parsed.state.groups - 1,
                  dict(parsed.state.groupdict), tuple(index))
        return _thaw(frozen), frozen
    except Exception:  # noqa: BLE001 - an interpreter without those internals compiles as usual
        return re.compile(source), source


def _thaw(frozen: tuple[Any, ...] | bytes) -> re.Pattern[bytes]:
    if isinstance(frozen, bytes):
        return re.compile(frozen)
    try:
        import _sre  # noqa: PLC0415

        source, flags, code, groups, groupindex, indexgroup = frozen
        return _sre.compile(source, flags, code.tolist(), groups, groupindex, indexgroup)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - an entry from another interpreter build: compile from the source
        return re.compile(frozen[0])


class _Pass:
    """One regex pass for one anchor byte `c`: `c(?=trie of what follows it in each literal anchored on
    it)`. The engine scans for `c` in a tight loop; a hit names the few literals it may begin (those whose
    suffix the matched one extends), each confirmed in place with `startswith`."""

    def __init__(self, anchor: int, entries: list[Entry]) -> None:
        follow: dict[bytes, list[Entry]] = {}
        for entry in entries:
            word, offset, _ = entry
            follow.setdefault(word[offset + 1:], []).append(entry)
        # the trie reports the longest suffix it met; the literals there are those of every suffix it extends
        self.table: dict[bytes, list[Entry]] = {
            suffix: [e for k in range(len(suffix) + 1) for e in follow.get(suffix[:k], ())] for suffix in follow
        }
        self.pattern, self._frozen = _compile(re.escape(bytes([anchor])) + b"(?=(" + _trie_pattern(sorted(follow)) + b"))")

    def __getstate__(self) -> dict[str, Any]:
        return {"table": self.table, "frozen": self._frozen}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.table, self._frozen = state["table"], state["frozen"]
        self.pattern = _thaw(self._frozen)

    def hits(self, data: bytes, out: list[tuple[int, tuple[int, ...]]]) -> None:
        table = self.table
        add = out.append
        startswith = data.startswith
        for m in self.pattern.finditer(data):
            start = m.start()
            for word, offset, ids in table[m.group(1)]:
                if start >= offset and startswith(word, start - offset):
                    add((start, ids))


def _passes(words: dict[bytes, tuple[int, ...]], share: Any) -> list[_Pass]:
    chosen = choose_pass_bytes(list(words), share)
    anchored: dict[int, list[Entry]] = {}
    for word, ids in words.items():
        offset = min((i for i in _spots(word) if word[i] in chosen), key=lambda i: (share(word[i]), i))
        anchored.setdefault(word[offset], []).append((word, offset, ids))
    return [_Pass(anchor, entries) for anchor, entries in sorted(anchored.items())]


class PythonGate:
    """The pure-Python literal pass over a block's bytes: one regex pass per anchor byte (a weighted set
    cover picks few, rare ones), each a tight scan for that byte. Case-insensitive literals are kept
    lower-case and looked for the same way in a lower-cased copy of the block (made only when there are any)."""

    name = "python"

    def __init__(self, literals: Sequence[tuple[str, bool]]) -> None:
        groups: dict[tuple[bytes, bool], list[int]] = {}
        for i, (lit, fold) in enumerate(literals):
            word = lit.encode("utf-8")
            groups.setdefault((word.lower() if fold else word, fold), []).append(i)
        self.exact_words = sorted(w.decode("utf-8") for w, f in groups if not f)  # for a `rg -F` comparison
        self.folded_words = sorted(w.decode("utf-8") for w, f in groups if f)
        self._exact = _passes({w: tuple(ids) for (w, f), ids in groups.items() if not f}, _share)
        self._folded = _passes({w: tuple(ids) for (w, f), ids in groups.items() if f}, _folded_share)

    def lines(self, data: bytes) -> tuple[list[Line], int]:
        hits: list[tuple[int, tuple[int, ...]]] = []
        for p in self._exact:
            p.hits(data, hits)
        if self._folded:
            lowered = data.lower()
            for p in self._folded:
                p.hits(lowered, hits)
        hits.sort(key=lambda h: h[0])  # runs of sorted hits, one per pass: quick to merge
        return group_lines(data, hits)


class HyperscanGate:
    """Hyperscan block mode over the block's bytes (optional extra `triage[fast]`)."""

    name = "hyperscan"

    def __init__(self, literals: Sequence[tuple[str, bool]], serialized: bytes | None = None) -> None:
        import hyperscan  # noqa: PLC0415 - optional dependency

        if serialized is not None:
            self._db = hyperscan.loadb(serialized, mode=hyperscan.HS_MODE_BLOCK)
        else:
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            flags = [(hyperscan.HS_FLAG_CASELESS if fold else 0) for _, fold in literals]
            self._db.compile(
                expressions=[re.escape(lit).encode("utf-8") for lit, _ in literals],
                ids=list(range(len(literals))), elements=len(literals), flags=flags,
            )
        self._scratch = hyperscan.Scratch(self._db)

    def serialize(self) -> bytes:
        import hyperscan  # noqa: PLC0415

        return bytes(hyperscan.dumpb(self._db))

    def lines(self, data: bytes) -> tuple[list[Line], int]:
        """`group_lines` done in the match callback: matches arrive in order of their end, and most of them
        fall on a line an earlier one opened, which then costs one comparison and one set insertion."""
        out: list[Line] = []
        add = out.append
        rfind, find, count = data.rfind, data.find, data.count
        state = [-1, 0, 0, set()]  # end (LF) of the current line, its index, bytes counted up to, its ids

        def on_match(lit_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            pos = end - 1
            if pos <= state[0]:
                state[3].add(lit_id)
                return
            start = rfind(b"\n", 0, pos) + 1
            state[1] += count(b"\n", state[2], start)
            state[2] = start
            line_end = find(b"\n", pos)
            state[0] = line_end if line_end >= 0 else len(data)
            state[3] = ids = {lit_id}
            add((state[1], start, state[0], ids))

        self._db.scan(data, match_event_handler=on_match, scratch=self._scratch)
        return out, state[1] + count(b"\n", state[2])

    def __getstate__(self) -> dict[str, Any]:
        return {"serialized": self.serialize()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__([], serialized=state["serialized"])  # type: ignore[misc]


def make_gate(literals: Sequence[tuple[str, bool]], prefer: str | None = None, cache: bool = True) -> Gate:
    """The fastest gate available: hyperscan when installed, unless TRIAGE_MATCHER=python says otherwise.

    A gate built for the same literals before is loaded from the cache (a compiled hyperscan database
    loads in milliseconds; the Python gate's passes thaw without parsing)."""
    choice = prefer or os.environ.get("TRIAGE_MATCHER", "auto")
    if choice in ("auto", "hyperscan"):
        try:
            import hyperscan  # noqa: PLC0415, F401 - optional dependency
        except ImportError:
            if choice == "hyperscan":
                raise
        else:
            return _cached(HyperscanGate, literals, f"hyperscan={hyperscan.__version__}", cache)
    return _cached(PythonGate, literals, "", cache)


def _cached(kind: Any, literals: Sequence[tuple[str, bool]], versions: str, cache: bool) -> Gate:
    if not cache:
        return kind(literals)  # type: ignore[no-any-return]
    from . import cache as disk  # noqa: PLC0415

    digest = hashlib.sha256()
    for lit, fold in literals:
        digest.update(lit.encode("utf-8", "surrogatepass") + (b"\1" if fold else b"\0"))
    key, code = digest.hexdigest()[:16], disk.code_hash(["gate.py"], versions)
    name = f"gate_{kind.name}"
    gate = disk.load(name, key, code)
    if not isinstance(gate, kind):
        gate = kind(literals)
        disk.store(name, key, code, gate)
    return gate  # type: ignore[no-any-return]
