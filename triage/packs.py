"""Load pattern packs (YAML data) into validated, compiled causes.

The schema is closed: an unknown key, a bad regex, a duplicate id, a missing example or an example that
does not behave stops the load with `file:line`, the cause id and a hint — before any log line is read.
Built-in packs and a user's packs go through this same loader.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re as std_re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import cache as disk
from .errors import PackError
from .lazyre import lazy
from .literals import analyse
from .prefixes import without_prefix
from .quotes import fold
from .relays import widen, widen_literal
from .model import RUN_TOOLS, SEVERITIES, SEVERITY_RANK

if TYPE_CHECKING:  # imported where they are used: a cached pack set needs neither YAML nor version parsing,
    import regex  # and `kb search`, which reads only the packs' digest, not even `regex` (a tenth of its start)
    import yaml
    from packaging.specifiers import SpecifierSet

ID_RE = lazy(std_re.compile, r"^[a-z0-9_]+/[a-z0-9][a-z0-9_.-]*$")
TOOLS = ("dfc", "hailort", "vivado_hls", "vitis_hls", "hls", "vivado", "hls4ml", "finn", "any")
PHASES = (
    "parse", "optimize", "compile", "runtime", "env", "csim", "csynth", "cosim", "export",
    "synth", "impl", "convert", "report", "config", "build", "elaborate", "simulate",
    "benchmark",
)
STATUSES = ("stable", "deprecated", "removed")
PLACEHOLDER = "TODO"  # what `triage kb draft` leaves where a person must write: a pack that still has one does not load
MIN_LITERAL = 4
MAX_PACK_BYTES = 4 * 1024 * 1024
MAX_PATTERN_CHARS = 4000
MAX_REPEAT_PRODUCT = 10000
REGEX_TIMEOUT_S = 0.25
INLINE_FLAGS = lazy(std_re.compile, r"\(\?[a-zA-Z]*\)")  # `(?i)`: flags for the whole pattern
MESSAGE_TAG = lazy(std_re.compile, r"\[[A-Za-z_+]+(?: [A-Za-z_+]+)* ([A-Z]*\d*-\d+)\]")  # `[Synth 8-439]`, `[DRC UTLZ-1]`
CONDITION_RE = lazy(std_re.compile, r"^\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d+)?)\s*$")

# HTML in prose: reports escape it anyway, but a pack that carries it is not a pack we want to load.
MARKUP_RE = lazy(
    std_re.compile,
    r"<\s*/?\s*(?:script|style|iframe|img|svg|a|object|embed|link|meta|form|input|button|html|body|div|span|p|br|b|i|u|table|details|math)\b"
    r"|javascript:|\bon[a-z]+\s*=\s*['\"]|&#\w+;|&[a-z]+;",
    std_re.IGNORECASE,
)


def _may_be_markup(text: str) -> bool:
    """MARKUP_RE's verdict; every branch of it needs one of `<&=:`, which most prose lacks, so the regex
    (slow on long text) runs only where it could match."""
    return any(c in text for c in "<&=:") and MARKUP_RE.search(text) is not None


PACK_KEYS = {"pack", "tool", "description", "causes"}
CAUSE_KEYS = {
    "id", "title", "severity", "tool", "phase", "versions", "status", "cause", "workaround",
    "references", "explains", "signatures", "when", "detector", "needs", "generic", "family",
}
# Causes found by code rather than by a line: their text is data, their detection is not.
DETECTORS = ("config", "absence")
WHEN_KEYS = {"present", "absent", "phases", "tools"}
CAUSE_REQUIRED = ("id", "title", "severity", "cause", "workaround", "signatures")
SIGNATURE_KEYS = {"regex", "literal", "ignore_case", "match", "no_match", "where"}
VERSION_KEYS = {"affected", "note"}
EXAMPLE_KEYS = {"text", "captures"}


@dataclass(frozen=True)
class Condition:
    """A numeric comparison such as `> 100`, applied to a capture."""

    op: str
    value: float

    def holds(self, raw: str | None) -> bool:
        number = to_number(raw)
        if number is None:
            return False
        return {
            ">": number > self.value, ">=": number >= self.value, "<": number < self.value,
            "<=": number <= self.value, "==": number == self.value, "!=": number != self.value,
        }[self.op]

    def __str__(self) -> str:
        return f"{self.op} {self.value:g}"


def to_number(raw: str | None) -> float | None:
    """Read a number out of report text: `105.66`, `1,060`, `~0`, `122%`, `-0.37`."""
    if raw is None:
        return None
    cleaned = raw.strip().lstrip("~<>").rstrip("%").replace(",", "").strip()
    try:
        return float(cleaned)
    except ValueError:
        return None


@dataclass
class Signature:
    cause_id: str
    index: int
    pattern: str
    literal: str  # the declared literal, or the first derived one
    ignore_case: bool
    where: dict[str, Condition]
    literals: tuple[str, ...] = ()  # every match contains at least one (one per top-level branch)
    source: str = ""  # pack file name:line, named if a regex compiled on first use fails
    _compiled: regex.Pattern[str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.literals:
            self.literals = (self.literal,)

    @property
    def compiled(self) -> regex.Pattern[str]:
        """The regex, compiled on first use: most signatures never see a candidate line in a given log, and
        compiling is most of what a cold load of the packs would cost."""
        if self._compiled is None:
            import regex  # noqa: PLC0415

            try:
                self._compiled = regex.compile(self.pattern, regex.IGNORECASE if self.ignore_case else 0)
            except regex.error as exc:  # a pack loaded unchecked (see `load_packs`): `packs check` finds it
                raise PackError(f"{self.cause_id}: bad regex: {exc}", where=self.source or None,
                                hint="`triage packs check` validates every pack") from None
        return self._compiled

    def __getstate__(self) -> dict[str, Any]:
        """Without the compiled regex: the cached pack set stays small and loads fast; it compiles again
        on first use."""
        return {**self.__dict__, "_compiled": None}

    def match(self, line: str) -> dict[str, str] | None:
        """Captures of the first match in `line` that satisfies the conditions, else None.

        A line a CI runner prefixed (see `prefixes`) is matched without the prefix first, as the tool printed it.
        Raises TimeoutError when the regex exceeds its time bound.
        """
        line = fold(line)  # a scanned line is folded already; a pasted one or an example may not be
        body = without_prefix(line)
        caps = self._match(body)
        if caps is None and body is not line:
            caps = self._match(line)
        return caps

    def _match(self, line: str) -> dict[str, str] | None:
        if not self.where:
            m = self.compiled.search(line, timeout=REGEX_TIMEOUT_S)
            return None if m is None else {k: v for k, v in m.groupdict().items() if v is not None}
        for m in self.compiled.finditer(line, timeout=REGEX_TIMEOUT_S):
            caps = {k: v for k, v in m.groupdict().items() if v is not None}
            if all(cond.holds(caps.get(name)) for name, cond in self.where.items()):
                return caps
            if not self.where:
                return caps
        return None


def _regex_version() -> str:
    import regex  # noqa: PLC0415

    return f"regex={regex.__version__}"


# the standard library's engine: a listing (`kb search`) shows titles without importing `regex`
TEMPLATE = lazy(std_re.compile, r"\{\{\s*(?P<name>\w+)\s*\}\}")


def interpolate(text: str, values: dict[str, str]) -> str:
    """Fill `{{name}}` from captures and facts; an unknown name reads as `<name>`."""
    if "{{" not in text:  # most prose has none
        return text
    return TEMPLATE.sub(lambda m: str(values.get(m.group("name"), f"<{m.group('name')}>")), text)


@dataclass
class Cause:
    id: str
    title: str
    severity: str
    tool: str
    phase: str | None
    cause: str
    workaround: str
    references: list[str]
    explains: list[str]
    signatures: list[Signature]
    examples: list[str]
    affected: str | None = None  # a PEP 440 range, normalised; parsed only to test a detected version
    versions_note: str | None = None
    status: str = "stable"
    when: dict[str, Any] = field(default_factory=dict)
    detector: str | None = None
    needs: str | None = None  # what else to scan to pinpoint the cause (e.g. the model script)
    generic: bool = False  # a catch-all: says a step failed, not why; never counts as a known cause
    family: bool = False  # a class of failure across tools (out of memory, licence ...): a known first step

    @property
    def broad(self) -> bool:
        """Generic and family causes give way to a specific cause found on the same line."""
        return self.generic or self.family
    pack: str = ""
    source: str = ""

    @property
    def shown_title(self) -> str:
        """The title as a finding with nothing captured shows it (`{{node}}` reads `<node>`), for listings."""
        return interpolate(self.title, {})

    @property
    def versions(self) -> str | None:
        parts = [p for p in (self.affected, self.versions_note) if p]
        return "; ".join(parts) or None

    def applies_to(self, version: str | None) -> bool:
        """False only when a version was detected and lies outside the affected range."""
        if self.affected is None or not version:
            return True
        from packaging.version import InvalidVersion, Version  # noqa: PLC0415

        try:
            return Version(version) in _specifier(self.affected)
        except InvalidVersion:
            return True

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "severity": self.severity, "tool": self.tool,
            "phase": self.phase, "versions": self.versions, "status": self.status, "cause": self.cause,
            "workaround": self.workaround, "references": self.references, "explains": self.explains,
            "signatures": [s.pattern for s in self.signatures], "examples": self.examples,
            "detector": self.detector, "needs": self.needs, "generic": self.generic, "family": self.family,
            "pack": self.pack,
            "source": self.source,
        }


@functools.cache
def _specifier(text: str) -> SpecifierSet:
    """A version range, parsed once per process (and only where a detected version is tested)."""
    from packaging.specifiers import SpecifierSet  # noqa: PLC0415

    return SpecifierSet(text)


@dataclass
class PackSet:
    causes: dict[str, Cause]
    files: list[Path]
    digest: str
    checked: bool = True  # every example of every file checked (False: the built-in packs were trusted)

    @property
    def signatures(self) -> list[Signature]:
        return [s for c in self.causes.values() for s in c.signatures]

    def explainers_of(self, cause_id: str) -> list[str]:
        return [c.id for c in self.causes.values() if cause_id in c.explains]

    @functools.cached_property
    def by_message(self) -> dict[str, list[Cause]]:
        """Specific causes by the number of a tool message their examples show (`8-439` of `[Synth 8-439]`,
        also seen as `[VPL 8-439]`; `UTLZ-1` of `[DRC UTLZ-1]`), errors first: a line of a known message in
        words no signature knows is most likely one of them."""
        index: dict[str, list[Cause]] = {}
        for c in sorted(self.causes.values(), key=lambda c: (SEVERITY_RANK.get(c.severity, 3), c.id)):
            if c.generic or c.family:
                continue
            for number in dict.fromkeys(m.group(1) for e in c.examples for m in MESSAGE_TAG.finditer(e)):
                index.setdefault(number, []).append(c)
        return index


# ---------------------------------------------------------------------------------------------------------
# YAML with line numbers and without aliases (an alias bomb is a denial of service, not a feature)


def _yaml_base() -> Any:
    import yaml  # noqa: PLC0415

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster


def _refuse_aliases(text: str, path: Path) -> None:
    import yaml  # noqa: PLC0415

    if "&" not in text:  # an alias needs an anchor (`&name`): without one there is nothing to expand
        return
    for event in yaml.parse(text, Loader=_yaml_base()):
        if isinstance(event, yaml.AliasEvent):
            raise PackError(
                "YAML aliases are not allowed in packs",
                where=f"{path}:{event.start_mark.line + 1}",
                hint="write the value out in full; anchors and aliases can expand without bound",
            )


_LOADER: Any = None


def _pack_loader() -> Any:
    """The YAML loader that records each mapping's line (made on first use: YAML is only read on a cache miss)."""
    global _LOADER  # noqa: PLW0603 - built once per process
    if _LOADER is None:
        import yaml  # noqa: PLC0415

        class PackLoader(_yaml_base()):  # type: ignore[misc]
            def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
                seen: set[Any] = set()
                for key_node, _ in node.value:  # YAML keeps the last of two equal keys: an example list lost unseen
                    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                    if key is not None and key in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key '{key}' in one mapping", key_node.start_mark)
                    seen.add(key)
                mapping = super().construct_mapping(node, deep=True)
                mapping["__line__"] = node.start_mark.line + 1
                return mapping

        _LOADER = PackLoader
    return _LOADER


def _read_yaml(path: Path) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_PACK_BYTES:
            raise PackError(f"pack is {size} bytes (limit {MAX_PACK_BYTES})", where=str(path),
                            hint="split it into several packs")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PackError("pack is not UTF-8 text", where=str(path), hint=str(exc)) from None
    except OSError as exc:
        raise PackError(f"cannot read pack: {exc.strerror}", where=str(path)) from None
    import yaml  # noqa: PLC0415

    loader = None
    try:
        _refuse_aliases(text, path)
        loader = _pack_loader()(text)
        return loader.get_single_data()
    except PackError:
        raise
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own bound; the pure-Python parser recurses instead
            raise PackError("YAML nested too deeply", where=str(path)) from None
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = str(getattr(exc, "problem", exc))
        hint = ("write each key once: merge the two lists (YAML would keep only the last)" if "duplicate key" in problem
                else "check indentation and quoting; regexes are safest in single quotes")
        raise PackError(f"invalid YAML: {problem}", where=where, hint=hint) from None
    except RecursionError:
        raise PackError("YAML nested too deeply", where=str(path)) from None
    finally:
        if loader is not None:
            loader.dispose()


# ---------------------------------------------------------------------------------------------------------
# Validation


class _Checker:
    """Collects the context (file, line, id) so every error points at the right place."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, message: str, line: int | None, cause_id: str | None = None, hint: str | None = None) -> None:
        where = f"{self.path}:{line}" if line else str(self.path)
        if cause_id:
            message = f"{cause_id}: {message}"
        raise PackError(message, where=where, hint=hint)

    def keys(self, data: dict[str, Any], allowed: set[str], what: str, cause_id: str | None = None) -> None:
        unknown = sorted(k for k in data if k != "__line__" and k not in allowed)
        if unknown:
            self.fail(f"unknown key '{unknown[0]}' in {what}", data.get("__line__"), cause_id,
                      hint=f"allowed keys: {', '.join(sorted(allowed))}")

    def text(self, data: dict[str, Any], key: str, cause_id: str | None, required: bool = True) -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                self.fail(f"missing '{key}'", data.get("__line__"), cause_id,
                          hint=f"every cause needs: {', '.join(CAUSE_REQUIRED)}")
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(f"'{key}' must be non-empty text", data.get("__line__"), cause_id)
        if value.lstrip().startswith(PLACEHOLDER):
            self.fail(f"'{key}' is still the placeholder of the draft", data.get("__line__"), cause_id,
                      hint=f"write the {key} in your own words in place of the {PLACEHOLDER} text")
        if key in ("title", "cause", "workaround") and _may_be_markup(str(value)):
            self.fail(f"'{key}' contains markup", data.get("__line__"), cause_id,
                      hint="prose fields are plain text; write `backticks` for code")
        return " ".join(str(value).split()) if key == "title" else str(value).strip()


def _compile_signature(chk: _Checker, raw: Any, cause_id: str, index: int, cause_line: int,
                       check: bool = True, tool: str = "any") -> Signature:
    """One signature, its literals derived. `check`: also compile the regex and run its examples (a
    trusted pack leaves the regex to compile on first use; `packs check` and the test suite check it).
    `tool`: the cause's tool, whose message ids another tool may print under its own prefix (see `relays`)."""
    if not isinstance(raw, dict):
        chk.fail(f"signature {index + 1} must be a mapping with 'regex'", cause_line, cause_id)
    line = raw.get("__line__", cause_line)
    chk.keys(raw, SIGNATURE_KEYS, "signature", cause_id)
    pattern = raw.get("regex")
    if not isinstance(pattern, str) or not pattern:
        chk.fail(f"signature {index + 1} has no 'regex'", line, cause_id)
    if len(pattern) > MAX_PATTERN_CHARS:
        chk.fail(f"regex is {len(pattern)} characters (limit {MAX_PATTERN_CHARS})", line, cause_id,
                 hint="split an enormous alternation into several signatures or causes")
    pattern = widen(fold(pattern), tool)  # the text is read with ASCII quotes, so the regex is too
    ignore_case = bool(raw.get("ignore_case", False))
    repeats, derived = analyse(pattern, ignore_case, MIN_LITERAL)  # one parse for both checks
    if repeats > MAX_REPEAT_PRODUCT:
        chk.fail(f"regex repeats up to {repeats} times (limit {MAX_REPEAT_PRODUCT})", line, cause_id,
                 hint="counted repeats such as {1000} are expanded when the regex is compiled; use + or * or a smaller count")
    compiled = None
    if check or INLINE_FLAGS.search(pattern):  # a global `(?i)` changes how the gate folds its literals
        import regex  # noqa: PLC0415

        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except regex.error as exc:
            chk.fail(f"bad regex: {exc}", line, cause_id,
                     hint=f"at position {getattr(exc, 'pos', '?')} of {pattern!r}")
        if compiled.flags & regex.IGNORECASE:
            ignore_case = True
        if compiled.groups != len(compiled.groupindex):
            chk.fail("regex has an unnamed capturing group", line, cause_id,
                     hint="use (?P<name>...) to capture and (?:...) to group")
    literal = raw.get("literal")
    literals: list[str] | None = None
    if isinstance(literal, str):
        literal = fold(literal)
        literals = list(widen_literal(literal, tool))
    if literal is None:
        literals = derived  # the derivation reads the parse, which case folding does not change
        if not literals:
            chk.fail("cannot derive a literal of 4+ characters from the regex", line, cause_id,
                     hint="declare `literal:` — a substring every matching line contains")
        literal = literals[0]
    elif not isinstance(literal, str) or len(literal) < MIN_LITERAL:
        chk.fail(f"literal must be text of at least {MIN_LITERAL} characters", line, cause_id)
    gated = tuple(literals or [literal])
    for lit in gated:
        if len(set(lit)) == 1:  # a banner of `=` would hand the gate a match at every byte of every rule line
            chk.fail(f"literal {lit!r} is one character repeated", line, cause_id,
                     hint="every separator line contains it; key the literal on the text beside it, "
                          "e.g. `] ====` for a message id glued to a banner")
    where: dict[str, Condition] = {}
    for name, spec in (raw.get("where") or {}).items():
        if name == "__line__":
            continue
        m = CONDITION_RE.match(str(spec))
        if not m:
            chk.fail(f"bad condition {spec!r} on '{name}'", line, cause_id, hint="write e.g. '> 100' or '< 0'")
        if compiled is not None and name not in compiled.groupindex:
            chk.fail(f"condition on '{name}', which the regex does not capture", line, cause_id)
        where[name] = Condition(m.group(1), float(m.group(2)))
    sig = Signature(cause_id, index, pattern, literal, ignore_case, where, gated,
                    source=f"{chk.path.name}:{line}", _compiled=compiled)
    if check:
        _check_examples(chk, raw, sig, line)
    return sig


def _check_examples(chk: _Checker, raw: dict[str, Any], sig: Signature, line: int) -> None:
    matches = raw.get("match")
    if not isinstance(matches, list) or not matches:
        chk.fail("signature has no 'match' examples", line, sig.cause_id,
                 hint="add at least one real log line the regex must match")
    folded = [lit.casefold() if sig.ignore_case else lit for lit in sig.literals]
    for example in matches:
        captures: dict[str, Any] = {}
        if isinstance(example, dict):
            chk.keys(example, EXAMPLE_KEYS, "example", sig.cause_id)
            captures = {k: v for k, v in (example.get("captures") or {}).items() if k != "__line__"}
            example = example.get("text")
        if not isinstance(example, str):
            chk.fail("a match example must be text (or {text, captures})", line, sig.cause_id)
        haystack = fold(example).casefold() if sig.ignore_case else fold(example)
        if not any(lit in haystack for lit in folded):
            declared = raw.get("literal")  # named as written, not with the twins a relay adds (see `relays`)
            written = [declared] if isinstance(declared, str) else list(sig.literals)
            shown = written[0] if len(written) == 1 else " or ".join(map(repr, written))
            chk.fail(f"literal {shown!r} is not in example {example!r}" if len(written) == 1
                     else f"none of the literals {shown} is in example {example!r}", line, sig.cause_id,
                     hint="the literal must occur in every matching line; fix `literal:`")
        try:
            got = sig.match(example)
        except TimeoutError:
            chk.fail(f"regex timed out on example {example!r}", line, sig.cause_id,
                     hint="catastrophic backtracking: remove nested quantifiers")
        if got is None:
            chk.fail(f"example does not match: {example!r}", line, sig.cause_id,
                     hint=_how_far(_as_written(raw, sig), example))
        for name, want in captures.items():
            if str(got.get(name)) != fold(str(want)):
                chk.fail(f"capture '{name}' is {got.get(name)!r}, expected {want!r} in {example!r}",
                         line, sig.cause_id)
    for example in raw.get("no_match") or []:
        if not isinstance(example, str):
            chk.fail("a no_match example must be text", line, sig.cause_id)
        try:
            hit = sig.match(example)
        except TimeoutError:
            chk.fail(f"regex timed out on no_match example {example!r}", line, sig.cause_id,
                     hint="catastrophic backtracking: remove nested quantifiers")
        if hit is not None:
            chk.fail(f"no_match example matches: {example!r}", line, sig.cause_id)


def _as_written(raw: dict[str, Any], sig: Signature) -> regex.Pattern[str]:
    """The regex as the pack author wrote it (a relay widens the one that runs), for an error message."""
    written = raw.get("regex")
    if written == sig.pattern or not isinstance(written, str):
        return sig.compiled
    import regex  # noqa: PLC0415

    return regex.compile(written, regex.IGNORECASE if sig.ignore_case else 0)


def _how_far(compiled: regex.Pattern[str], example: str) -> str:
    """Say how much of the regex matched: the longest prefix of the pattern that still finds a match."""
    import regex  # noqa: PLC0415

    pattern = compiled.pattern
    for end in range(len(pattern), 0, -1):
        try:
            partial = regex.compile(pattern[:end], compiled.flags)
        except regex.error:
            continue
        if partial.search(example, timeout=REGEX_TIMEOUT_S):
            return f"the regex matches up to {pattern[:end]!r}; it fails after that"
    return "not even the start of the regex matches"


def _versions(chk: _Checker, raw: Any, cause_id: str, line: int) -> tuple[str | None, str | None]:
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        chk.fail("'versions' must be a mapping with 'affected' and/or 'note'", line, cause_id)
    chk.keys(raw, VERSION_KEYS, "versions", cause_id)
    affected = raw.get("affected")
    spec = None
    if affected is not None:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet  # noqa: PLC0415

        try:
            spec = str(SpecifierSet(str(affected)))
        except InvalidSpecifier:
            chk.fail(f"bad version range {affected!r}", raw.get("__line__", line), cause_id,
                     hint="write a PEP 440 range such as '>=3.29' or '>=2020.1,<2022.1'")
    note = raw.get("note")
    return spec, (str(note).strip() if note else None)


def _load_cause(chk: _Checker, raw: Any, pack: dict[str, Any], check: bool = True) -> Cause:
    if not isinstance(raw, dict):
        chk.fail("each cause must be a mapping", pack.get("__line__"))
    line = raw.get("__line__")
    cause_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    chk.keys(raw, CAUSE_KEYS, "cause", cause_id)
    if cause_id is None or not ID_RE.match(cause_id):
        chk.fail(f"bad or missing id {raw.get('id')!r}", line, None,
                 hint="ids look like 'dfc/perf-flow-manual-resources': lowercase namespace/slug")
    severity = raw.get("severity")
    if severity not in SEVERITIES:
        chk.fail(f"severity must be one of {', '.join(SEVERITIES)}", line, cause_id)
    tool = raw.get("tool", pack.get("tool"))
    if tool not in TOOLS:
        chk.fail(f"unknown tool {tool!r}", line, cause_id, hint=f"one of {', '.join(TOOLS)}")
    phase = raw.get("phase")
    if phase is not None and phase not in PHASES:
        chk.fail(f"unknown phase {phase!r}", line, cause_id, hint=f"one of {', '.join(PHASES)}")
    status = raw.get("status", "stable")
    if status not in STATUSES:
        chk.fail(f"unknown status {status!r}", line, cause_id, hint=f"one of {', '.join(STATUSES)}")
    refs = raw.get("references") or []
    if not isinstance(refs, list) or any(not isinstance(r, str) or not (std_re.match(r"^https?://\S+$", r)
                                                                        or r.lstrip().startswith(PLACEHOLDER))
                                         for r in refs):
        chk.fail("references must be a list of http(s) URLs", line, cause_id)
    explains = raw.get("explains") or []
    if not isinstance(explains, list) or any(not isinstance(e, str) for e in explains):
        chk.fail("explains must be a list of cause ids", line, cause_id)
    detector = raw.get("detector")
    if detector is not None and detector not in DETECTORS:
        chk.fail(f"unknown detector {detector!r}", line, cause_id, hint=f"one of {', '.join(DETECTORS)}")
    sigs_raw = raw.get("signatures") or []
    if not isinstance(sigs_raw, list) or (not sigs_raw and detector is None):
        chk.fail("a cause needs at least one signature", line, cause_id,
                 hint="or `detector: config|absence` for a cause found by triage's own checks")
    when = raw.get("when") or {}
    if not isinstance(when, dict):
        chk.fail("'when' must be a mapping", line, cause_id)
    chk.keys(when, WHEN_KEYS, "when", cause_id)
    for key in WHEN_KEYS & set(when):
        if not isinstance(when[key], list) or any(not isinstance(v, str) for v in when[key]):
            chk.fail(f"when.{key} must be a list of {key if key in ('phases', 'tools') else 'cause ids'}", line, cause_id)
    for phase_name in when.get("phases") or []:
        if phase_name not in PHASES:
            chk.fail(f"unknown phase {phase_name!r} in when.phases", line, cause_id, hint=f"one of {', '.join(PHASES)}")
    for tool_name in when.get("tools") or []:
        if tool_name not in RUN_TOOLS or tool_name == "unknown":
            chk.fail(f"unknown tool {tool_name!r} in when.tools", line, cause_id,
                     hint=f"one of {', '.join(t for t in RUN_TOOLS if t != 'unknown')}")
    generic, family = raw.get("generic", False), raw.get("family", False)
    if not isinstance(generic, bool) or not isinstance(family, bool):
        chk.fail("'generic' and 'family' must be true or false", line, cause_id)
    title = chk.text(raw, "title", cause_id)
    cause_text = chk.text(raw, "cause", cause_id)
    workaround = chk.text(raw, "workaround", cause_id)
    if any(r.lstrip().startswith(PLACEHOLDER) for r in refs):  # after cause and workaround: the order they are written in
        chk.fail("references still hold the placeholder of the draft", line, cause_id,
                 hint="give the http(s) URLs of an issue, a forum thread or a vendor page, or delete the line")
    affected, note = _versions(chk, raw.get("versions"), cause_id, line)
    signatures = [_compile_signature(chk, s, cause_id, i, line, check, tool) for i, s in enumerate(sigs_raw)]
    examples = [e["text"] if isinstance(e, dict) else e for s in sigs_raw for e in s.get("match", [])]
    needs = chk.text(raw, "needs", cause_id, required=False)
    return Cause(
        id=cause_id, title=title or "", severity=severity, tool=tool, phase=phase, cause=cause_text or "",
        workaround=workaround or "", references=list(refs), explains=list(explains), signatures=signatures,
        examples=[str(e) for e in examples], affected=affected, versions_note=note, status=status,
        when={k: v for k, v in when.items() if k != "__line__"}, detector=detector, needs=needs, generic=generic,
        family=family, pack=str(pack.get("pack", "")), source=f"{chk.path.name}:{line}",
    )


def load_pack_file(path: Path, check: bool = True) -> list[Cause]:
    """Load and validate one pack file; `check=False` trusts its regexes and examples (see `load_packs`)."""
    chk = _Checker(path)
    data = _read_yaml(path)
    if not isinstance(data, dict):
        chk.fail("a pack is a mapping with 'pack', 'tool' and 'causes'", 1)
    chk.keys(data, PACK_KEYS, "pack")
    if not isinstance(data.get("pack"), str):
        chk.fail("missing 'pack' (the pack's name)", data.get("__line__"))
    causes = data.get("causes")
    if not isinstance(causes, list):
        chk.fail("missing 'causes' list", data.get("__line__"))
    return [_load_cause(chk, raw, data, check) for raw in causes]


def builtin_pack_dir() -> Path:
    """The packs shipped with triage: `patterns/` in a checkout, `triage/patterns` in a wheel."""
    packaged = Path(__file__).resolve().parent / "patterns"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "patterns"


def pack_files(dirs: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for d in dirs:
        if d.is_file():
            files.append(d)
        elif d.is_dir():
            files.extend(sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()))
        else:
            raise PackError("pack folder does not exist", where=str(d), hint="check --packs / TRIAGE_PACKS")
    return files


def pack_dirs(extra: Iterable[str | Path] = (), builtin: bool = True) -> list[Path]:
    """Built-in packs first, then TRIAGE_PACKS (os.pathsep-separated), then explicit folders."""
    dirs = [builtin_pack_dir()] if builtin else []
    env = os.environ.get("TRIAGE_PACKS")
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    dirs.extend(Path(p) for p in extra)
    return dirs


PACK_CODE = ("packs.py", "literals.py", "model.py", "relays.py", "quotes.py")  # the code a validated pack depends on
PACKFILE_KEEP = 256  # validated pack files kept in the cache (every pack file of a few versions)


def load_packs(extra: Iterable[str | Path] = (), builtin: bool = True, cache: bool = True,
               check: bool = False) -> PackSet:
    """Load every pack: duplicates and dangling `explains` fail the whole load.

    Every file's schema is validated and its literals derived. A user's pack (TRIAGE_PACKS, `--packs`) is
    checked in full as well: every regex compiled, every example run. The built-in packs are trusted there
    (their regexes compile on first use) unless `check` (`packs check`, `packs test`, the test suite):
    they are checked before they ship, and checking them was most of a cold start.

    Validated packs are cached (keyed by their content and the loader's own code), twice: the whole set,
    which is all a start-up reads, and each file, so an edit re-checks only the file that changed. Files
    that must be validated are validated on every core when there are several of them.
    """
    dirs = pack_dirs(extra, builtin)
    files = pack_files(dirs)
    trusted = set(pack_files(dirs[:1])) if builtin and not check else set()
    key, contents = _files_digest(files, cache)
    code = disk.code_hash(PACK_CODE, _regex_version())
    if cache:
        cached = disk.load("packs", key, code)
        if isinstance(cached, PackSet) and cached.digest == key and (cached.checked or not check):
            cached.files = files
            return cached
    if contents is None:
        contents = [_read_pack_bytes(path) for path in files]
    per_file = _load_files(files, contents, code, cache, trusted)
    causes: dict[str, Cause] = {}
    where: dict[str, str] = {}  # cause id -> full path:line, for errors (a cause's `source` is name:line)
    for path, loaded in zip(files, per_file):
        for cause in loaded:
            here = f"{path}:{cause.source.rsplit(':', 1)[-1]}"
            if cause.id in causes:
                raise PackError(f"duplicate id {cause.id}", where=here,
                                hint=f"first defined at {where[cause.id]}; ids are unique and never reused")
            causes[cause.id] = cause
            where[cause.id] = here
    for cause in causes.values():
        for target in cause.explains + cause.when.get("present", []) + cause.when.get("absent", []):
            if target not in causes:
                raise PackError(f"{cause.id}: explains unknown id {target}", where=where[cause.id],
                                hint="name a cause that exists in the loaded packs")
    active = {k: c for k, c in causes.items() if c.status != "removed"}
    packs = PackSet(causes=active, files=files, digest=key, checked=not trusted)
    if cache:
        packs.by_message  # noqa: B018 - built once and cached with the set: a scan with an error line reads it
        disk.store("packs", key, code, packs)
    return packs


def pack_digest(extra: Iterable[str | Path] = (), builtin: bool = True) -> str:
    """The digest of the pack set `load_packs(extra, builtin)` loads (its `digest`): the files are read and
    hashed, not parsed, so a lookup in something built from them (the knowledge index) need not load them."""
    return _files_digest(pack_files(pack_dirs(extra, builtin)))[0]


SETTLED_S = 2.0  # a file changed this recently may change again within its timestamps' resolution


def _files_digest(files: list[Path], cache: bool = True) -> tuple[str, list[bytes] | None]:
    """The digest of the files, and their contents when they had to be read for it: a set of files whose
    size, times and inode are those of a set hashed before has that set's digest (what git's index
    compares; every write moves the change time, which no tool sets back). Files changed in the last
    SETTLED_S seconds are hashed, and not remembered, as git treats a "racy" entry."""
    stats = []
    try:
        for path in files:
            st = path.stat()
            stats.append((str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev))
    except OSError:
        cache = False  # reading them says why (`_read_pack_bytes`)
    stat_key = hashlib.sha256(repr(stats).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    if cache:
        code = disk.code_hash(PACK_CODE)
        known = disk.load("packstat", stat_key, code)
        if isinstance(known, str):
            return known, None
    contents = [_read_pack_bytes(path) for path in files]
    digest = _digest(files, contents)
    settled = time.time_ns() - int(SETTLED_S * 1e9)
    if cache and all(max(s[2], s[3]) < settled for s in stats):
        disk.store("packstat", stat_key, code, digest)
    return digest, contents



def _digest(files: list[Path], contents: list[bytes]) -> str:
    digest = hashlib.sha256()
    for path, data in zip(files, contents):
        digest.update(path.name.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:16]


def _read_pack_bytes(path: Path) -> bytes:
    _check_size(path)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PackError(f"cannot read pack: {exc.strerror}", where=str(path)) from None


def _file_key(path: Path, data: bytes) -> str:
    return hashlib.sha256(path.name.encode() + b"\0" + data).hexdigest()[:16]


def _load_files(files: list[Path], contents: list[bytes], code: str, cache: bool,
                trusted: set[Path]) -> list[list[Cause]]:
    """Each file's validated causes: from the cache, else validated (in parallel when it is worth it). A
    cached file validated as trusted does not stand in for one that must be checked."""
    out: list[list[Cause] | None] = [None] * len(files)
    if cache:
        for i, (path, data) in enumerate(zip(files, contents)):
            hit = disk.load("packfile", _file_key(path, data), code)
            if isinstance(hit, tuple) and len(hit) == 2 and (hit[0] or path in trusted):
                out[i] = hit[1]
    todo = [i for i, loaded in enumerate(out) if loaded is None]
    jobs = [(files[i], files[i] not in trusted) for i in todo]
    for i, causes in zip(todo, _validate(jobs, sum(len(contents[i]) for i in todo))):
        out[i] = causes
        if cache:
            disk.store("packfile", _file_key(files[i], contents[i]), code, (files[i] not in trusted, causes),
                       keep=PACKFILE_KEEP)
    return [loaded or [] for loaded in out]


PARALLEL_MIN_BYTES = 256 << 10  # less YAML than this validates faster than a pool starts


def _validate(jobs: list[tuple[Path, bool]], size: int) -> list[list[Cause]]:
    """`load_pack_file` over `(path, check)` jobs, in file order; on every core when there are several
    large files. The first error (in file order) is the one raised, as in a serial load."""
    cores = os.cpu_count() or 1
    if len(jobs) < 2 or cores < 2 or size < PARALLEL_MIN_BYTES:
        return [load_pack_file(p, check) for p, check in jobs]
    import multiprocessing  # noqa: PLC0415
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=min(cores, len(jobs)), mp_context=context) as pool:
        return list(pool.map(load_pack_file, *zip(*jobs)))


def _check_size(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise PackError(f"cannot read pack: {exc.strerror}", where=str(path)) from None
    if size > MAX_PACK_BYTES:
        raise PackError(f"pack is {size} bytes (limit {MAX_PACK_BYTES})", where=str(path),
                        hint="split it into several packs")


def compile_all(packs: PackSet, cache: bool = True) -> None:
    """Compile every signature's regex now, from the cache when it holds them (a pickled `regex` pattern
    thaws without being parsed again). For a process pool: its workers inherit the compiled regexes rather
    than each compiling those it meets. Short commands never call this; they compile what they use."""
    sigs = packs.signatures
    code = disk.code_hash(PACK_CODE, _regex_version())
    stored = disk.load("regexes", packs.digest, code) if cache else None
    if isinstance(stored, list) and len(stored) == len(sigs) and \
            all(getattr(c, "pattern", None) == s.pattern for c, s in zip(stored, sigs)):
        for sig, compiled in zip(sigs, stored):
            sig._compiled = compiled
        return
    compiled = [s.compiled for s in sigs]
    if cache:
        disk.store("regexes", packs.digest, code, compiled)


def iter_examples(packs: PackSet) -> Iterator[tuple[Cause, str]]:
    for cause in packs.causes.values():
        for example in cause.examples:
            yield cause, example
