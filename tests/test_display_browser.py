"""In a real headless Chromium: no script from a file runs, and the file's strings show as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from puffin_explorer import PuffinFile, PuffinWriter
from puffin_explorer.display.report import report_html

try:
    from _browser import launch_chromium
except ImportError:  # tests/ imported as a package
    from tests._browser import launch_chromium

pytestmark = pytest.mark.browser


# Each payload would set window.__pwned (or open a dialog) if it ever became markup or script.
PAYLOADS = {
    "created-by": "<script>window.__pwned='script'</script>",
    '" onmouseover="window.__pwned=\'attr\'" x="': "<img src=x onerror=\"window.__pwned='img'\">",
    "note": "</style><script>window.__pwned='style-break'</script>",
    "title-break": "'><svg onload=\"window.__pwned='svg'\">",
    "pre-break": "</pre><iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    "details": "<details open ontoggle=\"window.__pwned='toggle'\">x</details>",
    "alert": "<script>alert('pwned')</script>",
}


def hostile_puffin() -> bytes:
    w = PuffinWriter(properties=dict(PAYLOADS))
    w.add_dv([3, 4, 5], referenced_data_file="s3://b/t/\"><script>window.__pwned='path'</script>.parquet",
             properties={"x\" onmouseover=\"window.__pwned='blobprop'": "<b onmouseover=\"window.__pwned='b'\">"})
    w.add_blob(b"<script>window.__pwned='blob'</script>", type="<img src=x onerror=\"window.__pwned='type'\">",
               fields=[7], properties={"ndv": "<script>window.__pwned='ndv'</script>"})
    w.add_theta(_theta(), 2, 5, 6, ndv=3)
    return w.to_bytes()


def _theta() -> bytes:
    import datasketches

    sk = datasketches.update_theta_sketch()
    for v in ("a", "b", "c"):
        sk.update(v)
    return sk.compact().serialize()


@pytest.fixture(scope="module")
def browser():
    yield from launch_chromium()


def _page_with(browser, html_doc: str, tmp_path: Path):
    page = browser.new_page()
    dialogs = []
    errors = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: errors.append(str(e)))
    f = tmp_path / "view.html"
    f.write_text(html_doc, encoding="utf-8")
    page.goto(f.as_uri())
    page.wait_for_load_state("load")
    return page, dialogs, errors


def test_no_script_from_the_file_runs_and_its_strings_show_as_text(browser, tmp_path):
    pf = PuffinFile(hostile_puffin())
    doc = report_html(pf)
    # plus every decoded blob's own view
    body = "".join(pf.blobs[i].decode().to_html() for i in range(len(pf.blobs)))
    doc = doc.replace("</body>", body + "</body>")
    page, dialogs, errors = _page_with(browser, doc, tmp_path)
    try:
        text = page.inner_text("body")
        for value in PAYLOADS.values():
            assert value in text, value
        assert "s3://b/t/\"><script>window.__pwned='path'</script>.parquet" in text
        assert "<img src=x onerror=\"window.__pwned='type'\">" in text
        # hover everything with a title and toggle every section: still nothing runs
        for el in page.query_selector_all("span[title], div[title], td, summary")[:400]:
            el.dispatch_event("mouseover")
        for el in page.query_selector_all("summary"):
            el.click()
        page.wait_for_timeout(300)
        assert page.evaluate("window.__pwned === undefined")
        assert page.evaluate("parent.__pwned === undefined")
        assert dialogs == []
        assert page.evaluate("document.querySelectorAll('script, img, iframe').length") == 0
        assert page.evaluate("[...document.querySelectorAll('*')].filter(e => [...e.attributes]"
                             ".some(a => a.name.startsWith('on'))).length") == 0
        # the styled view is what shows, not the text fallback
        assert page.evaluate("getComputedStyle(document.querySelector('.pe-text')).display") == "none"
        assert page.evaluate("getComputedStyle(document.querySelector('.pe-html')).display") == "block"
        assert errors == []
    finally:
        page.close()


def test_text_fallback_shows_where_styles_are_stripped(browser, tmp_path):
    pf = PuffinFile(hostile_puffin())
    import re

    stripped = re.sub(r"<style>.*?</style>", "", pf.to_html(), flags=re.S)
    page, dialogs, errors = _page_with(browser, f"<!DOCTYPE html><html><body>{stripped}</body></html>", tmp_path)
    try:
        assert page.evaluate("getComputedStyle(document.querySelector('.pe-html')).display") == "none"
        visible = page.inner_text("body")
        assert visible.startswith("PuffinFile  <bytes>")
        assert "created-by <script>window.__pwned='script'</script>" in visible
        assert page.evaluate("window.__pwned === undefined") and dialogs == []
    finally:
        page.close()


def test_dark_theme_variables_apply(browser, tmp_path):
    pf = PuffinFile(hostile_puffin())
    doc = f'<!DOCTYPE html><html><body data-jp-theme-light="false">{pf.to_html()}</body></html>'
    page, _, _ = _page_with(browser, doc, tmp_path)
    try:
        light = page.evaluate("getComputedStyle(document.querySelector('.pe-k0')).backgroundColor")
        assert light == "rgb(44, 78, 122)"  # --pe-c0 of the dark palette
    finally:
        page.close()
