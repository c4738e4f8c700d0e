"""Hostile input, each case a defect once found: names and text that try to drive the terminal or the CI log,
file names that are not UTF-8, options at their limits. Each must end in a clear one-line error or a handled
result — never a traceback, never a control sequence acted on, never a silent pass.

The log is the real failing DFC compile of fixtures/corpus/dfc/cases/043-…; names, labels and damage are
synthetic, made here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from triage.errors import InputError

from .conftest import ROOT, corpus

REAL = corpus("dfc/cases/043-").read_bytes()
OSC_TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
BIDI = "\u202eexe.gol"
ANY_ESCAPE = ("\x1b", "\x9b", "\x9d", "\u202e", "\x07")


def triage(*args: str | bytes, cwd: Path = ROOT, stdin: bytes | None = b"", env: dict | None = None,  # type: ignore[type-arg]
           timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "triage", *args], input=stdin, capture_output=True, cwd=cwd,
                          env=full, timeout=timeout)


def no_control(out: bytes) -> None:
    """Nothing but Rich's own colours would reach a terminal: no OSC, no clear screen, no C1, no bidi override."""
    text = out.decode("utf-8", "replace")
    for bad in (OSC_TITLE, CLEAR, C1_CSI, "\u202e", "\x07", "\x9d"):
        assert bad not in text, repr(bad)


def test_escapes_in_a_file_name_are_shown_not_acted_on(tmp_path: Path) -> None:
    log = tmp_path / f"a{OSC_TITLE}{CLEAR}b.log"
    log.write_bytes(REAL)
    proc = triage("scan", "--no-store", str(log))
    assert proc.returncode == 1
    no_control(proc.stdout + proc.stderr)
    assert b"a\\x1b]0;pwned\\x07" in proc.stdout


def test_a_newline_in_a_file_name_cannot_inject_a_workflow_command(tmp_path: Path) -> None:
    """GitHub reads `::add-mask::` at the start of any log line, stderr included."""
    folder = tmp_path / "build"
    folder.mkdir()
    (folder / "x\n::add-mask::secret\n.log").write_bytes(REAL)
    fifo = folder / "y\n::error::injected\n.log"
    os.mkfifo(fifo)  # skipped with a warning that names it
    proc = triage("scan", "--no-store", "--format", "github", str(folder))
    assert proc.returncode == 1
    for stream in (proc.stdout, proc.stderr):
        lines = stream.decode().splitlines()
        assert not [line for line in lines if line.startswith(("::add-mask::", "::error::injected"))], lines
    assert b"\\x0a::error::injected" in proc.stderr


def test_c1_controls_and_bidi_overrides_in_log_lines_are_escaped(tmp_path: Path) -> None:
    log = tmp_path / "c1.log"
    log.write_text(f"ERROR: [HLS 200-1] odd {C1_CSI} \x9d0;title\x9c {BIDI}\n", encoding="utf-8")
    proc = triage("scan", "--no-store", str(log), env={"COLUMNS": "400"})  # wide enough that the line is not cut
    assert proc.returncode == 1
    no_control(proc.stdout)
    assert b"\\x9b31m" in proc.stdout and b"\\u202e" in proc.stdout
    doc = json.loads(triage("scan", "--no-store", "--format", "json", str(log)).stdout)
    assert doc["unexplained"][0]["text"].startswith("ERROR: [HLS 200-1] odd \x9b31m")  # the data keeps the line


def test_labels_and_dimensions_reach_the_terminal_escaped(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    log = tmp_path / "c.log"
    log.write_bytes(REAL)
    assert triage("scan", str(log), "--db", db, "--label", f"nightly{CLEAR}\n::add-mask::x",
                  "--model", OSC_TITLE).returncode == 1
    for args in (["runs", "list"], ["runs", "show", "1"]):
        proc = triage(*args, "--db", db)
        assert proc.returncode == 0, proc.stderr
        no_control(proc.stdout)
        assert not [line for line in proc.stdout.decode().splitlines() if line.lstrip().startswith("::add-mask::")]


def test_pack_text_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        'pack: site\ntool: dfc\ncauses:\n'
        '  - id: site/odd\n    title: "Odd \\e]0;pwned\\a title"\n    severity: error\n'
        '    cause: "The site step \\e[2J\\e[H clears the screen when printed raw, on purpose here."\n'
        '    workaround: "Print it escaped; a title \\u202e reversed is not acted on either."\n'
        "    signatures:\n      - regex: 'Mapping Failed'\n        match: ['  [error] Mapping Failed (allocation time: 1m 44s)']\n",
        encoding="utf-8")
    log = tmp_path / "c.log"
    log.write_bytes(REAL)
    for args in (["scan", "--no-store", "--packs", str(tmp_path), str(log)],
                 ["kb", "show", "site/odd", "--packs", str(tmp_path)],
                 ["packs", "list", "--packs", str(tmp_path)]):
        proc = triage(*args)
        assert proc.returncode in (0, 1), proc.stderr
        no_control(proc.stdout)
        assert b"Odd \\x1b]0;pwned\\x07 title" in proc.stdout, args


def test_ingested_text_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_bytes(REAL)
    doc = json.loads(triage("scan", "--no-store", "--format", "json", str(log)).stdout)
    doc["findings"][0]["title"] = f"Injected {CLEAR} title"
    doc["dimensions"]["label"] = f"farm{OSC_TITLE}"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    db = str(tmp_path / "r.db")
    assert triage("ingest", str(path), "--db", db).returncode == 0
    for args in (["runs", "list"], ["runs", "show", "1"]):
        proc = triage(*args, "--db", db)
        no_control(proc.stdout)


@pytest.mark.parametrize("how", ["stored", "sarif", "html", "output", "junit", "jsonl"])
def test_a_file_name_that_is_not_utf8_is_shown_with_replacement(tmp_path: Path, how: str) -> None:
    """`bad\\xff.log` crashed every stored scan, SARIF, --html and --output with a traceback and exit 1."""
    folder = tmp_path / "in"
    folder.mkdir()
    name = os.fsencode(folder) + b"/bad\xff.log"
    with open(name, "wb") as fh:
        fh.write(REAL)
    out = tmp_path / "out"
    args: list[str | bytes] = {
        "stored": ["scan", name, "--db", str(tmp_path / "r.db")],
        "sarif": ["scan", name, "--no-store", "--format", "sarif", "--output", str(out)],
        "html": ["scan", name, "--no-store", "--html", str(out)],
        "output": ["scan", name, "--no-store", "--format", "json", "--output", str(out)],
        "junit": ["scan", name, "--no-store", "--format", "junit"],
        "jsonl": ["scan", name, "--no-store", "--format", "jsonl"],
    }[how]
    proc = triage(*args)
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    text = (out.read_bytes() if out.exists() else proc.stdout).decode("utf-8")  # valid UTF-8 throughout
    assert "bad\ufffd.log" in text or "bad%EF%BF%BD.log" in text
    if how == "stored":
        conn = sqlite3.connect(tmp_path / "r.db")
        (path, sha) = conn.execute("select path, sha256 from inputs").fetchone()
        assert path.endswith("bad\ufffd.log") and sha  # hashed from the file's own bytes


def test_a_folder_holding_a_name_that_is_not_utf8_scans_in_parallel(tmp_path: Path) -> None:
    for name in (b"one\xff.log", b"two\xfe.log"):
        with open(os.fsencode(tmp_path) + b"/" + name, "wb") as fh:
            fh.write(REAL)
    proc = triage("scan", "--format", "json", "-j", "2", "--db", str(tmp_path / "r.db"), str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert sorted(Path(i["path"]).name for i in doc["run"]["inputs"]) == ["one\ufffd.log", "two\ufffd.log"]
    assert all(i["sha256"] for i in doc["run"]["inputs"])


@pytest.mark.parametrize("how", ["closed at start", "closed later"])
def test_scan_with_stdin_closed_is_one_line_error(how: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if how == "closed at start":  # `triage scan - <&-`: Python starts without a sys.stdin
        proc = subprocess.run(["sh", "-c", f"'{sys.executable}' -m triage scan - --no-store <&-"],
                              capture_output=True, cwd=ROOT, env=env)
    else:
        proc = subprocess.run([sys.executable, "-c", "import os, sys; os.close(0); sys.argv = ['triage', 'scan', "
                               "'-', '--no-store']; from triage.cli import main; main()"],
                              capture_output=True, cwd=ROOT, env=env)
    assert proc.returncode == 2, proc.stderr
    first = proc.stderr.decode().splitlines()[0]
    assert first in ("error: cannot read standard input: it is closed", "error: cannot read <stdin>: Bad file descriptor")


def test_explain_reads_stdin_that_is_not_utf8() -> None:
    proc = triage("explain", "-", stdin=b"\xff\xfe  [error] Mapping Failed (allocation time: 1m 44s)\n\xc3")
    assert proc.returncode == 0, proc.stderr
    assert b"dfc/allocation-failed" in proc.stdout


# ---------------------------------------------------------------------------------------------------------
# Ingested documents: checked against the JSON contract; a rejected one stores nothing


def _real_doc(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    log = tmp_path / "real.log"
    log.write_bytes(REAL)
    return json.loads(triage("scan", "--no-store", "--format", "json", str(log)).stdout)


def _broken(doc: dict, case: str) -> str | bytes | dict:  # type: ignore[type-arg]
    import copy

    d = copy.deepcopy(doc)
    f = d["findings"][0]
    edits = {
        "count-infinity": lambda: b'{"run": {"status": "failed"}, "findings": [{"id": "a/b", "severity": "error", "count": Infinity}]}',
        "count-nan": lambda: b'{"run": {"status": "failed"}, "findings": [], "duration_s": NaN}',
        "severity-bogus": lambda: f.__setitem__("severity", "catastrophic"),
        "metric-string": lambda: d.__setitem__("metrics", [{"resource": "LUT", "used": "lots"}]),
        "count-negative": lambda: f.__setitem__("count", -3),
        "count-bool": lambda: f.__setitem__("count", True),
        "line-huge": lambda: f["evidence"][0].__setitem__("line", 10 ** 30),
        "line-float": lambda: f["evidence"][0].__setitem__("line", 2.5),
        "id-bad": lambda: f.__setitem__("id", "no slash <script>"),
        "evidence-not-list": lambda: f.__setitem__("evidence", "line 3"),
        "captures-nested": lambda: f["evidence"][0].__setitem__("captures", {"a": {"b": 1}}),
        "explains-deep": lambda: f.__setitem__("explains", _nest({"id": "a/b", "severity": "info"}, 12)),
        "run-missing": lambda: d.pop("run"),
        "run-list": lambda: d.__setitem__("run", []),
        "status-bogus": lambda: d["run"].__setitem__("status", "exploded"),
        "tool-bogus": lambda: d["run"].__setitem__("tool", "gcc"),
        "inputs-lines-string": lambda: d["run"]["inputs"][0].__setitem__("lines", "many"),
        "sha-bogus": lambda: d["run"]["inputs"][0].__setitem__("sha256", "not-a-hash"),
        "unexplained-count-zero": lambda: d.__setitem__("unexplained", [{"text": "ERROR: x", "count": 0}]),
        "warnings-objects": lambda: d.__setitem__("warnings", [{"a": 1}]),
        "dimension-object": lambda: d["dimensions"].__setitem__("label", {"x": 1}),
        "created-number": lambda: d.__setitem__("created", 12345),
        "text-huge": lambda: f.__setitem__("title", "x" * (300 << 10)),
        "top-list": lambda: b"[1, 2, 3]",
        "top-string": lambda: b'"run"',
        "not-utf8": lambda: b'{"run": {"status": "failed"}, "findings": [], "warnings": ["\xff"]}',
        "deep-json": lambda: b"[" * 100_000 + b"]" * 100_000,
        "truncated": lambda: json.dumps(d).encode()[:-40],
    }
    out = edits[case]()
    return out if isinstance(out, bytes) else d


def _nest(leaf: dict, depth: int) -> list:  # type: ignore[type-arg]
    node = leaf
    for _ in range(depth):
        node = {"id": "a/b", "severity": "info", "explains": [node]}
    return [node]


CASES = ["count-infinity", "count-nan", "severity-bogus", "metric-string", "count-negative", "count-bool", "line-huge",
         "line-float", "id-bad", "evidence-not-list", "captures-nested", "explains-deep", "run-missing", "run-list",
         "status-bogus", "tool-bogus", "inputs-lines-string", "sha-bogus", "unexplained-count-zero", "warnings-objects",
         "dimension-object", "created-number", "text-huge", "top-list", "top-string", "not-utf8", "deep-json",
         "truncated"]


@pytest.mark.parametrize("case", CASES)
def test_a_malformed_document_is_refused_by_field_and_stores_nothing(tmp_path: Path, case: str) -> None:
    doc = _real_doc(tmp_path)
    broken = _broken(doc, case)
    bad = tmp_path / "bad.json"
    bad.write_bytes(broken if isinstance(broken, bytes) else json.dumps(broken).encode())
    good = tmp_path / "good.json"
    good.write_text(json.dumps(doc))
    db = tmp_path / "farm.db"
    proc = triage("ingest", str(bad), str(good), "--db", str(db))
    err = proc.stderr.decode()
    assert proc.returncode == 2, (proc.stdout, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[0].startswith("error: ") and lines[1] == f"  --> {bad}" or lines[1].startswith(f"  --> {bad}:"), err
    assert b"run 1 stored" in proc.stdout  # the good document beside it is stored ...
    conn = sqlite3.connect(db)
    assert conn.execute("select count(*) from runs").fetchone()[0] == 1  # ... and nothing of the bad one
    assert triage("nightly", "--db", str(db), "--since", "7d", "--out", str(tmp_path / "r")).returncode == 0


def test_field_names_in_the_errors(tmp_path: Path) -> None:
    doc = _real_doc(tmp_path)
    for case, first in (("count-negative", "error: findings[0].count: expected a whole number >= 0, got -3"),
                        ("metric-string", "error: metrics[0].used: expected a finite number, got 'lots'"),
                        ("severity-bogus", "error: findings[0].severity: expected one of error, warning, info, got "
                                           "'catastrophic'"),
                        ("count-infinity", "error: not JSON: Infinity is not a number a document may hold")):
        bad = tmp_path / f"{case}.json"
        broken = _broken(doc, case)
        bad.write_bytes(broken if isinstance(broken, bytes) else json.dumps(broken).encode())
        proc = triage("ingest", str(bad), "--db", str(tmp_path / "x.db"))
        assert proc.stderr.decode().splitlines()[0] == first


def test_a_document_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    """A 100 MB document once rendered a 107 MB nightly page."""
    from triage.contract import MAX_DOCUMENT_BYTES

    doc = _real_doc(tmp_path)
    doc["warnings"] = ["x" * 1000] * (MAX_DOCUMENT_BYTES // 1000 + 10)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    proc = triage("ingest", str(big), "--db", str(tmp_path / "x.db"))
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith(f"error: document over {MAX_DOCUMENT_BYTES >> 20} MiB")


def test_embedded_logs_have_their_own_room_beside_the_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--embed-log` adds each kept log (zstd, base64) to the document: that text has its own bound, and what
    reports render (the rest of the document) stays within the contract's cap."""
    from triage import contract
    from triage.store import open_store

    log = tmp_path / "build.log"
    log.write_bytes(REAL + b"".join(b"INFO: step %d of %x\n" % (n, n * 2654435761 % 2**32) for n in range(4000)))
    made = triage("scan", str(log), "--format", "json", "--no-store", "--embed-log")
    doc_path = tmp_path / "doc.json"
    doc_path.write_bytes(made.stdout)
    data = len(json.loads(made.stdout)["run"]["inputs"][0]["log"]["data"])
    rest = len(made.stdout) - data
    assert data > rest  # the log is most of the document
    monkeypatch.setattr(contract, "MAX_DOCUMENT_BYTES", rest + 16)  # the log alone takes it over the cap
    with open_store(tmp_path / "a.db") as store:
        assert store.ingest_file(doc_path).run_id == 1
        assert store.kept_log(1, str(log)) == log.read_bytes()
    monkeypatch.setattr(contract, "MAX_DOCUMENT_BYTES", rest - 16)  # the rest of it is over the cap
    with open_store(tmp_path / "b.db") as store, pytest.raises(InputError, match="besides its embedded logs"):
        store.ingest_file(doc_path)
    with open_store(tmp_path / "b.db") as store:
        assert store.db["runs"].count == 0


# ---------------------------------------------------------------------------------------------------------
# The store and the files triage writes


def _db_with_runs(tmp_path: Path, runs: int = 6) -> Path:
    db = tmp_path / "runs.db"
    logs = sorted((ROOT / "fixtures" / "corpus" / "logs" / "hls").glob("01*.log"))
    for i in range(runs):
        assert triage("scan", *map(str, logs), "--db", str(db), "--force", "--label", f"l{i}").returncode in (0, 1)
    return db


def test_a_database_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = _db_with_runs(tmp_path, 1)
    conn = sqlite3.connect(db)
    conn.execute("insert into migrations values ('m099_a_future_change', '2030-01-01T00:00:00Z')")
    conn.execute("update meta set value = '9.4' where key = 'triage_version'")
    conn.commit()
    conn.close()
    for args in (["runs", "list"], ["scan", str(corpus("dfc/cases/043-"))], ["nightly", "--out", str(tmp_path / "r")]):
        proc = triage(*args, "--db", str(db))
        assert proc.returncode == 2, args
        assert proc.stderr.decode().splitlines()[0] == \
            "error: this run database was created by triage 9.4 (its schema has m099_a_future_change); " \
            "this is triage 0.1.0"
    assert sqlite3.connect(db).execute("select count(*) from runs").fetchone()[0] == 1  # untouched


@pytest.mark.parametrize("damage", ["truncated", "not-a-database"])
def test_a_corrupt_database_is_a_one_line_error_on_every_command(tmp_path: Path, damage: str) -> None:
    db = _db_with_runs(tmp_path)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) * 2 // 3] if damage == "truncated" else b"not a database at all\n" * 100)
    for args in (["runs", "list"], ["runs", "show", "3"], ["nightly", "--since", "3650d", "--out", str(tmp_path / "r")],
                 ["report", "6", "--out", str(tmp_path / "x.html")], ["retriage", "--force"],
                 ["scan", str(corpus("dfc/cases/043-"))]):
        proc = triage(*args, "--db", str(db))
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "Traceback" not in err, (args, err)
        assert err.startswith("error: not a usable triage database"), (args, err)


@pytest.mark.parametrize("where", ["missing-folder", "a-folder"])
def test_output_that_cannot_be_written_is_refused_before_the_scan(tmp_path: Path, where: str) -> None:
    target = tmp_path / "no" / "such" / "out.json" if where == "missing-folder" else tmp_path
    for option in ("--output", "--html"):
        if option == "--html" and where == "missing-folder":
            continue  # a report's folder is created
        proc = triage("scan", "--no-store", "--format", "sarif", option, str(target), str(corpus("dfc/cases/043-")))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.decode().startswith(f"error: cannot write {target}: "), proc.stderr
        assert proc.stdout == b""


def test_a_full_disk_leaves_the_previous_file_and_no_partial_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from triage import files
    from triage.errors import TriageError

    target = tmp_path / "report.html"
    target.write_text("the previous report\n")

    class Full:
        def __init__(self, fd: int, *a: object, **k: object) -> None:
            self.fd = fd

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            os.close(self.fd)

        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fdopen", Full)
    with pytest.raises(TriageError, match=r"cannot write .*report.html: the disk is full"):
        files.write_text(target, "<html>a new report</html>\n")
    assert target.read_text() == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_written_files_get_the_permissions_a_redirect_would(tmp_path: Path) -> None:
    """The temporary file is made 0600; a nightly page served by another user must still be readable."""
    from triage import files

    old = os.umask(0o027)
    try:
        files._umask.cache_clear()
        fresh = files.write_text(tmp_path / "index.html", "<html></html>\n")
        assert fresh.stat().st_mode & 0o777 == 0o640
        kept = tmp_path / "report.json"
        kept.write_text("{}")
        kept.chmod(0o604)
        files.write_text(kept, "{}\n")
        assert kept.stat().st_mode & 0o777 == 0o604
    finally:
        os.umask(old)
        files._umask.cache_clear()


def test_unexplained_lines_past_the_cap_are_said_to_be_left_out(tmp_path: Path) -> None:
    from triage.scan import MAX_UNEXPLAINED

    log = tmp_path / "many.log"
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    with log.open("w") as fh:
        for i in range(MAX_UNEXPLAINED + 40):  # distinct after masking: words, not numbers, differ
            fh.write(f"ERROR: stage {words[i % 8]} {words[i // 8 % 8]} {words[i // 64 % 8]} {words[i // 512 % 8]} failed\n")
    proc = triage("scan", "--no-store", "--format", "json", str(log))
    doc = json.loads(proc.stdout)
    assert len(doc["unexplained"]) == MAX_UNEXPLAINED
    said = [w for w in doc["warnings"] if f"over {MAX_UNEXPLAINED} distinct error lines" in w]
    assert said and f"{log}:{MAX_UNEXPLAINED + 1}:" in said[0]


def test_a_file_growing_during_a_parallel_scan_is_hashed_as_scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parallel path read a file to its end in the workers and again, later, for the hash: a log still being
    written was stored and hashed with bytes the scan never saw. Now both stop at the size the scan planned."""
    import hashlib

    from triage import load_packs, scan, split
    from triage.pipeline import StoreOptions, run_scan
    from triage.store import open_store, unpack_log

    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1000)
    monkeypatch.setattr(scan, "SPLIT_MIN_BYTES", 1000)
    big = tmp_path / "big.log"
    big.write_bytes(REAL * 400)  # split into ranges across the workers
    small = tmp_path / "small.log"
    small.write_bytes(REAL)
    scanned = {p: p.read_bytes() for p in (big, small)}

    def grow(sources):  # type: ignore[no-untyped-def]  # called after discovery, before any byte is read
        for p in (big, small):
            with p.open("ab") as fh:
                fh.write(b"  [error] Mapping Failed (allocation time: 9s)\n" * 50)
        return []

    db = tmp_path / "r.db"
    outcome = run_scan([str(big), str(small)], load_packs(), jobs=2, store=StoreOptions(db=db), prepare=grow)
    inputs = {i.path: i for i in outcome.result.run.inputs}
    with open_store(db) as store:
        rows = {r["path"]: r for r in store.db["inputs"].rows}
    for p, data in scanned.items():
        assert inputs[str(p)].bytes == len(data) and inputs[str(p)].lines == data.count(b"\n")
        assert rows[str(p)]["sha256"] == hashlib.sha256(data).hexdigest()
        assert unpack_log(rows[str(p)]["log"]) == data


@pytest.mark.parametrize("args", [["runs", "list", "--since", "99999999999d"],
                                  ["nightly", "--since", "99999999999d"],
                                  ["retriage", "--since", "99999999999d"],
                                  ["runs", "list", "--since", "9" * 5000 + "d"]])
def test_a_since_beyond_any_date_is_not_an_overflow(tmp_path: Path, args: list[str]) -> None:
    db = _db_with_runs(tmp_path, 1)
    proc = triage(*args, "--db", str(db), *(["--out", str(tmp_path / "r")] if args[0] == "nightly" else []))
    assert proc.returncode in (0, 2) and b"Traceback" not in proc.stderr, proc.stderr
    if proc.returncode == 2:
        assert proc.stderr.startswith(b"error: ")
