"""The display layer against real fixture files: text and HTML views, strip, hex view, charts, caps."""

from __future__ import annotations

import html.parser
from pathlib import Path

import numpy as np
import pytest

from puffin_explorer import DeletionVector, PuffinFile, PuffinWriter, Region
from puffin_explorer import display
from puffin_explorer.display import charts, dv_view, hexview, layout

FIX = Path(__file__).resolve().parents[1] / "resources" / "fixtures"
TRINO_DV = FIX / "puffin/trino/deletion-vector-v1.puffin"
TRINO_THETA = FIX / "puffin/trino/apache-datasketches-theta-v1.puffin"
SHAPES = FIX / "puffin/iceberg-java-writer/java-dv-shapes.puffin"
ZSTD = FIX / "puffin/iceberg-java/sample-metric-data-compressed-zstd.bin"
NO_FOOTER = FIX / "puffin/truncated/blobs-without-footer.puffin"
MAGIC_ONLY = FIX / "puffin/truncated/magic-only.puffin"
ALL = sorted(p for p in (FIX / "puffin").rglob("*") if p.is_file())

pytestmark = pytest.mark.skipif(not FIX.is_dir(), reason="reference fixtures not found")


class TagCollector(html.parser.HTMLParser):
    """Every element and attribute name in a document."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)


def collect(doc: str) -> TagCollector:
    c = TagCollector()
    c.feed(doc)
    return c


# ---------------------------------------------------------------- every fixture renders
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_fixture_renders_deterministically_without_script(path):
    a, b = PuffinFile(path), PuffinFile(path)
    bundle = a._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/html"] == b.to_html()  # a re-run compares equal (nbval)
    assert bundle["text/plain"] == b.to_text()
    tags = collect(bundle["text/html"])
    assert "script" not in tags.tags
    assert not any(name.startswith("on") for name in tags.attrs)
    assert "id" not in tags.attrs
    assert len(bundle["text/html"]) < display.MAX_HTML_BYTES
    # the text fallback is inside the HTML
    assert '<pre class="pe-text">' in bundle["text/html"]


def test_trino_dv_text_view():
    text = PuffinFile(TRINO_DV).to_text()
    lines = text.splitlines()
    assert lines[0] == f"PuffinFile  {TRINO_DV}"
    assert lines[1] == "  size 521 B  blobs 1  footer 471 B, uncompressed  valid"
    assert lines[2] == "  created-by Trino version testversion"
    assert "  0  deletion-vector-v1  [2147483645]       4      46  none   3 deleted rows, positions 0..4, CRC ok" in lines


def test_theta_file_with_schema_names_columns():
    pf = PuffinFile(TRINO_THETA)
    html_ = display.render_html(display.view(pf, {1: "id", 2: "name", 3: "kind"}))
    assert "[2 name]" in html_ and "[3 kind]" in html_
    iceberg_json = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long"},
                                                 {"id": 2, "name": "who", "type": {"type": "struct", "fields": [
                                                     {"id": 3, "name": "first", "type": "string"}]}}]}
    text = display.render_text(display.view(pf.blobs[2].decode(), iceberg_json))
    assert text.splitlines()[0] == "ThetaSketch  fields [3 who.first]"
    assert "  ndv 5 agrees" in text


def test_theta_view_values():
    sk = PuffinFile(TRINO_THETA).blobs[0].decode()
    text = sk.to_text()
    assert "  estimate 5.00  retained 5  theta 1  exact" in text
    assert "  2σ      5.00      5.00   5.00" in text
    html_ = sk.to_html()
    assert "<svg" in html_ and "currentColor" in html_
    assert html_ == PuffinFile(TRINO_THETA).blobs[0].decode().to_html()


def test_broken_file_shows_findings_first():
    pf = PuffinFile(NO_FOOTER)
    text = pf.to_text()
    assert "invalid: 1 error" in text.splitlines()[1]
    assert "  error   footer.magic-end @ 8,869: the file ends with 2c ad 80 e6" in text
    h = pf.to_html()
    assert h.index("footer.magic-end") < h.index('class="pe-strip"')
    assert "unparsed (no valid footer)" in h
    assert "pe-kbad" in h


def test_raw_blobs_render_their_text_escaped():
    pf = PuffinFile(ZSTD)
    raw = pf.blobs[1].decode()
    assert "some blob" in raw.to_html()
    assert raw.to_text().startswith("RawBlob  some-other-blob  83 B (stored 77 B)")


# ---------------------------------------------------------------- escaping
def hostile_file() -> bytes:
    w = PuffinWriter(properties={"created-by": "<script>window.__pwned=1</script>",
                                 '" onmouseover="alert(1)': "<img src=x onerror=alert(2)>"})
    w.add_dv([1, 2, 3], referenced_data_file='s3://b/"><script>alert(3)</script>.parquet')
    w.add_blob(b"<b>bold</b>", type="<svg onload=alert(4)>", fields=[1])
    return w.to_bytes()


def test_file_strings_are_escaped_everywhere():
    pf = PuffinFile(hostile_file())
    for doc in (pf.to_html(), pf.hex().to_html(), pf.blobs[0].decode().to_html(), pf.blobs[1].decode().to_html(),
                pf.regions().to_html()):
        tags = collect(doc)
        assert tags.tags <= {"div", "style", "pre", "span", "details", "summary", "table", "thead", "tbody",
                             "tr", "th", "td", "b", "i", "svg", "g", "path", "defs", "text", "use", "clippath",
                             "rect", "line", "polyline"}, tags.tags
        assert not any(a.startswith("on") for a in tags.attrs)
        assert "&lt;script&gt;" in doc or "&lt;svg onload" in doc or "&lt;b&gt;bold" in doc


# ---------------------------------------------------------------- layout strip
def test_strip_segments_cover_the_file_to_scale():
    pf = PuffinFile(SHAPES)
    segs = layout.segments(pf.regions())
    assert [s.name for s in segs] == ["magic", "blob 0: deletion-vector-v1", "blob 1: deletion-vector-v1",
                                      "blob 2: deletion-vector-v1", "blob 3: deletion-vector-v1", "footer magic",
                                      "footer payload", "payload size (int32 LE)", "flags", "trailing magic"]
    assert segs[0].offset == 0 and segs[-1].end == 17662
    assert all(a.end == b.offset for a, b in zip(segs, segs[1:]))
    assert [s.css for s in segs[1:5]] == ["pe-k0", "pe-k1", "pe-k2", "pe-k3"]
    h = layout.strip_html(pf.regions())
    assert 'style="width:93.036%"' in h  # blob 2: 16,432 of 17,662 bytes


def test_strip_merges_many_blobs_into_groups():
    w = PuffinWriter()
    for i in range(1000):
        w.add_dv([i], referenced_data_file=f"f{i}.parquet")
    pf = PuffinFile(w.to_bytes())
    segs = layout.segments(pf.regions(decode=False))
    assert len(segs) <= layout.MAX_SEGMENTS
    assert sum(s.length for s in segs) == pf.size
    h = pf.to_html()
    assert len(h) < display.MAX_HTML_BYTES
    assert "… 800 more rows not shown (pf.blob_table() has all)" in h


# ---------------------------------------------------------------- hex view
def test_hex_small_file_whole_and_coloured_like_the_strip():
    pf = PuffinFile(TRINO_DV)
    hv = pf.hex()
    assert hv.windows == [(0, 521)] and hv.bytes_shown == 521
    lines = hv.to_text().splitlines()
    assert lines[1].startswith("00000000  50 46 41 31 00 00 00 26 d1 d3 39 64")
    assert lines[1].endswith("magic, length (big-endian), DV magic, bucket count (uint64)")
    h = hv.to_html()
    # the length prefix of blob 0 is coloured like blob 0 in the strip, with an edge and a title
    assert '<span class="pe-r pe-k0 pe-e" title="blob 0: deletion-vector-v1 › length (big-endian) = 38' in h
    assert "<i>00</i>" in h  # zero bytes dimmed
    df = hv.to_pandas()
    assert list(df.columns) == ["offset", "hex", "ascii", "regions"]
    assert df["offset"].iloc[0] == 0 and df["ascii"].iloc[0].startswith("PFA1")


def big_file(blob_size: int) -> bytes:
    w = PuffinWriter(properties={"created-by": "test"})
    w.add_blob(bytes(blob_size), type="filler", fields=[1])
    w.add_dv(np.arange(0, 100_000, 3), referenced_data_file="a.parquet")
    return w.to_bytes()


def test_hex_big_file_is_paged_with_counted_gaps_and_reads_only_what_it_shows():
    data = big_file(3 << 20)
    pf = PuffinFile(data)
    root = pf.regions()
    before = pf.source.bytes_read
    hv = hexview.HexView(pf.source, root)
    assert pf.source.bytes_read - before == hv.bytes_shown <= hexview.MAX_SHOWN
    assert hv.windows[0][0] == 0 and hv.windows[-1][1] == len(data)
    gaps = [n for kind, n in hv.rows() if kind == "gap"]
    assert sum(gaps) + hv.bytes_shown == len(data)
    assert f"… {gaps[0]:,} bytes …" in hv.to_html()
    # the start of blob 1 (the DV) is inside a shown window
    dv_off = pf.blobs[1].offset
    assert any(a <= dv_off < b for a, b in hv.windows)


def test_hex_explicit_range_and_cap():
    pf = PuffinFile(big_file(1 << 20))
    hv = pf.hex(offset=4, length=32)
    assert hv.windows == [(4, 36)]
    lines = hv.to_text().splitlines()
    assert lines[1] == "          … 4 bytes …"
    assert lines[2].startswith("00000000              00 00 00")
    assert lines[-1] == f"          … {len(pf.source._data) - 36:,} bytes …"
    capped = pf.hex(0, 10**9)
    assert capped.bytes_shown == hexview.MAX_SHOWN
    assert capped.notes == [f"1,000,000,000 bytes asked for; showing the first {hexview.MAX_SHOWN:,}"]


# ---------------------------------------------------------------- deletion vectors
def test_dv_views_of_the_java_shapes():
    pf = PuffinFile(SHAPES)
    sparse, rng, dense, high = (b.decode() for b in pf.blobs)
    assert sparse.run_count() == 7  # 65535 and 65536 join across containers
    assert rng.run_count() == 1
    assert dense.run_count() == 60_000
    assert high.run_count() == 4
    first, last = high.edge_positions()
    assert first == last == [5, 2**32 + 7, 2**33 + 1, 3 * 2**32 - 1]
    first, last = dense.edge_positions()
    assert first == list(range(1, 20, 2)) and last == list(range(119_981, 120_000, 2))
    text = rng.to_text()
    assert "  deleted rows 299,900  positions 100 … 299,999  CRC ok (0x1bd2b479)" in text
    assert "  run            5    299,900     30      0.000" in text
    assert "  runs 1 (mean 299,900.0 positions)" in text
    assert "299,900 deleted rows (exact binning, 200 bins)" in rng.to_html()


@pytest.mark.parametrize("seed", range(6))
def test_run_count_matches_materialized_ranges(seed):
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, 1 << 20, 3000), np.arange(65_000, 66_000), np.arange(131_000, 200_000),
             np.flatnonzero(rng.random(300_000) < 0.6) + 400_000, np.arange((1 << 32) - 10, (1 << 32) + 10)]
    dv = DeletionVector.from_positions(np.concatenate(parts[: 2 + seed % 4] + [parts[4]]))
    assert dv.run_count() == len(dv.ranges())


def test_histogram_by_container_agrees_with_exact_on_container_aligned_bins(monkeypatch):
    positions = np.flatnonzero(np.random.default_rng(1).random(1 << 21) < 0.3)
    dv = DeletionVector.from_positions(positions)
    upper = 1 << 21
    edges, exact, method = charts.dv_histogram(dv, bins=32, upper=upper)
    assert method == "exact" and exact.sum() == dv.cardinality
    monkeypatch.setattr(charts, "EXACT_LIMIT", 0)
    edges2, approx, method2 = charts.dv_histogram(dv, bins=32, upper=upper)
    assert method2 == "by container"
    np.testing.assert_array_equal(edges, edges2)
    np.testing.assert_allclose(approx, exact)  # each bin is exactly 1 container wide


def test_plot_returns_a_figure():
    from matplotlib.figure import Figure

    dv = PuffinFile(SHAPES).blobs[2].decode()
    fig = dv.plot(bins=50)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "row position in the data file"
    heights = [p for p in ax.patches]
    assert len(heights) == 1  # one stairs patch, not one artist per row


def test_big_dv_html_stays_small(monkeypatch):
    dv = DeletionVector.from_positions(np.arange(0, 4_000_000, 2))
    monkeypatch.setattr(charts, "EXACT_LIMIT", 1000)
    h = dv.to_html()
    assert "by container binning" in h
    assert len(h) < 150_000


def test_compact_fallback_respects_the_cap(monkeypatch):
    pf = PuffinFile(SHAPES)
    full = len(pf.to_html().encode())
    monkeypatch.setattr(display, "MAX_HTML_BYTES", full - 1)
    compact = pf.to_html()
    assert len(compact.encode()) <= full - 1
    assert "compact view" in compact
    monkeypatch.setattr(display, "MAX_HTML_BYTES", 2000)
    tiny = pf.to_html()
    assert len(tiny.encode()) <= 2000 and tiny.startswith("<pre>")


# ---------------------------------------------------------------- regions, findings, pandas
def test_region_tree_and_findings_render_for_any_tree():
    root = Region("file.bin", "file", 0, 100, [Region("head", "magic", 0, 4, value="<x>"),
                                               Region("body", "chunk", 4, 96, [Region("a", "field", 4, 8)])])
    h = display.render_region_tree_html(root)
    assert "&lt;x&gt;" in h and "<details" in h
    assert root.to_html().count('class="pe-strip"') == 1
    pf = PuffinFile(NO_FOOTER)
    f = pf.findings
    assert list(f.to_pandas()["code"]) == ["footer.magic-end"]
    assert "footer.magic-end" in f.to_html()
    assert display.findings_html([]) == ""


def test_magic_only_file():
    pf = PuffinFile(MAGIC_ONLY)
    assert "footer.missing" in pf.to_text()
    assert pf.hex().windows == [(0, 4)]


# ---------------------------------------------------------------- show() and the CLI
def test_show_uses_display_html_when_the_notebook_has_it(capsys):
    shown = []

    def displayHTML(h):  # noqa: N802 - Databricks' name
        shown.append(h)

    pf = PuffinFile(TRINO_DV)
    pf.display()
    assert capsys.readouterr().out.startswith("PuffinFile  ")  # no kernel, no displayHTML: text
    globals()["displayHTML"] = displayHTML
    try:
        pf.display()
    finally:
        del globals()["displayHTML"]
    assert shown == [pf.to_html()]


def test_cli_html_report(tmp_path, capsys):
    from puffin_explorer.cli import main

    out = tmp_path / "report.html"
    assert main(["html", str(SHAPES), "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out} (")
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "blob 3: deletion-vector-v1" in page
    assert "script" not in collect(page).tags
    assert main(["html", str(tmp_path / "missing.puffin"), "-o", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err


RES = Path(__file__).resolve().parents[1] / "resources"


def test_hex_marks_the_bytes_of_findings():
    pf = PuffinFile(RES / "broken-dv-crc.puffin")
    crc = pf.findings[0]
    assert (crc.code, crc.offset) == ("dv.crc", 48)
    hv = pf.hex(offset=32, length=32)
    row = [line for line in hv.to_text().splitlines() if line.startswith("00000030")][0]
    assert "⚠ dv.crc" in row
    h = hv.to_html()
    # the whole 4-byte CRC region is marked, with the message on hover
    assert ('<span class="pe-r pe-k0 pe-e pe-f" title="blob 0: deletion-vector-v1 › CRC-32 (big-endian) = '
            '0x5a96fbe2 BAD\n[48, 52) 4 bytes\n⚠ error dv.crc: CRC-32 stored 0x5a96fbe2') in h
    assert "5a 96 fb e2</span>" in h


def test_every_view_has_a_dataframe():
    pf = PuffinFile(TRINO_THETA)
    df = pf.to_pandas()
    assert list(df["summary"])[0] == "estimate 5.0 [5.0, 5.0] at 2σ, 5 retained, exact, ndv 5 ok"
    assert list(df["decoded size"]) == [56, 56, 56]
    assert list(display.view(pf, {1: "id"}).to_pandas()["fields"]) == ["[1 id]", "[2]", "[3]"]
    bounds = pf.blobs[0].decode().to_pandas()
    assert list(bounds["std_devs"]) == [1, 2, 3] and set(bounds["estimate"]) == {5.0}
    dv = PuffinFile(TRINO_DV).blobs[0].decode()
    assert list(dv.to_pandas()["pos"]) == [0, 2, 4]
    assert list(PuffinFile(TRINO_DV).regions().to_pandas()["name"])[:2] == [str(TRINO_DV), "magic"]


def test_display_in_a_real_kernel_sends_html_and_text():
    """``obj.display()`` inside a Jupyter kernel goes through IPython's display (one rich output)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "from puffin_explorer import PuffinFile\n"
        f"PuffinFile({str(TRINO_DV)!r}).display()")]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"]
    data = outputs[0].data
    assert data["text/plain"] == PuffinFile(TRINO_DV).to_text()
    assert data["text/html"] == PuffinFile(TRINO_DV).to_html()


def test_schema_names_from_pyiceberg_and_pyarrow():
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType, StructType

    from puffin_explorer.display.schema import column_names

    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    NestedField(2, "who", StructType(NestedField(3, "first", StringType(), required=False)),
                                required=False))
    assert column_names(schema) == {1: "id", 2: "who", 3: "who.first"}
    arrow = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
                       pa.field("name", pa.string(), metadata={b"PARQUET:field_id": b"2"})])
    assert column_names(arrow) == {1: "id", 2: "name"}
    text = display.render_text(display.view(PuffinFile(TRINO_THETA), schema))
    assert "  0  apache-datasketches-theta-v1  [1 id]" in text and "[3 who.first]" in text


def test_hex_view_and_strip_for_any_region_tree():
    """A non-Puffin layout (Parquet-like) gets the same colours, edges and paging."""
    from puffin_explorer.io import ByteSource

    data = b"PAR1" + bytes(range(256)) * 40 + b"\x00" * 100 + b"PAR1"
    size = len(data)
    chunk = Region("column chunk a", "column-chunk", 4, 10240,
                   [Region("page header", "page-header", 4, 24), Region("page data", "page-data", 28, 10216)])
    root = Region("t.parquet", "file", 0, size, [
        Region("magic", "magic", 0, 4),
        Region("row group 0", "row-group", 4, 10240, [chunk]),
        Region("footer", "footer", 10244, 104, [Region("file metadata", "footer-metadata", 10244, 96),
                                                Region("footer length", "footer-size", 10340, 4),
                                                Region("magic", "magic", 10344, 4)]),
    ])
    assert [s.name for s in display.segments(root)] == ["magic", "row group 0", "file metadata",
                                                        "footer length", "magic"]
    hv = display.HexView(ByteSource(data), root)
    assert hv.windows[0][0] == 0 and hv.windows[-1][1] == size and hv.bytes_shown < size
    h = hv.to_html()
    assert 'class="pe-r pe-k0 pe-e" title="row group 0 › column chunk a › page header' in h
    text = hv.to_text()
    lines = text.splitlines()
    assert lines[1].startswith("00000000  50 41 52 31 00 01 02") and lines[1].endswith("|  magic, page header")
    assert lines[2].startswith("00000010") and lines[2].endswith("|  page data")
    assert "pe-strip" in display.strip_html(root)
