"""Headless Debian Chromium driven by Playwright, shared by the browser tests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: No background traffic: the machine has no network beyond loopback.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def launch_chromium() -> Iterator:
    """Yield a launched Playwright browser; close it afterwards (use from a pytest fixture)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed (make test installs Debian's chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()
