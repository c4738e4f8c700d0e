"""Derive the literal text every match of a regex must contain: the key of the one-pass literal gate."""

from __future__ import annotations

import re
import re._constants as sre_c  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from typing import Any

_OPEN_ENDED = sre_c.MAXREPEAT


def required_literal(pattern: str, ignore_case: bool = False) -> str | None:
    """Return the longest substring that every match of `pattern` contains, or None.

    Parses with the standard library's regex parser (the `regex` module's syntax is a superset; a
    pattern it cannot parse simply yields None and must declare its literal).
    """
    try:
        parsed = sre_parse.parse(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, OverflowError, RecursionError, TypeError, ValueError):
        return None
    runs = list(_literal_runs(list(parsed)))
    best = max(runs, key=len, default="")
    return best or None


def _literal_runs(items: list[tuple[Any, Any]]) -> Any:
    """Yield maximal runs of consecutive required literal characters in a parsed sequence."""
    run: list[str] = []
    for op, arg in items:
        if op is sre_c.LITERAL:
            run.append(chr(arg))
            continue
        if op is sre_c.SUBPATTERN:
            inner = list(arg[-1])
            # A plain group is transparent: its runs join the surrounding text.
            sub = _flatten_group(inner)
            if sub is not None:
                run.extend(sub)
                continue
            yield "".join(run)
            run = []
            yield from _literal_runs(inner)
            continue
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, body = arg
            body = list(body)
            chars = _flatten_group(body)
            if chars is not None and lo >= 1:
                if lo == hi:  # a fixed count of literal text is literal text
                    run.extend(chars * lo)
                    continue
                # `ab+c` always contains `ab` and `bc`
                yield "".join(run + chars * lo)
                run = list(chars)
                continue
            yield "".join(run)
            run = []
            if lo >= 1:
                yield from _literal_runs(body)
            continue
        if op is sre_c.AT:  # anchors consume nothing: they do not break a run
            continue
        yield "".join(run)
        run = []
    yield "".join(run)


def _flatten_group(items: list[tuple[Any, Any]]) -> list[str] | None:
    """Return a group's characters when it is only literals, else None."""
    chars = []
    for op, arg in items:
        if op is not sre_c.LITERAL:
            return None
        chars.append(chr(arg))
    return chars


def gate_literals(pattern: str, ignore_case: bool = False, minimum: int = 4) -> list[str] | None:
    """Literals of which every match contains at least one: one per branch of a top-level alternation.

    The pattern is split at its top-level `|` before parsing, because the parser factors a prefix shared by
    the branches out of them (`[HLS 200-111] Finished A|[HLS 200-111] Finished B` would otherwise gate on
    the common, frequent prefix only). None when some branch has no literal of `minimum` characters.
    """
    out = []
    for branch in split_top_level(pattern):
        best = required_literal(branch, ignore_case) if branch else None
        if best is None or len(best) < minimum:
            return None
        out.append(best)
    return out


def split_top_level(pattern: str) -> list[str]:
    """`a|b(c|d)|[|]` -> ['a', 'b(c|d)', '[|]']; inline global flags like `(?i)` stay with every branch."""
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
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
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
