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
from typing import TYPE_CHECKING, Any

from .model import Evidence

if TYPE_CHECKING:
    import yaml


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
    seen: set[tuple[str, int]] = set()
    out: list[Evidence] = []
    for f in misconfig.facts:
        if (f.source, f.line) in seen:  # two keys of one dict literal on one line are one line of evidence
            continue
        seen.add((f.source, f.line))
        out.append(Evidence(f.source, f.line, f.context, captures={**misconfig.captures, "key": f.key, "value": f.value}))
    return out


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
    import yaml  # noqa: PLC0415 - only configs need it; a log scan does not pay for importing it

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
    import yaml  # noqa: PLC0415

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
    import yaml  # noqa: PLC0415

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
_PARSE_ERRORS = (SyntaxError, ValueError, TypeError, MemoryError, RecursionError, OverflowError)
_MAX_SCRIPT = 1 << 20  # a conversion script is read on its first MiB (they are a few KiB; ast.parse is slow on MiBs)
_MAX_STATEMENTS = 20_000  # logical lines read one at a time when the script does not parse as a whole
EVERY_LAYER = "*"  # the key of a layer named by a loop variable: `for layer in model.layers: config['LayerName'][layer.name]`
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _value_text(node: ast.expr) -> str:
    try:
        value = ast.literal_eval(node)
    except _PARSE_ERRORS:
        return ast.unparse(node)
    if isinstance(value, dict):
        return ast.unparse(node)
    return _scalar(value)


def _root_name(node: ast.expr) -> str | None:
    """The variable an expression is read from: `layer` in `layer.name`, `layer['name']`, `str(layer.name)`."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            node = node.args[0]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None


class _Script:
    """What one conversion script sets, read statement by statement with the loops it is inside."""

    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        self.out: list[Fact] = []
        self.constants: dict[str, str] = {}  # name = 'fc1' (module-level string constants)
        self.aliases: dict[str, list[str]] = {}  # layer_cfg = config['LayerName'][layer.name]
        self.latest: dict[str, str] = {}  # key -> the value last set, for reads of earlier settings

    # -- keys and values

    def key(self, node: ast.expr, loop_vars: frozenset[str]) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
            return str(node.value)
        if isinstance(node, ast.Name) and node.id in self.constants and node.id not in loop_vars:
            return self.constants[node.id]
        if _root_name(node) in loop_vars:
            return EVERY_LAYER
        return f"[{ast.unparse(node)}]"

    def path_of(self, node: ast.expr, loop_vars: frozenset[str]) -> list[str] | None:
        """`config['LayerName'][layer.name]['ReuseFactor']` -> ['LayerName', '*', 'ReuseFactor'] (an alias expands)."""
        keys: list[str] = []
        while isinstance(node, ast.Subscript):
            keys.append(self.key(node.slice, loop_vars))
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        keys.reverse()
        if node.id in self.aliases:
            return [*self.aliases[node.id], *keys]
        return keys if keys else None

    def value(self, node: ast.expr, loop_vars: frozenset[str]) -> str:
        """A literal as written; a read of a setting made earlier in the script (`config['Model']['Precision']`)
        as that setting's value."""
        if isinstance(node, ast.Subscript):
            keys = self.path_of(node, loop_vars)
            known = self.latest.get(_canonical(keys)) if keys else None
            if known is not None:
                return known
        return _value_text(node)

    # -- facts

    def emit(self, line: int, key: str, value: str) -> None:
        self.out.append(Fact(self.path, line, key, value, _line_text(self.lines, line)))
        self.latest[key] = value

    def emit_dict(self, node: ast.Dict, keys: list[str], offset: int, loop_vars: frozenset[str]) -> None:
        """One fact per leaf of a dict literal, each at the line of its own key (non-literal leaves as written)."""
        if not node.keys:
            self.emit(node.lineno + offset, _canonical(keys), "{}")
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:  # **other
                continue
            sub = [*keys, self.key(k, loop_vars)]
            if isinstance(v, ast.Dict):
                self.emit_dict(v, sub, offset, loop_vars)
            else:
                self.emit(k.lineno + offset, _canonical(sub), self.value(v, loop_vars))

    def assign(self, target: ast.expr, value: ast.expr, line: int, offset: int, loop_vars: frozenset[str]) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and not loop_vars:
                self.constants[target.id] = value.value
            else:
                self.constants.pop(target.id, None)
            keys = self.path_of(value, loop_vars) if isinstance(value, ast.Subscript) else None
            if keys:
                self.aliases[target.id] = keys
            else:
                self.aliases.pop(target.id, None)
            return
        keys = self.path_of(target, loop_vars)
        if keys is None:
            return
        if isinstance(value, ast.Dict):
            self.emit_dict(value, keys, offset, loop_vars)
        else:
            self.emit(line, _canonical(keys), self.value(value, loop_vars))

    def calls(self, tree: ast.AST, offset: int) -> None:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node.func)
            prefix = "convert" if name in _CONVERTERS else "config_from" if name in _CONFIG_FROM else None
            if prefix is None:
                continue
            for kw in node.keywords:
                if kw.arg is not None:
                    self.emit(kw.value.lineno + offset, f"{prefix}.{kw.arg}", _value_text(kw.value))

    def statements(self, body: list[ast.stmt], offset: int, loop_vars: frozenset[str]) -> None:
        for stmt in body:
            self.statement(stmt, offset, loop_vars)

    def statement(self, stmt: ast.stmt, offset: int, loop_vars: frozenset[str]) -> None:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self.assign(target, stmt.value, stmt.lineno + offset, offset, loop_vars)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(stmt.target, stmt.value, stmt.lineno + offset, offset, loop_vars)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.update_call(stmt.value, offset, loop_vars)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            inner = loop_vars | _loop_targets(stmt.target)
            self.loop_aliases(stmt, loop_vars)
            self.statements(stmt.body, offset, inner)
            self.statements(stmt.orelse, offset, loop_vars)
        elif isinstance(stmt, ast.If | ast.While):
            self.statements(stmt.body, offset, loop_vars)
            self.statements(stmt.orelse, offset, loop_vars)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            self.statements(stmt.body, offset, loop_vars)
        elif isinstance(stmt, ast.Try):
            self.statements(stmt.body, offset, loop_vars)
            for handler in stmt.handlers:
                self.statements(handler.body, offset, loop_vars)
            self.statements(stmt.orelse, offset, loop_vars)
            self.statements(stmt.finalbody, offset, loop_vars)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self.statements(stmt.body, offset, loop_vars)

    def loop_aliases(self, loop: ast.For | ast.AsyncFor, loop_vars: frozenset[str]) -> None:
        """`for name, layer_cfg in config['LayerName'].items()`: layer_cfg is the config of every layer."""
        target = loop.target
        if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name) \
                and _is_items(loop.iter):
            keys = self.path_of(loop.iter.func.value, loop_vars)  # type: ignore[attr-defined]
            if keys:
                self.aliases[target.elts[1].id] = [*keys, EVERY_LAYER]

    def update_call(self, call: ast.Call, offset: int, loop_vars: frozenset[str]) -> None:
        """`config['LayerName'][layer.name].update({...})` sets the keys of the dict under that path."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "update" and len(call.args) == 1
                and isinstance(call.args[0], ast.Dict)):
            return
        keys = self.path_of(func.value, loop_vars)
        if keys:
            self.emit_dict(call.args[0], keys, offset, loop_vars)

    def tree(self, tree: ast.Module, offset: int, loop_vars: frozenset[str]) -> None:
        self.statements(tree.body, offset, loop_vars)
        self.calls(tree, offset)


def _loop_targets(target: ast.expr) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def _is_items(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "items"


_BRACKETS = re.compile(r"[()\[\]{}]")
_SPECIAL = re.compile(r"[\"'#\\]")


def _scan_line(line: str, stack: list[str], quote: str) -> str:
    """Brackets opened and closed on one line, strings and comments respected; returns the open string quote
    (a triple quote continues on the next line). One pass over the line."""
    if not quote and not _SPECIAL.search(line):  # the common line: brackets only, counted in C
        for m in _BRACKETS.finditer(line):
            ch = m.group()
            if ch in _CLOSERS:
                stack.append(ch)
            elif stack:
                stack.pop()
        return ""
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
            i += 1
            continue
        if ch == "#":
            break
        if ch in "\"'":
            quote = ch * 3 if line.startswith(ch * 3, i) else ch
            i += len(quote)
            continue
        if ch in _CLOSERS:
            stack.append(ch)
        elif ch in ")]}" and stack:
            stack.pop()
        i += 1
    return quote if len(quote) == 3 else ""  # a one-quote string does not continue past its line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_code(line: str) -> bool:
    body = line.strip()
    return bool(body) and not body.startswith("#")


_OPEN_ENDINGS = tuple(",([{\\:+-*/%=<>|&^~@.")
_OPEN_WORDS = ("and", "or", "not", "in", "is", "if", "else", "lambda", "for", "await")


def _ends_open(line: str) -> bool:
    """A line after which the statement surely goes on (a trailing comma, operator or keyword)."""
    body = (_strip_comment(line) if "#" in line else line).rstrip()
    if not body:
        return True
    if body.endswith(_OPEN_ENDINGS):
        return True
    last = body.rsplit(None, 1)[-1]
    return last in _OPEN_WORDS


def _logical_lines(lines: list[str]) -> Iterator[tuple[int, int, list[str]]]:
    """The logical lines of a (possibly broken) snippet: (first index, end index, brackets still open at the end).

    A logical line starts at a code line outside brackets, strings and backslash continuations, as for Python. A
    bracket left open by a cut-off line is given up at a line that starts a statement of its own (indented no
    deeper than the line that opened it, after a line that ends complete): pasted fragments often leave one open.
    """
    start = -1
    base = 0
    stack: list[str] = []
    quote = ""
    continued = False
    complete = True  # the last code line ended without a trailing comma/operator
    for i, line in enumerate(lines):
        code = _is_code(line)
        if code and not quote and not continued:
            recover = bool(stack) and complete and _indent(line) <= base and line.lstrip()[0] not in ")]}"
            if start < 0 or not stack or recover:
                if start >= 0:
                    yield start, i, stack
                start, base = i, _indent(line)
                stack = []
        if start < 0:
            continue
        quote = _scan_line(line, stack, quote)
        continued = line.rstrip().endswith("\\") and not quote
        if code and not quote:
            complete = not _ends_open(line)
    if start >= 0:
        yield start, len(lines), stack


def _dedent(lines: list[str]) -> list[str]:
    """Remove the indentation every code line shares (comment lines do not count, as for Python itself)."""
    margins = [_indent(line) for line in lines if _is_code(line)]
    margin = min(margins) if margins else 0
    if not margin:
        return lines
    return [line[margin:] if line[:margin].strip() == "" else line.lstrip(" \t") for line in lines]


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except _PARSE_ERRORS:
        return None


def _read_lines(script: _Script, lines: list[str]) -> None:
    """Read a snippet that does not parse as a whole one logical line at a time, in one pass: a compound
    statement's header is read with an empty body (a `for` header makes its targets loop variables for the lines
    indented under it), a line cut off inside brackets is read with its brackets closed, and a line that still
    does not parse (cell output, prose) is skipped."""
    loops: list[tuple[int, frozenset[str]]] = []  # (indent of a for header, its loop variables), innermost last
    for count, (start, end, open_brackets) in enumerate(_logical_lines(lines)):
        if count >= _MAX_STATEMENTS:
            break
        chunk = lines[start:end]
        indent = _indent(chunk[0])
        while loops and loops[-1][0] >= indent:
            loops.pop()
        loop_vars = loops[-1][1] if loops else frozenset()
        body = [line[indent:] if line[:indent].strip() == "" else line.lstrip(" \t") for line in chunk]
        tree = _parse("\n".join(body))
        if tree is None and open_brackets:  # a call or dict cut off at the end of the paste: close what it opened
            tree = _parse_closed(body) or _parse_closed(body[:-1])
        if tree is not None:
            script.tree(tree, start, loop_vars)
            continue
        head = _strip_comment(body[-1]).rstrip()
        if not head.endswith(":"):
            continue
        header = _parse("\n".join([*body[:-1], head, "    pass"]))
        loop = header.body[0] if header is not None and header.body else None
        if isinstance(loop, ast.For | ast.AsyncFor):
            loops.append((indent, loop_vars | _loop_targets(loop.target)))
            script.loop_aliases(loop, loop_vars)


def _parse_closed(body: list[str]) -> ast.Module | None:
    """`body` with the brackets it leaves open closed after its last line (its comment dropped)."""
    if not body:
        return None
    stack: list[str] = []
    quote = ""
    for line in body:
        quote = _scan_line(line, stack, quote)
    if quote or not stack:
        return None
    last = _strip_comment(body[-1]).rstrip().rstrip("\\")
    return _parse("\n".join([*body[:-1], last]) + "".join(_CLOSERS[b] for b in reversed(stack)))


def read_python_script(path: str, text: str) -> list[Fact]:
    """Settings in an hls4ml conversion script, read with `ast` (the script is never run).

    `config[...][...] = value` gives `HLSConfig....` facts (a dict literal gives one fact per leaf, at the line
    of its key); converter calls give `convert.<kwarg>`; `config_from_*` calls give `config_from.<kwarg>`. A key
    made of a loop variable (`for layer in model.layers: config['LayerName'][layer.name] = {...}`) is `*`, every
    layer. A script pasted with indentation is dedented; one that does not parse as a whole (a fragment, an output
    line pasted in the middle, a call cut off at the end) is read statement by statement.
    """
    if len(text) > _MAX_SCRIPT:
        text = text[: text.rfind("\n", 0, _MAX_SCRIPT) + 1 or _MAX_SCRIPT]
    lines = text.split("\n")  # numbered as grep -n numbers them (str.splitlines also breaks at \x0b, \x85 ...)
    code = _dedent(lines)
    script = _Script(path, lines)
    tree = _parse("\n".join(code))
    try:
        if tree is not None:
            script.tree(tree, 0, frozenset())
        else:
            _read_lines(script, code)
    except RecursionError:  # a hostile nesting depth: keep what was read
        pass
    script.out.sort(key=lambda f: f.line)
    return script.out


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


def _scope_text(parts: list[str]) -> str:
    """`HLSConfig.LayerName.*` -> `LayerName[every layer]`: how a scope reads in a message."""
    shown = [p for p in parts if p != "HLSConfig"]
    if len(shown) >= 2 and shown[0] in ("LayerName", "LayerType"):
        name = "every layer (a loop variable)" if shown[1] == EVERY_LAYER else shown[1]
        return f"{shown[0]}[{name}]" + "".join(f"[{p}]" for p in shown[2:])
    return ".".join(shown)


def _hls4ml_ignored_keys(facts: list[Fact]) -> Iterator[Misconfig]:
    io_type = next((f for f in facts if f.key in ("convert.io_type", "IOType")), None)
    convert = next((f for f in facts if f.key.startswith("convert.")), None)
    pragmas: dict[tuple[str, str], list[Fact]] = {}
    for f in facts:
        parts = f.key.split(".")
        if parts[0] != "HLSConfig" or len(parts) < 3:
            continue
        if parts[-1] == "IOType":
            scope = ".".join(parts[:-1])
            if io_type:
                hint = f" (the project setting is `{io_type.where} {io_type.context}`)"
            elif convert:
                hint = (f" (the converter call at {convert.where} shows no io_type, and without one hls4ml "
                        f"builds the project io_parallel)")
            else:
                hint = ""
            message = (f"`{f.where} {f.context}` under `{_scope_text(parts[:-1])}` is ignored by hls4ml: IOType is a "
                       f"project-level setting — pass io_type='{f.value}' to the converter (or a top-level "
                       f"`IOType: {f.value}`){hint}")
            yield Misconfig("hls4ml/iotype-in-layer-config", [f], message,
                            {"value": f.value, "scope": scope, "source": f.source, "line": str(f.line)})
        lowered = [p.lower() for p in parts]
        if "pragma" in lowered[1:]:
            cut = lowered.index("pragma", 1) + 1
            pragmas.setdefault((f.source, ".".join(parts[:cut])), []).append(f)
    for (source, scope), group in pragmas.items():  # one finding per pragma dict, all its keys as evidence
        f = group[0]
        parts = scope.split(".")
        message = (f"`{f.where} {f.context}`: the `{parts[-1]}` dict under `{_scope_text(parts[:-1])}` "
                   f"is never read by hls4ml; set HLS pragmas through its supported keys (ReuseFactor, "
                   f"Strategy, ParallelizationFactor...) or edit the generated firmware")
        yield Misconfig("hls4ml/pragma-key-ignored", group, message,
                        {"scope": scope, "source": source, "line": str(f.line)})


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
