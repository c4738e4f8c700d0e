"""Facts from the user's own configuration: Hailo model scripts, hls4ml configs and conversion scripts.

Several failures are caused by a line the user wrote, not by the tool: `resources_param` next to
`performance_param(compiler_optimization_level=2)`, an `IOType` under `LayerName` that hls4ml never
reads. Reading those files (statically: Python is parsed with `ast`, never executed) lets a finding
quote `model.alls:1` instead of a generic advice.

Keys are dotted paths from the root of the project config, so a YAML file and a Python script that
set the same thing give the same key: `HLSConfig.LayerName.fc1.ReuseFactor`, `IOType`,
`convert.io_type`, `performance_param.compiler_optimization_level`.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from .model import Evidence


@dataclass
class Fact:
    """One setting as written: where (`source`:`line`), what (`key` = `value`), and the line's text."""

    source: str
    line: int
    key: str
    value: str
    context: str

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Misconfig:
    """A known-bad combination of facts, found before (or without) any compile log."""

    cause_id: str
    facts: list[Fact]
    message: str
    captures: dict[str, str] = field(default_factory=dict)


def evidence_of(misconfig: Misconfig) -> list[Evidence]:
    """The facts of a misconfiguration as finding evidence (one per line quoted, with the captures)."""
    return [Evidence(f.source, f.line, f.context, captures={**misconfig.captures, "key": f.key, "value": f.value})
            for f in misconfig.facts]


# ---------------------------------------------------------------------------------------------
# Hailo model scripts (.alls)


# The targets are names separated by commas: nothing in the pattern can match the same spaces two ways (a
# looser `[\w/.,\s]+?` before `\s*=` was cubic in a run of spaces).
_COMMAND = re.compile(
    r"^\s*(?:(?P<lhs>[\w/.]+(?:\s*,\s*[\w/.]+)*(?:\s*,)?)\s*=\s*)?(?P<name>[A-Za-z_]\w*)\s*\((?P<args>.*)\)\s*$", re.S)
_KWARG = re.compile(r"^([A-Za-z_]\w*)\s*=\s*(.*)$", re.S)


MAX_STATEMENT_CHARS = 64 << 10  # a model-script command joined over lines; longer is an unclosed bracket
MAX_DEPTH = 64  # nesting of a config (YAML, JSON, printed dict): the pack loader's bound
MAX_NODES = 200_000  # YAML nodes of one config


class ConfigRefused(ValueError):
    """A config read with the limits packs are read with (no aliases, bounded depth and size): why not."""


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets and quotes: `layers={conv*}, clipping_values=[0.5, 99.5]`."""
    parts: list[str] = []
    depth = 0
    quote = ""
    cur: list[str] = []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def read_alls(path: str, text: str) -> list[Fact]:
    """Each command of a model script as facts: `name` = raw arguments, `name.kw` = value, `name.N` = positional.

    Multi-return commands (`a, b = defuse(...)`) also give `name.targets`. A command spanning lines
    (an open bracket) is joined and reported at its first line.
    """
    facts: list[Fact] = []
    parts: list[str] = []  # the lines of the command being joined (an open bracket)
    size = depth = 0
    start = 0
    for no, raw in enumerate(text.split("\n"), 1):
        body = _strip_comment(raw).strip()
        if not parts and not body:
            continue
        if not parts:
            start = no
        parts.append(body)
        size += len(body) + 1
        # counted per line, not over the joined text: an unclosed `(` once made reading quadratic
        depth += body.count("(") + body.count("[") + body.count("{") - body.count(")") - body.count("]") - body.count("}")
        if depth > 0 and size <= MAX_STATEMENT_CHARS:
            continue
        command, parts, size, depth = " ".join(parts), [], 0, 0
        if len(command) > MAX_STATEMENT_CHARS:  # an unclosed bracket swallowing the file: no command
            continue
        m = _COMMAND.match(command)
        if not m:
            continue
        name, args = m.group("name"), m.group("args").strip()
        facts.append(Fact(path, start, name, args, command))
        if m.group("lhs"):
            facts.append(Fact(path, start, f"{name}.targets", " ".join(m.group("lhs").split()), command))
        position = 0
        for arg in _split_top(args):
            kw = _KWARG.match(arg)
            if kw and not arg.lstrip().startswith(("{", "[")):
                facts.append(Fact(path, start, f"{name}.{kw.group(1)}", _unquote(kw.group(2)), command))
            else:
                facts.append(Fact(path, start, f"{name}.{position}", _unquote(arg), command))
                position += 1
    return facts


# ---------------------------------------------------------------------------------------------
# hls4ml configs (YAML / JSON / printed dict)


# Keys of the HLSConfig dict: a Python `config` from `config_from_keras_model` is this dict.
_HLSCONFIG_KEYS = ("Model", "LayerName", "LayerType", "Flows", "Optimizers", "SkipOptimizers")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _walk_yaml(node: yaml.Node, prefix: str, path: str, lines: list[str], out: list[Fact]) -> None:
    if isinstance(node, yaml.MappingNode):
        if not node.value and prefix:
            no = node.start_mark.line + 1
            out.append(Fact(path, no, prefix, "{}", _line_text(lines, no)))
        for key_node, value_node in node.value:
            key = str(key_node.value)
            full = f"{prefix}.{key}" if prefix else key
            if isinstance(value_node, yaml.ScalarNode):
                no = key_node.start_mark.line + 1
                value = value_node.value if value_node.value != "" or value_node.style else "null"
                if value_node.tag.endswith(":null") or value in ("~",):
                    value = "null"
                out.append(Fact(path, no, full, str(value), _line_text(lines, no)))
            else:
                _walk_yaml(value_node, full, path, lines, out)
    elif isinstance(node, yaml.SequenceNode):
        no = node.start_mark.line + 1
        items = [str(v.value) for v in node.value if isinstance(v, yaml.ScalarNode)]
        out.append(Fact(path, no, prefix, "[" + ", ".join(items) + "]", _line_text(lines, no)))
    elif isinstance(node, yaml.ScalarNode) and prefix:
        no = node.start_mark.line + 1
        out.append(Fact(path, no, prefix, str(node.value), _line_text(lines, no)))


# YAML also ends lines at NEL, LS and PS; read as spaces, its line numbers are the LF-counted ones we report
_YAML_BREAKS = re.compile("[\x85\u2028\u2029]")


def _line_text(lines: list[str], no: int) -> str:
    return lines[no - 1].strip() if 0 < no <= len(lines) else ""


def read_hls4ml_config(path: str, text: str) -> list[Fact]:
    """Every leaf of an hls4ml YAML/JSON config as a dotted-key fact with its line.

    The YAML is composed, not constructed: tags such as `!keras_model` need no loader and no code
    runs. JSON is read through the same path (YAML is a superset), falling back to `json`.
    """
    lines = text.split("\n")
    out: list[Fact] = []
    text = _YAML_BREAKS.sub(" ", text)
    try:
        _check_yaml(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        if _json_depth(text) > MAX_DEPTH:
            raise ConfigRefused(f"nested deeper than {MAX_DEPTH} levels; not read") from None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return []
        return _facts_from_value(data, "", path, 1, "")
    if node is not None:
        _walk_yaml(node, "", path, lines, out)
    return out


def _check_yaml(text: str) -> None:
    """The pack loader's limits, on the events (no tree built): aliases refused (an 800-byte file of nested
    aliases once grew to 11 GB as a tree), nesting and node count bounded."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise ConfigRefused(f"YAML aliases are not read in configs (line {event.start_mark.line + 1}); not read")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigRefused(f"nested deeper than {MAX_DEPTH} levels; not read")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_NODES:
                raise ConfigRefused(f"more than {MAX_NODES} YAML nodes; not read")


def _json_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _facts_from_value(value: Any, prefix: str, path: str, line: int, context: str, depth: int = 0) -> list[Fact]:
    out: list[Fact] = []
    if depth > MAX_DEPTH:
        return out
    if isinstance(value, dict):
        if not value and prefix:
            out.append(Fact(path, line, prefix, "{}", context))
        for k, v in value.items():
            out.extend(_facts_from_value(v, f"{prefix}.{k}" if prefix else str(k), path, line, context, depth + 1))
    elif prefix:
        if isinstance(value, list | tuple):
            out.append(Fact(path, line, prefix, "[" + ", ".join(_scalar(v) for v in value) + "]", context))
        else:
            out.append(Fact(path, line, prefix, _scalar(value), context))
    return out


def _canonical(keys: list[str]) -> str:
    """Prefix `HLSConfig.` to a path that starts inside the HLSConfig dict."""
    if keys and keys[0] in _HLSCONFIG_KEYS:
        keys = ["HLSConfig", *keys]
    return ".".join(keys)


def read_hls4ml_printed_config(path: str, lines: Iterable[tuple[int, str]]) -> list[Fact]:
    """The `config` dict as printed by `print(config)` in a log, read with `ast.literal_eval` (never eval).

    A dict may span several lines; all its facts carry the line where it starts.
    """
    out: list[Fact] = []
    parts: list[str] = []
    size = 0
    start = 0
    state = _Braces()
    for no, text in lines:
        if not parts:
            pos = text.find("{'")
            if pos < 0:
                pos = text.find('{"')
            if pos < 0:
                continue
            text = text[pos:]
            start = no
            state = _Braces()
        text = text.strip()
        end = state.feed(text)  # each character is looked at once: a long unclosed dict stays linear
        if end is not None:
            parts.append(text[:end])
        else:
            parts.append(text)
            size += len(text)
            if size < MAX_DICT_CHARS:
                continue
        candidate, parts, size = "".join(parts), [], 0
        if end is None:
            continue  # never closed within the bound: not a dict
        try:
            data = ast.literal_eval(candidate)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        first = candidate if len(candidate) <= 200 else candidate[:197] + "..."
        for fact in _facts_from_value(data, "", path, start, first):
            fact.key = _canonical(fact.key.split("."))
            out.append(fact)
    return out


MAX_DICT_CHARS = 1_000_000  # a printed config dict joined over lines; longer is not one


class _Braces:
    """Brace depth over text fed piece by piece, quotes respected."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""

    def feed(self, text: str) -> int | None:
        """The index just past the `}` that closes the first brace, if it is in `text`."""
        for i, ch in enumerate(text):
            if self.quote:
                if ch == self.quote:
                    self.quote = ""
            elif ch in "\"'":
                self.quote = ch
            elif ch == "{":
                self.depth += 1
            elif ch == "}":
                self.depth -= 1
                if self.depth == 0:
                    return i + 1
        return None


# ---------------------------------------------------------------------------------------------
# Python conversion scripts (static)


_CONVERTERS = ("convert_from_keras_model", "convert_from_pytorch_model", "convert_from_onnx_model",
               "convert_from_symbolic_graph")
_CONFIG_FROM = ("config_from_keras_model", "config_from_pytorch_model", "config_from_onnx_model")


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _value_text(node: ast.expr) -> str:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ast.unparse(node)
    if isinstance(value, dict):
        return ast.unparse(node)
    return _scalar(value)


def _subscript_path(node: ast.expr) -> tuple[str, list[str]] | None:
    """`config['LayerName']['fc1']['ReuseFactor']` -> ('config', ['LayerName', 'fc1', 'ReuseFactor'])."""
    keys: list[str] = []
    while isinstance(node, ast.Subscript):
        sl = node.slice
        if isinstance(sl, ast.Constant) and isinstance(sl.value, str | int):
            keys.append(str(sl.value))
        else:
            keys.append(f"[{ast.unparse(sl)}]")
        node = node.value
    if not keys or not isinstance(node, ast.Name):
        return None
    return node.id, list(reversed(keys))


def read_python_script(path: str, text: str) -> list[Fact]:
    """Settings in an hls4ml conversion script, read with `ast` (the script is never run).

    `config[...][...] = value` gives `HLSConfig....` facts (a dict literal value gives one fact per
    leaf); converter calls give `convert.<kwarg>`; `config_from_*` calls give `config_from.<kwarg>`.
    A script that does not parse as a whole is read statement by statement, so a pasted fragment
    still gives what it can.
    """
    lines = text.split("\n")
    try:
        trees = [ast.parse(text)]
        offsets = [0]
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        trees, offsets = [], []
        for no, line in enumerate(lines):
            try:
                trees.append(ast.parse(line.strip()))
                offsets.append(no)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                continue
    out: list[Fact] = []
    for tree, offset in zip(trees, offsets, strict=True):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    found = _subscript_path(target)
                    if found is None:
                        continue
                    _, keys = found
                    no = node.lineno + offset
                    ctx = _line_text(lines, no)
                    key = _canonical(keys)
                    if isinstance(node.value, ast.Dict):
                        try:
                            data = ast.literal_eval(node.value)
                        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                            data = None
                        if isinstance(data, dict):
                            out.extend(_facts_from_value(data, key, path, no, ctx))
                            continue
                    out.append(Fact(path, no, key, _value_text(node.value), ctx))
            elif isinstance(node, ast.Call):
                name = _call_name(node.func)
                prefix = "convert" if name in _CONVERTERS else "config_from" if name in _CONFIG_FROM else None
                if prefix is None:
                    continue
                for kw in node.keywords:
                    if kw.arg is None:
                        continue
                    no = kw.value.lineno + offset
                    out.append(Fact(path, no, f"{prefix}.{kw.arg}", _value_text(kw.value), _line_text(lines, no)))
    out.sort(key=lambda f: f.line)
    return out


# ---------------------------------------------------------------------------------------------
# Dispatch


def read_config(path: str, text: str) -> list[Fact]:
    """Facts of one config-like file, chosen by extension and then by content.

    An explicitly named file is always scanned whatever its name, so content decides when the
    extension says nothing: a dict literal, a YAML mapping with hls4ml keys, or model-script commands.
    """
    ext = os.path.splitext(path.lower())[1]
    if ext == ".alls":
        return read_alls(path, text)
    if ext in (".yml", ".yaml", ".json"):
        return read_hls4ml_config(path, text)
    if ext == ".py":
        return read_python_script(path, text)
    if re.search(r"^\s*(?:performance_param|resources_param|allocator_param|context_switch_param|"
                 r"model_optimization_\w+|quantization_param|normalization\d*\s*=)", text, re.M):
        return read_alls(path, text)
    if re.search(r"^(?:HLSConfig|IOType|Backend|KerasJson|KerasH5|OutputDir)\s*:", text, re.M):
        return read_hls4ml_config(path, text)
    if re.search(r"convert_from_\w+_model|config_from_\w+_model|^\s*\w+(?:\[[^\]]+\])+\s*=", text, re.M):
        return read_python_script(path, text)
    return read_hls4ml_printed_config(path, enumerate(text.split("\n"), 1))


# ---------------------------------------------------------------------------------------------
# Misconfigurations


_PERF_LEVELS = ("2", "max")


def _short(fact: Fact, limit: int = 70) -> str:
    text = fact.context
    if len(text) > limit and "(" in text:
        text = text[: text.index("(")] + "(...)"
    return text


def misconfigurations(facts: Iterable[Fact], layer_sizes: Mapping[str, tuple[int, int]] | None = None) -> list[Misconfig]:
    """Known-bad settings among `facts`, each naming the user's own lines.

    `layer_sizes` maps a layer name to (n_in, n_out) when known (e.g. from the conversion log); without
    it a ReuseFactor is only checked for being a positive integer, since validity depends on sizes.
    """
    facts = list(facts)
    out: list[Misconfig] = []
    out.extend(_perf_flow_with_resources(facts))
    out.extend(_hls4ml_ignored_keys(facts))
    out.extend(_invalid_reuse_factors(facts, layer_sizes or {}))
    return out


def _perf_flow_with_resources(facts: list[Fact]) -> Iterator[Misconfig]:
    by_source: dict[str, list[Fact]] = {}
    for f in facts:
        by_source.setdefault(f.source, []).append(f)
    for source, items in by_source.items():
        resources = [f for f in items if f.key == "resources_param"]
        levels = [f for f in items if f.key == "performance_param.compiler_optimization_level"
                  and f.value.strip().lower() in _PERF_LEVELS]
        if not resources or not levels:
            continue
        res, lvl = resources[0], levels[-1]  # the last level set is the one in force
        message = (f"`{res.where} {_short(res)}` conflicts with `{lvl.where} {_short(lvl)}`: "
                   f"delete line {res.line}, or set compiler_optimization_level=1")
        yield Misconfig("dfc/perf-flow-manual-resources", [res, lvl], message,
                        {"resources_line": str(res.line), "performance_line": str(lvl.line),
                         "level": lvl.value.strip(), "source": source})


def _hls4ml_ignored_keys(facts: list[Fact]) -> Iterator[Misconfig]:
    io_type = next((f for f in facts if f.key in ("convert.io_type", "IOType")), None)
    pragma_seen: set[tuple[str, str]] = set()
    for f in facts:
        parts = f.key.split(".")
        if parts[0] != "HLSConfig" or len(parts) < 3:
            continue
        if parts[-1] == "IOType":
            scope = ".".join(parts[:-1])
            hint = f" (the project setting is `{io_type.where} {io_type.context}`)" if io_type else ""
            message = (f"`{f.where} {f.context}` under `{scope}` is ignored by hls4ml: IOType is a project-level "
                       f"setting — pass io_type='{f.value}' to the converter (or a top-level `IOType: {f.value}`)"
                       f"{hint}")
            yield Misconfig("hls4ml/iotype-in-layer-config", [f], message,
                            {"value": f.value, "scope": scope, "source": f.source, "line": str(f.line)})
        lowered = [p.lower() for p in parts]
        if "pragma" in lowered[1:]:
            cut = lowered.index("pragma", 1) + 1
            scope = ".".join(parts[:cut])
            if (f.source, scope) in pragma_seen:
                continue
            pragma_seen.add((f.source, scope))
            group = [g for g in facts if g.source == f.source and g.key.startswith(scope)]
            message = (f"`{f.where} {f.context}`: the `{parts[cut - 1]}` dict under `{'.'.join(parts[:cut - 1])}` "
                       f"is never read by hls4ml; set HLS pragmas through its supported keys (ReuseFactor, "
                       f"Strategy, ParallelizationFactor...) or edit the generated firmware")
            yield Misconfig("hls4ml/pragma-key-ignored", group, message,
                            {"scope": scope, "source": f.source, "line": str(f.line)})


def _strategy_for(facts: list[Fact], layer: str | None) -> str:
    """hls4ml's resolution order: LayerName > LayerType > Model (LayerType is not resolvable here)."""
    keys = ([f"HLSConfig.LayerName.{layer}.Strategy"] if layer else []) + ["HLSConfig.Model.Strategy"]
    for key in keys:
        for f in facts:
            if f.key == key:
                return f.value.strip().lower()
    return "latency"


def _invalid_reuse_factors(facts: list[Fact], sizes: Mapping[str, tuple[int, int]]) -> Iterator[Misconfig]:
    for f in facts:
        parts = f.key.split(".")
        if parts[-1] != "ReuseFactor" or (parts[0] != "HLSConfig" and f.key != "ReuseFactor"):
            continue
        try:
            rf = float(f.value)
        except ValueError:
            rf = float("nan")
        layer = parts[2] if len(parts) == 4 and parts[1] == "LayerName" else None
        if not rf == rf or rf < 1 or rf != int(rf):
            yield Misconfig("hls4ml/invalid-reuse-factor", [f],
                            f"`{f.where} {f.context}`: ReuseFactor must be a positive integer",
                            {"value": f.value, "source": f.source, "line": str(f.line)})
            continue
        if layer is None or layer not in sizes:
            continue
        if _strategy_for(facts, layer) not in ("resource", "resource_unrolled"):
            continue
        n_in, n_out = sizes[layer]
        total = n_in * n_out
        if int(rf) > total or total % int(rf):
            valid = [d for d in range(1, total + 1) if total % d == 0]
            nearest = min(valid, key=lambda d: (abs(d - rf), d))
            yield Misconfig(
                "hls4ml/invalid-reuse-factor", [f],
                f"`{f.where} {f.context}`: ReuseFactor={int(rf)} does not divide n_in*n_out={total} of layer "
                f"{layer} ({n_in}x{n_out}); hls4ml will silently use another value — choose a divisor such as "
                f"{nearest}",
                {"value": str(int(rf)), "layer": layer, "source": f.source, "line": str(f.line)})
