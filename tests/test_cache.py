"""What is kept between runs: validated packs (the set and each file), the compiled gate, the knowledge
base's index; pruning; and what start-up does not import. No timings here: bench/ measures them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import regex

from triage import cache, load_packs
from triage.store import open_store
from triage.gate import HyperscanGate, PythonGate, candidates, make_gate
from triage.scan import Matcher, scan_sources
from triage.sources import Source

from .conftest import CORPUS, ROOT

BODY = ("pack: {name}\ntool: vivado\ncauses:\n  - id: {name}/x\n    title: {title}\n    severity: error\n"
        "    cause: A cause long enough to be a real explanation of the failure.\n"
        "    workaround: A workaround long enough to say what to change in the build.\n"
        "    signatures:\n      - regex: '{name} frobnicator exploded'\n        match: ['ERROR: {name} frobnicator exploded']\n")


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(folder))
    return folder


def _packs(folder: Path, **titles: str) -> Path:
    folder.mkdir(exist_ok=True)
    for name, title in titles.items():
        (folder / f"{name}.yaml").write_text(BODY.format(name=name, title=title))
    return folder


def test_an_edit_revalidates_only_the_file_that_changed(tmp_path: Path, cache_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from triage import packs as packs_module

    folder = _packs(tmp_path / "packs", one="First", two="Second")
    seen: list[str] = []
    real = packs_module.load_pack_file
    monkeypatch.setattr(packs_module, "load_pack_file", lambda p, check=True: seen.append(p.name) or real(p, check))
    load_packs(extra=[folder], builtin=False)
    assert sorted(seen) == ["one.yaml", "two.yaml"]
    seen.clear()
    assert load_packs(extra=[folder], builtin=False).causes["two/x"].title == "Second"
    assert seen == []  # the whole set came from the cache
    (folder / "two.yaml").write_text(BODY.format(name="two", title="Changed"))
    again = load_packs(extra=[folder], builtin=False)
    assert seen == ["two.yaml"] and again.causes["two/x"].title == "Changed" and again.causes["one/x"].title == "First"


def test_the_packs_digest_is_remembered_by_their_stat_and_an_edit_is_seen(tmp_path: Path, cache_dir: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from triage import packs as packs_module

    folder = _packs(tmp_path / "packs", one="First")
    monkeypatch.setattr(packs_module, "SETTLED_S", -3600.0)  # as if the file had been written an hour ago
    first = load_packs(extra=[folder], builtin=False)
    real = packs_module._read_pack_bytes
    with monkeypatch.context() as patch:
        patch.setattr(packs_module, "_read_pack_bytes", lambda p: pytest.fail(f"read {p.name}"))
        assert load_packs(extra=[folder], builtin=False).digest == first.digest
        assert packs_module.pack_digest([folder], builtin=False) == first.digest
    pack = folder / "one.yaml"
    before = pack.stat()
    pack.write_text(BODY.format(name="one", title="Fixed"))  # as long as "First"
    os.utime(pack, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # whatever the clock's resolution
    assert pack.stat().st_size == before.st_size and packs_module._read_pack_bytes is real
    assert load_packs(extra=[folder], builtin=False).causes["one/x"].title == "Fixed"


def test_packs_written_just_now_are_hashed_on_every_load(tmp_path: Path, cache_dir: Path) -> None:
    """A file may change again within its timestamps' resolution: its stat is not trusted yet."""
    folder = _packs(tmp_path / "packs", one="First")
    load_packs(extra=[folder], builtin=False)
    assert list(cache_dir.glob("packs-*")) and not list(cache_dir.glob("packstat-*"))


def test_old_cache_entries_are_pruned(tmp_path: Path, cache_dir: Path) -> None:
    cache_dir.mkdir()
    old = time.time() - (cache.MAX_AGE_DAYS + 1) * 86400
    stale = [cache_dir / f"packs-{i:016x}-000000000000.pickle" for i in range(cache.KEEP + 5)]
    for i, path in enumerate(stale):
        path.write_bytes(b"x")
        stamp = old if i == 0 else time.time() - 3600 * (i + 1)  # one expired; the rest ordered by use
        os.utime(path, (stamp, stamp))
    dead_tmp = cache_dir / "packs-dead.pickle.123.tmp"
    dead_tmp.write_bytes(b"x")
    os.utime(dead_tmp, (old, old))
    load_packs(extra=[_packs(tmp_path / "packs", one="First")], builtin=False)
    left = sorted(p.name for p in cache_dir.glob("packs-*"))
    assert len(left) == cache.KEEP  # the new entry and the KEEP - 1 most recently used
    assert stale[0].name not in left and dead_tmp.name not in left
    assert stale[1].name in left and stale[-1].name not in left


def test_a_broken_cache_entry_is_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    folder = _packs(tmp_path / "packs", one="First")
    load_packs(extra=[folder], builtin=False)
    for entry in cache_dir.iterdir():
        entry.write_bytes(b"not a pickle")
    assert load_packs(extra=[folder], builtin=False).causes["one/x"].title == "First"


def test_cached_python_gate_finds_what_a_fresh_one_finds(packs, cache_dir: Path) -> None:
    literals = [(lit, sig.ignore_case) for sig in packs.signatures for lit in sig.literals] + [("Killed", False)]
    built = make_gate(literals, "python")
    assert list(cache_dir.glob("gate_python-*.pickle"))
    loaded = make_gate(literals, "python")
    assert isinstance(loaded, PythonGate) and loaded is not built
    data = b"".join(p.read_bytes() for p in sorted((CORPUS / "logs").rglob("*.log")))
    fresh = candidates(PythonGate(literals), data)
    assert len(fresh) > 1000 and candidates(loaded, data) == fresh == candidates(built, data)


def test_cached_hyperscan_gate_finds_what_a_fresh_one_finds(packs, cache_dir: Path) -> None:
    pytest.importorskip("hyperscan")
    literals = [(lit, sig.ignore_case) for sig in packs.signatures for lit in sig.literals]
    make_gate(literals, "hyperscan")
    loaded = make_gate(literals, "hyperscan")
    assert isinstance(loaded, HyperscanGate)
    data = b"".join(p.read_bytes() for p in sorted((CORPUS / "logs").rglob("*.log")))
    assert candidates(loaded, data) == candidates(HyperscanGate(literals), data)


def test_pool_workers_get_the_parents_matcher_instead_of_building_one(packs, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that built its own matcher would compile the gate again (the cost the pool is meant to save)."""
    logs = []
    for i, rel in enumerate(("logs/hls/013-", "dfc/cases/043-")):
        path = tmp_path / f"{i}.log"
        path.write_bytes(next(CORPUS.glob(rel + "*")).read_bytes())
        logs.append(Source(str(path), "log", path.stat().st_size))
    matcher = Matcher(packs)
    parent = os.getpid()
    real_init = Matcher.__init__

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert os.getpid() == parent, "a pool worker built a matcher"
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Matcher, "__init__", init)
    parallel = scan_sources(packs, logs, jobs=2, matcher=matcher)
    assert parallel.to_dict() == scan_sources(packs, logs, jobs=1, matcher=matcher).to_dict()


def test_kb_search_reads_an_index_built_once(packs, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage import kb

    built: list[Path] = []
    real = kb._build_knowledge_db
    monkeypatch.setattr(kb, "_build_knowledge_db", lambda p, path: built.append(path) or real(p, path))
    first = [r["id"] for r in kb.search(packs, "allocation failed", 5)]
    second = [r["id"] for r in kb.search(packs, "allocation failed", 5)]
    assert first == second and "dfc/allocation-failed" in first and len(built) == 1
    assert [r["id"] for r in kb.search(packs, '"unbalanced [error] OR NOT', 5)] is not None


def test_help_does_not_import_the_scanner_the_store_or_rich() -> None:
    code = ("import sys, io, contextlib\nsys.argv = ['triage', '--help']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        from triage.cli import main; main()\n    except SystemExit:\n        pass\n"
            "print(' '.join(sorted(m for m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    loaded = set(out.stdout.split())
    assert "triage.cli" in loaded
    heavy = {"triage.packs", "triage.scan", "triage.store", "regex", "yaml", "sqlite_utils", "jinja2",
             "rich.console", "typer.rich_utils", "hyperscan"}
    assert not heavy & loaded, sorted(heavy & loaded)


BAD_EXAMPLE = BODY.replace("match: ['ERROR: {name} frobnicator exploded']",
                           "match: ['ERROR: {name} frobnicator exploded']\n"
                           "        no_match: ['ERROR: {name} frobnicator exploded twice']")
BAD_REGEX = BODY.replace("regex: '{name} frobnicator exploded'",
                         "regex: '{name} frobnicator (?P<x>exploded'\n        literal: frobnicator")


@pytest.fixture()
def builtin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for the built-in packs (synthetic): `builtin_pack_dir()` points here."""
    from triage import packs as packs_module

    folder = tmp_path / "builtin"
    folder.mkdir()
    monkeypatch.setattr(packs_module, "builtin_pack_dir", lambda: folder)
    return folder


def test_built_in_packs_load_unchecked_their_regexes_compiled_on_first_use(builtin_dir: Path, cache_dir: Path) -> None:
    (builtin_dir / "one.yaml").write_text(BODY.format(name="one", title="First"))
    for fresh in (True, False):  # validated now, then from the cache
        sig = load_packs().causes["one/x"].signatures[0]
        assert sig._compiled is None, fresh
        assert sig.match("ERROR: one frobnicator exploded") == {} and sig._compiled is not None


def test_a_broken_example_of_a_built_in_pack_fails_packs_check_and_a_users_pack_always(
        builtin_dir: Path, tmp_path: Path, cache_dir: Path) -> None:
    from typer.testing import CliRunner

    from triage.cli import app
    from triage.errors import PackError

    (builtin_dir / "one.yaml").write_text(BAD_EXAMPLE.format(name="one", title="First"))
    assert "one/x" in load_packs().causes  # trusted: the suite and `packs check` check the built-in packs
    with pytest.raises(PackError, match="no_match example matches"):
        load_packs(check=True)  # the unchecked set in the cache does not stand in for a check
    result = CliRunner().invoke(app, ["packs", "check"])
    assert isinstance(result.exception, PackError)  # `main` prints it as the one-line error, exit 2
    user = tmp_path / "mine"
    user.mkdir()
    (user / "two.yaml").write_text(BAD_EXAMPLE.format(name="two", title="Second"))
    with pytest.raises(PackError, match="no_match example matches"):
        load_packs(extra=[user])


def test_a_bad_regex_of_an_unchecked_pack_is_a_clear_error_at_first_use(builtin_dir: Path, cache_dir: Path) -> None:
    from triage import scan_text
    from triage.errors import PackError

    (builtin_dir / "one.yaml").write_text(BAD_REGEX.format(name="one", title="First"))
    packs = load_packs()
    assert scan_text("INFO: nothing to see\n", packs).findings == []  # no candidate line: never compiled
    with pytest.raises(PackError) as caught:
        scan_text("ERROR: one frobnicator exploded\n", packs)
    rendered = caught.value.render()
    assert "one/x: bad regex" in rendered and "one.yaml:" in rendered and "packs check" in rendered


def test_kb_search_reads_the_cached_index_without_sqlite_utils_or_the_scanner(packs, cache_dir: Path) -> None:
    from triage import kb

    want = [r["id"] for r in kb.search(packs, "allocation failed", 5)]  # builds the index (sqlite-utils)
    code = ("import sys\nfrom triage import kb, load_packs\n"
            "print(' '.join(r['id'] for r in kb.search(load_packs(), 'allocation failed', 5)))\n"
            "print(' '.join(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    ids, modules = out.stdout.splitlines()
    assert ids.split() == want and "dfc/allocation-failed" in want
    assert not {"sqlite_utils", "triage.scan", "triage.store"} & set(modules.split())


def test_a_damaged_knowledge_index_in_the_cache_is_bypassed(packs, cache_dir: Path) -> None:
    from triage import kb

    want = [r["id"] for r in kb.search(packs, "allocation failed", 5)]
    (index,) = cache_dir.glob("kb-*.db")
    index.write_bytes(b"not a database " * 100)
    assert [r["id"] for r in kb.search(packs, "allocation failed", 5)] == want


def test_kb_search_of_cached_packs_reads_only_the_index_and_a_changed_pack_is_loaded_first(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage import kb
    from triage import packs as packs_module
    from triage.errors import PackError

    folder = _packs(tmp_path / "packs", one="Frobnicator exploded")
    want = [r["id"] for r in kb.search_packs([folder], "frobnicator", 5)]
    assert want and want == [r["id"] for r in kb.search(load_packs([folder]), "frobnicator", 5)]
    with monkeypatch.context() as patch:
        patch.setattr(packs_module, "load_packs", lambda *a, **k: pytest.fail("loaded the packs"))
        assert [r["id"] for r in kb.search_packs([folder], "frobnicator", 5)] == want
    (folder / "one.yaml").write_text(BAD_EXAMPLE.format(name="one", title="Frobnicator exploded"))
    with pytest.raises(PackError, match="no_match example matches"):
        kb.search_packs([folder], "frobnicator", 5)


def test_a_parallel_scan_compiles_every_regex_once_and_later_ones_thaw_them(
        builtin_dir: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage import packs as packs_module

    (builtin_dir / "one.yaml").write_text(BODY.format(name="one", title="First"))
    (builtin_dir / "two.yaml").write_text(BODY.format(name="two", title="Second"))
    packs_module.compile_all(load_packs())  # compiles both and keeps them
    assert list(cache_dir.glob("regexes-*.pickle"))
    again = load_packs()
    assert all(s._compiled is None for s in again.signatures)  # a short command compiles only what it uses
    with monkeypatch.context() as patch:
        patch.setattr(regex, "compile", lambda *a, **k: pytest.fail("compiled again"))
        packs_module.compile_all(again)
        lines = ("ERROR: one frobnicator exploded", "ERROR: two frobnicator exploded")
        assert [s.match(line) for s, line in zip(again.signatures, lines)] == [{}, {}]


def test_recording_a_scan_in_a_database_that_exists_does_not_import_sqlite_utils(tmp_path: Path,
                                                                                   cache_dir: Path) -> None:
    db = tmp_path / "runs.db"
    log = tmp_path / "one.log"
    log.write_text("ERROR: [HLS 214-124] use of undeclared identifier 'foo'\n")
    code = ("import sys, io, contextlib\nsys.argv = ['triage', 'scan', sys.argv[1], '--db', sys.argv[2], '--format', 'json']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        from triage.cli import main; main()\n    except SystemExit:\n        pass\n"
            "print(' '.join(sorted(m for m in sys.modules)))\n")
    runs = []
    for text in ("first", "second"):  # the first creates the database (and its knowledge base) with sqlite-utils
        log.write_text(f"ERROR: [HLS 214-124] use of undeclared identifier '{text}'\n")
        out = subprocess.run([sys.executable, "-c", code, str(log), str(db)], capture_output=True, text=True,
                             cwd=ROOT, timeout=120)
        runs.append(set(out.stdout.split()))
    assert "sqlite_utils" in runs[0] and "sqlite_utils" not in runs[1]
    with open_store(db, create=False) as store:
        stored = store.runs(limit=None)
        assert [r["status"] for r in stored] == ["failed", "failed"] and {r["top"] for r in stored} == {
            "hls/clang-undeclared-identifier"}
