"""The warehouse tour exported to static HTML (nbconvert, as GitHub or a notebook without a kernel
would show it): the browser cell shows the warehouse and table cards, not an empty widget."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

NOTEBOOK = ROOT / "notebooks" / "warehouse.ipynb"


def _browser_cell():
    nb = json.loads(NOTEBOOK.read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "wh.browse(" in "".join(c["source"])]
    assert len(cells) == 1
    return nb, cells[0]


def test_browser_output_carries_the_cards_and_no_widget_state():
    nb, cell = _browser_cell()
    assert "widgets" not in nb["metadata"]  # a saved widget state would make exporters draw the (empty) widget
    (out,) = [o for o in cell["outputs"] if o.get("output_type") in ("execute_result", "display_data")]
    assert "application/vnd.jupyter.widget-view+json" in out["data"]
    html = "".join(out["data"]["text/html"])
    assert 'class="pe-root pe-warehouse"' in html and 'class="pe-root pe-table-card"' in html
    assert "<script" not in html


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    nbconvert = pytest.importorskip("nbconvert")
    body, _ = nbconvert.HTMLExporter().from_filename(str(NOTEBOOK))
    path = tmp_path_factory.mktemp("export") / "warehouse.html"
    path.write_text(body, encoding="utf-8")
    return path, body


def test_nbconvert_export_shows_the_cards(exported):
    _, body = exported
    assert body.count('class="pe-root pe-warehouse"') >= 2  # the wh cell and the browser cell
    assert body.count('class="pe-root pe-table-card"') >= 2 and "Delete debt" in body and "commit deletes" in body


@pytest.mark.browser
def test_exported_page_shows_the_browser_cards_in_chromium(exported, tmp_path):
    try:
        from _browser import launch_chromium
    except ImportError:  # tests/ imported as a package
        from tests._browser import launch_chromium

    path, _ = exported
    gen = launch_chromium()
    browser = next(gen)
    try:
        for scheme in ("light", "dark"):
            page = browser.new_page(viewport={"width": 1300, "height": 900}, color_scheme=scheme)
            page.goto(path.as_uri())
            cell = page.locator(".jp-Cell").filter(has_text="wh.browse(spark=spark)")
            output = cell.locator(".jp-OutputArea-output").first
            text = output.inner_text()
            assert "warehouse" in text and "shop.events" in text and "Delete debt" in text, text[:500]
            assert output.bounding_box()["height"] > 400  # drawn, not an empty placeholder
            output.screenshot(path=str(tmp_path / f"browser-cell-{scheme}.png"))
            page.close()
    finally:
        gen.close()
