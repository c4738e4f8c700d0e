"""Typographic quotes: GCC's ‘x’ of a UTF-8 locale, and a forum's curly copy of a log, match the signatures written
from 'x', and the other way round."""

from __future__ import annotations

import re
from pathlib import Path

from triage import load_packs
from triage.packs import load_pack_file
from triage.quotes import fold, fold_bytes
from triage.scan import scan_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def curly(text: str) -> str:
    """`'x'` as ‘x’ and `"x"` as “x”, pairing quotes left to right (an odd last one is a closing quote)."""
    text = re.sub(r"'([^'\n]*)'", "\u2018\\1\u2019", text).replace("'", "\u2019")
    return re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", text).replace('"', "\u201d")


def test_fold_reads_curly_quotes_as_ascii_and_leaves_other_text_alone() -> None:
    assert fold("error: ‘foo’ was not declared in this scope") == "error: 'foo' was not declared in this scope"
    assert fold("“a” and ‘b’") == "\"a\" and 'b'"
    plain = "ERROR: [HLS 200-70] 'x'"
    assert fold(plain) is plain
    accented = "Fehler: Datei »x« – nicht gefunden"
    assert fold(accented) is accented
    assert fold_bytes("‘x’ “y” – z".encode()) == "'x' \"y\" – z".encode()
    assert fold_bytes(b"no quotes \xe2\x80\x93 here") == b"no quotes \xe2\x80\x93 here"


def _quoted_examples() -> list[tuple[str, str]]:
    packs = load_packs()
    return [(cause.id, example) for cause in packs.causes.values() for example in cause.examples
            if "'" in example and any(s.match(example) for s in cause.signatures)]


QUOTED = _quoted_examples()


def test_packs_have_quoted_examples() -> None:
    assert len(QUOTED) >= 300  # the case this is for: names in quotes are the most common capture


def test_every_quoted_example_matches_in_curly_quotes_with_the_same_captures() -> None:
    by_id = load_packs().causes
    missed = []
    for cause_id, example in QUOTED:
        plain = {tuple(sorted(c.items())) for s in by_id[cause_id].signatures if (c := s.match(example)) is not None}
        typeset = {tuple(sorted(c.items())) for s in by_id[cause_id].signatures
                   if (c := s.match(curly(example))) is not None}
        if typeset != plain:
            missed.append((cause_id, example))
    assert not missed


def test_a_scan_gates_and_matches_a_gcc_line_of_a_utf8_locale() -> None:
    packs = load_packs()
    text = (FIXTURES / "public/hls/355-AndYmeisterrrrr-ESE532-csim-not-declared.log").read_text()
    assert "\u2018" in text  # the fixture is GCC's own UTF-8 output
    ascii_copy = text.replace("\u2018", "'").replace("\u2019", "'")
    found = {f.id for f in scan_text(text, packs).findings}
    assert found and found == {f.id for f in scan_text(ascii_copy, packs).findings}
    # the gate sees the folded bytes: a line whose literal holds the quote (`No module named 'hailo_platform`)
    # reaches its regex, and the evidence is the line as read
    line = "ModuleNotFoundError: No module named 'hailo_platform'"
    assert all("'" in lit for s in packs.causes["hailort/runtime-hailo-platform-missing"].signatures
               for lit in s.literals)
    result = scan_text(curly(line) + "\n", packs)
    assert [f.id for f in result.findings] == [f.id for f in scan_text(line + "\n", packs).findings]
    assert "hailort/runtime-hailo-platform-missing" in {f.id for f in result.findings}
    assert result.findings[0].evidence[0].text == line


def test_a_signature_written_with_curly_quotes_matches_the_c_locale_line(tmp_path: Path) -> None:
    pack = tmp_path / "mine.yaml"
    pack.write_text("""\
pack: mine
tool: vivado_hls
causes:
  - id: mine/not-declared
    title: A name is not declared
    severity: error
    cause: The testbench uses a name it never declares.
    workaround: Declare it or include its header.
    signatures:
      - regex: 'error: \u2018(?P<name>[^\u2019]+)\u2019 was not declared in this scope'
        match:
          - text: "a.cpp:3:5: error: 'foo' was not declared in this scope"
            captures: {name: foo}
          - "a.cpp:3:5: error: \u2018foo\u2019 was not declared in this scope"
        no_match:
          - "a.cpp:3:5: warning: 'foo' is unused"
""", encoding="utf-8")
    (cause,) = load_pack_file(pack)
    assert cause.signatures[0].match("b.cpp:9:1: error: 'bar' was not declared in this scope") == {"name": "bar"}
