"""Files triage writes (`--output`, reports, index.html): whole or not at all.

Each is written to a temporary file beside its target and renamed over it when complete, so a failed write
(a full disk, a killed process) leaves the previous file, never half of a new one. Every failure is one line.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .display import shown_path
from .errors import TriageError


def write_text(path: str | os.PathLike[str], text: str, *, make_parents: bool = False) -> Path:
    """Write `text` (UTF-8) to `path` through a temporary file and a rename."""
    with open_text(path, make_parents=make_parents) as fh:
        fh.write(text)
    return Path(path)


@contextlib.contextmanager
def open_text(path: str | os.PathLike[str], *, make_parents: bool = False) -> Iterator[IO[str]]:
    """A text handle whose content replaces `path` when the block ends without an error."""
    target = Path(path)
    tmp: str | None = None
    try:
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "it is a folder", str(target))
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
        os.fchmod(fd, _mode_for(target))  # mkstemp makes it 0600: a published report must stay readable
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise _write_error(target, exc) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _mode_for(target: Path) -> int:
    """The permissions `target` gets: those of the file it replaces, else what `open()` would give a new file
    (0666 less the umask), as a plain shell redirect would."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


@functools.cache
def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask sets it; it is put back at once (single-threaded here)
    os.umask(mask)
    return mask


def check_writable(path: str | os.PathLike[str], *, make_parents: bool = False) -> None:
    """Refuse, before any work, an output path that cannot be written: a folder, or in a missing folder."""
    target = Path(path)
    if target.is_dir():
        raise _write_error(target, IsADirectoryError(errno.EISDIR, "it is a folder"))
    if not make_parents and not (target.parent if str(target.parent) else Path(".")).is_dir():
        raise _write_error(target, FileNotFoundError(errno.ENOENT, "no such folder"))


def _write_error(target: Path, exc: OSError) -> TriageError:
    shown = shown_path(str(target))
    if exc.errno == errno.ENOENT:
        return TriageError(f"cannot write {shown}: its folder does not exist",
                           hint=f"create {shown_path(str(target.parent))} first, or write elsewhere")
    if exc.errno == errno.EISDIR:
        return TriageError(f"cannot write {shown}: it is a folder", hint="give a file name inside it")
    if exc.errno == errno.ENOSPC:
        return TriageError(f"cannot write {shown}: the disk is full", hint="free some space; nothing was written")
    return TriageError(f"cannot write {shown}: {exc.strerror or exc}")
