"""The deletion overlay: real Spark DVs on their data files, and DVs built for pyarrow samples."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from puffin_explorer import DeletionVector, read_dv
from puffin_explorer.parquet import ParquetLayout

from _parquet_samples import write_sample

WAREHOUSE_ROOT = "/data/warehouse/"  # the root the warehouse was written at


def delete_files(fixtures, table: str) -> list[dict]:
    with open(fixtures / f"warehouse/{table}_delete_files.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for key in ("file_path", "referenced_data_file"):
            row[key] = fixtures / "warehouse" / row[key][len(WAREHOUSE_ROOT):]
    return rows


def load_dv(row) -> DeletionVector:
    return read_dv(str(row["file_path"]), offset=int(row["content_offset"]),
                   length=int(row["content_size_in_bytes"]))


def test_events_dv_on_its_data_file(fixtures):
    (row,) = delete_files(fixtures, "events")
    dv = load_dv(row)
    assert dv.cardinality == int(row["record_count"]) == 55_878
    pl = ParquetLayout(row["referenced_data_file"])
    ov = pl.overlay(dv)
    assert ov.deleted == 55_878 and ov.out_of_range == 0
    assert ov.share == pytest.approx(55_878 / 300_000)
    rg = ov.row_groups.iloc[0]
    assert (rg.num_rows, rg.deleted, rg.live, bool(rg.fully_deleted)) == (300_000, 55_878, 244_122, False)
    # 244,122 live rows: the table's live row count
    ev = ov.pages[ov.pages.column == "event_id"]
    assert list(ev.deleted) == [6804, 6805, 6804, 3505, 206, 207, 206, 10103, 20000, 207, 207,
                                206, 206, 206, 206]
    assert list(ev.fully_deleted).count(True) == 1
    assert ev[ev.fully_deleted].first_row.tolist() == [160_000]
    payload = ov.pages[ov.pages.column == "payload"]
    assert payload[payload.fully_deleted][["page", "first_row", "num_rows"]].values.tolist() == \
        [[11, 158_162, 14_571]]
    for _, per_column in ov.pages.groupby("column"):
        assert per_column.deleted.sum() == 55_878
        assert per_column.num_rows.sum() == 300_000
    # an independent count straight from the positions
    pos = dv.positions()
    assert int(np.count_nonzero((pos >= 160_000) & (pos < 180_000))) == 20_000
    assert [f.code for f in ov.findings] == []
    assert "55,878 of 300,000 rows deleted (18.6%)" in repr(ov)


def test_orders_dvs_on_their_data_files(fixtures):
    rows = delete_files(fixtures, "orders")
    assert len(rows) == 4
    for row in rows:
        dv = load_dv(row)
        pl = ParquetLayout(row["referenced_data_file"])
        ov = pl.overlay(dv)
        assert ov.deleted == dv.cardinality == int(row["record_count"])
        assert ov.out_of_range == 0
        assert int(ov.row_groups.deleted.sum()) == dv.cardinality
        for _, per_column in ov.pages.groupby("column"):
            assert per_column.deleted.sum() == dv.cardinality


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    d = tmp_path_factory.mktemp("overlay")
    return write_sample(d / "v1.parquet"), write_sample(d / "noindex.parquet", page_index=False)


def test_fully_deleted_row_group_finding(sample):
    pl = ParquetLayout(sample[0])
    positions = np.concatenate([[0], np.arange(1000, 2000), [4999]]).astype(np.uint64)
    ov = pl.overlay(DeletionVector.from_positions(positions))
    assert list(ov.row_groups.deleted) == [1, 1000, 0, 0, 1]
    assert list(ov.row_groups.fully_deleted) == [False, True, False, False, False]
    rg1 = pl.row_groups().iloc[1]
    (f,) = ov.findings
    assert (f.code, f.severity.value, f.offset, f.length) == \
        ("parquet.row-group-fully-deleted", "info", rg1.offset, rg1.length)
    assert f.message == "row group 1: all 1000 rows are deleted"
    assert ov.fully_deleted_bytes == rg1.length
    ids = ov.pages[(ov.pages.column == "id") & (ov.pages.row_group == 1)]
    assert list(ids.deleted) == [300, 300, 300, 100] and ids.fully_deleted.all()
    # repeated column with an offset index: pages map to rows too
    tags = ov.pages[(ov.pages.column == "tags.list.element") & (ov.pages.row_group == 1)]
    assert list(tags.deleted) == [300, 300, 300, 100]


def test_positions_past_the_file_and_plain_arrays(sample):
    pl = ParquetLayout(sample[0])
    ov = pl.overlay([7000, 3, 5000, 3, 1])  # unsorted, duplicated, two past the end
    assert ov.deleted == 4 and ov.out_of_range == 2  # {1, 3, 5000, 7000}
    assert list(ov.row_groups.deleted) == [2, 0, 0, 0, 0]
    assert [(f.code, f.severity.value) for f in ov.findings] == [
        ("parquet.overlay-out-of-range", "error")]
    assert "2 deleted positions are past the file's 5000 rows (the first is 5000)" == \
        ov.findings[0].message
    with pytest.raises(ValueError):
        pl.overlay(np.array([-1, 2]))


def test_pages_without_row_ranges_are_reported(sample):
    pl = ParquetLayout(sample[1])  # no page index, v1 pages
    ov = pl.overlay(np.arange(0, 5000, 2, dtype=np.uint64))
    assert [(f.code, f.message) for f in ov.findings] == [
        ("parquet.overlay-pages-unknown",
         "column tags.list.element: the rows of its pages are unknown (no offset index, "
         "repeated values, or page headers not read)")]
    # flat columns still map through their value counts
    ids = ov.pages[ov.pages.column == "id"]
    assert len(ids) == 20 and list(ids.deleted[:4]) == [150, 150, 150, 50]


def test_column_filter_and_chart(sample):
    pl = ParquetLayout(sample[0])
    ov = pl.overlay(np.arange(1000, 2000, dtype=np.uint64), column="name")
    assert set(ov.pages.column) == {"name"} and len(ov.pages) == 20
    with pytest.raises(KeyError):
        pl.overlay([1], column="nope")
    fig = ov.chart()
    top, bottom = fig.axes
    # one step path per panel (plus one for the fully deleted row groups), never a bar per row
    assert len(top.patches) == 2 and len(bottom.patches) == 1
    assert list(top.patches[0].get_data().values) == [0.0, 1.0, 0.0, 0.0, 0.0]
    assert list(top.patches[0].get_data().edges) == [0, 1000, 2000, 3000, 4000, 5000]
    assert list(top.patches[1].get_data().values) == [0.0, 1.0, 0.0, 0.0, 0.0]
    assert top.patches[1].get_facecolor()[:3] == pytest.approx((0xD6 / 255, 0x27 / 255, 0x28 / 255))
    assert len(bottom.patches[0].get_data().values) == 20
    buf = io.BytesIO()
    fig.savefig(buf, format="svg")
    assert buf.getvalue().startswith(b"<?xml")
    bundle = ov._repr_mimebundle_()
    assert bundle["text/plain"] == repr(ov)
    html = bundle["text/html"]
    assert "<svg" in html and "<script" not in html and "Row groups" in html
    assert "1000 of 5,000 rows" not in html and "1,000 of 5,000 rows (20.0%)" in html
