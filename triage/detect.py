"""Which tool wrote the text, which version, which part, how far it got: read from banners and markers.

The rules are ordered data. Each is gated by its literal like any signature, so detection costs nothing
on lines that cannot carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from .advice import message_id
from .literals import gate_literals


@dataclass(frozen=True)
class Rule:
    """`tool`: the tool this line proves; `version`/`part` named groups are read when present;
    `phase`: the phase this line starts; `done`: the line says the phase completed successfully."""

    regex: str
    tool: str | None = None
    phase: str | None = None
    done: bool = False
    banner: bool = False  # a banner names the run's main tool (the first banner wins)
    exit: bool = False  # the tool exited normally: the run ended (errors, if any, are findings of their own)
    nested: bool = False  # a step other flows run inside a phase of their own (xelab in an HLS cosim): the
    #                       line counts only where no other phase is open and no such flow was seen
    host: bool = False  # a line only such a flow prints (an HLS co-simulation's own messages)


RULES: tuple[Rule, ...] = (
    # Hailo Dataflow Compiler and its Model Zoo wrapper
    Rule(r"Hailo DFC Version: (?P<version>\d+\.\d+\.\d+)", tool="dfc", banner=True),
    Rule(r"hailo_sdk_client", tool="dfc"),
    Rule(r"hailo_sdk\.(?:client|core)\]", tool="dfc"),
    Rule(r"<Hailo Model Zoo INFO>", tool="dfc"),
    Rule(r"hailo_dataflow_compiler-(?P<version>\d+\.\d+\.\d+)", tool="dfc"),
    Rule(r"Translation started|Start Translation|model translation|hailo parser", tool="dfc", phase="parse"),
    Rule(r"\[info\] Translation completed", tool="dfc", phase="parse", done=True),
    Rule(r"Starting Model Optimization", tool="dfc", phase="optimize"),
    Rule(r"Model Optimization is done", tool="dfc", phase="optimize", done=True),
    Rule(r"\[info\] Compiling network|Starting Hailo allocation and compilation flow", tool="dfc", phase="compile"),
    Rule(r"Successful Compilation", tool="dfc", phase="compile", done=True),
    Rule(r"HEF file written to", tool="dfc", phase="compile", done=True),
    Rule(r"--hw-arch[ =](?P<part>hailo\w+)", tool="dfc"),
    Rule(r"hw_arch=['\"]?(?P<part>hailo\w+)", tool="dfc"),
    Rule(r"\[HailoRT\]", tool="hailort", phase="runtime"),
    # the device firmware ships with (and is versioned as) the HailoRT release installed beside it
    Rule(r"\[HailoRT\] .*firmware_version is: (?P<version>\d+\.\d+\.\d+)", tool="hailort"),
    Rule(r"hailo: Init module\. driver version (?P<version>\d+\.\d+\.\d+)", tool="hailort"),
    Rule(r"HailoRT-CLI version (?P<version>\d+\.\d+\.\d+)", tool="hailort"),
    # `hailortcli run` and `hailortcli benchmark` print their result block only when every measurement ran
    Rule(r"^Running streaming inference \(|^Starting Measurements\.\.\.", tool="hailort", phase="benchmark"),
    Rule(r"^> Inference result:|^FPS\s+\(hw_only\)\s+=", tool="hailort", phase="benchmark", done=True),
    # AMD/Xilinx HLS
    Rule(r"\*{6} Vivado\(TM\) HLS - High-Level Synthesis[^\n]* v(?P<version>\d{4}\.\d)", tool="vivado_hls", banner=True),
    Rule(r"\*{6} Vitis HLS - High-Level Synthesis[^\n]* v(?P<version>\d{4}\.\d)", tool="vitis_hls", banner=True),
    Rule(r"== Vivado HLS Report for", tool="vivado_hls", phase="csynth", banner=True),
    Rule(r"== Vitis HLS Report for", tool="vitis_hls", phase="csynth", banner=True),
    Rule(r"^\* Version:\s+(?P<version>\d{4}\.\d)", tool=None),
    Rule(r"(?i)[/\\]Vivado_HLS[/\\](?P<version>\d{4}\.\d)[/\\]", tool="vivado_hls"),
    Rule(r"(?i)[/\\]Vitis_HLS[/\\](?P<version>\d{4}\.\d)[/\\]", tool="vitis_hls"),
    Rule(r"\* Target device:\s+(?P<part>\S+)"),
    Rule(r"Setting target device to '(?P<part>[^']+)'"),
    Rule(r"<Part>(?P<part>[^<]+)</Part>"),
    Rule(r"\[SIM 211-2\]|Starting C simulation|(?<!Finished Command )csim_design(?! done;)", phase="csim"),
    Rule(r"CSim done with 0 errors|CSim file generation done with 0 errors", phase="csim", done=True),
    Rule(r"(?<!Finished Command )csynth_design(?! done;)|Starting C synthesis|\[HLS 200-10\] Starting code transformations", phase="csynth"),
    Rule(r"Finished C synthesis|\[HLS 200-789\] \*{4} Estimated Fmax|\[HLS 200-111\] Finished generating all RTL models", phase="csynth", done=True),
    Rule(r"(?<!Finished Command )cosim_design(?! done;)|Starting C/RTL cosimulation", phase="cosim"),
    Rule(r"C/RTL co-simulation finished: PASS", phase="cosim", done=True),
    Rule(r"(?<!Finished Command )export_design(?! done;)|\[IMPL 213-8\] Exporting RTL as a Vivado IP", phase="export"),
    Rule(r"\[IMPL 213-8\] Finished|Finished export|IP packaging completed|export\.zip", phase="export", done=True),
    # `Finished Command X_design` closes the phase it names (Vitis HLS)
    Rule(r"\[HLS 200-111\] Finished Command csim_design", phase="csim", done=True),
    Rule(r"\[HLS 200-111\] Finished Command csynth_design|\[HLS 200-2161\] Finished Command csynth_design", phase="csynth", done=True),
    Rule(r"\[HLS 200-111\] Finished Command cosim_design", phase="cosim", done=True),
    Rule(r"\[HLS 200-111\] Finished Command export_design", phase="export", done=True),
    # the trace in .autopilot/db/autopilot.flow.log: `Command   csynth_design done; 47.743 sec.`; a failed command
    # reads `done; error code: 2;`
    Rule(r"^Command\s+csim_design (?:done|returned 0);(?! error code)", phase="csim", done=True),
    Rule(r"^Command\s+csynth_design (?:done|returned 0);(?! error code)", phase="csynth", done=True),
    Rule(r"^Command\s+cosim_design (?:done|returned 0);(?! error code)", phase="cosim", done=True),
    Rule(r"^Command\s+export_design (?:done|returned 0);(?! error code)", phase="export", done=True),
    Rule(r"\[Common 17-206\] Exiting Vivado|Exiting vivado_hls at|Exiting vitis_hls at|\[HLS 200-112\] Total (?:CPU|elapsed)", exit=True),
    # Vivado
    Rule(r"\*{6} Vivado v(?P<version>\d{4}\.\d)", tool="vivado", banner=True),
    Rule(r"^# Vivado v(?P<version>\d{4}\.\d)", tool="vivado", banner=True),
    Rule(r"Tool Version\s*: Vivado v\.(?P<version>\d{4}\.\d)", tool="vivado", banner=True),
    Rule(r"^\| Device\s*: (?P<part>\S+)", tool="vivado"),
    Rule(r"synth_design -top \S+ -part (?P<part>\S+)", tool="vivado", phase="synth"),
    Rule(r"Command: synth_design", tool="vivado", phase="synth"),
    Rule(r"synth_design completed successfully", tool="vivado", phase="synth", done=True),
    Rule(r"Command: opt_design|Command: place_design|Command: route_design", tool="vivado", phase="impl"),
    Rule(r"(?:route|place)_design completed successfully", tool="vivado", phase="impl", done=True),
    Rule(r"write_bitstream completed successfully", tool="vivado", phase="impl", done=True),
    # the Vivado simulator: xelab prints the snapshot line only when elaboration succeeded; a simulation that
    # starts after it reopens the run (no line says a simulation passed: its verdict is the test bench's)
    Rule(r"\[(?:COSIM|SIM)[- ]\d", host=True),
    Rule(r"^Vivado Simulator v?(?P<version>\d{4}\.\d)", tool="vivado", nested=True),
    Rule(r"^Built simulation snapshot \S", tool="vivado", phase="elaborate", done=True, nested=True),
    Rule(r"^Time resolution is \d+ ?[munpf]?s\b", tool="vivado", phase="simulate", nested=True),
    # hls4ml itself
    Rule(r"Interpreting (?:Sequential|Model)|Creating HLS model|Writing HLS project", tool="hls4ml", phase="convert", banner=True),
    Rule(r"\*{5} C/RTL SYNTHESIS COMPLETED IN", tool="hls4ml", phase="csynth", done=True),
    Rule(r"\*{5} (?:C/RTL SYNTHESIS|C SIMULATION|C/RTL COSIMULATION|VIVADO SYNTHESIS|EXPORT IP) \*{5}", tool="hls4ml"),
    Rule(r"\*{5} VIVADO SYNTHESIS COMPLETED IN", tool="hls4ml", phase="synth", done=True),
    # FINN
    Rule(r"finn\.(?:builder|transformation)", tool="finn", banner=True),
    # v++ (-c and -l) prints this only when its run succeeded; a failed one ends with `ERROR: [v++ 60-...]`
    Rule(r"\[v\+\+ 60-1307\] Run completed\.", phase="compile", done=True),
    # ... and a compile (`-c`) or package (`-p`) step these, its last result, only when it made its output;
    # every v++ run opens its build summary first, so a link after a compile reopens the run
    Rule(r"\[v\+\+ 60-1548\] Creating build summary session", phase="compile"),
    Rule(r"\[v\+\+ 60-586\] Created \S+\.xo\b|\[v\+\+ 60-2460\] Successfully copied a temporary xclbin",
         phase="compile", done=True),
)


HOSTING_TOOLS = ("vivado_hls", "vitis_hls", "hls4ml", "finn")
# Phases a normal exit does not end well: a simulation's verdict is its test bench's, which no tool line states
VERDICTLESS_PHASES = frozenset({"simulate"})


@dataclass
class CompiledRule:
    rule: Rule
    compiled: regex.Pattern[str]
    literals: list[str]

    @property
    def passive(self) -> bool:
        """Only names a tool, a version or a part: once those are known the rule has nothing to add."""
        return not (self.rule.phase or self.rule.exit or self.rule.banner)


def compile_rules() -> list[CompiledRule]:
    out = []
    for rule in RULES:
        compiled = regex.compile(rule.regex, regex.MULTILINE)
        literals = gate_literals(rule.regex, ignore_case=bool(compiled.flags & regex.IGNORECASE))
        if not literals:
            raise ValueError(f"detection rule without a literal: {rule.regex}")
        out.append(CompiledRule(rule, compiled, literals))
    return out


@dataclass
class Detection:
    """Accumulates what the rules saw, in stream order."""

    banner_tool: str | None = None
    tools: dict[str, int] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)  # first version seen per tool ("" = unnamed)
    part: str | None = None
    phase: str | None = None
    phases_done: set[str] = field(default_factory=set)
    phases_seen: set[str] = field(default_factory=set)
    last_done_phase: str | None = None
    ended: bool = False
    hosted: bool = False  # a flow that runs the simulator inside its own phase printed a line of its own

    def saturated(self, rule: CompiledRule) -> bool:
        """True when a passive rule cannot change what is known (saves a regex on frequent lines)."""
        groups = rule.compiled.groupindex
        tool = rule.rule.tool
        return (("version" not in groups or (tool or "") in self.versions)
                and ("part" not in groups or self.part is not None)
                and (tool is None or self.tools.get(tool, 0) >= 20)
                and (not rule.rule.host or self.hosted))

    def feed(self, rule: Rule, groups: dict[str, str]) -> None:
        if rule.host:
            self.hosted = True
        if rule.nested and self._inside_host_flow():
            return
        if rule.tool:
            self.tools[rule.tool] = self.tools.get(rule.tool, 0) + 1
            if rule.banner and self.banner_tool is None:
                self.banner_tool = rule.tool
        if groups.get("version"):
            self.versions.setdefault(rule.tool or "", groups["version"])
        if groups.get("part") and self.part is None:
            self.part = groups["part"]
        if rule.exit and self.phase not in VERDICTLESS_PHASES:
            self.ended = True
        if rule.phase:
            self.phase = rule.phase
            self.phases_seen.add(rule.phase)
            self.ended = rule.done  # a phase that starts after a completion reopens the run
            if rule.done:
                self.phases_done.add(rule.phase)
                self.last_done_phase = rule.phase

    def _inside_host_flow(self) -> bool:
        """A phase is open, or a tool that runs the simulator inside its own flow was seen (an HLS cosim's
        xelab and xsim: their snapshot line does not end an HLS run that stops before its verdict)."""
        return self.hosted or (self.phase is not None and not self.ended) or \
            any(t in self.tools for t in HOSTING_TOOLS)

    @property
    def tool(self) -> str:
        if self.banner_tool:
            return self.banner_tool
        if self.tools:
            return max(self.tools.items(), key=lambda kv: kv[1])[0]
        return "unknown"

    @property
    def version(self) -> str | None:
        return self.versions.get(self.tool) or self.versions.get("")

    @property
    def completed(self) -> bool:
        """The last phase reached also finished: the tool ran to its end."""
        return self.phase is not None and self.ended


# Message-id prefixes only the HLS tools print (`[XFORM 203-504]`); other prefixes are Vivado's (`[Synth 8-439]`).
HLS_MESSAGE_PREFIXES = frozenset({"HLS", "XFORM", "SCHED", "BIND", "SYN", "RTGEN", "SIM", "COSIM", "IMPL",
                                  "ANALYSIS", "RTMG", "VHDL", "VLOG", "APCC", "LIC"})


def tool_of_text(text: str) -> str | None:
    """The tool a few pasted lines come from: by the detection rules, else by a message id's prefix
    (`hls` for an HLS tool's, `vivado` for any other); None when nothing says."""
    detection = Detection()
    for rule in compile_rules():
        for m in rule.compiled.finditer(text[:100_000]):
            detection.feed(rule.rule, m.groupdict())
    if detection.tool != "unknown":
        return detection.tool
    msgid = message_id(text)
    if msgid is None:
        return None
    return "hls" if msgid.split(" ", 1)[0] in HLS_MESSAGE_PREFIXES else "vivado"


# Phases whose end the logs mark: only those can be reported as cut short (a runtime log has no end marker).
ENDING_PHASES = frozenset(r.phase for r in RULES if r.phase and r.done)
