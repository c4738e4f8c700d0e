"""The demo's run history: eight compile jobs over six nights, from real fixture logs, stored the way a
compile farm stores them (`scan --format json` documents dated by their `created` field, then `ingest`).

Some jobs regress (passed, then fail), one is fixed, one flips between passing and failing, one fails
only on a generic catch-all, one on a line no cause explains, and a synthesis report's utilization grows
past 100 % - so every section of the nightly page has something to show. Then one nightly page per night
and the index.

    python tests/history.py DB OUT_DIR
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage import load_packs, scan_paths  # noqa: E402
from triage.report import write_nightly  # noqa: E402
from triage.store import open_store, scan_document  # noqa: E402

CASES = ROOT / "fixtures" / "corpus"
FIRST_NIGHT = datetime(2025, 3, 4, 1, 30, tzinfo=UTC)
NIGHTS = 6

# label: (model, device, fixtures night by night; a shorter list repeats its last entry). The device may
# change night by night too: the synthesis job is retargeted to a Zynq board on the last night.
PASS_DFC = "dfc/cases/034-community19530-dfc530-successful-compilation.log"
JOBS: dict[str, tuple[str, str | list[str], list[str]]] = {
    "yolov8n-hailo8l": ("yolov8n", "hailo8l", [PASS_DFC] * 5 + ["dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log"]),
    "resnet18-hailo8": ("resnet18", "hailo8", ["dfc/cases/006-mz113-dfc328-compiler-symbol-lookup-error.log"] * 5
                        + ["logs/dfc/415-FRC2713-FuelDetector-hailo_sdk.core.log"]),
    "bilstm-hailo8l": ("bilstm", "hailo8l", ["dfc/cases/041-ghnote-bilstm-parse-lstm-slice-squeeze-errors.log",
                                             "dfc/cases/053-ghnote-yolov8n-seg-hailo8-compile-walkthrough-abridged.log"] * 3),
    "xfeat-hailo8": ("xfeat", "hailo8", ["logs/dfc/402-FRC2713-FuelDetector-hailo_sdk.client.log"] * 5
                     + ["dfc/cases/015-mz95-xfeat-translate-failed.log"]),
    "jet-tagger-vitis": ("jet-tagger", "xcvu13p", ["logs/hls4ml/512-CMS-L1T-Jet-Tagging-CL2TaggerFirmware-vitis_hls.log"]),
    "conv2d-vivado-hls": ("conv2d", "xcku115", ["hls/cases/005-hls4ml-903-xform-203-504-multloop-conv2d.log"]),
    "concat-hailo8l": ("concat-net", "hailo8l", [PASS_DFC] * 4 + ["dfc/cases/044-ghnote-concat-op-indexerror-random-calib.log"]),
    "cnn-vivado-synth": ("pruned-cnn", ["xcu250"] * 5 + ["xc7z020"], ["hls/cases/032-hls4ml-tutorial-pruned-cnn-vivado_synth-xcu250-clean.rpt"] * 5
                         + ["hls/cases/002-hls4ml-fixture-vivado_synth-bonded-iob-307pct.rpt"]),
}


def build_history(store, packs) -> int:  # type: ignore[no-untyped-def]
    """Ingest every job's run of every night; returns the number of runs."""
    scanned: dict[str, dict] = {}
    store.sync_causes(packs)
    for night in range(NIGHTS):
        for n, (label, (model, device, fixtures)) in enumerate(JOBS.items()):
            rel = fixtures[min(night, len(fixtures) - 1)]
            if rel not in scanned:  # scanned by a path relative to the checkout, as a CI job names its logs
                path = os.path.relpath(CASES / rel)
                scanned[rel] = scan_document(scan_paths([path], packs), packs=packs)
            doc = dict(scanned[rel])
            dev = device if isinstance(device, str) else device[min(night, len(device) - 1)]
            doc["dimensions"] = {"label": label, "model": model, "device": dev, "branch": "main",
                                 "commit": f"{0x5eed0000 + night * 16 + n:08x}", "host": "farm-01"}
            doc["created"] = (FIRST_NIGHT + timedelta(days=night, minutes=7 * n)).isoformat()
            store.ingest(doc, force=True)
    return NIGHTS * len(JOBS)


def night(i: int) -> datetime:
    return FIRST_NIGHT + timedelta(days=i)


def write_pages(store, out: Path, packs) -> Path:  # type: ignore[no-untyped-def]
    """One nightly page per night (each with the pages of the runs it names) and the index; the last page."""
    last = out
    for i in range(NIGHTS):
        last = write_nightly(store, out, day=night(i).date(), packs=packs, now=night(NIGHTS) + timedelta(hours=5))
    return last


def main() -> None:
    db_path, out = Path(sys.argv[1]), Path(sys.argv[2])
    packs = load_packs()
    if db_path.exists():
        db_path.unlink()
    with open_store(db_path) as store:
        runs = build_history(store, packs)
        last = write_pages(store, out, packs)
    print(f"{runs} runs over {NIGHTS} nights in {db_path}; latest page {last}")


if __name__ == "__main__":
    main()
