"""triage: recognise known failures in compile logs of neural-network accelerator flows.

Library first: `load_packs()` then `scan_paths()` return plain data; the CLI only formats it.
"""

from .errors import InputError, PackError, StoreError, TriageError
from .model import Evidence, Finding, InputInfo, RunInfo, ScanResult, Unexplained
from .packs import Cause, PackSet, load_packs
from .scan import Matcher, scan_paths, scan_sources, scan_text

__version__ = "0.1.0"

__all__ = [
    "Cause", "Evidence", "Finding", "InputError", "InputInfo", "Matcher", "PackError", "PackSet", "RunInfo",
    "ScanResult", "StoreError", "TriageError", "Unexplained", "__version__", "load_packs", "scan_paths",
    "scan_sources", "scan_text",
]
