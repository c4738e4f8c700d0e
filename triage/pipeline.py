"""One scan as the CLI runs it: inputs -> scan -> (optionally) the store, with the byte sinks wired in.

Kept out of the CLI so that the library offers the same behaviour (`run_scan`) to other callers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    keeper: Any = None  # the LogKeeper: content hashes (and kept text) of the inputs


def run_scan(paths: Sequence[str], packs: PackSet, *, warn: Warn | None = None, jobs: int = 1,
             store: StoreOptions | None = None, on_finding: OnFinding | None = None,
             sinks: Sequence[RawSink] = (), prepare: Callable[[list[Source]], Sequence[RawSink]] | None = None) -> ScanOutcome:
    """Discover, scan and (when `store` is given) record the run in one transaction.

    `prepare` receives the discovered sources before any byte is read (e.g. to size a progress bar) and
    may return more sinks.
    """
    started = time.perf_counter()
    warnings = WarningLog(warn)
    sources = discover(list(paths), warnings)
    all_sinks = list(sinks) + list(prepare(sources) if prepare else [])
    from .store import LogKeeper

    # Hashes always (the JSON document carries them for `ingest`); kept text only for the store.
    keeper = LogKeeper(keep=store is not None and store.keep_log)
    parallel = on_finding is None and not all_sinks and runs_in_parallel(sources, jobs)
    hashing = None
    if parallel:
        # The pool's workers cannot share the sink: the files are hashed (and kept) beside them, on a thread
        # whose sha256 and zstd calls release the GIL.
        inputs = [InputInfo(s.display, s.kind, 0) for s in sources]
        hashing = threading.Thread(target=keeper.complete, args=(inputs,), daemon=True)
        hashing.start()
    else:
        all_sinks.append(keeper.sink)
    from .outputs import chain_sinks

    result = scan_sources(packs, sources, warn=warnings, on_finding=on_finding, raw_sink=chain_sinks(*all_sinks),
                          jobs=jobs)
    if hashing is not None:
        hashing.join()
    keeper.complete(result.run.inputs)
    result.warnings = warnings.messages
    outcome = ScanOutcome(result, sources, duration_s=time.perf_counter() - started, keeper=keeper)
    if store is not None:
        from .store import open_store

        db = open_store(store.db if store.db is not None else None, default=store.db is None)
        try:
            recorded = db.record_run(result, packs=packs, dimensions=store.dimensions, duration_s=outcome.duration_s,
                                     logs=keeper, force=store.force)
        finally:
            db.close()
        outcome.run_id, outcome.duplicate = recorded.run_id, recorded.duplicate
    return outcome
