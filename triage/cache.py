"""What start-up would otherwise rebuild on every run, kept on disk: validated packs, the compiled matcher,
the knowledge base's search index.

Each entry is named by its kind, the content key of what it was built from (the packs' digest) and a hash
of the code that builds it (plus the Python, `regex` and `hyperscan` versions), so any change to either
makes a new entry. Entries are written atomically; old ones (unused for `MAX_AGE_DAYS`, or beyond the
`KEEP` most recently used of a kind) are pruned when a new one is written. A cache is an optimisation: an
unreadable or unwritable cache never fails a command.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

KEEP = 8  # entries of one kind kept (other checkouts and versions on the same machine have their own)
MAX_AGE_DAYS = 30

_code_hashes: dict[tuple[str, ...], str] = {}


def cache_dir() -> Path | None:
    """`TRIAGE_CACHE_DIR`, else the user cache directory."""
    try:
        env = os.environ.get("TRIAGE_CACHE_DIR")
        if env:
            return Path(env)
        import platformdirs  # noqa: PLC0415 - only when there is no explicit folder

        return Path(platformdirs.user_cache_dir("triage"))
    except Exception:  # noqa: BLE001 - a cache is an optimisation
        return None


def code_hash(modules: Iterable[str], versions: str = "") -> str:
    """A hash of these modules' source (files beside this one), the Python version and `versions` (those
    of the libraries whose objects are cached)."""
    names = (*modules, versions)
    cached = _code_hashes.get(names)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in names[:-1]:
        digest.update((here / name).read_bytes())
    digest.update(f"{sys.version}\0{versions}".encode())
    _code_hashes[names] = value = digest.hexdigest()[:12]
    return value


def path_for(kind: str, key: str, code: str, suffix: str = ".pickle") -> Path | None:
    root = cache_dir()
    return None if root is None else root / f"{kind}-{key}-{code}{suffix}"


def load(kind: str, key: str, code: str) -> Any:
    """The cached object, or None (missing, stale or broken: the caller rebuilds it)."""
    path = path_for(kind, key, code)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    collecting = gc.isenabled()
    gc.disable()  # a pack set is tens of thousands of new containers: the cyclic collector would walk them
    try:          # again and again while they are made, and none of them is garbage
        obj = pickle.loads(data)
    except Exception:  # noqa: BLE001 - a broken entry is simply rebuilt
        return None
    finally:
        if collecting:
            gc.enable()
    touch(path)
    return obj


def store(kind: str, key: str, code: str, obj: Any, keep: int = KEEP) -> None:
    path = path_for(kind, key, code)
    if path is None:
        return
    try:
        write_atomic(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return
    prune(kind, current=path, keep=keep)


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def touch(path: Path) -> None:
    """Mark an entry as used (its mtime), at most once an hour, so pruning keeps what is in use."""
    try:
        if time.time() - path.stat().st_mtime > 3600:
            os.utime(path)
    except OSError:
        pass


def prune(kind: str, current: Path | None = None, keep: int = KEEP) -> list[Path]:
    """Delete this kind's entries unused for MAX_AGE_DAYS or beyond the `keep` most recently used (and
    temporary files left by a writer that died), never `current`. Returns what was deleted."""
    root = cache_dir()
    if root is None:
        return []
    now = time.time()
    entries: list[tuple[float, Path]] = []
    doomed: list[Path] = []
    try:
        for p in root.glob(f"{kind}-*"):
            mtime = p.stat().st_mtime
            if p.name.endswith(".tmp"):  # another writer's, unless it died long ago
                if now - mtime > 3600:
                    doomed.append(p)
            elif p != current:
                entries.append((mtime, p))
    except OSError:
        return []
    entries.sort(reverse=True)
    doomed += [p for i, (mtime, p) in enumerate(entries) if i >= keep - 1 or now - mtime > MAX_AGE_DAYS * 86400]
    removed = []
    for p in doomed:
        try:
            p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed
