"""Commands over the run database: `runs list`, `runs show`, `ingest`, `retriage`.

Each command opens the store, calls one or two library methods and formats the result. Log text
reaches the terminal only as Rich `Text`, never as markup.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from .display import for_terminal
from .errors import InputError, TriageError
from .model import RUN_STATUSES, RUN_TOOLS

if TYPE_CHECKING:
    from rich.console import Console

    from . import store as _store
else:  # imported on first use: `triage --help` registers these commands without loading the store or Rich
    class _Store:
        def __getattr__(self, name: str) -> Any:
            return getattr(importlib.import_module("triage.store"), name)

    _store = _Store()


def load_packs(*args: Any, **kwargs: Any) -> Any:
    from .packs import load_packs as load  # noqa: PLC0415

    return load(*args, **kwargs)

DbOpt = Annotated[Optional[Path], typer.Option("--db", help="Run database (default: TRIAGE_DB, else the user data folder).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
PacksOpt = Annotated[Optional[list[Path]], typer.Option("--packs", help="Extra pack folder or file (repeatable); also TRIAGE_PACKS.")]

MAX_ID = (1 << 63) - 1  # SQLite's largest integer: a longer id is a usage error, not an overflow
STATUS_STYLE = {"failed": "bold red", "passed": "green"}


# Option values checked by type: a typo is a usage error, not an empty list
Status = Enum("Status", {s: s for s in RUN_STATUSES}, type=str)  # type: ignore[misc]
RunTool = Enum("RunTool", {t: t for t in RUN_TOOLS}, type=str)  # type: ignore[misc]

runs_app = typer.Typer(help="List and show stored runs.", no_args_is_help=True, rich_markup_mode=None)


def _out() -> Console:
    from rich.console import Console  # noqa: PLC0415

    return Console(highlight=False, soft_wrap=False)


def _dump(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _dump_stream(rows: Iterable[Any]) -> None:
    """The JSON array `_dump` would write for these rows, written row by row: a history of any length
    lists in constant memory."""
    sys.stdout.write("[")
    n = 0
    for row in rows:
        item = json.dumps(row, indent=2, ensure_ascii=False, default=str).replace("\n", "\n  ")
        sys.stdout.write(("," if n else "") + "\n  " + item)
        n += 1
    sys.stdout.write("\n]\n" if n else "]\n")


def _db(db: Path | None) -> Path:
    return db if db is not None else _store.default_db_path()


@runs_app.command("list")
def runs_list(
    since: Annotated[Optional[str], typer.Option(help="Only runs newer than this: 24h, 7d, 2w or a date.")] = None,
    tool: Annotated[Optional[RunTool], typer.Option(metavar="TOOL", help="Only runs of this tool: "
                                                    + ", ".join(RUN_TOOLS) + ".")] = None,
    status: Annotated[Optional[Status], typer.Option(metavar="STATUS", help="Only runs with this status: "
                                                     + ", ".join(RUN_STATUSES) + ".")] = None,
    label: Annotated[Optional[str], typer.Option(help="Only runs with this label.")] = None,
    limit: Annotated[int, typer.Option(min=0, help="At most this many runs, newest first (0: all).")] = 50,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List stored runs, newest first."""
    with _store.open_store(_db(db), create=False) as store:
        rows = store.iter_runs(since=since, tool=tool.value if tool else None,
                               status=status.value if status else None, label=label, limit=limit or None)
        if as_json:
            _dump_stream(rows)
            return
        filters = {"--since": since, "--tool": tool and tool.value, "--status": status and status.value,
                   "--label": label}
        print_runs(_out(), rows, " ".join(f"{k} {v}" for k, v in filters.items() if v))


@runs_app.command("show")
def runs_show(
    run_id: Annotated[int, typer.Argument(metavar="ID", min=1, max=MAX_ID, help="Run id (see `triage runs list`).")],
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """Show one stored run: dimensions, inputs, findings."""
    with _store.open_store(_db(db), create=False) as store:
        run = store.run(run_id)
    if as_json:
        _dump(run)
        return
    print_run(_out(), run)


@runs_app.command("log")
def runs_log(
    run_id: Annotated[int, typer.Argument(metavar="ID", min=1, max=MAX_ID, help="Run id (see `triage runs list`).")],
    number: Annotated[Optional[int], typer.Option("--input", min=1, metavar="N", help="Which input (1, 2, ...), when the run has several.")] = None,
    db: DbOpt = None,
) -> None:
    """Print a run's kept log, as it was scanned.

    The text is decompressed and written unchanged; --input chooses among several inputs.
    """
    with _store.open_store(_db(db), create=False) as store:
        path, stream, truncated = store.input_log(run_id, number)
    with stream:
        out = sys.stdout.buffer
        while chunk := stream.read(1 << 20):
            out.write(chunk)
        out.flush()
    if truncated:
        sys.stderr.write(f"warning: {path}: only its first {_store.DEFAULT_LOG_CAP >> 20} MiB were kept\n")


@runs_app.command("prune")
def runs_prune(
    older_than: Annotated[str, typer.Option("--older-than", metavar="AGE", help="Delete runs created before this: 90d, 12w, or a date.")],
    keep_failed: Annotated[bool, typer.Option("--keep-failed", help="Keep failed runs whatever their age.")] = False,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """Delete old runs, then shrink the database.

    A pruned run goes with its findings, evidence and kept logs; VACUUM then returns the space.
    """
    with _store.open_store(_db(db), create=False) as store:
        outcome = store.prune(older_than, keep_failed=keep_failed)
    if as_json:
        _dump({"removed": outcome.removed, "bytes_before": outcome.bytes_before, "bytes_after": outcome.bytes_after})
        return
    from rich.text import Text  # noqa: PLC0415

    _out().print(Text(f"{outcome.removed} run{'' if outcome.removed == 1 else 's'} removed; database "
                      f"{outcome.bytes_before / 1e6:,.1f} MB -> {outcome.bytes_after / 1e6:,.1f} MB"))


def ingest(
    files: Annotated[list[Path], typer.Argument(help="Results written by `triage scan --format json`.")],
    force: Annotated[bool, typer.Option("--force", help="Store again even when the same run is already stored.")] = False,
    as_json: JsonOpt = False,
    db: DbOpt = None,
    packs: PacksOpt = None,
) -> None:
    """Store scan results made elsewhere, such as by CI jobs.

    Each document is checked against the JSON contract and stored in one transaction; a rejected one is
    reported (error, field, file) and stores nothing, the others are stored; the exit code is then 2."""
    outcomes: list[tuple[Path, _store.RecordOutcome]] = []
    rejected: list[TriageError] = []
    pack_set = load_packs(packs or [])
    with _store.open_store(_db(db)) as store:
        store.sync_causes(pack_set)  # the knowledge the findings refer to, as in a database `scan` writes
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
    from rich.text import Text  # noqa: PLC0415

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
    if not rejected:
        return
    from rich.console import Console  # noqa: PLC0415

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
    """Re-classify stored runs with the current packs.

    Re-scans the kept logs of the runs and shows what changed per run.
    """
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


RUNS_PER_TABLE = 500  # rows laid out at a time: a long history streams instead of being held whole


def print_runs(out: Console, rows: Iterable[dict[str, Any]], filters: str = "") -> None:
    """The runs as a table, RUNS_PER_TABLE rows at a time: each slice keeps at least the columns' widths
    of the slices before it (and the header is printed once), so a history of any length streams."""
    from rich.text import Text  # noqa: PLC0415

    from .tables import Column, print_table

    filters = for_terminal(filters)
    columns = [Column("id", whole=True, justify="right"), Column("created (UTC)", whole=True), Column("label"),
               Column("tool", whole=True), Column("status", whole=True), Column("findings", whole=True, justify="right"),
               Column("top finding", whole=True)]
    widths: list[int] | None = None
    for chunk in _chunks(rows, RUNS_PER_TABLE):
        widths = print_table(out, columns, [_run_cells(for_terminal(r)) for r in chunk], header=widths is None,
                             at_least=widths)
    if widths is None:
        out.print(Text(f"no stored run matches {filters}" if filters else "no runs stored yet", style="dim"))


def _run_cells(r: dict[str, Any]) -> list[Any]:
    from rich.text import Text  # noqa: PLC0415

    tool = (r["tool"] or "") + (f" {r['tool_version']}" if r.get("tool_version") else "")
    c = r["counts"]
    counts = " ".join(f"{c[k]}{k[0].upper()}" for k in ("error", "warning", "info") if c[k]) or "0"
    if c["explained"]:
        counts += f" +{c['explained']} explained"
    created = (r["created"] or "").replace("T", " ").removesuffix("Z")
    return [str(r["id"]), created, Text(r.get("label") or ""), Text(tool),
            Text(r["status"] or "", style=STATUS_STYLE.get(r["status"] or "", "dim")), counts, Text(r.get("top") or "")]


def _chunks(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def print_run(out: Console, run: dict[str, Any]) -> None:
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    from .console import print_result
    from .tables import emit

    run = for_terminal(run)

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for key in ("id", "created", "label", "model", "branch", "commit", "host", "device", "duration_s", "packs_digest"):
        if run.get(key) is not None:
            head.add_row(Text(key), Text(str(run[key])))
    kept = [i for i in run.get("inputs") or [] if i.get("log_kept")]
    head.add_row(Text("logs kept"), Text(f"{len(kept)} of {len(run.get('inputs') or [])} inputs"))
    result = _store.result_from_doc(run["result"])
    head.add_row(Text("counts"), Text(result.counts().text()))  # the words of `runs list`, JSON and HTML
    emit(out, head, out.width)
    out.print()
    print_result(out, result, duration_s=run.get("duration_s"), drafts=True)


def print_retriage(out: Console, changes: list[_store.RetriageChange]) -> None:
    from rich.text import Text  # noqa: PLC0415

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
