"""HTML reports: one run for the engineer, the nightly page for the team.

Context builders read the store (or a `scan --format json` document) and return plain dicts; the Jinja2
templates in `triage/templates/` only lay them out. Rendering is deterministic: the generation time and the
version are part of the context, never read inside a template. Every template is autoescaped, so log text,
labels, file names and pack prose can never become markup.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from . import __version__
from .display import terminal_safe
from .errors import StoreError, TriageError
from .model import SEVERITY_RANK, Counts

DIMENSIONS = ("label", "model", "branch", "commit", "host", "device")
STATUS_ORDER = {"failed": 0, "unknown": 1, "passed": 2}
MAX_SPAN = timedelta(days=100 * 365)  # longer periods start before the epoch (and overflow datetime)
MAX_RUN_ROWS = 300  # rows of the nightly's runs table
CLASSIFYING_SEVERITIES = ("error", "warning")  # an info cause does not explain a failure
QOR_MIN_DELTA = 5.0  # percentage points: smaller utilization moves are noise, not a change
TIMING_RESOURCES = ("wns", "tns", "whs", "ths", "slack")
HIGHER_IS_BETTER = ("fmax",)
KIND_ORDER = {"utilization": 0, "clock": 1, "timing": 2, "latency": 3, "interval": 4}
# A nightly page is named by its period: `nightly-<UTC date of its last moment>.html` for a day (`--date`, or the
# default 24 h ending now), `nightly-<that date>-<length>.html` for any other length (`7d`, `6h`, `90m`).
NIGHTLY_RE = re.compile(r"^nightly-(?P<date>\d{4}-\d{2}-\d{2})(?:-(?P<span>\d+[dhm]))?\.html$")
PAGE_META_RE = re.compile(r'<meta name="triage-(?P<key>[a-z]+)" content="(?P<value>[^"]*)">')

_env: Environment | None = None


def environment() -> Environment:
    """The one Jinja2 environment: templates from the package, autoescape on, undefined names are errors."""
    global _env
    if _env is None:
        _env = Environment(
            loader=PackageLoader("triage", "templates"),
            autoescape=select_autoescape(["html", "svg"], default=True, default_for_string=True),
            undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
            finalize=_visible,
        )
    return _env


def _visible(value: Any) -> Any:
    """Every printed string with its control characters shown as escapes (`\\x1b`), as the terminal shows
    them: HTML cannot carry most of them, and a label or log line with a BEL or an escape in it should read the
    same on the page as in `runs list`. Markup (a filter's own output, such as `tojson`) is left as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return terminal_safe(value)
    return value


# ---------------------------------------------------------------------------------------------------------
# Small helpers


def _db(store: Any) -> Any:
    """A `Store` carries its sqlite_utils.Database as `.db`; a bare Database is accepted too."""
    return getattr(store, "db", store)


def _now(now: datetime | None) -> datetime:
    now = now or datetime.now(UTC)
    return now if now.tzinfo else now.replace(tzinfo=UTC)


def _iso(moment: datetime) -> str:
    """Seconds-precision UTC, the prefix every stored `created` value shares (so string order is time order)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace(" ", "T"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _show_time(value: Any) -> str:
    moment = _parse_time(value)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else (str(value) if value else "")


def _json_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    try:
        loaded = json.loads(value)
    except (TypeError, ValueError):
        return [str(value)]
    return loaded if isinstance(loaded, list) else [loaded]


def _number(value: Any) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip().rstrip("%").replace(",", ""))
    except ValueError:
        return None


def _fmt_number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _fmt_bytes(n: Any) -> str:
    size = _number(n) or 0.0
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""  # pragma: no cover


def _href(url: Any) -> str | None:
    """Only plain http(s) URLs become links; anything else is shown as text."""
    text = str(url or "")
    return text if re.match(r"^https?://[^\s\"'<>]+$", text) else None


def _sev_rank(severity: Any) -> int:
    return SEVERITY_RANK.get(str(severity), len(SEVERITY_RANK))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# ---------------------------------------------------------------------------------------------------------
# Per-run report


def _evidence(ev: Mapping[str, Any]) -> dict[str, Any]:
    line = int(ev.get("line") or 0)
    before = [str(t) for t in _json_list(ev.get("before"))]
    after = [str(t) for t in _json_list(ev.get("after"))]
    return {
        "path": str(ev.get("path") or ""), "line": line,
        "rows": (
            [{"no": line - len(before) + i if line else None, "text": t, "hit": False} for i, t in enumerate(before)]
            + [{"no": line or None, "text": str(ev.get("text") or ""), "hit": True}]
            + [{"no": line + 1 + i if line else None, "text": t, "hit": False} for i, t in enumerate(after)]
        ),
    }


def _finding(f: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(f.get("id") or ""), "anchor": "f-" + _slug(str(f.get("id") or "")),
        "severity": str(f.get("severity") or "info"), "title": str(f.get("title") or f.get("id") or ""),
        "cause": str(f.get("cause") or ""), "workaround": str(f.get("workaround") or ""),
        "references": [{"text": str(r), "href": _href(r)} for r in f.get("references") or []],
        "count": int(f.get("count") or 0), "tool": str(f.get("tool") or ""), "versions": f.get("versions") or "",
        "evidence": [_evidence(e) for e in f.get("evidence") or []],
        "explains": [_finding(e) for e in f.get("explains") or []], "generic": bool(f.get("generic")),
    }


def _metric(m: Mapping[str, Any]) -> dict[str, Any]:
    used, available = _number(m.get("used")), _number(m.get("available"))
    percent = _number(m.get("percent"))
    if percent is None and used is not None and available:
        percent = used / available * 100.0
    return {
        "resource": str(m.get("resource") or ""), "scope": str(m.get("scope") or ""),
        "kind": str(m.get("kind") or ""), "path": str(m.get("path") or ""), "line": m.get("line"),
        "unit": str(m.get("unit") or ""), "used": used, "available": available, "percent": percent,
        "used_text": _fmt_number(used), "available_text": _fmt_number(available),
        "percent_text": "" if percent is None else f"{percent:.1f} %",
    }


def _metrics_context(metrics: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Utilization rows get bars on a 0-100 % scale, whatever the largest figure: a use over 100 % fills
    the bar and gets an overflow mark, with the figure and used/available written beside it (a scale
    stretched to 307 % made a 90 % DSP bar look small)."""
    rows = sorted((_metric(m) for m in metrics), key=lambda r: KIND_ORDER.get(r["kind"], len(KIND_ORDER)))
    bars = [r for r in rows if r["percent"] is not None]
    other = [r for r in rows if r["percent"] is None]
    width = 300.0
    for r in bars:
        r["bar"] = round(max(0.0, min(r["percent"], 100.0)) / 100.0 * width, 1)
        r["over"] = r["percent"] > 100.0
        r["level"] = "over" if r["over"] else ("high" if r["percent"] >= 80.0 else "ok")
    for r in other:
        r["negative"] = r["used"] is not None and r["used"] < 0
    return {"bars": bars, "other": other, "width": width, "mark": width, "scale_text": "100 %"}


def _summary(findings: list[dict[str, Any]], unexplained: list[Any]) -> dict[str, int]:
    """The run's `Counts` (the definition the terminal, JSON and `runs list` use too)."""
    pairs: list[tuple[str, bool]] = []
    stack = [(f, False) for f in findings]
    while stack:
        f, explained = stack.pop()
        pairs.append((f["severity"], explained))
        stack.extend((sub, True) for sub in f["explains"])
    return Counts.of(pairs, len(unexplained)).to_dict()


def _base(now: datetime | None, version: str | None) -> dict[str, Any]:
    moment = _now(now)
    return {"generated": moment.strftime("%Y-%m-%d %H:%M UTC"), "generated_iso": _iso(moment) + "Z",
            "version": version or __version__}


def build_result_context(result: Mapping[str, Any], *, dimensions: Mapping[str, Any] | None = None,
                         run_id: int | None = None, created: str | None = None, duration_s: float | None = None,
                         now: datetime | None = None, version: str | None = None) -> dict[str, Any]:
    """Context of the per-run page from a `scan --format json` document (no database needed)."""
    run = dict(result.get("run") or {})
    dims = dict(dimensions or result.get("dimensions") or {})
    findings = [_finding(f) for f in result.get("findings") or []]
    unexplained = [{"path": str(u.get("path") or ""), "line": u.get("line"), "text": str(u.get("text") or ""),
                    "count": int(u.get("count") or 1), "fingerprint": str(u.get("fingerprint") or ""),
                    "advice": str(u.get("advice") or ""), "message_id": str(u.get("message_id") or ""),
                    "known": [str(k) for k in u.get("known_causes") or [] if isinstance(k, str)]}
                   for u in result.get("unexplained") or []]
    inputs = [{"path": str(i.get("path") or ""), "kind": str(i.get("kind") or ""), "lines": i.get("lines") or 0,
               "size": _fmt_bytes(i.get("bytes"))} for i in run.get("inputs") or []]
    title_bits = [b for b in (dims.get("label"), run.get("tool"), run.get("status")) if b]
    return {
        **_base(now, version),
        "title": "triage: " + " / ".join(str(b) for b in title_bits) if title_bits else "triage run",
        "run": {
            "id": run_id, "created": _show_time(created) if created else "",
            "tool": run.get("tool") or "unknown", "tool_version": run.get("tool_version") or "",
            "phase": run.get("phase") or "", "part": run.get("part") or dims.get("device") or "",
            "status": run.get("status") or "unknown",
            "duration": "" if duration_s is None else f"{float(duration_s):.1f} s",
            "inputs": inputs,
            "dimensions": [{"name": k, "value": str(dims[k])} for k in DIMENSIONS if dims.get(k)]
                          + [{"name": k, "value": str(v)} for k, v in sorted(dims.items()) if k not in DIMENSIONS and v],
        },
        "summary": _summary(findings, unexplained),
        "findings": findings,
        "metrics": _metrics_context(result.get("metrics") or []),
        "unexplained": unexplained,
        "warnings": [str(w) for w in result.get("warnings") or []],
    }


def _findings_from_tables(db: Any, run_id: int) -> list[dict[str, Any]]:
    """Rebuild the nested finding dicts of a stored run from its rows (used when result_json is absent)."""
    causes: dict[str, dict[str, Any]] = {}
    if "causes" in db.table_names():
        ids = [r["cause_id"] for r in db["findings"].rows_where("run_id = ?", [run_id], select="cause_id")]
        for cid in ids:
            for row in db["causes"].rows_where("id = ?", [cid]):
                causes[cid] = row
    evidence: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ev in db["evidence"].rows_where("run_id = ?", [run_id], order_by="rowid"):
        evidence[ev["cause_id"]].append(ev)
    flat: dict[str, dict[str, Any]] = {}
    parents: dict[str, str | None] = {}
    for row in db["findings"].rows_where("run_id = ?", [run_id], order_by="rowid"):
        cause = causes.get(row["cause_id"], {})
        flat[row["cause_id"]] = {
            "id": row["cause_id"], "severity": row.get("severity") or cause.get("severity"),
            "title": row.get("title") or cause.get("title"), "cause": cause.get("cause", ""),
            "workaround": cause.get("workaround", ""), "references": _json_list(cause.get("references")),
            "count": row.get("count"), "tool": cause.get("tool", ""), "versions": cause.get("versions"),
            "evidence": evidence.get(row["cause_id"], []), "explains": [],
        }
        parents[row["cause_id"]] = row.get("parent_cause_id")
    top: list[dict[str, Any]] = []
    for cid, f in flat.items():
        parent = parents.get(cid)
        (flat[parent]["explains"] if parent in flat else top).append(f)
    return top


def build_run_context(store: Any, run_id: int, *, now: datetime | None = None,
                      version: str | None = None) -> dict[str, Any]:
    """Context of the per-run page for a stored run."""
    db = _db(store)
    rows = list(db["runs"].rows_where("id = ?", [run_id])) if "runs" in db.table_names() else []
    if not rows:
        raise StoreError(f"no run with id {run_id}", hint="`triage runs list` shows the stored runs")
    row = rows[0]
    result: dict[str, Any] = {}
    stored = row.get("result_json")  # databases from before the `documents` table
    if "documents" in db.table_names():
        for doc in db["documents"].rows_where("run_id = ?", [run_id], select="document"):
            stored = doc["document"]
    if stored:
        try:
            result = json.loads(stored)
        except ValueError:
            result = {}
        if not isinstance(result, dict):
            result = {}
    if not result:
        result = {
            "run": {k: row.get(k) for k in ("tool", "tool_version", "phase", "part", "status")},
            "findings": _findings_from_tables(db, run_id),
            "unexplained": list(db["unexplained"].rows_where("run_id = ?", [run_id], order_by="rowid")),
        }
        result["run"]["inputs"] = list(db["inputs"].rows_where("run_id = ?", [run_id], order_by="rowid",
                                                               select="path, kind, lines, bytes"))
    if not result.get("metrics") and "metrics" in db.table_names():
        result["metrics"] = list(db["metrics"].rows_where("run_id = ?", [run_id], order_by="rowid"))
    dims = {k: row.get(k) for k in DIMENSIONS if row.get(k)}
    if not dims.get("device") and row.get("part"):
        dims["device"] = row["part"]
    return build_result_context(result, dimensions=dims, run_id=run_id, created=row.get("created"),
                                duration_s=row.get("duration_s"), now=now, version=version)


def render_run(context: Mapping[str, Any]) -> str:
    return environment().get_template("run.html").render(**context)


def write_result_report(result: Any, out: str | Path, *, dimensions: Mapping[str, Any] | None = None,
                        now: datetime | None = None) -> Path:
    """`triage scan ... --html FILE`: render a ScanResult (or its JSON dict) without a database."""
    if not isinstance(result, Mapping):
        from .formats import result_dict

        result = result_dict(result)
    return _write(Path(out), render_run(build_result_context(result, dimensions=dimensions, now=now)))


def write_run_report(store: Any, run_id: int, out: str | Path, *, now: datetime | None = None) -> Path:
    return _write(Path(out), render_run(build_run_context(store, run_id, now=now)))


def _write(path: Path, text: str) -> Path:
    """Whole or not at all (a temporary file renamed over the target); the report's folder is created."""
    from .files import write_text

    return write_text(path, text, make_parents=True)


# ---------------------------------------------------------------------------------------------------------
# Nightly report


def _runs_between(db: Any, start: datetime, end: datetime) -> list[dict[str, Any]]:
    return list(db.query(
        "select id, created, tool, tool_version, status, label, model, branch, [commit], part, device from runs"
        " where created >= ? and created < ? order by created, id", [_iso(start), _iso(end)]))


def _findings_of(db: Any, run_ids: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(0, len(run_ids), 500):  # stay under SQLite's bound-parameter limit
        chunk = run_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        out.extend(db.query(
            f"select rowid as _order, run_id, cause_id, severity, title, count, parent_cause_id, generic from findings"
            f" where run_id in ({marks}) order by run_id, rowid", chunk))
    return out


def _sparkline(values: list[int | None], scale: int | None = None, width: float = 120.0,
               height: float = 24.0) -> dict[str, Any]:
    """An SVG trend: every sparkline of a page on one scale (`scale`, written beside it), and a gap where
    no run existed at all (None), so a period without runs never reads as zero."""
    counts = [v for v in values if v is not None]
    top = scale or max(counts + [1])
    top = max(top, 1)
    step = width / max(len(values) - 1, 1)
    segments: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    points_all: list[tuple[float, float]] = []
    for i, v in enumerate(values):
        if v is None:
            if current:
                segments.append(current)
            current = []
            continue
        point = (round(i * step, 1), round(height - 2 - (v / top) * (height - 4), 1))
        current.append(point)
        points_all.append(point)
    if current:
        segments.append(current)
    last = points_all[-1] if points_all else (0.0, height - 2)
    return {
        "series": values, "max": max(counts) if counts else 0, "scale": top, "width": width, "height": height,
        "segments": [" ".join(f"{x},{y}" for x, y in seg) for seg in segments],
        "dots": [{"x": x, "y": y} for seg in segments if len(seg) == 1 for x, y in seg],
        "points": " ".join(f"{x},{y}" for x, y in points_all),
        "last": {"x": last[0], "y": last[1]},
        "text": " ".join("–" if v is None else str(v) for v in values),
    }


def _qor_changes(db: Any, label_runs: dict[str, list[int]]) -> list[dict[str, Any]]:
    """Quality-of-results changes between the latest two runs of each label that carry metrics."""
    if "metrics" not in db.table_names():
        return []
    out: list[dict[str, Any]] = []
    for label, run_ids in sorted(label_runs.items()):
        with_metrics = [rid for rid in run_ids if db["metrics"].count_where("run_id = ?", [rid])]
        if len(with_metrics) < 2:
            continue
        prev_id, last_id = with_metrics[-2], with_metrics[-1]

        def load(rid: int) -> dict[tuple[str, str, str], dict[str, Any]]:
            rows = db["metrics"].rows_where("run_id = ?", [rid], order_by="rowid")
            return {(str(m.get("kind") or ""), str(m.get("resource") or ""), str(m.get("scope") or "")): _metric(m)
                    for m in rows}

        before, after = load(prev_id), load(last_id)
        changes: list[dict[str, Any]] = []
        for key in [k for k in after if k in before]:
            old, new = before[key], after[key]
            change = _qor_change(old, new)
            if change:
                changes.append({"resource": new["resource"], "scope": new["scope"], **change})
        if changes:
            changes.sort(key=lambda c: (not c["worse"], c["resource"]))
            # a retargeted job: its percentages are of another device, so the page says so beside them
            parts = {int(r["id"]): str(r.get("part") or "") for r in db.query(
                "select id, part from runs where id in (?, ?)", [prev_id, last_id])}
            moved = parts.get(prev_id) and parts.get(last_id) and parts[prev_id] != parts[last_id]
            out.append({"label": label, "previous_run": prev_id, "latest_run": last_id, "changes": changes,
                        "part_change": (parts[prev_id], parts[last_id]) if moved else None})
    return out


def _qor_change(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    if old["percent"] is not None and new["percent"] is not None:
        a, b = old["percent"], new["percent"]
        crossed = (a <= 100.0) != (b <= 100.0)
        if abs(b - a) < QOR_MIN_DELTA and not crossed:
            return None
        note = "now over 100 %" if b > 100.0 >= a else ("back under 100 %" if a > 100.0 >= b else "")
        absolute = ""
        if new["used"] is not None and new["available"]:
            was = f"{_fmt_number(old['used'])} of {_fmt_number(old['available'])} → " \
                if old["used"] is not None and old["available"] else ""
            absolute = f"({was}{_fmt_number(new['used'])} of {_fmt_number(new['available'])} used)"
        return {"before": f"{a:.0f} %", "after": f"{b:.0f} %", "worse": b > a, "note": note, "absolute": absolute}
    a, b = old["used"], new["used"]
    if a is None or b is None or a == b:
        return None
    timing = new["resource"].lower() in TIMING_RESOURCES or new["kind"].lower() == "timing"
    if timing:
        if (a < 0) == (b < 0) and abs(b - a) < 0.05:
            return None
        note = "turned negative" if a >= 0 > b else ("met again" if a < 0 <= b else "")
        unit = f" {new['unit']}" if new["unit"] else ""
        return {"before": _fmt_number(a) + unit, "after": _fmt_number(b) + unit, "worse": b < a, "note": note,
                "absolute": ""}
    if a and abs(b - a) / abs(a) * 100.0 < QOR_MIN_DELTA:
        return None
    unit = f" {new['unit']}" if new["unit"] else ""
    higher_better = new["resource"].lower() in HIGHER_IS_BETTER
    return {"before": _fmt_number(a) + unit, "after": _fmt_number(b) + unit, "worse": (b < a) if higher_better else (b > a),
            "note": "", "absolute": ""}


def build_nightly_context(store: Any, since: datetime, until: datetime, periods: int = 10,
                          now: datetime | None = None, packs: Any = None,
                          version: str | None = None) -> dict[str, Any]:
    """Everything the nightly page shows for runs created in [since, until).

    What changed first: labels that REGRESSED (their last run of the previous period passed, their last run
    of this one failed) or were FIXED (the reverse), causes NEW in this period. Then the grid of labels x the
    last `periods` periods, each cell the label's last run of that period. NEW: a cause whose first stored
    finding lies in this period. RECURRING: seen in this period and before. RESOLVED: a (cause, label) seen
    in the previous period of equal length, not in this one, while the label did run in this one.
    Classification rate: failed runs with at least one specific error- or warning-severity cause (a generic
    catch-all says which step failed, not why), over all failed runs.

    Every step is one pass over the runs and findings of the window (no per-run queries, no quadratic
    membership tests), so the page costs the same per run at 1,000 or 50,000 stored runs.
    """
    db = _db(store)
    since, until = _now(since), _now(until)
    if until <= since:
        raise TriageError("the report period is empty", hint="--since must lie before the end of the period")
    length = until - since
    periods = max(1, periods)
    floor = datetime(1970, 1, 1, tzinfo=UTC)
    try:
        window_start = max(floor, since - length * (periods - 1))
        prev_start = max(floor, since - length)
    except OverflowError:  # an absurd --since: the trend simply starts at the epoch
        window_start = prev_start = floor

    all_runs = _runs_between(db, min(window_start, prev_start), until) if "runs" in db.table_names() else []
    findings = _findings_of(db, [r["id"] for r in all_runs])
    run_by_id = {r["id"]: r for r in all_runs}
    start_of = {r["id"]: _parse_time(r["created"]) or since for r in all_runs}

    def period_of(run_id: int) -> int:
        """0 = this period, 1 = the one before, ... (negative never: runs end before `until`)."""
        return int((until - start_of[run_id]) / length - 1e-9) if start_of[run_id] < until else 0

    current = [r for r in all_runs if start_of[r["id"]] >= since]
    current_ids = {r["id"] for r in current}
    by_run: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for f in findings:
        by_run[f["run_id"]].append(f)
    tops = {rid: _top_finding(fs) for rid, fs in by_run.items()}
    pages: set[int] = set()  # every run the page names gets its own page (and no other: a page over a long
    # history names a bounded number of runs, so it never writes one page per stored run)

    # Runs table ------------------------------------------------------------------------------------------
    ordered = sorted(current, key=lambda r: (r.get("created") or "", r["id"]), reverse=True)  # newest first ...
    ordered.sort(key=lambda r: STATUS_ORDER.get(r.get("status") or "unknown", 1))  # ... within failed, unknown, passed
    # A nightly of thousands of compiles lists the runs that need a look first, then stops: the page stays
    # small (and only the rows it shows are built); `triage runs list` has them all.
    shown, runs_hidden = ordered[:MAX_RUN_ROWS], ordered[MAX_RUN_ROWS:]
    unexplained_n = _unexplained_counts(db, sorted(r["id"] for r in shown))
    runs_ctx = [_run_row(r, tops.get(r["id"]), len(by_run.get(r["id"], [])), unexplained_n.get(r["id"], 0))
                for r in shown]
    pages.update(r["id"] for r in runs_ctx)

    # Totals and classification rate ----------------------------------------------------------------------
    failed = [r for r in current if r.get("status") == "failed"]
    # a generic catch-all says which step failed, not why: it does not make a failure "classified"
    classified = [r for r in failed if any(f.get("severity") in CLASSIFYING_SEVERITIES and not f.get("generic")
                                           for f in by_run.get(r["id"], []))]
    classified_ids = {r["id"] for r in classified}
    generic_only = [r for r in failed if r["id"] not in classified_ids
                    and any(f.get("severity") in CLASSIFYING_SEVERITIES for f in by_run.get(r["id"], []))]
    rate = len(classified) / len(failed) if failed else None

    # The grid: labels x periods, each cell the label's last run of the period -------------------------------
    in_window = [r for r in all_runs if start_of[r["id"]] >= window_start]
    ran_in = [False] * periods  # a period with no run at all is a gap, not a zero
    last_of: dict[str, list[dict[str, Any] | None]] = {}
    for r in in_window:  # ordered by creation: the last one of a period wins
        column = periods - 1 - period_of(r["id"])
        ran_in[column] = True
        label = r.get("label") or ""
        last_of.setdefault(label, [None] * periods)[column] = r
    previous = {label: _last_before(cells) for label, cells in last_of.items()}
    grid = []
    for label, cells in sorted(last_of.items(), key=lambda kv: kv[0]):
        if cells[-1] is None and all(c is None for c in cells[-3:]):
            continue  # a job that no longer runs: three empty periods and it leaves the grid
        row_cells = []
        for column, r in enumerate(cells):
            if r is None:
                row_cells.append({"status": "none", "run": None, "title": "no run"})
                continue
            pages.add(r["id"])
            top = tops.get(r["id"])
            row_cells.append({"status": r.get("status") or "unknown", "run": r["id"],
                              "title": f"run {r['id']}: " + (top["cause_id"] if top else (r.get("status") or "unknown")),
                              "href": _run_href(r["id"])})
        grid.append({"label": label or "(no label)", "word": _status_word([c["status"] for c in row_cells]),
                     "cells": row_cells})
    grid.sort(key=lambda g: (GRID_ORDER.get(g["word"], 9), g["label"]))
    column_titles = [_column_title(until - length * (periods - i), until - length * (periods - 1 - i), length)
                     for i in range(periods)]
    for i, column in enumerate(column_titles):
        column["old"] = i < periods - PHONE_COLUMNS  # a phone shows the latest few periods only
    for row in grid:
        for i, cell in enumerate(row["cells"]):
            cell["old"] = column_titles[i]["old"]

    # Regressed and fixed labels: the last run of the previous period against the last of this one ---------
    regressed, fixed = [], []
    for label, cells in last_of.items():
        now_run, before_run = cells[-1], previous[label]
        if now_run is None or before_run is None or not label:
            continue
        pair = (before_run.get("status"), now_run.get("status"))
        if pair not in (("passed", "failed"), ("failed", "passed")):
            continue
        pages.update((now_run["id"], before_run["id"]))
        top = tops.get(now_run["id"] if pair[1] == "failed" else before_run["id"])
        item = {"label": label, "run": now_run["id"], "href": _run_href(now_run["id"]), "before_run": before_run["id"],
                "before_href": _run_href(before_run["id"]), "before_created": _show_time(before_run["created"]),
                "created": _show_time(now_run["created"]),
                "cause": {"id": top["cause_id"], "title": top.get("title") or top["cause_id"], "anchor": ""} if top else None,
                "dims": _dims_text(now_run)}
        (regressed if pair[1] == "failed" else fixed).append(item)
    regressed.sort(key=lambda x: x["label"])
    fixed.sort(key=lambda x: x["label"])

    # Causes: counts, runs affected, state, trend on one scale --------------------------------------------
    first_seen = _first_seen(db, {f["cause_id"] for f in findings if f["run_id"] in current_ids})
    since_iso = _iso(since)
    per_cause: dict[str, dict[str, Any]] = {}
    trend_runs: dict[str, list[set[int]]] = defaultdict(lambda: [set() for _ in range(periods)])
    for f in findings:
        rid = f["run_id"]
        if start_of[rid] >= window_start:
            trend_runs[f["cause_id"]][periods - 1 - period_of(rid)].add(rid)
        if rid not in current_ids:
            continue
        entry = per_cause.get(f["cause_id"])
        if entry is None:  # built once per cause, not once per finding
            entry = per_cause[f["cause_id"]] = {
                "id": f["cause_id"], "anchor": "c-" + _slug(f["cause_id"]), "title": f.get("title") or f["cause_id"],
                "severity": f.get("severity") or "info", "generic": bool(f.get("generic")), "count": 0,
                "runs": set(), "labels": set(), "explained": 0,
            }
        entry["count"] += int(f.get("count") or 0)
        entry["runs"].add(rid)
        if f.get("parent_cause_id"):
            entry["explained"] += 1
        label = run_by_id[rid].get("label")
        if label:
            entry["labels"].add(label)
    knowledge = _cause_texts(db, packs, list(per_cause))
    scale = max([1] + [len(s) for sets in trend_runs.values() for s in sets])
    causes_ctx = []
    for cid, e in per_cause.items():
        first = first_seen.get(cid)
        e["state"] = "recurring" if first and first < since_iso else "new"
        e["first_seen"] = _show_time(first)
        run_ids = sorted(e["runs"], key=lambda rid: (STATUS_ORDER.get(run_by_id[rid].get("status") or "", 1), -rid))
        e["runs"] = len(run_ids)
        e["run_links"] = [{"id": rid, "href": _run_href(rid), "status": run_by_id[rid].get("status") or "unknown"}
                          for rid in run_ids[:RUN_LINKS]]
        e["more_runs"] = max(0, len(run_ids) - RUN_LINKS)
        pages.update(run_ids[:RUN_LINKS])
        e["labels"] = sorted(e["labels"])
        e["workaround"] = first_sentence(knowledge.get(cid, {}).get("workaround") or "")
        e["generic"] = e["generic"] or bool(knowledge.get(cid, {}).get("generic"))
        e["trend"] = _sparkline([len(s) if ran_in[i] else None for i, s in enumerate(trend_runs[cid])], scale)
        causes_ctx.append(e)
    causes_ctx.sort(key=lambda c: (_sev_rank(c["severity"]), c["generic"], -c["runs"], c["id"]))

    # Resolved: (cause, label) in the previous period, not in this one, for labels that ran in this one ----
    labels_now = {r.get("label") for r in current if r.get("label")}
    pairs_now = {(f["cause_id"], run_by_id[f["run_id"]].get("label")) for f in findings if f["run_id"] in current_ids}
    resolved: dict[tuple[str, str], dict[str, Any]] = {}
    for f in findings:
        r = run_by_id[f["run_id"]]
        label = r.get("label")
        if not label or not (prev_start <= start_of[r["id"]] < since) or label not in labels_now:
            continue
        if (f["cause_id"], label) in pairs_now:
            continue
        item = resolved.get((f["cause_id"], label))
        if item is None:
            item = resolved[(f["cause_id"], label)] = {
                "id": f["cause_id"], "anchor": "c-" + _slug(f["cause_id"]), "title": f.get("title") or f["cause_id"],
                "severity": f.get("severity") or "info", "label": label, "last_seen": "", "run": r["id"],
            }
        if _show_time(r["created"]) >= item["last_seen"]:
            item["last_seen"], item["run"] = _show_time(r["created"]), r["id"]
    resolved_ctx = sorted(resolved.values(), key=lambda x: (x["id"], x["label"]))
    for item in resolved_ctx:
        item["href"] = _run_href(item["run"])
        pages.add(item["run"])

    # Unexplained lines from failed runs, grouped by fingerprint -------------------------------------------
    unexplained_ctx = _unexplained_groups(db, {r["id"] for r in failed}, run_by_id, since)
    by_message = packs.by_message if packs is not None and any(g["message_id"] for g in unexplained_ctx) else {}
    for g in unexplained_ctx:
        g["run_links"] = [{"id": rid, "href": _run_href(rid)} for rid in g.pop("run_ids")[:RUN_LINKS]]
        # causes of the same message that know other wordings of it (see `PackSet.by_message`)
        g["known"] = [c.id for c in by_message.get(g["message_id"].split()[-1], [])[:3]] if g["message_id"] else []
        pages.update(link["id"] for link in g["run_links"])

    # Quality of results per label ------------------------------------------------------------------------
    label_runs: dict[str, list[int]] = {}
    for label in sorted(labels_now):
        ids = [row["id"] for row in db.query(
            "select id from runs where label = ? and created < ? order by created desc, id desc limit 20",
            [label, _iso(until)])]
        label_runs[label] = list(reversed(ids))
    qor = _qor_changes(db, label_runs)
    for q in qor:
        q["previous_href"], q["latest_href"] = _run_href(q["previous_run"]), _run_href(q["latest_run"])
        pages.update((q["previous_run"], q["latest_run"]))

    # Rule hygiene ----------------------------------------------------------------------------------------
    passed_ids = {r["id"] for r in current if r.get("status") == "passed"}
    on_passed: dict[str, dict[str, Any]] = {}
    for f in findings:
        if f["run_id"] in passed_ids:
            item = on_passed.get(f["cause_id"])
            if item is None:
                item = on_passed[f["cause_id"]] = {"id": f["cause_id"], "title": f.get("title") or f["cause_id"],
                                                   "severity": f.get("severity") or "info", "runs": set()}
            item["runs"].add(f["run_id"])
    fired_on_passed = sorted(({**v, "runs": len(v["runs"])} for v in on_passed.values()),
                             key=lambda x: (_sev_rank(x["severity"]), -x["runs"], x["id"]))
    never_seen: list[dict[str, Any]] | None = None
    if packs is not None:
        ever = {row["cause_id"] for row in db.query("select distinct cause_id from findings")} \
            if "findings" in db.table_names() else set()
        never_seen = [{"id": c.id, "title": c.title, "severity": c.severity, "tool": c.tool}
                      for c in sorted(packs.causes.values(), key=lambda c: c.id) if c.id not in ever]

    for item in regressed + fixed:
        if item["cause"] is not None and item["cause"]["id"] in per_cause:
            item["cause"]["anchor"] = per_cause[item["cause"]["id"]]["anchor"]
    unclassified = [r["id"] for r in failed if r["id"] not in classified_ids]
    unclassified_links = [{"id": rid, "href": _run_href(rid)} for rid in unclassified[::-1][:UNCLASSIFIED_LINKS]]
    pages.update(link["id"] for link in unclassified_links)
    failed_trend = [0] * periods
    for r in in_window:
        if r.get("status") == "failed":
            failed_trend[periods - 1 - period_of(r["id"])] += 1
    period_label = since.strftime("%Y-%m-%d %H:%M") + " – " + until.strftime("%Y-%m-%d %H:%M UTC")
    new_causes = [c for c in causes_ctx if c["state"] == "new"]
    return {
        **_base(now, version),
        "title": f"triage nightly {period_title(since, until)}",
        "period": {"since": _iso(since) + "Z", "until": _iso(until) + "Z", "text": period_label,
                   "length": _fmt_length(length), "periods": periods,
                   "trend_from": _show_time(_iso(window_start))},
        "totals": {
            "runs": len(current), "failed": len(failed),
            "passed": sum(1 for r in current if r.get("status") == "passed"),
            "unknown": sum(1 for r in current if r.get("status") not in ("failed", "passed")),
            "classified": len(classified), "unclassified": len(failed) - len(classified),
            "generic_only": len(generic_only),
            "classification_rate": rate, "classification_text": "n/a" if rate is None else f"{rate * 100:.0f} %",
            "unclassified_runs": unclassified_links,
            "regressed": len(regressed), "fixed": len(fixed),
            "new_causes": sum(1 for c in new_causes if c["severity"] != "info"),
            "new_notes": sum(1 for c in new_causes if c["severity"] == "info"),
            "failed_trend": ",".join(str(n if ran_in[i] else "") for i, n in enumerate(failed_trend)),
        },
        "regressed": regressed,
        "fixed": fixed,
        "grid": {"columns": column_titles, "rows": grid, "ran": ran_in},
        "runs": runs_ctx,
        "runs_hidden": {"count": len(runs_hidden),
                        "by_status": dict(sorted(Counter(r.get("status") or "unknown" for r in runs_hidden).items())),
                        "since": _iso(since)[:10]},
        "causes": [c for c in causes_ctx if c["severity"] != "info"],
        "notes": [c for c in causes_ctx if c["severity"] == "info"],
        "trend_scale": {"max": scale, "periods": periods, "length": _fmt_length(length)},
        "new": new_causes,
        "recurring": [c for c in causes_ctx if c["state"] == "recurring"],
        "resolved": resolved_ctx,
        "unexplained": unexplained_ctx,
        "qor": qor,
        "hygiene": {"packs_loaded": packs is not None, "fired_on_passed": fired_on_passed,
                    "never_seen": never_seen or [], "pack_causes": len(packs.causes) if packs is not None else 0},
        "run_pages": sorted(pages),
    }


PHONE_COLUMNS = 5  # periods of the jobs grid shown on a narrow screen (the latest ones)
RUN_LINKS = 8  # runs linked from a cause or an unexplained group (the rest are counted)
UNCLASSIFIED_LINKS = 50  # failed runs without a specific cause linked by id, newest first (the rest are counted)
GRID_ORDER = {"FAILING": 0, "FLAKY": 1, "UNKNOWN": 2, "PASSING": 3}


def _run_href(run_id: int) -> str:
    return f"runs/{run_id}.html"


def _top_finding(fs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The finding a run is known by: its most severe top-level one, specific before generic, first found."""
    tops = [f for f in fs if not f.get("parent_cause_id")]
    return min(tops, key=lambda f: (_sev_rank(f["severity"]), bool(f.get("generic")), f["_order"])) if tops else None


def _run_row(r: dict[str, Any], top: dict[str, Any] | None, findings: int, unexplained: int) -> dict[str, Any]:
    return {
        "id": r["id"], "href": _run_href(r["id"]), "created": _show_time(r["created"]),
        "status": r.get("status") or "unknown", "tool": r.get("tool") or "", "tool_version": r.get("tool_version") or "",
        "label": r.get("label") or "", "model": r.get("model") or "", "device": r.get("device") or r.get("part") or "",
        "branch": r.get("branch") or "", "commit": (r.get("commit") or "")[:12],
        "top_cause": {"id": top["cause_id"], "title": top.get("title") or top["cause_id"],
                      "severity": top.get("severity") or "info", "generic": bool(top.get("generic"))} if top else None,
        "findings": findings, "unexplained": unexplained,
    }


def _dims_text(r: dict[str, Any]) -> str:
    bits = [r.get("model"), r.get("device") or r.get("part"), r.get("branch"), (r.get("commit") or "")[:12]]
    return " · ".join(str(b) for b in bits if b)


def _last_before(cells: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The label's last run before the current period (the last non-empty cell but the current one)."""
    for cell in reversed(cells[:-1]):
        if cell is not None:
            return cell
    return None


def _status_word(statuses: list[str]) -> str:
    """PASSING / FAILING / FLAKY from the last five periods the label ran in (as TestGrid does): FLAKY when
    the result changed more than once there; else the latest result."""
    seen = [s for s in statuses if s in ("passed", "failed")][-5:]
    if not seen:
        return "UNKNOWN"
    changes = sum(1 for a, b in zip(seen, seen[1:]) if a != b)
    if changes > 1:
        return "FLAKY"
    return "FAILING" if seen[-1] == "failed" else "PASSING"


def _column_title(start: datetime, end: datetime, length: timedelta) -> dict[str, str]:
    if length == timedelta(days=1):
        short = _last_day(end).strftime("%m-%d")
    elif length < timedelta(days=1):
        short = end.astimezone(UTC).strftime("%H:%M")
    else:
        short = _last_day(end).strftime("%m-%d")
    return {"short": short, "title": f"{start.astimezone(UTC):%Y-%m-%d %H:%M} – {end.astimezone(UTC):%Y-%m-%d %H:%M} UTC"}


def _unexplained_counts(db: Any, ids: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    if not ids or "unexplained" not in db.table_names():
        return out
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for row in db.query(f"select run_id, count(*) as n from unexplained where run_id in ({marks}) group by run_id",
                            chunk):
            out[row["run_id"]] = row["n"]
    return out


def _first_seen(db: Any, cause_ids: set[str]) -> dict[str, str]:
    """When each cause was first found in any stored run (one grouped query over the causes of the period)."""
    out: dict[str, str] = {}
    ids = sorted(cause_ids)
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for row in db.query("select findings.cause_id as cause_id, min(runs.created) as first from findings"
                            f" join runs on runs.id = findings.run_id where findings.cause_id in ({marks})"
                            " group by findings.cause_id", chunk):
            out[row["cause_id"]] = row["first"]
    return out


def _cause_texts(db: Any, packs: Any, cause_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Workaround and generic flag of each cause: from the packs given, else from the run database's own
    copy of the knowledge base (written by every scan)."""
    out: dict[str, dict[str, Any]] = {}
    if packs is not None:
        for cid in cause_ids:
            cause = packs.causes.get(cid)
            if cause is not None:
                out[cid] = {"workaround": cause.workaround, "generic": getattr(cause, "generic", False)}
    missing = [cid for cid in cause_ids if cid not in out]
    if missing and "causes" in db.table_names():
        columns = {c.name for c in db["causes"].columns}
        select = "id, workaround" + (", generic" if "generic" in columns else "")
        for i in range(0, len(missing), 500):
            chunk = missing[i:i + 500]
            for row in db["causes"].rows_where(f"id in ({','.join('?' * len(chunk))})", chunk, select=select):
                out[row["id"]] = {"workaround": row.get("workaround") or "", "generic": bool(row.get("generic"))}
    return out


# a full stop, then a capital (or code): the end of a sentence, unless the stop ends "e.g.", "i.e.", "etc.", "vs."
# or a single letter
SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\b\w\.)(?<=[.!?])\s+(?=[A-Z`(\"'])")


def first_sentence(text: str, limit: int = 240) -> str:
    """The first sentence of a workaround (where a full stop is followed by a capital), cut at `limit`."""
    text = " ".join(text.split())
    head = SENTENCE_END.split(text, maxsplit=1)[0] if text else ""
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def _unexplained_groups(db: Any, failed_ids: set[int], run_by_id: dict[int, dict[str, Any]],
                        since: datetime) -> list[dict[str, Any]]:
    if not failed_ids or "unexplained" not in db.table_names():
        return []
    from .draft import draftable

    groups: dict[str, dict[str, Any]] = {}
    ids = sorted(failed_ids)
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for u in db.query(f"select * from unexplained where run_id in ({marks}) order by run_id, rowid", chunk):
            g = groups.setdefault(u["fingerprint"], {
                "fingerprint": u["fingerprint"], "normalised": u.get("normalised") or "", "text": u.get("text") or "",
                "path": u.get("path") or "", "line": u.get("line"), "count": 0, "runs": set(), "labels": set(),
                "advice": "", "message_id": "",
                "draftable": draftable(u.get("text") or ""),
            })
            if not g["advice"] and u.get("advice"):  # the tool's own advice, from the first run that printed one
                g["advice"], g["message_id"] = str(u["advice"]), str(u.get("message_id") or "")
            elif not g["message_id"] and u.get("message_id"):
                g["message_id"] = str(u["message_id"])
            g["count"] += int(u.get("count") or 1)
            g["runs"].add(u["run_id"])
            label = run_by_id.get(u["run_id"], {}).get("label")
            if label:
                g["labels"].add(label)
    if not groups:
        return []
    seen: dict[str, tuple[str, str]] = {}
    fps = list(groups)
    for i in range(0, len(fps), 500):
        chunk = fps[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for row in db.query(
                "select unexplained.fingerprint as fp, min(runs.created) as first, max(runs.created) as last"
                f" from unexplained join runs on runs.id = unexplained.run_id where unexplained.fingerprint in ({marks})"
                " group by unexplained.fingerprint", chunk):
            seen[row["fp"]] = (row["first"], row["last"])
    out = []
    for fp, g in groups.items():
        first, last = seen.get(fp, ("", ""))
        out.append({**g, "runs": len(g["runs"]), "run_ids": sorted(g["runs"], reverse=True), "labels": sorted(g["labels"]),
                    "first_seen": _show_time(first), "last_seen": _show_time(last),
                    "new": bool(first) and first >= _iso(since)})
    out.sort(key=lambda g: (-g["runs"], -g["count"], g["fingerprint"]))
    return out


def _fmt_length(length: timedelta) -> str:
    hours = length.total_seconds() / 3600
    if hours % 24 == 0:
        days = int(hours // 24)
        return f"{days} day" + ("s" if days != 1 else "")
    return f"{hours:g} h"


def span_text(length: timedelta) -> str:
    """The length of a period in page names: `7d`, `6h`, `90m` (whole minutes at least)."""
    minutes = max(1, round(length.total_seconds() / 60))
    if minutes % (24 * 60) == 0:
        return f"{minutes // (24 * 60)}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


def _last_day(until: datetime) -> date:
    """The UTC date of a period's last moment (a period ending at midnight belongs to the day before)."""
    return (until.astimezone(UTC) - timedelta(microseconds=1)).date()


def page_name(since: datetime, until: datetime) -> str:
    """The file name of the nightly page of [since, until): see NIGHTLY_RE."""
    span = span_text(until - since)
    day = _last_day(until).isoformat()
    return f"nightly-{day}.html" if span == "1d" else f"nightly-{day}-{span}.html"


def period_title(since: datetime, until: datetime) -> str:
    """`2025-03-10` for a day; `2025-03-03 – 2025-03-10 (7 days)`; `2025-03-10 12:30 – 14:00 UTC (90 min)`."""
    length = until - since
    span = span_text(length)
    if span == "1d":
        return _last_day(until).isoformat()
    if length >= timedelta(days=1):
        return f"{since.astimezone(UTC):%Y-%m-%d} – {_last_day(until):%Y-%m-%d} ({_fmt_length(length)})"
    start = since.astimezone(UTC)
    end = until.astimezone(UTC)
    right = f"{end:%H:%M}" if start.date() == end.date() else f"{end:%Y-%m-%d %H:%M}"
    minutes = round(length.total_seconds() / 60)
    return f"{start:%Y-%m-%d %H:%M} – {right} UTC ({_fmt_length(length) if minutes % 60 == 0 else f'{minutes} min'})"


def render_nightly(context: Mapping[str, Any]) -> str:
    return environment().get_template("nightly.html").render(**context)


def render_index(context: Mapping[str, Any]) -> str:
    return environment().get_template("index.html").render(**context)


def nightly_period(*, day: date | str | None = None, since: str | timedelta | None = None,
                   now: datetime | None = None) -> tuple[datetime, datetime]:
    """[start, end) of a nightly report: a whole UTC day (`--date`) or the last span (`--since 24h`)."""
    moment = _now(now)
    if day is not None and since is not None:
        raise TriageError("give either --date or --since, not both")
    if day is not None:
        if isinstance(day, str):
            try:
                day = date.fromisoformat(day)
            except ValueError:
                raise TriageError(f"bad date {day!r}", hint="write it as YYYY-MM-DD") from None
        start = datetime.combine(day, time(0), tzinfo=UTC)
        return start, start + timedelta(days=1)
    span = parse_span(since) if isinstance(since, str) else (since or timedelta(hours=24))
    return moment - span, moment


def parse_span(text: str) -> timedelta:
    """`24h`, `7d`, `90m`, `2w` -> timedelta."""
    m = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,6})?)\s*([mhdw])\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise TriageError(f"bad duration {str(text)[:40]!r}", hint="write e.g. 24h, 7d, 90m or 2w")
    unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[m.group(2)]
    span = timedelta(**{unit: min(float(m.group(1)), MAX_SPAN / timedelta(**{unit: 1}))})
    if span >= MAX_SPAN:
        raise TriageError(f"duration {text.strip()!r} is longer than {MAX_SPAN.days // 365} years",
                          hint="a report period lies after 1970; write e.g. 3650d")
    return span


def write_nightly(store: Any, out_dir: str | Path, *, day: date | str | None = None,
                  since: str | timedelta | datetime | None = None, until: datetime | None = None,
                  packs: Any = None, periods: int = 10, now: datetime | None = None) -> Path:
    """Write the period's page (`page_name`: a day, or a day and a length), a report page for every run it
    names (`runs/<id>.html`), and rebuild index.html."""
    moment = _now(now)
    if isinstance(since, datetime):
        start, end = _now(since), _now(until or moment)
    else:
        start, end = nightly_period(day=day, since=since, now=until or moment)
    context = build_nightly_context(store, start, end, periods=periods, now=moment, packs=packs)
    out = Path(out_dir)
    write_run_pages(store, out / "runs", context["run_pages"], now=moment)
    path = _write(out / page_name(start, end), render_nightly(context))
    write_index(out, now=moment)
    return path


RUN_KEY_RE = re.compile(r'<meta name="triage-run-key" content="(?P<key>[0-9a-f]+)">')


def write_run_pages(store: Any, folder: Path, run_ids: Iterable[int], *, now: datetime | None = None) -> list[Path]:
    """The per-run report of each run, as `folder/<id>.html`. A page whose run has not changed since it was
    written (same stored document and row, same triage version) is left as it is, so a nightly over a long
    history renders only the runs that are new or were re-triaged."""
    db = _db(store)
    written = []
    for rid in run_ids:
        key = _run_key(db, rid)
        path = folder / f"{rid}.html"
        if key is not None and _existing_key(path) == key:
            continue
        context = build_run_context(store, rid, now=now)
        context["run_key"] = key or ""
        context["nightly_href"] = "../index.html"
        written.append(_write(path, render_run(context)))
    return written


def _run_key(db: Any, run_id: int) -> str | None:
    import hashlib  # noqa: PLC0415

    rows = list(db["runs"].rows_where("id = ?", [run_id], select="created, status, packs_digest, label, model, "
                                                                    "branch, [commit], device"))
    if not rows:
        return None
    digest = hashlib.sha256(json.dumps(rows[0], sort_keys=True, default=str).encode())
    digest.update(__version__.encode())
    if "documents" in db.table_names():
        for row in db["documents"].rows_where("run_id = ?", [run_id], select="document"):
            digest.update((row["document"] or "").encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def _existing_key(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            m = RUN_KEY_RE.search(fh.read(4096))
    except OSError:
        return None
    return m["key"] if m else None


def write_index(out_dir: str | Path, *, now: datetime | None = None) -> Path:
    """`index.html`: every nightly page in the folder, newest period first, each with its period, its run,
    failure, regression and new-cause counts and a small trend of failures, every row on one scale (read
    from the page's own `triage-*` meta tags, so a page copied in is listed too)."""
    out = Path(out_dir)
    pages = []
    for p in (out.iterdir() if out.is_dir() else []):
        m = NIGHTLY_RE.match(p.name)
        if not m:
            continue
        meta = _page_meta(p)
        trend = [None if v == "" else int(v) for v in meta.get("trend", "").split(",") if v == "" or v.isdigit()] \
            if meta.get("trend") else []
        pages.append({"href": p.name, "date": m["date"], "span": m["span"] or "1d",
                      "title": meta.get("title") or m["date"], "period": meta.get("period", ""),
                      "runs": _int_or_none(meta.get("runs")), "failed": _int_or_none(meta.get("failed")),
                      "regressed": _int_or_none(meta.get("regressed")), "new": _int_or_none(meta.get("new")),
                      "trend": trend, "until": meta.get("until", "")})
    pages.sort(key=lambda e: (e["date"], e["until"], e["href"]), reverse=True)
    # one scale for the whole column, so a row with 1 failure never draws as high as a row with 10
    scale = max([1] + [v for e in pages for v in e["trend"] if v is not None])
    for e in pages:
        e["trend"] = _sparkline(e["trend"], scale, width=80.0, height=18.0) if e["trend"] else None
    context = {**_base(now, None), "title": "triage nightly reports", "reports": pages, "trend_scale": scale}
    return _write(out / "index.html", render_index(context))


def _page_meta(path: Path) -> dict[str, str]:
    """The `triage-*` meta tags of a page's head (its first 16 KiB)."""
    import html

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(16 << 10)
    except OSError:
        return {}
    return {m["key"]: html.unescape(m["value"]) for m in PAGE_META_RE.finditer(head)}


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None
