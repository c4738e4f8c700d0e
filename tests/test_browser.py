"""Both reports in headless Chromium: no console errors, planted markup inert, a screenshot written.

Skipped when Debian's `chromium` is not installed (`.ci/run` installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import html5lib
import pytest

from triage import load_packs
from triage.report import build_nightly_context, build_run_context, render_nightly, render_run
from triage.store import open_store

from .test_report import NOW, PAYLOAD, SINCE, assert_inert, by_id, dom, find_all, plant, text

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0"]
CONSOLE = re.compile(r"CONSOLE|Uncaught|Content Security Policy|Refused to|Failed to load resource", re.IGNORECASE)


def chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("browser")
    packs = load_packs()
    result, _ = plant(tmp, packs)
    store = open_store(tmp / "b.db")
    rid = store.record_run(result, packs=packs, dimensions={"label": PAYLOAD}, duration_s=0.1,
                           created=NOW - timedelta(hours=1)).run_id
    run_html = tmp / "run.html"
    run_html.write_text(render_run(build_run_context(store, rid, now=NOW)), encoding="utf-8")
    nightly_html = tmp / "nightly.html"
    nightly_html.write_text(render_nightly(build_nightly_context(store, SINCE, NOW, now=NOW, packs=packs)),
                            encoding="utf-8")
    store.close()
    return tmp, {"run": run_html, "nightly": nightly_html}


@pytest.mark.parametrize("page", ["run", "nightly"])
def test_dom_after_load_has_no_executed_payload(pages, page):  # type: ignore[no-untyped-def]
    tmp, files = pages
    proc = chromium(tmp, files[page].as_uri(), "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if CONSOLE.search(line)]
    assert errors == []
    root = dom(proc.stdout)
    assert root.find(".//body") is not None and find_all(root, "main")
    assert_inert(root)
    title = root.find(".//title")
    static_title = dom(files[page].read_text(encoding="utf-8")).find(".//title")
    assert title is not None and text(title) == text(static_title) != "pwned"
    assert PAYLOAD in text(by_id(root, "unexplained") if page == "run" else by_id(root, "runs"))


@pytest.mark.parametrize("page", ["run", "nightly"])
def test_screenshot_is_written(pages, page):  # type: ignore[no-untyped-def]
    tmp, files = pages
    png = tmp / f"{page}.png"
    proc = chromium(tmp, files[page].as_uri(), f"--screenshot={png}", "--window-size=1280,2000")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [line for line in proc.stderr.splitlines() if CONSOLE.search(line)] == []
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    # a narrow (phone) viewport renders too
    phone = tmp / f"{page}-phone.png"
    proc = chromium(tmp, files[page].as_uri(), f"--screenshot={phone}", "--window-size=390,1600")
    assert proc.returncode == 0 and phone.stat().st_size > 5_000


def test_html5lib_is_the_parser() -> None:
    # guard: the DOM checks above rely on html5lib's WHATWG parsing, as a browser would parse
    assert html5lib.__version__ and shutil.which(CHROMIUM) is not None


@pytest.fixture(scope="module")
def history_pages(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The demo's run history (eight jobs, six nights) as the nightly writes it: pages, run pages, index."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("demo_history", root / "tests" / "history.py")
    history = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(history)  # type: ignore[union-attr]
    tmp = tmp_path_factory.mktemp("history")
    packs = load_packs()
    store = open_store(tmp / "farm.db")
    history.build_history(store, packs)
    last = history.write_pages(store, tmp / "reports", packs)
    store.close()
    return tmp, last


@pytest.mark.parametrize("width", [1280, 390])
def test_nightly_of_a_history_renders_at_laptop_and_phone_width(history_pages, width):  # type: ignore[no-untyped-def]
    tmp, last = history_pages
    png = tmp / f"nightly-{width}.png"
    proc = chromium(tmp, last.as_uri(), f"--screenshot={png}", f"--window-size={width},2400", "--hide-scrollbars")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [line for line in proc.stderr.splitlines() if CONSOLE.search(line)] == []
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    # the width was honoured: the PNG header carries it
    assert int.from_bytes(data[16:20], "big") == width
    dumped = dom(chromium(tmp, last.as_uri(), f"--window-size={width},2400", "--dump-dom").stdout)
    assert find_all(dumped, "tr", "job") and by_id(dumped, "regressed") is not None
