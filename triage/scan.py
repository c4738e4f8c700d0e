"""The pipeline: sources -> blocks -> literal gate -> regexes on candidate lines -> findings.

Each source is scanned on its own into a `SourceResult` (so several inputs can run in a process pool),
then the results are merged in input order into one `ScanResult` — identical whether serial or parallel.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from time import perf_counter, thread_time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import regex

from . import advice
from .configs import ConfigRefused, Fact, evidence_of, misconfigurations, read_config, read_python_script
from .detect import ENDING_PHASES, CompiledRule, Detection, compile_rules
from .display import EVIDENCE_CHARS, clip
from .metrics import METRIC_LITERALS, Metric, MetricStream, parse_metrics
from .fingerprint import fingerprint
from .gate import Gate, make_gate
from .lazyre import lazy
from .model import SEVERITY_RANK, Evidence, Finding, InputInfo, RunInfo, ScanResult, Unexplained
from .packs import REGEX_TIMEOUT_S, Cause, PackSet, Signature, compile_all, interpolate
from .notebook import NotebookView, is_notebook
from .sources import LINE_CAP, Block, ReadStats, Source, decode, discover, open_binary, read_blocks
from .split import SPLIT_MIN_BYTES, Range, RangeReader, lines_after, lines_before, plain_file, plan_ranges

CONTEXT = 3
MAX_EVIDENCE = 5
MAX_UNEXPLAINED = 500
CHAIN_REACH = 2  # the chaining sentence, then a blank line, then the next traceback's header
CHAIN_GAP = 8  # lines from an explained exception line to the header of the traceback chained to it
CHAIN_LINE = lazy(regex.compile, r"^[\s>`|]*(?:The above exception was the direct cause of the following exception|"
                  r"During handling of the above exception, another exception occurred):")
TRACEBACK_REACH = 300  # a traceback header is explained by a finding this many lines below it
WHOLE_TEXT_CAP = 8 << 20  # reports and configs are read whole (they are small) up to this size
MAX_LOG_METRICS = 1000
# A regex call that costs more CPU than this is charged to its rule's budget (a sound one takes µs). A call is timed
# on the cheap wall clock; one that looks slow is run again on the thread's CPU clock (ten times dearer to read),
# because on a loaded machine a preempted call is not slow and the findings must not depend on the load. The
# second run also leaves out a regex's compile on first use.
SLOW_CALL_S = 0.005
RULE_BUDGET_S = 1.0  # per rule and input: charged past this, the rule is dropped for the rest of the input
MEMO_LINES = 8192  # distinct candidate lines remembered per input (the memo is emptied when full) ...
MEMO_LINE_BYTES = 512  # ... of at most this many bytes: bounded memory, whatever the log

# Lines that look like errors: kept as "unexplained" when no signature explains them.
ERROR_LITERALS = ("ERROR", "[error]", "Traceback (most recent call last)", "Exception:", "Error:",
                  "CRITICAL WARNING", "Killed", "Segmentation fault", "FATAL")
ERROR_LINE = lazy(
    regex.compile,
    # ERROR at the end of an identifier, followed by a space, is a name (`CONFIG.CLKOUT1_PHASE_ERROR {96.948}` of a
    # clocking wizard, `Parameter REC_ERROR bound to:`); `CUDA_ERROR_OUT_OF_MEMORY` and `[VAIQ_ERROR]` are errors
    r"(?<![A-Za-z0-9_])ERROR|ERROR(?!\s)|\[error\]|Traceback \(most recent call last\)|\w(?:Exception|Error):"
    r"|CRITICAL WARNING|(?<![\w-])Killed\b|Segmentation fault|\bFATAL\b"
)

# A Python traceback: a frame line, and the exception line that ends it (after the frames and their code).
FRAME_LINE = lazy(regex.compile, r'File \\?"[^"\n]+", line \d+')  # also as a notebook's JSON quotes it
EXCEPTION_LINE = lazy(regex.compile, r'^[\s"\'>`|]*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\w*:')
FRAME_REACH = 60  # the exception line of a traceback whose frame a cause explains comes within this many lines

Warn = Callable[[str], None]
RawSink = Callable[[Source, bytes], None]  # receives every byte read, unchanged (tee, kept logs)
OnFinding = Callable[[Cause, Evidence], None]


class _Target(NamedTuple):
    """What one gate literal feeds (a tuple: a pack set has thousands, made on every start)."""

    signature: Signature | None = None
    rule: CompiledRule | None = None
    error_like: bool = False
    metric: bool = False


@dataclass
class CauseHits:
    count: int = 0
    evidence: list[Evidence] = field(default_factory=list)
    first: tuple[int, int] = (0, 0)  # (source index, line) of the first hit


@dataclass
class SourceResult:
    index: int
    info: InputInfo
    hits: dict[str, CauseHits]
    unexplained: dict[str, Unexplained]
    detection: Detection
    warnings: list[str]
    timeouts: list[str]
    metrics: list[Metric] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)  # the input's last lines (the last is line `info.lines`)


_RULES: list[CompiledRule] | None = None


def detection_rules() -> list[CompiledRule]:
    """The compiled detection rules: once per process, and from the cache when their code has not changed
    (compiling ~60 regexes and deriving their literals is a large part of a short scan's start-up)."""
    global _RULES  # noqa: PLW0603 - constant data, built once per process
    if _RULES is None:
        from . import cache as disk  # noqa: PLC0415

        code = disk.code_hash(["detect.py", "literals.py"], f"regex={regex.__version__}")
        rules = disk.load("rules", "detect", code)
        if not (isinstance(rules, list) and all(isinstance(r, CompiledRule) for r in rules)):
            rules = compile_rules()
            disk.store("rules", "detect", code, rules)
        _RULES = rules
    return _RULES


@dataclass(slots=True)
class _Outcome:
    """What one line's literals lead to, before the scan's state (counts, evidence, saturation) applies."""

    text: str
    matches: list[tuple[Signature, dict[str, str]]] = field(default_factory=list)  # signatures that match
    rules: list[tuple[CompiledRule, dict[str, str] | None]] = field(default_factory=list)
    metric: bool = False
    fingerprint: str | None = None  # set when the line looks like an error (kept if nothing explains it)
    readable: str | None = None  # a HailoRT error line's readable message (advice for status lines below)
    pure: bool = True  # False when a signature was skipped or timed out: not remembered
    frame: bool | None = None  # a traceback's frame line (not its exception line): worked out when it matches


def _lines_before(data: bytes, pos: int, count: int, chars: int | None = None) -> list[str]:
    """Up to `count` lines ending right before offset `pos` (a line start) of `data`, decoded (each cut to
    about `chars` characters when given: a long line is not decoded whole for its first 2,000)."""
    out: list[str] = []
    end = pos - 1
    while len(out) < count and end >= 0:
        begin = data.rfind(b"\n", 0, end) + 1
        out.append(_decode_head(data, begin, end, chars))
        end = begin - 1
    out.reverse()
    return out


def _lines_from(data: bytes, pos: int, count: int, chars: int | None = None) -> list[str]:
    """Up to `count` lines of `data` starting at offset `pos`, decoded."""
    out: list[str] = []
    while len(out) < count and pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        out.append(_decode_head(data, pos, end, chars))
        pos = end + 1
    return out


def _decode_head(data: bytes, begin: int, end: int, chars: int | None) -> str:
    if chars is not None:
        end = min(end, begin + 4 * chars + 4)  # UTF-8 is at most 4 bytes a character
    return decode(data[begin:end])


class Matcher:
    """Compiled gate and targets for one pack set; cheap to reuse across sources."""

    def __init__(self, packs: PackSet, gate: str | None = None) -> None:
        self.packs = packs
        literals: list[tuple[str, bool]] = []
        self.targets: list[_Target] = []
        for sig in packs.signatures:
            for lit in sig.literals:
                literals.append((lit, sig.ignore_case))
                self.targets.append(_Target(signature=sig))
        for rule in detection_rules():
            for lit in rule.literals:
                literals.append((lit, bool(rule.compiled.flags & regex.IGNORECASE)))
                self.targets.append(_Target(rule=rule))
        for lit in ERROR_LITERALS:
            literals.append((lit, False))
            self.targets.append(_Target(error_like=True))
        for lit in METRIC_LITERALS:
            literals.append((lit, False))
            self.targets.append(_Target(metric=True))
        self.gate: Gate = make_gate(literals, gate)
        self.ids_of = self._ids_of()

    def _ids_of(self) -> dict[int, frozenset[int]]:
        """Literal ids by what they feed, so a scan can stop looking at lines only a spent target wants."""
        ids_of: dict[int, set[int]] = {}
        for i, t in enumerate(self.targets):
            if t.signature is not None or t.rule is not None:
                ids_of.setdefault(id(t.signature if t.signature is not None else t.rule), set()).add(i)
        return {k: frozenset(v) for k, v in ids_of.items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.ids_of = self._ids_of()  # keyed by object identity: new objects in a new process

    def scan_source(self, source: Source, index: int, *, warn: Warn | None = None,
                    on_finding: OnFinding | None = None, raw_sink: RawSink | None = None,
                    part: Range | None = None, limit: int | None = None) -> SourceResult:
        """`limit`: read no more than that many bytes of the file (a parallel scan fixes each file's size when
        it plans, so what it hashes and keeps is what it scanned, even of a file still being written)."""
        sink = None if raw_sink is None else (lambda data: raw_sink(source, data))
        return _SourceScan(self, source, index, warn, on_finding, sink, part, limit).run()


class _SourceScan:
    def __init__(self, matcher: Matcher, source: Source, index: int, warn: Warn | None,
                 on_finding: OnFinding | None, raw_sink: Callable[[bytes], None] | None,
                 part: Range | None = None, limit: int | None = None) -> None:
        self.m = matcher
        self.part = part
        self.limit = limit
        self.source = source
        self.index = index
        self.path = source.display
        self.warnings: list[str] = []
        self._warn_cb = warn
        self.on_finding = on_finding
        self.raw_sink = raw_sink
        self.hits: dict[str, CauseHits] = {}
        self.unexplained: dict[str, Unexplained] = {}
        self.detection = Detection()
        self.timeouts: list[str] = []
        self.slow_time: dict[int, float] = {}  # time charged per rule (see _charge)
        self.unexplained_full = False
        self.disabled: set[int] = set()
        self.spent: frozenset[int] = frozenset()  # literal ids whose targets can add nothing more here
        self.tail: list[str] = []  # last CONTEXT lines of the previous block
        self.awaiting: list[Evidence] = []  # evidence still missing lines of after-context
        self.open_tracebacks: list[tuple[int, str]] = []
        self.explained_frame: int | None = None  # line of a traceback frame a cause explained, until its exception
        self.explained_exception = -CHAIN_GAP - 1  # line of the last exception line a cause explained
        self.metrics: list[Metric] = []
        self.metric_index: dict[tuple[str, str, str], int] = {}
        self.metric_stream = MetricStream(self.path)
        self.whole: list[str] | None = [] if source.kind in ("report", "config") else None
        self.notebook_facts: list[Fact] = []  # what a notebook's code cells set (see `notebook`)
        self.whole_size = 0
        self.advice_wait: list[list[Any]] = []  # [unexplained entry, lines left to look at] awaiting advice
        self.last_readable: tuple[int, str] | None = None  # latest HailoRT error line that says something
        self.block = b""  # the cleaned bytes of the block being scanned
        self.memo: dict[bytes, _Outcome] = {}  # what an identical earlier line led to (logs repeat lines)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        if self._warn_cb:
            self._warn_cb(message)

    def run(self) -> SourceResult:
        stats = ReadStats()
        part = self.part
        if part is None:
            stream = open_binary(self.source, limit=self.limit)
        else:  # one range of a large file, scanned beside the others
            stream = io.BufferedReader(RangeReader(self.source.path, part.start, part.end))  # type: ignore[assignment]
            self.tail = lines_before(self.source.path, part.start, CONTEXT)
        view = NotebookView() if is_notebook(self.source.path) else None
        try:
            for block in read_blocks(stream, stats, self.warn, self.path, raw_sink=self.raw_sink,
                                     first_line=part.first_line if part else 1, view=view):
                self._scan_block(block)
        finally:
            if self.source.path != "-":
                stream.close()
        if view is not None:
            self._read_notebook_code(view)
        if part is not None and (self.awaiting or self.advice_wait):
            following = lines_after(self.source.path, part.end, max(CONTEXT, advice.AFTER_REACH))
            self._fill_after(following)
            self._fill_advice(following)
        return self.result(stats)

    def _read_notebook_code(self, view: NotebookView) -> None:
        if view.plain:
            self.warn(f"{self.path}: not laid out one value per line as Jupyter saves a notebook; scanned as plain text")
            return
        code = view.code_text()
        if code.strip():
            try:
                self.notebook_facts = read_python_script(self.path, code)
            except RecursionError:
                self.warn(f"{self.path}: code cells nested too deeply to read; not read")

    def result(self, stats: ReadStats) -> SourceResult:
        info = InputInfo(self.path, self.source.kind, stats.lines, stats.bytes, blank=stats.blank,
                         unread=stats.truncated)
        result = SourceResult(self.index, info, self.hits, self.unexplained, self.detection, self.warnings,
                              self.timeouts, self.metrics, tail=list(self.tail))
        result.facts = self.notebook_facts
        if self.whole is not None:
            text = "".join(self.whole)
            if self.source.kind == "report":
                result.metrics = parse_metrics(self.path, text)
            else:
                try:
                    result.facts = read_config(self.path, text)
                except ConfigRefused as exc:
                    self.warn(f"{self.path}: {exc}")
                except RecursionError:  # a reader that recurses met a nesting its own checks missed
                    self.warn(f"{self.path}: nested too deeply to read as a config; not read")
        return result

    def _scan_block(self, block: Block) -> None:
        data = block.data
        if self.whole is not None and self.whole_size < WHOLE_TEXT_CAP:
            text = block.text
            self.whole.append(text)
            self.whole_size += len(text)
        candidates, block.n_lines = self.m.gate.lines(data)
        self.block = data
        if self.awaiting or self.advice_wait:
            following = _lines_from(data, 0, max(CONTEXT, advice.AFTER_REACH), max(EVIDENCE_CHARS, advice.LINE_CAP))
            self._fill_after(following)
            self._fill_advice(following)
        spent = self.spent
        for idx, start, end, literal_ids in candidates:
            if literal_ids <= spent:
                continue
            self._scan_line(start, end, block.first_line + idx, literal_ids)
            spent = self.spent
        if block.n_lines:
            self.tail = (self.tail + _lines_before(data, len(data), CONTEXT))[-CONTEXT:]

    def _scan_line(self, start: int, end: int, line_no: int, literal_ids: set[int]) -> None:
        raw = self.block[start:end]  # at most LINE_CAP bytes: the reader cuts longer lines
        short = len(raw) <= MEMO_LINE_BYTES
        outcome = self.memo.get(raw) if short else None
        if outcome is None:
            outcome = self._evaluate(raw, literal_ids, line_no)
            if outcome.pure and short:
                if len(self.memo) >= MEMO_LINES:
                    self.memo.clear()
                self.memo[raw] = outcome
        text = outcome.text
        matched = False
        if outcome.matches:
            seen_causes: set[str] = set()
            for sig, caps in outcome.matches:
                if sig.cause_id in seen_causes or id(sig) in self.disabled:
                    continue
                seen_causes.add(sig.cause_id)
                self._record(sig, start, end, line_no, text, caps)
            matched = bool(seen_causes)
        for rule, groups in outcome.rules:
            if rule.passive and self.detection.saturated(rule):
                ids = self.m.ids_of[id(rule)]
                if not ids <= self.spent:  # later lines with only its literals are skipped
                    self.spent |= ids
            elif groups is not None:
                self.detection.feed(rule.rule, groups)
        if outcome.metric and self.whole is None:
            for metric in self.metric_stream.feed(text, line_no):
                self._metric(metric)
        if outcome.readable:
            self.last_readable = (line_no, outcome.readable)
        if matched:
            self.open_tracebacks = []  # those in reach were counted as explained by _record; the rest are stale
            if EXCEPTION_LINE.match(text):
                self.explained_exception = line_no
            if outcome.frame is None:
                outcome.frame = FRAME_LINE.search(text) is not None and not EXCEPTION_LINE.match(text)
            if outcome.frame:
                self.explained_frame = line_no  # the exception this frame raised is explained with it
        elif outcome.fingerprint is not None and self.source.kind != "config":
            self._unexplained(line_no, text, outcome.fingerprint, end, start)

    def _chained(self, start: int) -> bool:
        """Whether the line at `start` follows Python's "The above exception was the direct cause ..." or "During
        handling of the above exception ..."."""
        before = _lines_before(self.block, start, CHAIN_REACH, EVIDENCE_CHARS)
        if len(before) < CHAIN_REACH:
            before = (self.tail + before)[-CHAIN_REACH:]
        return any(CHAIN_LINE.search(line) for line in before)

    def _evaluate(self, raw: bytes, literal_ids: set[int], line_no: int) -> _Outcome:
        """What the line's literals lead to, independent of the scan's state (so it can be reused for an
        identical line): each signature's captures, each detection rule's groups, error-likeness."""
        text = decode(raw)
        outcome = _Outcome(text)
        error_like = False
        seen: set[int] = set()
        for lit_id in sorted(literal_ids):
            target = self.m.targets[lit_id]
            if target.signature is not None:
                sig = target.signature
                if id(sig) in seen:
                    continue
                seen.add(id(sig))
                if id(sig) in self.disabled:
                    outcome.pure = False
                    continue
                started = perf_counter()
                try:
                    caps = sig.match(text)
                except TimeoutError:
                    caps = None
                    self._timed_out(sig, line_no)
                    outcome.pure = False
                if perf_counter() - started >= SLOW_CALL_S:
                    self._charge(sig, _cpu_cost(sig.match, text), line_no)
                if caps is not None:
                    outcome.matches.append((sig, caps))
            elif target.rule is not None:
                rule = target.rule
                if id(rule) in seen:
                    continue
                seen.add(id(rule))
                if rule.passive and self.detection.saturated(rule):
                    outcome.rules.append((rule, None))  # saturation only grows: skipped on any replay too
                    continue
                if id(rule) in self.disabled:
                    outcome.pure = False
                    continue
                started = perf_counter()
                try:
                    m = rule.compiled.search(text, timeout=REGEX_TIMEOUT_S)
                except TimeoutError:
                    m = None
                    outcome.pure = False
                if perf_counter() - started >= SLOW_CALL_S:
                    self._charge(rule, _cpu_cost(rule.compiled.search, text, timeout=REGEX_TIMEOUT_S), line_no)
                outcome.rules.append((rule, {k: v for k, v in m.groupdict().items() if v} if m else None))
            elif target.metric:
                outcome.metric = True
            else:
                error_like = True
        if error_like and "[HailoRT]" in text:
            outcome.readable = advice.readable_error(text)
        if error_like and self._error_line(text, line_no, outcome):
            outcome.fingerprint = fingerprint(text)
        return outcome

    def _error_line(self, text: str, line_no: int, outcome: _Outcome) -> bool:
        """ERROR_LINE on a line the gate found an error word in. Past its time, or its budget, the word alone
        decides (fail closed: a line that might be an error is kept as one; such an outcome is not memoised)."""
        if id(ERROR_LINE) in self.disabled:
            outcome.pure = False
            return True
        started = perf_counter()
        try:
            found = ERROR_LINE.search(text, timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            found = True
            outcome.pure = False
        if perf_counter() - started >= SLOW_CALL_S:
            self._charge(ERROR_LINE, _cpu_cost(ERROR_LINE.search, text, timeout=REGEX_TIMEOUT_S), line_no)
        return found

    def _timed_out(self, sig: Signature, line_no: int) -> None:
        """Said once per signature: a line it could not finish on is a line it may have missed."""
        key = f"{sig.cause_id}#{sig.index + 1}"
        if key not in self.timeouts:
            self.timeouts.append(key)
            self.warn(f"{self.path}:{line_no}: signature {key} exceeded its time bound; skipped on this line")

    def _charge(self, rule: Signature | CompiledRule | regex.Pattern[str], elapsed: float, line_no: int) -> None:
        """The time budget of every regex, per input: a call slower than SLOW_CALL_S is charged to its rule, and
        a rule whose charges pass RULE_BUDGET_S is dropped for the rest of the input, with one warning. A
        hostile pattern (0.11 s a line stays under the per-call bound) then costs about a second, not hours."""
        if elapsed < SLOW_CALL_S:
            return
        key = id(rule)
        # a call counts for no more than its bound (a loaded machine overshoots it): one crafted line never
        # drops a rule by itself
        spent = self.slow_time.get(key, 0.0) + min(elapsed, REGEX_TIMEOUT_S)
        self.slow_time[key] = spent
        if spent < RULE_BUDGET_S or key in self.disabled:
            return
        self.disabled.add(key)
        if isinstance(rule, Signature):
            name = f"signature {rule.cause_id}#{rule.index + 1}"
            self.spent |= self.m.ids_of[key]
        elif isinstance(rule, CompiledRule):
            name = f"detection rule {rule.rule.regex[:60]!r}"
            self.spent |= self.m.ids_of[key]
        else:
            name = "the error-line pattern (from here on a line with an error word counts as an error line)"
        self.warn(f"{self.path}:{line_no}: {name} used its time budget ({RULE_BUDGET_S:g} s on slow lines); "
                  "not run on the rest of this input")

    def _metric(self, metric: Metric) -> None:
        """Logs repeat their tables (every partition attempt, every context): keep the latest figure per
        resource and scope, in a bounded table, so memory does not grow with the log."""
        key = (metric.kind, metric.scope, metric.resource)
        if key in self.metric_index:
            self.metrics[self.metric_index[key]] = metric
        elif len(self.metrics) < MAX_LOG_METRICS:
            self.metric_index[key] = len(self.metrics)
            self.metrics.append(metric)

    def _record(self, sig: Signature, start: int, end: int, line_no: int, text: str, caps: dict[str, str]) -> None:
        hits = self.hits.get(sig.cause_id)
        if hits is None:
            hits = self.hits[sig.cause_id] = CauseHits(first=(self.index, line_no))
        hits.count += 1
        # Tracebacks opened shortly above this hit belong to it.
        for ln, fp in self.open_tracebacks:
            if line_no - ln <= TRACEBACK_REACH and fp in self.unexplained:
                entry = self.unexplained[fp]
                entry.count -= 1
                if entry.count <= 0:
                    del self.unexplained[fp]
        if len(hits.evidence) >= MAX_EVIDENCE:
            return
        before = _lines_before(self.block, start, CONTEXT, EVIDENCE_CHARS)
        if len(before) < CONTEXT:  # the block starts within the context: the rest is the previous block's
            before = (self.tail + before)[-CONTEXT:]
        ev = Evidence(self.path, line_no, clip(text, EVIDENCE_CHARS), before=[clip(b, EVIDENCE_CHARS) for b in before],
                      captures=caps)
        hits.evidence.append(ev)
        ev.after.extend(clip(a, EVIDENCE_CHARS) for a in _lines_from(self.block, end + 1, CONTEXT, EVIDENCE_CHARS))
        if len(ev.after) < CONTEXT:
            self.awaiting.append(ev)
        if self.on_finding is not None and hits.count == 1:
            cause = self.m.packs.causes[sig.cause_id]
            # a version read earlier in this log already rules the cause out: do not stream it (when the
            # version comes later, the final summary is what drops it)
            if cause.applies_to(self.detection.versions.get(cause.tool)):
                self.on_finding(cause, ev)

    def _find_advice(self, entry: Unexplained, line_no: int, text: str, end: int) -> None:
        """A bare status line gets the readable error printed before it; any other line looks below itself
        (now, and in the next blocks) for a line with the tool's own advice."""
        if self.last_readable and line_no - self.last_readable[0] <= advice.BEFORE_REACH \
                and advice.needs_readable_before(text):
            entry.advice = self.last_readable[1]
            return
        item: list[Any] = [entry, advice.AFTER_REACH]
        self.advice_wait.append(item)
        self._fill_advice(_lines_from(self.block, end + 1, advice.AFTER_REACH, advice.LINE_CAP), only=item)

    def _fill_advice(self, lines: list[str], only: list[Any] | None = None) -> None:
        """Look for waiting entries' advice in the lines that follow them."""
        for item in [only] if only is not None else self.advice_wait:
            entry, left = item
            for line in lines[:left]:
                found = advice.advice_after(line)
                if found or advice.ends_message(line):
                    entry.advice = found
                    left = 0
                    break
                left -= 1
            item[1] = left
        self.advice_wait = [i for i in self.advice_wait if i[1] > 0]

    def _fill_after(self, lines: list[str]) -> None:
        """Give waiting evidence its after-context from the lines that follow (a new block's first lines)."""
        for ev in self.awaiting:
            ev.after.extend(clip(a, EVIDENCE_CHARS) for a in lines[: CONTEXT - len(ev.after)])
        self.awaiting = [ev for ev in self.awaiting if len(ev.after) < CONTEXT]

    def _unexplained(self, line_no: int, text: str, fp: str, end: int, start: int) -> None:
        frame, self.explained_frame = self.explained_frame, None
        if frame is not None and line_no - frame <= FRAME_REACH and EXCEPTION_LINE.match(text):
            self.explained_exception = line_no
            return  # the exception line of a traceback whose frame a cause explains: that cause explains it
        header = "Traceback (most recent call last)" in text
        if header and line_no - self.explained_exception <= CHAIN_GAP and self._chained(start):
            # chained to an exception a cause explains: the chain is that error, and a later exception line
            # speaks for itself (a header cut off from its exception line says nothing more)
            return
        if self.open_tracebacks and not header:
            # the exception line that ends a traceback says what its header only announces: one entry, not two
            for ln, f in self.open_tracebacks:
                if line_no - ln <= TRACEBACK_REACH and f in self.unexplained:
                    self.unexplained[f].count -= 1
                    if self.unexplained[f].count <= 0:
                        del self.unexplained[f]
            self.open_tracebacks = []
        entry = self.unexplained.get(fp)
        if entry is not None:
            entry.count += 1
        elif len(self.unexplained) < MAX_UNEXPLAINED:
            entry = self.unexplained[fp] = Unexplained(self.path, line_no, clip(text, EVIDENCE_CHARS), 1, fp,
                                                       message_id=advice.message_id(text))
            self._find_advice(entry, line_no, text, end)
        elif not self.unexplained_full:
            self.unexplained_full = True
            self.warn(f"{self.path}:{line_no}: over {MAX_UNEXPLAINED} distinct error lines no cause explains; "
                      "the later ones are not listed")
        if header:
            # only headers still within reach of a later finding are kept: bounded, whatever the log
            self.open_tracebacks = [(ln, f) for ln, f in self.open_tracebacks if line_no - ln <= TRACEBACK_REACH]
            self.open_tracebacks.append((line_no, fp))


# ---------------------------------------------------------------------------------------------------------


def merge(packs: PackSet, results: list[SourceResult], warn: Warn | None = None) -> ScanResult:
    """Combine per-source results in input order and decide findings, root causes and status."""
    results = sorted(results, key=lambda r: r.index)
    detection = Detection()
    hits: dict[str, CauseHits] = {}
    unexplained: dict[str, Unexplained] = {}
    warnings: list[str] = []
    metrics: list[Metric] = []
    facts: list[Fact] = []
    left_out = 0
    for r in results:
        metrics.extend(r.metrics)
        facts.extend(r.facts)
        _merge_detection(detection, r.detection)
        for cid, h in r.hits.items():
            total = hits.get(cid)
            if total is None:
                hits[cid] = CauseHits(h.count, list(h.evidence), h.first)
            else:
                total.count += h.count
                total.evidence.extend(h.evidence[: MAX_EVIDENCE - len(total.evidence)])
        for fp, u in r.unexplained.items():
            if fp in unexplained:
                unexplained[fp].count += u.count
            elif len(unexplained) < MAX_UNEXPLAINED:
                unexplained[fp] = Unexplained(u.path, u.line, u.text, u.count, u.fingerprint, u.advice, u.message_id)
            else:
                left_out += 1
        warnings.extend(r.warnings)
    if left_out:
        note = (f"over {MAX_UNEXPLAINED} distinct error lines no cause explains across the inputs; "
                f"{left_out} more are not listed")
        warnings.append(note)
        if warn is not None:
            warn(note)
    logs = [r for r in results if r.info.kind == "log" and r.info.lines]
    gated: list[Evidence] = []
    findings = _findings(packs, hits, detection, _last_line(logs[-1]) if logs else None, bool(unexplained), facts,
                         gated)
    _unexplained_gated(packs, gated, findings, unexplained)
    run = RunInfo(
        tool=_tool(detection, findings), tool_version=detection.version, phase=detection.phase, part=detection.part,
        inputs=[r.info for r in results],
    )
    ordered_unexplained = sorted(unexplained.values(), key=lambda u: (_source_order(results, u.path), u.line))
    _known_causes(packs, ordered_unexplained)
    run.status = _status(findings, ordered_unexplained, detection)
    return ScanResult(run=run, findings=findings, unexplained=ordered_unexplained, warnings=warnings,
                      metrics=metrics, facts=facts)


KNOWN_SHOWN = 3  # known causes named beside an unexplained line of their message


def _known_causes(packs: PackSet, unexplained: list[Unexplained]) -> None:
    """Beside an unexplained line of a tool message that known causes have examples of, their ids: the
    message is known, its wording here is not (another release, a longer variant)."""
    if not any(u.message_id for u in unexplained):
        return
    index = packs.by_message
    for u in unexplained:
        if u.message_id:
            u.known = [c.id for c in index.get(u.message_id.split()[-1], [])[:KNOWN_SHOWN]]


def _tool(detection: Detection, findings: list[Finding]) -> str:
    """The detected tool; failing that, the tool of the findings (an excerpt often lacks the banner)."""
    if detection.tool != "unknown":
        return detection.tool
    counts: dict[str, int] = {}
    for f in findings:
        if f.tool not in ("any", "hls"):
            counts[f.tool] = counts.get(f.tool, 0) + 1
    return max(sorted(counts.items()), key=lambda kv: kv[1])[0] if counts else "unknown"


def _source_order(results: list[SourceResult], path: str) -> int:
    for r in results:
        if r.info.path == path:
            return r.index
    return len(results)


def _merge_detection(total: Detection, part: Detection) -> None:
    if total.banner_tool is None:
        total.banner_tool = part.banner_tool
    for tool, n in part.tools.items():
        total.tools[tool] = total.tools.get(tool, 0) + n
    for tool, version in part.versions.items():
        total.versions.setdefault(tool, version)
    total.part = total.part or part.part
    if part.phase:
        total.phase = part.phase
        total.last_done_phase = part.last_done_phase
        total.ended = part.ended
    elif part.ended:  # an exit marker without a phase of its own
        total.ended = True
    total.phases_done |= part.phases_done
    total.phases_seen |= part.phases_seen
    total.hosted = total.hosted or part.hosted


def _last_line(r: SourceResult) -> Evidence:
    """Where a log stops: its last non-blank line, with the lines before it."""
    tail = r.tail
    end = len(tail)
    while end > 1 and not tail[end - 1].strip():
        end -= 1
    line = r.info.lines - (len(tail) - end)
    text = tail[end - 1] if end else ""
    return Evidence(r.info.path, max(1, line), clip(text, EVIDENCE_CHARS),
                    before=[clip(t, EVIDENCE_CHARS) for t in tail[:max(0, end - 1)]])


def _cpu_cost(call, text: str, **kwargs) -> float:  # type: ignore[no-untyped-def]
    """The CPU seconds one regex call on `text` costs this thread (a call past its time bound costs up to it)."""
    started = thread_time()
    try:
        call(text, **kwargs)
    except TimeoutError:
        pass
    return thread_time() - started


def _unexplained_gated(packs: PackSet, gated: list[Evidence], findings: list[Finding],
                       unexplained: dict[str, Unexplained]) -> None:
    """An error line whose only matching cause does not apply to this run (a phase it did not go through, a
    version the cause is not about) is explained by nothing: it is listed as unexplained, not lost. (A cause
    kept to other tools is not: its line is usually another tool's benign chatter, such as TensorFlow's.)
    A line a found cause also matched is explained, though past that finding's MAX_EVIDENCE kept lines."""
    if not gated:
        return
    found = [g for f in findings for g in (f, *f.explained)]
    covered = {(e.path, e.line) for g in found for e in g.evidence}
    signatures = [sig for g in found if g.id in packs.causes for sig in packs.causes[g.id].signatures]
    for ev in gated:
        if (ev.path, ev.line) in covered or len(unexplained) >= MAX_UNEXPLAINED:
            continue
        if any(_matches(sig, ev.text) for sig in signatures):
            continue
        try:
            error_like = ERROR_LINE.search(ev.text, timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            error_like = True
        if not error_like:
            continue
        fp = fingerprint(ev.text)
        if fp in unexplained:
            continue
        covered.add((ev.path, ev.line))
        unexplained[fp] = Unexplained(ev.path, ev.line, ev.text, 1, fp, None, advice.message_id(ev.text))


def _matches(sig: Signature, text: str) -> bool:
    try:
        return sig.match(text) is not None
    except TimeoutError:
        return False


def _findings(packs: PackSet, hits: dict[str, CauseHits], detection: Detection,
              log_end: Evidence | None, unexplained: bool, facts: list[Fact],
              gated: list[Evidence] | None = None) -> list[Finding]:
    """The run's findings, root causes first. `gated` receives the evidence of causes that matched but do not
    apply to this run (its version or phases rule them out)."""
    found: dict[str, Finding] = {}
    first: dict[str, tuple[int, int]] = {}
    configured = _misconfigurations(packs, facts)
    gated = [] if gated is None else gated
    for cid, h in hits.items():
        cause = packs.causes[cid]
        if not cause.applies_to(detection.versions.get(cause.tool)):
            gated.extend(h.evidence)
            continue
        found[cid] = _finding(cause, h, {}, configured.get(cid))
        first[cid] = h.first
    for cid, (misconfig_hits, values, message) in configured.items():
        if cid not in found:  # a misconfiguration is a finding of its own, even before a compile fails
            found[cid] = _finding(packs.causes[cid], misconfig_hits, values, (misconfig_hits, values, message))
            first[cid] = misconfig_hits.first
    # the run's tool as reported, judged without the findings that are themselves gated on it
    tool = _tool(detection, [f for cid, f in found.items() if not packs.causes[cid].when.get("tools")])
    for cid in [c for c in found if not _when_holds(packs.causes[c], found, detection, tool)]:
        if not _phases_seen(packs.causes[cid], detection):
            gated.extend(found[cid].evidence)
        del found[cid]
    _absence(packs, found, first, detection, log_end, unexplained)
    # Root cause first: a finding explained by another found one is listed under it.
    roots: dict[str, str] = {}
    for cid in sorted(found, key=lambda c: first[c]):
        for explainer in packs.explainers_of(cid):
            if explainer in found and _link(roots, cid, explainer):
                break
    _same_line_roots(packs, found, first, roots)
    _generic_roots(packs, found, first, roots)
    for cid in roots:
        found[_top(roots, cid)].explained.append(found[cid])
    top = [f for cid, f in found.items() if cid not in roots]
    for f in top:
        f.explained.sort(key=lambda e: first[e.id])
    top.sort(key=lambda f: (SEVERITY_RANK[f.severity], first[f.id]))
    return top


def _same_line_roots(packs: PackSet, found: dict[str, Finding], first: dict[str, tuple[int, int]],
                     roots: dict[str, str]) -> None:
    """A broad cause (a family such as "out of memory", a catch-all wrapper) matched on lines that a specific
    cause explains too gives way to it: dropped when the specific finding covers every line it has, otherwise
    listed under it."""
    specific_lines: dict[tuple[str, int], list[str]] = {}
    for cid in sorted(found, key=lambda c: first[c]):
        if not packs.causes[cid].broad:
            for ev in found[cid].evidence:
                specific_lines.setdefault((ev.path, ev.line), []).append(cid)
    for cid, f in list(found.items()):
        if cid in roots or not packs.causes[cid].broad or not f.evidence:
            continue
        # Whatever its severity, a specific cause that calls the line harmless, or only a warning, knows better -
        # unless the line carries several tool messages (pasted together) and the specific cause is about another.
        rank = SEVERITY_RANK[f.severity]
        owners = [next((o for o in specific_lines.get((ev.path, ev.line), [])
                        if SEVERITY_RANK[found[o].severity] <= rank or advice.message_count(ev.text) < 2), None)
                  for ev in f.evidence]
        if all(owners) and f.count == len(f.evidence) and cid not in roots.values():
            del found[cid]
            continue
        for owner in owners:
            if owner is not None and _link(roots, cid, owner):
                break


GENERIC_REACH = 200  # lines above a generic wrapper in which the error it reports is looked for


def _generic_roots(packs: PackSet, found: dict[str, Finding], first: dict[str, tuple[int, int]],
                   roots: dict[str, str]) -> None:
    """A generic wrapper ("the link step failed", "ninja: build stopped") says which step failed, not why; the
    why is the specific error found just above it in the same input, so the wrapper is listed under that one
    (the nearest within GENERIC_REACH lines). A wrapper with no such error stays a finding of its own."""
    errors = sorted((first[c], c) for c, f in found.items()
                    if f.severity == "error" and not packs.causes[c].generic)
    for cid in sorted(found, key=lambda c: first[c]):
        if cid in roots or not packs.causes[cid].generic:
            continue
        source, line = first[cid]
        above = [c for (s, ln), c in errors if s == source and line - GENERIC_REACH <= ln <= line]
        for root in reversed(above):
            if _link(roots, cid, root):
                break


def _top(roots: dict[str, str], cid: str) -> str:
    """The top-most root above a finding (`roots` has no cycles: `_link` keeps it so)."""
    while cid in roots:
        cid = roots[cid]
    return cid


def _link(roots: dict[str, str], child: str, root: str) -> bool:
    """List `child` under `root` unless that would close a loop: causes may explain each other in a ring (A
    explains B, B explains C, C explains A), and the same-line rule adds links the packs never declared."""
    if child in roots or _top(roots, root) == child:
        return False
    roots[child] = root
    return True


def _when_holds(cause: Cause, found: dict[str, Finding], detection: Detection, tool: str) -> bool:
    present = cause.when.get("present", [])
    absent = cause.when.get("absent", [])
    if not _phases_seen(cause, detection):
        return False
    tools = cause.when.get("tools")
    if tools and tool not in (*tools, "unknown"):  # a pasted line of no known tool may be any of them
        return False
    return all(p in found for p in present) and not any(a in found for a in absent)


def _phases_seen(cause: Cause, detection: Detection) -> bool:
    """The run went through a phase the cause is about (its `when.phases`)."""
    phases = cause.when.get("phases")
    return not phases or bool(detection.phases_seen & set(phases))


def _absence(packs: PackSet, found: dict[str, Finding], first: dict[str, tuple[int, int]], detection: Detection,
             log_end: Evidence | None, unexplained: bool) -> None:
    """A log that reached a phase but not its end, with nothing else to say why, is reported as such; its
    evidence is the line the log stops at."""
    cause = packs.causes.get("triage/log-incomplete")
    if cause is None or log_end is None or detection.phase not in ENDING_PHASES or detection.ended or unexplained:
        return
    if any(f.severity == "error" for f in found.values()):
        return
    values = {"phase": detection.phase, "tool": detection.tool}
    found[cause.id] = _finding(cause, CauseHits(count=1, evidence=[log_end]), values)
    first[cause.id] = (1 << 30, 0)




Configured = tuple[CauseHits, dict[str, str], str]


def _misconfigurations(packs: PackSet, facts: list[Fact]) -> dict[str, Configured]:
    """Known misconfigurations in the configs of the run, by cause id (only causes the packs know)."""
    out: dict[str, Configured] = {}
    for m in misconfigurations(facts):
        if m.cause_id not in packs.causes:
            continue
        hits, values, message = out.get(m.cause_id) or (CauseHits(first=(-1, m.facts[0].line if m.facts else 0)), {}, "")
        hits.count += 1
        hits.evidence.extend(evidence_of(m)[: MAX_EVIDENCE - len(hits.evidence)])
        values = {**{k: str(v) for k, v in m.captures.items()}, **values}
        message = f"{message}\n{m.message}".strip()
        out[m.cause_id] = (hits, values, message)
    return out


def _finding(cause: Cause, h: CauseHits, values: dict[str, str], configured: Configured | None = None) -> Finding:
    """A cause's text filled with what the run shows: captures, config facts and the user's own lines."""
    evidence = list(h.evidence)
    if configured is not None and configured[0] is not h:
        evidence = configured[0].evidence + evidence
        values = {**configured[1], **values}
    captured: dict[str, str] = {}
    for line in h.evidence:  # a name may be captured on a later line than the first (a message's own detail line)
        for name, value in line.captures.items():
            captured.setdefault(name, value)
    values = {**captured, **values}
    workaround = interpolate(cause.workaround, values)
    if configured is not None:
        workaround = f"In your files: {configured[2]}\n\n{workaround}"
    elif cause.needs:
        workaround = f"{workaround}\n\nTo pinpoint it, scan {cause.needs} together with the log."
    return Finding(
        id=cause.id, severity=cause.severity, title=interpolate(cause.title, values),
        cause=interpolate(cause.cause, values), workaround=workaround,
        references=list(cause.references), count=h.count, evidence=evidence, tool=cause.tool,
        versions=cause.versions, generic=cause.generic,
    )


def _status(findings: list[Finding], unexplained: list[Unexplained], detection: Detection) -> str:
    if any(f.severity == "error" for top in findings for f in [top, *top.explained]):
        return "failed"
    if detection.completed:
        return "passed"
    if unexplained:
        return "failed"
    return "unknown"


# ---------------------------------------------------------------------------------------------------------


_worker_matcher: Matcher | None = None  # one per pool process, handed over by `_start_worker`


def _start_worker(matcher: Matcher, parent: int) -> None:
    """The parent's matcher, compiled gate included: inherited as it is where processes fork, else
    unpickled from its compact form (a serialized hyperscan database, frozen regex passes)."""
    global _worker_matcher  # noqa: PLW0603 - per-process state of a pool worker
    _die_with_parent(parent)
    _worker_matcher = matcher


def _die_with_parent(parent: int) -> None:
    """A CI job that kills `triage` on a timeout must not leave its workers scanning: on Linux, ask the
    kernel to send them SIGTERM when the parent dies. Elsewhere they end when their task does."""
    if sys.platform != "linux":
        return
    import ctypes  # noqa: PLC0415

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _scan_in_worker(args: tuple[Source, int, Range | None]) -> SourceResult:
    source, index, part = args
    assert _worker_matcher is not None, "the pool is started with _start_worker"
    return _worker_matcher.scan_source(source, index, part=part, limit=None if part else source.size)


def scan_sources(packs: PackSet, sources: list[Source], *, warn: Warn | None = None,
                 on_finding: OnFinding | None = None, raw_sink: RawSink | None = None,
                 jobs: int = 1, gate: str | None = None, matcher: Matcher | None = None) -> ScanResult:
    """Scan the sources as one run. `jobs > 1` scans files — and ranges of one large file — in a process
    pool; the result is the same as the serial scan's."""
    if on_finding is None and raw_sink is None and runs_in_parallel(sources, jobs):
        tasks = []
        for i, s in enumerate(sources):
            parts: list[Range | None] = list(plan_ranges(s.path, jobs, s.size)) \
                if s.kind == "log" and plain_file(s) and not is_notebook(s.path) else []
            if len(parts) < 2:
                parts = [None]  # read whole, exactly as the serial scan does
            tasks.extend((s, i, part) for part in parts)
        if len(tasks) > 1:
            from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415 - only a parallel scan needs it

            # the matcher travels once per process, not once per task, and no process compiles a gate
            matcher = matcher or Matcher(packs, gate)
            compile_all(packs)  # nor the regexes: a forked worker inherits them
            with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker,
                                     initargs=(matcher, os.getpid())) as pool:
                pieces = list(pool.map(_scan_in_worker, tasks))
            results = _join_ranges(pieces)
            for r in results:
                for w in r.warnings:
                    if warn:
                        warn(w)
            return merge(packs, results, warn)
    matcher = matcher or Matcher(packs, gate)
    results = [matcher.scan_source(s, i, warn=warn, on_finding=on_finding, raw_sink=raw_sink)
               for i, s in enumerate(sources)]
    return merge(packs, results, warn)


def runs_in_parallel(sources: list[Source], jobs: int) -> bool:
    """Whether `scan_sources` would use the process pool for these sources (no byte sinks allowed then)."""
    files = [s for s in sources if s.path != "-"]
    if jobs < 2 or not files or len(files) != len(sources):
        return False
    return len(files) > 1 or any(s.kind == "log" and s.size >= SPLIT_MIN_BYTES and plain_file(s) for s in files)


def _join_ranges(pieces: list[SourceResult]) -> list[SourceResult]:
    """Put the ranges of each source back together, in order, as if it had been read in one piece."""
    joined: list[SourceResult] = []
    for piece in pieces:
        if not joined or joined[-1].index != piece.index:
            joined.append(piece)
            continue
        whole = joined[-1]
        whole.info.lines += piece.info.lines
        whole.info.bytes += piece.info.bytes
        whole.info.blank = whole.info.blank and piece.info.blank
        whole.info.unread = whole.info.unread or piece.info.unread
        for cid, h in piece.hits.items():
            total = whole.hits.get(cid)
            if total is None:
                whole.hits[cid] = h
            else:
                total.count += h.count
                total.evidence.extend(h.evidence[: MAX_EVIDENCE - len(total.evidence)])
        for fp, u in piece.unexplained.items():
            if fp in whole.unexplained:
                whole.unexplained[fp].count += u.count
            elif len(whole.unexplained) < MAX_UNEXPLAINED:
                whole.unexplained[fp] = u
        _merge_detection(whole.detection, piece.detection)
        whole.warnings.extend(piece.warnings)
        whole.timeouts.extend(t for t in piece.timeouts if t not in whole.timeouts)
        latest = {(m.kind, m.scope, m.resource): m for m in whole.metrics + piece.metrics}
        whole.metrics = list(latest.values())[:MAX_LOG_METRICS]
        whole.facts.extend(piece.facts)
        whole.tail = piece.tail
    return joined


class WarningLog:
    """Collects a run's warnings (they go into the result) and passes each on as it happens."""

    def __init__(self, echo: Warn | None = None) -> None:
        self.messages: list[str] = []
        self.echo = echo

    def __call__(self, message: str) -> None:
        self.messages.append(message)
        if self.echo is not None:
            self.echo(message)


def scan_paths(paths: Iterable[str], packs: PackSet, *, warn: Warn | None = None, **kwargs: Any) -> ScanResult:
    """Library entry point: discover the inputs behind `paths` ('-' for stdin) and scan them as one run."""
    warnings = WarningLog(warn)
    sources = discover(list(paths), warnings)
    result = scan_sources(packs, sources, warn=warnings, **kwargs)
    result.warnings = warnings.messages
    return result


def scan_text(text: str, packs: PackSet, matcher: Matcher | None = None) -> ScanResult:
    """Scan a string (a pasted line, an example): the same pipeline without files."""
    import io

    matcher = matcher or Matcher(packs)
    scan = _SourceScan(matcher, Source("<text>", "log"), 0, None, None, None)
    stats = ReadStats()
    for block in read_blocks(io.BytesIO(text.encode("utf-8")), stats, scan.warn, "<text>"):  # type: ignore[arg-type]
        scan._scan_block(block)
    return merge(packs, [scan.result(stats)])

