"""Files of apache/parquet-testing (resources/parquet-testing, provenance in its README)."""

from __future__ import annotations

import pytest

from puffin_explorer import ParquetLayout
from puffin_explorer.parquet.spec import SCHEMA
from puffin_explorer.parquet.thrift import CompactReader

from conftest import RESOURCES

PT = RESOURCES / "parquet-testing"


@pytest.mark.parametrize("name, struct, copies", [
    ("sort_columns.parquet", "ColumnChunk", [(108, 91), (269, 59), (432, 93), (595, 59)]),  # Arrow C++
    ("null_list.parquet", "ColumnChunk", [(33, 47)]),  # parquet-rs
    ("alltypes_plain.parquet", "ColumnChunk", [(77, 32), (133, 35), (215, 41), (303, 42)]),  # Impala
    ("ARROW-GH-43605.parquet", "ColumnMetaData", [(2722, 31)]),  # Polars
])
def test_metadata_copy_at_file_offset_is_a_region_not_a_gap(name, struct, copies):
    pl = ParquetLayout(str(PT / name))
    assert list(pl.findings) == []
    root = pl.regions()
    assert root.find("unclaimed") == []
    found = root.find("column-meta-copy")
    offsets = [c.chunk.get("file_offset") for rg in pl.row_group_infos for c in rg.chunks]
    assert [r.offset for r in found] == offsets
    assert [(r.offset, r.length) for r in found][: len(copies)] == copies
    assert {r.value for r in found} == {f"{struct} at file_offset"}
    # the copy's fields are regions too, and it sits inside its row group
    assert found[0].children and found[0].children[0].kind == "thrift-field"
    rg0 = root.find("row-group")[0]
    assert found[0] in rg0.children


def test_copy_that_does_not_decode_as_the_same_column_stays_a_gap():
    data = bytearray((PT / "null_list.parquet").read_bytes())
    data[33:80] = b"\xff" * 47  # overwrite the copy at file_offset 33 with bytes that are no struct
    pl = ParquetLayout(bytes(data))
    assert [(f.code, f.offset, f.length) for f in pl.findings] == [("parquet.gap", 33, 47)]
    assert pl.regions().find("column-meta-copy") == []


def test_zeroed_copy_is_padding_that_file_offset_points_to():
    data = bytearray((PT / "null_list.parquet").read_bytes())
    data[33:80] = b"\x00" * 47  # zero the copy at file_offset 33: zeros hold no struct and no page
    pl = ParquetLayout(bytes(data))
    assert [(f.code, f.severity.value, f.offset, f.length) for f in pl.findings] == [
        ("parquet.padding", "info", 33, 47)]
    assert pl.regions().find("column-meta-copy") == [] and pl.regions().find("unclaimed") == []
    [pad] = pl.regions().find("padding")
    assert (pad.offset, pad.length, pad.value) == (
        33, 47, "47 zero bytes; the file_offset of row group 0 emptylist.list.item points here, "
                "but no metadata copy is there")


def test_copy_that_differs_from_the_footer_is_a_finding_on_its_region():
    pl = ParquetLayout(str(PT / "null_list.parquet"))
    start, end = pl.row_group_infos[0].chunks[0].meta_copy["meta_data"].spans["num_values"]
    assert (start, end) == (66, 68)
    data = bytearray((PT / "null_list.parquet").read_bytes())
    assert data[67] == 2  # zigzag 1: the copy says num_values 1, as the footer does
    data[67] = 6  # zigzag 3
    pl = ParquetLayout(bytes(data))
    c = pl.row_group_infos[0].chunks[0]
    assert (c.meta_get("num_values"), c.meta_copy["meta_data"]["num_values"]) == (1, 3)
    assert c.meta_copy_differs == ["num_values"]
    assert [(f.code, f.severity.value, f.offset, f.length) for f in pl.findings] == [
        ("parquet.meta-copy-differs", "info", 33, 47)]
    assert pl.findings[0].message == (
        "row group 0 column emptylist.list.item: the ColumnChunk copy at file_offset 33 differs "
        "from the footer's ColumnMetaData in num_values")
    [copy] = pl.regions().find("column-meta-copy")
    assert (copy.offset, copy.length, copy.finding) == (33, 47, pl.findings[0])


# alltypes_tiny_pages.parquet (parquet-mr 1.12): every dictionary-encoded chunk starts with its
# dictionary page at data_page_offset and leaves dictionary_page_offset unset (PARQUET-1850).
TINY = PT / "alltypes_tiny_pages.parquet"
TINY_DICTIONARIES = [  # (column, offset, header length, payload length, values)
    ("tinyint_col", 40_351, 13, 40, 10), ("smallint_col", 52_745, 13, 40, 10),
    ("int_col", 65_139, 13, 40, 10), ("bigint_col", 77_533, 15, 80, 10),
    ("float_col", 95_048, 13, 40, 10), ("double_col", 107_442, 15, 80, 10),
    ("date_string_col", 124_957, 18, 8_760, 730), ("string_col", 167_075, 13, 50, 10),
    ("timestamp_col", 180_158, 18, 87_600, 7_300), ("year", 306_690, 13, 8, 2),
    ("month", 315_001, 13, 48, 12)]


def test_dictionary_page_at_data_page_offset_walked():
    pl = ParquetLayout(str(TINY), pages=True)
    assert list(pl.findings) == []
    assert pl.regions().find("unclaimed") == []
    chunks = pl.row_group_infos[0].chunks
    assert [(c.name, c.meta_get("dictionary_page_offset"), c.meta_get("data_page_offset"))
            for c in chunks[2:4]] == [("tinyint_col", None, 40_351), ("smallint_col", None, 52_745)]
    firsts = [c.pages[0] for c in chunks if c.pages[0].page_type == "DICTIONARY_PAGE"]
    assert [(p.column, p.offset, p.header_length, p.compressed_size, p.num_values)
            for p in firsts] == TINY_DICTIONARIES
    assert {p.encoding for p in firsts} == {"PLAIN_DICTIONARY"}
    assert sum(1 for c in chunks for p in c.pages if p.page_type == "DATA_PAGE") == 5_794
    # the header, decoded by the project's Thrift reader straight from the file's bytes
    raw = TINY.read_bytes()[40_351:40_351 + 13]
    h = CompactReader(raw, 40_351, SCHEMA).read_struct("PageHeader")
    assert (h.end, h.to_dict()) == (40_364, {
        "type": 2, "uncompressed_page_size": 40, "compressed_page_size": 40,
        "dictionary_page_header": {"num_values": 10, "encoding": 2}})


@pytest.mark.parametrize("pages", ["auto", False])
def test_dictionary_page_at_data_page_offset_from_the_metadata(pages):
    """Page headers not read: encoding_stats say each chunk has a dictionary page, and the offset
    index says where its first data page is; the bytes before it are that dictionary page."""
    pl = ParquetLayout(str(TINY), pages=pages)
    assert [f.code for f in pl.findings] == (
        ["parquet.page-headers-skipped"] if pages == "auto" else [])
    assert pl.source.read_count == 3  # leading magic, tail, page indexes: no dictionary header read
    root = pl.regions()
    assert root.find("unclaimed") == [] and root.find("padding") == []
    dicts = root.find("dictionary-page")
    assert [(r.offset, r.length) for r in dicts] == [(o, h + n) for _, o, h, n, _ in TINY_DICTIONARIES]
    assert dicts[0].name == "dictionary page (header not read)"
    assert {r.value for r in dicts} == {"at data_page_offset; dictionary_page_offset not set"}
    tinyint = next(r for r in root.find("column-chunk") if r.name == "column chunk tinyint_col")
    assert tinyint.children[0] is dicts[0]
    # pages are numbered as a walk numbers them: the dictionary page is page 0
    pages_df = pl.pages()
    first = pages_df[pages_df.column == "tinyint_col"].iloc[0]
    assert (first.page, first.offset, first.first_row_index) == (1, 40_404, 0)
    assert len(pages_df) == 5_794


def test_bytes_before_the_first_indexed_page_without_a_dictionary_stay_a_gap():
    """When the metadata says a chunk has no dictionary page, the bytes before its first indexed
    data page are unknown: a gap."""
    data = bytearray(TINY.read_bytes())
    stats = ParquetLayout(str(TINY), pages=False).row_group_infos[0].chunks[2].meta["encoding_stats"]
    start, _ = stats[0].spans["page_type"]
    assert (start, data[start + 1]) == (453_005, 4)  # zigzag 2: DICTIONARY_PAGE
    data[start + 1] = 0  # DATA_PAGE
    pl = ParquetLayout(bytes(data), pages=False)
    assert [(f.code, f.severity.value, f.offset, f.length) for f in pl.findings] == [
        ("parquet.gap", "warning", 40_351, 53)]
    assert len(pl.regions().find("dictionary-page")) == 10
    # reading the headers shows what the bytes are, whatever the metadata says
    assert list(ParquetLayout(bytes(data), pages=True).findings) == []


# delta_length_byte_array.parquet: 330 zero bytes between the only chunk and the footer.
DLBA = PT / "delta_length_byte_array.parquet"


def test_zero_padding_before_the_footer():
    pl = ParquetLayout(str(DLBA))
    assert [(f.code, f.severity.value, f.offset, f.length) for f in pl.findings] == [
        ("parquet.padding", "info", 2_629, 330)]
    assert pl.findings[0].message == (
        "330 zero bytes in the file, before footer (FileMetaData), claimed by no page, index or "
        "footer; the file_offset of row group 0 FRUIT points here, but no metadata copy is there")
    assert [(r.name, r.offset, r.length) for r in pl.regions().children] == [
        ("magic", 0, 4), ("row group 0", 4, 2_625), ("zero padding", 2_629, 330),
        ("footer (FileMetaData)", 2_959, 105), ("footer length", 3_064, 4), ("magic", 3_068, 4)]
    assert pl.row_group_infos[0].chunks[0].chunk["file_offset"] == 2_629
    assert pl.row_group_infos[0].chunks[0].meta_copy is None
    assert pl.source.read_count == 1  # the 3 KiB file is all in the tail read


def test_one_non_zero_byte_makes_padding_a_gap():
    data = bytearray(DLBA.read_bytes())
    data[2_700] = 1
    pl = ParquetLayout(bytes(data))
    assert [(f.code, f.severity.value, f.offset, f.length) for f in pl.findings] == [
        ("parquet.gap", "warning", 2_629, 330)]
    assert pl.regions().find("padding") == []


def test_corrupted_schema_type_is_a_finding():
    pl = ParquetLayout(str(PT / "PARQUET-1481.parquet"))
    f = [(f.code, f.severity.value, f.offset, f.length) for f in pl.findings]
    assert f == [("parquet.schema-type", "error", 306, 2), ("parquet.gap", "warning", 209, 80)]
    assert pl.findings[0].message == ("schema element 1 (Handle): physical type -7 is not one of BOOLEAN, "
                                      "INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY")
    with pytest.raises(Exception, match="parquet.schema-type"):
        ParquetLayout(str(PT / "PARQUET-1481.parquet"), strict=True)
