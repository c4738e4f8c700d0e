"""Throughput, memory and start-up of `triage scan`, with the machine's grep beside it, in one run.

Builds Vivado/HLS/DFC-like logs from random real corpus lines (seeded) in a temp folder, then measures:
grep over the signature literals; `triage scan --format json --no-store` with the pure-Python gate and with
hyperscan; peak RSS at 20 MB and 2 GB (`--quick` skips the 2 GB log); start-up on a 10-line log; the store
on vs off; several inputs with -j 2 vs -j 1 (findings compared). See bench/README.md for each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS_LOGS = ROOT / "fixtures" / "corpus" / "logs"
MB = 1_000_000


@dataclass
class Run:
    seconds: float
    rss_mb: float
    returncode: int
    stdout: Path


def corpus_lines() -> list[bytes]:
    lines: list[bytes] = []
    for path in sorted(CORPUS_LOGS.rglob("*.log")):
        lines.extend(line for line in path.read_bytes().splitlines() if line.strip())
    if not lines:
        sys.exit(f"no corpus lines under {CORPUS_LOGS}")
    return lines


def build_log(path: Path, size: int, lines: list[bytes], seed: int) -> Path:
    """Write about `size` bytes of randomly chosen real lines (seeded, so every run scans the same text)."""
    rng = random.Random(seed)
    written = 0
    with path.open("wb") as fh:
        while written < size:
            chunk = b"\n".join(rng.choices(lines, k=20_000)) + b"\n"
            chunk = chunk[: size - written] if written + len(chunk) > size else chunk
            if not chunk.endswith(b"\n"):
                chunk = chunk[: chunk.rfind(b"\n") + 1] or chunk
            fh.write(chunk)
            written += len(chunk)
    return path


def measure(cmd: list[str], env: dict[str, str], out: Path, stdin: Path | None = None) -> Run:
    """Wall time and this child's own peak RSS (os.wait4 gives per-child rusage)."""
    with out.open("wb") as fh, (stdin.open("rb") if stdin else open(os.devnull, "rb")) as inp:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL,
                                stdin=inp, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(seconds, usage.ru_maxrss / 1024, proc.returncode, out)


def best(runs: list[Run]) -> Run:
    return min(runs, key=lambda r: r.seconds)


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.python = args.python
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "TRIAGE_DB": str(work / "bench.db")}
        self.env.pop("TRIAGE_PACKS", None)
        self.rows: list[tuple[str, str]] = []
        self.help = subprocess.run([self.python, "-m", "triage", "scan", "--help"], capture_output=True, text=True,
                                   env=self.env, cwd=ROOT).stdout
        self.has_no_store = "--no-store" in self.help
        self.matchers = ["python"] + (["hyperscan"] if self._has_hyperscan() else [])
        # An installed wheel has its bytecode compiled (pip does it); an editable checkout under
        # PYTHONDONTWRITEBYTECODE would recompile every module on every start.
        subprocess.run([self.python, "-m", "compileall", "-q", str(ROOT / "triage")], check=True, env=self.env)

    def _has_hyperscan(self) -> bool:
        probe = subprocess.run([self.python, "-c", "import hyperscan"], capture_output=True, env=self.env)
        return probe.returncode == 0

    def row(self, name: str, value: str) -> None:
        self.rows.append((name, value))
        print(f"  {name:<58} {value}", flush=True)

    def triage(self, inputs: list[Path], matcher: str, *extra: str, store: bool = False, tag: str = "") -> Run:
        cmd = [self.python, "-m", "triage", "scan", "--format", "json", *extra]
        if not store and self.has_no_store:
            cmd.append("--no-store")
        cmd += [str(p) for p in inputs]
        env = {**self.env, "TRIAGE_MATCHER": matcher}
        run = measure(cmd, env, self.work / f"out-{matcher}-{tag or inputs[0].stem}.json")
        if run.returncode not in (0, 1):
            sys.exit(f"triage failed ({run.returncode}): {' '.join(cmd)}")
        return run

    # ----------------------------------------------------------------------------------------------------

    def literals(self) -> tuple[list[str], list[str]]:
        """The gate's literals, as the scanner builds them (signatures, detection rules, error-like words)."""
        code = (
            "import json\nfrom triage.packs import load_packs\nfrom triage.scan import Matcher\n"
            "m = Matcher(load_packs(), 'python')\n"
            "print(json.dumps([m.gate.exact_words, m.gate.folded_words]))\n"
        )
        out = subprocess.run([self.python, "-c", code], capture_output=True, text=True, env=self.env, cwd=ROOT)
        if out.returncode != 0:
            sys.exit(f"cannot read the gate's literals:\n{out.stderr}")
        exact, folded = json.loads(out.stdout)
        return exact, folded

    def grep(self, log: Path, exact: list[str], folded: list[str]) -> float:
        ere = self.work / "literals.ere"
        ere.write_text("\n".join(re.sub(r"([.\[\]\\*^$+?(){}|])", r"\\\1", w) for w in exact + folded) + "\n")
        fixed = self.work / "literals.txt"
        fixed.write_text("\n".join(exact + folded) + "\n")
        env = {**os.environ, "LC_ALL": "C"}
        size = log.stat().st_size / MB
        times = {}
        for label, cmd in (("grep -c -E -f", ["grep", "-c", "-E", "-f", str(ere), str(log)]),
                           ("grep -c -F -f", ["grep", "-c", "-F", "-f", str(fixed), str(log)])):
            runs = [measure(cmd, env, self.work / "grep.out") for _ in range(3)]
            count = (self.work / "grep.out").read_text().strip()
            times[label] = best(runs).seconds
            self.row(f"{label} ({len(exact) + len(folded)} literals, LC_ALL=C), {count} lines",
                     f"{best(runs).seconds:6.2f} s  {size / best(runs).seconds:7.0f} MB/s")
        return times["grep -c -E -f"]

    def throughput(self, log: Path, grep_s: float, repeats: int = 3) -> dict[str, dict]:
        size = log.stat().st_size / MB
        findings = {}
        for matcher in self.matchers:
            runs = [self.triage([log], matcher, tag=f"tp{i}") for i in range(repeats)]
            run = best(runs)
            findings[matcher] = normalised(run.stdout)
            self.row(f"triage scan --format json --no-store, TRIAGE_MATCHER={matcher}",
                     f"{run.seconds:6.2f} s  {size / run.seconds:7.0f} MB/s  {run.seconds / grep_s:4.1f}x grep  "
                     f"peak RSS {max(r.rss_mb for r in runs):5.0f} MB")
        if len(findings) == 2:
            same = findings["python"] == findings["hyperscan"]
            self.row("python and hyperscan findings identical", "yes" if same else "NO — DIFFERENT")
        return findings

    def rss(self, log: Path) -> None:
        size = log.stat().st_size / MB
        for matcher in self.matchers:
            # -j 1: the whole scan in one process, so its peak is the scan's whole memory (with -j 2 the
            # figure would be that of the largest of the parent and its workers)
            run = self.triage([log], matcher, "-j", "1", tag="rss")
            self.row(f"peak RSS, {size:,.0f} MB input, -j 1, {matcher}",
                     f"{run.rss_mb:5.0f} MB  ({run.seconds:.1f} s, {size / run.seconds:.0f} MB/s)")

    def startup(self) -> None:
        small = self.work / "ten.log"
        small.write_bytes(b"".join(b"INFO: [HLS 200-10] line %d\n" % i for i in range(9))
                          + b"  [error] Mapping Failed (allocation time: 1m 44s)\n")
        for matcher in self.matchers:
            runs = [self.triage([small], matcher, tag="startup") for _ in range(5)]
            med = statistics.median(r.seconds for r in runs)
            self.row(f"start-up, 10-line log, median of 5, {matcher}", f"{med * 1000:6.0f} ms")
        bare = [measure([self.python, "-c", "pass"], self.env, self.work / "bare.out").seconds for _ in range(5)]
        self.row("  (bare python start-up, median of 5)", f"{statistics.median(bare) * 1000:6.0f} ms")

    def store(self, log: Path, matcher: str) -> None:
        if not self.has_no_store:
            self.row("store on vs off", "n/a: this triage has no --no-store")
            return
        size = log.stat().st_size / MB
        off = best([self.triage([log], matcher, tag="off") for _ in range(2)])
        on_runs = []
        for i in range(2):
            db = self.work / f"store-{i}.db"
            on_runs.append(self.triage([log], matcher, "--db", str(db), "--force", store=True, tag="on"))
        on = best(on_runs)
        self.row(f"store off, {size:,.0f} MB, {matcher}", f"{off.seconds:6.2f} s  {size / off.seconds:7.0f} MB/s")
        self.row(f"store on (keeps the log compressed), {size:,.0f} MB, {matcher}",
                 f"{on.seconds:6.2f} s  {size / on.seconds:7.0f} MB/s  {100 * (on.seconds / off.seconds - 1):+.0f} %  "
                 f"peak RSS {on.rss_mb:.0f} MB")
        if "--keep-log" in self.help:
            nk = best([self.triage([log], matcher, "--db", str(self.work / f"nokeep-{i}.db"), "--force",
                                   "--no-keep-log", store=True, tag="nokeep") for i in range(2)])
            self.row(f"store on --no-keep-log, {size:,.0f} MB, {matcher}",
                     f"{nk.seconds:6.2f} s  {size / nk.seconds:7.0f} MB/s  {100 * (nk.seconds / off.seconds - 1):+.0f} %")

    def jobs(self, files: list[Path], matcher: str) -> None:
        size = sum(f.stat().st_size for f in files) / MB
        if "--jobs" not in self.help:
            self.row("several inputs", "n/a: this triage has no --jobs")
            return
        serial = self.triage(files, matcher, "-j", "1", tag="j1")
        parallel = self.triage(files, matcher, "-j", "2", tag="j2")
        same = normalised(serial.stdout) == normalised(parallel.stdout)
        self.row(f"{len(files)} inputs, {size:,.0f} MB, -j 1, {matcher}",
                 f"{serial.seconds:6.2f} s  {size / serial.seconds:7.0f} MB/s  peak RSS {serial.rss_mb:.0f} MB")
        self.row(f"{len(files)} inputs, {size:,.0f} MB, -j 2, {matcher}",
                 f"{parallel.seconds:6.2f} s  {size / parallel.seconds:7.0f} MB/s  "
                 f"speed-up {serial.seconds / parallel.seconds:.2f}x  (parent RSS {parallel.rss_mb:.0f} MB)")
        self.row("-j 2 findings identical to -j 1", "yes" if same else "NO — DIFFERENT")


def normalised(path: Path) -> dict:
    """The parts of the JSON that must not depend on the matcher or the number of processes."""
    doc = json.loads(path.read_text())
    run = doc.get("run", {})
    return {"findings": doc.get("findings"), "unexplained": doc.get("unexplained"),
            "inputs": run.get("inputs"), "tool": run.get("tool"), "status": run.get("status")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the 2 GB log (peak RSS on a large input)")
    parser.add_argument("--size-mb", type=int, default=200, help="size of the main log (default 200)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with triage installed")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder with the logs and outputs")
    args = parser.parse_args()
    if shutil.which("grep") is None:
        sys.exit("grep not found")
    work = Path(tempfile.mkdtemp(prefix="triage-bench-"))
    try:
        bench = Bench(args, work)
        lines = corpus_lines()
        print(f"triage bench: {os.cpu_count()} cores, {len(lines):,} corpus lines, matchers: {', '.join(bench.matchers)}")
        print(f"  grep: {subprocess.run(['grep', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")
        t = time.perf_counter()
        big = build_log(work / "big.log", args.size_mb * MB, lines, seed=1)
        small = build_log(work / "small.log", 20 * MB, lines, seed=2)
        parts = [build_log(work / f"part{i}.log", 25 * MB, lines, seed=10 + i) for i in range(8)]
        print(f"  built logs in {time.perf_counter() - t:.1f} s under a temp folder\n")

        print(f"== throughput, {args.size_mb} MB log, all built-in packs ==")
        exact, folded = bench.literals()
        grep_s = bench.grep(big, exact, folded)
        bench.throughput(big, grep_s)

        print("\n== peak RSS ==")
        bench.rss(small)
        free = shutil.disk_usage(work).free
        if args.quick:
            print("  (2 GB input skipped: --quick)")
        elif free < 2500 * MB:
            print(f"  (2 GB input skipped: {free / MB:,.0f} MB free in the temp folder, 2,500 MB needed)")
        else:
            huge = build_log(work / "huge.log", 2000 * MB, lines, seed=3)
            bench.rss(huge)
            huge.unlink()

        print("\n== start-up ==")
        bench.startup()

        fast = bench.matchers[-1]
        print(f"\n== store on vs off ({fast}) ==")
        bench.store(big, fast)

        print(f"\n== several inputs ({fast}) ==")
        bench.jobs(parts, fast)
    finally:
        if args.keep:
            print(f"\nkept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
