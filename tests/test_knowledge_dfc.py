"""Hailo DFC / Model Zoo knowledge: paths that need more than one line to name."""

from __future__ import annotations

import yaml

from triage import scan_paths, scan_text

from .conftest import FIXTURES

GENERIC = FIXTURES / "synthetic" / "hailomz-performance-generic-yolov8m.log"  # SYNTHETIC (marked in the file)


def test_hailomz_performance_on_generic_script_names_the_script_and_both_fixes(packs) -> None:
    result = scan_paths([str(GENERIC)], packs)
    assert result.run.status == "failed"
    top = result.findings[0]
    assert top.id == "hailomz/performance-max-on-generic-script"
    assert "dfc/perf-flow-manual-resources" in [e.id for e in top.explained]
    text = f"{top.title}\n{top.cause}\n{top.workaround}"
    assert "hailo_model_zoo/cfg/alls/generic/yolov8m.alls" in text
    assert "compiler_optimization_level=max" in text
    assert "drop `--performance`" in top.workaround
    assert "--model-script my_yolov8m.alls" in top.workaround and "resources_param" in top.workaround


def test_hailomz_performance_cause_needs_the_performance_flow_error(packs) -> None:
    line = "hailomz compile yolov8m --ckpt yolov8m.onnx --hw-arch hailo8 --calib-path calib/ --performance"
    assert "hailomz/performance-max-on-generic-script" not in [f.id for f in scan_text(line, packs).findings]


def test_own_model_script_is_not_blamed_on_the_model_zoo(packs) -> None:
    text = GENERIC.read_text().replace("--performance", "--performance --model-script mine.alls")
    ids = [f.id for f in scan_text(text, packs).findings]
    assert ids[0] == "dfc/perf-flow-manual-resources"
    assert "hailomz/performance-max-on-generic-script" not in ids


def test_no_held_back_dfc_line_is_a_pack_example() -> None:
    examples: set[str] = set()
    for pack in sorted((FIXTURES.parent / "patterns").glob("*.yaml")):
        for cause in yaml.safe_load(pack.read_text(encoding="utf-8"))["causes"]:
            for sig in cause.get("signatures", []):
                for ex in [*sig.get("match", []), *sig.get("no_match", [])]:
                    examples.add((ex if isinstance(ex, str) else ex["text"]).strip())
    # A generic line (e.g. "Partition failed on: Splitter timeout reached") may also occur in a public
    # fixture; an example that has such an independent real source was not written from the held-back file.
    public: set[str] = set()
    for p in (FIXTURES / "public").rglob("*"):
        if p.is_file() and not p.name.endswith(".expected.yaml"):
            public.update(line.strip() for line in p.read_text(encoding="utf-8", errors="replace").splitlines())
    for p in (FIXTURES / "corpus").rglob("*"):
        if p.is_file() and not p.name.endswith(".expected.yaml"):
            public.update(line.strip() for line in p.read_text(encoding="utf-8", errors="replace").splitlines())
    held = FIXTURES / "heldback" / "dfc"
    leaked = [(p.name, line) for p in sorted(held.glob("*")) if p.is_file()
              for line in p.read_text(encoding="utf-8", errors="replace").splitlines()
              if line.strip() and line.strip() in examples and line.strip() not in public]
    assert leaked == []
