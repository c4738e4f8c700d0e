"""`triage report` and `triage nightly`: parse options, call `triage.report`, say where the file went.

Registered as top-level commands by `triage.cli` (`app.command()(report)`, `app.command()(nightly)`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .display import one_line
from .errors import TriageError

DbOpt = Annotated[Optional[Path], typer.Option("--db", help="Run database (default: TRIAGE_DB or the user data folder).")]
MAX_ID = (1 << 63) - 1  # SQLite's largest integer: a longer id is a usage error, not an overflow
JsonOpt = Annotated[bool, typer.Option("--json", help="Print what was written as JSON.")]


def _open(db: Optional[Path]):  # type: ignore[no-untyped-def]
    from .store import default_db_path, open_store

    return open_store(db or default_db_path(), create=False)


def _done(as_json: bool, data: dict[str, object]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        for key, value in data.items():
            if key.endswith("path"):
                print(f"wrote {one_line(str(value))}")


def report(
    run_id: Annotated[Optional[int], typer.Argument(min=1, max=MAX_ID, help="Id of a stored run (see `triage runs list`).")] = None,
    last: Annotated[bool, typer.Option("--last", help="Report the most recently stored run.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="HTML file to write (default: reports/run-ID.html).")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write the self-contained HTML report of one stored run."""
    from .report import write_run_report

    if (run_id is None) == (not last):
        raise TriageError("give a run id or --last (one of them)", hint="`triage runs list` shows the stored runs")
    with _open(db) as store:
        rid = store.last_run_id() if last else run_id
        if rid is None:
            raise TriageError("the run database has no runs yet", hint="scan something first: `triage scan LOG`")
        path = write_run_report(store, rid, out or Path("reports") / f"run-{rid}.html")
    _done(as_json, {"run_id": rid, "path": str(path)})


def nightly(
    since: Annotated[Optional[str], typer.Option("--since", help="Period ending now: 24h, 7d, 90m, 2w (default 24h).")] = None,
    date: Annotated[Optional[str], typer.Option("--date", help="A whole UTC day instead: YYYY-MM-DD.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the page (nightly-DATE.html, nightly-DATE-7d.html, ...) and index.html.")] = Path("reports"),
    periods: Annotated[int, typer.Option("--periods", min=1, max=366, help="Periods in each cause's trend.")] = 10,
    db: DbOpt = None,
    packs: Annotated[Optional[list[Path]], typer.Option("--packs", help="Extra pack folder or file (repeatable); also TRIAGE_PACKS.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write the nightly HTML page over a period of stored runs.

    Also refreshes index.html in the same folder.
    """
    from .packs import load_packs
    from .report import write_nightly

    pack_set = load_packs(packs or [])
    with _open(db) as store:
        path = write_nightly(store, out, day=date, since=since, packs=pack_set, periods=periods)
    _done(as_json, {"path": str(path), "index_path": str(Path(out) / "index.html")})
