"""The fixture warehouse uploaded to a real S3-compatible server (SeaweedFS on loopback)."""

from __future__ import annotations

import re

import pytest

from puffin_explorer.iceberg import Table, Warehouse

try:
    from _warehouse_fixtures import (ORDERS_DV_PUFFIN, WAREHOUSE, WRITTEN_ROOT, copy_warehouse,
                                     read_delete_files_csv)
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (ORDERS_DV_PUFFIN, WAREHOUSE, WRITTEN_ROOT, copy_warehouse,
                                           read_delete_files_csv)

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def s3_warehouse(s3_server):
    """``s3://<bucket>/wh/warehouse``: the fixture warehouse, byte for byte."""
    return s3_server.upload(WAREHOUSE, "wh/warehouse")


def test_warehouse_lists_and_reads_over_s3(s3_server, s3_warehouse):
    wh = Warehouse(s3_warehouse, storage_options=s3_server.storage_options)
    assert wh.table_names() == ["shop.events", "shop.legacy", "shop.orders"]
    t = wh.table("shop.orders")
    bucket_root = s3_warehouse[len("s3://"):]
    assert t.mapper.prefixes == {f"{WRITTEN_ROOT}/shop/orders": f"s3://{bucket_root}/shop/orders"}
    dvs = t.dvs()
    got = sorted((r.file_path, r.referenced_data_file, int(r.content_offset), int(r.content_size_in_bytes),
                  int(r.record_count)) for r in dvs.itertuples())
    assert got == read_delete_files_csv("orders_delete_files.csv")
    assert set(dvs.location) == {f"s3://{bucket_root}/shop/{ORDERS_DV_PUFFIN}"}
    files = t.files()
    assert int(files[files.kind == "data"].record_count.sum() - files[files.kind == "dv"].record_count.sum()) == 94_040
    legacy = wh.table("shop.legacy")
    assert len(legacy.delete_file_contents(legacy.delete_files().file_path[0])) == 2000


@pytest.mark.parametrize("name", ["shop.orders", "shop.events", "shop.legacy"])
def test_check_is_clean_over_s3(s3_server, s3_warehouse, name):
    assert Warehouse(s3_warehouse, storage_options=s3_server.storage_options).table(name).check() == []


def test_dv_read_by_range_is_one_ranged_get(s3_server, s3_warehouse):
    t = Warehouse(s3_warehouse, storage_options=s3_server.storage_options).table("shop.events")
    row = t.dvs().iloc[0]
    with s3_server.record_requests() as wire:
        dv = t.read_dv(row)
    assert dv.cardinality == 55_878
    gets = [r for r in wire if r.operation == "GetObject"]
    assert len(gets) == 1 and gets[0].status == 206
    assert gets[0].bytes_sent == 16_161
    assert gets[0].content_range.startswith("bytes 4-16164/")
    assert [r.operation for r in wire] == ["GetObject"]  # no HEAD, no footer read


def test_listing_dvs_reads_only_delete_manifests(s3_server, s3_warehouse):
    t = Warehouse(s3_warehouse, storage_options=s3_server.storage_options).table("shop.orders")
    with s3_server.record_requests() as wire:
        t.dvs()
    fetched = sorted(r.url.rsplit("/", 1)[-1].split("?")[0] for r in wire if r.operation == "GetObject")
    # the manifest list, then the two delete manifests; no data manifest, no Puffin file
    assert fetched == ["da354e0d-4a95-484a-b518-c198966d2374-m0.avro", "da354e0d-4a95-484a-b518-c198966d2374-m2.avro",
                       "snap-6590999396394158857-1-da354e0d-4a95-484a-b518-c198966d2374.avro"]


def test_relocate_map_from_local_copy_to_s3(s3_server, tmp_path):
    """Metadata from a local copy, data and Puffin files on S3: an explicit prefix map joins them."""
    url = s3_server.upload(WAREHOUSE / "shop" / "events", "moved/events")
    local = copy_warehouse(tmp_path)
    t = Table.from_metadata(str(local / "shop/events/metadata/v6.metadata.json"),
                            storage_options=s3_server.storage_options,
                            relocate={f"{WRITTEN_ROOT}/shop/events/data": f"{url}/data"})
    assert t.dvs().location.iloc[0].startswith(f"{url}/data/")
    assert t.read_dv(t.dvs().iloc[0]).cardinality == 55_878
    assert t.check() == []


def test_missing_object_on_s3_is_a_finding(s3_server, s3_warehouse):
    url = s3_server.upload(WAREHOUSE / "shop" / "orders", "broken/shop/orders")
    s3_server.fs.rm_file(f"{url[len('s3://'):]}/{ORDERS_DV_PUFFIN.split('/', 1)[1]}")
    s3_server.fs.invalidate_cache()
    t = Warehouse(url.rsplit("/shop/orders", 1)[0], storage_options=s3_server.storage_options).table("shop.orders")
    findings = t.check()
    assert [f.code for f in findings] == ["table.file-vanished"]  # the opened snapshot needs it: gone since
    assert findings[0].file == f"{WRITTEN_ROOT}/shop/{ORDERS_DV_PUFFIN}"


def test_cli_over_s3(s3_server, s3_warehouse, capsys):
    import json

    from puffin_explorer.cli import main

    opts = json.dumps(s3_server.storage_options)
    assert main(["--storage-options", opts, "table", s3_warehouse, "check", "--table", "shop.events"]) == 0
    assert capsys.readouterr().out.strip() == "0 findings, 0 errors"
    assert main(["table", f"{s3_warehouse}/shop/events", "dvs", "--format", "json",
                 "--storage-options", opts]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["content_offset"], r["content_size_in_bytes"], r["record_count"]) for r in rows] == [(4, 16161, 55878)]
    assert rows[0]["location"].startswith(s3_warehouse + "/shop/events/data/")


def test_cards_over_s3(s3_server, s3_warehouse):
    wh = Warehouse(s3_warehouse, storage_options=s3_server.storage_options)
    with s3_server.record_requests() as wire:
        df = wh.summary()
    assert df.live_rows.tolist() == [244_122, 18_000, 94_040] and df.dvs.tolist() == [1, 0, 4]
    keys = [r.url.split("?")[0].rsplit("/", 1)[-1] for r in wire if r.operation == "GetObject"]

    def kind(key: str) -> str:
        if key.endswith((".metadata.json", "version-hint.text")):
            return "metadata"
        if key.startswith("snap-"):
            return "manifest list"
        if re.search(r"-m\d+\.avro$", key):
            return "manifest"
        return "position deletes" if key.endswith("-deletes.parquet") else key

    # deleted rows are the deletes of live data files: the manifests of tables whose lists name delete
    # manifests, and the v2 table's position-delete file; never a Puffin file, never a data file
    assert sorted({kind(k) for k in keys}) == ["manifest", "manifest list", "metadata", "position deletes"], keys
    orders = wh.table("shop.orders")
    html = orders.to_html()
    assert "Iceberg table" in html and "94,040" in html and "Delete debt" in html
    c = orders.commit_deletes()
    assert c.total == 1_964 and c.dv_bytes_read == 8 * 8_232
    assert wh.table("shop.events").snapshot().files_removed().record_count.tolist() == [32_785]
