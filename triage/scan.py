"""The pipeline: sources -> blocks -> literal gate -> regexes on candidate lines -> findings.

Each source is scanned on its own into a `SourceResult` (so several inputs can run in a process pool),
then the results are merged in input order into one `ScanResult` — identical whether serial or parallel.
"""

from __future__ import annotations

import ctypes
import io
import os
import signal
import sys
from time import perf_counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import regex

from .configs import ConfigRefused, Fact, evidence_of, misconfigurations, read_config
from .detect import CompiledRule, Detection, compile_rules
from .display import EVIDENCE_CHARS, clip
from .metrics import METRIC_LITERALS, Metric, MetricStream, parse_metrics
from .fingerprint import fingerprint
from .gate import Gate, make_gate
from .model import SEVERITY_RANK, Evidence, Finding, InputInfo, RunInfo, ScanResult, Unexplained
from .packs import REGEX_TIMEOUT_S, Cause, PackSet, Signature
from .sources import LINE_CAP, Block, ReadStats, Source, discover, open_binary, read_blocks
from .split import SPLIT_MIN_BYTES, Range, RangeReader, lines_after, lines_before, plain_file, plan_ranges

CONTEXT = 3
MAX_EVIDENCE = 5
MAX_UNEXPLAINED = 500
TRACEBACK_REACH = 300  # a traceback header is explained by a finding this many lines below it
WHOLE_TEXT_CAP = 8 << 20  # reports and configs are read whole (they are small) up to this size
MAX_LOG_METRICS = 1000
SLOW_CALL_S = 0.005  # a regex call slower than this is charged to its rule's budget (a sound one takes µs)
RULE_BUDGET_S = 1.0  # per rule and input: charged past this, the rule is dropped for the rest of the input

# Lines that look like errors: kept as "unexplained" when no signature explains them.
ERROR_LITERALS = ("ERROR", "[error]", "Traceback (most recent call last)", "Exception:", "Error:",
                  "CRITICAL WARNING", "Killed", "Segmentation fault", "FATAL")
ERROR_LINE = regex.compile(
    r"ERROR|\[error\]|Traceback \(most recent call last\)|\w(?:Exception|Error):|CRITICAL WARNING"
    r"|(?<![\w-])Killed\b|Segmentation fault|\bFATAL\b"
)

Warn = Callable[[str], None]
RawSink = Callable[[Source, bytes], None]  # receives every byte read, unchanged (tee, kept logs)
OnFinding = Callable[[Cause, Evidence], None]


@dataclass
class _Target:
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
        for rule in compile_rules():
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
        # literal ids by what they feed, so a scan can stop looking at lines only a spent target wants
        self.ids_of: dict[int, frozenset[int]] = {}
        for i, t in enumerate(self.targets):
            key = id(t.signature if t.signature is not None else t.rule)
            if t.signature is not None or t.rule is not None:
                self.ids_of[key] = self.ids_of.get(key, frozenset()) | {i}

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
        self.metrics: list[Metric] = []
        self.metric_index: dict[tuple[str, str, str], int] = {}
        self.metric_stream = MetricStream(self.path)
        self.whole: list[str] | None = [] if source.kind in ("report", "config") else None
        self.whole_size = 0

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
        try:
            for block in read_blocks(stream, stats, self.warn, self.path, raw_sink=self.raw_sink,
                                     first_line=part.first_line if part else 1):
                self._scan_block(block)
        finally:
            if self.source.path != "-":
                stream.close()
        if part is not None and self.awaiting:
            self._fill_after(lines_after(self.source.path, part.end, CONTEXT) + [""], 0)
        return self.result(stats)

    def result(self, stats: ReadStats) -> SourceResult:
        info = InputInfo(self.path, self.source.kind, stats.lines, stats.bytes, blank=stats.blank,
                         unread=stats.truncated)
        result = SourceResult(self.index, info, self.hits, self.unexplained, self.detection, self.warnings,
                              self.timeouts, self.metrics, tail=list(self.tail))
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
        if self.whole is not None and self.whole_size < WHOLE_TEXT_CAP:
            self.whole.append(block.text)
            self.whole_size += len(block.text)
        candidates = self.m.gate.candidates(block.text)
        lines: list[str] | None = None
        if self.awaiting:
            lines = block.text.split("\n")
            self._fill_after(lines, 0)
        spent = self.spent
        for idx in sorted(candidates):
            literal_ids = candidates[idx]
            if literal_ids <= spent:
                continue
            if lines is None:
                lines = block.text.split("\n")
            self._scan_line(lines, idx, block.first_line + idx, literal_ids)
            spent = self.spent
        if lines is None and block.n_lines:
            # only the tail is needed for the next block's before-context
            start = max(0, len(block.text) - 1)
            for _ in range(CONTEXT):
                start = block.text.rfind("\n", 0, start)
                if start < 0:
                    break
            lines = block.text[start + 1:].split("\n")
        if lines is not None:
            self.tail = (self.tail + lines[:-1])[-CONTEXT:]

    def _scan_line(self, lines: list[str], idx: int, line_no: int, literal_ids: set[int]) -> None:
        text = lines[idx]
        if len(text) > LINE_CAP:
            text = text[:LINE_CAP]
        matched = False
        error_like = False
        metric_done = False
        seen_causes: set[str] = set()
        for lit_id in sorted(literal_ids):
            target = self.m.targets[lit_id]
            if target.signature is not None:
                sig = target.signature
                if sig.cause_id in seen_causes or id(sig) in self.disabled:
                    continue
                started = perf_counter()
                try:
                    caps = sig.match(text)
                except TimeoutError:
                    caps = None
                    self._timed_out(sig, line_no)
                self._charge(sig, perf_counter() - started, line_no)
                if caps is not None:
                    seen_causes.add(sig.cause_id)
                    matched = True
                    self._record(sig, lines, idx, line_no, text, caps)
            elif target.metric:
                if self.whole is None and not metric_done:
                    for metric in self.metric_stream.feed(text, line_no):
                        self._metric(metric)
                metric_done = True
            elif target.rule is not None:
                if target.rule.passive and self.detection.saturated(target.rule):
                    if lit_id not in self.spent:  # later lines with only its literals are skipped
                        self.spent |= self.m.ids_of[id(target.rule)]
                    continue
                if id(target.rule) in self.disabled:
                    continue
                started = perf_counter()
                try:
                    m = target.rule.compiled.search(text, timeout=REGEX_TIMEOUT_S)
                except TimeoutError:
                    m = None
                self._charge(target.rule, perf_counter() - started, line_no)
                if m:
                    self.detection.feed(target.rule.rule, {k: v for k, v in m.groupdict().items() if v})
            else:
                error_like = True
        if matched:
            self.open_tracebacks = []  # those in reach were counted as explained by _record; the rest are stale
        elif error_like and self.source.kind != "config":
            if self._error_line(text, line_no):
                self._unexplained(line_no, text)

    def _error_line(self, text: str, line_no: int) -> bool:
        """ERROR_LINE on a line the gate found an error word in. Past its time, or its budget, the word alone
        decides (fail closed: a line that might be an error is kept as one)."""
        if id(ERROR_LINE) in self.disabled:
            return True
        started = perf_counter()
        try:
            found = ERROR_LINE.search(text, timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            found = True
        self._charge(ERROR_LINE, perf_counter() - started, line_no)
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

    def _record(self, sig: Signature, lines: list[str], idx: int, line_no: int, text: str, caps: dict[str, str]) -> None:
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
        before = (self.tail + lines[:idx])[-CONTEXT:] if idx < CONTEXT else lines[idx - CONTEXT:idx]
        ev = Evidence(self.path, line_no, clip(text, EVIDENCE_CHARS), before=[clip(b, EVIDENCE_CHARS) for b in before],
                      captures=caps)
        hits.evidence.append(ev)
        self.awaiting.append(ev)
        self._fill_after(lines, idx + 1, only=ev)
        if self.on_finding is not None and hits.count == 1:
            cause = self.m.packs.causes[sig.cause_id]
            # a version read earlier in this log already rules the cause out: do not stream it (when the
            # version comes later, the final summary is what drops it)
            if cause.applies_to(self.detection.versions.get(cause.tool)):
                self.on_finding(cause, ev)

    def _fill_after(self, lines: list[str], start: int, only: Evidence | None = None) -> None:
        """Give waiting evidence its after-context from `lines[start:]` (a block's split ends with '')."""
        available = lines[start:-1] if lines and lines[-1] == "" else lines[start:]
        waiting = [only] if only is not None else self.awaiting
        for ev in waiting:
            ev.after.extend(clip(a, EVIDENCE_CHARS) for a in available[: CONTEXT - len(ev.after)])
        self.awaiting = [ev for ev in self.awaiting if len(ev.after) < CONTEXT]

    def _unexplained(self, line_no: int, text: str) -> None:
        fp = fingerprint(text)
        entry = self.unexplained.get(fp)
        if entry is not None:
            entry.count += 1
        elif len(self.unexplained) < MAX_UNEXPLAINED:
            self.unexplained[fp] = Unexplained(self.path, line_no, clip(text, EVIDENCE_CHARS), 1, fp)
        elif not self.unexplained_full:
            self.unexplained_full = True
            self.warn(f"{self.path}:{line_no}: over {MAX_UNEXPLAINED} distinct error lines no cause explains; "
                      "the later ones are not listed")
        if "Traceback (most recent call last)" in text:
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
                unexplained[fp] = Unexplained(u.path, u.line, u.text, u.count, u.fingerprint)
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
    findings = _findings(packs, hits, detection, _last_line(logs[-1]) if logs else None, bool(unexplained), facts)
    run = RunInfo(
        tool=_tool(detection, findings), tool_version=detection.version, phase=detection.phase, part=detection.part,
        inputs=[r.info for r in results],
    )
    ordered_unexplained = sorted(unexplained.values(), key=lambda u: (_source_order(results, u.path), u.line))
    run.status = _status(findings, ordered_unexplained, detection)
    return ScanResult(run=run, findings=findings, unexplained=ordered_unexplained, warnings=warnings,
                      metrics=metrics, facts=facts)


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


def _findings(packs: PackSet, hits: dict[str, CauseHits], detection: Detection,
              log_end: Evidence | None, unexplained: bool, facts: list[Fact]) -> list[Finding]:
    found: dict[str, Finding] = {}
    first: dict[str, tuple[int, int]] = {}
    configured = _misconfigurations(packs, facts)
    for cid, h in hits.items():
        cause = packs.causes[cid]
        if not cause.applies_to(detection.versions.get(cause.tool)):
            continue
        found[cid] = _finding(cause, h, {}, configured.get(cid))
        first[cid] = h.first
    for cid, (misconfig_hits, values, message) in configured.items():
        if cid not in found:  # a misconfiguration is a finding of its own, even before a compile fails
            found[cid] = _finding(packs.causes[cid], misconfig_hits, values, (misconfig_hits, values, message))
            first[cid] = misconfig_hits.first
    for cid in [c for c in found if not _when_holds(packs.causes[c], found)]:
        del found[cid]
    _absence(packs, found, first, detection, log_end, unexplained)
    # Root cause first: a finding explained by another found one is listed under it.
    roots: dict[str, str] = {}
    for cid in sorted(found, key=lambda c: first[c]):
        for explainer in packs.explainers_of(cid):
            if explainer in found and explainer != cid and roots.get(explainer) != cid:
                roots[cid] = explainer
                break
    for cid, root in roots.items():
        while root in roots:  # follow chains to the top-most root
            root = roots[root]
        found[root].explained.append(found[cid])
    top = [f for cid, f in found.items() if cid not in roots]
    for f in top:
        f.explained.sort(key=lambda e: first[e.id])
    top.sort(key=lambda f: (SEVERITY_RANK[f.severity], first[f.id]))
    return top


def _when_holds(cause: Cause, found: dict[str, Finding]) -> bool:
    present = cause.when.get("present", [])
    absent = cause.when.get("absent", [])
    return all(p in found for p in present) and not any(a in found for a in absent)


def _absence(packs: PackSet, found: dict[str, Finding], first: dict[str, tuple[int, int]], detection: Detection,
             log_end: Evidence | None, unexplained: bool) -> None:
    """A log that reached a phase but not its end, with nothing else to say why, is reported as such; its
    evidence is the line the log stops at."""
    cause = packs.causes.get("triage/log-incomplete")
    if cause is None or log_end is None or detection.phase is None or detection.ended or unexplained:
        return
    if any(f.severity == "error" for f in found.values()):
        return
    values = {"phase": detection.phase, "tool": detection.tool}
    found[cause.id] = _finding(cause, CauseHits(count=1, evidence=[log_end]), values)
    first[cause.id] = (1 << 30, 0)


PLACEHOLDER = regex.compile(r"\{\{\s*(?P<name>\w+)\s*\}\}")


def interpolate(text: str, values: dict[str, str]) -> str:
    """Fill `{{name}}` from captures and facts; an unknown name reads as `<name>`."""
    return PLACEHOLDER.sub(lambda m: str(values.get(m.group("name"), f"<{m.group('name')}>")), text)


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
    if h.evidence:
        values = {**h.evidence[0].captures, **values}
    workaround = interpolate(cause.workaround, values)
    if configured is not None:
        workaround = f"In your files: {configured[2]}\n\n{workaround}"
    elif cause.needs:
        workaround = f"{workaround}\n\nTo pinpoint it, scan {cause.needs} together with the log."
    return Finding(
        id=cause.id, severity=cause.severity, title=interpolate(cause.title, values),
        cause=interpolate(cause.cause, values), workaround=workaround,
        references=list(cause.references), count=h.count, evidence=evidence, tool=cause.tool,
        versions=cause.versions,
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


_worker_matcher: Matcher | None = None  # one per pool process, built once by `_start_worker`


def _start_worker(packs: PackSet, gate: str | None, parent: int) -> None:
    global _worker_matcher  # noqa: PLW0603 - per-process state of a pool worker
    _die_with_parent(parent)
    _worker_matcher = Matcher(packs, gate)


def _die_with_parent(parent: int) -> None:
    """A CI job that kills `triage` on a timeout must not leave its workers scanning: on Linux, ask the
    kernel to send them SIGTERM when the parent dies. Elsewhere they end when their task does."""
    if sys.platform != "linux":
        return
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
                if s.kind == "log" and plain_file(s) else []
            if len(parts) < 2:
                parts = [None]  # read whole, exactly as the serial scan does
            tasks.extend((s, i, part) for part in parts)
        if len(tasks) > 1:
            # the packs travel once per process, not once per task, and each process compiles its gate once
            with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker,
                                     initargs=(packs, gate, os.getpid())) as pool:
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

