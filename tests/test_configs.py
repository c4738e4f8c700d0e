"""Config facts from the real model scripts and hls4ml configs in fixtures/corpus, and misconfigurations.

Positive misconfiguration cases use small synthetic texts written here (marked SYNTHETIC): the corpus
Model Zoo scripts never combine resources_param with the performance flow, which is itself asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from triage.configs import (
    Fact,
    misconfigurations,
    read_alls,
    read_config,
    read_hls4ml_config,
    read_hls4ml_printed_config,
    read_python_script,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"


def _file(pattern: str) -> Path:
    (path,) = [p for p in CORPUS.glob(pattern) if not p.name.endswith(".expected.yaml")]
    return path


def _facts(pattern: str) -> list[Fact]:
    path = _file(pattern)
    return read_config(str(path), path.read_text(encoding="utf-8"))


def _get(facts: list[Fact], key: str) -> Fact:
    found = [f for f in facts if f.key == key]
    assert len(found) == 1, key
    return found[0]


def test_alls_commands_and_arguments_from_model_zoo() -> None:
    facts = _facts("logs/dfc/323-*.alls")
    res = _get(facts, "resources_param")
    assert res.line == 11 and res.value.startswith("max_apu_utilization=0.95")
    assert _get(facts, "resources_param.max_memory_utilization").value == "0.85"
    level = _get(facts, "performance_param.compiler_optimization_level")
    assert (level.value, level.line) == ("1", 14)
    assert misconfigurations(facts) == []  # Hailo pairs resources_param with level 1 only


def test_no_model_zoo_script_is_flagged() -> None:
    paths = [p for p in CORPUS.glob("logs/dfc/*.alls")]
    assert len(paths) >= 20
    for path in paths:
        assert misconfigurations(read_alls(str(path), path.read_text(encoding="utf-8"))) == [], path.name


def test_alls_community_script_054() -> None:
    facts = _facts("dfc/cases/054-*.alls")
    assert _get(facts, "performance_param.compiler_optimization_level").value == "max"
    assert _get(facts, "normalization.targets").value == "normalization1"
    assert _get(facts, "quantization_param.0").value == "{conv*}"
    finetune = [f for f in facts if f.key == "post_quantization_optimization.learning_rate"]
    assert finetune[0].value == "0.0001" and finetune[0].line == 17
    assert not [m for m in misconfigurations(facts)]


SYNTHETIC_ALLS = """# SYNTHETIC model script for the test
resources_param(max_compute_utilization=0.8, max_control_utilization=0.8, max_memory_utilization=0.8)
performance_param(compiler_optimization_level=2)
"""


@pytest.mark.parametrize("level,flagged", [("2", True), ("max", True), ("1", False), ("0", False)])
def test_perf_flow_with_manual_resources(level: str, flagged: bool) -> None:
    text = SYNTHETIC_ALLS.replace("level=2", f"level={level}")
    found = misconfigurations(read_alls("model.alls", text))
    if not flagged:
        assert found == []
        return
    (m,) = found
    assert m.cause_id == "dfc/perf-flow-manual-resources"
    assert [f.line for f in m.facts] == [2, 3]
    assert m.message == (f"`model.alls:2 resources_param(...)` conflicts with "
                         f"`model.alls:3 performance_param(compiler_optimization_level={level})`: "
                         f"delete line 2, or set compiler_optimization_level=1")


def test_alls_multiline_and_comments() -> None:
    text = "# SYNTHETIC\na, b = defuse(conv1, 4,\n   defuse_type=SPATIAL)  # split\nx = f('#not a comment')\n"
    facts = read_alls("m.alls", text)
    assert _get(facts, "defuse.defuse_type").line == 2
    assert _get(facts, "defuse.targets").value == "a, b"
    assert _get(facts, "f.0").value == "#not a comment"


def test_hls4ml_yaml_config_with_custom_tag() -> None:
    facts = _facts("logs/hls4ml/503-*.yml")  # has a `!keras_model` tag: composed, never constructed
    assert _get(facts, "HLSConfig.LayerName.conv1d.ReuseFactor").value == "4"
    assert _get(facts, "HLSConfig.LayerName.conv1d.ReuseFactor").line == 11
    assert _get(facts, "IOType").value == "io_parallel"
    assert _get(facts, "Part").value == "xcku115-flvb2104-2-i"
    assert _get(facts, "KerasModel").value == "prj_tmp/hls4mlprj_node_edge_projection/keras_model.h5"
    assert _get(facts, "HLSConfig.LayerName.conv1d.Precision.weight").value == "ap_fixed<8,3>"
    assert misconfigurations(facts) == []


@pytest.mark.parametrize("pattern,key,value", [
    ("logs/hls4ml/504-*.yml", "HLSConfig.Model.Strategy", "Latency"),
    ("logs/hls4ml/505-*.yml", "HLSConfig.Model.Precision.default", "fixed<16,6>"),
    ("logs/hls4ml/519-*.yml", "HLSConfig.Model.ReuseFactor", "16"),
    ("hls/cases/006-*.yml", "XilinxPart", "xczu9eg-ffvb1156-2-i-es2"),
])
def test_real_hls4ml_configs(pattern: str, key: str, value: str) -> None:
    facts = _facts(pattern)
    assert _get(facts, key).value == value
    assert misconfigurations(facts) == []


def test_python_script_from_the_corpus() -> None:
    facts = _facts("hls/cases/036-*.py")
    assert _get(facts, "convert.part").value == "xcu250-figd2104-2L-e"
    assert _get(facts, "convert.part").line == 3
    assert _get(facts, "convert.hls_config").value == "config"
    assert _get(facts, "config_from.granularity").value == "model"


SYNTHETIC_PY = """# SYNTHETIC conversion script for the test
import hls4ml
config = hls4ml.utils.config_from_keras_model(model, granularity='name')
config['LayerName']['fc1']['ReuseFactor'] = 64
config['LayerName']['fc1']['Strategy'] = 'Resource'
config['LayerName']['fc1']['IOType'] = 'io_stream'
config['LayerName']['fc2']['pragma'] = {'unroll': 'factor=4'}
os.system('rm -rf /')  # never executed
hls_model = hls4ml.converters.convert_from_keras_model(
    model, hls_config=config, io_type='io_parallel', backend='Vitis', part='xcu250-figd2104-2L-e')
"""


def test_python_script_facts_and_misconfigs() -> None:
    facts = read_python_script("convert.py", SYNTHETIC_PY)
    assert _get(facts, "HLSConfig.LayerName.fc1.ReuseFactor").line == 4
    assert _get(facts, "convert.io_type").value == "io_parallel"
    assert _get(facts, "convert.backend").line == 10
    ids = {m.cause_id: m for m in misconfigurations(facts, {"fc1": (16, 30)})}
    assert set(ids) == {"hls4ml/iotype-in-layer-config", "hls4ml/pragma-key-ignored", "hls4ml/invalid-reuse-factor"}
    io = ids["hls4ml/iotype-in-layer-config"]
    assert "convert.py:6" in io.message and "convert.py:10" in io.message
    assert ids["hls4ml/pragma-key-ignored"].facts[0].key == "HLSConfig.LayerName.fc2.pragma.unroll"
    assert "480" in ids["hls4ml/invalid-reuse-factor"].message  # 16*30, and 64 does not divide it


def test_reuse_factor_not_flagged_without_sizes_or_for_latency() -> None:
    facts = read_python_script("convert.py", SYNTHETIC_PY)
    assert not [m for m in misconfigurations(facts) if m.cause_id == "hls4ml/invalid-reuse-factor"]
    latency = read_python_script("c.py", "config['LayerName']['fc1']['ReuseFactor'] = 64\n")
    assert misconfigurations(latency, {"fc1": (16, 30)}) == []
    valid = SYNTHETIC_PY.replace("= 64", "= 48")
    assert not [m for m in misconfigurations(read_python_script("c.py", valid), {"fc1": (16, 30)})
                if m.cause_id == "hls4ml/invalid-reuse-factor"]


def test_iotype_in_yaml_layer_config() -> None:
    text = "# SYNTHETIC\nIOType: io_parallel\nHLSConfig:\n  LayerName:\n    dense:\n      IOType: io_stream\n"
    (m,) = misconfigurations(read_hls4ml_config("cfg.yml", text))
    assert m.cause_id == "hls4ml/iotype-in-layer-config"
    assert m.facts[0].line == 6 and "cfg.yml:6 IOType: io_stream" in m.message
    assert "cfg.yml:2" in m.message


def test_printed_config_dict() -> None:
    lines = [(10, "Creating HLS model"),
             (11, "{'Model': {'Precision': 'fixed<16,6>', 'ReuseFactor': 1,"),
             (12, "  'Strategy': 'Latency'}, 'LayerName': {'fc1': {'IOType': 'io_stream'}}}"),
             (13, "{'__import__': __import__('os')}")]  # not a literal: ignored, never evaluated
    facts = read_hls4ml_printed_config("build.log", lines)
    assert _get(facts, "HLSConfig.Model.Strategy").value == "Latency"
    assert _get(facts, "HLSConfig.Model.ReuseFactor").line == 11
    assert [m.cause_id for m in misconfigurations(facts)] == ["hls4ml/iotype-in-layer-config"]


def test_unparsable_python_is_read_line_by_line() -> None:
    text = "for x in\nconfig['Model']['ReuseFactor'] = 0\n"
    facts = read_python_script("frag.py", text)
    assert _get(facts, "HLSConfig.Model.ReuseFactor").line == 2
    assert [m.cause_id for m in misconfigurations(facts)] == ["hls4ml/invalid-reuse-factor"]


def test_read_config_dispatches_on_content() -> None:
    assert _get(read_config("notes.txt", SYNTHETIC_ALLS), "resources_param").line == 2
    assert _get(read_config("cfg", "IOType: io_stream\n"), "IOType").value == "io_stream"
    assert read_config("x.json", '{"IOType": "io_stream"}')[0].key == "IOType"
    assert read_config("bad.yml", "a: [\n") == []


def test_evidence_of_names_both_lines() -> None:
    from triage.configs import evidence_of

    (m,) = misconfigurations(read_alls("model.alls", SYNTHETIC_ALLS))
    ev = evidence_of(m)
    assert [(e.path, e.line) for e in ev] == [("model.alls", 2), ("model.alls", 3)]
    assert ev[1].text == "performance_param(compiler_optimization_level=2)"
    assert ev[1].captures["level"] == "2" and ev[0].captures["resources_line"] == "2"


# ---------------------------------------------------------------------------------------------------------
# Hostile configs: read with the pack loader's limits, in linear time, never a traceback

HOSTILE = Path(__file__).parent / "data" / "hostile"


def _scan_cli(*paths: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The whole CLI, with a hang guard far above what a linear read takes on a busy machine (seconds) and far
    below what the quadratic readers took on these inputs (hours at their sizes)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "triage", "scan", "--no-store", "--format", "json", *map(str, paths)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.parametrize("name, why", [
    ("hls4ml_config-alias-bomb.yml", "YAML aliases are not read in configs (line 3); not read"),
    ("hls4ml_config-deep.yml", "nested deeper than 64 levels; not read"),
    ("hls4ml_config-deep.json", "nested deeper than 64 levels; not read"),
])
def test_configs_are_read_with_the_limits_of_packs(name: str, why: str) -> None:
    proc = _scan_cli(HOSTILE / name)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"warning: {HOSTILE / name}: {why}" in proc.stderr
    assert json.loads(proc.stdout)["facts"] == []


def test_printed_dict_nested_past_the_bound_gives_no_traceback(tmp_path: Path) -> None:
    log = tmp_path / "convert.log"
    log.write_text("config = {'HLSConfig': " + "{'a': " * 5000 + "1" + "}" * 5001 + "\n")
    proc = _scan_cli(log)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr


def test_an_unclosed_bracket_in_a_model_script_is_read_in_linear_time(tmp_path: Path) -> None:
    """`.alls` with an unclosed `(`: every later line was joined and recounted (1 MB: over 250 s; this 3 MB
    script: over half an hour)."""
    script = tmp_path / "model.alls"
    script.write_text("performance_param(compiler_optimization_level=max\n" + "x = 1, 2, (3\n" * 240_000
                      + "resources_param(strategy=greedy)\n")
    proc = _scan_cli(script)
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["run"]["inputs"][0]["lines"] == 240_002


def test_a_large_script_with_stray_quotes_and_braces_is_read_in_linear_time(tmp_path: Path) -> None:
    """The printed-dict reader re-counted braces over the whole joined text on every line (1.2 MB build.tcl:
    over 200 s; this 3.6 MB one: over half an hour): a Tcl script full of `{'` and apostrophes."""
    tcl = tmp_path / "build.tcl"
    tcl.write_text("set x {'it's a tcl list\n" + "puts \"don't {stop} {'here\"\n" * 120_000)
    assert tcl.stat().st_size > 3_000_000
    proc = _scan_cli(tcl)
    assert proc.returncode in (0, 1), proc.stderr


# ---------------------------------------------------------------------------------------------
# The second founding case as users write it: an indented, partly broken conversion script with a loop over
# the layers (fixtures/synthetic/hls4ml-seed-convert-indented.py, SYNTHETIC), scanned beside a real report.

SYNTHETIC_DIR = CORPUS.parent / "synthetic"
SEED_SCRIPT = SYNTHETIC_DIR / "hls4ml-seed-convert-indented.py"


def test_seed_script_with_bonded_iob_report_names_both_ignored_keys(packs) -> None:
    from triage import scan_paths

    report = _file("hls/cases/002-*.rpt")
    result = scan_paths([str(report), str(SEED_SCRIPT)], packs)
    ids = {f.id: f for f in result.findings}
    iob = ids["vivado/bonded-iob-over-100pct-standalone-top"]
    assert iob.severity == "warning" and "307.20" in iob.cause
    io, pragma = ids["hls4ml/iotype-in-layer-config"], ids["hls4ml/pragma-key-ignored"]
    assert [(e.path, e.line, e.text) for e in io.evidence] == [(str(SEED_SCRIPT), 17, "'IOType': 'io_stream',")]
    assert [(e.path, e.line) for e in pragma.evidence] == [(str(SEED_SCRIPT), 18)]
    assert f"{SEED_SCRIPT}:17" in io.workaround and "every layer" in io.workaround
    assert "io_parallel" in io.workaround and f"{SEED_SCRIPT}:22" in io.workaround  # the call shows no io_type
    assert f"{SEED_SCRIPT}:18" in pragma.workaround and "every layer" in pragma.workaround


def test_seed_script_facts() -> None:
    facts = read_python_script("convert.py", SEED_SCRIPT.read_text(encoding="utf-8"))
    assert _get(facts, "HLSConfig.Model.ReuseFactor").line == 9
    # model-level values read from config['Model'] resolve to what the script set
    assert _get(facts, "HLSConfig.LayerName.*.Precision").value == "ap_fixed<4,1>"
    assert _get(facts, "HLSConfig.LayerName.*.ReuseFactor").value == "32"
    assert (_get(facts, "HLSConfig.LayerName.*.IOType").line, _get(facts, "HLSConfig.LayerName.*.pragma.unroll").line) \
        == (17, 18)
    assert _get(facts, "HLSConfig.LayerName.encoder_out.ReuseFactor").value == "2"
    assert _get(facts, "convert.part").value == "xcu250-figd2104-2L-e"  # the call cut off at the end is closed
    assert not [f for f in facts if "Interpreting" in f.context]


def test_indented_script_that_parses_is_read_whole() -> None:
    text = "    # SYNTHETIC\n    import hls4ml\n  # a comment less indented\n    config['Model']['ReuseFactor'] = 4\n"
    assert _get(read_python_script("c.py", text), "HLSConfig.Model.ReuseFactor").line == 4


@pytest.mark.parametrize("loop,key", [
    ("for layer in model.layers:\n    config['LayerName'][layer.name]['IOType'] = 'io_stream'", "HLSConfig.LayerName.*.IOType"),
    ("for name in config['LayerName'].keys():\n    config['LayerName'][name]['IOType'] = 'io_stream'",
     "HLSConfig.LayerName.*.IOType"),
    ("for i, layer in enumerate(model.layers):\n    if i > 0:\n        config['LayerName'][str(layer.name)]['IOType'] = 1",
     "HLSConfig.LayerName.*.IOType"),
    ("for name, cfg in config['LayerName'].items():\n    cfg['IOType'] = 'io_stream'", "HLSConfig.LayerName.*.IOType"),
    ("for layer in model.layers:\n    lc = config['LayerName'][layer.name]\n    lc['IOType'] = 'io_stream'",
     "HLSConfig.LayerName.*.IOType"),
    ("for layer in model.layers:\n    config['LayerName'][layer.name].update({'IOType': 'io_stream'})",
     "HLSConfig.LayerName.*.IOType"),
    ("name = 'fc1'\nconfig['LayerName'][name]['IOType'] = 'io_stream'", "HLSConfig.LayerName.fc1.IOType"),
    ("config['LayerName'][other]['IOType'] = 'io_stream'", "HLSConfig.LayerName.[other].IOType"),
])
def test_loop_variables_are_every_layer(loop: str, key: str) -> None:
    text = "# SYNTHETIC\n" + loop + "\n"
    facts = read_python_script("c.py", text)
    assert _get(facts, key).line == text.count("\n")
    assert [m.cause_id for m in misconfigurations(facts)] == ["hls4ml/iotype-in-layer-config"]


def test_broken_loop_body_is_read_one_level_down() -> None:
    text = ("# SYNTHETIC\nfor layer in model.layers:  # the loop\n    print(layer.name\n"
            "    config['LayerName'][layer.name]['pragma'] = {'unroll': 'factor=2'}\n  Out[3]: done\n"
            "config['Model']['Strategy'] = 'Resource'\n")
    facts = read_python_script("c.py", text)
    assert _get(facts, "HLSConfig.LayerName.*.pragma.unroll").line == 4
    assert _get(facts, "HLSConfig.Model.Strategy").line == 6
    (m,) = misconfigurations(facts)
    assert m.cause_id == "hls4ml/pragma-key-ignored" and "every layer" in m.message


def test_iotype_hint_names_the_project_setting_or_its_absence() -> None:
    base = "# SYNTHETIC\nconfig['LayerName']['fc1']['IOType'] = 'io_stream'\n"
    (m,) = misconfigurations(read_python_script("c.py", base))
    assert "c.py:2" in m.message and "io_parallel" not in m.message
    (m,) = misconfigurations(read_python_script("c.py", base + "h = convert_from_keras_model(model, part='x')\n"))
    assert "shows no io_type" in m.message and "c.py:3" in m.message
    (m,) = misconfigurations(read_python_script("c.py", base + "h = convert_from_keras_model(model, io_type='io_stream')\n"))
    assert "the project setting is `c.py:3" in m.message


@pytest.mark.parametrize("make", [
    lambda n: "x = f(\n" + "    a,\n" * n,                                   # one call never closed
    lambda n: "for a in b:\n" + "".join("    " * min(i, 40) + "y(\n" for i in range(n)),  # ever deeper, never closed
    lambda n: "    " + "\n".join(f"config['LayerName']['l{i}'] = {{'pragma': {{'u': {i}}}}}" for i in range(n)) + "\n)",
    lambda n: "'''\n" + "config['Model']['ReuseFactor'] = 1\n" * n,     # a string never closed
    lambda n: "".join(("    " * (i % 9)) + "for x in y:\n" for i in range(n)),  # headers without bodies
])
def test_script_reader_is_linear_on_hostile_input(make, monkeypatch) -> None:
    """Deterministic: the text handed to ast.parse stays within a small multiple of the input (no re-reading of
    what was read), and the whole read stays far from quadratic in wall time."""
    import time

    from triage import configs

    parsed: list[int] = []
    real_parse = configs._parse

    def counting_parse(text: str):
        parsed.append(len(text))
        return real_parse(text)

    monkeypatch.setattr(configs, "_parse", counting_parse)
    for n in (1_000, 8_000):
        parsed.clear()
        text = make(n)
        t0 = time.perf_counter()
        misconfigurations(read_python_script("h.py", text))
        assert time.perf_counter() - t0 < 60.0
        assert sum(parsed) <= 6 * min(len(text), configs._MAX_SCRIPT) + 64 * len(parsed)
        assert len(parsed) <= 4 * (text.count("\n") + 1) + 1


def test_script_over_the_cap_is_read_on_its_first_mib() -> None:
    from triage import configs

    head = "config['Model']['ReuseFactor'] = 4\n"
    text = head + "#" * 100 + "\n" + ("# padding\n" * (configs._MAX_SCRIPT // 10)) + "config['Model']['Strategy'] = 'x'\n"
    facts = read_python_script("big.py", text)
    assert [f.key for f in facts] == ["HLSConfig.Model.ReuseFactor"]
