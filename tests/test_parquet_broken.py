"""Truncated and corrupted copies of a real Spark-written data file open leniently, with
findings at exact byte offsets; ``strict=True`` raises at the first error."""

from __future__ import annotations

import pytest

from puffin_explorer.errors import InvalidFileError
from puffin_explorer.parquet import ParquetLayout
from puffin_explorer.parquet.regions import check_children
from puffin_explorer.regions import Region

ORDERS0 = ("warehouse/shop/orders/data/customer_id_bucket=0/"
           "00000-10-c9a0f6d8-bc79-45b4-884c-1caf32abe7eb-0-00002.parquet")
SIZE = 272_159
FOOTER = 270_965  # the FileMetaData starts here; 1,186 bytes


@pytest.fixture(scope="module")
def data(fixtures) -> bytes:
    raw = (fixtures / ORDERS0).read_bytes()
    assert len(raw) == SIZE
    return raw


def codes(pl: ParquetLayout) -> list[tuple[str, str, int]]:
    return [(f.code, f.severity.value, f.offset) for f in pl.findings]


def top(pl: ParquetLayout) -> list[tuple[str, int, int]]:
    return [(r.name, r.offset, r.length) for r in pl.root.children]


def zigzag_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def patch_footer_int(data: bytes, column: str, field: str, value: int) -> bytes:
    """Rewrite one ColumnMetaData integer in place (same varint length), found by its span."""
    pl = ParquetLayout(data, pages=False)
    chunk = next(c for c in pl.row_group_infos[0].chunks if c.name == column)
    start, end = chunk.meta.spans[field]
    old = data[start + 1:end]  # after the one-byte field header
    new = zigzag_varint(value)
    assert len(new) == len(old)
    return data[:start + 1] + new + data[end:]


def test_truncated_file_recovers_pages_by_walking_from_byte_4(data):
    pl = ParquetLayout(data[:100_000])
    assert codes(pl) == [("parquet.magic", "error", 99_996), ("parquet.recovered", "info", 4)]
    assert "not the Parquet magic" in pl.findings[0].message
    assert top(pl) == [("magic", 0, 4), ("recovered pages", 4, 82_501),
                       ("unparsed bytes", 82_505, 17_495)]
    pages = pl.pages()
    assert list(pages.offset) == [4, 52_925, 79_569]
    assert list(pages.page_type) == ["DATA_PAGE", "DATA_PAGE", "DICTIONARY_PAGE"]
    assert pl.metadata is None and pl.row_groups().empty


def test_file_cut_inside_the_footer(data):
    pl = ParquetLayout(data[:-100])
    assert codes(pl) == [("parquet.magic", "error", SIZE - 104), ("parquet.recovered", "info", 4)]
    # all 13 pages chain from byte 4 up to the column indexes
    assert len(pl.pages()) == 13
    assert top(pl)[1] == ("recovered pages", 4, 270_495)


@pytest.mark.parametrize("raw, expected", [
    (b"", [("parquet.too-small", "error", 0)]),
    (b"PAR1", [("parquet.too-small", "error", 0)]),
    (b"PAR1\x00\x00\x00\x00PAR1", [("parquet.footer-length", "error", 4)]),
    (b"NOPE\x00\x00\x00\x00PAR1", [("parquet.magic", "error", 0),
                                   ("parquet.footer-length", "error", 4)]),
])
def test_tiny_files(raw, expected):
    pl = ParquetLayout(raw)
    assert codes(pl) == expected
    assert repr(pl)  # the views survive


def test_footer_length_past_the_file(data):
    bad = data[:-8] + (10**9).to_bytes(4, "little") + b"PAR1"
    pl = ParquetLayout(bad)
    assert codes(pl) == [("parquet.footer-length", "error", SIZE - 8)]
    assert "1000000000 does not fit" in pl.findings[0].message
    assert top(pl) == [("magic", 0, 4), ("unparsed bytes", 4, SIZE - 12),
                       ("footer length", SIZE - 8, 4), ("magic", SIZE - 4, 4)]
    # the length was checked against the file before anything was read from it
    assert pl.bytes_read == 64 * 1024 + 4


def test_corrupted_footer_struct(data):
    bad = bytearray(data)
    bad[FOOTER + 2] = 0x1D  # field 2 (schema) gets wire type 13
    pl = ParquetLayout(bytes(bad))
    assert codes(pl) == [("parquet.footer", "error", FOOTER + 2)]
    assert pl.findings[0].message == \
        "cannot decode the FileMetaData: field 2 has unknown wire type 13"


def test_encrypted_footer_magic(data):
    pl = ParquetLayout(data[:-4] + b"PARE")
    assert codes(pl)[0] == ("parquet.encrypted-footer", "error", SIZE - 4)


def test_leading_magic_overwritten(data):
    pl = ParquetLayout(b"XXXX" + data[4:])
    assert codes(pl) == [("parquet.magic", "error", 0)]
    assert len(pl.pages()) == 13  # the rest of the file still reads


def test_corrupted_page_header_stops_only_its_chunk(data):
    bad = bytearray(data)
    bad[79_569] = 0x1D  # customer_id's dictionary page header
    pl = ParquetLayout(bytes(bad))
    assert codes(pl) == [("parquet.page-header", "error", 79_569)]
    pages = pl.pages()
    assert list(pages.groupby("column", sort=False).size()) == [2, 2, 3, 2, 3]
    # customer_id's data pages still come from its offset index, without their headers
    cid = pages[pages.column == "customer_id"]
    assert list(cid.page_type) == ["DATA_PAGE (offset index)"] * 2
    assert list(cid.offset) == [82_505, 110_094]
    assert list(cid.first_row_index) == [0, 20_000]
    assert list(cid.header_length) == [0, 0]


def test_page_header_field_of_the_wrong_type(data):
    bad = bytearray(data)
    bad[4:6] = bytes([0x18, 0x00])  # PageHeader.type as an empty binary instead of an i32
    pl = ParquetLayout(bytes(bad))
    assert codes(pl) == [("parquet.thrift-type", "error", 4), ("parquet.page-header", "error", 4)]
    assert "PageHeader.type has wire type binary" in pl.findings[0].message


def test_page_size_past_its_chunk(data):
    bad = bytearray(data)
    bad[11:14] = bytes([0xB8, 0xBA, 0x7F])  # compressed_page_size of order_id's first page
    pl = ParquetLayout(bytes(bad))
    assert codes(pl) == [("parquet.page-bounds", "error", 4),
                         ("parquet.chunk-values", "warning", 4),
                         ("parquet.offset-index", "warning", 270_826)]
    pages = pl.pages()
    first = pages.iloc[0]
    assert (first.offset, first.header_length, first.compressed_size) == (4, 29, 79_565 - 29)
    assert first.first_row_index == 0  # still matched to the offset index by its offset
    assert len(pages[pages.column == "order_id"]) == 1


def test_chunk_size_that_overlaps_the_next_chunk(data):
    bad = patch_footer_int(data, "order_id", "total_compressed_size", 79_600)
    pl = ParquetLayout(bad)
    found = codes(pl)
    assert ("parquet.page-bounds", "error", 79_569) in found
    assert ("parquet.overlap", "error", 79_569) in found
    overlapping = [r for r in pl.root.find("column-chunk") if r.finding is not None]
    assert [(r.name, r.offset) for r in overlapping] == [("column chunk customer_id", 79_569)]


def test_corrupted_column_index_leaves_a_gap(data):
    bad = bytearray(data)
    bad[270_499] = 0x1D
    pl = ParquetLayout(bytes(bad))
    assert codes(pl) == [("parquet.index", "error", 270_499), ("parquet.gap", "warning", 270_499)]
    gap = pl.root.find("unclaimed")[0]
    assert (gap.offset, gap.length) == (270_499, 67)


def test_strict_raises_at_the_first_error(data, tmp_path):
    path = tmp_path / "cut.parquet"
    path.write_bytes(data[:100_000])
    with pytest.raises(InvalidFileError) as err:
        ParquetLayout(path, strict=True)
    assert err.value.offset == 99_996
    assert err.value.code == "parquet.magic"
    assert ParquetLayout(path).findings  # lenient by default


def test_check_children_reports_gaps_and_overlaps():
    found = []
    parent = Region("p", "x", 0, 100, [Region("b", "x", 40, 30), Region("a", "x", 0, 20),
                                       Region("c", "x", 60, 20)])
    check_children(parent, found.append, "p")
    assert [(r.name, r.offset, r.length) for r in parent.children] == [
        ("a", 0, 20), ("unreferenced bytes", 20, 20), ("b", 40, 30), ("c", 60, 20),
        ("unreferenced bytes", 80, 20)]
    assert [(f.code, f.offset, f.length) for f in found] == [
        ("parquet.gap", 20, 20), ("parquet.overlap", 60, 10), ("parquet.gap", 80, 20)]


def test_check_children_tells_zero_padding_from_gaps():
    found = []
    parent = Region("p", "x", 0, 100, [Region("a", "x", 0, 20), Region("b", "x", 40, 30)])
    zeros = {20: ""}  # the bytes [20, 40) are all zero, [70, 100) are not
    check_children(parent, found.append, "p", lambda offset, length: zeros.get(offset))
    assert [(r.name, r.kind, r.offset, r.length, r.value) for r in parent.children] == [
        ("a", "x", 0, 20, None), ("zero padding", "padding", 20, 20, "20 zero bytes"),
        ("b", "x", 40, 30, None), ("unreferenced bytes", "unclaimed", 70, 30, None)]
    assert [(f.code, f.severity.value, f.offset, f.length) for f in found] == [
        ("parquet.padding", "info", 20, 20), ("parquet.gap", "warning", 70, 30)]
    assert found[0].message == "20 zero bytes in p, before b, claimed by no page, index or footer"
    assert parent.children[1].finding is found[0]


def test_zeroed_column_index_is_an_empty_struct_then_padding(data):
    """A column index overwritten with zeros decodes as an empty struct (one stop byte) that ends
    66 bytes before its length says; the zeros after it are padding, not a gap."""
    bad = bytearray(data)
    bad[270_499:270_499 + 67] = bytes(67)
    pl = ParquetLayout(bytes(bad))
    assert codes(pl) == [("parquet.index", "warning", 270_500), ("parquet.padding", "info", 270_500)]
    assert pl.findings[1].message == (
        "66 zero bytes in column indexes, before column index: row group 0 customer_id, claimed "
        "by no page, index or footer")
    [pad] = pl.root.find("padding")
    assert (pad.offset, pad.length, pad.value) == (270_500, 66, "66 zero bytes")
    assert pl.root.find("unclaimed") == []


def test_findings_order_does_not_depend_on_threads(data, tmp_path):
    bad = bytearray(data)
    bad[79_569] = 0x1D  # customer_id's dictionary page header
    bad[11:14] = bytes([0xB8, 0xBA, 0x7F])  # order_id's first page runs past its chunk
    path = tmp_path / "two-errors.parquet"
    path.write_bytes(bytes(bad))
    runs = [codes(ParquetLayout(path, max_workers=w)) for w in (1, 16, 16)]
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][:2] == [("parquet.page-bounds", "error", 4), ("parquet.chunk-values", "warning", 4)]
    assert ("parquet.page-header", "error", 79_569) in runs[0]


def test_negative_row_count_in_the_footer(data):
    pl = ParquetLayout(data, pages=False)
    start, end = pl.metadata.spans["num_rows"]
    new = zigzag_varint(-30_137)
    assert len(new) == end - start - 1
    bad = data[:start + 1] + new + data[end:]
    pl = ParquetLayout(bad)
    assert codes(pl) == [("parquet.row-group-rows", "error", start)]
    assert pl.findings[0].message == "the row groups hold 30137 rows; the footer says -30137"
    assert pl.num_rows == 0
    ov = pl.overlay([0, 1])
    assert ov.out_of_range == 2 and list(ov.row_groups.deleted) == [2]
