"""ParquetLayout on real files: Spark-written warehouse data files and pyarrow-written samples.

Expected values were read off the files; every chunk is also cross-checked against
pyarrow's own footer reader, and every walked page against the file's offset index.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow
import pyarrow.parquet as pq
import pytest

from puffin_explorer.io import ByteSource
from puffin_explorer.parquet import ParquetLayout

from _parquet_samples import N_ROWS, ROW_GROUP_ROWS, skip_without_writer_options, write_sample

EVENTS = "warehouse/shop/events/data/00000-26-2016bb11-7592-4e1e-b79e-22c17a19c45a-0-00001.parquet"
ORDERS0 = ("warehouse/shop/orders/data/customer_id_bucket=0/"
           "00000-10-c9a0f6d8-bc79-45b4-884c-1caf32abe7eb-0-00002.parquet")
# pyarrow names LZ4_RAW (codec 7) "LZ4"
PYARROW_CODEC = {"LZ4_RAW": "LZ4"}


def warehouse_parquet_files(fixtures: Path) -> list[Path]:
    return sorted((fixtures / "warehouse").glob("shop/*/data/**/*.parquet"))


def assert_matches_pyarrow(pl: ParquetLayout, path) -> None:
    """Every row group and chunk agrees with pyarrow's reading of the same footer."""
    md = pq.read_metadata(path)
    assert pl.num_rows == md.num_rows
    assert len(pl.row_group_infos) == md.num_row_groups
    assert [c.name for c in pl.columns] == [md.schema.column(i).path for i in range(md.num_columns)]
    chunks = pl.column_chunks()
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        assert pl.row_group_infos[i].num_rows == rg.num_rows
        for j in range(rg.num_columns):
            col = rg.column(j)
            row = chunks[(chunks.row_group == i) & (chunks.column == col.path_in_schema)].iloc[0]
            assert row.data_page_offset == col.data_page_offset
            assert row.compressed_size == col.total_compressed_size
            assert row.uncompressed_size == col.total_uncompressed_size
            assert row.num_values == col.num_values
            assert PYARROW_CODEC.get(row.codec, row.codec) == col.compression
            assert row.physical_type == col.physical_type
            if col.has_dictionary_page:
                assert row.dictionary_page_offset == col.dictionary_page_offset
                assert row.dictionary_pages == 1
            if col.statistics is not None and col.statistics.has_min_max:
                assert row["min"] == col.statistics.min
                assert row["max"] == col.statistics.max
                assert row.null_count == col.statistics.null_count


def assert_pages_consistent(pl: ParquetLayout) -> None:
    """Pages tile each chunk, their values add up, and they agree with the offset index."""
    for rg in pl.row_group_infos:
        for c in rg.chunks:
            assert c.pages_walked
            assert c.pages[0].offset == c.start
            for a, b in zip(c.pages, c.pages[1:]):
                assert b.offset == a.end
            assert c.pages[-1].end == c.start + c.length
            data = [p for p in c.pages if p.page_type.startswith("DATA_PAGE")]
            assert sum(p.num_values for p in data) == c.meta["num_values"]
            if c.offset_index is not None:
                locs = c.offset_index["page_locations"]
                assert [loc["offset"] for loc in locs] == [p.offset for p in data]
                assert [loc["compressed_page_size"] for loc in locs] == \
                    [p.header_length + p.compressed_size for p in data]
                assert [loc["first_row_index"] for loc in locs] == [p.first_row_index for p in data]
            if c.column.max_repetition_level == 0:
                assert sum(p.num_rows for p in data) == rg.num_rows


def assert_tiles(pl: ParquetLayout) -> None:
    """Top-level regions, row groups, chunks and pages tile their parents exactly; leaves
    (down to single Thrift fields) are in order and never claim a byte twice."""
    for kind in ("parquet-file", "row-group", "column-chunk", "data-page", "dictionary-page",
                 "column-indexes", "offset-indexes"):
        for parent in pl.root.find(kind):
            kids = parent.children
            if not kids and kind in ("data-page", "dictionary-page"):
                continue  # known from the offset index only: no header was read
            assert kids[0].offset == parent.offset and kids[-1].end == parent.end, parent
            for a, b in zip(kids, kids[1:]):
                assert b.offset == a.end, (a, b)
    leaves = list(pl.root.leaves())
    for a, b in zip(leaves, leaves[1:]):
        assert b.offset >= a.end, (a, b)


def test_spark_events_file_layout(fixtures):
    path = fixtures / EVENTS
    pl = ParquetLayout(path)
    assert pl.findings == []
    assert pl.size == 10_929_219
    assert pl.num_rows == 300_000
    assert pl.created_by.startswith("parquet-mr version 1.15.2")
    assert [c.name for c in pl.columns] == ["event_id", "kind", "payload"]
    assert (pl.footer_offset, pl.footer_length) == (10_928_342, 869)
    # footer first, then page headers: a 10.9 MB file shows its layout from < 1% of its bytes
    assert pl.bytes_read < pl.size // 100

    top = [(r.name, r.kind, r.offset, r.length) for r in pl.root.children]
    assert top == [
        ("magic", "magic", 0, 4),
        ("row group 0", "row-group", 4, 10_923_911),
        ("column indexes", "column-indexes", 10_923_915, 3_642),
        ("offset indexes", "offset-indexes", 10_927_557, 785),
        ("footer (FileMetaData)", "footer", 10_928_342, 869),
        ("footer length", "footer-length", 10_929_211, 4),
        ("magic", "magic", 10_929_215, 4),
    ]
    chunks = pl.root.children[1].children
    assert [(r.name, r.offset, r.length) for r in chunks] == [
        ("column chunk event_id", 4, 323_941),
        ("column chunk kind", 323_945, 1_030),
        ("column chunk payload", 324_975, 10_598_940),
    ]
    cc = pl.column_chunks()
    assert list(cc.data_pages) == [15, 15, 21]
    assert list(cc.dictionary_pages) == [0, 1, 0]
    assert list(cc.codec) == ["ZSTD"] * 3
    assert cc.loc[1, "min"] == "buy"
    pages = pl.pages()
    ev = pages[pages.column == "event_id"]
    assert list(ev.first_row_index) == list(range(0, 300_000, 20_000))
    assert ev.iloc[0].offset == 4 and ev.iloc[0].page_type == "DATA_PAGE"
    payload = pages[pages.column == "payload"]
    assert list(payload.first_row_index[:3]) == [0, 14_462, 28_646]
    assert payload.num_rows.sum() == 300_000
    assert_matches_pyarrow(pl, path)
    assert_pages_consistent(pl)


def test_spark_orders_file_pages_and_stats(fixtures):
    path = fixtures / ORDERS0
    pl = ParquetLayout(path)
    assert pl.findings == []
    pages = pl.pages()
    assert len(pages) == 13
    first = pages.iloc[0]
    assert (first.column, first.page_type, first.offset, first.header_length,
            first.compressed_size, first.uncompressed_size, first.num_values) == \
        ("order_id", "DATA_PAGE", 4, 29, 52_892, 160_000, 20_000)
    status_dict = pages[(pages.column == "status") & (pages.page_type == "DICTIONARY_PAGE")].iloc[0]
    assert (status_dict.offset, status_dict.num_values, status_dict.encoding) == \
        (124_113, 5, "PLAIN_DICTIONARY")
    dates = pl.column_chunks().set_index("column").loc["order_date"]
    assert (dates["min"], dates["max"]) == (dt.date(2025, 1, 1), dt.date(2025, 12, 31))
    assert dates.logical_type == "DATE"
    # the page header regions carry the decoded fields at their exact offsets
    header = pl.root.children[1].children[0].children[0].children[0]
    assert (header.kind, header.offset, header.length) == ("page-header", 4, 29)
    fields = {r.name: (r.offset, r.length, r.value) for r in header.children}
    assert fields["type"] == (4, 2, "DATA_PAGE (0)")
    assert fields["compressed_page_size"] == (10, 4, 52_892)
    assert_matches_pyarrow(pl, path)
    assert_pages_consistent(pl)


def test_every_warehouse_data_file(fixtures):
    files = warehouse_parquet_files(fixtures)
    assert len(files) == 11
    for path in files:
        pl = ParquetLayout(path)
        assert pl.findings == [], path
        assert_matches_pyarrow(pl, path)
        assert_pages_consistent(pl)
        assert_tiles(pl)


def test_exactly_which_ranges_are_read(fixtures):
    """A 272 KB Spark file: the 64 KiB tail (footer, page indexes and the last chunk), the
    leading magic, the two small chunks whole, and one 512-byte header window for each of
    the four pages of the two big chunks."""
    for workers in (16, 1):
        pl = ParquetLayout(fixtures / ORDERS0, max_workers=workers)
        assert (pl.source.read_count, pl.bytes_read) == \
            (8, 65_536 + 4 + 44_544 + 10_431 + 4 * 512)


def test_bytes_source_and_counters(fixtures):
    data = (fixtures / ORDERS0).read_bytes()
    src = ByteSource(data)
    pl = ParquetLayout(src)
    assert pl.findings == [] and pl.num_rows == 30_137
    assert src.bytes_read == pl.bytes_read < len(data)
    assert not pl.root.find("unclaimed")


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    d = tmp_path_factory.mktemp("parquet-samples")
    return {
        "v1": write_sample(d / "v1.parquet"),
        "v2": write_sample(d / "v2.parquet", data_page_version="2.0"),
        "noindex": write_sample(d / "noindex.parquet", page_index=False),
        "bloom": write_sample(d / "bloom.parquet", bloom=True),
    }


@pytest.mark.parametrize("name", ["v1", "v2", "noindex", "bloom"])
def test_pyarrow_samples(samples, name):
    path = samples[name]
    pl = ParquetLayout(path)
    assert pl.findings == []
    assert pl.num_rows == N_ROWS
    assert pl.created_by.startswith("parquet-cpp-arrow")
    rgs = pl.row_groups()
    assert list(rgs.num_rows) == [ROW_GROUP_ROWS] * 5
    assert list(rgs.first_row) == [0, 1000, 2000, 3000, 4000]
    cc = pl.column_chunks()
    assert list(cc.codec[:6]) == ["ZSTD", "SNAPPY", "GZIP", "UNCOMPRESSED", "LZ4_RAW", "BROTLI"]
    assert list(cc.dictionary_pages[:6]) == [0, 1, 0, 0, 1, 0]
    # at most 300 rows per page: 1000 rows make 4 data pages in every chunk
    assert set(cc.data_pages) == {4}
    pages = pl.pages()
    kinds = set(pages.page_type)
    assert kinds == ({"DATA_PAGE_V2", "DICTIONARY_PAGE"} if name == "v2"
                     else {"DATA_PAGE", "DICTIONARY_PAGE"})
    score = pages[(pages.column == "score") & (pages.row_group == 0)]
    assert list(score.null_count) == [28, 27, 27, 9]  # every 11th value is null
    assert list(score["min"]) == [0.5, 150.0, 300.0, 450.0]
    tags = pages[(pages.column == "tags.list.element") & (pages.row_group == 0)]
    assert list(tags.num_values) == [400, 400, 400, 133]
    if name == "noindex":
        # repeated column, v1 pages, no offset index: rows per page are unknown
        assert tags.num_rows.isna().all()
        assert not pl.root.find("offset-indexes")
    else:
        assert list(tags.num_rows) == [300, 300, 300, 100]
        assert len(pl.root.find("offset-index")) == 30
    blooms = pl.root.find("bloom-filter")
    if name == "bloom":
        md = pq.read_metadata(path)
        assert [(b.offset, b.length) for b in blooms] == [
            (md.row_group(i).column(0).bloom_filter_offset,
             md.row_group(i).column(0).bloom_filter_length) for i in range(5)]
        assert blooms[0].children[1].kind == "bloom-filter-bitset"
    else:
        assert blooms == []
    assert_matches_pyarrow(pl, path)
    if name != "noindex":
        assert_pages_consistent(pl)
    assert_tiles(pl)


def test_footer_only_mode_reads_two_ranges(samples):
    pl = ParquetLayout(samples["v1"], pages=False)
    assert pl.findings == []
    # the tail read and one read of all page indexes; pages come from the offset index
    assert pl.source.read_count <= 2
    pages = pl.pages()
    assert len(pages) == 5 * 6 * 4
    assert list(pages[pages.column == "id"].first_row_index[:4]) == [0, 300, 600, 900]
    # the region tree still accounts for every byte: data pages from the offset index, the
    # dictionary page as the span before the first of them
    assert_tiles(pl)
    name_chunk = pl.root.find("column-chunk")[1]
    assert [r.name for r in name_chunk.children][:2] == [
        "dictionary page (header not read)", "data page 1 (header not read)"]


def test_views(samples):
    pl = ParquetLayout(samples["v1"])
    text = repr(pl)
    assert "5 row groups · 5,000 rows · 6 columns · 130 pages" in text
    assert "column chunk tags.list.element" in text
    assert "findings: none" in text
    bundle = pl._repr_mimebundle_()
    assert bundle["text/plain"] == text
    html = bundle["text/html"]
    assert "<script" not in html and "pe-table" in html and "Row groups" in html
    assert f"parquet-cpp-arrow version {pyarrow.__version__}" in html  # the writer of the samples: this pyarrow
    assert len(html) < 1_000_000
    before = pl.bytes_read
    dump = pl.hex(0, 48).text().splitlines()
    assert dump[1].startswith("00000000  50 41 52 31")
    assert dump[1].endswith("magic, type, uncompressed_page_size, compressed_page_size, crc")
    assert pl.bytes_read - before == 48  # one range read for the hex view
    paged = pl.hex()  # a paged view of the whole file: head, tail and region edges
    assert sum(b - a for a, b in paged.windows) <= 8192


def test_html_escapes_strings_from_the_file(tmp_path):
    import pyarrow as pa

    path = tmp_path / "evil.parquet"
    pq.write_table(pa.table({"<img src=x onerror=alert(1)>": [1, 2]}), path)
    html = ParquetLayout(path)._repr_mimebundle_()["text/html"]
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_statistics_decoded_by_logical_type(tmp_path):
    import datetime
    import decimal

    import numpy as np
    import pyarrow as pa

    path = tmp_path / "types.parquet"
    skip_without_writer_options("stores the DECIMAL(10,2) column as INT64 here", store_decimal_as_integer=True)
    pq.write_table(pa.table({
        "ts": pa.array([datetime.datetime(2024, 1, 1, 12, 0, 0, 5), datetime.datetime(2025, 6, 1)],
                       pa.timestamp("us")),
        "tsz": pa.array([1, 2], pa.timestamp("ms", tz="UTC")),
        "d": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50")], pa.decimal128(10, 2)),
        "dl": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50")], pa.decimal128(30, 2)),
        "u": pa.array([b"0123456789abcdef", b"fedcba9876543210"], pa.binary(16)),
        "i8": pa.array([-5, 7], pa.int8()),
    }), path, store_decimal_as_integer=True)
    pl = ParquetLayout(path)
    assert pl.findings == []
    cc = pl.column_chunks().set_index("column")
    assert list(cc.logical_type) == ["TIMESTAMP(MICROS)", "TIMESTAMP(MILLIS)", "DECIMAL(10,2)",
                                     "DECIMAL(30,2)", "", "INTEGER"]
    assert cc.loc["ts", "min"] == np.datetime64("2024-01-01T12:00:00.000005")
    assert cc.loc["tsz", "max"] == np.datetime64(2, "ms")
    assert (cc.loc["d", "min"], cc.loc["d", "max"]) == (decimal.Decimal("-3.50"), decimal.Decimal("1.25"))
    assert (cc.loc["dl", "physical_type"], cc.loc["dl", "min"]) == \
        ("FIXED_LEN_BYTE_ARRAY", decimal.Decimal("-3.50"))
    assert cc.loc["u", "min"] == b"0123456789abcdef".hex()
    assert (cc.loc["i8", "min"], cc.loc["i8", "max"]) == (-5, 7)


def test_page_limit_keeps_the_first_pages_and_falls_back_to_the_offset_index(samples):
    pl = ParquetLayout(samples["v1"], max_pages=10)
    assert [(f.code, f.severity.value) for f in pl.findings] == [("parquet.page-limit", "info")]
    pages = pl.pages()
    walked = pages[pages.header_length > 0]
    assert len(walked) == 4 + 5  # the chunks id and name; score would pass the limit
    # every data page is still listed, from the offset index where its header was not read
    assert len(pages[pages.page_type.str.startswith("DATA_PAGE")]) == 5 * 6 * 4


@pytest.mark.parametrize("name", ["v1", "noindex"])
def test_concurrent_and_sequential_walks_agree(samples, name):
    a = ParquetLayout(samples[name], max_workers=16)
    b = ParquetLayout(samples[name], max_workers=1)
    assert a.pages().equals(b.pages())
    assert a.root.to_records() == b.root.to_records()
    assert (a.bytes_read, a.source.read_count) == (b.bytes_read, b.source.read_count)


def test_empty_table_has_a_dictionary_page_and_no_data_page(tmp_path):
    import pyarrow as pa

    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), path)
    pl = ParquetLayout(path)
    # pyarrow writes data_page_offset 0 and one empty dictionary page at byte 4
    assert pl.findings == []
    assert pl.num_rows == 0
    pages = pl.pages()
    assert list(zip(pages.page_type, pages.offset, pages.num_values)) == [("DICTIONARY_PAGE", 4, 0)]
    assert_tiles(pl)
    assert pl.overlay([]).row_groups.deleted.tolist() == [0]


def test_auto_mode_skips_headers_only_when_offset_indexes_list_every_page(samples):
    pl = ParquetLayout(samples["v1"], header_budget=100)  # 120 data pages, all indexed
    assert [(f.code, f.severity.value) for f in pl.findings] == [
        ("parquet.page-headers-skipped", "info")]
    assert pl.source.read_count <= 2
    assert (pl.pages().header_length == 0).all()
    assert ParquetLayout(samples["v1"]).findings == []  # 120 <= 1000: headers read
    walked = ParquetLayout(samples["noindex"], header_budget=10)  # no index: must walk
    assert walked.findings == [] and (walked.pages().header_length > 0).all()
    with pytest.raises(ValueError):
        ParquetLayout(samples["v1"], pages="yes")


@pytest.mark.parametrize("workers", [16, 1])
def test_progress_reports_every_completed_read(samples, workers):
    seen = []
    ParquetLayout(samples["noindex"], pages=True, max_workers=workers,
                  progress=lambda stage, done, total: seen.append((stage, done, total)))
    chunks = [s for s in seen if s[0] == "column chunks"]
    assert [d for _, d, _ in chunks] == list(range(1, 31)) and {t for *_, t in chunks} == {30}
