"""Warm start-up of two checkouts side by side: in every round each short command runs under the first
checkout, then under the second, and the CPU time (user + system) of each is recorded; medians per command.

On a shared machine the load moves between `bench/run --root A` and a later `bench/run --root B`; pairing the
runs within a round makes the ratio hold whatever the load. Each checkout keeps its own warm cache folder.

    .venv/bin/python bench/startup_ab.py ../before . --rounds 7 [--packs DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

KNOWN = "[error] Mapping Failed (allocation time: 1m 44s)"
UNKNOWN = "ERROR: [XYZ 7-7] frobnicated the widget twice in foo.cpp"


def commands(small: Path) -> dict[str, list[str] | None]:
    """The commands `bench/run --only startup` times (None: the bare interpreter)."""
    return {
        "python -c pass": None,
        "triage --help": ["--help"],
        "scan, 10-line log, --format json": ["scan", "--no-store", "--format", "json", str(small)],
        "scan, 10-line log, stored (default)": ["scan", "--format", "json", str(small)],
        "scan, 10-line log (text)": ["scan", "--no-store", str(small)],
        "explain <a known line>": ["explain", KNOWN],
        "explain <an unknown line>": ["explain", UNKNOWN],
        "kb search allocation": ["kb", "search", "allocation"],
    }


def cpu_of(python: str, root: Path, args: list[str] | None, env: dict[str, str]) -> float:
    cmd = [python, "-c", "pass"] if args is None else [python, "-m", "triage", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env={**env, "PYTHONPATH": str(root)}, cwd=root, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", type=Path, help="a checkout (e.g. the one before a change)")
    parser.add_argument("second", type=Path, help="another checkout (e.g. this one)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--packs", help="extra pack folder for both (TRIAGE_PACKS), e.g. bench/genpack.py's")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    roots = {"first": args.first.resolve(), "second": args.second.resolve()}
    work = Path(tempfile.mkdtemp(prefix="triage-startup-ab-"))
    try:
        small = work / "ten.log"
        small.write_bytes(b"".join(b"INFO: [HLS 200-10] line %d\n" % i for i in range(9))
                          + b"  [error] Mapping Failed (allocation time: 1m 44s)\n")
        for root in roots.values():  # installed wheels have their bytecode compiled; so do these
            subprocess.run([args.python, "-m", "compileall", "-q", str(root / "triage")], check=True)
        base = {k: v for k, v in os.environ.items() if k != "TRIAGE_PACKS"}
        if args.packs:
            base["TRIAGE_PACKS"] = str(Path(args.packs).resolve())
        cmds = commands(small)
        for matcher in ("python", "hyperscan"):
            envs = {name: {**base, "TRIAGE_MATCHER": matcher, "TRIAGE_CACHE_DIR": str(work / f"cache-{name}"),
                           "TRIAGE_DB": str(work / f"runs-{name}-{matcher}.db")} for name in roots}
            for name, root in roots.items():  # fill the caches
                for cmd in cmds.values():
                    cpu_of(args.python, root, cmd, envs[name])
            times: dict[tuple[str, str], list[float]] = {(c, n): [] for c in cmds for n in roots}
            loads = []
            for _ in range(args.rounds):
                loads.append(os.getloadavg()[0])
                for c, cmd in cmds.items():
                    for name, root in roots.items():
                        times[(c, name)].append(cpu_of(args.python, root, cmd, envs[name]))
            print(f"TRIAGE_MATCHER={matcher}, {args.rounds} paired rounds, load {min(loads):.1f}-{max(loads):.1f} "
                  f"on {os.cpu_count()} cores; cpu medians: {roots['first']} | {roots['second']}")
            for c in cmds:
                a, b = (statistics.median(times[(c, n)]) for n in roots)
                print(f"  {c:<36} {1000 * a:6.0f} ms | {1000 * b:6.0f} ms   x {b / a:4.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
