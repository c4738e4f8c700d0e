"""Hypothesis over the whole `triage scan` path (the Typer app, in process): whatever the bytes, the scan
ends with exit 0 or 1, a valid JSON document, and no traceback.

Inputs mix real corpus lines with random bytes, broken UTF-8, NULs, ANSI escapes, CR/CRLF, Latin-1 and
UTF-16 text and long lines; some are gzipped, zstd-, xz- or bz2-compressed (whole, cut short, padded, with junk
after), some UTF-16 with a BOM; some arrive on stdin, some as files. The number of examples comes from TRIAGE_FUZZ_EXAMPLES (`make test`: 150; `make fuzz`: 10000).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner
import zstandard

import triage.cli
from triage.decode import SNIFF_BYTES, needs_decoding
from triage.errors import TriageError
from triage.sources import LINE_CAP

from .conftest import CORPUS

EXAMPLES = int(os.environ.get("TRIAGE_FUZZ_EXAMPLES", "150"))
# Hypothesis slows down and grows (GBs) when one test runs many thousands of examples: run shards of at
# most 1000, each a fresh engine with its own random seed.
PER_SHARD = min(EXAMPLES, 1000)
SHARDS = -(-EXAMPLES // PER_SHARD)


def _real_lines() -> list[bytes]:
    rng = random.Random(1)
    files = sorted(p for p in CORPUS.rglob("*.log") if p.is_file())
    lines: list[bytes] = []
    for path in files:
        raw = path.read_bytes().splitlines()
        lines.extend(rng.sample(raw, min(len(raw), 20)))
    return lines


REAL = _real_lines()

ANSI = [b"\x1b[0m", b"\x1b[1;31m", b"\x1b[2K", b"\x1b]0;title\x07", b"\x1b[38;5;196m", b"\x1b", b"\x1b[", b"\x1b]8;;"]
BROKEN_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x80\x80"]
EOLS = [b"\n", b"\r\n", b"\r", b"\n\r", b"\r\r\n"]

piece = st.one_of(
    st.sampled_from(REAL),
    st.binary(max_size=300),
    st.sampled_from(ANSI),
    st.sampled_from(BROKEN_UTF8),
    st.sampled_from(EOLS),
    st.just(b"\x00"),
    st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(REAL).map(lambda b: b.decode("utf-8", "replace").encode("latin-1", "replace")),
    st.sampled_from(REAL).map(lambda b: b.decode("utf-8", "replace").encode("utf-16")),
    st.sampled_from([200, 5000]).map(lambda n: b"x" * n),
)


@st.composite
def log_bytes(draw: st.DrawFn) -> bytes:
    pieces = draw(st.lists(piece, max_size=40))
    if draw(st.integers(0, 19)) == 0:  # one example in 20 carries one line at or over the 1 MiB cap
        long_line = draw(st.sampled_from([LINE_CAP - 1, LINE_CAP, LINE_CAP + 3, 3 * LINE_CAP]))
        pieces.insert(draw(st.integers(0, len(pieces))), b"x" * long_line)
    return b"".join(pieces)


@st.composite
def payloads(draw: st.DrawFn) -> tuple[bytes, str]:
    data = draw(log_bytes())
    wrap = draw(st.sampled_from(["plain", "plain", "plain", "gzip", "gzip-cut", "gzip-garbage", "gzip-padded",
                                 "zstd", "zstd-cut", "xz", "xz-cut", "bz2", "bz2-cut", "utf16", "packed-tail"]))
    pack = {"gzip": gzip.compress, "zstd": zstandard.ZstdCompressor(write_checksum=True).compress,
            "xz": lzma.compress, "bz2": bz2.compress}
    codec = wrap.split("-")[0]
    if wrap in pack:
        data = pack[wrap](data)
    elif wrap.endswith("-cut"):
        packed = pack[codec](data)
        data = packed[: draw(st.integers(0, len(packed)))]
    elif wrap == "gzip-garbage":
        data = b"\x1f\x8b" + draw(st.binary(max_size=200))
    elif wrap == "gzip-padded":
        data = gzip.compress(data) + b"\x00" * draw(st.integers(1, 5000))
    elif wrap == "utf16":
        data = "\ufeff".encode("utf-16-le") + data.decode("utf-8", "replace").encode("utf-16-le", "surrogatepass")
    elif wrap == "packed-tail":  # a compressed copy with junk after it
        data = pack[draw(st.sampled_from(sorted(pack)))](data) + draw(st.binary(min_size=1, max_size=100))
    return data, wrap


@pytest.fixture(scope="module")
def cli(packs):  # type: ignore[no-untyped-def]
    """The Typer app with the pack set loaded once and the click command built once (neither is fuzzed)."""
    import typer.testing

    original = triage.cli.load_packs, getattr(typer.testing, "_get_command", None)
    triage.cli.load_packs = lambda extra=(), builtin=True: packs  # type: ignore[assignment]
    if original[1] is not None:
        command = original[1](triage.cli.app)
        typer.testing._get_command = lambda app: command  # type: ignore[attr-defined]
    try:
        yield CliRunner()
    finally:
        triage.cli.load_packs = original[0]
        if original[1] is not None:
            typer.testing._get_command = original[1]  # type: ignore[attr-defined]


def _check(result, data: bytes, wrap: str, fmt: str, allow_empty: bool) -> None:  # type: ignore[no-untyped-def]
    if isinstance(result.exception, TriageError):  # `main()` prints it as one line and exits 2
        assert not allow_empty, result.exception.render()
        assert result.exception.exit_code == 2 and result.exception.message.startswith("nothing "), \
            result.exception.render()
        return
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code in (0, 1), (result.exit_code, result.output[-2000:])
    assert "Traceback (most recent call last)" not in result.stderr  # logs may contain tracebacks; ours may not
    if fmt == "json":
        doc = json.loads(result.stdout)
        assert {"run", "findings", "unexplained"} <= set(doc)
        (info,) = doc["run"]["inputs"]
        if wrap == "plain" and not needs_decoding(data[:SNIFF_BYTES]):
            assert info["bytes"] == len(data)
            assert info["lines"] == data.count(b"\n") + (not data.endswith(b"\n") and bool(data))  # as grep -n
        for f in doc["findings"]:
            assert f["count"] >= 1
            for ev in f["evidence"]:
                assert 1 <= ev["line"] <= info["lines"]
                assert "\x00" not in ev["text"] and "\x1b" not in ev["text"] and "\r" not in ev["text"]


@pytest.mark.parametrize("shard", range(SHARDS))
@settings(max_examples=PER_SHARD, deadline=None, derandomize=EXAMPLES <= 500, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
                                 HealthCheck.function_scoped_fixture])
@given(payload=payloads(), via=st.sampled_from(["stdin", "file"]), fmt=st.sampled_from(["json", "json", "text"]),
       allow_empty=st.booleans())
def test_scan_never_crashes(cli, tmp_path_factory, shard: int, payload: tuple[bytes, str], via: str, fmt: str,  # type: ignore[no-untyped-def]
                            allow_empty: bool) -> None:
    data, wrap = payload
    args = ["scan", "--no-store", "--format", fmt] + (["--allow-empty"] if allow_empty else [])
    if via == "stdin":
        result = cli.invoke(triage.cli.app, [*args, "-"], input=data)
    else:
        path: Path = tmp_path_factory.mktemp("fuzz") / ("build.log.gz" if wrap != "plain" else "build.log")
        path.write_bytes(data)
        result = cli.invoke(triage.cli.app, [*args, str(path)])
        path.unlink()
    _check(result, data, wrap, fmt, allow_empty)



# ---------------------------------------------------------------------------------------------------------
# Beyond log bytes: file names, labels, configs and ingested documents (each a quarter of the examples)

SIDE = max(25, EXAMPLES // 4)
SIDE_SHARD = min(SIDE, 1000)
SIDE_SHARDS = -(-SIDE // SIDE_SHARD)
SIDE_SETTINGS = settings(max_examples=SIDE_SHARD, deadline=None, derandomize=EXAMPLES <= 500, database=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                HealthCheck.large_base_example, HealthCheck.function_scoped_fixture])
REAL_LOG = (CORPUS / "dfc" / "cases").glob("043-*.log").__next__().read_bytes()
UNSAFE = re.compile("[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but ESC of Rich's colours


def _outcome(result) -> int:  # type: ignore[no-untyped-def]
    """Exit 0/1, or the one-line error (exit 2, what `main()` makes of a TriageError); never an exception of ours."""
    if isinstance(result.exception, TriageError):
        assert result.exception.exit_code == 2
        result.exception.render().encode("utf-8")
        return 2
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output[-2000:])
    return int(result.exit_code)


def _terminal_clean(text: str) -> None:
    assert not UNSAFE.search(text), repr(UNSAFE.search(text).group(0))  # type: ignore[union-attr]
    for line in text.splitlines():  # a CI log reads workflow commands at the start of a line
        assert not line.lstrip().startswith(("::add-mask::", "::stop-commands::", "::set-env")), line


names = st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))


@pytest.mark.parametrize("shard", range(SIDE_SHARDS))
@SIDE_SETTINGS
@given(name=names, suffix=st.sampled_from([b"", b".log", b".log.gz", b".rpt", b".alls"]),
       fmt=st.sampled_from(["text", "json", "github", "gitlab", "sarif", "junit"]), whole_folder=st.booleans())
def test_any_file_name_is_shown_safely(cli, tmp_path_factory, shard: int, name: bytes, suffix: bytes, fmt: str,  # type: ignore[no-untyped-def]
                                       whole_folder: bool) -> None:
    folder = tmp_path_factory.mktemp("names")
    path = os.fsencode(folder) + b"/" + name + suffix
    data = gzip.compress(REAL_LOG) if suffix.endswith(b".gz") else REAL_LOG
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError:  # a name the file system refuses (too long): nothing to test
        return
    target = str(folder) if whole_folder else os.fsdecode(path)
    result = cli.invoke(triage.cli.app, ["scan", "--no-store", "--format", fmt, target])
    code = _outcome(result)
    out = result.stdout
    if fmt in ("json", "gitlab") and code in (0, 1):
        json.loads(out)
    if fmt in ("text", "github"):
        _terminal_clean(out)
    _terminal_clean(result.stderr)
    out.encode("utf-8")  # every output is valid UTF-8 (no lone surrogates from the name)


@pytest.mark.parametrize("shard", range(SIDE_SHARDS))
@SIDE_SETTINGS
@given(label=st.binary(max_size=60).map(lambda b: b.decode("utf-8", "surrogateescape")),
       model=st.text(max_size=30))
def test_any_label_is_stored_and_shown_safely(cli, tmp_path_factory, shard: int, label: str, model: str) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("labels")
    log = folder / "build.log"
    log.write_bytes(REAL_LOG)
    db = str(folder / "r.db")
    _outcome(cli.invoke(triage.cli.app, ["scan", str(log), "--db", db, "--label", label, "--model", model]))
    for args in (["runs", "list", "--db", db], ["runs", "show", "1", "--db", db]):
        result = cli.invoke(triage.cli.app, args)
        _outcome(result)
        _terminal_clean(result.stdout)


CONFIG_PIECES = st.one_of(
    st.sampled_from([
        "HLSConfig:\n", "  Model:\n", "    ReuseFactor: 4\n", "  LayerName:\n", "    fc1: {IOType: io_stream}\n",
        "a: &x [1, 2]\n", "b: *x\n", "c: &y {k: *x}\n", "[" * 200, "]" * 200, "{" * 200, "}" * 200, "'", '"', "\\",
        "performance_param(compiler_optimization_level=max)\n", "resources_param(strategy=greedy\n", "(" * 50,
        "config = {'HLSConfig': {'Model': {'ReuseFactor': 3}}}\n", "{'", '{"', "model.compile(\n",
        "hls_model = hls4ml.converters.convert_from_keras_model(model, io_type='io_stream')\n",
        "config['LayerName']['fc1']['ReuseFactor'] = 0\n", "set x {'it's'}\n", "\t", "\n", ": ", "- ", "!!python/object ",
    ]),
    st.text(max_size=40),
)


@pytest.mark.parametrize("shard", range(SIDE_SHARDS))
@SIDE_SETTINGS
@given(pieces=st.lists(CONFIG_PIECES, max_size=60), repeat=st.sampled_from([1, 1, 50, 2000]),
       name=st.sampled_from(["hls4ml_config.yml", "hls4ml_config.json", "model.alls", "build.tcl", "convert.py",
                             "settings.toml"]))
def test_any_config_is_read_within_its_limits(cli, tmp_path_factory, shard: int, pieces: list[str], repeat: int,  # type: ignore[no-untyped-def]
                                              name: str) -> None:
    path = tmp_path_factory.mktemp("configs") / name
    path.write_text("".join(pieces) * repeat, encoding="utf-8", errors="surrogatepass")
    result = cli.invoke(triage.cli.app, ["scan", "--no-store", "--format", "json", "--allow-empty", str(path)])
    if _outcome(result) in (0, 1):
        json.loads(result.stdout)


@pytest.fixture(scope="module")
def real_doc(cli, tmp_path_factory):  # type: ignore[no-untyped-def]
    log = tmp_path_factory.mktemp("doc") / "build.log"
    log.write_bytes(REAL_LOG)
    return json.loads(cli.invoke(triage.cli.app, ["scan", "--no-store", "--format", "json", str(log)]).stdout)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10 ** 30), max_value=10 ** 30) | st.floats(allow_nan=True)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _paths(value, prefix=()):  # type: ignore[no-untyped-def]
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@pytest.mark.parametrize("shard", range(SIDE_SHARDS))
@SIDE_SETTINGS
@given(data=st.data())
def test_any_ingested_document_is_refused_by_field_or_stored_and_reported(cli, tmp_path_factory, real_doc, shard: int,  # type: ignore[no-untyped-def]
                                                                          data: st.DataObject) -> None:
    import copy

    from triage.report import build_nightly_context, build_run_context, render_nightly, render_run
    from triage.store import open_store

    doc = copy.deepcopy(real_doc)
    spots = list(_paths(doc))
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.sampled_from(spots))
        if not where:
            continue
        parent = doc
        try:
            for key in where[:-1]:
                parent = parent[key]
            if data.draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(where[-1], None)
            else:
                parent[where[-1]] = data.draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue
    folder = tmp_path_factory.mktemp("ingest")
    path = folder / "doc.json"
    path.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8", errors="surrogatepass")
    db = folder / "r.db"
    result = cli.invoke(triage.cli.app, ["ingest", str(path), "--db", str(db)])
    if _outcome(result) == 2:
        assert result.stderr.startswith("error: "), result.stderr
        with open_store(db) as store:
            assert store.db["runs"].count == 0  # nothing stored from a rejected document
        return
    from datetime import UTC, datetime, timedelta

    with open_store(db) as store:  # what was accepted renders, for the engineer and the team
        render_run(build_run_context(store, 1))
        now = datetime.now(UTC) + timedelta(days=1)
        render_nightly(build_nightly_context(store, datetime(1971, 1, 1, tzinfo=UTC), now, now=now))
    _outcome(cli.invoke(triage.cli.app, ["runs", "show", "1", "--db", str(db)]))
