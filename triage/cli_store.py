"""Commands over the run database: `runs list`, `runs show`, `ingest`, `retriage`.

Each command opens the store, calls one or two library methods and formats the result. Log text
reaches the terminal only as Rich `Text`, never as markup.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .display import for_terminal
from .errors import InputError, TriageError
from .model import RUN_STATUSES, RUN_TOOLS
from .packs import load_packs
from . import store as _store

DbOpt = Annotated[Optional[Path], typer.Option("--db", help="Run database (default: TRIAGE_DB, else the user data folder).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
PacksOpt = Annotated[Optional[list[Path]], typer.Option("--packs", help="Extra pack folder or file (repeatable); also TRIAGE_PACKS.")]

MAX_ID = (1 << 63) - 1  # SQLite's largest integer: a longer id is a usage error, not an overflow
STATUS_STYLE = {"failed": "bold red", "passed": "green"}


# Option values checked by type: a typo is a usage error, not an empty list
Status = Enum("Status", {s: s for s in RUN_STATUSES}, type=str)  # type: ignore[misc]
RunTool = Enum("RunTool", {t: t for t in RUN_TOOLS}, type=str)  # type: ignore[misc]

runs_app = typer.Typer(help="List and show stored runs.", no_args_is_help=True)


def _out() -> Console:
    return Console(highlight=False, soft_wrap=False)


def _dump(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _db(db: Path | None) -> Path:
    return db if db is not None else _store.default_db_path()


@runs_app.command("list")
def runs_list(
    since: Annotated[Optional[str], typer.Option(help="Only runs newer than this: 24h, 7d, 2w or a date.")] = None,
    tool: Annotated[Optional[RunTool], typer.Option(help="Only runs of this tool.")] = None,
    status: Annotated[Optional[Status], typer.Option(help="Only runs with this status.")] = None,
    label: Annotated[Optional[str], typer.Option(help="Only runs with this label.")] = None,
    limit: Annotated[int, typer.Option(min=0, help="At most this many runs, newest first (0: all).")] = 50,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List stored runs, newest first."""
    with _store.open_store(_db(db), create=False) as store:
        rows = store.runs(since=since, tool=tool.value if tool else None, status=status.value if status else None,
                          label=label, limit=limit or None)
    if as_json:
        _dump(rows)
        return
    filters = {"--since": since, "--tool": tool and tool.value, "--status": status and status.value, "--label": label}
    print_runs(_out(), rows, " ".join(f"{k} {v}" for k, v in filters.items() if v))


@runs_app.command("show")
def runs_show(
    run_id: Annotated[int, typer.Argument(metavar="ID", min=1, max=MAX_ID, help="Run id (see `triage runs list`).")],
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """Show one stored run: its dimensions, inputs and findings with evidence."""
    with _store.open_store(_db(db), create=False) as store:
        run = store.run(run_id)
    if as_json:
        _dump(run)
        return
    print_run(_out(), run)


def ingest(
    files: Annotated[list[Path], typer.Argument(help="Results written by `triage scan --format json`.")],
    force: Annotated[bool, typer.Option("--force", help="Store again even when the same run is already stored.")] = False,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """Store scan results made elsewhere (e.g. by CI jobs) in the run database.

    Each document is checked against the JSON contract and stored in one transaction; a rejected one is
    reported (error, field, file) and stores nothing, the others are stored; the exit code is then 2."""
    outcomes: list[tuple[Path, _store.RecordOutcome]] = []
    rejected: list[TriageError] = []
    with _store.open_store(_db(db)) as store:
        for path in files:
            try:
                outcomes.append((path, store.ingest_file(path, force=force)))
            except InputError as exc:
                rejected.append(exc)
    _report_rejected(rejected)
    if as_json:
        _dump([{"file": str(p), "run_id": o.run_id, "duplicate": o.duplicate, "undated": o.undated} for p, o in outcomes])
        _exit_if(rejected)
        return
    out = _out()
    for path, o in outcomes:
        line = Text(f"{for_terminal(str(path))}: ")
        line.append(f"run {o.run_id}", style="bold")
        line.append(" (already stored)" if o.duplicate else " stored", style="dim" if o.duplicate else "green")
        if o.undated and not o.duplicate:
            line.append(" (no `created` in the document: dated now)", style="yellow")
        out.print(line)
    _exit_if(rejected)


def _report_rejected(rejected: list[TriageError]) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for exc in rejected:
        err.print(exc.render(), markup=False, highlight=False)


def _exit_if(rejected: list[TriageError]) -> None:
    if rejected:
        raise typer.Exit(2)


def retriage(
    since: Annotated[Optional[str], typer.Option(help="Only runs newer than this: 24h, 7d, 2w or a date.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-scan runs already classified with the current packs too.")] = False,
    packs: PacksOpt = None,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """Re-classify stored runs from their kept logs with the current packs; show what changed per run."""
    pack_set = load_packs(packs or [])
    with _store.open_store(_db(db), create=False) as store:
        changes = store.retriage(pack_set, since=since, force=force)
    if as_json:
        _dump([{"run_id": c.run_id, "added": c.added, "removed": c.removed, "status_before": c.status_before,
                "status_after": c.status_after, "skipped": c.skipped} for c in changes])
        return
    print_retriage(_out(), changes)


# ---------------------------------------------------------------------------------------------------------
# Rendering (plain functions so tests can render to a fixed-width console)


def print_runs(out: Console, rows: list[dict[str, Any]], filters: str = "") -> None:
    rows, filters = for_terminal(rows), for_terminal(filters)
    if not rows:
        out.print(Text(f"no stored run matches {filters}" if filters else "no runs stored yet", style="dim"))
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in ("id", "created", "label", "tool", "status", "findings", "top finding"):
        table.add_column(name, justify="right" if name in ("id", "findings") else "left", overflow="fold")
    for r in rows:
        tool = (r["tool"] or "") + (f" {r['tool_version']}" if r.get("tool_version") else "")
        c = r["counts"]
        counts = " ".join(f"{c[k]}{k[0].upper()}" for k in ("error", "warning", "info") if c[k]) or "0"
        if c["explained"]:
            counts += f" +{c['explained']} explained"
        table.add_row(Text(str(r["id"])), Text(r["created"] or ""), Text(r.get("label") or ""), Text(tool),
                      Text(r["status"] or "", style=STATUS_STYLE.get(r["status"] or "", "dim")), Text(counts),
                      Text(r.get("top") or ""))
    out.print(table)


def print_run(out: Console, run: dict[str, Any]) -> None:
    from .console import print_result

    run = for_terminal(run)

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for key in ("id", "created", "label", "model", "branch", "commit", "host", "device", "duration_s", "packs_digest"):
        if run.get(key) is not None:
            head.add_row(Text(key), Text(str(run[key])))
    kept = [i for i in run.get("inputs") or [] if i.get("log_kept")]
    head.add_row(Text("logs kept"), Text(f"{len(kept)} of {len(run.get('inputs') or [])} inputs"))
    out.print(head)
    out.print()
    print_result(out, _store.result_from_doc(run["result"]))


def print_retriage(out: Console, changes: list[_store.RetriageChange]) -> None:
    changes = for_terminal(changes)
    changed = [c for c in changes if c.changed and not c.skipped]
    skipped = [c for c in changes if c.skipped]
    for c in changed:
        line = Text(f"run {c.run_id}: ", style="bold")
        for cid in c.added:
            line.append(f" +{cid}", style="green")
        for cid in c.removed:
            line.append(f" -{cid}", style="red")
        if c.status_before != c.status_after:
            line.append(f"  status {c.status_before} -> {c.status_after}", style="dim")
        out.print(line)
    summary = f"{len(changes) - len(skipped)} run(s) re-classified, {len(changed)} changed"
    if skipped:
        summary += f", {len(skipped)} skipped (log not kept or over the size cap)"
    out.print(Text(summary, style="dim"))
