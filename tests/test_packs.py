"""The built-in packs: every signature's examples, the schema rules, and the quality of the knowledge."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from triage import load_packs
from triage.literals import gate_literals, literal_set
from triage.packs import PackSet
from triage.quotes import fold

from .conftest import CORPUS, FIXTURES, PUBLIC

PACKS: PackSet = load_packs(check=True)  # every example of the built-in packs, as `packs check` does
SIGNATURES = [(c.id, i, s) for c in PACKS.causes.values() for i, s in enumerate(c.signatures)]


@pytest.mark.parametrize(("cause_id", "index", "sig"), SIGNATURES, ids=[f"{c}#{i + 1}" for c, i, _ in SIGNATURES])
def test_signature_examples_behave(cause_id: str, index: int, sig) -> None:
    cause = PACKS.causes[cause_id]
    own = [e for e in cause.examples if sig.match(e) is not None]
    assert own, f"{cause_id}#{index + 1} matches none of its cause's examples"
    for example in own:
        hay = fold(example).casefold() if sig.ignore_case else fold(example)  # the gate reads folded quotes
        lits = [lit.casefold() if sig.ignore_case else lit for lit in sig.literals]
        assert any(lit in hay for lit in lits), "a gate literal must be in every line the regex matches"


def test_enough_knowledge() -> None:
    assert len(PACKS.causes) >= 100
    for tool in ("dfc", "hls", "vivado", "hls4ml"):
        assert sum(c.id.startswith(tool + "/") for c in PACKS.causes.values()) >= 15, tool


def _real_text() -> str:
    parts = []
    for p in list(CORPUS.rglob("*")) + list(PUBLIC.rglob("*")) + list((FIXTURES / "notes").glob("*-verbatim.txt")):
        if p.is_file() and not p.name.endswith(".expected.yaml"):
            parts.append(p.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n"))
    return "\n".join(parts)


def test_at_least_100_causes_carry_a_verbatim_real_example() -> None:
    real = _real_text()
    with_real = [c.id for c in PACKS.causes.values() if any(e.strip() and e.strip() in real for e in c.examples)]
    assert len(with_real) >= 100


def test_every_cause_is_actionable_and_sourced() -> None:
    for c in PACKS.causes.values():
        if c.severity != "info":  # an info cause may rightly say there is nothing to do
            assert len(c.workaround) >= 40, f"{c.id}: a workaround must say what to do"
        assert len(c.cause) >= 40, f"{c.id}: a cause must say why"
        assert c.title.strip() and len(c.title) <= 120, c.id


def test_every_error_cause_has_a_reference_or_is_generic() -> None:
    generic = {c for cause in PACKS.causes.values() for c in cause.explains}
    missing = [c.id for c in PACKS.causes.values()
               if c.severity == "error" and not c.references and c.id not in generic]
    assert len(missing) <= len(PACKS.causes) // 4, missing


def test_explains_graph_has_no_self_reference() -> None:
    for c in PACKS.causes.values():
        assert c.id not in c.explains


def test_seed_cause_is_version_aware() -> None:
    c = PACKS.causes["dfc/perf-flow-manual-resources"]
    assert c.applies_to("3.29.0") and c.applies_to("3.33.0") and not c.applies_to("3.28.0")
    assert c.applies_to(None)
    assert "resources_param" in c.workaround and "compiler_optimization_level=1" in c.workaround


@pytest.mark.parametrize(("pattern", "literals"), [
    (r"Performance Flow requires automatic", ["Performance Flow requires automatic"]),
    (r"\[XFORM 203-504\] Stop unrolling loop '(?P<loop>[^']+)'", ["[XFORM 203-504] Stop unrolling loop '"]),
    (r"Bonded IOB\s*\|\s*(?P<used>\d+)", ["Bonded IOB"]),
    (r"(?:foo|bar)bazz", ["foobazz", "barbazz"]),
    (r"\*{5} DONE", ["***** DONE"]),
    (r"ab+cde", ["bcde"]),
    # an alternation inside a run multiplies it, instead of leaving only the frequent common part
    (r"^\s*(?P<command>synth|opt)_design failed", ["synth_design failed", "opt_design failed"]),
    (r"(?<!\")ERROR: (?:Test failed\s*$|- (?P<which>csim|RTL) log:)",
     ["ERROR: Test failed", "ERROR: - csim log:", "ERROR: - RTL log:"]),
    (r"error: ['`]Resource' is", ["error: 'Resource' is", "error: `Resource' is"]),
    (r"Stop(?:ped)? at [a-z]+", ["Stop"]),  # an optional part guarantees nothing
    (r"x(?:a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q)yyyyy", ["yyyyy"]),  # past 16 strings a set stops growing
    # alternatives that share only a short leading run: each one's own best literal, together
    (r"\[(?:(?:XFORM|v\+\+)(?: 203)?-542\] Cannot flatten a loop nest|(?:HLS|v\+\+) 200-960\] Cannot flatten loop)",
     ["-542] Cannot flatten a loop nest", "HLS 200-960] Cannot flatten loop", "v++ 200-960] Cannot flatten loop"]),
    (r"x(?:a\d+ long phrase here|b)", ["xa", "xb"]),  # a union is chosen only when its shortest member is longer
])
def test_literal_set(pattern: str, literals: list[str]) -> None:
    assert literal_set(pattern) == literals


_ATOMS = st.sampled_from(["a", "b", "c", ":", "'", r"\[", "[ab]", "[a-c]", ".", r"\d", r"\s", "(?<!a)"])


def _regexes() -> st.SearchStrategy[str]:
    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=2, max_size=4).map("".join),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}"])).map(lambda t: "(?:" + t[0] + ")" + t[1]),
        )
    return st.recursive(_ATOMS, grow, max_leaves=12)


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=_regexes(), data=st.data())
def test_every_match_contains_one_of_the_gate_literals(pattern: str, data: st.DataObject) -> None:
    """The gate may only skip lines that cannot match: check it on text generated from the regex itself."""
    literals = gate_literals(pattern, minimum=1)
    assume(literals is not None)
    for _ in range(5):
        text = data.draw(st.from_regex(pattern, fullmatch=True))
        assert any(lit in text for lit in literals), (pattern, literals, text)


def test_gate_literals_split_top_level_alternation() -> None:
    assert gate_literals(r"Killed|Segmentation fault") == ["Killed", "Segmentation fault"]
    assert gate_literals(r"ab|Killed") is None


def test_user_pack_loads_through_the_same_loader(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "pack: mine\ntool: vivado\ncauses:\n"
        "  - id: mine/license\n    title: License server down\n    severity: error\n"
        "    cause: The floating license server did not answer within the timeout of the tool.\n"
        "    workaround: Set XILINXD_LICENSE_FILE to the backup server, port@host, and retry the run.\n"
        "    signatures:\n      - regex: 'license server (?P<host>\\S+) down'\n"
        "        match: [{text: 'ERROR: license server lic01 down', captures: {host: lic01}}]\n"
        "        no_match: ['INFO: license server lic01 up']\n"
    )
    packs = load_packs(extra=[tmp_path])
    assert "mine/license" in packs.causes and len(packs.causes) == len(PACKS.causes) + 1
    assert packs.digest != PACKS.digest


def test_pack_cache_is_used_and_invalidated_by_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    pack = tmp_path / "packs" / "mine.yaml"
    pack.parent.mkdir()
    body = ("pack: mine\ntool: vivado\ncauses:\n  - id: mine/x\n    title: {title}\n    severity: error\n"
            "    cause: A cause long enough to be a real explanation of the failure.\n"
            "    workaround: A workaround long enough to say what to change in the build.\n"
            "    signatures:\n      - regex: 'frobnicator exploded'\n        match: ['ERROR: frobnicator exploded']\n")
    pack.write_text(body.format(title="First title"))
    first = load_packs(extra=[pack.parent], builtin=False)
    assert len(list((tmp_path / "cache").glob("packs-*.pickle"))) == 1
    again = load_packs(extra=[pack.parent], builtin=False)
    assert again.causes["mine/x"].title == "First title" and again.digest == first.digest
    pack.write_text(body.format(title="Second title"))
    changed = load_packs(extra=[pack.parent], builtin=False)
    assert changed.causes["mine/x"].title == "Second title" and changed.digest != first.digest
    pack.write_text(body.format(title="Third title").replace("frobnicator exploded']", "nothing here']"))
    with pytest.raises(Exception, match="is not in example|example does not match"):
        load_packs(extra=[pack.parent], builtin=False)
