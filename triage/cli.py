"""The command line: parse options, call the library, format the result. Nothing else lives here."""

from __future__ import annotations

import os
import re
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from . import __version__
from .display import one_line
from .errors import TriageError

if TYPE_CHECKING:
    from rich.console import Console as RichConsole

# Help in click's plain layout: at 80 columns Rich's boxed option table left ~22 columns for the text, and
# its help formatter costs more to import than the rest of `--help` together.
app = typer.Typer(
    help="Recognise known failures in Hailo DFC, Vivado/Vitis HLS, Vivado and hls4ml compile logs.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
)


class _Stderr:
    """The stderr console, created on first use (Rich is imported only by commands that print)."""

    _console: RichConsole | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console  # noqa: PLC0415

            type(self)._console = Console(stderr=True, highlight=False, soft_wrap=True)
        return getattr(self._console, name)


err: Any = _Stderr()


def load_packs(*args: Any, **kwargs: Any) -> Any:
    from .packs import load_packs as load  # noqa: PLC0415 - the loader imports the pack machinery

    return load(*args, **kwargs)


def Console(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - stands in for rich.console.Console
    from rich.console import Console as RichConsole  # noqa: PLC0415

    return RichConsole(*args, **kwargs)


class Format(str, Enum):
    text = "text"
    short = "short"
    json = "json"
    jsonl = "jsonl"
    junit = "junit"
    sarif = "sarif"
    github = "github"
    gitlab = "gitlab"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


PacksOpt = Annotated[Optional[list[Path]], typer.Option("--packs", help="Extra pack folder or file (repeatable); also TRIAGE_PACKS.")]


def _warn(message: str) -> None:
    err.print(f"warning: {one_line(message)}", markup=False, highlight=False)


def exit_code(result, fail_on: FailOn) -> int:  # type: ignore[no-untyped-def]
    """1 when a top-level finding is at or above `fail_on` (or the run failed with no explanation)."""
    if fail_on is FailOn.never:
        return 0
    from .model import SEVERITY_RANK

    threshold = SEVERITY_RANK[fail_on.value]
    if any(SEVERITY_RANK[f.severity] <= threshold for f in result.findings):
        return 1
    return 1 if result.run.status == "failed" else 0


@app.command()
def scan(
    paths: Annotated[Optional[list[str]], typer.Argument(help="Files, .gz files and folders; '-' reads stdin.")] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", metavar="FORMAT",
                                        help="text, short (one line per finding), json, jsonl, junit, sarif, "
                                             "github or gitlab (Code Quality).")] = Format.text,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the output to this file.")] = None,
    fail_on: Annotated[FailOn, typer.Option(metavar="LEVEL", help="Exit 1 when a finding is at or above this "
                                                                  "severity: error, warning, info or never.")] = FailOn.error,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Text output: only the closing line (and the exit code).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Text output: info, harmless and explained findings in full too.")] = False,
    packs: PacksOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help="Processes for several inputs (0: one per core).")] = 0,
    tee: Annotated[bool, typer.Option("--tee", help="Copy the input to stdout unchanged; findings to stderr as found.")] = False,
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write a per-run HTML report here.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="Run database (default: TRIAGE_DB or the user data dir).")] = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not record the run.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Record the run even if identical inputs were stored.")] = False,
    keep_log: Annotated[bool, typer.Option("--keep-log/--no-keep-log", help="Keep the scanned text (compressed) in the store.")] = True,
    embed_log: Annotated[bool, typer.Option("--embed-log", help="--format json: carry the scanned text (zstd, base64, first 50 MiB) so `ingest` can keep it for retriage.")] = False,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="Accept empty input (else: exit 2, nothing stored).")] = False,
    label: Annotated[Optional[str], typer.Option(help="Dimension: a label for this build (e.g. the job name).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Dimension: the model being compiled.")] = None,
    branch: Annotated[Optional[str], typer.Option(help="Dimension: branch (default from CI variables).")] = None,
    commit: Annotated[Optional[str], typer.Option(help="Dimension: commit (default from CI variables).")] = None,
    device: Annotated[Optional[str], typer.Option(help="Dimension: target device or part.")] = None,
) -> None:
    """Scan compile logs, reports and configs as one run; explain it.

    Files, .gz files and folders form one run; '-' reads stdin. Exit code: 0 when nothing at or above
    --fail-on was found, 1 when something was (or the run failed unexplained), 2 for a usage, pack or
    input error.
    """
    from .pipeline import StoreOptions, run_scan

    if not paths:
        if sys.stdin is None or sys.stdin.isatty():
            err.print("usage: triage scan [OPTIONS] PATH... (or pipe a log into `triage scan -`)", markup=False)
            raise typer.Exit(2)
        paths = ["-"]
    from .store import dimensions

    pack_set = load_packs(packs or [])
    dims = dimensions(label=label, model=model, branch=branch, commit=commit, device=device)
    store = None if no_store else StoreOptions(db=db, force=force, keep_log=keep_log, dimensions=dims)
    if embed_log and fmt is not Format.json:
        raise TriageError("--embed-log needs --format json", hint="the text travels inside the JSON document for `triage ingest`")
    streams = _Streams(fmt, output, tee, pack_set, dims, fail_on.value,
                       folders=any(p != "-" and Path(p).is_dir() for p in paths), quiet=quiet, verbose=verbose)
    if html is not None:
        from .files import check_writable

        check_writable(html, make_parents=True)
    streams.embed_log = embed_log
    try:
        outcome = run_scan(paths, pack_set, warn=_warn, jobs=_jobs(jobs), store=store,
                           on_finding=streams.finding_callback(), sinks=streams.sinks(), prepare=streams.prepare,
                           allow_empty=allow_empty, keep_logs=embed_log)
    except BaseException:
        streams.abort()
        raise
    finally:
        streams.stop_progress()
    streams.finish(outcome)
    if html is not None:
        from .report import write_result_report

        write_result_report(outcome.result, html, dimensions=store.dimensions if store else None)
        err.print(f"report: {one_line(str(html))}", markup=False)
    raise typer.Exit(exit_code(outcome.result, fail_on))


def _jobs(asked: int) -> int:
    """0 is one process per core; more than the cores is clamped to them (each process holds a compiled gate:
    `--jobs 200` once started 201 processes and 7.7 GB)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if asked > cores:
        _warn(f"--jobs {asked}: using {cores}, the cores this process may run on")
    return min(asked or cores, cores)


class _Streams:
    """Where the output goes: the chosen format at the end, or streamed (jsonl, --tee) while scanning."""

    def __init__(self, fmt: Format, output: Optional[Path], tee: bool, pack_set, dims: dict,  # type: ignore[no-untyped-def,type-arg]
                 fail_on: str, folders: bool, quiet: bool = False, verbose: bool = False) -> None:
        from contextlib import ExitStack

        from .files import check_writable, open_text

        self.fmt, self.output, self.tee, self.packs, self.dims = fmt, output, tee, pack_set, dims
        self.fail_on, self.folders, self.quiet, self.verbose = fail_on, folders, quiet, verbose
        self.handle = None
        self.streamer = None
        self.teer = None
        self.progress = None
        self.files = ExitStack()  # an --output file replaces its target only when the run completes
        if output is not None:
            check_writable(output)  # before the scan, not after it
        if fmt is Format.jsonl:
            from .outputs import JsonlStream

            # never mix JSON Lines into the teed log on stdout
            self.handle = self.files.enter_context(open_text(output)) if output else (sys.stderr if tee else sys.stdout)
            self.streamer = JsonlStream(self.handle)
        if tee:
            from .outputs import TeeWriter

            self.teer = TeeWriter(sys.stdout.buffer, sys.stderr)

    def sinks(self) -> list:  # type: ignore[type-arg]
        return [self.teer.sink] if self.teer else []

    def finding_callback(self):  # type: ignore[no-untyped-def]
        """None unless findings are streamed: a callback keeps the scan in one process."""
        return self.on_finding if (self.teer or self.streamer) else None

    def on_finding(self, cause, evidence) -> None:  # type: ignore[no-untyped-def]
        if self.teer:
            self.teer.on_finding(cause, evidence)
        if self.streamer:
            self.streamer.on_finding(cause, evidence)

    def prepare(self, sources) -> list:  # type: ignore[no-untyped-def,type-arg]
        from .outputs import progress_for

        self.progress = progress_for(sources, stderr_is_tty=sys.stderr.isatty(), tee=self.tee, folders=self.folders,
                                     console=err)
        self.progress.__enter__()
        return [self.progress.sink] if self.progress.active else []

    def stop_progress(self) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)
            self.progress = None

    def abort(self) -> None:
        """The run failed: a partly written --output file is removed, the previous one kept."""
        self.files.__exit__(RuntimeError, RuntimeError("aborted"), None)

    def finish(self, outcome) -> None:  # type: ignore[no-untyped-def]
        result = outcome.result
        if self.streamer is not None:
            self.streamer.finish(result)
            self.files.close()
            return
        if self.fmt in (Format.text, Format.short):
            import io

            from .console import print_result, print_short, print_summary

            buffer = io.StringIO() if self.output else None  # an --output file is written whole, or not at all
            console = Console(stderr=self.tee, highlight=False, soft_wrap=False, file=buffer)
            note = None
            if outcome.run_id is not None:
                note = f"run {outcome.run_id} {'already stored' if outcome.duplicate else 'stored'}"
            # with --tee the short lines went out as the findings were found
            short = print_summary if self.tee else print_short
            show = print_summary if self.quiet else short if self.fmt is Format.short else print_result
            extra = {"verbose": self.verbose} if show is print_result else {}
            show(console, result, duration_s=outcome.duration_s, note=note, **extra)
            if buffer is not None:
                from .files import write_text

                write_text(self.output, buffer.getvalue())
            return
        if self.fmt is Format.json:  # the documented contract, plus what `triage ingest` needs elsewhere
            import json

            from .store import scan_document

            doc = scan_document(result, dimensions=self.dims, packs=self.packs, keeper=outcome.keeper,
                                duration_s=outcome.duration_s, created=outcome.created,
                                embed_logs=getattr(self, "embed_log", False))
            text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
        else:
            from .outputs import render

            text = render(result, self.fmt.value, self.packs, fail_on=self.fail_on)
        if self.output:
            from .files import write_text

            write_text(self.output, text)
        elif self.tee:
            sys.stderr.write(text)
        else:
            sys.stdout.write(text)


from .cli_report import nightly, report  # noqa: E402
from .cli_store import ingest as ingest_command  # noqa: E402
from .cli_store import retriage as retriage_command  # noqa: E402
from .cli_store import runs_app  # noqa: E402

app.command()(report)
app.command()(nightly)
app.add_typer(runs_app, name="runs")
app.command("ingest")(ingest_command)
app.command("retriage")(retriage_command)

packs_app = typer.Typer(help="Check and list pattern packs.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(packs_app, name="packs")


@packs_app.command("check")
def packs_check(packs: PacksOpt = None) -> None:
    """Load and validate every pack; exit 2 on the first error.

    Checks the schema, every regex and every example of every pack, the built-in ones included.
    """
    pack_set = load_packs(packs or [], check=True)
    print(f"{len(pack_set.causes)} causes in {len(pack_set.files)} packs: OK")


@packs_app.command("test")
def packs_test(
    packs: PacksOpt = None,
    fixtures: Annotated[Path, typer.Option(help="Folder of fixtures with *.expected.yaml goldens.")] = Path("fixtures"),
    update_goldens: Annotated[bool, typer.Option("--update-goldens", help="Rewrite goldens from the current result.")] = False,
    against_db: Annotated[bool, typer.Option("--against-db", help="Also re-classify the stored runs of the last 90 days "
                                                                   "(kept logs) and report what changes.")] = False,
    db: Annotated[Optional[Path], typer.Option("--db", help="With --against-db: the run database.")] = None,
) -> None:
    """Run every example and every fixture golden; exit 1 on a mismatch.

    With --against-db, also backtest the packs on the stored runs: each changed cause's hits on failed and
    passed runs in the last 30 and 90 days, the runs newly explained, and the causes reported today that
    would be hidden.
    """
    from .console import print_packs_test
    from .goldens import test_goldens

    from .packs import pack_files

    pack_set = load_packs(packs or [], check=True)
    report = test_goldens(pack_set, fixtures, update=update_goldens)
    console = Console(highlight=False)
    mine = {p.name for p in pack_files(packs or [])}
    focus = sorted(cid for cid, c in pack_set.causes.items() if c.source.rsplit(":", 1)[0] in mine)
    print_packs_test(console, pack_set, report, only=set(focus) if packs else None)
    if against_db:
        from .backtest import backtest
        from .console import print_backtest
        from .store import default_db_path, open_store

        with open_store(db or default_db_path(), create=False) as store:
            bt = backtest(store, pack_set, focus)
        console.print()
        print_backtest(console, bt, sorted(set(focus) | set(bt.changed_causes())))
    raise typer.Exit(1 if report.failures or report.uncovered else 0)


@packs_app.command("eval")
def packs_eval(
    packs: PacksOpt = None,
    cases: Annotated[Path, typer.Option(help="Folder of held-back cases with a cases.yaml.")] = Path("fixtures/heldback"),
    only: Annotated[bool, typer.Option("--only", help="Use only the --packs given, not the built-in packs.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    list_wrong: Annotated[bool, typer.Option(
        "--list-wrong", help="Also list the cases triage gets wrong and what it found (to audit the measure; "
                             "knowledge written from them no longer counts as held back).")] = False,
) -> None:
    """Score the knowledge on held-back real cases (fixtures/heldback/)."""
    from .evaluate import evaluate

    report = evaluate(load_packs(packs or [], builtin=not only), cases)
    if as_json:
        _print_json(report.to_dict())
        return
    from .console import print_eval

    print_eval(Console(highlight=False), report, list_wrong=list_wrong)


@packs_app.command("list")
def packs_list(
    tool: Annotated[Optional[str], typer.Option(help="Only causes of this tool (dfc, hls, vivado, hls4ml, ...).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    packs: PacksOpt = None,
) -> None:
    """List the known causes: id, severity, tool, title."""
    from .kb import list_causes

    pack_set = load_packs(packs or [])
    from .packs import TOOLS

    known = sorted(set(TOOLS) | {c.id.split("/", 1)[0] for c in pack_set.causes.values()})
    if tool is not None and tool not in known:
        raise TriageError(f"invalid value for '--tool': {tool!r} is not a tool or namespace of the packs",
                          where="triage packs list", hint=f"one of {', '.join(known)}")
    causes = list_causes(pack_set, tool)
    if as_json:
        _print_json([{"id": c.id, "severity": c.severity, "tool": c.tool, "title": c.title, "versions": c.versions,
                      "pack": c.pack} for c in causes])
        return
    from .console import print_cause_table

    print_cause_table(Console(highlight=False), causes)


kb_app = typer.Typer(help="Look up the knowledge base without a log.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(kb_app, name="kb")


@kb_app.command("show")
def kb_show(
    cause_id: Annotated[str, typer.Argument(help="A cause id, e.g. dfc/perf-flow-manual-resources.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    packs: PacksOpt = None,
) -> None:
    """Show one whole entry of the knowledge base.

    Cause, workaround, versions, references, signatures and examples.
    """
    pack_set = load_packs(packs or [])
    cause = pack_set.causes.get(cause_id)
    if cause is None:
        from .kb import closest_ids

        raise TriageError(f"no cause with id {cause_id}", hint=closest_ids(pack_set, cause_id))
    if as_json:
        _print_json(cause.to_dict())
        return
    from .console import print_cause

    print_cause(Console(highlight=False), cause)


@kb_app.command("search")
def kb_search(
    query: Annotated[str, typer.Argument(help="Words or a pasted message; quotes, brackets, colons and hyphens are fine.")],
    limit: Annotated[int, typer.Option(min=1, max=1000, help="At most this many results.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    packs: PacksOpt = None,
) -> None:
    """Full-text search of the knowledge base, best match first."""
    from .kb import search_packs

    if not query.strip():
        raise TriageError("nothing to search for: the query is empty", hint="give words or a pasted message")
    rows = search_packs(packs or [], query, limit)  # the cached index of these packs, without loading them
    if as_json:
        _print_json([{k: r.get(k) for k in ("id", "severity", "tool", "title", "versions", "rank")} for r in rows])
        return
    from .console import print_search

    print_search(Console(highlight=False), query, rows)
    raise typer.Exit(0 if rows else 1)


from .cli_draft import draft as draft_command  # noqa: E402

kb_app.command("draft")(draft_command)


@kb_app.command("index")
def kb_index(packs: PacksOpt = None) -> None:
    """Print the Markdown index of all known causes.

    docs/causes.md is this output.
    """
    from .kb import causes_index_markdown

    sys.stdout.write(causes_index_markdown(load_packs(packs or [])))


@app.command()
def explain(
    text: Annotated[str, typer.Argument(help="A pasted log line (or several); '-' reads stdin.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    packs: PacksOpt = None,
) -> None:
    """Explain a pasted line, or show the closest known causes.

    Prints every cause whose signature matches the text, or the closest known ones when none does.
    """
    from .kb import explain as explain_text

    if text == "-":
        if sys.stdin is None or sys.stdin.buffer.closed:
            raise TriageError("cannot read standard input: it is closed", hint="give the line as an argument")
        text = sys.stdin.buffer.read(1 << 20).decode("utf-8", "replace")  # a pasted line or several, not a log
    if not text.strip():
        raise TriageError("nothing to explain: the text is empty",
                          hint="paste a log line in quotes, or pipe lines to `triage explain -`")
    result = explain_text(text, load_packs(packs or []))
    if as_json:
        _print_json(result.to_dict())
        return
    from .console import print_explanation

    print_explanation(Console(highlight=False), result)
    raise typer.Exit(0 if result.result.findings else 1)


def _print_json(data: object) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _version_callback(value: bool) -> None:
    if value:
        print(f"triage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version.")] = False,
) -> None:
    """triage: known causes and workarounds for accelerator compile logs."""


def app_for(args: list[str]) -> typer.Typer:
    """The app with only the command (or sub-app, and within it the command) `args` name: Typer turns every
    registered command's signature into parameters on every start, which costs more than a short command
    itself. The help of a group, `--version` and an unknown command (its "did you mean") get the whole
    group."""
    return _slim(app, args)


def _slim(group: typer.Typer, args: list[str]) -> typer.Typer:
    name = args[0] if args else ""
    if name.startswith("-") or not name:
        return group
    from typer.main import get_command_name  # noqa: PLC0415

    commands = [c for c in group.registered_commands
                if (c.name or get_command_name(c.callback.__name__ if c.callback else "")) == name]
    groups = [g for g in group.registered_groups if g.name == name]
    if not commands and not groups:
        return group
    import copy  # noqa: PLC0415

    inner = []
    for info in groups:
        info = copy.copy(info)
        if info.typer_instance is not None:
            info.typer_instance = _slim(info.typer_instance, args[1:])
        inner.append(info)
    slim = copy.copy(group)
    slim.registered_commands, slim.registered_groups = commands, inner
    return slim


def main() -> None:
    """Entry point: one place turns a `TriageError` into a one-line message and exit code 2."""
    try:
        code = app_for(sys.argv[1:])(standalone_mode=False)  # returns the exit code instead of raising it
        sys.exit(code if isinstance(code, int) else 0)
    except TriageError as exc:
        err.print(exc.render(), markup=False, highlight=False)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(130 if sys.exc_info()[0] is KeyboardInterrupt else 0)
    except Exception as exc:  # the argument parser's errors arrive here in non-standalone mode
        if exc.__class__.__name__ == "Abort":
            sys.exit(130)
        sqlite3 = sys.modules.get("sqlite3")  # imported only by commands that open a database
        if sqlite3 is not None and isinstance(exc, sqlite3.Error):  # a report's query met a corrupt database
            from .store import store_error

            err.print(store_error(exc).render(), markup=False, highlight=False)
            sys.exit(2)
        if exc.__class__.__name__ == "NoArgsIsHelpError":  # `triage kb`: the group's help is the answer
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        if not (callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code")):
            raise  # a bug: its traceback is the report
        # typer >= 0.28 carries its own copy of click: its errors are matched by shape, not by class
        err.print(_click_error(exc).render(), markup=False, highlight=False)
        sys.exit(2)


def _click_error(exc: Exception) -> TriageError:
    """`Error: No such command 'scna'. Did you mean 'scan'?` -> `error: no such command 'scna'` with the
    suggestion and the command's `--help` as the hint, the command as where."""
    message = exc.format_message().strip()  # type: ignore[attr-defined]
    suggestion = ""
    found = re.search(r"\s*(?:Did you mean (?P<mean>.+?)\?|\(Possible options: (?P<options>[^)]*)\))\s*$", message, re.S)
    if found:
        message = message[: found.start()].strip()
        suggestion = f"did you mean {found['mean']}? " if found["mean"] else f"did you mean {found['options']}? "
    message = message.rstrip(".")
    message = message[:1].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "triage"
    what = "commands" if ctx is None or getattr(ctx.command, "commands", None) else "options"
    return TriageError(message, where=command, hint=f"{suggestion}`{command} --help` lists the {what}")


if __name__ == "__main__":  # pragma: no cover
    main()
