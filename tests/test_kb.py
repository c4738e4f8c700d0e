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


def test_a_known_message_in_other_words_names_the_causes_of_that_message(packs) -> None:  # type: ignore[no-untyped-def]
    # a real Synth 8-439 line (patterns/vivado-synth.yaml), reworded as another release might print it
    line = "ERROR: [Synth 8-439] could not find module 'vga_timingTimeOut' in any library [C:/x/vga.v:75]"
    explanation = kb.explain(line, packs)
    assert not explanation.result.findings  # no signature knows this wording
    assert explanation.message_id == "Synth 8-439"
    assert "vivado/synth-8-439-module-not-found" in [c.id for c in explanation.same_id]
    assert not {c.id for c, _ in explanation.closest} & {c.id for c in explanation.same_id}
    doc = explanation.to_dict()
    assert doc["message_id"] == "Synth 8-439" and doc["same_message_id"][0]["id"] == explanation.same_id[0].id
    relayed = kb.explain("ERROR: [VPL 30-640] Place Check : the design wants more LUT cells than there are", packs)
    assert "vivado/place-30-640-over-utilization" in [c.id for c in relayed.same_id]  # [Place 30-640] under VPL
    assert kb.explain("frobnicated the widget twice", packs).same_id == []
