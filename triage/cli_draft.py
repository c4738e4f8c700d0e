"""`triage kb draft`: from an unexplained error line to a drafted, backtested pack entry.

Registered by `triage.cli` as `kb draft`. Parses options, calls `triage.draft` and `triage.backtest`, and
prints what it wrote through `triage.console`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import TriageError

DRAFTS = Path("triage-drafts")


def draft(
    fingerprint: Annotated[Optional[str], typer.Argument(
        help="Fingerprint of an unexplained line, as the nightly page and `runs show` give it.")] = None,
    run_id: Annotated[Optional[int], typer.Option("--run", metavar="ID", help="A stored run: draft from its unexplained line.")] = None,
    line: Annotated[Optional[int], typer.Option("--line", metavar="N", help="With --run: the line number of that line.")] = None,
    path: Annotated[Optional[str], typer.Option("--path", help="With --run: the input the line is in (when several).")] = None,
    text: Annotated[Optional[str], typer.Option("--text", help="A pasted line to draft from instead ('-' reads stdin).")] = None,
    tool: Annotated[Optional[str], typer.Option(help="With --text: the tool (dfc, vitis_hls, vivado, ...) for the id; "
                                                                "else read from the text.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the draft, not loaded until given with --packs.")] = DRAFTS,
    force: Annotated[bool, typer.Option("--force", help="Replace a draft with the same id.")] = False,
    show: Annotated[bool, typer.Option("--print", help="Print the drafted YAML instead of writing files.")] = False,
    db: Annotated[Optional[Path], typer.Option("--db", help="Run database (default: TRIAGE_DB or the user data dir).")] = None,
    packs: Annotated[Optional[list[Path]], typer.Option("--packs", help="Extra pack folder or file (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the draft and its backtest as JSON.")] = False,
) -> None:
    """Draft a pack entry from an unexplained error line.

    The regex keys on the line's message id and stable words, with numbers, paths, names, hex and temp
    dirs as named captures; every stored line with its fingerprint is a match example, the closest lines of
    passed runs are no_match examples. Before it is written, the draft is backtested on the stored runs:
    hits on failed and passed runs in the last 30 and 90 days, runs it newly explains, causes it would hide.
    """
    from .backtest import backtest
    from .draft import draft_from_store, draft_from_text, header_lines, with_draft, write_draft
    from .packs import load_packs
    from .store import default_db_path, open_store

    if sum(x is not None for x in (fingerprint, run_id, text)) != 1:
        raise TriageError("give one of: a fingerprint, --run ID (with --line N), or --text",
                          hint="`triage runs show ID` lists a run's unexplained lines and their fingerprints")
    pack_set = load_packs(packs or [])
    db_path = db or default_db_path()
    store = open_store(db_path, create=False) if text is None or db_path.exists() else None
    try:
        if text is not None:
            d = draft_from_text(sys.stdin.read() if text == "-" else text, pack_set, tool=tool)
        else:
            d = draft_from_store(store, pack_set, fingerprint_=fingerprint, run_id=run_id, line=line, path=path)
        bt = backtest(store, with_draft(pack_set, d), [d.cause_id], baseline=pack_set, prefilter=True) \
            if store is not None else None
    finally:
        if store is not None:
            store.close()
    header = header_lines(d, bt)
    if show:
        sys.stdout.write(d.to_yaml(header))
        return
    files = write_draft(d, out, pack_set, header, force=force)
    if as_json:
        sys.stdout.write(json.dumps({"id": d.cause_id, "regex": d.regex, "files": [str(f) for f in files],
                                     "match": d.match, "no_match": d.no_match,
                                     "backtest": bt.to_dict() if bt else None}, indent=2) + "\n")
        return
    from .console import print_draft

    from rich.console import Console  # noqa: PLC0415 - `triage --help` registers this command without Rich

    print_draft(Console(highlight=False), d, files, bt, out)
