"""A snapshot is a promise: files the opened snapshot needs that vanish while the table is read (a maintenance
job deleting them under a reader holding older metadata) are ``table.file-vanished`` findings naming the file and
the snapshot, never smaller numbers; ``refresh()`` moves to the newest metadata.  On copies of the real fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from puffin_explorer import Warehouse
from puffin_explorer.delta import DeltaTable
from puffin_explorer.errors import FileVanishedError
from puffin_explorer.iceberg.table import Table
from puffin_explorer.iceberg.vanished import looks_moved

from _warehouse_fixtures import (ORDERS_DELETE_MANIFEST, ORDERS_DV_PUFFIN, ORDERS_MANIFEST_LIST, ORDERS_SNAPSHOT,
                                 WRITTEN_ROOT, copy_warehouse)

CODE = "table.file-vanished"
NOW = "2030-01-01"
#: shop.orders at v7: 8 data files, 121,964 rows, 4 DVs in one Puffin file deleting 27,924 of them.
ORDERS_RECORDS, ORDERS_DELETED = 121_964, 27_924
#: v5's current snapshot: 4 data files of 120,000 rows, 25,960 deleted.
V5_SNAPSHOT, V5_DELETED = 4843015790835191333, 25_960


@pytest.fixture
def shop(tmp_path) -> Path:
    return copy_warehouse(tmp_path) / "shop"


def _orders(shop: Path) -> Table:
    return Table.from_folder(str(shop / "orders"))


def _written(rel: str) -> str:
    return f"{WRITTEN_ROOT}/shop/{rel}"


def _vanished(findings) -> list:
    return [f for f in findings if f.code == CODE]


def test_a_delete_manifest_gone_before_it_is_read_makes_every_answer_partial(shop):
    t = _orders(shop)
    (shop / ORDERS_DELETE_MANIFEST).unlink()
    debt = t.delete_debt()  # the snapshot's only live delete manifest: its DVs' rows are not known, not 0
    assert (debt.records, debt.deleted_rows, debt.deleted_share, debt.partial) == (ORDERS_RECORDS, None, None, True)
    assert (debt.counted_deleted_rows, debt.coverage.covers) == (0, "3 of 4 manifests read")
    [f] = debt.findings
    assert (f.code, f.severity.value, f.file) == (CODE, "error", _written(ORDERS_DELETE_MANIFEST))
    assert f.message == (f"manifest {shop / ORDERS_DELETE_MANIFEST} (written as {_written(ORDERS_DELETE_MANIFEST)}) "
                         f"of snapshot {ORDERS_SNAPSHOT} (metadata v7.metadata.json) is gone: deleted rows, DVs and "
                         "delete files of the snapshot are unknown (what the other manifests hold is a lower bound)")
    assert "relocate" not in f.message and "relocate" not in f.hint
    assert debt.to_text().startswith("PARTIAL delete debt of orders: deleted rows unknown (see findings); records "
                                     "121,964; compaction candidates unknown (see findings) of 8 data files")
    per_file = t.deleted_rows_per_file()
    assert _vanished(per_file.attrs["findings"]) == [f]
    assert per_file.deleted_rows.isna().all() and per_file.record_count.sum() == ORDERS_RECORDS
    dvs = t.dvs()
    assert len(dvs) == 0 and dvs.attrs["findings"] == [f] and dvs.attrs["partial"] is True
    assert [x.code for x in t.check()] == [CODE]  # no summary mismatch from partial counts, no second finding
    h = t.health(now=NOW, list_files=False)
    assert (h.findings[0].code, h.findings[0].message) == (CODE, f.message)
    assert (h.metrics["deleted_rows"], h.metrics["live_rows"], h.metrics["records"]) == (None, None, ORDERS_RECORDS)
    assert h.finding("health.count-unknown").severity.value == "warning"
    assert [x.code for x in t.commit_deletes().findings] == [CODE]
    text = t._repr_mimebundle_()["text/plain"]
    assert CODE in text and "Traceback" not in text


def test_one_object_one_answer_when_a_manifest_vanishes_after_the_index_was_built(shop):
    t = _orders(shop)
    assert t.delete_debt().deleted_rows == ORDERS_DELETED  # the index is built and cached
    (shop / ORDERS_DELETE_MANIFEST).unlink()
    h = t.health(now=NOW, list_files=False)  # needs column metrics: reads the manifests again
    debt = t.delete_debt()
    assert h.metrics["deleted_rows"] == debt.deleted_rows == ORDERS_DELETED
    assert h.metrics["records"] == debt.records == ORDERS_RECORDS
    [f] = debt.findings
    assert h.findings[0].message == f.message
    assert f.message.endswith("is gone: its entries were read before it vanished, so the counts are whole; their "
                              "column metrics are missing")


def test_a_manifest_list_gone(shop):
    t = _orders(shop)
    (shop / ORDERS_MANIFEST_LIST).unlink()
    debt = t.delete_debt()
    assert (debt.records, debt.deleted_rows, debt.data_files, len(debt.per_file)) == (None, None, None, 0)
    [f] = debt.findings
    assert f.file == _written(ORDERS_MANIFEST_LIST)
    assert f.message.startswith(f"manifest list {shop / ORDERS_MANIFEST_LIST} (written as ")
    assert f.message.endswith(f"of snapshot {ORDERS_SNAPSHOT} (metadata v7.metadata.json) is gone: none of the "
                              "snapshot's files are listed, so every count of it is unknown")
    assert [x.code for x in t.check()] == [CODE]
    assert _vanished(t.health(now=NOW, list_files=False).findings)[0].message == f.message


def test_a_puffin_file_gone_read_dvs_read_dv_and_check_name_it_without_relocation_blame(shop):
    t = _orders(shop)
    dvs = t.dvs()
    assert sorted(dvs.record_count.tolist()) == [6889, 6953, 6977, 7105]
    (shop / ORDERS_DV_PUFFIN).unlink()
    with pytest.raises(FileVanishedError) as got:
        t.read_dvs()
    assert got.value.code == CODE and "relocate" not in str(got.value)
    assert str(got.value).startswith(f"{CODE}: Puffin file {shop / ORDERS_DV_PUFFIN} (written as "
                                     f"{_written(ORDERS_DV_PUFFIN)}) of snapshot {ORDERS_SNAPSHOT} (metadata "
                                     "v7.metadata.json) is gone: its DVs cannot be read")
    with pytest.raises(FileVanishedError):
        t.read_dv(dvs.iloc[0])
    [f] = _vanished(t.findings)
    assert f.file == _written(ORDERS_DV_PUFFIN)
    assert [x.code for x in t.check()] == [CODE]
    debt = t.delete_debt()  # counts come from the manifests, whole; the gone file is still said
    assert (debt.deleted_rows, debt.findings) == (ORDERS_DELETED, [f])
    cd = t.commit_deletes()
    assert [x.code for x in cd.findings] == [CODE] and cd.findings[0] is f


def test_an_older_metadata_file_names_the_newer_version_and_refresh_moves_to_it(shop):
    t = Table.from_metadata(str(shop / "orders" / "metadata" / "v5.metadata.json"))
    assert t.metadata.current_snapshot_id == V5_SNAPSHOT
    ml = t.metadata.snapshot(V5_SNAPSHOT).manifest_list
    Path(t.locate(ml)).unlink()  # expire_snapshots removed what only v5 needed
    debt = t.delete_debt()
    assert debt.deleted_rows is None  # not known: never a 0
    [f] = debt.findings
    assert f.message.endswith("; the table changed while it was read; newer metadata: v7")
    assert f"of snapshot {V5_SNAPSHOT} (metadata v5.metadata.json)" in f.message
    new = t.refresh()
    assert new is not t and new.metadata_location.endswith("/v7.metadata.json")
    assert new.metadata.current_snapshot_id == ORDERS_SNAPSHOT
    assert (new.delete_debt().deleted_rows, new.delete_debt().findings) == (ORDERS_DELETED, [])
    assert t.delete_debt().deleted_rows is None  # the old object stays pinned to its snapshot


def _write_v8(shop: Path, current: int) -> None:
    meta = shop / "orders" / "metadata"
    doc = json.loads((meta / "v7.metadata.json").read_text())
    doc["current-snapshot-id"] = current
    doc["refs"] = {"main": {"snapshot-id": current, "type": "branch"}}
    doc["last-updated-ms"] += 1000
    (meta / "v8.metadata.json").write_text(json.dumps(doc))


def test_refresh_shows_a_metadata_version_written_after_opening(shop):
    t = _orders(shop)
    assert t.delete_debt().deleted_rows == ORDERS_DELETED
    _write_v8(shop, V5_SNAPSHOT)  # a rollback committed by another writer
    assert t.delete_debt().deleted_rows == ORDERS_DELETED  # pinned: nothing changes under the open object
    new = t.refresh()
    assert new.metadata_location.endswith("/v8.metadata.json")
    assert new.metadata.current_snapshot_id == V5_SNAPSHOT
    debt = new.delete_debt()
    assert (len(debt.per_file), debt.records, debt.deleted_rows) == (4, 120_000, V5_DELETED)
    assert new.health(now=NOW, list_files=False).metrics["deleted_rows"] == V5_DELETED


def test_warehouse_refresh_opens_tables_at_their_new_state(shop):
    wh = Warehouse(str(shop.parent))
    assert wh.table("shop.orders").metadata.current_snapshot_id == ORDERS_SNAPSHOT
    _write_v8(shop, V5_SNAPSHOT)
    (shop / "orders" / "metadata" / "version-hint.text").write_text("8")
    assert wh.table("shop.orders").metadata.current_snapshot_id == ORDERS_SNAPSHOT  # the open table is kept
    wh.refresh()
    t = wh.table("shop.orders")
    assert t.metadata_location.endswith("/v8.metadata.json") and t.metadata.current_snapshot_id == V5_SNAPSHOT
    assert t.delete_debt().deleted_rows == V5_DELETED


DUCK = "engines/duckdb"
DUCK_PUFFIN = "2ce83c90-7f8c-4aab-b836-2b11df6c75a1-deletes.puffin"
DUCK_DATA = "01a20340-3d9a-7e40-86a7-16bff322275f.parquet"
DUCK_WRITTEN = "/data/engines/duckdb/warehouse/duck/dv_single"


def test_duckdb_table_with_its_puffin_file_gone(fixtures, tmp_path):
    root = tmp_path / "duckdb"
    shutil.copytree(fixtures / DUCK, root)
    table = root / "dv_single"
    t = Table.from_metadata(str(table / "metadata" / "v5.metadata.json"),
                            relocate={"/data/engines/duckdb/warehouse/duck": str(root)})
    assert t.read_dv(f"{DUCK_WRITTEN}/data/{DUCK_DATA}").cardinality == 22_889
    t = Table.from_metadata(str(table / "metadata" / "v5.metadata.json"),
                            relocate={"/data/engines/duckdb/warehouse/duck": str(root)})
    (table / "data" / DUCK_PUFFIN).unlink()
    with pytest.raises(FileVanishedError) as got:
        t.read_dv(f"{DUCK_WRITTEN}/data/{DUCK_DATA}")
    sid = t.metadata.current_snapshot_id
    assert str(got.value).startswith(f"{CODE}: Puffin file {table / 'data' / DUCK_PUFFIN} (written as "
                                     f"{DUCK_WRITTEN}/data/{DUCK_PUFFIN}) of snapshot {sid} (metadata "
                                     "v5.metadata.json) is gone")
    assert "relocate" not in str(got.value)
    debt = t.delete_debt()
    assert (debt.records, debt.deleted_rows) == (100_000, 22_889)
    assert [f.file for f in debt.findings] == [f"{DUCK_WRITTEN}/data/{DUCK_PUFFIN}"]
    codes = [f.code for f in t.check()]  # DuckDB's own habits are findings too (see test_engine_quirks)
    assert codes.count(CODE) == 1 and "iceberg.file-missing" not in codes and "iceberg.dv-unreadable" not in codes
    assert looks_moved(t, f"{DUCK_WRITTEN}/data/{DUCK_PUFFIN}") is False
    assert looks_moved(t, "/elsewhere/data/x.puffin") is True


LARGE = "engines/delta/delta-spark-table-with-dv-large"


def test_delta_dv_file_vacuumed_under_an_older_version_and_refresh(fixtures, tmp_path):
    root = tmp_path / "large"
    shutil.copytree(fixtures / LARGE, root)
    t = DeltaTable(str(root), version=1)
    [dv_file] = t.dv_files()["dv_file"].tolist()
    assert t.totals()["deleted_rows"] == 5
    Path(dv_file).unlink()  # VACUUM after version 3 replaced these DVs
    dvs = [t.read_dv(f) for f in t.live_files() if f.dv is not None]
    assert [dv.cardinality for dv in dvs] == [0] * len(dvs) and len(dvs) == 5
    f = dvs[0].findings[0]
    assert f.code == CODE
    assert f.message.endswith(f"DV file {dv_file} of version 1 is gone: its positions are not read (the "
                              "cardinality 1 in the log is counted, the positions are partial); the table changed "
                              "while it was read; newer log version: 4")
    assert {x.code for x in t.check()} == {CODE, "delta.dv-file-unreferenced"}  # version 3's DV file
    new = t.refresh()
    assert new is not t and (new.version, t.version) == (4, 1)
    assert new.totals()["live_rows"] == 1_993


@pytest.mark.parametrize("other", [1, 2])
def test_a_manifest_rewritten_after_the_index_leaves_its_column_metrics_out_and_says_so(shop, other):
    """The doctor reads the column metrics of an index built before from the manifests again: a manifest whose
    bytes changed meanwhile (to another data manifest's files, or to a delete manifest's; four entries each) is
    not summed, the counts stay the index's, and one finding names the manifest."""
    t = _orders(shop)
    whole = _orders(shop).health(now=NOW, list_files=False)
    ix = t.index()
    names = [m["manifest_path"].rsplit("/", 1)[1] for m in ix.manifests]
    shutil.copyfile(shop / "orders" / "metadata" / names[other], shop / "orders" / "metadata" / names[0])
    h = t.health(now=NOW, list_files=False)
    assert h.metrics["data_files"] == whole.metrics["data_files"] == 8
    assert h.metrics["records"] == whole.metrics["records"] == ORDERS_RECORDS
    [f] = [f for f in h.findings if f.code == "health.snapshot-unreadable"]
    assert f.message == ("the column metrics of 1 manifest of the current snapshot could not be read again "
                         f"({names[0]}: read again for its column metrics it holds other files than it held when "
                         "read before; its files' metrics are left out); their files are left out of the column "
                         "checks")
    # the value counts of the other manifest's 4 files (120,000 rows) only; all 8 files hold 121,964
    assert h.frames["columns"]["values"].tolist() == [120_000] * 5
    assert whole.frames["columns"]["values"].tolist() == [ORDERS_RECORDS] * 5
