"""The JSON contract of `triage scan --format json`, checked on every document `triage ingest` stores.

Types, ranges and sizes, field by field, so a malformed document is refused with one line naming the field
(`findings[2].count: expected a whole number >= 0, got Infinity`) and nothing of it is stored — instead of a
traceback, or a value that later breaks `nightly` for the whole team. Fields may be added to the contract
(unknown keys pass); the ones it names must hold what it says.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import InputError
from .model import RUN_STATUSES, RUN_TOOLS, SEVERITIES

MAX_DOCUMENT_BYTES = 32 << 20  # a real document is far smaller: 5 evidence lines of 2000 characters per finding
MAX_TEXT = 256 << 10  # characters of one string
MAX_ITEMS = 20_000  # entries of one list
MAX_NESTING = 8  # findings explaining findings
MAX_INT = (1 << 63) - 1  # SQLite's integers
ID_RE = re.compile(r"^[a-z0-9_]+/[a-z0-9][a-z0-9_.-]*$")
SHA_RE = re.compile(r"^[0-9a-f]{64}$")
KINDS = ("log", "report", "config")
HINT = "ingest reads the output of `triage scan --format json`; fix or regenerate that document"

Check = Callable[[Any, str], None]


class ContractError(InputError):
    """A document that does not hold to the contract: `field` says where."""


def _fail(field: str, expected: str, value: Any) -> None:
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    raise ContractError(f"{field}: expected {expected}, got {shown[:60]}", hint=HINT)


def text(value: Any, field: str) -> None:
    if not isinstance(value, str):
        _fail(field, "a string", value)
    if len(value) > MAX_TEXT:
        _fail(field, f"at most {MAX_TEXT} characters", f"{len(value)} characters")


def optional(check: Check) -> Check:
    def inner(value: Any, field: str) -> None:
        if value is not None:
            check(value, field)
    return inner


def one_of(choices: tuple[str, ...]) -> Check:
    def inner(value: Any, field: str) -> None:
        if value not in choices:
            _fail(field, "one of " + ", ".join(choices), value)
    return inner


def whole(low: int = 0) -> Check:
    def inner(value: Any, field: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_INT:
            _fail(field, f"a whole number >= {low}", value)
    return inner


def number(value: Any, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(field, "a finite number", value)


def matching(pattern: re.Pattern[str], what: str) -> Check:
    def inner(value: Any, field: str) -> None:
        text(value, field)
        if not pattern.match(value):
            _fail(field, what, value)
    return inner


def items(check: Check, limit: int = MAX_ITEMS) -> Check:
    def inner(value: Any, field: str) -> None:
        if not isinstance(value, list):
            _fail(field, "a list", value)
        if len(value) > limit:
            _fail(field, f"at most {limit} entries", f"{len(value)} entries")
        for i, item in enumerate(value):
            check(item, f"{field}[{i}]")
    return inner


def mapping(fields: Mapping[str, Check], required: tuple[str, ...] = ()) -> Check:
    def inner(value: Any, field: str) -> None:
        if not isinstance(value, Mapping):
            _fail(field, "an object", value)
        for key in required:
            if key not in value:
                raise ContractError(f"{_join(field, key)}: missing", hint=HINT)
        for key, check in fields.items():
            if key in value:
                check(value[key], _join(field, key))
    return inner


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def strings_to_strings(value: Any, field: str) -> None:
    if not isinstance(value, Mapping):
        _fail(field, "an object", value)
    if len(value) > 1000:
        _fail(field, "at most 1000 entries", f"{len(value)} entries")
    for key, item in value.items():
        text(key, f"{field} key")
        text(item, f"{field}.{key}")


EVIDENCE = mapping({
    "path": text, "line": whole(), "text": text, "before": items(text, 100), "after": items(text, 100),
    "captures": strings_to_strings,
}, required=("path", "line", "text"))


def finding(depth: int = 0) -> Check:
    def inner(value: Any, field: str) -> None:
        if depth > MAX_NESTING:
            raise ContractError(f"{field}: findings explain findings more than {MAX_NESTING} deep", hint=HINT)
        mapping({
            "id": matching(ID_RE, "a cause id such as dfc/allocation-failed"), "severity": one_of(SEVERITIES),
            "title": text, "cause": text, "workaround": text, "references": items(text, 100), "count": whole(),
            "evidence": items(EVIDENCE, 100), "tool": text, "versions": optional(text),
            "explains": items(finding(depth + 1), 1000),
        }, required=("id", "severity"))(value, field)
    return inner


INPUT = mapping({
    "path": text, "kind": one_of(KINDS), "lines": whole(), "bytes": whole(),
    "sha256": optional(matching(SHA_RE, "64 hexadecimal digits")),
}, required=("path",))

DOCUMENT = mapping({
    "created": text,
    "run": mapping({
        "tool": one_of(RUN_TOOLS), "tool_version": optional(text), "status": one_of(RUN_STATUSES),
        "phase": optional(text), "part": optional(text), "inputs": items(INPUT, 10_000),
    }),
    "findings": items(finding(), 5000),
    "counts": mapping({k: whole() for k in ("error", "warning", "info", "explained", "unexplained")}),
    "unexplained": items(mapping({
        "path": text, "line": whole(), "text": text, "count": whole(1), "fingerprint": text,
    }, required=("text",))),
    "warnings": items(text),
    "metrics": items(mapping({
        "resource": text, "used": optional(number), "available": optional(number), "percent": optional(number),
        "scope": optional(text), "kind": optional(text), "path": optional(text), "line": optional(whole()),
        "unit": optional(text),
    }, required=("resource",))),
    "facts": items(mapping({"source": text, "line": whole(), "key": text, "value": text, "context": text})),
    "dimensions": mapping({}),  # values are checked by `check_dimensions`
    "packs_digest": optional(text), "duration_s": optional(number),
}, required=("run", "findings"))


def check_document(doc: Any) -> None:
    """Raise `ContractError` (one line, naming the field) unless `doc` holds to the contract."""
    if not isinstance(doc, Mapping) or "run" not in doc or "findings" not in doc:
        raise ContractError("not a triage scan result (expected an object with 'run' and 'findings')", hint=HINT)
    DOCUMENT(doc, "")
    dims = doc.get("dimensions")
    if isinstance(dims, Mapping):
        for key, value in dims.items():
            text(key, "dimensions key")
            if value is not None and not isinstance(value, (str, int, float)) or isinstance(value, bool):
                _fail(f"dimensions.{key}", "a string or null", value)
            if isinstance(value, str):
                text(value, f"dimensions.{key}")
    duration = doc.get("duration_s")
    if duration is not None and duration < 0:
        _fail("duration_s", "a number >= 0", duration)


def reject_constant(name: str) -> Any:
    """`json.loads(..., parse_constant=...)`: NaN and Infinity are not JSON numbers a scan ever writes."""
    raise ContractError(f"not JSON: {name} is not a number a document may hold", hint=HINT)
