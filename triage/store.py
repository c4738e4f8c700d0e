"""Every run kept in SQLite (through sqlite-utils): embedded, safe under concurrent writers, re-triageable.

The schema is an ordered list of named migration functions, recorded in the `migrations` table and
applied on open; a shipped migration is never edited, a change is a new migration at the end. Table
and view names are meant to be read as they are (`datasette triage.db`, `sqlite-utils query`).

Writes are single `BEGIN IMMEDIATE` transactions (sqlite-utils' own calls nest inside them as
savepoints), so a crash or `kill -9` leaves either the whole run or nothing. The database is in WAL
mode with a busy timeout, and a write that still finds the database locked is retried with backoff.

Recording a scan is the one write on the path of every `triage scan`, and importing sqlite-utils costs about
80 ms there (a third of a short scan's start-up): its plain row inserts and lookups go through the standard
library's connection, and the sqlite-utils wrapper is built on first use (schema, migrations, the knowledge
base's tables and FTS index, the team commands' reads).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import os
import platform  # imported by the CLI anyway; socket is not
import queue
import re
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

if TYPE_CHECKING:  # imported where a database is opened: `scan --no-store` never pays for it
    from sqlite_utils import Database

from .display import shown_path
from .errors import InputError, StoreError, TriageError
from .configs import Fact
from .fingerprint import normalise
from .formats import result_dict
from .metrics import Metric
from .model import Counts, Evidence, Finding, InputInfo, RunInfo, ScanResult, Unexplained
from .packs import PackSet
from .sources import Source, open_binary

T = TypeVar("T")

DEFAULT_LOG_CAP = 50 * 1024 * 1024
BUSY_TIMEOUT_S = 10.0
RETRY_BUDGET_S = 120.0
DIMENSIONS = ("label", "model", "branch", "commit", "host", "device")
METRIC_COLUMNS = ("path", "line", "resource", "scope", "used", "available", "percent", "unit", "kind")
STDIN_NAME = "<stdin>"
LAST_OPENED: str | None = None  # the database a command opened last


# ---------------------------------------------------------------------------------------------------------
# Migrations: append only. Each receives the sqlite-utils Database inside the open transaction.

Migration = Callable[["Database"], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def _migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@_migration
def m001_runs_and_inputs(db: Database) -> None:
    db["runs"].create({
        "id": int, "created": str, "input_hash": str, "tool": str, "tool_version": str, "phase": str,
        "part": str, "status": str, "label": str, "model": str, "branch": str, "commit": str, "host": str,
        "device": str, "packs_digest": str, "duration_s": float, "result_json": str,
    }, pk="id")
    db["runs"].create_index(["input_hash"])
    db["runs"].create_index(["created"])
    db["runs"].create_index(["label", "created"])
    db["inputs"].create({
        "run_id": int, "path": str, "kind": str, "lines": int, "bytes": int, "sha256": str, "log": bytes,
        "log_truncated": int,
    }, foreign_keys=[("run_id", "runs", "id")])
    db["inputs"].create_index(["run_id"])


@_migration
def m002_findings_and_evidence(db: Database) -> None:
    db["findings"].create({
        "run_id": int, "cause_id": str, "severity": str, "title": str, "count": int, "parent_cause_id": str,
        "first_path": str, "first_line": int,
    }, foreign_keys=[("run_id", "runs", "id")])
    db["findings"].create_index(["run_id"])
    db["findings"].create_index(["cause_id"])
    db["evidence"].create({
        "run_id": int, "cause_id": str, "path": str, "line": int, "text": str, "before": str, "after": str,
        "captures": str,
    }, foreign_keys=[("run_id", "runs", "id")])
    db["evidence"].create_index(["run_id", "cause_id"])


@_migration
def m003_unexplained(db: Database) -> None:
    db["unexplained"].create({
        "run_id": int, "fingerprint": str, "normalised": str, "path": str, "line": int, "text": str, "count": int,
    }, foreign_keys=[("run_id", "runs", "id")])
    db["unexplained"].create_index(["run_id"])
    db["unexplained"].create_index(["fingerprint"])


@_migration
def m004_metrics(db: Database) -> None:
    db["metrics"].create({
        "run_id": int, "path": str, "resource": str, "scope": str, "used": float, "available": float,
        "percent": float, "kind": str,
    }, foreign_keys=[("run_id", "runs", "id")])
    db["metrics"].create_index(["run_id"])
    db["metrics"].create_index(["resource"])


@_migration
def m005_causes_with_fts(db: Database) -> None:
    db["causes"].create({
        "id": str, "title": str, "severity": str, "tool": str, "phase": str, "versions": str, "cause": str,
        "workaround": str, "references": str, "examples": str, "pack": str,
    }, pk="id")
    db["causes"].enable_fts(["title", "cause", "workaround", "examples"], create_triggers=True, tokenize="porter")
    db["meta"].create({"key": str, "value": str}, pk="key")


@_migration
def m006_views(db: Database) -> None:
    db.create_view("run_findings", """
        select findings.*, runs.created, runs.label, runs.tool, runs.status, runs.model, runs.branch, runs.device
        from findings join runs on runs.id = findings.run_id
    """.strip())
    db.create_view("latest_run_per_label", """
        select runs.* from runs
        where runs.label is not null and runs.id = (
            select latest.id from runs as latest where latest.label = runs.label
            order by latest.created desc, latest.id desc limit 1
        )
    """.strip())


@_migration
def m007_metrics_line_and_unit(db: Database) -> None:
    db["metrics"].add_column("line", int)
    db["metrics"].add_column("unit", str)


@_migration
def m008_generic_findings_and_advice(db: Database) -> None:
    db["findings"].add_column("generic", int, not_null_default=0)
    db["unexplained"].add_column("advice", str)
    db["unexplained"].add_column("message_id", str)


@_migration
def m009_documents_in_their_own_table(db: Database) -> None:
    """`runs.result_json` carried the whole scan document in every row (a listing of 100 runs read 400 KB);
    it moves to `documents`, one row per run."""
    db["documents"].create({"run_id": int, "document": str}, pk="run_id", foreign_keys=[("run_id", "runs", "id")])
    db.execute("insert into documents (run_id, document) select id, result_json from runs where result_json is not null")
    db.execute("update runs set result_json = null")


@_migration
def m010_signatures_and_cause_foreign_keys(db: Database) -> None:
    """The knowledge base in every run database: causes with their signatures, findings and evidence joined
    to them (`select f.cause_id, c.workaround from findings f join causes c on c.id = f.cause_id`)."""
    db["signatures"].create({"cause_id": str, "idx": int, "regex": str, "literals": str, "ignore_case": int},
                            pk=("cause_id", "idx"), foreign_keys=[("cause_id", "causes", "id")])
    db["causes"].add_column("generic", int, not_null_default=0)
    db["causes"].add_column("status", str)
    db.add_foreign_keys([("findings", "cause_id", "causes", "id"), ("evidence", "cause_id", "causes", "id")])


MIGRATION_NAMES = [name for name, _ in MIGRATIONS]


def apply_migrations(db: Database, upto: int | None = None) -> list[str]:
    """Apply the missing migrations among the first `upto` (all by default); return the names applied.

    Call inside a transaction. `upto` exists so tests can build every earlier schema version.
    """
    db["migrations"].create({"name": str, "applied": str}, pk="name", if_not_exists=True)
    done = {row["name"] for row in db["migrations"].rows}
    applied: list[str] = []
    for name, fn in MIGRATIONS[:upto]:
        if name in done:
            continue
        fn(db)
        db["migrations"].insert({"name": name, "applied": _iso(_utcnow())})
        applied.append(name)
    if applied and "meta" in db.table_names():  # which version's schema this is, for a later, older reader
        db["meta"].upsert({"key": "triage_version", "value": _version()}, pk="key")
    return applied


def _version() -> str:
    from . import __version__

    return __version__


# ---------------------------------------------------------------------------------------------------------
# Locations, dimensions, time


def default_db_path() -> Path:
    """`TRIAGE_DB` if set, else `triage.db` in the platform's user data folder."""
    env = os.environ.get("TRIAGE_DB")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("triage", appauthor=False)) / "triage.db"


# Well-known CI variables, first match wins: GitHub Actions, GitLab CI, Jenkins, generic.
def _jitter() -> float:
    """0 to 1, to spread the retries of writers waiting on one lock."""
    import random  # noqa: PLC0415 - only a writer that met a lock needs it

    return random.random()


CI_BRANCH = ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BRANCH_NAME", "GIT_BRANCH")
CI_COMMIT = ("GITHUB_SHA", "CI_COMMIT_SHA", "GIT_COMMIT")


def dimensions(label: str | None = None, model: str | None = None, branch: str | None = None,
               commit: str | None = None, device: str | None = None,
               env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The dimensions of a run: options first, then CI environment variables; host is this machine."""
    env = os.environ if env is None else env

    def first(names: Iterable[str]) -> str | None:
        for name in names:
            if env.get(name):
                return env[name]
        return None

    dims = {
        "label": label, "model": model, "branch": branch or first(CI_BRANCH), "commit": commit or first(CI_COMMIT),
        "host": platform.node() or None, "device": device,
    }
    # an argument that is not UTF-8 arrives with surrogates, which neither SQLite nor JSON can carry
    return {k: shown_path(v) if v is not None else None for k, v in dims.items()}


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


SINCE_RE = re.compile(r"^\s*(\d{1,15})\s*([smhdw])\s*$")
SINCE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str | datetime | None, now: datetime | None = None) -> str | None:
    """`24h`, `7d`, `2w`, `30m`, a date `2024-05-01` or an ISO date-time -> the ISO-8601 UTC cut-off."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return _iso(value)
    m = SINCE_RE.match(value)
    if m:
        try:
            return _iso((now or _utcnow()) - timedelta(**{SINCE_UNITS[m.group(2)]: int(m.group(1))}))
        except OverflowError:  # `99999999999d`: longer ago than datetime goes; every run is newer
            return _iso(datetime(1, 1, 1, tzinfo=timezone.utc))
    try:
        return _iso(datetime.fromisoformat(value.strip()))
    except (ValueError, OverflowError):
        raise TriageError(f"cannot read --since {value[:40]!r}",
                          hint="use a duration such as 24h, 7d, 2w or a date such as 2024-05-01") from None


# ---------------------------------------------------------------------------------------------------------
# Keeping the scanned bytes


# Kept logs are zstd (level 3: ~600 MB/s and ~11x on compile logs, against zlib level 1's ~190 MB/s and
# ~5x), so keeping a log barely slows a scan. Blobs stored by earlier versions are zlib; the first bytes tell.
KEPT_LEVEL = 3
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _packer() -> Any:
    import zstandard  # noqa: PLC0415 - only a scan that keeps its log needs it

    return zstandard.ZstdCompressor(level=KEPT_LEVEL).compressobj()


def unpack_log(blob: bytes) -> bytes:
    """The text of a kept log: zstd frames (this version), or zlib (stored by earlier versions)."""
    out = io.BytesIO()
    unpack_log_to(blob, out)
    return out.getvalue()


def unpack_log_to(blob: bytes, out: BinaryIO) -> None:
    """`unpack_log` into a file, a MiB at a time (a kept log may be 50 MiB of text)."""
    if blob.startswith(ZSTD_MAGIC):
        import zstandard  # noqa: PLC0415

        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob), read_across_frames=True) as reader:
            while chunk := reader.read(1 << 20):
                out.write(chunk)
        return
    inflate = zlib.decompressobj()
    data = memoryview(blob)
    for start in range(0, len(data), 1 << 20):
        out.write(inflate.decompress(data[start:start + (1 << 20)]))
    out.write(inflate.flush())


@dataclass
class _Kept:
    sha: Any = field(default_factory=hashlib.sha256)
    packer: Any = None  # the open zstd frame, created on the first kept byte
    chunks: list[bytes] = field(default_factory=list)
    raw_kept: int = 0
    truncated: bool = False
    keep: bool = True


class LogKeeper:
    """Receives every byte a scan reads (`sink` is a `triage.scan.RawSink`): a running sha256 of each
    source, and a zstd-compressed copy of its first `cap_bytes` bytes (`keep=False`: hash only)."""

    def __init__(self, cap_bytes: int = DEFAULT_LOG_CAP, keep: bool = True) -> None:
        self.cap_bytes = cap_bytes
        self.keep = keep and cap_bytes > 0  # cap 0 is `--no-keep-log`: hash only
        self._sources: dict[str, _Kept] = {}
        self._queue: queue.Queue[tuple[str, bytes] | None] | None = None
        self._worker: threading.Thread | None = None

    def _entry(self, name: str) -> _Kept:
        entry = self._sources.get(name)
        if entry is None:
            entry = self._sources[name] = _Kept(keep=self.keep)
        return entry

    def sink(self, source: Source, data: bytes) -> None:
        """Hash and compress on a second thread: sha256 and zstd release the GIL, so this costs the scan
        almost nothing on a machine with two cores. The queue is short, so memory stays bounded."""
        if self._queue is None:
            self._queue = queue.Queue(maxsize=8)
            self._worker = threading.Thread(target=self._work, args=(self._queue,), daemon=True)
            self._worker.start()
        self._queue.put((source.display, data))

    def _work(self, q: queue.Queue[tuple[str, bytes] | None]) -> None:
        while (item := q.get()) is not None:
            self.feed(*item)

    def drain(self) -> None:
        """Wait until every byte handed to `sink` is hashed and kept."""
        if self._queue is not None and self._worker is not None:
            self._queue.put(None)
            self._worker.join()
            self._queue, self._worker = None, None

    def feed(self, name: str, data: bytes) -> None:
        entry = self._entry(name)
        entry.sha.update(data)
        if not entry.keep or entry.truncated:
            return
        room = self.cap_bytes - entry.raw_kept
        part = data if len(data) <= room else data[:room]
        if part:
            if entry.packer is None:
                entry.packer = _packer()
            entry.chunks.append(entry.packer.compress(part))
            entry.raw_kept += len(part)
        if len(part) < len(data):
            entry.truncated = True

    def add_file(self, name: str, path: str, kind: str = "log", limit: int | None = None) -> None:
        """Read a file the scan did not pass through `sink` (e.g. scanned in a worker process): the same bytes
        the scan read, so as far as it could be read and no further than `limit` bytes of the file."""
        self._sources.pop(name, None)
        self._entry(name)
        with open_binary(Source(path, kind), limit=limit) as stream:
            while True:
                try:
                    chunk = stream.read1(1 << 20) if hasattr(stream, "read1") else stream.read(1 << 20)
                except (EOFError, OSError):
                    break
                if not chunk:
                    break
                self.feed(name, chunk)

    def seen(self, name: str) -> bool:
        self.drain()
        return name in self._sources

    def hashes(self) -> dict[str, str]:
        self.drain()
        return {name: e.sha.hexdigest() for name, e in self._sources.items()}

    def logs(self) -> dict[str, tuple[bytes | None, bool]]:
        """name -> (zstd-compressed bytes or None when not kept, truncated)."""
        self.drain()
        out: dict[str, tuple[bytes | None, bool]] = {}
        for name, e in self._sources.items():
            if not e.keep:
                out[name] = (None, False)
                continue
            if e.packer is None and not e.chunks:
                e.packer = _packer()  # an empty log is still one (empty) frame
            if e.packer is not None:  # close the frame; later bytes go to a new one (frames concatenate)
                e.chunks.append(e.packer.flush())
                e.packer = None
            out[name] = (b"".join(e.chunks), e.truncated)
        return out

    @classmethod
    def from_bytes(cls, logs: Mapping[str, bytes], cap_bytes: int = DEFAULT_LOG_CAP) -> LogKeeper:
        keeper = cls(cap_bytes)
        for name, data in logs.items():
            keeper.feed(name, data)
        return keeper

    def complete(self, inputs: Iterable[InputInfo | Source], *, limited: bool = False) -> None:
        """Hash (and keep) the file inputs the sink did not see; stdin cannot be read twice. A `Source` is read
        by its own path (a file name that is not UTF-8 is shown, and keyed, with replacement); `limited`: no
        further than the size it had when the scan found it, as a parallel scan reads it."""
        self.drain()
        for item in inputs:
            name = item.display if isinstance(item, Source) else item.path
            path = item.path if isinstance(item, Source) else item.path
            limit = item.size if limited and isinstance(item, Source) else None
            if not self.seen(name) and name != STDIN_NAME and path != "-" and os.path.isfile(path):
                try:
                    self.add_file(name, path, item.kind, limit=limit)
                except (OSError, InputError):
                    self._sources.pop(name, None)


# ---------------------------------------------------------------------------------------------------------
# Documents: a `scan --format json` result plus what the store needs


def scan_document(result: ScanResult, *, dimensions: Mapping[str, Any] | None = None, packs: PackSet | None = None,
                  duration_s: float | None = None, keeper: LogKeeper | None = None,
                  created: datetime | None = None, embed_logs: bool = False) -> dict[str, Any]:
    """The scan JSON document, with the run's dimensions, the inputs' sha256, the packs digest and timing.

    This is what `scan --format json` should print so that `ingest` on another machine round-trips.
    `embed_logs`: each input also carries its kept text as `log` (zstd frames, base64; the first 50 MiB),
    so the ingested run keeps its log and `retriage` can classify it again.
    """
    doc = result_dict(result)
    hashes = keeper.hashes() if keeper is not None else {}
    kept = keeper.logs() if keeper is not None and embed_logs else {}
    for item in doc["run"]["inputs"]:
        item["sha256"] = hashes.get(item["path"])
        blob, truncated = kept.get(item["path"], (None, False))
        if blob is not None:
            item["log"] = {"encoding": "zstd+base64", "data": base64.b64encode(blob).decode("ascii"),
                           "truncated": truncated}
    if dimensions is not None:
        doc["dimensions"] = {k: dimensions.get(k) for k in DIMENSIONS}
    if packs is not None:
        doc["packs_digest"] = packs.digest
    if duration_s is not None:
        doc["duration_s"] = round(duration_s, 3)
    if created is not None:
        doc["created"] = _iso(created)
    return doc


def result_from_doc(doc: Mapping[str, Any]) -> ScanResult:
    """Rebuild a `ScanResult` from a stored or ingested document (for rendering)."""
    run = doc.get("run") or {}

    def evidence(e: Mapping[str, Any]) -> Evidence:
        return Evidence(e.get("path", ""), int(e.get("line") or 0), e.get("text", ""), list(e.get("before") or []),
                        list(e.get("after") or []), dict(e.get("captures") or {}))

    def finding(f: Mapping[str, Any]) -> Finding:
        return Finding(
            id=f["id"], severity=f.get("severity", "info"), title=f.get("title", ""), cause=f.get("cause", ""),
            workaround=f.get("workaround", ""), references=list(f.get("references") or []),
            count=int(f.get("count") or 0), evidence=[evidence(e) for e in f.get("evidence") or []],
            tool=f.get("tool", ""), versions=f.get("versions"),
            explained=[finding(x) for x in f.get("explains") or []], generic=bool(f.get("generic")),
        )

    info = RunInfo(
        tool=run.get("tool") or "unknown", tool_version=run.get("tool_version"), phase=run.get("phase"),
        part=run.get("part"), status=run.get("status") or "unknown",
        inputs=[InputInfo(i.get("path", ""), i.get("kind", "log"), int(i.get("lines") or 0), int(i.get("bytes") or 0))
                for i in run.get("inputs") or []],
    )
    unexplained = [Unexplained(u.get("path", ""), int(u.get("line") or 0), u.get("text", ""), int(u.get("count") or 1),
                               u.get("fingerprint", ""), u.get("advice"), u.get("message_id"),
                               [str(k) for k in u.get("known_causes") or [] if isinstance(k, str)])
                   for u in doc.get("unexplained") or []]
    metric_fields = {f.name for f in fields(Metric)}
    metrics = [Metric(**{k: m.get(k) for k in metric_fields}) for m in doc.get("metrics") or []
               if isinstance(m, Mapping) and m.get("resource") is not None]
    facts = [Fact(str(f.get("source", "")), int(f.get("line") or 0), str(f.get("key", "")), str(f.get("value", "")),
                  str(f.get("context", ""))) for f in doc.get("facts") or [] if isinstance(f, Mapping)]
    return ScanResult(info, [finding(f) for f in doc.get("findings") or []], unexplained, list(doc.get("warnings") or []),
                      metrics=metrics, facts=facts)


def _flatten(findings: Iterable[Mapping[str, Any]], parent: str | None = None) -> Iterator[tuple[Mapping[str, Any], str | None]]:
    for f in findings:
        yield f, parent
        yield from _flatten(f.get("explains") or [], f["id"])


def _input_hash(doc: Mapping[str, Any]) -> str:
    inputs = doc["run"].get("inputs") or []
    hashes = [i.get("sha256") for i in inputs]
    if inputs and all(hashes):
        material = "inputs\n" + "\n".join(sorted(str(h) for h in hashes))
    else:  # no content hashes (an older document): the result itself identifies the run
        material = "result\n" + json.dumps({k: doc.get(k) for k in ("run", "findings", "unexplained")},
                                           sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------------------
# The store


@dataclass
class RecordOutcome:
    run_id: int
    duplicate: bool
    undated: bool = False  # an ingested document without `created`: dated by the ingest


@dataclass
class RetriageChange:
    run_id: int
    added: list[str]
    removed: list[str]
    status_before: str | None = None
    status_after: str | None = None
    skipped: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.status_before != self.status_after)


def _is_locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def store_error(exc: sqlite3.Error) -> StoreError:
    """A database error raised outside the store's own calls (a report's query), as the one-line error."""
    return _store_error(exc, shown_path(LAST_OPENED or "the run database"))


def _store_error(exc: sqlite3.Error, where: str) -> StoreError:
    text = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
    low = text.lower()
    if "full" in low:
        return StoreError("database or disk is full: the run was not stored", where=where,
                          hint="free some space, point --db or TRIAGE_DB elsewhere, or scan with --no-store")
    if "not a database" in low or "malformed" in low:
        return StoreError(f"not a usable triage database ({text})", where=where,
                          hint="point --db or TRIAGE_DB at another file")
    if "unable to open" in low or "readonly" in low or "read-only" in low:
        return StoreError(f"cannot open the run database for writing ({text})", where=where,
                          hint="check the folder exists and is writable, or use --db PATH")
    if _is_locked(exc):
        return StoreError(f"the run database stayed locked for {RETRY_BUDGET_S:.0f} s", where=where,
                          hint="another process holds a long write; try again")
    return StoreError(f"database error: {text}", where=where)


def _sql_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bytes)):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value.isoformat() if isinstance(value, datetime) else str(value)


class Store:
    """One run database. Create with `open_store()`; use as a context manager or call `close()`."""

    def __init__(self, conn: sqlite3.Connection, where: str) -> None:
        self.conn = conn
        self.where = where

    @functools.cached_property
    def db(self) -> Database:
        """The sqlite-utils wrapper of the connection, built the first time a command needs more than plain
        inserts and lookups (see the module's docstring)."""
        from sqlite_utils import Database

        # No sqlite-utils plugins: loading them scans every installed distribution's entry points (about
        # 28 ms) for hooks the store does not use.
        return Database(self.conn, execute_plugins=False)

    # -- plumbing -------------------------------------------------------------------------------------

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, fn: Callable[[], T]) -> T:
        """Run `fn` in one BEGIN IMMEDIATE transaction; retry the whole of it while the database is locked."""
        conn = self.conn
        delay = 0.02
        deadline = time.monotonic() + RETRY_BUDGET_S
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    out = fn()
                    conn.execute("COMMIT")
                    return out
                except BaseException:
                    if conn.in_transaction:
                        try:
                            conn.execute("ROLLBACK")
                        except sqlite3.Error:
                            pass
                    raise
            except sqlite3.OperationalError as exc:
                if _is_locked(exc) and time.monotonic() < deadline:
                    time.sleep(delay * (0.5 + _jitter()))
                    delay = min(delay * 2, 1.0)
                    continue
                raise _store_error(exc, self.where) from None
            except sqlite3.Error as exc:
                raise _store_error(exc, self.where) from None

    def _read(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except sqlite3.Error as exc:
            raise _store_error(exc, self.where) from None

    def _migrate(self) -> None:
        def pending() -> bool:
            if "migrations" not in self._tables():
                return True
            done = {name for (name,) in self.conn.execute("select name from migrations")}
            unknown = sorted(done - set(MIGRATION_NAMES))
            if unknown:  # a newer triage changed the schema: reading or writing it here could corrupt it
                made_by = self._meta("triage_version")
                raise StoreError(
                    f"this run database was created by triage {made_by or 'of a newer version'} (its schema has "
                    f"{', '.join(unknown[:3])}); this is triage {_version()}",
                    where=self.where, hint="upgrade triage to read it, or point --db / TRIAGE_DB at another database")
            return any(name not in done for name in MIGRATION_NAMES)

        if self._read(pending):
            self._write(lambda: apply_migrations(self.db))

    def _tables(self) -> set[str]:
        return {name for (name,) in self.conn.execute("select name from sqlite_master where type = 'table'")}

    def _meta(self, key: str) -> str | None:
        if "meta" not in self._tables():
            return None
        row = self.conn.execute("select value from meta where key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def _insert(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int | None:
        """Insert rows that share their keys (the table's columns) with one prepared statement; the rowid of
        the last one. Values as sqlite-utils would store them: containers as JSON, anything else unusual as text."""
        it = iter(rows)
        first = next(it, None)
        if first is None:
            return None
        columns = list(first)
        sql = (f"insert into [{table}] ({', '.join(f'[{c}]' for c in columns)}) "
               f"values ({', '.join('?' for _ in columns)})")
        cur = self.conn.cursor()
        cur.execute(sql, [_sql_value(first[c]) for c in columns])
        last = cur.lastrowid
        for row in it:
            cur.execute(sql, [_sql_value(row[c]) for c in columns])
            last = cur.lastrowid
        return last

    # -- writing --------------------------------------------------------------------------------------

    def record_run(self, result: ScanResult, *, packs: PackSet, dimensions: Mapping[str, Any], duration_s: float,
                   logs: LogKeeper | Mapping[str, bytes] | None = None, force: bool = False,
                   created: datetime | None = None) -> RecordOutcome:
        """Store a scan in one transaction. Identical inputs with the same dimensions are stored once
        (the existing id comes back with `duplicate=True`) unless `force`."""
        keeper = logs if isinstance(logs, LogKeeper) else LogKeeper.from_bytes(logs or {})
        keeper.complete(result.run.inputs)
        self.sync_causes(packs)  # the knowledge the findings refer to, written when the packs change
        created = created or _utcnow()
        doc = scan_document(result, dimensions=dimensions, packs=packs, duration_s=duration_s, keeper=keeper,
                            created=created)
        return self._record(doc, keeper.logs(), force=force, created=created)

    def ingest(self, doc: Mapping[str, Any], *, force: bool = False) -> RecordOutcome:
        """Store a document printed by `scan --format json` (possibly on another machine). It is checked
        against the JSON contract first: a document that does not hold to it stores nothing."""
        from .contract import check_document

        check_document(doc)
        doc = dict(doc)
        dims = doc.get("dimensions") if isinstance(doc.get("dimensions"), Mapping) else {}
        doc["dimensions"] = {k: (str(dims[k]) if dims.get(k) is not None else None) for k in DIMENSIONS}
        created = None
        if doc.get("created") is not None:  # when the scan ran: the run belongs to that day's nightly
            try:
                created = datetime.fromisoformat(str(doc["created"]))
            except ValueError:
                raise InputError(f"created: {str(doc['created'])[:40]!r} is not an ISO 8601 date-time",
                                 hint="write it as 2024-05-01T10:00:00Z, as `triage scan --format json` does") from None
            if created.tzinfo is None:
                created = created.replace(tzinfo=timezone.utc)
        outcome = self._record(doc, _embedded_logs(doc), force=force, created=created)
        outcome.undated = created is None
        return outcome

    def ingest_file(self, path: str | Path, *, force: bool = False) -> RecordOutcome:
        from .contract import MAX_DOCUMENT_BYTES, reject_constant

        shown = shown_path(str(path))
        cap = MAX_DOCUMENT_BYTES + EMBEDDED_ROOM
        try:
            with open(path, "rb") as fh:
                raw = fh.read(cap + 1)
        except OSError as exc:
            raise InputError(f"cannot read {shown}: {exc.strerror}") from None
        if len(raw) > cap:
            raise InputError(f"document over {cap >> 20} MiB with its embedded logs: not a scan result", where=shown,
                             hint="ingest reads the output of `triage scan --format json`; scan large "
                                  "inputs into separate documents") from None
        try:
            doc = json.loads(raw.decode("utf-8"), parse_constant=reject_constant)
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 at byte {exc.start}", where=shown,
                             hint="ingest reads the output of `triage scan --format json`") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", where=f"{shown}:{exc.lineno}",
                             hint="ingest reads the output of `triage scan --format json`") from None
        except RecursionError:
            raise InputError("JSON nested too deeply", where=shown,
                             hint="ingest reads the output of `triage scan --format json`") from None
        except InputError as exc:  # NaN or Infinity
            exc.where = shown
            raise
        if len(raw) - _embedded_chars(doc) > MAX_DOCUMENT_BYTES:  # the rest is what reports render
            raise InputError(f"document over {MAX_DOCUMENT_BYTES >> 20} MiB besides its embedded logs: not a "
                             "scan result", where=shown, hint="ingest reads the output of `triage scan --format json`")
        try:
            return self.ingest(doc, force=force)
        except InputError as exc:
            exc.where = exc.where or shown
            raise

    def _record(self, doc: dict[str, Any], logs: Mapping[str, tuple[bytes | None, bool]], *, force: bool,
                created: datetime | None) -> RecordOutcome:
        run = doc["run"]
        dims = doc.get("dimensions") or {}
        input_hash = _input_hash(doc)
        row = {
            "created": _iso(created or _utcnow()), "input_hash": input_hash, "tool": run.get("tool"),
            "tool_version": run.get("tool_version"), "phase": run.get("phase"), "part": run.get("part"),
            "status": run.get("status"), **{k: dims.get(k) for k in DIMENSIONS},
            "packs_digest": doc.get("packs_digest"), "duration_s": doc.get("duration_s"),
        }
        document = json.dumps(doc, ensure_ascii=False, default=str)

        def write() -> RecordOutcome:
            if not force:
                where = "input_hash = ? and " + " and ".join(f'"{k}" is ?' for k in DIMENSIONS)
                args = [input_hash, *(dims.get(k) for k in DIMENSIONS)]
                existing = self.conn.execute(f"select id from runs where {where} order by id limit 1", args).fetchone()
                if existing is not None:
                    return RecordOutcome(int(existing[0]), True)
            run_id = int(self._insert("runs", [row]))  # type: ignore[arg-type]
            self._insert("documents", [{"run_id": run_id, "document": document}])
            self._insert("inputs", (
                {"run_id": run_id, "path": i.get("path"), "kind": i.get("kind"), "lines": i.get("lines"),
                 "bytes": i.get("bytes"), "sha256": i.get("sha256"), "log": logs.get(i.get("path"), (None, False))[0],
                 "log_truncated": int(logs.get(i.get("path"), (None, False))[1])}
                for i in run.get("inputs") or []))
            self._insert_children(run_id, doc)
            return RecordOutcome(run_id, False)

        return self._write(write)

    def _insert_children(self, run_id: int, doc: Mapping[str, Any]) -> None:
        flat = list(_flatten(doc.get("findings") or []))
        self._insert("findings", (
            {"run_id": run_id, "cause_id": f["id"], "severity": f.get("severity"), "title": f.get("title"),
             "count": f.get("count"), "parent_cause_id": parent, "generic": int(bool(f.get("generic"))),
             "first_path": (f.get("evidence") or [{}])[0].get("path"),
             "first_line": (f.get("evidence") or [{}])[0].get("line")}
            for f, parent in flat))
        self._insert("evidence", (
            {"run_id": run_id, "cause_id": f["id"], "path": e.get("path"), "line": e.get("line"), "text": e.get("text"),
             "before": json.dumps(e.get("before") or [], ensure_ascii=False),
             "after": json.dumps(e.get("after") or [], ensure_ascii=False),
             "captures": json.dumps(e.get("captures") or {}, ensure_ascii=False)}
            for f, _ in flat for e in f.get("evidence") or []))
        self._insert("unexplained", (
            {"run_id": run_id, "fingerprint": u.get("fingerprint"), "normalised": normalise(u.get("text") or ""),
             "path": u.get("path"), "line": u.get("line"), "text": u.get("text"), "count": u.get("count"),
             "advice": u.get("advice"), "message_id": u.get("message_id")}
            for u in doc.get("unexplained") or []))
        self._insert("metrics", (
            {"run_id": run_id, **{k: m.get(k) for k in METRIC_COLUMNS}}
            for m in doc.get("metrics") or [] if isinstance(m, Mapping)))

    # -- reading --------------------------------------------------------------------------------------

    def last_run_id(self) -> int | None:
        def read() -> int | None:
            for row in self.db["runs"].rows_where(select="id", order_by="id desc", limit=1):
                return int(row["id"])
            return None

        return self._read(read)

    def runs(self, since: str | datetime | None = None, tool: str | None = None, status: str | None = None,
             label: str | None = None, limit: int | None = 50) -> list[dict[str, Any]]:
        """Runs, newest first, with their finding counts and top finding (no result document)."""
        return self._read(lambda: list(self.iter_runs(since, tool, status, label, limit)))

    def iter_runs(self, since: str | datetime | None = None, tool: str | None = None, status: str | None = None,
                  label: str | None = None, limit: int | None = 50) -> Iterator[dict[str, Any]]:
        """`runs()` as a stream: one query (the counts and the top finding are subqueries on the findings'
        run index), rows handed out as SQLite produces them, so memory does not grow with the history."""
        clauses: list[str] = []
        args: list[Any] = []
        cutoff = parse_since(since)
        for clause, value in (("created >= ?", cutoff), ("tool = ?", tool), ("status = ?", status), ("label = ?", label)):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        columns = ["id", "created", "label", "tool", "tool_version", "phase", "part", "status", "model", "branch",
                   "commit", "host", "device", "packs_digest", "duration_s", "input_hash"]
        top = "from findings as f where f.run_id = runs.id and f.parent_cause_id is null"
        sql = (f"select {', '.join(f'runs.[{c}]' for c in columns)},"
               + "".join(f" (select count(*) {top} and f.severity = '{sev}') as [{sev}]," for sev in ("error", "warning", "info"))
               + " (select count(*) from findings as f where f.run_id = runs.id and f.parent_cause_id is not null)"
               " as [explained],"
               " (select count(*) from unexplained as u where u.run_id = runs.id) as [unexplained],"
               f" (select f.cause_id {top} order by f.rowid limit 1) as [top]"
               f" from runs{' where ' + ' and '.join(clauses) if clauses else ''}"
               " order by runs.created desc, runs.id desc" + (" limit ?" if limit is not None else ""))
        if limit is not None:
            args.append(limit)
        for row in self.db.query(sql, args):
            counts = Counts(**{k: row.pop(k) for k in ("error", "warning", "info", "explained", "unexplained")})
            top_id = row.pop("top")
            row["counts"] = counts.to_dict()
            row["errors"], row["warnings"], row["findings"] = counts.error, counts.warning, counts.findings
            row["top"] = top_id
            yield row

    def run(self, run_id: int) -> dict[str, Any]:
        """The run row, its result document (`result`), findings and inputs (without the kept log bytes)."""
        def read() -> dict[str, Any]:
            rows = list(self.db["runs"].rows_where("id = ?", [run_id], limit=1))
            if not rows:
                raise StoreError(f"no run with id {run_id}", where=self.where, hint="list runs with `triage runs list`")
            row = rows[0]
            row.pop("result_json", None)
            row["result"] = self.document(run_id) or {}
            row["findings"] = list(self.db["findings"].rows_where("run_id = ?", [run_id], order_by="rowid"))
            for f in row["findings"]:
                f.pop("run_id", None)
            row["inputs"] = list(self.db["inputs"].rows_where(
                "run_id = ?", [run_id], order_by="rowid",
                select="path, kind, lines, bytes, sha256, log is not null as log_kept, log_truncated"))
            return row

        return self._read(read)

    def input_log(self, run_id: int, number: int | None = None) -> tuple[str, BinaryIO, bool]:
        """(path, stream of the kept text, truncated) of input `number` (1-based) of a run; without a
        number, the run must have one input. Errors say what there is instead."""
        rows = self._read(lambda: list(self.db["inputs"].rows_where(
            "run_id = ?", [run_id], select="path, log, log_truncated", order_by="rowid")))
        if not rows:
            self.run(run_id)  # no such run: its own error
            raise StoreError(f"run {run_id} has no inputs", where=self.where)
        listing = "; ".join(f"{i} {r['path']}" for i, r in enumerate(rows, 1))
        if number is None and len(rows) > 1:
            raise StoreError(f"run {run_id} has {len(rows)} inputs", where=self.where,
                             hint=f"choose one with --input N: {listing}"[:400])
        index = (number or 1) - 1
        if not 0 <= index < len(rows):
            raise StoreError(f"run {run_id} has no input {number}", where=self.where, hint=f"its inputs: {listing}"[:400])
        row = rows[index]
        if row["log"] is None:
            raise StoreError(f"the log of {row['path']} (run {run_id}) was not kept", where=self.where,
                             hint="scan with the default --keep-log, or ingest a document made with --embed-log")
        import tempfile  # noqa: PLC0415 - a scan needs the store module, not this

        out = tempfile.SpooledTemporaryFile(max_size=8 << 20)
        unpack_log_to(row["log"], out)  # type: ignore[arg-type]
        out.seek(0)
        return str(row["path"]), out, bool(row["log_truncated"])  # type: ignore[return-value]

    def prune(self, older_than: str, *, keep_failed: bool = False, vacuum: bool = True) -> PruneOutcome:
        """Delete runs created before `older_than` (a --since value: 90d, a date), every row they own
        included; `keep_failed` keeps failed runs. Then VACUUM, so the file shrinks."""
        cutoff = parse_since(older_than)
        where = "created < ?" + (" and status is not 'failed'" if keep_failed else "")
        self._checkpoint()
        before = self._size()

        def write() -> int:
            ids = [r["id"] for r in self.db["runs"].rows_where(where, [cutoff], select="id")]
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                marks = ", ".join("?" for _ in chunk)
                for table in ("evidence", "findings", "unexplained", "metrics", "inputs", "documents"):
                    self.db[table].delete_where(f"run_id in ({marks})", chunk)
                self.db["runs"].delete_where(f"id in ({marks})", chunk)
            return len(ids)

        removed = self._write(write)
        if vacuum and removed:
            try:
                self.db.execute("VACUUM")
            except sqlite3.OperationalError as exc:
                raise _store_error(exc, self.where) from None
            self._checkpoint()  # VACUUM writes through the WAL: fold it back so the file is what shrinks
        return PruneOutcome(removed, before, self._size())

    def _checkpoint(self) -> None:
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:
            pass  # another connection is reading: the size is then only an estimate

    def _size(self) -> int:
        if self.where == ":memory:":
            return 0
        try:
            return sum(os.path.getsize(self.where + suffix) for suffix in ("", "-wal") if os.path.exists(self.where + suffix))
        except OSError:
            return 0

    def document(self, run_id: int) -> dict[str, Any] | None:
        """The run's scan document (what `scan --format json` printed, as stored), or None."""
        return self._read(lambda: self._document(run_id))

    def _document(self, run_id: int) -> dict[str, Any] | None:
        for row in self.db["documents"].rows_where("run_id = ?", [run_id], select="document", limit=1):
            try:
                doc = json.loads(row["document"] or "null")
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
        return None

    def kept_log(self, run_id: int, path: str) -> bytes | None:
        """The kept bytes of one input of a run (decompressed), or None."""
        def read() -> bytes | None:
            for row in self.db["inputs"].rows_where("run_id = ? and path = ?", [run_id, path], select="log", limit=1):
                return unpack_log(row["log"]) if row["log"] is not None else None
            return None

        return self._read(read)

    def unexplained_lines(self, *, fingerprint: str | None = None, run_id: int | None = None,
                          line: int | None = None, path: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Stored unexplained lines, newest run first, each with its run's tool, phase, status and date."""
        clauses, args = [], []
        for clause, value in (("fingerprint = ?", fingerprint), ("run_id = ?", run_id), ("line = ?", line),
                              ("path = ?", path)):
            if value is not None:
                clauses.append(clause)
                args.append(value)

        def read() -> list[dict[str, Any]]:
            rows = list(self.db["unexplained"].rows_where(" and ".join(clauses) or None, args,
                                                          order_by="run_id desc, rowid", limit=limit))
            ids = sorted({r["run_id"] for r in rows})
            runs = {r["id"]: r for r in self.db["runs"].rows_where(
                f"id in ({', '.join('?' for _ in ids)})", ids, select="id, tool, phase, status, created, label")} \
                if ids else {}
            for r in rows:
                run = runs.get(r["run_id"], {})
                r.update({k: run.get(k) for k in ("tool", "phase", "status", "created", "label")})
            return rows

        return self._read(read)

    def kept_logs(self, run_id: int) -> list[tuple[str, bytes]]:
        """(path, text) of every input of a run whose log was kept whole; [] when any was not."""
        def read() -> list[tuple[str, bytes]] | None:
            rows = list(self.db["inputs"].rows_where("run_id = ?", [run_id], select="path, log, log_truncated",
                                                     order_by="rowid"))
            if not rows or any(r["log"] is None or r["log_truncated"] for r in rows):
                return None
            return [(str(r["path"]), r["log"]) for r in rows]

        kept = self._read(read)
        return [(path, unpack_log(blob)) for path, blob in kept] if kept else []

    def kept_sources(self, run_id: int, folder: str) -> list[Source]:
        """The kept logs of a run written to `folder`, reported under their original paths ([] if not kept whole)."""
        rows = self._read(lambda: list(self.db["inputs"].rows_where(
            "run_id = ?", [run_id], select="path, kind, log, log_truncated", order_by="rowid")))
        if not rows or any(r["log"] is None or r["log_truncated"] for r in rows):
            return []
        return [_materialise(folder, n, r) for n, r in enumerate(rows)]

    # -- knowledge base -------------------------------------------------------------------------------

    def sync_causes(self, packs: PackSet) -> bool:
        """Make the `causes` and `signatures` tables (and the causes' FTS index) mirror `packs`, keeping
        the causes stored findings refer to; False when they already did."""
        def current() -> str | None:
            row = self.conn.execute("select value from meta where key = ?", ["causes_digest"]).fetchone()
            return None if row is None else str(row[0])

        if self._read(current) == packs.digest:
            return False

        def write() -> bool:
            if current() == packs.digest:
                return False
            # a cause gone from the packs stays while a stored finding refers to it: it still explains that run
            self.db.execute("delete from signatures where cause_id not in (select distinct cause_id from findings)")
            self.db.execute("delete from causes where id not in (select distinct cause_id from findings)")
            self.db["causes"].upsert_all(
                ({"id": c.id, "title": c.title, "severity": c.severity, "tool": c.tool, "phase": c.phase,
                  "versions": c.versions, "cause": c.cause, "workaround": c.workaround,
                  "references": json.dumps(c.references), "examples": "\n".join(c.examples), "pack": c.pack,
                  "generic": int(bool(getattr(c, "generic", False))), "status": c.status}
                 for c in packs.causes.values()), pk="id")
            ids = list(packs.causes)
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                self.db["signatures"].delete_where(f"cause_id in ({', '.join('?' for _ in chunk)})", chunk)
            self.db["signatures"].insert_all(
                ({"cause_id": c.id, "idx": s.index, "regex": s.pattern, "literals": json.dumps(list(s.literals)),
                  "ignore_case": int(s.ignore_case)} for c in packs.causes.values() for s in c.signatures),
                pk=("cause_id", "idx"), replace=True)
            self.db["meta"].upsert({"key": "causes_digest", "value": packs.digest}, pk="key")
            return True

        return self._write(write)

    def search_causes(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        """Full-text search over title, cause, workaround and examples, best first (see
        `ftsquery.search_causes`: any text is a valid query)."""
        from .ftsquery import search_causes

        return self._read(lambda: search_causes(self.conn, query, limit))

    # -- re-triage ------------------------------------------------------------------------------------

    def retriage(self, packs: PackSet, since: str | datetime | None = None, *, force: bool = False,
                 run_ids: Iterable[int] | None = None) -> list[RetriageChange]:
        """Re-scan the kept logs of stored runs with `packs`, store the new findings, report per run what
        changed. Runs already classified with the same packs are left alone unless `force`."""
        from .scan import Matcher, scan_sources

        cutoff = parse_since(since)
        clauses, args = [], []
        if cutoff:
            clauses.append("created >= ?")
            args.append(cutoff)
        if run_ids is not None:
            ids = list(run_ids)
            clauses.append(f"id in ({', '.join('?' for _ in ids)})" if ids else "0")
            args.extend(ids)
        rows = self._read(lambda: list(self.db["runs"].rows_where(
            " and ".join(clauses) or None, args, select="id, status, packs_digest", order_by="id")))
        matcher: Matcher | None = None
        changes: list[RetriageChange] = []
        for row in rows:
            if row["packs_digest"] == packs.digest and not force:
                continue
            run_id = int(row["id"])
            inputs = self._read(lambda: list(self.db["inputs"].rows_where(
                "run_id = ?", [run_id], select="path, kind, log, log_truncated", order_by="rowid")))
            if not inputs or any(i["log"] is None for i in inputs):
                changes.append(RetriageChange(run_id, [], [], row["status"], row["status"], skipped="log not kept"))
                continue
            if any(i["log_truncated"] for i in inputs):
                changes.append(RetriageChange(run_id, [], [], row["status"], row["status"],
                                              skipped="log kept only in part (over the size cap)"))
                continue
            matcher = matcher or Matcher(packs)
            import tempfile  # noqa: PLC0415

            with tempfile.TemporaryDirectory(prefix="triage-retriage-") as tmp:
                sources = [_materialise(tmp, n, i) for n, i in enumerate(inputs)]
                result = scan_sources(packs, sources, matcher=matcher)
            changes.append(self._replace_findings(run_id, result, packs))
        return changes

    def _replace_findings(self, run_id: int, result: ScanResult, packs: PackSet) -> RetriageChange:
        def write() -> RetriageChange:
            row = next(iter(self.db["runs"].rows_where("id = ?", [run_id], select="status")))
            old = {r["cause_id"] for r in self.db["findings"].rows_where("run_id = ?", [run_id], select="cause_id")}
            doc = self._document(run_id) or {}
            fresh = result_dict(result)
            hashes = {i.get("path"): i.get("sha256") for i in (doc.get("run") or {}).get("inputs") or []}
            for item in fresh["run"]["inputs"]:
                item["sha256"] = hashes.get(item["path"])
            doc.update(fresh, packs_digest=packs.digest, retriaged=_iso(_utcnow()))
            for table in ("findings", "evidence", "unexplained", "metrics"):
                self.db[table].delete_where("run_id = ?", [run_id])
            self._insert_children(run_id, doc)
            self.db["runs"].update(run_id, {"status": result.run.status, "packs_digest": packs.digest})
            self.db["documents"].upsert({"run_id": run_id, "document": json.dumps(doc, ensure_ascii=False, default=str)},
                                        pk="run_id")
            new = {f.id for f in result.all_findings()}
            return RetriageChange(run_id, sorted(new - old), sorted(old - new), row["status"], result.run.status)

        return self._write(write)


EMBEDDED_MAX = 64 << 20  # compressed bytes an embedded log may have (the kept text is capped at 50 MiB raw)
EMBEDDED_ROOM = 2 * (EMBEDDED_MAX * 4 // 3)  # what a document may hold beyond the contract's cap in embedded
# logs (base64): two of the largest, or dozens of ordinary compile logs (a 50 MiB log is about 5 MiB of zstd)


def _embedded_chars(doc: Any) -> int:
    """Characters of the `--embed-log` data a parsed document carries (not counted in its contract's size)."""
    run = doc.get("run") if isinstance(doc, Mapping) else None
    inputs = run.get("inputs") if isinstance(run, Mapping) else None
    total = 0
    for item in inputs if isinstance(inputs, list) else []:
        log = item.get("log") if isinstance(item, Mapping) else None
        if isinstance(log, Mapping) and isinstance(log.get("data"), str):
            total += len(log["data"])
    return total


def _embedded_logs(doc: dict[str, Any]) -> dict[str, tuple[bytes | None, bool]]:
    """The logs a `--embed-log` document carries, by input path; the base64 text is dropped from the
    document itself (the kept log is stored once, in `inputs`)."""
    out: dict[str, tuple[bytes | None, bool]] = {}
    run = dict(doc.get("run") or {})
    inputs = []
    for item in run.get("inputs") or []:
        if not isinstance(item, Mapping):
            inputs.append(item)
            continue
        item = dict(item)
        log = item.pop("log", None)
        inputs.append(item)
        if not isinstance(log, Mapping) or log.get("encoding") != "zstd+base64" or not isinstance(log.get("data"), str):
            continue
        if len(log["data"]) > EMBEDDED_MAX * 4 // 3 + 4:
            raise InputError(f"embedded log of {item.get('path')} is over {EMBEDDED_MAX >> 20} MiB compressed",
                             hint="`scan --embed-log` keeps the first 50 MiB of each input")
        try:
            blob = base64.b64decode(log["data"], validate=True)
        except ValueError:
            raise InputError(f"embedded log of {item.get('path')} is not base64",
                             hint="write the document with `triage scan --format json --embed-log`") from None
        if not blob.startswith(ZSTD_MAGIC) or _unpacked_size(blob, DEFAULT_LOG_CAP) is None:
            raise InputError(f"embedded log of {item.get('path')} is not zstd text of at most "
                             f"{DEFAULT_LOG_CAP >> 20} MiB", hint="write the document with `triage scan --format json --embed-log`")
        out[str(item.get("path"))] = (blob, bool(log.get("truncated")))
    if out:
        run["inputs"] = inputs
        doc["run"] = run
    return out


def _unpacked_size(blob: bytes, cap: int) -> int | None:
    """The size of zstd frames once decompressed, or None when they do not decompress or exceed `cap`
    (an embedded log comes from elsewhere: it must not expand without bound)."""
    import zstandard  # noqa: PLC0415

    total = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob), read_across_frames=True) as reader:
            while chunk := reader.read(1 << 20):
                total += len(chunk)
                if total > cap:
                    return None
    except zstandard.ZstdError:
        return None
    return total


@dataclass
class PruneOutcome:
    removed: int
    bytes_before: int
    bytes_after: int


@dataclass
class _KeptSource(Source):
    """A kept log written to a temporary file, reported under its original path."""

    shown: str = ""

    @property
    def display(self) -> str:
        return self.shown or self.path


def _materialise(folder: str, index: int, item: Mapping[str, Any]) -> Source:
    name = re.sub(r"[^\w.+-]", "_", os.path.basename(str(item["path"])) or "input.log")
    path = os.path.join(folder, f"{index:03d}-{name}")
    with open(path, "wb") as out:
        unpack_log_to(item["log"], out)
    return _KeptSource(path, item.get("kind") or "log", os.path.getsize(path), shown=str(item["path"]))


def open_store(path: str | Path | None = None, *, create: bool = True, default: bool = False) -> Store:
    """Open (creating and migrating as needed) the run database at `path`.

    `path=None` is an in-memory store, or the default database (`default_db_path()`) when `default`.
    `create=False` refuses to create a database that does not exist yet (for the reading commands).
    """
    if path is None and default:
        path = default_db_path()
    where = ":memory:" if path is None else str(path)
    global LAST_OPENED  # noqa: PLW0603 - named in a database error caught far from here (see cli.main)
    LAST_OPENED = where if path is None else str(path)
    if path is not None and not create and not Path(path).exists():
        raise StoreError("no run database here yet", where=where,
                         hint="scan something first (`triage scan LOG`), or point --db / TRIAGE_DB at one")
    if path is not None and Path(path).expanduser().is_dir():
        raise StoreError("the run database path is a folder", where=where,
                         hint=f"name a file in it, e.g. --db {shown_path(str(Path(path) / 'triage.db'))}")
    try:
        if path is None:
            conn = sqlite3.connect(":memory:", timeout=BUSY_TIMEOUT_S)
        else:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(Path(path).expanduser()), timeout=BUSY_TIMEOUT_S)
        conn.execute("PRAGMA recursive_triggers=on")  # as sqlite-utils sets it: an FTS upsert's triggers fire
    except OSError as exc:
        raise StoreError(f"cannot create the folder for the run database: {exc.strerror}", where=where) from None
    except sqlite3.Error as exc:
        raise _store_error(exc, where) from None
    store = Store(conn, where)
    try:
        if path is not None:
            _set_wal(store)
        store._migrate()
    except BaseException:
        store.close()
        raise
    return store


def _set_wal(store: Store) -> None:
    delay = 0.02
    deadline = time.monotonic() + RETRY_BUDGET_S
    while True:
        try:
            mode = store.conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal":
                store.conn.execute("PRAGMA journal_mode=WAL")
            store.conn.execute("PRAGMA synchronous=NORMAL")
            return
        except sqlite3.OperationalError as exc:
            if _is_locked(exc) and time.monotonic() < deadline:
                time.sleep(delay * (0.5 + _jitter()))
                delay = min(delay * 2, 1.0)
                continue
            raise _store_error(exc, store.where) from None
        except sqlite3.Error as exc:
            raise _store_error(exc, store.where) from None
