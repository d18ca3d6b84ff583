"""The Iceberg metadata layer on the fixture warehouse written by Spark 3.5.9 + Iceberg 1.9.2 at /data/warehouse."""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid

import numpy as np
import pytest

from puffin_explorer.iceberg import PathMapper, Table, Warehouse
from puffin_explorer.iceberg.bounds import decode_value

try:
    from _warehouse_fixtures import (EVENTS_SNAPSHOT, LEGACY_SNAPSHOT, ORDERS_SNAPSHOT, WAREHOUSE,
                                     WRITTEN_ROOT, read_delete_files_csv)
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (EVENTS_SNAPSHOT, LEGACY_SNAPSHOT, ORDERS_SNAPSHOT, WAREHOUSE,
                                           WRITTEN_ROOT, read_delete_files_csv)


@pytest.fixture(scope="module")
def wh():
    if not WAREHOUSE.is_dir():
        pytest.fail(f"fixture warehouse not found at {WAREHOUSE}")
    return Warehouse(str(WAREHOUSE))


def live_rows(t: Table) -> int:
    files = t.files()
    return int(files.loc[files.kind == "data", "record_count"].sum()
               - files.loc[files.kind != "data", "record_count"].sum())


def test_discovers_tables_and_namespaces(wh):
    assert wh.table_names() == ["shop.events", "shop.legacy", "shop.orders"]
    assert wh.namespaces() == ["shop"]
    tables = wh.tables().set_index("table")
    assert tables.loc["shop.orders", "format_version"] == 3
    assert tables.loc["shop.legacy", "format_version"] == 2
    assert tables.loc["shop.orders", "current_snapshot_id"] == ORDERS_SNAPSHOT
    assert tables.loc["shop.events", "current_snapshot_id"] == EVENTS_SNAPSHOT
    assert tables.loc["shop.legacy", "current_snapshot_id"] == LEGACY_SNAPSHOT
    assert tables.loc["shop.orders", "location_written"] == f"{WRITTEN_ROOT}/shop/orders"
    # version-hint.text says 7 for orders: the current metadata is v7
    assert tables.loc["shop.orders", "metadata_location"].endswith("/shop/orders/metadata/v7.metadata.json")


def test_live_rows_match_readme(wh):
    assert live_rows(wh.table("shop.orders")) == 94_040
    assert live_rows(wh.table("shop.events")) == 244_122
    assert live_rows(wh.table("shop.legacy")) == 18_000


def test_orders_dvs_equal_sparks_delete_files_table(wh):
    t = wh.table("shop.orders")
    dvs = t.dvs()
    got = sorted((r.file_path, r.referenced_data_file, int(r.content_offset), int(r.content_size_in_bytes),
                  int(r.record_count)) for r in dvs.itertuples())
    assert got == read_delete_files_csv("orders_delete_files.csv")
    # and each DV read by its range decodes to exactly record_count positions, all inside the data file
    data = t.data_files().set_index("file_path")
    for r in dvs.itertuples():
        dv = t.read_dv(r.referenced_data_file)
        assert dv.cardinality == r.record_count
        assert int(dv.positions()[-1]) < data.loc[r.referenced_data_file, "record_count"]


def test_events_dv_equals_sparks_delete_files_table(wh):
    t = wh.table("shop.events")
    got = sorted((r.file_path, r.referenced_data_file, int(r.content_offset), int(r.content_size_in_bytes),
                  int(r.record_count)) for r in t.dvs().itertuples())
    assert got == read_delete_files_csv("events_delete_files.csv")
    data_file = got[0][1]
    positions = t.deletions(data_file)
    assert len(positions) == 55_878
    assert positions.dtype == np.int64 and np.all(np.diff(positions) > 0)


def test_orders_snapshots_timeline(wh):
    snaps = wh.table("shop.orders").snapshots()
    assert list(snaps.operation) == ["append", "delete", "delete", "delete", "overwrite"]
    assert list(snaps.sequence_number) == [1, 2, 3, 4, 5]
    assert snaps.added_dvs.tolist()[1:] == [4, 4, 4, 4]
    assert snaps.removed_dvs.tolist()[2:] == [4, 4, 4]
    assert snaps.total_position_deletes.tolist() == [0, 1257, 7083, 25960, 27924]
    assert snaps.is_current.tolist() == [False, False, False, False, True]
    assert snaps.first_row_id.tolist() == [0, 120000, 120000, 120000, 120000]


def test_sequence_number_and_snapshot_id_inheritance(wh):
    t = wh.table("shop.orders")
    files = t.files()
    data = files[files.kind == "data"]
    # the four files of the first append keep sequence number 1 (EXISTING entries carry it explicitly) ...
    first = data[data.file_path.str.contains("00000-10-")]
    assert first.sequence_number.tolist() == [1, 1, 1, 1]
    assert set(first.snapshot_id) == {4894008605646771791}
    # ... the four written by the UPDATE have null sequence numbers in the manifest: inherited from the list
    new = data[data.file_path.str.contains("00000-21-")]
    assert new.sequence_number.tolist() == [5, 5, 5, 5]
    assert new.file_sequence_number.tolist() == [5, 5, 5, 5]
    assert set(new.snapshot_id) == {ORDERS_SNAPSHOT}
    dvs = files[files.kind == "dv"]
    assert dvs.sequence_number.tolist() == [5, 5, 5, 5]
    # a DELETED entry keeps its explicit sequence numbers and is not live
    ev = wh.table("shop.events")
    all_entries = ev.files(include_deleted=True)
    gone = all_entries[all_entries.status == "deleted"]
    assert len(gone) == 1 and gone.iloc[0].kind == "dv"
    assert (gone.iloc[0].sequence_number, gone.iloc[0].record_count) == (3, 32785)
    assert len(ev.files()) == 2


def test_first_row_id_inheritance(wh):
    files = wh.table("shop.orders").data_files()
    by_path = dict(zip(files.file_path.str.rsplit("/", n=1).str[-1], files.first_row_id))
    # manifest first_row_id 120000 plus the record counts (502, 483, 507, 472) of the files before
    assert [by_path[f"00000-21-5bda5967-7808-4966-bb27-4f1a594d8228-0000{i}.parquet"] for i in (1, 2, 3, 4)] == \
        [120000, 120502, 120985, 121492]
    first = files[files.file_path.str.contains("00000-10-")].sort_values("first_row_id")
    assert first.first_row_id.iloc[0] == 0
    assert (first.first_row_id + first.record_count).iloc[-1] == 120000
    # delete files never get a first_row_id
    assert wh.table("shop.orders").delete_files().first_row_id.isna().all()


def test_bounds_are_typed_values_by_column_name(wh):
    files = wh.table("shop.orders").data_files()
    row = files[files.file_path.str.endswith("customer_id_bucket=0/00000-21-5bda5967-7808-4966-bb27-4f1a594d8228-00001.parquet")].iloc[0]
    assert row.lower_bounds == {"order_id": 269, "customer_id": 1, "status": "refunded", "amount": 450.31,
                                "order_date": dt.date(2025, 1, 5)}
    assert row.upper_bounds == {"order_id": 119809, "customer_id": 4998, "status": "refunded", "amount": 499.89,
                                "order_date": dt.date(2025, 12, 31)}
    assert row["value_counts"] == {"order_id": 502, "customer_id": 502, "status": 502, "amount": 502, "order_date": 502}
    assert row.partition == {"customer_id_bucket": 0}


@pytest.mark.parametrize("type_name, data, expected", [
    ("boolean", b"\x01", True),
    ("int", struct.pack("<i", -7), -7),
    ("long", struct.pack("<q", 2**40 + 3), 2**40 + 3),
    ("long", struct.pack("<i", 12), 12),  # a bound written before int -> long promotion
    ("float", struct.pack("<f", 1.5), 1.5),
    ("double", struct.pack("<d", -2.25), -2.25),
    ("date", struct.pack("<i", 19000), dt.date(2022, 1, 8)),
    ("time", struct.pack("<q", 3_723_000_001), dt.time(1, 2, 3, 1)),
    ("timestamp", struct.pack("<q", 1_700_000_000_000_000), dt.datetime(2023, 11, 14, 22, 13, 20)),
    ("timestamptz", struct.pack("<q", 0), dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)),
    ("string", "grüß".encode(), "grüß"),
    ("uuid", uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
    ("fixed[3]", b"abc", b"abc"),
    ("binary", b"\x00\xff", b"\x00\xff"),
    ("decimal(9, 2)", (-12345).to_bytes(2, "big", signed=True), decimal.Decimal("-123.45")),
])
def test_single_value_deserialization(type_name, data, expected):
    assert decode_value(type_name, data) == expected


def test_bad_bound_bytes_do_not_raise():
    from puffin_explorer.iceberg.bounds import decode_bounds

    out = decode_bounds([{"key": 1, "value": b"\x01\x02\x03"}], {1: ("id", "long")})
    assert out["id"].startswith("<bad bound: 010203")


def test_statistics_and_puffin_files(wh):
    t = wh.table("shop.orders")
    stats = t.statistics_files()
    assert len(stats) == 1
    s = stats.iloc[0]
    assert (s.kind, s.snapshot_id, s.file_size_in_bytes, s.file_footer_size_in_bytes, s.blob_count) == \
        ("table", ORDERS_SNAPSHOT, 101827, 1098, 5)
    assert s.columns == ["order_id", "customer_id", "status", "amount", "order_date"]
    assert s.ndv == ["93817", "4983", "6", "42089", "365"]
    puffins = t.puffin_files().set_index("role")
    assert puffins.loc["deletion-vectors", "blobs"] == 4
    assert puffins.loc["deletion-vectors", "record_count"] == 27924
    assert puffins.loc["statistics", "blobs"] == 5
    pf = t.puffin(puffins.loc["statistics", "file_path"])
    assert [b.fields for b in pf.blobs] == [[1], [2], [3], [4], [5]]
    ev = wh.table("shop.events").statistics_files().iloc[0]
    assert (ev.file_size_in_bytes, ev.file_footer_size_in_bytes, ev.columns, ev.ndv) == \
        (32015, 517, ["kind", "event_id"], ["3", "247053"])


def test_v2_position_delete_file_listed_and_viewable(wh):
    t = wh.table("shop.legacy")
    deletes = t.delete_files()
    assert deletes.kind.tolist() == ["position-deletes"]
    assert deletes.file_format.tolist() == ["PARQUET"]
    assert deletes.record_count.tolist() == [2000]
    contents = t.delete_file_contents(deletes.file_path[0])
    data_file = t.data_files().file_path[0]
    assert len(contents) == 2000
    assert set(contents.file_path) == {data_file}
    assert contents.pos.is_monotonic_increasing
    positions = t.deletions(data_file)
    assert np.array_equal(positions, contents.pos.to_numpy())
    per_file = t.deleted_rows_per_file()
    assert per_file[["record_count", "deleted_rows", "live_rows", "position_delete_files"]].values.tolist() == \
        [[20000, 2000, 18000, 1]]
    assert t.puffin_files().empty
    # the spec's reserved position-delete columns get names and types in the bounds
    assert deletes.lower_bounds[0] == {"file_path": data_file, "pos": 3}
    assert deletes.upper_bounds[0] == {"file_path": data_file, "pos": 19993}


def test_v2_and_v3_side_by_side(wh):
    legacy, orders = wh.table("shop.legacy"), wh.table("shop.orders")
    both = {n: t.deleted_rows_per_file() for n, t in (("legacy", legacy), ("orders", orders))}
    assert int(both["legacy"].deleted_rows.sum()) == 2000
    assert int(both["orders"].deleted_rows.sum()) == 27924
    with_dv = both["orders"][both["orders"].dvs == 1]
    assert len(with_dv) == 4 and with_dv.file_path.str.contains("/00000-10-").all()
    assert with_dv.set_index("record_count").deleted_rows.sum() == 27924
    assert both["orders"][both["orders"].dvs == 0].deleted_rows.tolist() == [0, 0, 0, 0]
    dv_contents = orders.delete_file_contents(orders.dvs().file_path[0])
    assert len(dv_contents) == 27924
    assert list(dv_contents.columns) == list(legacy.delete_file_contents(legacy.delete_files().file_path[0]).columns)


def test_relocation_is_detected_and_reported(wh):
    t = wh.table("shop.orders")
    assert [f.code for f in t.findings] == ["iceberg.table-relocated"]
    assert t.mapper.prefixes == {f"{WRITTEN_ROOT}/shop/orders": f"{WAREHOUSE}/shop/orders"}
    loc = t.dvs().location[0]
    assert loc.startswith(f"{WAREHOUSE}/shop/orders/data/")


def test_explicit_relocate_map_and_metadata_path():
    t = Table.from_metadata(str(WAREHOUSE / "shop/orders/metadata/v7.metadata.json"),
                            relocate={WRITTEN_ROOT: str(WAREHOUSE)})
    assert t.findings == []  # the given map already covers the table
    assert live_rows(t) == 94_040
    # an older metadata file is a different table state: v3 holds only the first DELETE
    t3 = Table.from_metadata(str(WAREHOUSE / "shop/orders/metadata/v3.metadata.json"))
    assert t3.metadata.current_snapshot_id == 5121291212189297242
    assert int(t3.dvs().record_count.sum()) == 1257


def test_relocation_switched_off_points_at_the_written_root():
    t = Table.from_metadata(str(WAREHOUSE / "shop/orders/metadata/v7.metadata.json"), auto_relocate=False)
    assert t.locate(f"{WRITTEN_ROOT}/shop/orders/data/x.parquet") == f"{WRITTEN_ROOT}/shop/orders/data/x.parquet"
    assert len(t.files()) == 0  # nothing there: the manifest list is read where it was written, and said
    said = [f for f in t.check(read_files=False) if f.code == "iceberg.manifest-unreadable"]
    assert len(said) == 1 and "/data/warehouse/shop/orders/metadata/snap-6590999396394158857" in said[0].message


def test_path_mapper_rules():
    m = PathMapper({"/data/warehouse": "s3://b/wh", "/data/warehouse/shop/orders": "/copy/orders"})
    assert m("/data/warehouse/shop/events/x") == "s3://b/wh/shop/events/x"
    assert m("file:/data/warehouse/shop/orders/d/1.parquet") == "/copy/orders/d/1.parquet"  # longest prefix
    assert m("/data/warehouse2/x") == "/data/warehouse2/x"  # only whole path segments match
    assert m("s3a://other/x") == "s3://other/x"


def test_pyiceberg_table_opens(wh):
    from pyiceberg.table import StaticTable

    static = StaticTable.from_metadata(str(WAREHOUSE / "shop/events/metadata/v6.metadata.json"))
    t = Table.from_pyiceberg(static)
    assert t.metadata.current_snapshot_id == EVENTS_SNAPSHOT
    assert live_rows(t) == 244_122


def test_a_metrics_key_that_is_no_field_id_is_named_not_raised():
    """A damaged manifest's bounds or counts whose key decodes as null (table fuzzer, seed 50, case 5707):
    the column is named ``#None``, the other columns decode."""
    from puffin_explorer.iceberg.bounds import column_names, decode_bounds

    fields = {1: ("id", "long")}
    raw = [{"key": None, "value": b"\x01"}, {"key": 1, "value": (7).to_bytes(8, "little")}]
    assert decode_bounds(raw, fields) == {"#None": b"\x01", "id": 7}
    assert column_names([{"key": None, "value": 3}, {"key": 1, "value": 5}], fields) == {"#None": 3, "id": 5}


def test_a_date_or_time_bound_outside_pythons_dates_is_a_bad_bound_not_raised():
    """A timestamp bound of 2^63 - 1 microseconds (a sentinel some writers use, or damaged bytes) lies past year 9999:
    it is shown as a bad bound naming why, as a time of day past midnight is, and the doctor's column metrics run."""
    from puffin_explorer.iceberg.bounds import decode_bounds
    from puffin_explorer.iceberg.column_stats import ColumnPartial, columns_frame, decoded_maps

    fields = {1: ("ts", "timestamptz"), 2: ("d", "date"), 3: ("t", "time"), 4: ("ok", "timestamp")}
    top, low = (2 ** 63 - 1).to_bytes(8, "little", signed=True), (-2 ** 31).to_bytes(4, "little", signed=True)
    day = (86_400_000_000).to_bytes(8, "little")
    raw = [{"key": 1, "value": top}, {"key": 2, "value": low}, {"key": 3, "value": day},
           {"key": 4, "value": (1_700_000_000_000_000).to_bytes(8, "little")}]
    assert decode_bounds(raw, fields) == {
        "ts": "<bad bound: ffffffffffffff7f (timestamptz 9,223,372,036,854,775,807 microseconds from 1970-01-01 is "
              "outside the years 1 to 9999)>",
        "d": "<bad bound: 00000080 (date -2,147,483,648 days from 1970-01-01 is outside the years 1 to 9999)>",
        "t": "<bad bound: 0060d71d14000000 (time 86,400,000,000 microseconds is not within a day)>",
        "ok": dt.datetime(2023, 11, 14, 22, 13, 20)}
    record = {"value_counts": None, "null_value_counts": None, "nan_value_counts": None, "column_sizes": None,
              "lower_bounds": raw, "upper_bounds": raw}
    p = ColumnPartial()
    p.add(0, decoded_maps(record, fields))
    frame = columns_frame([p]).set_index("column")
    assert frame.loc["ok", "min"] == dt.datetime(2023, 11, 14, 22, 13, 20)
    assert frame.loc["ts", "files_with_bounds"] == 1 and frame.loc["ts", "max"].startswith("<bad bound: ffff")
