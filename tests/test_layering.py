"""Parsing never imports display code: each model package imports in a fresh interpreter without
loading any ``puffin_explorer.display`` module; and the view registry is open."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import importlib, sys
importlib.import_module({module!r})
loaded = sorted(m for m in sys.modules if m.startswith("puffin_explorer.display") or m == "matplotlib")
print(",".join(loaded))
"""


@pytest.mark.parametrize("module", ["puffin_explorer", "puffin_explorer.format", "puffin_explorer.parquet",
                                    "puffin_explorer.iceberg", "puffin_explorer.delta", "puffin_explorer.io"])
def test_model_packages_import_without_the_display_layer(module):
    out = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


def test_every_model_type_has_a_registered_view():
    from puffin_explorer import (DeletionOverlay, DeletionVector, ParquetLayout, PuffinFile, RawBlob, Table,
                                 ThetaSketch, Warehouse)
    from puffin_explorer.display.registry import registered_types
    from puffin_explorer.iceberg.commits import CommitDeletes, TableSnapshot
    from puffin_explorer.iceberg.overview import DeleteDebt
    from puffin_explorer.regions import FindingList, Region

    types = set(registered_types())
    for cls in (PuffinFile, DeletionVector, ThetaSketch, RawBlob, ParquetLayout, DeletionOverlay, Region,
                FindingList, Warehouse, Table, TableSnapshot, CommitDeletes, DeleteDebt):
        assert cls in types, cls


def test_an_object_with_regions_gets_the_generic_view():
    from puffin_explorer.display import render_html, render_text
    from puffin_explorer.regions import Finding, Region, Severity

    class Thing:
        findings = [Finding("x.bad", Severity.WARNING, 2, "two is odd")]

        def regions(self):
            return [Region("head", "magic", 0, 4), Region("<b>body</b>", "payload", 4, 8)]

        def summary(self):
            return "a <thing> of 12 bytes"

    html = render_html(Thing())
    assert "a &lt;thing&gt; of 12 bytes" in html and "x.bad" in html and "&lt;b&gt;body&lt;/b&gt;" in html
    text = render_text(Thing())
    assert text.splitlines()[0] == "Thing  a <thing> of 12 bytes" and "x.bad @ 2: two is odd" in text


def test_no_view_is_a_clear_error():
    from puffin_explorer.display import render_text

    with pytest.raises(TypeError, match="no view for object"):
        render_text(object())


def test_render_options_are_passed_not_set():
    from puffin_explorer import PuffinWriter, PuffinFile
    from puffin_explorer.display import RenderOptions, html as H, render_html, view

    w = PuffinWriter()
    for i in range(30):
        w.add_dv([i], referenced_data_file=f"f{i}.parquet")
    pf = PuffinFile(w.to_bytes())
    before = H.MAX_TABLE_ROWS
    short = render_html(pf, RenderOptions(max_rows=5))
    assert "… 25 more rows not shown" in short
    assert "… 25 more rows not shown" in render_html(view(pf, max_rows=5))
    assert "more rows not shown" not in render_html(pf)
    assert H.MAX_TABLE_ROWS == before
    compact = render_html(pf, RenderOptions(compact=True))
    assert "Byte regions" not in compact and "Byte regions" in render_html(pf)


def test_finding_list_text_form():
    from puffin_explorer import PuffinFile

    fl = PuffinFile(str(ROOT / "resources" / "broken-dv-crc.puffin")).findings
    assert repr(fl).startswith("findings (")
    assert "error   dv.crc @ " in repr(fl) and "Finding(" not in repr(fl)


def test_docs_extending_example_plugs_in_a_blob_type_and_its_view():
    import re

    text = (ROOT / "docs" / "extending.md").read_text()
    section = text.split("# Extending", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    ns: dict = {}
    exec(compile(block, "docs/extending.md", "exec"), ns)  # noqa: S102 - the project's own docs
    from puffin_explorer.display import render_html

    html = render_html(ns["pf"])
    assert "count 1,234" in html and "com.example.counter-v1" in html
    assert "<b>1,234</b> counted" in render_html(ns["pf"].blobs[0].decode())
