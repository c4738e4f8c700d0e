"""The team commands over a large run history: `triage nightly` and `triage runs list` at 1,000, 10,000
and 50,000 stored runs (wall time and peak RSS of the CLI process, median of paired runs).

The first 1,000 runs are real scan results of corpus fixtures (varied labels, statuses and creation
times over 30 days) stored through `Store.ingest`; larger histories copy those rows (every table the
store writes, with new ids and earlier dates) so that building 50,000 runs takes seconds, not minutes.
Targets (issue): linear in the number of runs; nightly under 10 s at 50,000; runs list streams.

    .venv/bin/python bench/store_bench.py [--runs 1000,10000,50000] [--repeat 3] [--root DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SAMPLES = [
    "fixtures/corpus/dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log",
    "fixtures/corpus/dfc/cases/006-mz113-dfc328-compiler-symbol-lookup-error.log",
    "fixtures/corpus/dfc/cases/041-ghnote-bilstm-parse-lstm-slice-squeeze-errors.log",
    "fixtures/corpus/dfc/cases/034-community19530-dfc530-successful-compilation.log",
    "fixtures/corpus/hls/cases/002-hls4ml-fixture-vivado_synth-bonded-iob-307pct.rpt",
    "fixtures/corpus/hls/cases/043-hls4ml-1288-presynthesis-failed-vivado2020.1.log",
    "fixtures/corpus/logs/hls/013-Almotaek-SHA256-solution1.log",
    "fixtures/corpus/logs/hls4ml/512-CMS-L1T-Jet-Tagging-CL2TaggerFirmware-vitis_hls.log",
]
NOW = datetime(2025, 3, 31, 6, 0, tzinfo=UTC)
BASE = 1000
DAYS = 30


def build_base(db: Path, root: Path, python: str) -> None:
    """1,000 runs through the real store (in a child, so the code under test is `root`'s)."""
    code = f"""
import random, sys
from datetime import datetime, timedelta, UTC
sys.path.insert(0, {str(root)!r})
from triage import load_packs, scan_paths
from triage.store import open_store, scan_document
packs = load_packs()
docs = [scan_document(scan_paths([{str(ROOT)!r} + '/' + p], packs), packs=packs) for p in {SAMPLES!r}]
rng = random.Random(7)
labels = [f"model-{{i:02d}}" for i in range(40)]
now = datetime({NOW.year}, {NOW.month}, {NOW.day}, {NOW.hour}, tzinfo=UTC)
store = open_store({str(db)!r})
for i in range({BASE}):
    doc = dict(rng.choice(docs))
    doc["dimensions"] = {{"label": rng.choice(labels), "branch": rng.choice(["main", "dev"]),
                          "model": "yolov8n", "device": "hailo8l", "commit": f"{{rng.getrandbits(40):010x}}"}}
    doc["created"] = (now - timedelta(minutes=rng.randrange({DAYS} * 24 * 60))).isoformat()
    store.ingest(doc, force=True)
store.close()
"""
    subprocess.run([python, "-c", code], check=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})


def grow(db: Path, runs: int) -> None:
    """Copy the first 1,000 runs (and every row that belongs to them) until there are `runs`, each copy
    dated 30 days earlier than the one before, so the history is long and the latest period unchanged."""
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
    children = [t for t in tables if t != "runs" and "run_id" in [c[1] for c in conn.execute(f"pragma table_info({t})")]]
    run_cols = [c[1] for c in conn.execute("pragma table_info(runs)") if c[1] != "id"]
    have = conn.execute("select count(*) from runs").fetchone()[0]
    copy = 1
    with conn:
        while have < runs:
            n = min(BASE, runs - have)
            shift = f"-{DAYS * copy} days"
            offset = conn.execute("select max(id) from runs").fetchone()[0]
            cols = ", ".join(f'"{c}"' for c in run_cols)
            select = ", ".join(
                f"strftime('%Y-%m-%dT%H:%M:%SZ', created, '{shift}')" if c == "created" else f'"{c}"' for c in run_cols)
            conn.execute(f"insert into runs (id, {cols}) select id + {offset}, {select} from runs where id <= {n}")
            for t in children:
                cols_t = [c[1] for c in conn.execute(f"pragma table_info({t})") if c[1] not in ("rowid",)]
                pk = [c[1] for c in conn.execute(f"pragma table_info({t})") if c[5]]
                keep = [c for c in cols_t if c not in pk or c == "run_id"]
                names = ", ".join(f'"{c}"' for c in keep)
                values = ", ".join(f'run_id + {offset}' if c == "run_id" else f'"{c}"' for c in keep)
                conn.execute(f"insert into {t} ({names}) select {values} from {t} where run_id <= {n}")
            have += n
            copy += 1
    conn.close()


def measure(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and bytes written to stdout of one CLI run (in `cwd`: `python -m triage`
    imports the checkout it starts in)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            sys.exit(f"failed: {' '.join(cmd)}")
        return seconds, usage.ru_maxrss / 1024, out.tell()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout of triage to measure (default: this one)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.runs.split(","))
    env = {**os.environ, "PYTHONPATH": str(args.root), "COLUMNS": "160"}
    env.pop("TRIAGE_PACKS", None)
    with tempfile.TemporaryDirectory(prefix="triage-store-bench-") as tmp:
        db = Path(tmp) / "runs.db"
        t0 = time.perf_counter()
        build_base(db, args.root, args.python)
        print(f"  stored {BASE:,} runs through the store in {time.perf_counter() - t0:.1f} s", flush=True)
        day = (NOW - timedelta(days=1)).strftime("%Y-%m-%d")  # a whole UTC day of the history
        for size in sizes:
            grow(db, size)
            out = Path(tmp) / f"nightly-{size}"
            cmds = {
                "nightly --date (one day)": [args.python, "-m", "triage", "nightly", "--db", str(db), "--date", day,
                                             "--out", str(out)],
                "nightly --since 3650d (all)": [args.python, "-m", "triage", "nightly", "--db", str(db), "--since",
                                                "3650d", "--out", str(out)],
                "runs list --limit 0": [args.python, "-m", "triage", "runs", "list", "--db", str(db), "--limit", "0"],
                "runs list --limit 0 --json": [args.python, "-m", "triage", "runs", "list", "--db", str(db),
                                               "--limit", "0", "--json"],
            }
            for name, cmd in cmds.items():
                runs = [measure(cmd, env, args.root) for _ in range(args.repeat)]
                wall = statistics.median(r[0] for r in runs)
                rss = max(r[1] for r in runs)
                print(f"  {size:>6,} runs  {name:<28} {wall:7.2f} s  peak RSS {rss:5.0f} MB  "
                      f"({runs[0][2] / 1024:,.0f} KiB out)", flush=True)


if __name__ == "__main__":
    main()
