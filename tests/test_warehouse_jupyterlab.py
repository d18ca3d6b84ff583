"""The warehouse browser in a real JupyterLab, driven in headless Chromium (clicks go through the kernel)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

try:
    from _warehouse_fixtures import WAREHOUSE
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import WAREHOUSE

try:
    from _browser import launch_chromium
except ImportError:  # tests/ imported as a package
    from tests._browser import launch_chromium

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOT_DIR = Path(os.environ.get("PUFFIN_EXPLORER_SCREENSHOTS", REPO / "build" / "screenshots"))

NOTEBOOK_CODE = f"""from puffin_explorer import iceberg
wh = iceberg.Warehouse({str(WAREHOUSE)!r})
b = wh.browse()
b.select(table="shop.orders", kind="dv")
b"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pytest.importorskip("jupyterlab")
    pytest.importorskip("ipywidgets")
    root = tmp_path_factory.mktemp("lab")
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": NOTEBOOK_CODE}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (root / "browse.ipynb").write_text(json.dumps(nb))
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               JUPYTER_CONFIG_DIR=str(root / ".jupyter"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"))
    log = open(root / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}", "--ip=127.0.0.1",
         "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=None", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail("jupyter lab exited:\n" + (root / "lab.log").read_text()[-3000:])
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("jupyter lab did not start:\n" + (root / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def chromium():
    yield from launch_chromium()


def test_browser_widget_in_jupyterlab(lab, chromium):
    page = chromium.new_page(viewport={"width": 1400, "height": 1800})
    try:
        _drive(page, lab)
    except Exception:
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT_DIR / "warehouse-browser-jupyterlab-failure.png"))
        raise


def _drive(page, lab: str) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{lab}/lab/tree/browse.ipynb")
    page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=90_000)
    # the kernel is connected and idle before the cell runs (an early run is silently dropped)
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=90_000)
    for attempt in range(3):
        page.click(".lm-MenuBar-item:has-text('Run')")
        page.click(".lm-Menu-item:has-text('Run All Cells')")
        try:
            # the widget renders: the table list and the DV file list come from the kernel
            page.wait_for_selector(".jp-OutputArea-output .widget-select select", timeout=45_000)
            break
        except Exception:
            if attempt == 2:
                raise
    selects = page.locator(".jp-OutputArea-output .widget-select select")
    table_select = selects.nth(0)
    assert table_select.locator("option").all_inner_texts() == ["shop.events", "shop.legacy", "shop.orders"]
    file_select = selects.nth(2)
    raw_labels = file_select.locator("option").all_inner_texts()
    file_labels = [label.replace("\xa0", " ") for label in raw_labels]  # ipywidgets shows spaces as no-break
    assert len(file_labels) == 4 and all(label.startswith("[dv] ") for label in file_labels)
    # a click in the browser: pick the DV at offset 8236, the kernel renders its detail
    file_select.select_option(label=raw_labels[[" @8236 " in label for label in file_labels].index(True)])
    detail = page.locator(".jp-OutputArea-output .widget-html-content", has_text="deletion vector for")
    detail.first.wait_for(timeout=60_000)
    text = detail.first.inner_text()
    assert "at offset 8,236, 8,232 bytes · manifest record_count 7,105" in text
    assert "customer_id_bucket=1/00000-10-c9a0f6d8-bc79-45b4-884c-1caf32abe7eb-0-00003.parquet" in text
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / "warehouse-browser-jupyterlab.png"), full_page=False)
    # choosing another table from the browser rebuilds the lists through the kernel
    table_select.select_option("shop.legacy")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output .widget-select select')][2]"
        ".options.length === 0", timeout=60_000)  # kind 'dv' stays selected: a v2 table has no DV
    assert not [e for e in errors if "puffin" in e.lower()]
