"""Draft a pack entry from an error line no cause explains: `triage kb draft`.

The regex is derived from the line with the fingerprint's own masking rules (`triage.fingerprint.MASKS`):
what they mask (times, hex, paths, temp names, numbers) and quoted names become named captures, the rest
stays literal, and the pattern starts at the tool's message id (`[Synth 8-439]`) when the line has one,
else after the severity prefix — the way the built-in packs are written (docs/packs.md). Every stored line
with the same fingerprint is a `match` example; the most similar lines of passed runs are `no_match`
examples. Cause, workaround and references are left as placeholders the loader refuses until written.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import re
import shlex
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import regex
import yaml

from .errors import InputError, PackError
from .fingerprint import MASKS, MESSAGE_ID, fingerprint, normalise
from .packs import ID_RE, PLACEHOLDER, TOOLS, Cause, PackSet, load_pack_file
from .sources import ReadStats, read_blocks

MATCH_EXAMPLES = 5
NO_MATCH_EXAMPLES = 3
PASSED_RUNS_READ = 30  # the newest passed runs with kept logs searched for no_match examples
# Literal characters a drafted pattern keeps: enough to recognise the message, not its tail (which later
# versions reword). After a message id the id does most of the work.
PATTERN_CHARS = 100
PATTERN_CHARS_AFTER_ID = 40
TITLE_CHARS = 80
CONTEXT_BEFORE, CONTEXT_AFTER = 20, 5  # lines of the kept log around the line, for the draft's fixture

# A drafted id's namespace: the run's tool, as the built-in packs name theirs.
NAMESPACE = {"dfc": "dfc", "hailort": "hailort", "vivado_hls": "hls", "vitis_hls": "hls", "hls": "hls",
             "vivado": "vivado", "hls4ml": "hls4ml", "finn": "finn"}

CAUSE_PLACEHOLDER = (f"{PLACEHOLDER}: why it happens, concretely: what the tool was doing and what in the model, "
                     "the configuration or the setup triggers it.")
WORKAROUND_PLACEHOLDER = (f"{PLACEHOLDER}: what to change: the exact model-script command, config key, pragma, "
                          "Tcl option, tool version or package.")
REFERENCE_PLACEHOLDER = f"{PLACEHOLDER}: https://... (an issue, a forum thread, a vendor page), or delete this line"

_MASKS = tuple((regex.compile(p), p, r.strip("<>").lower()) for p, r in MASKS)
# What a capture of each kind matches in a drafted regex: the mask's own pattern, written the way a pack
# author would (the literal text around a capture does the anchoring that `\b` and look-behinds do there).
_BODY = {"n": r"\d+(?:\.\d+)?", "path": r"(?:[A-Za-z]:)?[\w.+~@\\/-]+", "tmp": r"(?:tmp|temp)[\w-]*"}
# A quoted name: quotes that open after a non-word character and close before one (so the apostrophes
# of "won't ... can't" are not taken for a pair).
_QUOTED = regex.compile(r"""(?<!\w)(?P<q>['"`])(?P<body>[^'"`\n]{1,200}?)(?P=q)(?!\w)""")
_LEAD = regex.compile(
    r"^(?:\s+|[-:|,>]+|\ue000[\ue010-\ue019]+\ue001|\[[A-Za-z][\w.-]{0,20}\]"
    r"|(?:CRITICAL WARNING|ERROR|WARNING|FATAL|INFO|DEBUG)\b|[\w.]+\.py:\ue000[\ue010-\ue019]+\ue001)+",
    regex.IGNORECASE,
)
# A placeholder no mask can touch: private-use characters only, no digits (as in triage.fingerprint).
_SLOT = regex.compile("\ue000([\ue010-\ue019]+)\ue001")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_NAME_STOP = {"the", "a", "an", "of", "in", "on", "at", "to", "for", "by", "is", "are", "was", "with", "from",
              "and", "or", "not", "than", "as", "be", "no"}
_SLUG_STOP = {"the", "a", "an"}


@dataclass
class Origin:
    """Where the drafted line was seen."""

    text: str
    fingerprint: str
    run_id: int | None = None
    path: str | None = None
    line: int | None = None
    tool: str | None = None
    phase: str | None = None


@dataclass
class Draft:
    cause_id: str
    title: str
    severity: str
    tool: str
    phase: str | None
    regex: str
    match: list[str]
    no_match: list[str] = field(default_factory=list)
    origin: Origin | None = None
    excerpt: str | None = None  # the lines around the origin, for a fixture of the draft's own

    @property
    def slug(self) -> str:
        return self.cause_id.replace("/", "-")

    def pack_dict(self, filled: bool = False) -> dict[str, Any]:
        """The pack as data; `filled` puts neutral text where the placeholders are (to load it for a backtest)."""
        signature: dict[str, Any] = {"regex": _Q(self.regex), "match": [_Q(m) for m in self.match]}
        if self.no_match:
            signature["no_match"] = [_Q(m) for m in self.no_match]
        cause: dict[str, Any] = {"id": self.cause_id, "title": _Q(self.title), "severity": self.severity}
        if self.phase:
            cause["phase"] = self.phase
        cause["cause"] = _Q("Drafted, not yet written." if filled else CAUSE_PLACEHOLDER)
        cause["workaround"] = _Q("Drafted, not yet written." if filled else WORKAROUND_PLACEHOLDER)
        if not filled:
            cause["references"] = [_Q(REFERENCE_PLACEHOLDER)]
        cause["signatures"] = [signature]
        return {"pack": f"draft-{self.slug}", "tool": self.tool, "causes": [cause]}

    def to_yaml(self, header: Iterable[str] = ()) -> str:
        lines = [f"# {line}".rstrip() for line in header]
        body = yaml.dump(self.pack_dict(), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100000)
        return "\n".join(lines) + ("\n" if lines else "") + body

    def as_cause(self) -> Cause:
        """The draft loaded through the packs' own loader (examples checked), placeholders filled."""
        with tempfile.TemporaryDirectory(prefix="triage-draft-") as tmp:
            path = Path(tmp) / f"{self.slug}.yaml"
            path.write_text(yaml.dump(self.pack_dict(filled=True), Dumper=_Dumper, sort_keys=False,
                                      allow_unicode=True, width=100000), encoding="utf-8")
            (cause,) = load_pack_file(path)
        return replace(cause, source=f"{self.slug}.yaml")


def with_draft(packs: PackSet, draft: Draft) -> PackSet:
    """`packs` plus the draft's cause: what the packs would be once the draft is written and loaded."""
    cause = draft.as_cause()
    digest = hashlib.sha256(f"{packs.digest}\0{draft.to_yaml()}".encode()).hexdigest()[:16]
    return PackSet(causes={**packs.causes, cause.id: cause}, files=list(packs.files), digest=digest)


# ---------------------------------------------------------------------------------------------------------
# the regex, the id and the title


class _Q(str):
    """A string the draft writes in single quotes (regexes and log lines read best that way)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Q, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", str(v), style="'"))


@dataclass
class _Part:
    kind: str  # "text", "msgid" (kept literally), or a capture kind: time, hex, path, tmp, n, name
    text: str
    body: str = ""  # the capture's pattern
    quote: str = ""  # the quote around a name


def _parts(line: str) -> list[_Part]:
    """The line as literal text and variable parts, found by the fingerprint masks in their order."""
    slots: list[_Part] = []

    def keep(part: _Part) -> str:
        slots.append(part)
        return "\ue000" + "".join(chr(0xE010 + int(d)) for d in str(len(slots) - 1)) + "\ue001"

    text = MESSAGE_ID.sub(lambda m: keep(_Part("msgid", m.group(0))), line.strip())
    text = _QUOTED.sub(lambda m: keep(_Part("name", _unslot(m.group("body"), slots), r"[^" + m.group("q") + r"]+",
                                            m.group("q"))), text)
    for compiled, pattern, kind in _MASKS:
        body = _BODY.get(kind, pattern.replace(r"\b", ""))
        text = compiled.sub(lambda m, k=kind, b=body: keep(_Part(k, m.group(0), b)), text)
    start = 0
    msgid = next((m for m in _SLOT.finditer(text) if slots[_index(m)].kind == "msgid"), None)
    if msgid is not None:
        start = msgid.start()
    else:
        lead = _LEAD.match(text)
        start = lead.end() if lead else 0
    out: list[_Part] = []
    pos = start
    for m in _SLOT.finditer(text, start):
        if m.start() > pos:
            out.append(_Part("text", text[pos:m.start()]))
        out.append(slots[_index(m)])
        pos = m.end()
    if pos < len(text):
        out.append(_Part("text", text[pos:]))
    return _trim(out, PATTERN_CHARS_AFTER_ID if msgid is not None else PATTERN_CHARS)


def _index(m: regex.Match[str]) -> int:
    return int("".join(str(ord(c) - 0xE010) for c in m.group(1)))


def _unslot(text: str, slots: list[_Part]) -> str:
    return _SLOT.sub(lambda m: slots[_index(m)].text, text)


def _trim(parts: list[_Part], budget: int) -> list[_Part]:
    """End the pattern once `budget` literal characters are in: at a sentence end past half of it, else
    at the next word; no trailing spaces or punctuation."""
    total = 0
    for i, part in enumerate(parts):
        if part.kind != "text":
            continue
        if total + len(part.text) > budget:
            room = budget - total
            ends = [m.end() for m in re.finditer(r"[.;](?= )", part.text) if budget // 2 - total <= m.end() <= room]
            space = part.text.find(" ", room)
            cut = ends[-1] if ends else 0 if room <= 8 else space if space >= 0 else len(part.text)
            parts = parts[:i] + ([_Part("text", part.text[:cut])] if cut > 0 else [])
            break
        total += len(part.text)
    while parts and parts[-1].kind == "text" and not parts[-1].text.strip(" ,;:-"):
        parts.pop()
    if parts and parts[-1].kind == "text":
        parts[-1] = _Part("text", parts[-1].text.rstrip(" ,;"))
    return parts


def _capture_names(parts: list[_Part]) -> list[str]:
    """A name per capture: the word right before it (`module '(?P<module>...)'`), else its kind; unique."""
    names: list[str] = []
    taken: set[str] = set()
    before = ""
    for part in parts:
        if part.kind in ("text", "msgid"):
            before = part.text
            continue
        tail = before.rstrip(" =:(")
        m = re.search(r"[A-Za-z][A-Za-z0-9_]*$", tail)
        word = m.group(0).lower() if m and len(before) - len(tail) <= 2 else ""
        base = word if word and word not in _NAME_STOP and len(word) <= 24 else part.kind
        name, n = base, 2
        while name in taken:
            name, n = f"{base}{n}", n + 1
        taken.add(name)
        names.append(name)
        before = ""
    return names


def derive_regex(line: str, loose_spaces: bool = False) -> str:
    """The regex for `line`: literal where it is stable, a named capture where the fingerprint masks."""
    parts = _parts(line)
    names = iter(_capture_names(parts))
    out = []
    for part in parts:
        if part.kind in ("text", "msgid"):
            literal = regex.escape(part.text, special_only=True, literal_spaces=True).replace("\\-", "-")
            out.append(re.sub(r" +", r"\\s+", literal) if loose_spaces else re.sub(r"  +", r"\\s+", literal))
        elif part.kind == "name":
            out.append(f"{part.quote}(?P<{next(names)}>{part.body}){part.quote}")
        else:
            out.append(f"(?P<{next(names)}>{part.body})")
    return "".join(out)


def suggest_title(line: str) -> str:
    """The stable words of the line, variable parts shown as `…`, the message id at the end."""
    parts = _parts(line)
    msgid = next((p.text.strip("[]") for p in parts if p.kind == "msgid"), None)
    words = []
    for part in parts:
        if part.kind == "text":
            words.append(part.text)
        elif part.kind == "name":
            words.append(f"{part.quote}…{part.quote}")
        elif part.kind != "msgid":
            words.append("…")
    title = " ".join("".join(words).split()).strip(" :,;-")
    title = title[:-1] if title.endswith(".") and not title.endswith("..") else title
    title = re.sub(r"…(?:[\s/:.,;-]*…)+", "…", title)
    title = re.sub(r"([(\[]) *… *([)\]])", r"\1…\2", title)
    if len(title) > TITLE_CHARS:
        title = title[:TITLE_CHARS].rsplit(" ", 1)[0] + " …"
    first = title.split(" ", 1)[0]
    if not regex.search(r"[._/\\\d]|[a-z][A-Z]", first):  # an identifier (`subprocess.Popen`) keeps its case
        title = title[:1].upper() + title[1:]
    title = title or "Unexplained error"
    return f"{title} ({msgid})" if msgid else title


def suggest_id(line: str, tool: str | None, taken: Iterable[str]) -> str:
    namespace = NAMESPACE.get(tool or "", "site")
    parts = _parts(line)
    msgid = next((p.text.strip("[]") for p in parts if p.kind == "msgid"), "")
    words = [w.lower() for p in parts if p.kind == "text" for w in _WORD.findall(p.text)
             if w.lower() not in _SLUG_STOP and len(w) > 1]
    slug = ""
    for word in [*regex.findall(r"[a-z0-9]+", msgid.lower()), *words[:6]]:
        if len(slug) + len(word) + 1 > 48:
            break
        slug = f"{slug}-{word}" if slug else word
    slug = re.sub(r"[^a-z0-9_.-]+", "-", slug).strip("-.") or "unexplained"
    base = f"{namespace}/{slug}"
    taken = set(taken)
    cause_id, n = base, 2
    while cause_id in taken or not ID_RE.match(cause_id):
        cause_id, n = f"{base}-{n}", n + 1
        if n > 99:
            raise InputError(f"cannot find a free id near {base}")
    return cause_id


def severity_of(line: str) -> str:
    return "warning" if re.search(r"\b(?:CRITICAL )?WARNING\b|\[warning\]", line) and not re.search(
        r"\bERROR\b|\[error\]", line) else "error"


# ---------------------------------------------------------------------------------------------------------
# drafting


def draft_line(origin: Origin, packs: PackSet, examples: Iterable[str] = (), no_match: Iterable[str] = (),
               excerpt: str | None = None) -> Draft:
    """A draft for `origin`: the regex, id and title derived from its text, checked against every example."""
    origin.text = _CLIPPED.sub("", origin.text).strip()
    match = _distinct([origin.text, *examples], MATCH_EXAMPLES)
    tool = origin.tool if origin.tool in TOOLS and origin.tool != "unknown" else "any"
    pattern = derive_regex(origin.text)
    compiled = regex.compile(pattern)
    if not all(compiled.search(m) for m in match):  # lines of one fingerprint may differ in spacing
        pattern = derive_regex(origin.text, loose_spaces=True)
        compiled = regex.compile(pattern)
        match = [m for m in match if compiled.search(m)] or [origin.text.strip()]
    draft = Draft(
        cause_id=suggest_id(origin.text, origin.tool, packs.causes), title=suggest_title(origin.text),
        severity=severity_of(origin.text), tool=tool, phase=origin.phase, regex=pattern, match=match,
        no_match=[n for n in _distinct(no_match, NO_MATCH_EXAMPLES * 4) if not compiled.search(n)][:NO_MATCH_EXAMPLES],
        origin=origin, excerpt=excerpt,
    )
    try:
        draft.as_cause()  # the packs' own loader: the regex, its literal and every example
    except PackError as exc:
        raise InputError(f"cannot draft a signature from {origin.text[:120]!r}: {exc.message.split(': ', 1)[-1]}",
                         hint="draft from another line of the failure (--line N), or write the signature by hand "
                              "(docs/packs.md)") from None
    return draft


def draft_from_text(text: str, packs: PackSet, tool: str | None = None) -> Draft:
    """A draft from pasted text: its first error-looking line (else its first non-empty line). Without
    `tool`, the tool is read from the text (`[HailoRT]`, a banner, a message id) for the id's namespace."""
    from .detect import tool_of_text
    from .scan import ERROR_LINE

    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise InputError("no text to draft from", hint="paste the error line: triage kb draft --text '<line>'")
    line = next((x for x in lines if ERROR_LINE.search(x) and not TRACEBACK_HEADER.search(x)),
                next((x for x in lines if ERROR_LINE.search(x)), lines[0]))
    origin = Origin(line.strip(), fingerprint(line), tool=tool or tool_of_text(text))
    return draft_line(origin, packs, excerpt=text if len(lines) > 1 else None)


def draft_from_store(store: Any, packs: PackSet, *, fingerprint_: str | None = None, run_id: int | None = None,
                     line: int | None = None, path: str | None = None) -> Draft:
    """A draft from a stored unexplained line: by fingerprint, or by run id and line (and path)."""
    if fingerprint_ is None and run_id is None:
        raise InputError("say which line to draft from", hint="give a fingerprint, --run ID --line N, or --text")
    found = store.unexplained_lines(fingerprint=fingerprint_, run_id=run_id, line=line, path=path)
    if not found:
        what = f"fingerprint {fingerprint_}" if fingerprint_ else f"run {run_id}" + (f" line {line}" if line else "")
        raise InputError(f"no unexplained line with {what} in the run database",
                         where=getattr(store, "where", None),
                         hint="`triage runs show ID` lists a run's unexplained lines with their fingerprints")
    if fingerprint_ is None and len({u["fingerprint"] for u in found}) > 1:
        shown = ", ".join(f"{u['path']}:{u['line']}" for u in found[:5])
        raise InputError(f"run {run_id} has {len(found)} unexplained lines{'' if line is None else f' at line {line}'}: "
                         f"{shown}", hint="choose one with --line N (and --path P)")
    first = found[0]
    origin = Origin(str(first["text"]).strip(), str(first["fingerprint"]), int(first["run_id"]), first["path"],
                    first["line"], first.get("tool"), first.get("phase"))
    if TRACEBACK_HEADER.search(origin.text):
        _refuse_traceback_header(store, origin)
    same = store.unexplained_lines(fingerprint=origin.fingerprint, limit=200)
    no_match = similar_lines(origin.text, passed_lines(store))
    return draft_line(origin, packs, [str(u["text"]).strip() for u in same], no_match,
                      excerpt=_excerpt(store, origin))


def passed_lines(store: Any, runs: int = PASSED_RUNS_READ) -> Iterator[str]:
    """The lines of the kept logs of the newest passed runs."""
    for row in store.runs(status="passed", limit=runs):
        for _, data in store.kept_logs(int(row["id"])):
            yield from _lines(data)


def _lines(data: bytes) -> Iterator[str]:
    """Lines decoded the way a scan reads them (replacement, no ANSI, LF)."""
    for block in read_blocks(io.BytesIO(data), ReadStats(), lambda _m: None, "<kept>"):
        yield from block.text.split("\n")[:-1]


def similar_lines(text: str, lines: Iterable[str], limit: int = NO_MATCH_EXAMPLES * 4) -> list[str]:
    """The lines most like `text` (masked, as `kb explain` compares), best first, distinct."""
    wanted = normalise(text)[:300]
    words = sorted({w for w in _WORD.findall(wanted) if len(w) >= 4}, key=len, reverse=True)[:4]
    if not words:
        return []
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    scored: dict[str, float] = {}
    for line in lines:
        if not any(w in line for w in words):
            continue
        candidate = line.strip()
        if not candidate or candidate in scored or len(scored) > 20000:
            continue
        matcher.set_seq1(normalise(candidate)[:300])
        scored[candidate] = matcher.ratio() if matcher.real_quick_ratio() > 0.3 and matcher.quick_ratio() > 0.3 else 0
    best = sorted((s, c) for c, s in scored.items() if s > 0.3)
    return [c for _, c in sorted(best, key=lambda sc: (-sc[0], sc[1]))[:limit]]


def _excerpt(store: Any, origin: Origin) -> str | None:
    """The kept log's lines around the origin line: a fixture in which the draft must find it."""
    if origin.run_id is None or not origin.line:
        return None
    for path, data in store.kept_logs(origin.run_id):
        if path != origin.path:
            continue
        lo, hi = max(1, origin.line - CONTEXT_BEFORE), origin.line + CONTEXT_AFTER
        return "".join(line + "\n" for n, line in enumerate(_lines(data), start=1) if lo <= n <= hi) or None
    return None


_CLIPPED = re.compile(r" … \(cut at \d+ characters\)$")  # the marker of `triage.display.clip`
TRACEBACK_HEADER = re.compile(r"Traceback \(most recent call last\):?\s*$")  # after a log prefix, if any
TRACEBACK_LINES = 300  # how far below its header a traceback's exception line is looked for
# The line that ends a traceback: `ValueError: ...`, `subprocess.CalledProcessError: ...`, `KeyboardInterrupt`
# (after a log prefix, if any); a frame (`File "..."`) or its code (`raise ValueError(...)`) is not one.
EXCEPTION_LINE = re.compile(r"(?:^|\s)(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Interrupt|Exit)(?::|\s*$)")


def draftable(text: str) -> bool:
    """False for a line `kb draft` refuses: a traceback's first line, which names no error."""
    return not TRACEBACK_HEADER.search(text)


def _refuse_traceback_header(store: Any, origin: Origin) -> None:
    """A traceback's first line names no error: a cause keyed on it would claim every Python crash. Point
    at the exception line that ends it (in the kept log) instead."""
    found = None
    kept = store.kept_logs(origin.run_id) if origin.run_id is not None else []
    for path, data in kept:
        if path == origin.path and origin.line:
            found = _exception_line(_lines(data), origin.line)
    where = f"{origin.path}:{origin.line}" if origin.line else origin.path
    if found:
        n = found[0]
        path = f" --path {shlex.quote(origin.path)}" if len(kept) > 1 and origin.path else ""
        hint = f"draft from the exception line that ends it: triage kb draft --run {origin.run_id} --line {n}{path}"
    else:
        hint = "draft from the error line that says what failed (--run ID --line N), or paste it with --text"
    raise InputError("this line is the first line of a Python traceback, which names no error", where=where,
                     hint=hint)


def _exception_line(lines: Iterable[str], header: int) -> tuple[int, str] | None:
    """(line number, text) of the exception line ending the traceback whose header is line `header`, in
    the plain and the IPython layout, with or without a log prefix."""
    for n, line in enumerate(lines, start=1):
        if n <= header:
            continue
        if n > header + TRACEBACK_LINES or TRACEBACK_HEADER.search(line):
            return None  # none within reach, or the next traceback began: this one was cut
        if EXCEPTION_LINE.search(line) and 'File "' not in line:
            return n, line.strip()
    return None


def _distinct(items: Iterable[str], limit: int) -> list[str]:
    """The first `limit` distinct lines, as the log had them (a stored line cut with its marker loses it)."""
    out: list[str] = []
    for item in items:
        item = _CLIPPED.sub("", item).strip()
        if item and item not in out:
            out.append(item)
        if len(out) >= limit:
            break
    return out


# ---------------------------------------------------------------------------------------------------------
# writing


def header_lines(draft: Draft, bt: Any = None) -> list[str]:
    """The comment a drafted pack starts with: where the line came from, the backtest, what to do next."""
    o = draft.origin
    lines = ["Drafted by `triage kb draft`" + (f" from run {o.run_id}, {o.path}:{o.line}" if o and o.run_id else "")
             + (f" (fingerprint {o.fingerprint})" if o else "") + ":"]
    if o:
        lines.append("  " + o.text[:300])
    if bt is not None:
        for days in bt.windows:
            lines.append(f"Backtest, last {days} days: hits " + ", ".join(
                f"{bt.hits(draft.cause_id, days, s)} {s}" for s in ("failed", "passed", "unknown")) + " runs")
        lines.append(f"  over {bt.runs} stored runs with kept logs; explains error lines in "
                     + (", ".join(f"run {c.run_id}" for c in bt.explaining) or "no run") + "; newly explains "
                     + (", ".join(f"run {c.run_id}" for c in bt.newly_explained) or "no run")
                     + "; hides " + (", ".join(f"{cid} in run {c.run_id}" for c in bt.hiding for cid in c.hidden + c.lost)
                                     or "no cause"))
    lines += [
        f"Before it loads: replace every {PLACEHOLDER} (cause, workaround, references) with your own words, and",
        "check the id, title, severity and regex. `triage packs check --packs DIR` says what is left; then",
        "`triage packs test --packs DIR --fixtures DIR/fixtures --against-db` runs it on the fixture and the runs.",
    ]
    return lines


def write_draft(draft: Draft, folder: Path, packs: PackSet, header: Iterable[str] = (), force: bool = False) -> list[Path]:
    """Write `<folder>/<slug>.yaml` and, when the draft has an excerpt, a fixture of its own with its golden
    (`<folder>/fixtures/<slug>.log` and `.log.expected.yaml`). Returns the files written."""
    from .goldens import SUFFIX, flat_findings
    from .scan import scan_sources
    from .sources import Source

    pack = folder / f"{draft.slug}.yaml"
    if pack.exists() and not force:
        raise InputError("a draft with this id exists already", where=str(pack),
                         hint="edit it, remove it, or draft again with --force to replace it")
    files = [pack]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        pack.write_text(draft.to_yaml(header), encoding="utf-8")
        if draft.excerpt:
            log = folder / "fixtures" / f"{draft.slug}.log"
            log.parent.mkdir(exist_ok=True)
            log.write_text(draft.excerpt, encoding="utf-8")
            result = scan_sources(with_draft(packs, draft), [Source(str(log), "log", log.stat().st_size)])
            found = flat_findings(result)
            if draft.cause_id in found:  # the draft finds its line in the excerpt: a fixture worth keeping
                expected = log.with_name(log.name + SUFFIX)
                expected.write_text(yaml.safe_dump({"status": result.run.status, "findings": dict(sorted(found.items()))},
                                                   sort_keys=False, allow_unicode=True), encoding="utf-8")
                files += [log, expected]
            else:
                log.unlink()
    except OSError as exc:
        raise InputError(f"cannot write the draft: {exc.strerror}", where=str(folder)) from None
    return files
