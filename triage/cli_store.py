"""Commands over the run database: `runs list`, `runs show`, `ingest`, `retriage`.

Each command opens the store, calls one or two library methods and formats the result. Log text
reaches the terminal only as Rich `Text`, never as markup.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from . import store as _store
else:  # imported on first use: `triage --help` registers these commands without loading the store
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

STATUS_STYLE = {"failed": "bold red", "passed": "green"}

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
    tool: Annotated[Optional[str], typer.Option(help="Only runs of this tool (dfc, vitis_hls, vivado, ...).")] = None,
    status: Annotated[Optional[str], typer.Option(help="Only runs with this status (failed, passed, unknown).")] = None,
    label: Annotated[Optional[str], typer.Option(help="Only runs with this label.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many runs, newest first (0: all).")] = 50,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List stored runs, newest first."""
    with _store.open_store(_db(db), create=False) as store:
        rows = store.iter_runs(since=since, tool=tool, status=status, label=label, limit=limit or None)
        if as_json:
            _dump_stream(rows)
        else:
            print_runs(_out(), rows)


@runs_app.command("show")
def runs_show(
    run_id: Annotated[int, typer.Argument(metavar="ID", help="Run id (see `triage runs list`).")],
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
    """Store scan results made elsewhere (by CI jobs, for instance) in the run database."""
    from rich.text import Text  # noqa: PLC0415

    outcomes: list[tuple[Path, _store.RecordOutcome]] = []
    with _store.open_store(_db(db)) as store:
        for path in files:
            outcomes.append((path, store.ingest_file(path, force=force)))
    if as_json:
        _dump([{"file": str(p), "run_id": o.run_id, "duplicate": o.duplicate} for p, o in outcomes])
        return
    out = _out()
    for path, o in outcomes:
        line = Text(f"{path}: ")
        line.append(f"run {o.run_id}", style="bold")
        line.append(" (already stored)" if o.duplicate else " stored", style="dim" if o.duplicate else "green")
        out.print(line)


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


RUNS_PER_TABLE = 500  # rows printed at a time: a long history streams instead of being laid out whole
RUN_COLUMNS = ("id", "created", "label", "tool", "status", "findings", "top finding")


def print_runs(out: Console, rows: Iterable[dict[str, Any]]) -> None:
    """The runs as aligned columns, printed RUNS_PER_TABLE rows at a time with the first slice's column
    widths (a longer cell pushes its line, never clipped): a Rich table lays out every cell of every row,
    about a millisecond a row, and holds them all; this streams a history of any length."""
    from rich.text import Text  # noqa: PLC0415

    widths: list[int] | None = None
    printed = 0
    for chunk in _chunks(rows, RUNS_PER_TABLE):
        cells = [_run_cells(r) for r in chunk]
        if widths is None:
            widths = [max([len(name)] + [len(c[0]) for c in col]) for name, col in zip(RUN_COLUMNS, zip(*cells))]
            out.print(_run_line([(name, "bold") for name in RUN_COLUMNS], widths), soft_wrap=True)
        block = Text("\n").join(_run_line(row, widths) for row in cells)
        out.print(block, soft_wrap=True)
        printed += len(cells)
    if not printed:
        out.print("no runs stored yet", style="dim")


def _run_cells(r: dict[str, Any]) -> list[tuple[str, str]]:
    """(text, style) of each column of one run."""
    tool = (r["tool"] or "") + (f" {r['tool_version']}" if r.get("tool_version") else "")
    counts = f"{r['errors']}E {r['warnings']}W" if r["findings"] else "0"
    status = r["status"] or ""
    return [(str(r["id"]), ""), (r["created"] or "", ""), (r.get("label") or "", ""), (tool, ""),
            (status, STATUS_STYLE.get(status, "dim")), (counts, ""), (r.get("top") or "", "")]


def _run_line(cells: list[tuple[str, str]], widths: list[int]) -> Any:
    from rich.text import Text  # noqa: PLC0415

    line = Text()
    for i, ((text, style), width, name) in enumerate(zip(cells, widths, RUN_COLUMNS)):
        padded = text.rjust(width) if name in ("id", "findings") else text.ljust(width)
        line.append(padded, style=style or None)
        if i < len(cells) - 1:
            line.append("  ")
    line.rstrip()
    return line


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
    from rich.text import Text  # noqa: PLC0415

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
