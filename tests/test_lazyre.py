"""Module-level regexes compiled on first use behave as the compiled pattern."""

from __future__ import annotations

import re

import regex

from triage.lazyre import LazyPattern, lazy


def test_a_lazy_pattern_compiles_on_first_use_then_answers_as_the_pattern() -> None:
    calls: list[tuple[str, int]] = []

    def compile_counted(pattern: str, flags: int = 0) -> regex.Pattern[str]:
        calls.append((pattern, flags))
        return regex.compile(pattern, flags)

    pat = lazy(compile_counted, r"(?P<n>\d+) errors?", regex.IGNORECASE)
    assert isinstance(pat, LazyPattern) and calls == []
    assert pat.search("Found 3 ERRORS").group("n") == "3"
    assert pat.sub("N", "1 error, 2 errors") == "N, N" and pat.groupindex == {"n": 1}
    assert [m.group(0) for m in pat.finditer("4 errors 5 error")] == ["4 errors", "5 error"]
    assert pat.search("7 errors", timeout=1.0) is not None  # the regex module's own keywords pass through
    assert calls == [(r"(?P<n>\d+) errors?", regex.IGNORECASE)]  # compiled once


def test_a_lazy_standard_library_pattern() -> None:
    pat = lazy(re.compile, r"<(\w+)>", re.S)
    assert pat.findall("<a> and <b>") == ["a", "b"] and pat.flags & re.S
