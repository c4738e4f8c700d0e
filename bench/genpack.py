"""Generate a pack set of N extra, realistic signatures (default 3,000): the knowledge base five times larger.

The signatures look like the ones people write for these tools: a message id and a fixed phrase
(`ERROR: [Synth 8-4821] Cannot resolve the bound of loop '(?P<loop>[^']+)'`), DFC/HailoRT exceptions,
Python errors of hls4ml, some with alternations (`(?:synth|opt|place)_design`) that derive literal sets,
some case-insensitive, and about one in ten written for a real line of the corpus (so the bench log
really has lines the new knowledge explains). Every signature carries a match and a no_match example,
so the loader validates it like any pack. Seeded: the same N gives the same packs.

    python bench/genpack.py OUT_DIR [--signatures 3000] [--seed 5]
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import yaml


def esc(text: str) -> str:
    """Escape regex syntax, leaving spaces and punctuation that need none as written (as pack authors do)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)

ROOT = Path(__file__).resolve().parent.parent
CORPUS_LOGS = ROOT / "fixtures" / "corpus" / "logs"
PER_FILE = 500  # causes per pack file: well under the loader's 4 MiB limit

VERBS = ["Cannot resolve", "Failed to infer", "Unable to map", "Cannot legalize", "Could not schedule",
         "Failed to allocate", "Unable to partition", "Cannot flatten", "Failed to inline", "Unable to bind",
         "Cannot pipeline", "Failed to unroll", "Could not merge", "Unable to reshape", "Cannot quantize",
         "Failed to route", "Could not place", "Unable to split", "Cannot fuse", "Failed to export"]
OBJECTS = ["the bound of loop", "the interface of port", "the array", "the stream", "the FIFO depth of",
           "the resource of", "the latency of function", "the layer", "the context of", "the memory of",
           "the cluster of", "the buffer of", "the register", "the instance", "the net", "the clock of",
           "the partition of", "the scale of", "the activation of", "the kernel of"]
REASONS = ["because it is not a constant", "since the trip count is unknown", "as it exceeds the budget",
           "due to a dependency on the previous iteration", "because the width is not supported",
           "since no resource is left", "as the target part has too few sites", "due to an unsupported type",
           "because it is driven by multiple sources", "since the shape is dynamic"]
VIVADO_TOOLS = [("Synth", 8), ("Place", 30), ("Route", 35), ("DRC", 23), ("Opt", 31), ("Timing", 38),
                ("Constraints", 18), ("Common", 17), ("Vivado", 12), ("IP_Flow", 19)]
HLS_TOOLS = [("HLS", 200), ("HLS", 214), ("XFORM", 203), ("SCHED", 204), ("BIND", 205), ("RTGEN", 206),
             ("SYN", 201), ("IMPL", 213), ("COSIM", 212), ("SIM", 211)]
EXCEPTIONS = ["BackendAllocatorException", "AllocatorScriptParserException", "ParsingException",
              "UnsupportedOperationError", "QuantizationException", "HailoNNException", "MappingException",
              "ContextSwitchException", "ResourceUtilizationException", "OptimizationFlowException"]
PY_ERRORS = ["ValueError", "KeyError", "TypeError", "RuntimeError", "AttributeError", "NotImplementedError"]
HAILO_STATUS = ["HAILO_OUT_OF_PHYSICAL_DEVICES", "HAILO_INVALID_HEF", "HAILO_TIMEOUT", "HAILO_DRIVER_FAIL",
                "HAILO_INVALID_OPERATION", "HAILO_OUT_OF_HOST_MEMORY", "HAILO_STREAM_ABORTED"]
NAMES = ["layer3_out", "conv2d_1", "dense_4", "myproject_relu_config6", "kernel_data_V_2", "p_str_17",
         "ReadInput", "PartitionLoop", "in_local_V", "w2_V_U", "bn_scale", "ew_add3", "yolov8n/conv41"]
DESIGN_STEPS = ["synth", "opt", "place", "route", "phys_opt", "power_opt", "write_bitstream"]


def quoted(rng: random.Random) -> tuple[str, str]:
    """A quoted name capture: (regex, example text)."""
    name = rng.choice(["loop", "port", "array", "function", "layer", "instance", "net", "cell"])
    return f"'(?P<{name}>[^']+)'", f"'{rng.choice(NAMES)}'"


def phrase(rng: random.Random) -> tuple[str, str, str]:
    """(regex, example, no_match example) of a message body."""
    verb, obj, reason = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(REASONS)
    q_re, q_ex = quoted(rng)
    if rng.random() < 0.35:  # an alternation in the middle: the literal becomes a set
        alts = rng.sample(REASONS, rng.randint(2, 4))
        alt_re = "(?:" + "|".join(esc(a) for a in alts) + ")"
        return (f"{esc(verb)} {esc(obj)} {q_re} {alt_re}", f"{verb} {obj} {q_ex} {alts[-1]}",
                f"{verb} {obj} {q_ex} {reason} (resolved)" if reason not in alts else f"{verb} {obj}")
    return (f"{esc(verb)} {esc(obj)} {q_re} {esc(reason)}", f"{verb} {obj} {q_ex} {reason}",
            f"{verb} {obj}")


def vivado(rng: random.Random, n: int) -> dict:
    tool, num = rng.choice(VIVADO_TOOLS)
    level = rng.choice(["ERROR", "CRITICAL WARNING", "WARNING"])
    body_re, body_ex, body_no = phrase(rng)
    msg = f"[{tool} {num}-{1000 + n}]"
    if rng.random() < 0.15:
        steps = rng.sample(DESIGN_STEPS, rng.randint(2, 3))
        step_re = "(?P<step>" + "|".join(steps) + ")_design"
        return sig(f"{esc(level)}: {esc(msg)} {step_re} failed: {body_re}",
                   f"{level}: {msg} {steps[0]}_design failed: {body_ex}", f"INFO: {msg} {steps[0]}_design done")
    return sig(f"{esc(level)}: {esc(msg)} {body_re}", f"{level}: {msg} {body_ex}", f"{level}: {msg} {body_no}")


def hls(rng: random.Random, n: int) -> dict:
    tool, num = rng.choice(HLS_TOOLS)
    level = rng.choice(["ERROR", "WARNING"])
    body_re, body_ex, body_no = phrase(rng)
    msg = f"[{tool} {num}-{2000 + n}]"
    return sig(f"{esc(msg)} {body_re}(?: \\((?P<location>[^)]+)\\))?",
               f"{level}: {msg} {body_ex} (firmware/nnet_utils/nnet_dense.h:{n % 400})", f"{level}: {msg} {body_no}")


def dfc(rng: random.Random, n: int) -> dict:
    exc = rng.choice(EXCEPTIONS)
    body_re, body_ex, body_no = phrase(rng)
    code = f"E{3000 + n}"
    return sig(f"\\[error\\] {exc}: {code}: {body_re}", f"[error] {exc}: {code}: {body_ex}",
               f"[info] {exc}: {code}: {body_no}")


def hailort(rng: random.Random, n: int) -> dict:
    status = rng.choice(HAILO_STATUS)
    body_re, body_ex, _ = phrase(rng)
    code = 10 + n % 90
    return sig(f"\\[HailoRT\\] \\[error\\] CHECK failed - {body_re} \\(status={status}\\({code}\\)\\)",
               f"[HailoRT] [error] CHECK failed - {body_ex} (status={status}({code}))",
               f"[HailoRT] [info] CHECK passed - {body_ex}")


def python_error(rng: random.Random, n: int) -> dict:
    err = rng.choice(PY_ERRORS)
    body_re, body_ex, body_no = phrase(rng)
    ignore = rng.random() < 0.25
    fn = f"convert_{rng.choice(['dense', 'conv', 'pool', 'act', 'bn'])}_{n}"
    s = sig(f"{err}: in {fn}\\(\\): {body_re}", f"{err}: in {fn}(): {body_ex}", f"{err}: in other(): {body_no}")
    if ignore:
        s["ignore_case"] = True
        s["match"].append(s["match"][0].upper())
    return s


def sig(regex: str, example: str, no_match: str) -> dict:
    return {"regex": regex, "match": [example], "no_match": [no_match]}


def from_corpus(rng: random.Random, lines: list[str]) -> dict | None:
    """A signature for a real corpus line: its fixed text, with numbers and quoted names captured."""
    line = rng.choice(lines)
    m = re.search(r"(?:ERROR|WARNING|CRITICAL WARNING): (\[[A-Za-z_]+ \d+-\d+\]) (.{12,90})", line)
    if not m:
        return None
    tag, body = m.group(1), m.group(2)
    parts, pos = [], 0
    for i, q in enumerate(re.finditer(r"'[^']*'|\d+", body)):
        parts.append(esc(body[pos:q.start()]))
        parts.append(f"'(?P<q{i}>[^']*)'" if q.group().startswith("'") else f"(?P<n{i}>\\d+)")
        pos = q.end()
    parts.append(esc(body[pos:]))
    regex = esc(tag) + " " + "".join(parts)
    return sig(regex, line[m.start():], line[m.start():m.start(1)] + tag)


def generate(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    lines = sorted({ln for p in sorted(CORPUS_LOGS.rglob("*.log"))
                    for ln in p.read_text(encoding="utf-8", errors="replace").splitlines()
                    if re.search(r"(?:ERROR|WARNING): \[", ln)})
    makers = [vivado, vivado, hls, hls, dfc, hailort, python_error]
    causes, seen = [], set()
    n = 0
    while len(causes) < count:
        n += 1
        s = from_corpus(rng, lines) if rng.random() < 0.1 else rng.choice(makers)(rng, n)
        if s is None or s["regex"] in seen:
            continue
        seen.add(s["regex"])
        causes.append({
            "id": f"bench/gen-{len(causes):05d}", "title": f"Generated cause {len(causes)}",
            "severity": rng.choice(["error", "error", "warning", "info"]),
            "cause": "A generated cause: the knowledge base grown five times over, for the bench.",
            "workaround": "None: this cause exists to measure speed.",
            "signatures": [s],
        })
    return causes


def write_packs(out: Path, count: int, seed: int = 5) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    causes = generate(count, seed)
    files = []
    for i in range(0, len(causes), PER_FILE):
        path = out / f"bench-gen-{i // PER_FILE:02d}.yaml"
        doc = {"pack": f"bench-gen-{i // PER_FILE:02d}", "tool": "any",
               "description": "Generated signatures for bench/run (not shipped).", "causes": causes[i:i + PER_FILE]}
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8")
        files.append(path)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--signatures", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    files = write_packs(args.out, args.signatures, args.seed)
    print(f"{args.signatures} signatures in {len(files)} packs under {args.out}")


if __name__ == "__main__":
    main()
