"""One scan as the CLI runs it: inputs -> scan -> (optionally) the store, with the byte sinks wired in.

Kept out of the CLI so that the library offers the same behaviour (`run_scan`) to other callers.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError
from .model import InputInfo, ScanResult
from .packs import PackSet
from .scan import OnFinding, RawSink, Warn, WarningLog, runs_in_parallel, scan_sources
from .sources import Source, discover


@dataclass
class StoreOptions:
    db: str | Path | None = None  # None: the default database (TRIAGE_DB or the user data directory)
    force: bool = False
    keep_log: bool = True
    dimensions: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScanOutcome:
    result: ScanResult
    sources: list[Source]
    run_id: int | None = None
    duplicate: bool = False
    duration_s: float = 0.0
    created: datetime | None = None  # when the scan started (UTC): the `created` of the JSON document and the store
    keeper: Any = None  # the LogKeeper: content hashes (and kept text) of the inputs


def run_scan(paths: Sequence[str], packs: PackSet, *, warn: Warn | None = None, jobs: int = 1,
             store: StoreOptions | None = None, on_finding: OnFinding | None = None,
             sinks: Sequence[RawSink] = (), prepare: Callable[[list[Source]], Sequence[RawSink]] | None = None,
             allow_empty: bool = False, keep_logs: bool = False) -> ScanOutcome:
    """Discover, scan and (when `store` is given) record the run in one transaction.

    `prepare` receives the discovered sources before any byte is read (e.g. to size a progress bar) and
    may return more sinks; `keep_logs` keeps the scanned text compressed even without a store (for a
    document that carries it, `scan --format json --embed-log`). A run with nothing to read (no input found, or only empty ones) is an
    `InputError` and is not stored, unless `allow_empty`: a CI gate must not pass on a log that never
    arrived.
    """
    started = time.perf_counter()
    created = datetime.now(timezone.utc).replace(microsecond=0)
    warnings = WarningLog(warn)
    sources = discover(list(paths), warnings)
    if not sources and not allow_empty:
        raise InputError(f"nothing to scan in {', '.join(paths)}: no log, report or config file",
                         hint="name the files to scan, or pass --allow-empty if that is expected")
    all_sinks = list(sinks) + list(prepare(sources) if prepare else [])
    from .store import LogKeeper

    # Hashes always (the JSON document carries them for `ingest`); kept text for the store or the document.
    keeper = LogKeeper(keep=keep_logs or (store is not None and store.keep_log))
    parallel = on_finding is None and not all_sinks and runs_in_parallel(sources, jobs)
    hashing = None
    if parallel:
        # The pool's workers cannot share the sink: the files are hashed (and kept) beside them, on a thread
        # whose sha256 and zstd calls release the GIL.
        hashing = threading.Thread(target=keeper.complete, args=(sources,), kwargs={"limited": True}, daemon=True)
        hashing.start()
    else:
        all_sinks.append(keeper.sink)
    from .outputs import chain_sinks

    result = scan_sources(packs, sources, warn=warnings, on_finding=on_finding, raw_sink=chain_sinks(*all_sinks),
                          jobs=jobs)
    if hashing is not None:
        hashing.join()
    keeper.complete(sources)
    _check_empty(result.run.inputs, warnings, allow_empty)
    result.warnings = warnings.messages
    outcome = ScanOutcome(result, sources, duration_s=time.perf_counter() - started, keeper=keeper, created=created)
    if store is not None:
        from .store import open_store

        db = open_store(store.db if store.db is not None else None, default=store.db is None)
        try:
            recorded = db.record_run(result, packs=packs, dimensions=store.dimensions, duration_s=outcome.duration_s,
                                     logs=keeper, force=store.force, created=created)
        finally:
            db.close()
        outcome.run_id, outcome.duplicate = recorded.run_id, recorded.duplicate
    return outcome


def _check_empty(inputs: Sequence[InputInfo], warn: Warn, allow_empty: bool) -> None:
    """Every input blank: an input error (unless allowed); some blank: a warning each."""
    blank = [i for i in inputs if i.blank]
    if inputs and len(blank) == len(inputs) and not allow_empty:
        unread = next((i for i in blank if i.unread), None)
        if unread is not None:  # fail closed: what could not be read is never a pass
            raise InputError(f"nothing readable in {unread.path}: {unread.unread}",
                             hint="check the file (or copy it again); the warnings above say how far it read")
        what = "standard input is empty" if [i.path for i in blank] == ["<stdin>"] else \
            f"{blank[0].path} is empty" if len(blank) == 1 else f"all {len(blank)} inputs are empty"
        stdin = " (`triage scan $LOG` with LOG unset reads stdin)" if blank[0].path == "<stdin>" else ""
        raise InputError(f"nothing to scan: {what}",
                         hint=f"check what writes the log{stdin}, or pass --allow-empty if an empty log is expected")
    for info in blank:
        warn(f"{info.path}: empty")
