"""Terminal rendering with Rich. Log text is untrusted: it always goes in as `Text`, never as markup, and every
entry point first makes its data `for_terminal` (controls shown as escapes, never acted on)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .display import clip, for_terminal
from .model import Finding, ScanResult
from .packs import Cause

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _run_header(result: ScanResult) -> Text:
    run = result.run
    line = Text()
    line.append("triage ", style="bold")
    parts = [run.tool + (f" {run.tool_version}" if run.tool_version else "")]
    if run.part:
        parts.append(run.part)
    if run.phase:
        parts.append(f"phase {run.phase}")
    lines, inputs = sum(i.lines for i in run.inputs), len(run.inputs)
    parts.append(f"{lines:,} line{'' if lines == 1 else 's'} in {inputs} input{'' if inputs == 1 else 's'}")
    line.append(" · ".join(parts))
    line.append(" · status ")
    line.append(run.status, style={"failed": "bold red", "passed": "green"}.get(run.status, "dim"))
    return line


def finding_panel(f: Finding, nested: bool = False) -> Panel:
    body = Text()
    where = f"{f.evidence[0].path}:{f.evidence[0].line}" if f.evidence else ""
    body.append(f"{where}", style="dim")
    if f.count > 1:
        body.append(f"  ({f.count} hits)", style="dim")
    if f.versions:
        body.append(f"\nversions: {f.versions}", style="dim")
    for ev in f.evidence[:2]:
        body.append("\n  ")
        # a line of another file than the header's says which (one cause hit in several inputs)
        other = f.evidence and ev.path != f.evidence[0].path
        body.append(f"{ev.path}:{ev.line} │ " if other else f"{ev.line:>6} │ ", style="dim")
        body.append(clip(ev.text, 300))
    body.append("\n\ncause: ", style="bold")
    body.append(f.cause)
    body.append("\nworkaround: ", style="bold green")
    body.append(f.workaround)
    for ref in f.references[:3]:
        body.append("\n  ↳ ", style="dim")
        body.append(ref, style="underline")
    parts: list = [body]
    for sub in f.explained:
        parts.append(Padding(finding_panel(sub, nested=True), (0, 0, 0, 2)))
    title = Text()
    title.append(f.severity.upper(), style=STYLE[f.severity])
    title.append(f" {f.title} ")
    title.append(f"[{f.id}]", style="dim")
    subtitle = "explained by the finding above" if nested else None
    return Panel(Group(*parts), title=title, title_align="left", subtitle=subtitle, border_style=STYLE[f.severity])


def print_result(console: Console, result: ScanResult) -> None:
    result = for_terminal(result)
    console.print(_run_header(result))
    if not result.findings:
        console.print(Text("No known cause found.", style="bold"))
    for f in result.findings:
        console.print(finding_panel(f))
    print_metrics(console, result)
    if result.unexplained:
        table = Table(title="Error lines no known cause explains", title_justify="left", show_lines=False)
        table.add_column("where", style="dim", no_wrap=True)
        table.add_column("count", justify="right")
        table.add_column("line")
        for u in result.unexplained[:30]:
            table.add_row(Text(f"{u.path}:{u.line}"), str(u.count), Text(clip(u.text, 240)))
        console.print(table)
        if len(result.unexplained) > 30:
            console.print(Text(f"… and {len(result.unexplained) - 30} more (see --format json)", style="dim"))
    if result.findings or result.unexplained:
        console.print(Text(result.counts().text(), style="bold"))


def print_cause(console: Console, cause: Cause) -> None:
    cause = for_terminal(cause)
    body = Text()
    body.append(f"{cause.severity} · {cause.tool}", style=STYLE[cause.severity])
    if cause.phase:
        body.append(f" · {cause.phase}")
    if cause.versions:
        body.append(f" · versions: {cause.versions}")
    body.append("\n\ncause: ", style="bold")
    body.append(cause.cause)
    body.append("\n\nworkaround: ", style="bold green")
    body.append(cause.workaround)
    if cause.examples:
        body.append("\n\nexample lines:", style="bold")
        for ex in cause.examples[:4]:
            body.append("\n  " + clip(ex, 300))
    if cause.explains:
        body.append("\n\nexplains: ", style="bold")
        body.append(", ".join(cause.explains))
    for ref in cause.references:
        body.append("\n  ↳ " + ref, style="underline")
    console.print(Panel(body, title=Text(f"{cause.title} [{cause.id}]"), title_align="left"))


def print_packs_test(console: Console, packs, report) -> None:  # type: ignore[no-untyped-def]
    """Per-cause hits on failing vs clean fixtures, then every golden mismatch."""
    report = for_terminal(report)
    table = Table(title="Causes: fixtures hit", title_justify="left")
    table.add_column("cause")
    table.add_column("severity")
    table.add_column("failing", justify="right")
    table.add_column("clean", justify="right")
    for cid, cause in sorted(packs.causes.items()):
        s = report.stats.get(cid)
        clean = s.clean if s else 0
        style = "bold red" if clean and cause.severity == "error" else None
        table.add_row(Text(cid), cause.severity, str(s.failing if s else 0), Text(str(clean), style=style or ""))
    console.print(table)
    examples = sum(len(c.examples) for c in packs.causes.values())
    console.print(Text(f"{len(packs.causes)} causes, {examples} match examples: all behave (checked at load)"))
    for o in report.failures:
        console.print(Text(f"MISMATCH {o.golden.path}", style="bold red"))
        for line in o.diff():
            console.print(Text("  " + line))
    for p in report.uncovered:
        console.print(Text(f"NO GOLDEN {p}", style="bold red"))
    ok = len(report.outcomes) - len(report.failures)
    console.print(Text(f"{ok}/{len(report.outcomes)} goldens match; {len(report.uncovered)} fixtures without a golden",
                       style="bold green" if not report.failures and not report.uncovered else "bold red"))


def print_cause_table(console: Console, causes: list[Cause]) -> None:
    causes = for_terminal(causes)
    table = Table(show_lines=False)
    table.add_column("id", no_wrap=True)
    table.add_column("severity")
    table.add_column("tool")
    table.add_column("title")
    for c in causes:
        table.add_row(Text(c.id), Text(c.severity, style=STYLE[c.severity]), c.tool, Text(c.title))
    console.print(table)
    console.print(Text(f"{len(causes)} causes", style="dim"))


def print_explanation(console: Console, explanation) -> None:  # type: ignore[no-untyped-def]
    explanation = for_terminal(explanation)
    if explanation.result.findings:
        for f in explanation.result.findings:
            console.print(finding_panel(f))
        return
    console.print(Text("No known cause matches this text.", style="bold"))
    if explanation.closest:
        console.print(Text("Closest known causes:"))
        for cause, score in explanation.closest:
            line = Text(f"  {score:.0%}  ")
            line.append(cause.id, style="bold")
            line.append(f"  {cause.title}")
            console.print(line)


def print_metrics(console: Console, result: ScanResult, limit: int = 24) -> None:
    """Utilization and timing figures, the ones over their limit first."""
    metrics = sorted(result.metrics, key=lambda m: (not m.over, m.kind, m.scope, m.resource))[:limit]
    if not metrics:
        return
    table = Table(title="Metrics", title_justify="left")
    for col, justify in (("kind", "left"), ("scope", "left"), ("resource", "left"), ("used", "right"),
                         ("available", "right"), ("%", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for m in metrics:
        pct = "" if m.percent is None else f"{m.percent:.1f}"
        style = "bold red" if m.over else ""
        table.add_row(m.kind, Text(m.scope), Text(m.resource), _num(m.used), _num(m.available), Text(pct, style=style))
    console.print(table)
    if len(result.metrics) > limit:
        console.print(Text(f"… {len(result.metrics) - limit} more metrics (see --format json)", style="dim"))


def _num(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}" if abs(value) < 1e7 else f"{value:.3g}"


def print_search(console: Console, query: str, rows: list[dict]) -> None:  # type: ignore[type-arg]
    query, rows = for_terminal(query), for_terminal(rows)
    if not rows:
        console.print(Text(f"No known cause mentions {query!r}.", style="bold"))
        return
    table = Table(title=Text(f"Known causes for {query!r}"), title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("severity")
    table.add_column("title")
    for r in rows:
        table.add_row(Text(str(r["id"])), Text(str(r["severity"]), style=STYLE.get(str(r["severity"]), "")),
                      Text(str(r["title"])))
    console.print(table)
