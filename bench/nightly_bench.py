"""Nightly report over 1,000 stored runs: how long building the context and rendering the HTML take.

The runs are synthetic copies of a few real scan results from fixtures/corpus (varied labels, statuses
and creation times over 30 days), stored through the real store. Target: under 10 s.

    .venv/bin/python bench/nightly_bench.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage import load_packs, scan_paths  # noqa: E402
from triage.report import build_nightly_context, render_nightly  # noqa: E402
from triage.store import open_store, scan_document  # noqa: E402

SAMPLES = [
    "fixtures/corpus/dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log",
    "fixtures/corpus/dfc/cases/006-mz113-dfc328-compiler-symbol-lookup-error.log",
    "fixtures/corpus/dfc/cases/041-ghnote-bilstm-parse-lstm-slice-squeeze-errors.log",
    "fixtures/corpus/dfc/cases/034-community19530-dfc530-successful-compilation.log",
    "fixtures/corpus/hls/cases/002-hls4ml-fixture-vivado_synth-bonded-iob-307pct.rpt",
    "fixtures/corpus/hls/cases/043-hls4ml-1288-presynthesis-failed-vivado2020.1.log",
    "fixtures/corpus/logs/hls/013-Almotaek-SHA256-solution1.log",
    "fixtures/corpus/logs/vivado/209-SamarthSemiconductors-Single-Layer-Neural-Network-Accelerator-mac_top_timing_summary_routed.rpt",
    "fixtures/corpus/logs/hls4ml/512-CMS-L1T-Jet-Tagging-CL2TaggerFirmware-vitis_hls.log",
]
NOW = datetime(2025, 3, 31, 6, 0, tzinfo=UTC)


def build(db_path: Path, runs: int) -> None:
    packs = load_packs()
    docs = [scan_document(scan_paths([str(ROOT / p)], packs), packs=packs) for p in SAMPLES]
    rng = random.Random(7)
    labels = [f"model-{i:02d}" for i in range(40)]
    store = open_store(db_path)
    for i in range(runs):
        doc = dict(rng.choice(docs))
        doc["dimensions"] = {"label": rng.choice(labels), "branch": rng.choice(["main", "dev"])}
        doc["created"] = (NOW - timedelta(minutes=rng.randrange(30 * 24 * 60))).isoformat()
        store.ingest(doc, force=True)
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    packs = load_packs()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "bench.db"
        t0 = time.perf_counter()
        build(db_path, args.runs)
        t_build = time.perf_counter() - t0
        store = open_store(db_path)
        results = []
        # the whole month as one period (every run in the runs table) and the usual last 24 h
        for name, since in (("30 days", NOW - timedelta(days=30)), ("24 h", NOW - timedelta(hours=24))):
            t1 = time.perf_counter()
            context = build_nightly_context(store, since, NOW, now=NOW, packs=packs)
            t2 = time.perf_counter()
            html = render_nightly(context)
            t3 = time.perf_counter()
            results.append((name, context["totals"]["runs"], t2 - t1, t3 - t2, len(html)))
        store.close()
    print(f"stored {args.runs} runs in {t_build:.1f} s")
    for name, n, t_ctx, t_render, size in results:
        print(f"nightly over {name}: {n} runs in period; context {t_ctx:.2f} s + render {t_render:.2f} s"
              f" = {t_ctx + t_render:.2f} s (target < 10 s); {size / 1024:.0f} KiB of HTML")


if __name__ == "__main__":
    main()
