"""triage: recognise known failures in compile logs of neural-network accelerator flows.

Library first: `load_packs()` then `scan_paths()` return plain data; the CLI only formats it. The names
below are imported on first use, so `triage --help` does not pay for the scanner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_HOMES = {
    "InputError": "errors", "PackError": "errors", "StoreError": "errors", "TriageError": "errors",
    "Evidence": "model", "Finding": "model", "InputInfo": "model", "RunInfo": "model", "ScanResult": "model",
    "Unexplained": "model", "Cause": "packs", "PackSet": "packs", "load_packs": "packs", "Matcher": "scan",
    "scan_paths": "scan", "scan_sources": "scan", "scan_text": "scan",
}

__all__ = sorted([*_HOMES, "__version__"])

if TYPE_CHECKING:
    from .errors import InputError, PackError, StoreError, TriageError
    from .model import Evidence, Finding, InputInfo, RunInfo, ScanResult, Unexplained
    from .packs import Cause, PackSet, load_packs
    from .scan import Matcher, scan_paths, scan_sources, scan_text


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'triage' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
