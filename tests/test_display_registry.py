"""The open view registry: registration, MRO lookup, the generic view, render options, layering."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import puffin_explorer as pe
from puffin_explorer import display
from puffin_explorer.display import RenderOptions, register_view
from puffin_explorer.display import html as H
from puffin_explorer.regions import Finding, FindingList, Region, Severity

ROOT = Path(__file__).resolve().parents[1]


class Thing:
    def __init__(self, n: int) -> None:
        self.n = n


class SubThing(Thing):
    pass


def test_register_view_and_mro_lookup():
    seen = []

    def html(obj, opts):
        seen.append(opts)
        return f"<b>thing {obj.n}</b>"

    register_view(Thing, html=html, text=lambda obj, opts: f"thing {obj.n} rows<={opts.max_rows}",
                  css_class="pe-thing")
    assert display.render_text(Thing(3)) == "thing 3 rows<=200"
    out = display.render_html(SubThing(4), RenderOptions(max_rows=7))  # subclass inherits the view
    assert '<div class="pe-root pe-thing">' in out and "<b>thing 4</b>" in out
    assert seen[-1].max_rows == 7
    assert display.render_text(display.view(SubThing(5), max_rows=9)) == "thing 5 rows<=9"
    assert pe.register_view is register_view and pe.RenderOptions is RenderOptions


def test_unviewable_type_is_a_type_error():
    with pytest.raises(TypeError, match="no view for object"):
        display.render_html(object())
    with pytest.raises(TypeError, match="no view for int"):
        display.view(5)


class Plugin:
    """Not registered: has regions(), findings and summary(), so it gets the generic view."""

    findings = [Finding("X-ODD", Severity.WARNING, 12, "odd <byte>")]

    def regions(self):
        return [Region("head", "magic", 10, 4), Region("body", "payload", 14, 20)]

    def summary(self):
        return "2 parts & more"


def test_generic_view_for_objects_with_regions_findings_summary():
    text = display.render_text(Plugin())
    assert text.splitlines()[0] == "Plugin  2 parts & more"
    assert "warning X-ODD @ 12: odd <byte>" in text
    assert "head  [10, 14)  4 B" in text and "body  [14, 34)  20 B" in text
    out = display.render_html(Plugin())
    assert "pe-generic" in out and "2 parts &amp; more" in out and "odd &lt;byte&gt;" in out
    assert "pe-strip" in out and "<script" not in out


class Broken:
    def summary(self):
        raise RuntimeError("bad plug-in")


def test_generic_view_survives_a_raising_method():
    assert "view error: RuntimeError: bad plug-in" in display.render_text(Broken())
    assert "view error: RuntimeError: bad plug-in" in display.render_html(Broken())


def test_render_options_are_immutable_and_passed_not_set():
    opts = RenderOptions(names={1: "id"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.compact = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        opts.names[2] = "x"  # type: ignore[index]
    assert opts.replace(compact=True).compact and not opts.compact
    findings = FindingList(Finding(f"C{i}", Severity.INFO, i, "m") for i in range(30))
    out = display.render_html(findings, RenderOptions(max_rows=5))
    assert out.count("<tr><td>") == 5 and "… 25 more rows not shown" in out
    assert H.MAX_TABLE_ROWS == 200


def test_parquet_layout_through_view():
    from puffin_explorer.parquet import ParquetLayout
    import pyarrow as pa
    import pyarrow.parquet as pq
    import io

    buf = io.BytesIO()
    pq.write_table(pa.table({"a": [1, 2, 3]}), buf)
    pl = ParquetLayout(buf.getvalue())
    assert display.render_text(display.view(pl)).startswith("ParquetLayout(")


FIX = ROOT / "resources" / "fixtures"


def test_every_finding_list_is_one_type_with_one_view():
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from puffin_explorer.display.registry import find_view

    pf = pe.PuffinFile(str(ROOT / "resources" / "broken-dv-crc.puffin"))
    dv = pe.DeletionVector.from_bytes(b"\x00\x00\x00\x05junk!")
    buf = io.BytesIO()
    pq.write_table(pa.table({"a": [1, 2, 3]}), buf)
    layout = pe.ParquetLayout(buf.getvalue())
    checked = pe.Warehouse(str(FIX / "warehouse")).table("shop.orders").check()
    lists = [pf.findings, dv.findings, layout.findings, checked]
    assert [type(x) for x in lists] == [FindingList] * 4
    assert len({id(find_view(x)) for x in lists}) == 1
    assert checked == [] and checked.to_text() == display.render_text(FindingList())
    assert str(pf.findings).splitlines()[:2] == [
        "findings (1 error)", "  error   dv.crc @ 48: CRC-32 stored 0x5a96fbe2, computed 0xe22a9c87 over magic + vector"]
    assert str(dv.findings).startswith("findings (") and "Finding(" not in str(dv.findings)
    assert "dv.crc" in pf.findings.to_html() and "<script" not in pf.findings.to_html()


def test_table_fields_by_id_is_public():
    t = pe.Warehouse(str(FIX / "warehouse")).table("shop.orders")
    fields = t.fields_by_id()
    assert fields[2147483546] == ("file_path", "string")
    assert [fields[i] for i in (1, 2, 3, 4, 5)] == [("order_id", "long"), ("customer_id", "long"), ("status", "string"),
                                                  ("amount", "double"), ("order_date", "date")]
