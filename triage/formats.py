"""Machine-readable renderings of a scan result. The JSON document is a documented contract:
fields may be added, never renamed."""

from __future__ import annotations

import json
from typing import Any

from .model import Evidence, Finding, ScanResult, Unexplained


def evidence_dict(ev: Evidence) -> dict[str, Any]:
    return {"path": ev.path, "line": ev.line, "text": ev.text, "before": ev.before, "after": ev.after,
            "captures": ev.captures}


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id, "severity": f.severity, "title": f.title, "cause": f.cause, "workaround": f.workaround,
        "references": f.references, "count": f.count, "evidence": [evidence_dict(e) for e in f.evidence],
        "tool": f.tool, "versions": f.versions, "generic": f.generic,
        "explains": [finding_dict(e) for e in f.explained],
    }


def unexplained_dict(u: Unexplained) -> dict[str, Any]:
    return {"path": u.path, "line": u.line, "text": u.text, "count": u.count, "fingerprint": u.fingerprint,
            "advice": u.advice, "message_id": u.message_id, "known_causes": list(u.known)}


def result_dict(result: ScanResult) -> dict[str, Any]:
    run = result.run
    return {
        "run": {
            "tool": run.tool, "tool_version": run.tool_version, "status": run.status, "phase": run.phase,
            "part": run.part,
            "inputs": [{"path": i.path, "kind": i.kind, "lines": i.lines, "bytes": i.bytes} for i in run.inputs],
        },
        "findings": [finding_dict(f) for f in result.findings],
        "counts": result.counts().to_dict(),
        "unexplained": [unexplained_dict(u) for u in result.unexplained],
        "warnings": list(result.warnings),
        "metrics": [m.to_dict() for m in result.metrics],
        "facts": [{"source": f.source, "line": f.line, "key": f.key, "value": f.value, "context": f.context}
                  for f in result.facts],
    }


def to_json(result: ScanResult) -> str:
    return json.dumps(result_dict(result), indent=2, ensure_ascii=False)
