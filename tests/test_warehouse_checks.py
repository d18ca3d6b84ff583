"""``Table.check()`` on the fixture warehouse (clean) and on copies damaged in one known way each."""

from __future__ import annotations

from pathlib import Path

import pytest

from puffin_explorer.iceberg import Warehouse, findings_frame

try:
    from _warehouse_fixtures import (ORDERS_CURRENT_METADATA, ORDERS_DV_PUFFIN, ORDERS_STATS, WAREHOUSE,
                                     WRITTEN_ROOT, copy_warehouse, edit_json, rewrite_avro,
                                     rewrite_orders_delete_manifest)
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (ORDERS_CURRENT_METADATA, ORDERS_DV_PUFFIN, ORDERS_STATS, WAREHOUSE,
                                           WRITTEN_ROOT, copy_warehouse, edit_json, rewrite_avro,
                                           rewrite_orders_delete_manifest)

DV_WRITTEN = f"{WRITTEN_ROOT}/shop/{ORDERS_DV_PUFFIN}"
STATS_WRITTEN = f"{WRITTEN_ROOT}/shop/{ORDERS_STATS}"
BUCKET1_DATA = (f"{WRITTEN_ROOT}/shop/orders/data/customer_id_bucket=1/"
                "00000-10-c9a0f6d8-bc79-45b4-884c-1caf32abe7eb-0-00003.parquet")


def codes(findings) -> list[str]:
    return sorted(f.code for f in findings)


@pytest.mark.parametrize("name", ["shop.orders", "shop.events", "shop.legacy"])
def test_fixture_tables_are_clean(name):
    assert Warehouse(str(WAREHOUSE)).table(name).check() == []


def test_every_snapshot_of_orders_is_clean():
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    for sid in t.snapshots().snapshot_id:
        assert t.check(int(sid)) == [], sid


@pytest.fixture
def shop(tmp_path) -> Path:
    return copy_warehouse(tmp_path) / "shop"


def orders(shop: Path):
    return Warehouse(str(shop.parent)).table("shop.orders")


def _entry_for(records, data_file):
    return next(r for r in records if r["data_file"]["referenced_data_file"] == data_file)


def test_manifest_pointing_at_the_wrong_offset(shop):
    rewrite_orders_delete_manifest(shop, lambda recs: _entry_for(recs, BUCKET1_DATA)["data_file"].update(
        content_offset=8240))
    findings = orders(shop).check()
    mismatch = [f for f in findings if f.code == "iceberg.dv-offset-mismatch"]
    assert len(mismatch) == 1
    f = mismatch[0]
    assert (f.file, f.offset, f.length, f.severity.value) == (DV_WRITTEN, 8240, 8232, "error")
    assert "is at offset 8240 length 8232; the Puffin footer has no blob at offset 8240" in f.message
    assert "(blobs at 4+8232, 8236+8232, 16468+8232, 24700+8232)" in f.message
    # the 8,232 bytes read from there are not the DV: the DV reader says so, anchored in the Puffin file
    others = [f for f in findings if f.code != "iceberg.dv-offset-mismatch"]
    assert others and all(f.file == DV_WRITTEN for f in others)
    assert all(f.offset is None or 8240 <= f.offset < 8240 + 8232 for f in others)
    # nothing else in the table is reported
    assert {f.file for f in findings} == {DV_WRITTEN}


def test_manifest_record_count_disagrees_with_the_dv(shop):
    rewrite_orders_delete_manifest(shop, lambda recs: _entry_for(recs, BUCKET1_DATA)["data_file"].update(
        record_count=7000))
    findings = orders(shop).check()
    summary = [f for f in findings if f.code == "iceberg.summary-mismatch"]
    assert [f.message for f in summary] == [
        "snapshot 6590999396394158857 summary says total-position-deletes 27924 but its manifests hold 27819"]
    findings = [f for f in findings if f.code != "iceberg.summary-mismatch"]
    assert codes(findings) == ["iceberg.dv-cardinality-mismatch", "iceberg.dv-cardinality-property-mismatch"]
    by_code = {f.code: f for f in findings}
    assert by_code["iceberg.dv-cardinality-mismatch"].message == \
        "manifest record_count 7000 but the DV at offset 8236 holds 7105 positions"
    assert by_code["iceberg.dv-cardinality-property-mismatch"].message == \
        "manifest record_count 7000 but blob 1 property cardinality 7105"
    assert {(f.file, f.offset, f.length) for f in findings} == {(DV_WRITTEN, 8236, 8232)}


def test_dv_for_a_file_that_is_not_live_and_two_dvs_for_one_file(shop):
    bucket0 = BUCKET1_DATA.replace("customer_id_bucket=1", "customer_id_bucket=0").replace("-00003", "-00002")
    gone = f"{WRITTEN_ROOT}/shop/orders/data/customer_id_bucket=9/gone.parquet"

    def change(recs):
        _entry_for(recs, BUCKET1_DATA)["data_file"]["referenced_data_file"] = bucket0
        next(r for r in recs if r["data_file"]["content_offset"] == 16468)["data_file"]["referenced_data_file"] = gone

    rewrite_orders_delete_manifest(shop, change)
    findings = orders(shop).check()
    # bucket 1's DV now claims bucket 0's file, which has fewer rows than bucket 1's highest deleted position
    assert codes(findings) == ["iceberg.dv-duplicate", "iceberg.dv-orphan", "iceberg.dv-position-out-of-range", "iceberg.dv-reference-mismatch",
                               "iceberg.dv-reference-mismatch"]
    by_code = {f.code: f for f in findings}
    assert by_code["iceberg.dv-orphan"].offset == 16468
    assert gone in by_code["iceberg.dv-orphan"].message
    assert by_code["iceberg.dv-duplicate"].message.startswith(f"2 DVs for data file {bucket0} in snapshot 6590999396394158857")


def test_dv_position_beyond_the_data_file(shop):
    # the first append's manifest, still in the current snapshot, claims bucket 1's file has only 100 rows
    data_manifest = shop / "orders/metadata/2e503939-dedb-4b87-a3ed-4de41fab2d1e-m0.avro"
    assert _holds(data_manifest, BUCKET1_DATA)

    def change(recs):
        for r in recs:
            if r["data_file"]["file_path"] == BUCKET1_DATA:
                r["data_file"]["record_count"] = 100
        return recs

    new_len = rewrite_avro(data_manifest, change)
    rewrite_avro(shop / "orders/metadata/snap-6590999396394158857-1-da354e0d-4a95-484a-b518-c198966d2374.avro",
                 lambda recs: [dict(r, manifest_length=new_len) if r["manifest_path"].endswith(data_manifest.name)
                               else r for r in recs])
    findings = orders(shop).check()
    assert codes(findings) == ["iceberg.dv-position-out-of-range", "iceberg.summary-mismatch"]
    findings = [f for f in findings if f.code != "iceberg.summary-mismatch"]
    f = findings[0]
    assert (f.file, f.offset, f.length) == (DV_WRITTEN, 8236, 8232)
    assert f.message.endswith(f"{BUCKET1_DATA} has only 100 rows")


def _holds(manifest: Path, data_file: str) -> bool:
    import fastavro

    with open(manifest, "rb") as fh:
        return any(r["data_file"]["file_path"] == data_file for r in fastavro.reader(fh))


def test_missing_puffin_file(shop):
    (shop / ORDERS_DV_PUFFIN).unlink()
    findings = orders(shop).check()
    assert codes(findings) == ["table.file-vanished"]  # a file of the snapshot, gone from the table's own folder
    assert findings[0].file == DV_WRITTEN
    assert str(shop / ORDERS_DV_PUFFIN) in findings[0].message


def test_missing_data_file_and_manifest_size(shop):
    data = shop / "orders/data/customer_id_bucket=2/00000-21-5bda5967-7808-4966-bb27-4f1a594d8228-00003.parquet"
    data.unlink()
    rewrite_avro(shop / "orders/metadata/snap-6590999396394158857-1-da354e0d-4a95-484a-b518-c198966d2374.avro",
                 lambda recs: [dict(r, manifest_length=8000) if r["manifest_path"].endswith("-m1.avro") else r
                               for r in recs])
    findings = orders(shop).check()
    assert codes(findings) == ["iceberg.file-missing", "iceberg.file-size-mismatch"]
    by_code = {f.code: f for f in findings}
    assert by_code["iceberg.file-missing"].file.endswith("customer_id_bucket=2/00000-21-5bda5967-7808-4966-bb27-4f1a594d8228-00003.parquet")
    assert by_code["iceberg.file-size-mismatch"].message.startswith("manifest list says manifest_length 8000 but ")
    assert by_code["iceberg.file-size-mismatch"].message.endswith("da354e0d-4a95-484a-b518-c198966d2374-m1.avro has 8535 bytes")


def test_stats_file_whose_size_disagrees(shop):
    def change(md):
        md["statistics"][0]["file-size-in-bytes"] = 101800
        md["statistics"][0]["file-footer-size-in-bytes"] = 1000
    edit_json(shop / ORDERS_CURRENT_METADATA, change)
    findings = orders(shop).check()
    assert codes(findings) == ["iceberg.stats-file-size-mismatch", "iceberg.stats-footer-size-mismatch"]
    by_code = {f.code: f for f in findings}
    assert by_code["iceberg.stats-file-size-mismatch"].message == \
        "metadata file-size-in-bytes 101800 but the file has 101827 bytes"
    assert by_code["iceberg.stats-footer-size-mismatch"].message == \
        "metadata file-footer-size-in-bytes 1000 but the footer is 1098 bytes"
    assert (by_code["iceberg.stats-footer-size-mismatch"].offset, by_code["iceberg.stats-footer-size-mismatch"].length) == \
        (101827 - 1098, 1098)
    assert {f.file for f in findings} == {STATS_WRITTEN}


def test_stats_blob_metadata_snapshot_and_field_disagree(shop):
    def change(md):
        s = md["statistics"][0]
        s["blob-metadata"][2]["properties"]["ndv"] = "7"
        s["blob-metadata"][4]["fields"] = [99]
        md["statistics"].append(dict(s, **{"snapshot-id": 1234}))
    edit_json(shop / ORDERS_CURRENT_METADATA, change)
    findings = orders(shop).check()
    assert codes(findings) == sorted(["iceberg.stats-blob-mismatch", "iceberg.stats-blob-mismatch", "iceberg.stats-field-unknown",
                                      "iceberg.stats-blob-mismatch", "iceberg.stats-blob-mismatch", "iceberg.stats-field-unknown",
                                      "iceberg.stats-snapshot-missing"])
    messages = {f.message for f in findings}
    assert "blob 2: metadata properties {'ndv': '7'} but footer properties {'ndv': '6'}" in messages
    assert "blob 4: metadata fields [99] but footer fields [5]" in messages
    assert "table statistics file is for snapshot 1234, which the table does not have" in messages
    frame = findings_frame(findings)
    assert list(frame.columns) == ["severity", "code", "file", "offset", "length", "message", "hint"]
    assert len(frame) == 7


def test_missing_stats_file(shop):
    (shop / ORDERS_STATS).unlink()
    findings = orders(shop).check()
    assert codes(findings) == ["iceberg.file-missing"]
    assert findings[0].file == STATS_WRITTEN


def test_unreadable_manifest_list_is_a_finding_not_a_traceback(shop):
    (shop / "orders/metadata/snap-6590999396394158857-1-da354e0d-4a95-484a-b518-c198966d2374.avro").write_bytes(
        b"Obj\x01garbage")
    findings = orders(shop).check()
    assert codes(findings) == ["iceberg.manifest-unreadable"]
    assert findings[0].file.endswith("snap-6590999396394158857-1-da354e0d-4a95-484a-b518-c198966d2374.avro")
    assert "cannot read Avro" in findings[0].message


def test_snapshot_summary_disagrees_with_manifests(shop):
    def change(md):
        snap = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
        snap["summary"]["total-records"] = "121000"
        snap["summary"]["total-position-deletes"] = "27000"
    edit_json(shop / ORDERS_CURRENT_METADATA, change)
    findings = orders(shop).check()
    assert [(f.code, f.severity.value, f.message) for f in findings] == [
        ("iceberg.summary-mismatch", "warning",
         "snapshot 6590999396394158857 summary says total-records 121000 but its manifests hold 121964"),
        ("iceberg.summary-mismatch", "warning",
         "snapshot 6590999396394158857 summary says total-position-deletes 27000 but its manifests hold 27924"),
    ]


def test_check_reports_progress():
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    calls = []
    t.check(progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 4), (4, 4)]  # one Puffin file holds all four DVs


def test_check_and_read_dvs_draw_a_bar_when_asked_and_none_by_default_off_a_terminal(capsys):
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    plain = (t.check(), [dv.cardinality for dv in t.read_dvs()])
    assert capsys.readouterr().err == ""  # four DVs, and stderr is not a terminal
    assert (t.check(progress=True), [dv.cardinality for dv in t.read_dvs(progress=True)]) == plain
    err = capsys.readouterr().err
    assert "shop.orders: DVs checked:   0%|          | 0/4 [" in err
    assert "shop.orders: DVs read:   0%|          | 0/4 [" in err
    assert plain[1] == [int(c) for c in t.dvs().record_count]


def test_partition_statistics_files(shop):
    import pyarrow as pa
    import pyarrow.parquet as pq

    stats = shop / "orders/metadata/partition-stats-6590999396394158857.parquet"
    pq.write_table(pa.table({"partition": [0, 1, 2, 3], "data_record_count": [1, 2, 3, 4]}), stats)
    size = stats.stat().st_size

    def change(md):
        md["partition-statistics"] = [
            {"snapshot-id": 6590999396394158857, "file-size-in-bytes": size,
             "statistics-path": f"{WRITTEN_ROOT}/shop/orders/metadata/{stats.name}"},
            {"snapshot-id": 6590999396394158857, "file-size-in-bytes": size + 1,
             "statistics-path": f"{WRITTEN_ROOT}/shop/orders/metadata/{stats.name}"},
            {"snapshot-id": 42, "file-size-in-bytes": 10,
             "statistics-path": f"{WRITTEN_ROOT}/shop/orders/metadata/partition-stats-42.parquet"},
        ]
    edit_json(shop / ORDERS_CURRENT_METADATA, change)
    t = orders(shop)
    listed = t.statistics_files()
    assert listed.kind.tolist() == ["table", "partition", "partition", "partition"]
    assert listed.file_size_in_bytes.tolist()[1:] == [size, size + 1, 10]
    findings = t.check()
    assert [(f.code, f.message) for f in findings] == [
        ("iceberg.stats-file-size-mismatch", f"metadata file-size-in-bytes {size + 1} but the file has {size} bytes"),
        ("iceberg.stats-snapshot-missing", "partition statistics file is for snapshot 42, which the table does not have"),
        ("iceberg.file-missing", f"partition statistics file {shop}/orders/metadata/partition-stats-42.parquet does not exist"),
    ]


def test_huge_dv_length_in_a_manifest_is_checked_before_reading(shop):
    rewrite_orders_delete_manifest(shop, lambda recs: _entry_for(recs, BUCKET1_DATA)["data_file"].update(
        content_size_in_bytes=10**12))
    t = orders(shop)
    findings = t.check()
    assert codes(findings) == ["iceberg.dv-length-mismatch", "iceberg.dv-unreadable"]
    unreadable = next(f for f in findings if f.code == "iceberg.dv-unreadable")
    assert (unreadable.offset, unreadable.length) == (8236, 10**12)
    assert "DV range [8,236, 1,000,000,008,236) from the manifest is beyond the end of the file (34,239 bytes)" \
        in unreadable.message
    from puffin_explorer.errors import InvalidFileError

    with pytest.raises(InvalidFileError, match="beyond the end of the file"):
        t.read_dv(t.dvs().iloc[1])


def test_dv_references_are_reported_in_manifest_order(shop):
    """An orphan DV, a DV without referenced_data_file and one without a range: one finding each,
    in the order of the manifest's entries (the metadata-only check already names the first two)."""
    gone = f"{WRITTEN_ROOT}/shop/orders/data/gone.parquet"
    bucket2 = BUCKET1_DATA.replace("customer_id_bucket=1", "customer_id_bucket=2").replace("-00003", "-00001")

    def change(recs):
        next(r for r in recs if r["data_file"]["content_offset"] == 4)["data_file"]["referenced_data_file"] = gone
        _entry_for(recs, BUCKET1_DATA)["data_file"]["referenced_data_file"] = None
        _entry_for(recs, bucket2)["data_file"].update(content_offset=None, content_size_in_bytes=None)

    rewrite_orders_delete_manifest(shop, change)
    t = orders(shop)
    manifest = next(m for m in t.source.manifest_records() if m.get("content") == 1)["manifest_path"]
    references = [
        ("iceberg.dv-orphan", DV_WRITTEN, 4, 8232,
         f"DV at offset 4 references {gone}, which is not a live data file of snapshot 6590999396394158857"),
        ("iceberg.dv-no-referenced-file", DV_WRITTEN, 8236, 8232, f"DV entry in {manifest} has no referenced_data_file"),
    ]
    as_tuples = lambda fs: [(f.code, f.file, f.offset, f.length, f.message) for f in fs]  # noqa: E731
    assert as_tuples(t.check(read_files=False)) == references
    full = as_tuples(t.check())
    assert full[:2] == references
    assert [x[:4] for x in full[2:]] == [("iceberg.dv-reference-mismatch", DV_WRITTEN, 4, 8232),
                                         ("iceberg.dv-missing-range", DV_WRITTEN, None, None)]
    assert full[3][4] == f"DV entry for {bucket2} in {manifest} has no content_offset/content_size_in_bytes"
