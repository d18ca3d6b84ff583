"""Answers the soak (``benchmarks/soak.py``) found wrong, on a copy of the reference warehouse.

A reader that opened ``shop.orders`` at an older metadata version (v5) and read its snapshot once asks
``check()`` after ``expire_snapshots`` deleted that snapshot's manifest list: the existence check met
the file gone and called it ``iceberg.file-missing`` ("does not exist"), as if the table were broken,
while the table had only moved on to v7.  It is the pinned snapshot's file that vanished.
"""

from __future__ import annotations

from pathlib import Path

from puffin_explorer.iceberg.table import Table

from _warehouse_fixtures import copy_warehouse

#: v5's current snapshot and its manifest list (not needed by v7's current snapshot).
V5_SNAPSHOT = 4843015790835191333
V5_MANIFEST_LIST = "orders/metadata/snap-4843015790835191333-1-6b045a58-7556-49ca-ac2d-a31e10ee71ca.avro"


def test_check_of_a_pinned_snapshot_whose_manifest_list_was_expired_names_it_vanished(tmp_path):
    shop = copy_warehouse(tmp_path) / "shop"
    t = Table.from_metadata(str(shop / "orders" / "metadata" / "v5.metadata.json"))
    assert t.metadata.current_snapshot_id == V5_SNAPSHOT
    before = t.delete_debt().deleted_rows  # the snapshot read once: its index is cached
    (shop / V5_MANIFEST_LIST).unlink()  # what expire_snapshots does to it
    findings = t.check()
    assert [f.code for f in findings if f.code == "iceberg.file-missing"] == []
    [gone] = [f for f in findings if f.code == "table.file-vanished"]
    assert gone.file.endswith(Path(V5_MANIFEST_LIST).name)
    assert f"of snapshot {V5_SNAPSHOT} (metadata v5.metadata.json) is gone" in gone.message
    assert "newer metadata: v7" in gone.message and "refresh()" in gone.hint
    assert t.delete_debt().deleted_rows == before  # the counts read before it vanished stand


def test_a_file_missing_from_the_newest_metadata_is_still_file_missing(tmp_path):
    shop = copy_warehouse(tmp_path) / "shop"
    t = Table.from_metadata(str(shop / "orders" / "metadata" / "v5.metadata.json"))
    t.delete_debt()
    for newer in ("v6", "v7"):  # no newer version: nothing says the table moved on
        (shop / "orders" / "metadata" / f"{newer}.metadata.json").unlink()
    (shop / V5_MANIFEST_LIST).unlink()
    codes = [f.code for f in t.check()]
    assert "iceberg.file-missing" in codes and "table.file-vanished" not in codes
