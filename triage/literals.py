"""Derive, from a regex, strings every match must contain one of: the keys of the literal gate."""

from __future__ import annotations

import re
import re._constants as sre_c  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from typing import Any

_OPEN_ENDED = sre_c.MAXREPEAT
MAX_SET = 16  # a literal set grows by cross product (`(a|b)(c|d)`); past this size it stops being one
_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None))
_ZERO_WIDTH = (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT)
_SMALL_CLASS = 4  # `['’]` is two literals; `[a-z]` is not literal at all


def literal_set(pattern: str, ignore_case: bool = False) -> list[str] | None:
    """The best set of strings such that every match of `pattern` contains at least one, or None.

    Alternations and small character classes inside a run expand it (`(synth|opt)_design failed` gives
    `synth_design failed` and `opt_design failed`, not the frequent ` failed`), so the gate lets through only
    lines that can match. "Best" is the set whose shortest member is longest. Parses with the standard
    library's regex parser (the `regex` module's syntax is a superset; a pattern it cannot parse yields None
    and must declare its literal).
    """
    try:
        parsed = sre_parse.parse(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, OverflowError, RecursionError, TypeError, ValueError):
        return None
    return _best_set(parsed)


def _best_set(parsed: Any) -> list[str] | None:
    sets = [s for s in _required_sets(list(parsed)) if s and all(s)]
    if not sets:
        return None
    return max(sets, key=lambda s: (min(map(len, s)), -len(s)))


def _concat(run: list[str], piece: list[str]) -> list[str] | None:
    if len(run) == 1 and len(piece) == 1:  # a plain character after plain text: by far the most common
        return [run[0] + piece[0]]
    out = list(dict.fromkeys(a + b for a in run for b in piece))
    return out if len(out) <= MAX_SET else None


def _required_sets(items: list[tuple[Any, Any]]) -> Any:
    """Yield the literal sets a required sequence guarantees: maximal runs of adjacent exact pieces."""
    run = [""]
    for op, arg in items:
        piece = _piece(op, arg)
        if piece is None:
            yield run
            run = [""]
            yield from _inside(op, arg)
            continue
        strings, complete = piece
        joined = _concat(run, strings)
        if joined is None:  # too many combinations: start over from this piece
            yield run
            joined = strings
        run = joined
        if not complete:
            yield run
            run = [""]
            if op in _REPEATS:  # `ab+c` contains `ab` and also `bc`: the last copy touches what follows
                run = _body_strings(arg) or [""]
            else:
                yield from _inside(op, arg)
    yield run


def _inside(op: Any, arg: Any) -> Any:
    """What an item that ends a run still guarantees: a required group's own runs, and for an alternation the
    union of its alternatives' own sets."""
    inner = _required_body(op, arg)
    if inner is not None:
        yield from _required_sets(inner)
    if op is sre_c.BRANCH:
        yield _branch_union(arg)


def _branch_union(arg: Any) -> list[str]:
    """The best set of each alternative, together: a match goes through one alternative, so it contains a
    member of that one's set. Finds `-542] Cannot flatten a loop nest` where the alternatives only share a
    short leading run (`[XFORM`, `[v++`). Empty (never chosen) when an alternative has no set."""
    out: list[str] = []
    for alternative in arg[1]:
        best = _best_set(alternative)
        if best is None:
            return []
        out.extend(s for s in best if s not in out)
    return out if len(out) <= MAX_SET else []


def _required_body(op: Any, arg: Any) -> list[tuple[Any, Any]] | None:
    """The items inside a group or a repeat that must occur whenever this item matches."""
    if op is sre_c.SUBPATTERN:
        return list(arg[-1])
    if op in _REPEATS and arg[0] >= 1:
        return list(arg[2])
    return None


def _body_strings(arg: Any) -> list[str] | None:
    """What one copy of a repeated literal body is (`b` of `ab+c`), else None."""
    piece = _leading(list(arg[2]))
    return piece[0] if piece is not None and piece[1] else None


def _piece(op: Any, arg: Any) -> tuple[list[str], bool] | None:
    """(strings, complete): a match of this item is one of `strings` (complete) or starts with one; None
    when the item guarantees no text."""
    if op is sre_c.LITERAL:
        return [chr(arg)], True
    if op in _ZERO_WIDTH:  # anchors and lookarounds consume nothing: adjacent text stays adjacent
        return [""], True
    if op is sre_c.IN:
        chars = [chr(a) for o, a in arg if o is sre_c.LITERAL]
        if len(chars) == len(arg) and 0 < len(chars) <= _SMALL_CLASS:
            return chars, True
        return None
    if op is sre_c.SUBPATTERN:
        return _leading(list(arg[-1]))
    if op is sre_c.BRANCH:
        out: list[str] = []
        complete = True
        for alternative in arg[1]:
            lead = _leading(list(alternative))
            if lead is None:
                return None
            out.extend(lead[0])
            complete = complete and lead[1]
        out = list(dict.fromkeys(out))
        return (out, complete) if len(out) <= MAX_SET else None
    if op in _REPEATS:
        lo, hi, body = arg
        lead = _leading(list(body))
        if lead is None or not lead[1] or lo < 1:
            return None
        strings: list[str] | None = [""]
        for _ in range(min(lo, 64)):
            strings = _concat(strings, lead[0]) if strings is not None else None
        if strings is None:
            return None
        return strings, lo == hi and lo <= 64
    return None


def _leading(items: list[tuple[Any, Any]]) -> tuple[list[str], bool] | None:
    """The strings every match of a sequence starts with (complete when the sequence is only those)."""
    run = [""]
    for op, arg in items:
        piece = _piece(op, arg)
        if piece is None:
            return (run, False) if all(run) else None
        joined = _concat(run, piece[0])
        if joined is None:
            return (run, False) if all(run) else None
        run = joined
        if not piece[1]:
            return run, False
    return run, True


def gate_literals(pattern: str, ignore_case: bool = False, minimum: int = 4) -> list[str] | None:
    """Literals of which every match contains at least one: the best literal set of each branch of a
    top-level alternation.

    The pattern is split at its top-level `|` before parsing, because the parser factors a prefix shared by
    the branches out of them. None when some branch has no set whose every member has `minimum` characters.
    """
    out: list[str] = []
    for branch in split_top_level(pattern):
        best = literal_set(branch, ignore_case) if branch else None
        if best is None or min(map(len, best)) < minimum:
            return None
        out.extend(s for s in best if s not in out)
    return out


def analyse(pattern: str, ignore_case: bool = False, minimum: int = 4) -> tuple[int, list[str] | None]:
    """`(repeat_product(pattern), gate_literals(pattern, ignore_case, minimum))`, parsing the pattern once
    when it has no top-level alternation (most signatures): validating a large pack is mostly parsing."""
    branches = split_top_level(pattern)
    if len(branches) > 1:
        return repeat_product(pattern), gate_literals(pattern, ignore_case, minimum)
    try:
        parsed = sre_parse.parse(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, OverflowError, RecursionError, TypeError, ValueError):
        return 0, None
    best = _best_set(parsed) if pattern else None
    if best is None or min(map(len, best)) < minimum:
        return _max_product(list(parsed)), None
    return _max_product(list(parsed)), best


def split_top_level(pattern: str) -> list[str]:
    """`a|b(c|d)|[|]` -> ['a', 'b(c|d)', '[|]']; inline global flags like `(?i)` stay with every branch."""
    if "|" not in pattern:  # most signatures: nothing to split
        return [pattern]
    flags = ""
    m = re.match(r"^\(\?[aiLmsux]+\)", pattern)
    if m:
        flags, pattern = m.group(0), pattern[m.end():]
    parts, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":
                i += 1
            elif pattern[i + 1:i + 3] == "^]":
                i += 2
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return [flags + p for p in parts]


def repeat_product(pattern: str) -> int:
    """The largest number of copies a counted repeat expands to (`(?:x{1000}){1000}` -> 1,000,000).

    Both regex engines expand counted repeats at compile time, so a pack must be checked before compiling.
    Unbounded repeats (`*`, `+`, `{3,}`) count as their minimum. 0 when the pattern does not parse here.
    """
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError, TypeError, ValueError):
        return 0
    return _max_product(list(parsed))


def _max_product(items: list[tuple[Any, Any]]) -> int:
    best = 1
    for op, arg in items:
        if op in _REPEATS:
            lo, hi, body = arg
            count = hi if hi < _OPEN_ENDED else lo
            best = max(best, max(count, 1) * _max_product(list(body)))
        elif op is sre_c.SUBPATTERN:
            best = max(best, _max_product(list(arg[-1])))
        elif op is sre_c.BRANCH:
            best = max([best] + [_max_product(list(b)) for b in arg[1]])
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            best = max(best, _max_product(list(arg[1])))
    return best
