"""Terminal rendering with Rich, for a terminal of any width and for a CI log read at 80 columns.

The layout follows rustc's and ruff's diagnostics: a header `severity[id]: title`, the evidence as
`--> path:line` on a line of its own, the evidence lines, then cause and workaround wrapped to a readable
width, references one per line. Nothing a reader copies (ids, `path:line`, URLs) is ever wrapped or cut:
when one does not fit with its indent, it gets a line of its own and may run past the width. Prose wraps;
log text is cut with `…`. Info and harmless findings, and those a root cause explains, take one line each
unless `verbose`. Log text is untrusted: it always goes in as `Text`, never as markup, and every entry point
first makes its data `for_terminal` (controls and bidi overrides shown as escapes, never acted on).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.text import Text

from .display import clip, for_terminal
from .display import one_line as safe_line
from .display import terminal_safe
from .model import Finding, ScanResult, Unexplained
from .packs import Cause, interpolate
from .tables import Column, print_table

STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}
STATUS_STYLE = {"failed": "bold red", "passed": "green"}
PROSE_WIDTH = 100  # cause and workaround never run wider than this, however wide the screen
EVIDENCE_ROWS = 3  # rows of one evidence line before it is cut (more with verbose)
EVIDENCE_SHOWN = 2
REFERENCES_SHOWN = 3
UNEXPLAINED_SHOWN = 30
TITLE_MIN = 40  # a title column in a pipe: the row runs past the width rather than cut the title shorter
METRICS_SHOWN = 8  # the ones over their limit first
METRICS_VERBOSE = 24
SHORT_TEXT = 160  # an unexplained line's text in `--format short`
MIN_LOG_TEXT = 30  # an unexplained line's text gets a line of its own when its location leaves less

def clean(text: str) -> str:
    """Text for one terminal line: tabs become spaces, other controls, line ends and bidi overrides escapes."""
    return safe_line(text.replace("\t", "    "))


def _plain(text: str, style: str = "") -> Text:
    return Text(clean(text), style=style)


def _prose(text: str) -> Text:
    """A cause or workaround: controls escaped, but its paragraphs kept (a finding's workaround puts the
    user's own lines before the general advice, a blank line between)."""
    return Text(terminal_safe(text.replace("\t", "    ")))


def _cat(*parts: Text | str) -> Text:
    """Parts side by side, each keeping its own style (`a + b` would give all of it `a`'s style)."""
    out = Text()
    for part in parts:
        if isinstance(part, Text):
            out.append_text(part)
        else:
            out.append(part)
    return out


# ---------------------------------------------------------------------------------------------------------
# layout primitives: every function returns lines (`Text`), `_out` prints them unwrapped


def _out(console: Console, lines: Iterable[Text]) -> None:
    for line in lines:
        console.print(line, soft_wrap=True)  # our lines are laid out already: no wrapping, no cropping


def wrap(console: Console, text: Text, width: int, indent: int = 0, first: Text | str = "") -> list[Text]:
    """`first` + `text` wrapped at `width` cells; the lines after the first indented by `indent` spaces.

    Words longer than a line are folded; newlines in `text` start new (indented) lines.
    """
    width = max(width, indent + 10)
    out: list[Text] = []
    for n, paragraph in enumerate(text.split("\n", allow_blank=True)):
        out.extend(_hang(console, _cat(first if n == 0 else " " * indent, paragraph), width, indent))
    return out


def _hang(console: Console, text: Text, width: int, indent: int) -> list[Text]:
    lines = [line.copy() for line in text.wrap(console, width, overflow="fold")]
    if len(lines) > 1:
        rest = text[len(lines[0].plain):]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")):]
        pad = Text(" " * indent)
        lines[1:] = [pad + line for line in rest.wrap(console, width - indent, overflow="fold")]
    for line in lines:
        line.rstrip()
    return lines or [Text()]


def flow(parts: list[Text | tuple[str, Text]], width: int, sep: str = " · ", indent: int = 2) -> list[Text]:
    """`parts` joined by `sep` (or by a part's own separator, given as `(sep, part)`), a new indented line
    wherever the next part would not fit. A part is never broken: a path wider than the screen stands alone."""
    lines = [Text()]
    for item in parts:
        glue, part = item if isinstance(item, tuple) else (sep, item)
        line = lines[-1]
        if not line.plain:
            line.append_text(part)
        elif line.cell_len + len(glue) + part.cell_len <= width:
            line.append(glue)
            line.append_text(part)
        else:
            lines.append(Text(" " * indent) + part if indent + part.cell_len <= width else part.copy())
    return lines


def cut(text: Text, width: int) -> Text:
    """`text` cut to `width` cells, ending with `…` when something was cut."""
    out = text.copy()
    out.truncate(max(width, 1), overflow="ellipsis")
    return out


def token_line(prefix: str, token: Text, width: int, suffix: Text | str = "") -> Text:
    """`prefix` + `token` + `suffix` when it fits; else without the suffix; else the token alone (an id,
    a `path:line` or a URL is never broken, even when it is wider than the screen)."""
    for line in (Text(prefix) + token + suffix, Text(prefix) + token):
        if line.cell_len <= width:
            return line
    return token.copy()


def _where(path: str, line: int) -> Text:
    return _plain(f"{path}:{line}" if line else path, "bold")


def _label(f: Finding) -> Text:
    """`error[dfc/x]` in the severity's colour."""
    return Text(f"{f.severity}[{f.id}]", STYLE[f.severity])


def _title(f: Finding, style: str = "") -> Text:
    """The title; a catch-all cause says it is one (it names the step that failed, not why)."""
    title = _plain(f.title, style)
    if f.generic and "generic" not in f.title.lower():
        title.append(" (generic)", "dim")
    return title


def is_minor(f: Finding) -> bool:
    """Findings that do not explain a failure: information, and tool noise titled as harmless."""
    return f.severity == "info" or "harmless" in f.title.lower()


# ---------------------------------------------------------------------------------------------------------
# one finding


def finding_lines(console: Console, f: Finding, *, verbose: bool = False, explained_by: str | None = None) -> list[Text]:
    """A finding in full: header, evidence, cause, workaround, versions, what it explains, references."""
    width = console.width
    prose = min(width, PROSE_WIDTH)
    out = wrap(console, _title(f, "bold"), width, 4, first=_label(f) + ": ")
    if explained_by:
        out.append(token_line("  = explained by ", _plain(explained_by, "bold"), width))
    out.extend(_evidence_lines(console, f, verbose))
    out.extend(wrap(console, _prose(f.cause), prose, 4, first=Text("  cause: ", "bold")))
    out.extend(wrap(console, _prose(f.workaround), prose, 4, first=Text("  workaround: ", "bold green")))
    if f.versions:
        out.extend(wrap(console, _plain(f.versions), prose, 4, first=Text("  versions: ", "dim")))
    if not verbose:
        for sub in f.explained:
            out.extend(one_line(sub, width, prefix="  explains "))
    out.extend(_reference_lines(f.references, width, None if verbose else REFERENCES_SHOWN, f.id))
    return out


def _evidence_lines(console: Console, f: Finding, verbose: bool) -> list[Text]:
    if not f.evidence:
        return []
    width = console.width
    shown = f.evidence if verbose else f.evidence[:EVIDENCE_SHOWN]
    gutter = max(len(str(ev.line)) for ev in shown) + 2
    hits = Text(f"  ({f.count} hits)", "dim") if f.count > 1 else ""
    out: list[Text] = []
    path = None
    for ev in shown:
        if ev.path != path:
            out.append(token_line("  --> ", _where(ev.path, ev.line), width, hits if path is None else ""))
            path = ev.path
        rows = wrap(console, _plain(ev.text.strip()), width, gutter + 3,
                    first=Text(f"{ev.line:>{gutter}} │ ", "dim"))
        limit = EVIDENCE_ROWS * 3 if verbose else EVIDENCE_ROWS
        if len(rows) > limit:
            rows = rows[:limit]
            rows[-1] = cut(rows[-1] + "…", width)
        for n, row in enumerate(rows):
            if n:  # the continuation rows of one log line keep the gutter
                row = _cat(Text(" " * gutter + " │ ", "dim"), row[gutter + 3:])
            out.append(row)
    if len(f.evidence) > len(shown):
        out.append(Text(f"{' ' * gutter} … {len(f.evidence) - len(shown)} more in `--format json`", "dim"))
    return out


def _reference_lines(references: list[str], width: int, limit: int | None, cause_id: str) -> list[Text]:
    """`  see: URL`, further URLs below it; a URL too long for its indent gets a line to itself."""
    shown = [_plain(ref, "underline") for ref in (references if limit is None else references[:limit])]
    if not shown:
        return []
    if all(len("  see: ") + ref.cell_len <= width for ref in shown):
        indent = "       "
        out = [Text("  see: " if n == 0 else indent) + ref for n, ref in enumerate(shown)]
    else:
        indent = "    "
        out = [Text("  see:"), *(token_line(indent, ref, width) for ref in shown)]
    if len(references) > len(shown):
        more = _plain(f"triage kb show {cause_id}", "dim")
        out.append(token_line(f"{indent}… {len(references) - len(shown)} more: ", more, width))
    return out


def one_line(f: Finding, width: int, prefix: str = "  ") -> list[Text]:
    """`severity[id]: title…  path:line ×count`, the title cut to fit; when the location leaves too little
    room for the title, the location goes on a line of its own below."""
    where = _where(*f.first_line) if f.evidence else Text()
    count = Text(f" ×{f.count}", "dim") if f.count > 1 else Text()
    head = token_line(prefix, _label(f), width)
    room = width - head.cell_len - 2 - (where.cell_len + count.cell_len + 2 if where.plain else 0)
    if room >= 20 or (not where.plain and room >= 12):
        return [_cat(head, ": ", cut(_title(f), room), "  " if where.plain else "", where, count)]
    room = width - head.cell_len - 2
    first = _cat(head, ": ", cut(_title(f), room)) if room >= 12 else head
    indent = " " * (len(prefix) - len(prefix.lstrip()) + 4)
    return [first, token_line(indent + "--> ", where, width, count)] if where.plain else [first]


# ---------------------------------------------------------------------------------------------------------
# a scan result


def _run_header(result: ScanResult) -> list[Text | tuple[str, Text]]:
    """`triage dfc 3.29.0 · hailo8l · phase compile · 412 lines in 1 input`, as parts no line break splits."""
    run = result.run
    line = Text("triage ", style="bold")
    parts = [run.tool + (f" {run.tool_version}" if run.tool_version else "")]
    if run.part:
        parts.append(run.part)
    if run.phase:
        parts.append(f"phase {run.phase}")
    lines, inputs = sum(i.lines for i in run.inputs), len(run.inputs)
    parts.append(f"{lines:,} line{'' if lines == 1 else 's'} in {inputs} input{'' if inputs == 1 else 's'}")
    return [line + _plain(parts[0]), *(_plain(p) for p in parts[1:])]


def print_result(console: Console, result: ScanResult, *, verbose: bool = False, duration_s: float | None = None,
                 note: str | None = None, drafts: bool = False) -> None:
    """Root causes first and in full, then one line per minor finding, metrics, unexplained error lines,
    and a closing line (see `summary`). `verbose` shows every finding in full; `drafts` gives each
    unexplained line the `triage kb draft` command (by its fingerprint) that starts a pack entry for it."""
    result = for_terminal(result)
    width = console.width
    _out(console, flow(_run_header(result), width, indent=4))
    major = [f for f in result.findings if verbose or not is_minor(f)]
    minor = [f for f in result.findings if not verbose and is_minor(f)]
    for f in major:
        console.print()
        _out(console, finding_lines(console, f, verbose=verbose))
        if verbose:
            for sub in f.explained:
                console.print()
                _out(console, finding_lines(console, sub, verbose=True, explained_by=f.id))
    if minor:
        console.print()
        console.print(Text("also found (info and harmless; -v shows them in full):", "bold"), soft_wrap=True)
        for f in minor:
            _out(console, one_line(f, width))
    if result.metrics:
        console.print()
        print_metrics(console, result, limit=METRICS_VERBOSE if verbose else METRICS_SHOWN)
    if result.unexplained:
        console.print()
        _out(console, unexplained_lines(console, result.unexplained, None if verbose else UNEXPLAINED_SHOWN,
                                        drafts=drafts))
    console.print()
    _out(console, flow(summary_parts(result, duration_s, note), width))


def unexplained_lines(console: Console, items: list[Unexplained], limit: int | None = UNEXPLAINED_SHOWN,
                      drafts: bool = False) -> list[Text]:
    """`path:line ×count  text…` per line (the text gets the width and is cut), the tool's advice below
    (and with `drafts`, the command that drafts a pack entry from it)."""
    if drafts:
        from .draft import draftable
    width = console.width
    n = len(items)
    out = [Text(f"{n} error line{'s' if n != 1 else ''} no known cause explains:", "bold")]
    for u in items if limit is None else items[:limit]:
        loc = _where(u.path, u.line)
        count = Text(f" ×{u.count}", "dim") if u.count > 1 else Text()
        text = _plain(u.text.strip())
        room = width - 2 - loc.cell_len - count.cell_len - 2
        if room >= MIN_LOG_TEXT or room >= text.cell_len:
            out.append(_cat("  ", loc, count, "  ", cut(text, room)))
        else:  # the location leaves too little: the text gets a line of its own below it
            out.append(token_line("  ", loc, width, count))
            out.append(Text("      ") + cut(text, width - 6))
        if u.advice:  # the tool's own advice printed with the line (Resolution:, the first HailoRT error, ...)
            out.extend(_advice_lines(console, u, min(width, PROSE_WIDTH)))
        if u.known:  # causes of the same message whose signatures do not know this wording
            ids = [Text(k + ("," if n < len(u.known) - 1 else "")) for n, k in enumerate(u.known)]
            out.extend(flow([Text("      known causes of this message:", "dim"), *ids], min(width, PROSE_WIDTH),
                            sep=" ", indent=8))
        if drafts and u.fingerprint and draftable(u.text):
            out.append(token_line("      draft: ", _plain(f"triage kb draft {u.fingerprint}", "dim"), width))
    if limit is not None and n > limit:
        out.append(Text(f"  … and {n - limit} more (-v shows them all, --format json has each one)", "dim"))
    return out


def _advice_lines(console: Console, u: Unexplained, width: int) -> list[Text]:
    """`advice: <the tool's advice> [message id]`, the prose wrapped; the id (which a reader greps for) is
    never broken: it ends the last line when it fits there, else it takes a line of its own."""
    lines = wrap(console, _plain(u.advice or ""), width, 14, first=Text("      advice: ", "green"))
    if u.message_id and u.message_id not in (u.advice or ""):
        tag = _plain(f"[{u.message_id}]")
        if lines[-1].cell_len + 1 + tag.cell_len <= width:
            lines[-1] = _cat(lines[-1], " ", tag)
        else:
            lines.append(token_line(" " * 14, tag, width))
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 or word == "info" else "s")


def summary_parts(result: ScanResult, duration_s: float | None = None,
                  note: str | None = None) -> list[Text | tuple[str, Text]]:
    """The closing line's parts: counts, status, inputs, time, and what happened to the run."""
    c = result.counts()  # the one definition of the counts, shared with the JSON, `runs list` and the HTML
    counts = [("error", c.error), ("warning", c.warning), ("info", c.info)]
    tally = [Text(_plural(n, sev), STYLE[sev]) for sev, n in counts if n]
    if result.unexplained:
        tally.append(Text(_plural(len(result.unexplained), "unexplained error line"), "bold"))
    if not tally:
        tally.append(Text("no known cause, no error line"))
    elif not any(n for _, n in counts):
        tally.insert(0, Text("no known cause", "bold"))
    status = Text("status ") + Text(result.run.status, STATUS_STYLE.get(result.run.status, "dim"))
    inputs = result.run.inputs
    lines = sum(i.lines for i in inputs)
    what = clean(inputs[0].path) if len(inputs) == 1 else f"{len(inputs)} inputs"
    parts: list[Text | tuple[str, Text]] = [Text(", ").join(tally), status, Text(what),
                                            (" ", Text(f"({lines:,} line{'' if lines == 1 else 's'})"))]
    if duration_s is not None:
        parts.append(Text(f"{duration_s:.2f} s" if duration_s < 10 else f"{duration_s:.0f} s"))
    if note:
        parts.append(Text(note, "dim"))
    return parts


def summary(result: ScanResult, duration_s: float | None = None, note: str | None = None) -> Text:
    """The closing line: `1 error, 2 info · status failed · compile.log (412 lines) · 0.31 s`."""
    line = Text()
    for n, item in enumerate(summary_parts(result, duration_s, note)):
        glue, part = item if isinstance(item, tuple) else (" · ", item)
        line.append_text(Text(glue if n else "") + part)
    return line


def short_line(path: str, line: int, severity: str, title: str, cause_id: str) -> str:
    """`path:line: severity: title [id]`: the form compilers print, which editors and CI log parsers read.
    `--tee` prints findings in this form as they are found, `--format short` at the end."""
    where = f"{path}:{line}" if line else path
    return clean(f"{where}: {severity}: {title} [{cause_id}]")


def print_short(console: Console, result: ScanResult, *, duration_s: float | None = None,
                note: str | None = None) -> None:
    """One line per root finding and per unexplained error line, then the closing line."""
    result = for_terminal(result)
    from .outputs import UNEXPLAINED_ID

    for f in result.findings:
        path, line = f.first_line
        console.print(Text(short_line(path, line, f.severity, f.title, f.id)), soft_wrap=True)
    for u in result.unexplained:
        text = clip(u.text.strip(), SHORT_TEXT)
        console.print(Text(short_line(u.path, u.line, "warning", f"no known cause explains: {text}",
                                      UNEXPLAINED_ID)), soft_wrap=True)
    console.print(summary(result, duration_s, note), soft_wrap=True)


def print_summary(console: Console, result: ScanResult, *, duration_s: float | None = None,
                  note: str | None = None) -> None:
    """`--quiet`: the closing line alone."""
    result = for_terminal(result)
    console.print(summary(result, duration_s, note), soft_wrap=True)


# ---------------------------------------------------------------------------------------------------------
# the knowledge base


def print_cause(console: Console, cause: Cause) -> None:
    """`kb show`: the whole entry in the same layout as a finding."""
    cause = for_terminal(cause)
    width = console.width
    prose = min(width, PROSE_WIDTH)
    label = Text.assemble((f"{cause.severity}[{cause.id}]", STYLE[cause.severity]), ": ")
    lines = wrap(console, _plain(cause.shown_title, "bold"), width, 4, first=label)
    facts = [f"tool {cause.tool}"] + ([f"phase {cause.phase}"] if cause.phase else []) + [f"pack {cause.pack}"]
    if cause.status != "stable":
        facts.append(cause.status)
    lines.extend(wrap(console, _plain(" · ".join(facts), "dim"), width, 4, first="  "))
    lines.extend(wrap(console, _prose(cause.cause), prose, 4, first=Text("  cause: ", "bold")))
    lines.extend(wrap(console, _prose(cause.workaround), prose, 4, first=Text("  workaround: ", "bold green")))
    if cause.versions:
        lines.extend(wrap(console, _plain(cause.versions), prose, 4, first=Text("  versions: ", "dim")))
    if cause.needs:
        lines.extend(wrap(console, _plain(cause.needs), prose, 4, first=Text("  needs: ", "dim")))
    if cause.examples:
        lines.append(Text("  example lines:", "bold"))
        lines.extend(Text("    ") + cut(_plain(ex.strip()), width - 4) for ex in cause.examples[:4])
    if cause.explains:
        lines.append(Text("  explains:", "bold"))
        lines.extend(token_line("    ", _plain(cid), width) for cid in cause.explains)
    lines.extend(_reference_lines(cause.references, width, None, cause.id))
    _out(console, lines)


def print_explanation(console: Console, explanation) -> None:  # type: ignore[no-untyped-def]
    """`explain`: every matching cause in full, or the closest known ones."""
    explanation = for_terminal(explanation)
    if explanation.result.findings:
        for n, f in enumerate(explanation.result.all_findings()):
            if n:
                console.print()
            _out(console, finding_lines(console, f, verbose=True))
        return
    console.print(Text("No known cause matches this text.", style="bold"))
    if explanation.same_id:
        console.print(Text(f"Known causes of the same message ({explanation.message_id}), worded differently here:"))
        for cause in explanation.same_id:
            head = Text("  ") + Text(cause.id, "bold")
            room = console.width - head.cell_len - 2
            _out(console, [head + "  " + cut(_plain(cause.shown_title), room) if room >= 12 else head])
    if explanation.closest:
        console.print(Text("Other close causes:" if explanation.same_id else "Closest known causes:"))
        for cause, score in explanation.closest:
            head = Text(f"  {score:>4.0%}  ") + Text(cause.id, "bold")
            room = console.width - head.cell_len - 2
            _out(console, [head + "  " + cut(_plain(cause.shown_title), room) if room >= 12 else head])


def print_cause_table(console: Console, causes: list[Cause]) -> None:
    """`packs list`."""
    causes = for_terminal(causes)
    print_table(console, [Column("id", whole=True), Column("severity", whole=True), Column("tool", whole=True),
                          Column("title", min=TITLE_MIN)],
                [[Text(c.id), Text(c.severity, STYLE[c.severity]), c.tool, _plain(c.shown_title)] for c in causes])
    console.print(Text(f"{len(causes)} causes", style="dim"))


def print_search(console: Console, query: str, rows: list[dict]) -> None:  # type: ignore[type-arg]
    """`kb search`."""
    query, rows = for_terminal(query), for_terminal(rows)
    if not rows:
        console.print(Text(f"No known cause mentions {clean(query)!r}.", style="bold"), soft_wrap=True)
        return
    console.print(Text(f"Known causes for {clean(query)!r}:", "bold"), soft_wrap=True)
    print_table(console, [Column("id", whole=True), Column("severity", whole=True), Column("title", min=TITLE_MIN)],
                [[Text(str(r["id"])), Text(str(r["severity"]), STYLE.get(str(r["severity"]), "")),
                  _plain(interpolate(str(r["title"]), {}))] for r in rows])


def print_packs_test(console: Console, packs, report,  # type: ignore[no-untyped-def]
                     only: set[str] | None = None) -> None:
    """Per-cause hits on failing vs clean fixtures, then every golden mismatch. `only`: the causes of the
    packs the author passed with --packs (the built-in ones they load beside are not listed)."""
    report = for_terminal(report)
    console.print(Text("Causes: fixtures hit" + (" (the causes of --packs)" if only is not None else ""), "bold"))
    rows = []
    for cid, cause in sorted(packs.causes.items()):
        if only is not None and cid not in only:
            continue
        s = report.stats.get(cid)
        clean_hits = s.clean if s else 0
        style = "bold red" if clean_hits and cause.severity == "error" else ""
        rows.append([Text(cid), Text(cause.severity, STYLE[cause.severity]), str(s.failing if s else 0),
                     Text(str(clean_hits), style=style)])
    print_table(console, [Column("cause", whole=True), Column("severity", whole=True),
                          Column("failing", whole=True, justify="right"), Column("clean", whole=True, justify="right")],
                rows)
    examples = sum(len(c.examples) for c in packs.causes.values())
    console.print(Text(f"{len(packs.causes)} causes, {examples} match examples: all behave (checked at load)"))
    for o in report.failures:
        console.print(Text(f"MISMATCH {o.golden.path}", style="bold red"), soft_wrap=True)
        for line in o.diff():
            console.print(Text("  " + line), soft_wrap=True)
    for p in report.uncovered:
        console.print(Text(f"NO GOLDEN {p}", style="bold red"), soft_wrap=True)
    ok = len(report.outcomes) - len(report.failures)
    console.print(Text(f"{ok}/{len(report.outcomes)} goldens match; {len(report.uncovered)} fixtures without a golden",
                       style="bold green" if not report.failures and not report.uncovered else "bold red"))


# ---------------------------------------------------------------------------------------------------------
# metrics


def print_metrics(console: Console, result: ScanResult, limit: int = METRICS_VERBOSE) -> None:
    """Utilization and timing figures, the ones over their limit first."""
    metrics = sorted(result.metrics, key=lambda m: (not m.over, m.kind, m.scope, m.resource))[:limit]
    if not metrics:
        return
    console.print(Text("Metrics", "bold"))
    rows = []
    for m in metrics:
        pct = "" if m.percent is None else f"{m.percent:.1f}"
        rows.append([m.kind, _plain(m.scope), _plain(m.resource), _num(m.used), _num(m.available),
                     Text(pct, style="bold red" if m.over else "")])
    print_table(console, [Column("kind", whole=True), Column("scope", keep_end=True), Column("resource"),
                          Column("used", whole=True, justify="right"), Column("available", whole=True, justify="right"),
                          Column("%", whole=True, justify="right")], rows)
    if len(result.metrics) > limit:
        more = "-v shows more, " if limit < METRICS_VERBOSE else ""
        console.print(Text(f"… {_plural(len(result.metrics) - limit, 'more metric')} ({more}--format json has all)",
                           style="dim"))


def _num(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}" if abs(value) < 1e7 else f"{value:.3g}"


# ---------------------------------------------------------------------------------------------------------
# drafts and backtests


def print_backtest(console: Console, bt, causes: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Hits per cause on failed / passed / unknown runs per window, then the runs that change."""
    console.print(Text(f"Backtest over {bt.runs} stored run{'s' if bt.runs != 1 else ''} with kept logs"
                       + (f" ({bt.not_kept} more not kept whole)" if bt.not_kept else ""), "bold"), soft_wrap=True)
    columns = [Column("cause", whole=True)] + [Column(f"{d}d {s}", whole=True, justify="right")
                                               for d in bt.windows for s in ("fail", "pass")]
    rows = []
    for cid in causes:
        cells: list[Text | str] = [Text(cid)]
        for d in bt.windows:
            cells.append(str(bt.hits(cid, d, "failed")))
            passed = bt.hits(cid, d, "passed")
            cells.append(Text(str(passed), "bold red" if passed else ""))
        rows.append(cells)
    if rows:
        print_table(console, columns, rows)
    width = console.width
    explained = bt.newly_explained
    label = Text("  newly explains: ", "bold")
    _out(console, wrap(console, Text(", ".join(f"run {c.run_id}" for c in explained) or "no run"), width, 4,
                       first=label))
    lines = ", ".join(f"run {c.run_id} ({c.lines_explained})" for c in bt.explaining) or "none"
    _out(console, wrap(console, Text(lines), width, 4, first=Text("  explains error lines in: ", "bold")))
    hiding = [(c.run_id, cid, "hidden" if cid in c.hidden else "gone") for c in bt.hiding for cid in c.hidden + c.lost]
    _out(console, wrap(console, Text(", ".join(f"{cid} in run {rid} ({how})" for rid, cid, how in hiding)
                                     or "no cause", "bold red" if hiding else ""), width, 4,
                       first=Text("  hides: ", "bold")))


def print_draft(console: Console, draft, files, bt, folder) -> None:  # type: ignore[no-untyped-def]
    """What `kb draft` made: the id and regex, the examples, the backtest, the files and the next step."""
    width = console.width
    o = draft.origin
    head = Text("drafted ", "bold") + Text(draft.cause_id, "bold")
    if o is not None and o.run_id is not None:
        head.append(f" from run {o.run_id}")
    _out(console, [token_line("", head, width)])
    if o is not None and o.path:
        _out(console, [token_line("  --> ", _where(o.path, o.line or 0), width)])
    _out(console, wrap(console, _plain(draft.regex), width, 4, first=Text("  regex: ", "bold")))
    _out(console, wrap(console, _plain(draft.title), width, 4, first=Text("  title: ", "bold")))
    console.print(Text(f"  {len(draft.match)} match example{'s' if len(draft.match) != 1 else ''}, "
                       f"{len(draft.no_match)} no_match from passed runs"), soft_wrap=True)
    if bt is not None:
        console.print()
        print_backtest(console, bt, [draft.cause_id])
    console.print()
    for path in files:
        _out(console, [token_line("wrote ", _plain(str(path)), width)])
    console.print(Text("next: write cause, workaround and references in place of the TODO text, then", "dim"),
                  soft_wrap=True)
    command = f"triage packs test --packs {folder} --fixtures {folder}/fixtures --against-db"
    _out(console, [token_line("  ", _plain(command), width)])


# ---------------------------------------------------------------------------------------------------------
# the held-back measure


EVAL_LABELS = {"fail": "failures with the right cause", "clean": "clean runs without an error finding",
               "trap": "traps explained without an error"}


def print_eval(console: Console, report, list_wrong: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The three held-back figures, then per toolchain family; the cases triage got wrong only on request: whoever
    reads them while writing packs is no longer writing without the held-back cases."""
    for kind, label in EVAL_LABELS.items():
        fig = report.by_kind.get(kind)
        console.print(Text(f"{label}: {fig.text if fig else 'no cases'}", "bold"), soft_wrap=True)
    families = sorted({fam for fam, _ in report.by_family})
    if families:
        console.print()
        rows = [[Text(fam)] + [Text(report.by_family[(fam, k)].text) if (fam, k) in report.by_family else Text("")
                               for k in EVAL_LABELS] for fam in families]
        print_table(console, [Column("family", whole=True)] + [Column(k, whole=True, justify="right")
                                                               for k in EVAL_LABELS], rows)
    if not list_wrong:
        if report.wrong:
            console.print(f"\n{len(report.wrong)} cases wrong (--list-wrong names them)", soft_wrap=True)
        return
    width = console.width
    for o in report.wrong:
        found = ", ".join(f"{i} ({s})" for i, s in o.found) or "nothing"
        _out(console, wrap(console, _plain(found), width, 6,
                           first=Text(f"wrong [{o.case.kind}] ", "red") + _plain(o.case.id, "bold") + ": found "))
