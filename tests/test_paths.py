"""Folders with traps: symlink loops, dangling links, FIFOs, unreadable files and folders are skipped with
a warning, never a hang; named pipes given explicitly (process substitution) are read as streams."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pytest

from triage import scan_paths
from triage.errors import TriageError
from triage.scan import Matcher

from .conftest import ROOT

# A real line (fixtures/corpus/dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log, line 2).
MAPPING_FAILED = "  [error] Mapping Failed (allocation time: 1m 44s)"
NOBODY = 65534


@contextlib.contextmanager
def world_dir() -> Iterator[Path]:
    """A temp folder an unprivileged user can enter (pytest's tmp_path is private to its owner)."""
    d = Path(tempfile.mkdtemp(prefix="triage-paths-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in [d, *d.rglob("*")]:
            with contextlib.suppress(OSError):
                if not p.is_symlink():
                    p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(d, ignore_errors=True)


def as_nobody(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run `fn` in a forked child without privileges (root ignores permission bits) and return its outcome.

    Forked, not exec'd: the interpreter may live where `nobody` cannot read, so everything `fn` needs must be
    imported (and the matcher built) before the call.
    """
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(r)
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            payload = {"ok": fn()}
        except TriageError as exc:
            payload = {"error": exc.render(), "exit_code": exc.exit_code}
        except BaseException as exc:  # noqa: BLE001 - reported to the parent as a failure
            payload = {"crash": f"{type(exc).__name__}: {exc}"}
        with os.fdopen(w, "w") as fh:
            fh.write(json.dumps(payload))
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    out = json.loads(data)
    assert "crash" not in out, out["crash"]
    return out


def scan_as_nobody(paths: list[str], matcher: Matcher) -> dict[str, Any]:
    def run() -> dict[str, Any]:
        warnings: list[str] = []
        result = scan_paths(paths, matcher.packs, warn=warnings.append, matcher=matcher)
        return {"inputs": [i.path for i in result.run.inputs], "findings": [f.id for f in result.findings],
                "warnings": warnings}

    return as_nobody(run)


def cli(*args: str, timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": tempfile.gettempdir(), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "triage", "scan", "--no-store", "--format", "json", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          **kwargs)


def write_good(folder: Path, name: str = "good.log") -> Path:
    path = folder / name
    path.write_text(f"start\n{MAPPING_FAILED}\nend\n", encoding="utf-8")
    return path


def test_symlink_loops_and_dangling_links_are_skipped(packs, tmp_path: Path) -> None:
    write_good(tmp_path)
    (tmp_path / "a.log").symlink_to(tmp_path / "b.log")
    (tmp_path / "b.log").symlink_to(tmp_path / "a.log")
    (tmp_path / "self.log").symlink_to("self.log")
    (tmp_path / "dangling.log").symlink_to(tmp_path / "nowhere.log")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "up").symlink_to(tmp_path, target_is_directory=True)  # a directory cycle
    (sub / "again").symlink_to(sub, target_is_directory=True)
    warnings: list[str] = []
    result = scan_paths([str(tmp_path)], packs, warn=warnings.append)
    assert [i.path for i in result.run.inputs] == [str(tmp_path / "good.log")]
    assert [f.id for f in result.findings] == ["dfc/allocation-failed"]
    skipped = sorted(w for w in warnings if w.startswith("skipped "))
    assert skipped == sorted([
        f"skipped {tmp_path / 'a.log'}: Too many levels of symbolic links",
        f"skipped {tmp_path / 'b.log'}: Too many levels of symbolic links",
        f"skipped {tmp_path / 'self.log'}: Too many levels of symbolic links",
        f"skipped {tmp_path / 'dangling.log'}: No such file or directory",
    ])


def test_symlink_loop_named_explicitly_is_one_line_error(tmp_path: Path) -> None:
    loop = tmp_path / "loop.log"
    loop.symlink_to(loop)
    proc = cli(str(loop))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: cannot read {loop}: Too many levels of symbolic links"


def test_file_symlink_inside_folder_is_followed(packs, tmp_path: Path) -> None:
    target = write_good(tmp_path, "real.txt")  # not a recognised name itself
    (tmp_path / "linked.log").symlink_to(target)
    result = scan_paths([str(tmp_path)], packs)
    assert [i.path for i in result.run.inputs] == [str(tmp_path / "linked.log")]
    assert [f.id for f in result.findings] == ["dfc/allocation-failed"]


def test_fifo_in_a_folder_is_skipped_not_waited_on(tmp_path: Path) -> None:
    write_good(tmp_path)
    os.mkfifo(tmp_path / "pipe.log")  # no writer: opening it would block forever
    os.mkfifo(tmp_path / "vivado.log")
    proc = cli(str(tmp_path), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"warning: skipped {tmp_path / 'pipe.log'}: not a regular file" in proc.stderr
    assert f"warning: skipped {tmp_path / 'vivado.log'}: not a regular file" in proc.stderr
    doc = json.loads(proc.stdout)
    assert [i["path"] for i in doc["run"]["inputs"]] == [str(tmp_path / "good.log")]


def test_device_files_in_a_folder_are_skipped(packs, tmp_path: Path) -> None:
    write_good(tmp_path)
    (tmp_path / "zero.log").symlink_to("/dev/zero")  # endless input if it were read
    warnings: list[str] = []
    result = scan_paths([str(tmp_path)], packs, warn=warnings.append)
    assert [i.path for i in result.run.inputs] == [str(tmp_path / "good.log")]
    assert f"skipped {tmp_path / 'zero.log'}: not a regular file" in warnings


def test_named_pipe_given_explicitly_is_streamed(packs, tmp_path: Path) -> None:
    # what `triage scan <(make 2>&1)` does: the path is a pipe with a writer on the other end
    fifo = tmp_path / "stream.log"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "w", encoding="utf-8") as fh:
            fh.write(f"start\n{MAPPING_FAILED}\n" * 1000)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    result = scan_paths([str(fifo)], packs)
    t.join(10)
    assert result.run.inputs[0].lines == 2000
    assert result.findings[0].id == "dfc/allocation-failed" and result.findings[0].count == 1000


def test_unreadable_file_and_folder_inside_a_scanned_folder_are_skipped(matcher: Matcher) -> None:
    with world_dir() as d:
        write_good(d)
        secret = write_good(d, "secret.log")
        secret.chmod(0)
        locked = d / "locked"
        locked.mkdir()
        write_good(locked, "inner.log")
        locked.chmod(0)
        out = scan_as_nobody([str(d)], matcher)["ok"]
    assert out["inputs"] == [str(d / "good.log")]
    assert out["findings"] == ["dfc/allocation-failed"]
    assert sorted(out["warnings"]) == sorted([f"skipped {secret}: permission denied",
                                              f"skipped {locked}: Permission denied",
                                              f"{d}: scanned 1 file; skipped 2: 1 unreadable, 1 unreadable folder"])


def test_unreadable_file_named_explicitly_is_one_line_error(matcher: Matcher) -> None:
    with world_dir() as d:
        secret = write_good(d, "secret.log")
        secret.chmod(0)
        out = scan_as_nobody([str(write_good(d)), str(secret)], matcher)
    assert out == {"error": f"error: cannot read {secret}: permission denied", "exit_code": 2}


def test_unreadable_folder_named_explicitly_warns(matcher: Matcher) -> None:
    with world_dir() as d:
        locked = d / "locked"
        locked.mkdir()
        write_good(locked)
        locked.chmod(0)
        out = scan_as_nobody([str(locked)], matcher)["ok"]
    assert out["inputs"] == []
    assert out["warnings"] == [f"skipped {locked}: Permission denied",
                               f"{locked}: no log, report or config file to scan; skipped 1: 1 unreadable folder"]


def test_folder_with_only_traps_is_an_input_error(tmp_path: Path) -> None:
    """Nothing readable in the folder: exit 2 (a CI gate must not pass on it), saying what was skipped."""
    os.mkfifo(tmp_path / "only.log")
    (tmp_path / "loop.log").symlink_to(tmp_path / "loop.log")
    (tmp_path / "notes.txt").write_text("ERROR: not a log name\n")
    proc = cli(str(tmp_path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert (f"warning: {tmp_path}: no log, report or config file to scan; skipped 3: 1 broken link, "
            "1 not a regular file, 1 not named like a log, report or config (e.g. notes.txt; name one explicitly "
            "to scan it)") in proc.stderr
    assert f"error: nothing to scan in {tmp_path}: no log, report or config file" in proc.stderr
    allowed = cli(str(tmp_path), "--allow-empty")
    assert allowed.returncode == 0
    assert json.loads(allowed.stdout)["run"]["inputs"] == []


def test_an_unreadable_folder_alone_is_never_a_pass(matcher: Matcher) -> None:
    """It gave 0 findings and exit 0: a CI gate went green on a folder it could not read."""
    from triage.pipeline import run_scan

    with world_dir() as d:
        locked = d / "locked"
        locked.mkdir()
        write_good(locked)
        locked.chmod(0)
        warnings: list[str] = []
        out = as_nobody(lambda: run_scan([str(locked)], matcher.packs, warn=warnings.append) and None)
    assert out["exit_code"] == 2
    assert out["error"].startswith(f"error: nothing to scan in {locked}: no log, report or config file")
