"""Throughput, memory and start-up of triage beside ripgrep and grep, with and without a knowledge base five
times larger, in one run. See bench/README.md for what each figure measures.

Builds Vivado/HLS/DFC-like logs from random real corpus lines (seeded) and a pack set of 3,000 generated
signatures (bench/genpack.py) in a temp folder. Every timed figure is the median of paired rounds: in each
round the reference and every triage variant run back to back, so a busy machine slows them alike, and a
ratio is taken per round. `--root DIR` measures another checkout (the "before" of a change).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from genpack import write_packs  # noqa: E402

ROOT = HERE.parent
CORPUS_LOGS = ROOT / "fixtures" / "corpus" / "logs"
MB = 1_000_000


@dataclass
class Run:
    seconds: float
    cpu: float  # user + system of the process and the children it waited for (a -j 2 scan's workers)
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


def measure(cmd: list[str], env: dict[str, str], out: Path, cwd: Path = ROOT) -> Run:
    """Wall time, CPU time and peak RSS of one child (os.wait4 gives the child's own rusage)."""
    with out.open("wb") as fh:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    return Run(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), out)


def med(values: list[float]) -> float:
    return statistics.median(values)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.python = args.python
        self.root = args.root.resolve()
        self.base_env = {**os.environ, "PYTHONPATH": str(self.root), "TRIAGE_DB": str(work / "bench.db"),
                         "TRIAGE_CACHE_DIR": str(work / "cache")}
        self.base_env.pop("TRIAGE_PACKS", None)
        self.env = dict(self.base_env)
        self.help = self._run(["scan", "--help"]).stdout
        self.matchers = ["python"] + (["hyperscan"] if self._has_hyperscan() else [])
        # An installed wheel has its bytecode compiled (pip does it); a checkout under PYTHONDONTWRITEBYTECODE
        # would recompile every module on every start.
        subprocess.run([self.python, "-m", "compileall", "-q", str(self.root / "triage")], check=True, env=self.env)

    def _run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.python, "-m", "triage", *args], capture_output=True, text=True, env=self.env,
                              cwd=self.root)

    def _has_hyperscan(self) -> bool:
        return subprocess.run([self.python, "-c", "import hyperscan"], capture_output=True, env=self.env).returncode == 0

    def row(self, name: str, value: str) -> None:
        print(f"  {name:<62} {value}", flush=True)

    def triage_cmd(self, inputs: list[Path], *extra: str, store: bool = False) -> list[str]:
        cmd = [self.python, "-m", "triage", "scan", "--format", "json", *extra]
        if not store:
            cmd.append("--no-store")
        return cmd + [str(p) for p in inputs]

    def triage(self, inputs: list[Path], matcher: str, *extra: str, store: bool = False, tag: str = "") -> Run:
        env = {**self.env, "TRIAGE_MATCHER": matcher}
        cmd = self.triage_cmd(inputs, *extra, store=store)
        run = measure(cmd, env, self.work / f"out-{matcher}-{tag or inputs[0].stem}.json", self.root)
        if run.returncode not in (0, 1):
            sys.exit(f"triage failed ({run.returncode}): {' '.join(cmd)}")
        return run

    # ----------------------------------------------------------------------------------------------------

    def literals(self) -> list[str]:
        """The gate's literals, as the scanner builds them (signatures, detection rules, error-like words)."""
        code = ("import json\nfrom triage.packs import load_packs\nfrom triage.scan import Matcher\n"
                "m = Matcher(load_packs(), 'python')\nprint(json.dumps(m.gate.exact_words + m.gate.folded_words))\n")
        out = subprocess.run([self.python, "-c", code], capture_output=True, text=True, env=self.env, cwd=self.root)
        if out.returncode != 0:
            sys.exit(f"cannot read the gate's literals:\n{out.stderr}")
        return sorted(set(json.loads(out.stdout)))

    def throughput(self, log: Path, label: str) -> None:
        """rg, grep and both matchers in paired rounds; ratios to rg per round, then medians."""
        words = self.literals()
        fixed = self.work / f"literals-{label}.txt"
        fixed.write_text("\n".join(words) + "\n")
        size = log.stat().st_size / MB
        c_env = {**os.environ, "LC_ALL": "C"}
        refs = {"rg -c -F -f": ["rg", "-c", "-F", "-f", str(fixed), str(log)],
                "grep -c -F -f": ["grep", "-c", "-F", "-f", str(fixed), str(log)]}
        if shutil.which("rg") is None:
            refs.pop("rg -c -F -f")
        runs: dict[str, list[Run]] = {name: [] for name in [*refs, *self.matchers]}
        for i in range(self.args.rounds):
            for name, cmd in refs.items():
                runs[name].append(measure(cmd, c_env, self.work / "ref.out"))
            for matcher in self.matchers:
                runs[matcher].append(self.triage([log], matcher, tag=f"tp-{label}-{i}"))
        ref = "rg -c -F -f" if "rg -c -F -f" in runs else "grep -c -F -f"
        print(f"  ({len(words):,} literals; {self.args.rounds} paired rounds; medians; x = time / {ref} in the same round)")
        for name in refs:
            rs = runs[name]
            count = (self.work / "ref.out").read_text().strip().splitlines()[-1] if name == list(refs)[-1] else ""
            self.row(f"{name}, LC_ALL=C" + (f" ({count} lines)" if count else ""),
                     f"{med([r.seconds for r in rs]):6.2f} s  cpu {med([r.cpu for r in rs]):6.2f} s  "
                     f"{size / med([r.seconds for r in rs]):6.0f} MB/s  x {self._ratio(rs, runs[ref]):4.1f}")
        for matcher in self.matchers:
            rs = runs[matcher]
            self.row(f"triage scan --format json --no-store, TRIAGE_MATCHER={matcher}",
                     f"{med([r.seconds for r in rs]):6.2f} s  cpu {med([r.cpu for r in rs]):6.2f} s  "
                     f"{size / med([r.seconds for r in rs]):6.0f} MB/s  x {self._ratio(rs, runs[ref]):4.1f} "
                     f"(cpu x {self._ratio(rs, runs[ref], cpu=True):4.1f})  peak RSS {max(r.rss_mb for r in rs):4.0f} MB")
        if len(self.matchers) == 2:
            a, b = (normalised(runs[m][-1].stdout) for m in self.matchers)
            self.row("python and hyperscan findings identical", "yes" if a == b else "NO — DIFFERENT")

    @staticmethod
    def _ratio(runs: list[Run], refs: list[Run], cpu: bool = False) -> float:
        return med([(r.cpu / q.cpu) if cpu else (r.seconds / q.seconds) for r, q in zip(runs, refs)])

    def jobs_small(self, log: Path) -> None:
        """The default -j against -j 1 on a 20 MB log (one file of 8 MiB and more is split across the cores)."""
        fast = self.matchers[-1]
        one, many = [], []
        for i in range(self.args.rounds):
            one.append(self.triage([log], fast, "-j", "1", tag=f"j1s-{i}"))
            many.append(self.triage([log], fast, tag=f"jds-{i}"))
        self.row(f"20 MB log, default -j against -j 1, {fast}",
                 f"{med([r.seconds for r in many]):6.2f} s vs {med([r.seconds for r in one]):6.2f} s  "
                 f"x {self._ratio(many, one):4.2f}")

    def rss(self, log: Path) -> None:
        size = log.stat().st_size / MB
        for matcher in self.matchers:
            # -j 1: the whole scan in one process, so its peak is the scan's whole memory
            run = self.triage([log], matcher, "-j", "1", tag="rss")
            self.row(f"peak RSS, {size:,.0f} MB input, -j 1, {matcher}",
                     f"{run.rss_mb:5.0f} MB  ({run.seconds:.1f} s, {size / run.seconds:.0f} MB/s)")

    def startup(self, cold: bool) -> None:
        """Short commands, median of paired rounds beside a bare interpreter; cold: an empty cache each time."""
        small = self.work / "ten.log"
        small.write_bytes(b"".join(b"INFO: [HLS 200-10] line %d\n" % i for i in range(9))
                          + b"  [error] Mapping Failed (allocation time: 1m 44s)\n")
        commands = {
            "python -c pass": [self.python, "-c", "pass"],
            "triage --help": [self.python, "-m", "triage", "--help"],
            "triage scan, 10-line log, --format json": self.triage_cmd([small]),
            "triage scan, 10-line log (text)": [self.python, "-m", "triage", "scan", "--no-store", str(small)],
            "triage scan, 10-line log, stored (default)": [self.python, "-m", "triage", "scan", "--format", "json",
                                                           "--db", str(self.work / "startup.db"), str(small)],
            "triage explain <a known line>": [self.python, "-m", "triage", "explain",
                                               "[error] Mapping Failed (allocation time: 1m 44s)"],
            "triage explain <an unknown line>": [self.python, "-m", "triage", "explain",
                                                 "ERROR: [XYZ 7-7] frobnicated the widget twice in foo.cpp"],
            "triage kb search allocation": [self.python, "-m", "triage", "kb", "search", "allocation"],
        }
        rounds = 3 if cold else 7
        times: dict[str, list[Run]] = {name: [] for name in commands}
        for matcher in self.matchers:
            for name in commands:
                times[name] = []
            for i in range(rounds):
                for k, (name, cmd) in enumerate(commands.items()):
                    env = {**self.env, "TRIAGE_MATCHER": matcher}
                    if cold:  # an empty cache for every command of every round: each pays its own cold start
                        env["TRIAGE_CACHE_DIR"] = str(self.work / f"cold-{matcher}-{i}-{k}")
                    times[name].append(measure(cmd, env, self.work / "startup.out", self.root))
            for name, rs in times.items():
                if name == "python -c pass" and matcher != self.matchers[0]:
                    continue
                which = "" if name in ("python -c pass", "triage --help") else f", {matcher}"
                self.row(f"{'cold' if cold else 'warm'}: {name}{which}",
                         f"{med([r.seconds for r in rs]) * 1000:6.0f} ms  cpu {med([r.cpu for r in rs]) * 1000:5.0f} ms")

    def store(self, log: Path, matcher: str) -> None:
        size = log.stat().st_size / MB
        off = min((self.triage([log], matcher, tag="off") for _ in range(2)), key=lambda r: r.seconds)
        on = min((self.triage([log], matcher, "--db", str(self.work / f"store-{i}.db"), "--force", store=True, tag="on")
                  for i in range(2)), key=lambda r: r.seconds)
        self.row(f"store off, {size:,.0f} MB, {matcher}", f"{off.seconds:6.2f} s  {size / off.seconds:7.0f} MB/s")
        self.row(f"store on (keeps the log compressed), {size:,.0f} MB, {matcher}",
                 f"{on.seconds:6.2f} s  {size / on.seconds:7.0f} MB/s  {100 * (on.seconds / off.seconds - 1):+.0f} %  "
                 f"peak RSS {on.rss_mb:.0f} MB")

    def jobs(self, files: list[Path], matcher: str) -> None:
        size = sum(f.stat().st_size for f in files) / MB
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
    parser.add_argument("--quick", action="store_true", help="skip the 2 GB log and the 50,000-run history")
    parser.add_argument("--size-mb", type=int, default=200, help="size of the main log (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds per throughput figure (default 3)")
    parser.add_argument("--signatures", type=int, default=3000, help="generated signatures (default 3000)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with triage's dependencies")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout of triage to measure (default: this one)")
    parser.add_argument("--only", choices=("throughput", "startup", "memory", "store", "history"), action="append",
                        help="measure only these groups (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder with the logs and outputs")
    args = parser.parse_args()
    groups = set(args.only or ("throughput", "startup", "memory", "store", "history"))
    work = Path(tempfile.mkdtemp(prefix="triage-bench-"))
    try:
        bench = Bench(args, work)
        lines = corpus_lines()
        rg = subprocess.run(["rg", "--version"], capture_output=True, text=True).stdout.split("\n")[0] \
            if shutil.which("rg") else "not installed (apt-get install ripgrep): grep is the reference"
        grep = subprocess.run(["grep", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        print(f"triage bench: {bench.root}, {len(lines):,} corpus lines, matchers: {', '.join(bench.matchers)}")
        print(f"  {rg}; {grep}; {load()}")
        t = time.perf_counter()
        big = build_log(work / "big.log", args.size_mb * MB, lines, seed=1)
        small = build_log(work / "small.log", 20 * MB, lines, seed=2)
        generated = work / "generated-packs"
        write_packs(generated, args.signatures)
        print(f"  built logs and {args.signatures:,} generated signatures in {time.perf_counter() - t:.1f} s\n")
        configs = [("built-in packs", None), (f"built-in packs + {args.signatures:,} generated signatures", generated)]
        for label, extra in configs:
            bench.env = dict(bench.base_env, **({"TRIAGE_PACKS": str(extra)} if extra else {}))
            tag = "gen" if extra else "builtin"
            if "startup" in groups:
                print(f"== start-up, {label} ({load()}) ==")
                bench.startup(cold=True)
                bench.startup(cold=False)
                print()
            if "throughput" in groups:
                print(f"== throughput, {args.size_mb} MB log, {label} ({load()}) ==")
                bench.throughput(big, tag)
                bench.jobs_small(small)
                print()
            if "memory" in groups:
                print(f"== peak RSS, {label} ==")
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
                print()
        bench.env = dict(bench.base_env)
        if "store" in groups:
            fast = bench.matchers[-1]
            print(f"== store on vs off, several inputs ({fast}, built-in packs) ==")
            bench.store(big, fast)
            parts = [build_log(work / f"part{i}.log", 25 * MB, lines, seed=10 + i) for i in range(8)]
            bench.jobs(parts, fast)
            print()
        if "history" in groups:
            print(f"== run history: nightly and runs list ({load()}) ==", flush=True)
            sizes = "1000,10000" if args.quick else "1000,10000,50000"
            subprocess.run([args.python, str(HERE / "store_bench.py"), "--runs", sizes, "--root", str(bench.root),
                            "--python", args.python], check=True, env={**os.environ, "TRIAGE_CACHE_DIR": str(work / "cache")})
        print(f"\ndone ({load()})")
    finally:
        if args.keep:
            print(f"\nkept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
