"""Numbers from reports and logs: utilization, timing, latency and clock figures as typed metrics.

A failure is often a number, not a message: a report table says `Bonded IOB 384/125 307.20 %` without
any ERROR line. Packs need those figures (percent > 100, WNS < 0, used > available) and the user needs
them quoted with the line they came from. Reports are small, so `parse_metrics` reads a whole report;
logs are streamed, so `metrics_from_line` / `MetricStream` work one line at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from .lazyre import lazy

KINDS = ("utilization", "timing", "latency", "interval", "clock")

# Literals a log line must contain to be worth handing to `metrics_from_line` (for the literal gate).
METRIC_LITERALS = (
    "APUs:", "LCUs:", "SCs:", "TOTAL:", " utilization:", "| Total", "| cluster_",
    "Estimated clock period", "estimated clock period", "Estimated Fmax",
)


@dataclass
class Metric:
    """One figure with its provenance; `percent` is the tool's own figure when it prints one."""

    resource: str
    used: float | None
    available: float | None
    percent: float | None
    scope: str
    kind: str
    path: str
    line: int
    unit: str | None = None

    @property
    def over(self) -> bool:
        """True when the figure exceeds what is available (percent > 100 or used > available)."""
        if self.percent is not None:
            return self.percent > 100
        return self.used is not None and self.available is not None and self.used > self.available

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(cell: str) -> float | None:
    """A table cell as a number: `~0` and `<0.01` are the tools' ways of writing "about zero"."""
    text = cell.strip().replace(",", "")
    for junk in (" ns", "ns", " MHz", "%"):
        if text.endswith(junk):
            text = text[: -len(junk)].strip()
    text = text.lstrip("~<>")
    try:
        value = float(text)
    except ValueError:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def _pct(used: float | None, available: float | None) -> float | None:
    if used is None or not available:
        return None
    return round(100.0 * used / available, 2)


def _cells(line: str) -> list[str]:
    """Cells of a `|a|b|c|` table row (raw, not stripped: indentation marks sub-rows)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return body.split("|")


# ---------------------------------------------------------------------------------------------
# Vivado report_utilization


_KEY_RESOURCES = ("CLB LUTs", "Slice LUTs", "CLB Registers", "Slice Registers", "Block RAM Tile", "URAM",
                  "DSPs", "Bonded IOB")
_SLR_RESOURCES = ("CLB LUTs", "Slice LUTs", "CLB Registers", "Slice Registers", "Block RAM Tile", "URAM", "DSPs")


def _vivado_utilization(path: str, lines: list[str]) -> Iterator[Metric]:
    """`| Site Type | Used | Fixed | [Prohibited |] Available | Util% |` tables, top-level rows only.

    Columns are found by header name, so the newer `Prohibited` column and the SLR tables need no
    special layout. Indented rows (`  LUT as Logic`) are breakdowns of the row above and are skipped.
    """
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("|") and re.match(r"\|\s*Site Type\s*\|", stripped):
            header = [c.strip() for c in _cells(stripped)]
            i += 1
            slr_cols = [(j, h) for j, h in enumerate(header) if re.fullmatch(r"SLR\d+", h)]
            for i in range(i, n):
                row = lines[i].strip()
                if row.startswith("+"):
                    continue
                if not row.startswith("|"):
                    break
                cells = _cells(row)
                if len(cells) != len(header):
                    continue
                raw_name = cells[0]
                if len(raw_name) - len(raw_name.lstrip()) > 1:
                    continue  # a sub-row
                name = raw_name.strip().rstrip("*").strip()
                if slr_cols:
                    if name not in _SLR_RESOURCES:
                        continue
                    for j, slr in slr_cols:
                        pj = header.index(f"{slr} %") if f"{slr} %" in header else -1
                        used = _num(cells[j])
                        if not used:
                            continue  # an empty SLR says nothing
                        pct = _num(cells[pj]) if pj >= 0 else None
                        yield Metric(name, used, None, pct, slr, "utilization", path, i + 1)
                    continue
                if "Used" not in header or "Available" not in header:
                    continue
                used = _num(cells[header.index("Used")])
                avail = _num(cells[header.index("Available")])
                pct = _num(cells[header.index("Util%")]) if "Util%" in header else None
                if used is None or avail is None or (used == 0 and name not in _KEY_RESOURCES):
                    continue  # the dozens of unused clocking/IO primitives are noise
                yield Metric(name, used, avail, pct if pct is not None else _pct(used, avail),
                             "device", "utilization", path, i + 1)
            else:
                i = n
            continue
        if stripped.startswith("|") and re.match(r"\|\s*SLR Index\s*\|\s*Used IOBs", stripped):
            header = [c.strip() for c in _cells(stripped)]
            ui, pi = header.index("Used IOBs"), header.index("(%)IOBs") if "(%)IOBs" in header else -1
            for i in range(i + 1, n):
                row = lines[i].strip()
                if row.startswith("+"):
                    continue
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in _cells(row)]
                if len(cells) != len(header) or not re.fullmatch(r"SLR\d+", cells[0]):
                    continue
                used = _num(cells[ui])
                if used:
                    yield Metric("Bonded IOB", used, None, _num(cells[pi]) if pi >= 0 else None,
                                 cells[0], "utilization", path, i + 1)
            else:
                i = n
            continue
        i += 1


# ---------------------------------------------------------------------------------------------
# Vivado / Vitis HLS csynth.rpt


def _top_name(lines: list[str]) -> str | None:
    for line in lines[:40]:
        m = re.search(r"(?:HLS Report|Synthesis Summary Report) of '([^']+)'|HLS Report for '([^']+)'", line)
        if m:
            return m.group(1) or m.group(2)
    return None


def _csynth_utilization(path: str, lines: list[str]) -> Iterator[Metric]:
    """The `Utilization Estimates` summary: device rows and, on multi-SLR parts, per-SLR rows.

    Only the first `|Name|BRAM_18K|...` table is read: later `|Total` rows belong to detail tables.
    """
    start = None
    for idx, line in enumerate(lines):
        if re.match(r"\s*\|\s*Name\s*\|\s*BRAM_18K", line):
            start = idx
            break
    if start is None:
        return
    header = [c.strip() for c in _cells(lines[start])][1:]
    rows: dict[str, tuple[int, list[float | None]]] = {}
    for idx in range(start + 1, len(lines)):
        row = lines[idx].strip()
        if row.startswith("+"):
            continue
        if not row.startswith("|"):
            break
        cells = _cells(row)
        rows[cells[0].strip()] = (idx + 1, [_num(c) for c in cells[1:]])
    total = rows.get("Total")
    if total is None:
        return
    for avail_key, pct_key, scope in (("Available", "Utilization (%)", "device"),
                                      ("Available SLR", "Utilization SLR (%)", "SLR")):
        if avail_key not in rows:
            continue
        line_no, avails = rows[avail_key]
        pct_row = rows.get(pct_key)
        if pct_row is not None:
            line_no = pct_row[0]
        for k, name in enumerate(header):
            used = total[1][k] if k < len(total[1]) else None
            avail = avails[k] if k < len(avails) else None
            pct = pct_row[1][k] if pct_row is not None and k < len(pct_row[1]) else None
            if used is None:
                continue
            yield Metric(name, used, avail, pct if pct is not None else _pct(used, avail),
                         scope, "utilization", path, line_no)


def _clock_metrics(est: float, target: float, uncertainty: float | None, scope: str, path: str,
                   line: int) -> Iterator[Metric]:
    """Estimated vs target period; also vs the budget (target - uncertainty) the HLS scheduler uses."""
    yield Metric("clock period", est, target, _pct(est, target), scope, "clock", path, line, "ns")
    if uncertainty is not None and target > uncertainty:
        budget = round(target - uncertainty, 4)
        yield Metric("clock period (budget)", est, budget, _pct(est, budget), scope, "clock", path, line, "ns")


def _csynth_performance(path: str, lines: list[str]) -> Iterator[Metric]:
    """The top's clock table (`|ap_clk | 5.00 ns | 7.162 ns | 0.62 ns|`) and latency summary."""
    top = _top_name(lines) or "top"
    clock_done = latency_done = False
    for idx, line in enumerate(lines):
        s = line.strip()
        if not clock_done and re.match(r"\|\s*Clock\s*\|\s*Target\s*\|\s*Estimated\s*\|\s*Uncertainty", s):
            for j in range(idx + 1, min(idx + 5, len(lines))):
                cells = [c.strip() for c in _cells(lines[j])] if lines[j].strip().startswith("|") else []
                if len(cells) >= 4:
                    target, est, unc = _num(cells[1]), _num(cells[2]), _num(cells[3])
                    if target is not None and est is not None:
                        yield from _clock_metrics(est, target, unc, top, path, j + 1)
                    break
            clock_done = True
        elif not latency_done and re.match(r"\+ Latency", s):
            # header rows then the first data row under "* Summary:"
            for j in range(idx + 1, min(idx + 12, len(lines))):
                row = lines[j].strip()
                if not row.startswith("|"):
                    continue
                cells = [c.strip() for c in _cells(row)]
                if not cells or _num(cells[0]) is None and cells[0] != "?":
                    continue
                if len(cells) >= 7:
                    lat, ii = (0, 1), (4, 5)
                elif len(cells) >= 5:
                    lat, ii = (0, 1), (2, 3)
                else:
                    break
                for (res, kind), col in ((("latency_min", "latency"), lat[0]), (("latency_max", "latency"), lat[1]),
                                         (("interval_min", "interval"), ii[0]), (("interval_max", "interval"), ii[1])):
                    value = _num(cells[col])
                    if value is not None:
                        yield Metric(res, value, None, None, top, kind, path, j + 1, "cycles")
                break
            latency_done = True
        if clock_done and latency_done:
            return


def _vitis_summary(path: str, lines: list[str]) -> Iterator[Metric]:
    """Vitis HLS `Synthesis Summary` table: slack, latency, interval and resources of the top row."""
    for idx, line in enumerate(lines):
        s = line.strip()
        if not (s.startswith("|") and re.search(r"\|\s*Slack\s*\|", s)):
            continue
        above = [c.strip() for c in _cells(lines[idx - 1])] if idx else []
        header = [c.strip() for c in _cells(s)]
        if len(above) == len(header):
            header = [f"{a} {b}".strip() for a, b in zip(above, header, strict=True)]
        for j in range(idx + 1, len(lines)):
            row = lines[j].strip()
            if row.startswith("+"):
                continue
            if not row.startswith("|"):
                return
            cells = [c.strip() for c in _cells(row)]
            if not cells[0].startswith("+") or len(cells) != len(header):
                continue
            top = cells[0].lstrip("+ ").rstrip("*").strip()
            for k, name in enumerate(header):
                cell = cells[k]
                if name.endswith("Slack"):
                    v = _num(cell)
                    if v is not None:
                        yield Metric("slack", v, None, None, top, "timing", path, j + 1, "ns")
                elif name == "Latency (cycles)":
                    v = _num(cell)
                    if v is not None:
                        yield Metric("latency", v, None, None, top, "latency", path, j + 1, "cycles")
                elif name.endswith("Interval"):
                    v = _num(cell)
                    if v is not None:
                        yield Metric("interval", v, None, None, top, "interval", path, j + 1, "cycles")
                elif name in ("BRAM", "DSP", "FF", "LUT", "URAM"):
                    m = re.fullmatch(r"(\d+)\s*\(\s*~?(\d+(?:\.\d+)?)%\)", cell)
                    if m:
                        yield Metric(name, float(m.group(1)), None, float(m.group(2)), top, "utilization",
                                     path, j + 1)
            return
    return


# ---------------------------------------------------------------------------------------------
# csynth.xml


def _xml_metrics(path: str, text: str) -> Iterator[Metric]:
    """`<top>_csynth.xml`: read with plain patterns (no XML parser, no entity expansion)."""

    def line_at(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    def tag(name: str, within: tuple[int, int] = (0, len(text))) -> tuple[str, int] | None:
        m = re.compile(rf"<{re.escape(name)}>\s*([^<]*?)\s*</{re.escape(name)}>").search(text, *within)
        return (m.group(1), m.start()) if m else None

    def block(name: str) -> tuple[int, int] | None:
        m = re.compile(rf"<{name}>(.*?)</{name}>", re.S).search(text)
        return (m.start(1), m.end(1)) if m else None

    top_tag = tag("TopModelName")
    top = top_tag[0] if top_tag else "top"
    area = block("AreaEstimates")
    if area:
        res = re.compile(r"<Resources>(.*?)</Resources>", re.S).search(text, *area)
        avail = re.compile(r"<AvailableResources>(.*?)</AvailableResources>", re.S).search(text, *area)
        avail_map: dict[str, float | None] = {}
        if avail:
            for m in re.finditer(r"<([\w-]+)>\s*([^<]*?)\s*</\1>", avail.group(1)):
                avail_map[m.group(1)] = _num(m.group(2))
        if res:
            for m in re.finditer(r"<([\w-]+)>\s*([^<]*?)\s*</\1>", res.group(1)):
                used = _num(m.group(2))
                if used is None:
                    continue
                a = avail_map.get(m.group(1))
                yield Metric(m.group(1), used, a, _pct(used, a), "device", "utilization", path,
                             line_at(res.start(1) + m.start()))
    est, target, unc = tag("EstimatedClockPeriod"), tag("TargetClockPeriod"), tag("ClockUncertainty")
    if est and target:
        e, t = _num(est[0]), _num(target[0])
        if e is not None and t is not None:
            yield from _clock_metrics(e, t, _num(unc[0]) if unc else None, top, path, line_at(est[1]))
    for name, res_name, kind in (("Best-caseLatency", "latency_min", "latency"),
                                 ("Worst-caseLatency", "latency_max", "latency"),
                                 ("Interval-min", "interval_min", "interval"),
                                 ("Interval-max", "interval_max", "interval")):
        found = tag(name)
        if found:
            v = _num(found[0])
            if v is not None:
                yield Metric(res_name, v, None, None, top, kind, path, line_at(found[1]), "cycles")


# ---------------------------------------------------------------------------------------------
# Vivado report_timing_summary


_TIMING_NAMES = ("WNS", "TNS", "WHS", "THS", "WPWS", "TPWS")


def _timing_summary(path: str, lines: list[str]) -> Iterator[Metric]:
    """The `Design Timing Summary` table: WNS/TNS/WHS/THS/WPWS/TPWS in ns (`inf` = unconstrained, skipped)."""
    design = "design"
    for line in lines[:30]:
        m = re.match(r"\|\s*Design\s*:\s*(\S+)", line)
        if m:
            design = m.group(1)
            break
    for idx, line in enumerate(lines):
        if "Design Timing Summary" not in line:
            continue
        for j in range(idx + 1, min(idx + 10, len(lines))):
            if "WNS(ns)" in lines[j]:
                names = re.split(r"\s{2,}", lines[j].strip())
                values = lines[j + 2].split() if j + 2 < len(lines) else []
                # header names contain single spaces; values do not: align by position
                if len(values) != len(names):
                    return
                for name, value in zip(names, values, strict=True):
                    m = re.fullmatch(r"(\w+)\(ns\)", name)
                    if m and m.group(1) in _TIMING_NAMES:
                        v = _num(value)
                        if v is not None:
                            yield Metric(m.group(1), v, None, None, design, "timing", path, j + 3, "ns")
                return
        return


# ---------------------------------------------------------------------------------------------
# Log lines (DFC and HLS)


# Labels are short (`16bit SCs`, `L3 weights`): bounding them keeps a long line without a `:` linear, where
# an open-ended label was retried from every word to the end of the line.
_FRACTION = lazy(re.compile, r"(?<![\w/])([A-Za-z0-9][\w ]{0,47}?):\s+(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)(?![\w./])")
_COUNT_PCT = lazy(re.compile, r"(?<![\w/])([A-Za-z0-9][\w ]{0,47}?):\s+(\d+(?:\.\d+)?)\s+\((\d+(?:\.\d+)?)%\)")
_DFC_TABLE_HEAD = lazy(re.compile, r"(?:^|\]\s)(\S+) utilization:\s*$")
_DFC_ROW = lazy(re.compile, r"\|\s*(cluster_\d+|Total)\s*\|\s*([\d.]+)%\s*\|\s*([\d.]+)%\s*\|\s*([\d.]+)%\s*\|")
_DFC_COLUMNS = ("Control Utilization", "Compute Utilization", "Memory Utilization")
_HLS_CLOCK = lazy(re.compile, 
    r"[Ee]stimated clock period \((\d+(?:\.\d+)?)\s*ns\) exceeds the target \(target clock period: "
    r"(\d+(?:\.\d+)?)\s*ns, clock uncertainty: (\d+(?:\.\d+)?)\s*ns")
_HLS_FMAX = lazy(re.compile, r"Estimated Fmax: (\d+(?:\.\d+)?) MHz")


def metrics_from_line(line: str, *, path: str = "", line_no: int = 0, context: str | None = None) -> list[Metric]:
    """Figures printed on one log line.

    DFC `used/available` lists (`APUs: 149/120, LCUs: 149/96`), `TOTAL:  LCUs: 37 (57.8125%)` lists,
    rows of the per-context utilization table (scope = `context`, e.g. `net_context_0`), and the HLS
    scheduler's `Estimated clock period (5.0263ns) exceeds the target (...)` and `Estimated Fmax`.
    """
    out: list[Metric] = []
    scope = context or "network"
    if "/" in line:
        for m in _FRACTION.finditer(line):
            used, avail = float(m.group(2)), float(m.group(3))
            out.append(Metric(m.group(1).strip(), used, avail, _pct(used, avail), scope, "utilization",
                              path, line_no))
    if "%)" in line:
        for m in _COUNT_PCT.finditer(line):
            out.append(Metric(m.group(1).strip(), float(m.group(2)), None, float(m.group(3)), scope,
                              "utilization", path, line_no))
    if "| " in line and "%" in line:
        for m in _DFC_ROW.finditer(line):
            row_scope = scope if m.group(1) == "Total" else f"{scope}/{m.group(1)}"
            for col, value in zip(_DFC_COLUMNS, m.groups()[1:], strict=True):
                out.append(Metric(col, None, None, float(value), row_scope, "utilization", path, line_no))
    if "lock period" in line:
        m = _HLS_CLOCK.search(line)
        if m:
            out.extend(_clock_metrics(float(m.group(1)), float(m.group(2)), float(m.group(3)),
                                      context or "top", path, line_no))
    if "Fmax" in line:
        m = _HLS_FMAX.search(line)
        if m:
            out.append(Metric("Fmax", float(m.group(1)), None, None, context or "top", "clock", path, line_no,
                              "MHz"))
    return out


class MetricStream:
    """Stateful wrapper over `metrics_from_line` for streamed logs: remembers the current DFC context.

    `[info] net_context_0 utilization: ` opens a table whose rows carry no context name of their own.
    """

    def __init__(self, path: str = "") -> None:
        self.path = path
        self.context: str | None = None

    def feed(self, line: str, line_no: int) -> list[Metric]:
        if "utilization:" in line:
            m = _DFC_TABLE_HEAD.search(line.rstrip("\n"))
            if m:
                self.context = m.group(1)
                return []
        in_table = self.context is not None and "| " in line
        return metrics_from_line(line, path=self.path, line_no=line_no, context=self.context if in_table else None)


# ---------------------------------------------------------------------------------------------
# Whole reports


def parse_metrics(path: str, text: str) -> list[Metric]:
    """All metrics of one report (or short log), in file order, without duplicates.

    The layout is recognised from the content, not the file name: a report renamed by the user, or
    pasted into a log, still gives its figures.
    """
    if "<AreaEstimates>" in text or "<PerformanceEstimates>" in text:
        return _dedupe(_xml_metrics(path, text))
    lines = text.split("\n")  # LF only: str.splitlines also breaks at \x0b, \x1c, \x85, ... (line numbers)
    found: list[Metric] = []
    if "Site Type" in text or "SLR Index" in text:
        found.extend(_vivado_utilization(path, lines))
    if "BRAM_18K" in text:
        found.extend(_csynth_utilization(path, lines))
    if "Estimated" in text or "+ Latency" in text:
        found.extend(_csynth_performance(path, lines))
    if "Slack" in text:
        found.extend(_vitis_summary(path, lines))
    if "Design Timing Summary" in text:
        found.extend(_timing_summary(path, lines))
    if any(lit in text for lit in METRIC_LITERALS):
        stream = MetricStream(path)
        for no, line in enumerate(lines, 1):
            if "|" in line and stream.context is None and "utilization:" not in line:
                continue  # report tables were read above; only DFC tables need the stream
            found.extend(stream.feed(line, no))
    found.sort(key=lambda m: m.line)
    return _dedupe(found)


def _dedupe(metrics: Iterable[Metric]) -> list[Metric]:
    """Keep the first of identical (kind, scope, resource) figures: routed reports repeat rows."""
    seen: set[tuple[str, str, str]] = set()
    out: list[Metric] = []
    for m in metrics:
        key = (m.kind, m.scope, m.resource)
        if key in seen:
            continue
        seen.add(key)
        out.append(m)
    return out
