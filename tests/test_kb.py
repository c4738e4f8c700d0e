"""`explain`'s closest causes: the pruned ranking gives what comparing every example gives."""

from __future__ import annotations

import difflib
import re

from hypothesis import given
from hypothesis import strategies as st

from triage import kb
from triage.fingerprint import normalise

from .conftest import CORPUS


def _lcs_table(a: str, b: str) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


@given(st.text(alphabet="ab <N>x", max_size=40), st.text(alphabet="ab <N>y", max_size=40))
def test_lcs_length_is_the_textbook_one_and_bounds_difflib(a: str, b: str) -> None:
    length = kb._lcs_length(a, kb._char_masks(b), len(b))
    assert length == _lcs_table(a, b)
    matched = sum(m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    assert matched <= length


def _every_example(text: str, packs, limit: int = 3):  # type: ignore[no-untyped-def]
    """The ranking as it was before the pruning: every example of every shortlisted cause compared."""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(normalise(text)[:500])
    words = " ".join(re.findall(r"\w+", text)[:64])
    scored = []
    for cause in (packs.causes[r["id"]] for r in kb.search(packs, words, kb.SHORTLIST)):
        best = 0.0
        for example in cause.examples:
            matcher.set_seq1(normalise(example)[:500])
            best = max(best, matcher.ratio())
        scored.append((cause.id, best))
    scored.sort(key=lambda cs: (-cs[1], cs[0]))
    return [cs for cs in scored[:limit] if cs[1] > 0.2]


def _error_lines_of_real_logs(count: int) -> list[str]:
    lines: list[str] = []
    for path in sorted((CORPUS / "logs").rglob("*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if ("ERROR" in line or "rror:" in line or "WARNING" in line) and line.strip() not in lines:
                lines.append(line.strip())
    step = max(1, len(lines) // count)
    return lines[::step][:count]


def test_closest_causes_rank_as_comparing_every_example_does(packs) -> None:  # type: ignore[no-untyped-def]
    lines = _error_lines_of_real_logs(12) + ["ERROR: [XYZ 7-7] frobnicated the widget twice in foo.cpp"]
    assert len(lines) == 13
    for line in lines:
        expected = _every_example(line, packs, 3)
        assert expected, line
        for limit in (1, 3):
            assert [(c.id, score) for c, score in kb.closest_causes(line, packs, limit)] == expected[:limit], line
