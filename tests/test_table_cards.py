"""Warehouses, tables, snapshots and commits as rich objects: exact values from the fixture warehouse
(moved from /data/warehouse), damaged copies of it, and the demo warehouse when it was built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from puffin_explorer import Warehouse
from puffin_explorer.display import MAX_HTML_BYTES
from puffin_explorer.regions import FindingList

from conftest import ROOT

try:
    from _warehouse_fixtures import (EVENTS_SNAPSHOT, ORDERS_DELETE_MANIFEST, ORDERS_MANIFEST_LIST, ORDERS_SNAPSHOT,
                                     WAREHOUSE, copy_warehouse)
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (EVENTS_SNAPSHOT, ORDERS_DELETE_MANIFEST, ORDERS_MANIFEST_LIST,
                                           ORDERS_SNAPSHOT, WAREHOUSE, copy_warehouse)

ORDERS_PARENTS = [None, 4894008605646771791, 5121291212189297242, 245724947423502827, 4843015790835191333]


@pytest.fixture(scope="module")
def wh():
    return Warehouse(str(WAREHOUSE))


def test_warehouse_summary_reads_metadata_and_manifest_lists_only(wh):
    df = wh.summary()
    assert df.table.tolist() == ["shop.events", "shop.legacy", "shop.orders"]
    assert df.live_rows.tolist() == [244_122, 18_000, 94_040]
    assert df.deleted_rows.tolist() == [55_878, 2_000, 27_924]
    assert df.records.tolist() == [300_000, 20_000, 121_964]
    assert df.data_files.tolist() == [1, 1, 8]
    assert df.dvs.tolist() == [1, 0, 4]
    assert df.position_delete_files.tolist() == [0, 1, 0]
    assert df.equality_delete_files.tolist() == [0, 0, 0]
    assert df.stats_files.tolist() == [1, 0, 1]
    assert df.snapshots.tolist() == [4, 2, 5]
    assert df.health.tolist() == ["compact", "ok", "compact"]
    assert df.current_snapshot_id.tolist() == [EVENTS_SNAPSHOT, 967745326372800446, ORDERS_SNAPSHOT]
    assert str(df.current_snapshot_id.dtype) == "Int64"
    read = {p.rsplit("/", 1)[-1] for p in _files_read(wh)}
    assert all(n.endswith((".metadata.json", ".text")) or n.startswith("snap-") for n in read), read


def _files_read(wh):
    return [t.metadata_location for t in wh._tables.values()] + [
        t.snapshot().manifest_list for t in wh._tables.values()]


def test_warehouse_card_html_and_text(wh):
    html, text = wh.to_html(), wh.to_text()
    assert "<script" not in html and len(html.encode()) < MAX_HTML_BYTES
    assert "<details open><summary>shop" in html
    assert "shop.orders" in html and "94,040" in html and "22.9%" in html
    assert "shop.legacy  2      2     18,000    2,000  10.0%           1        0 / 1 / 0      0" in text


def test_snapshot_ids_are_exact_nullable_integers(wh):
    t = wh.table("shop.orders")
    snaps = t.snapshots()
    assert str(snaps.parent_snapshot_id.dtype) == "Int64"
    assert [None if v is None or v is np.nan or str(v) == "<NA>" else int(v) for v in snaps.parent_snapshot_id] \
        == ORDERS_PARENTS
    joined = snaps.merge(snaps, left_on="parent_snapshot_id", right_on="snapshot_id", suffixes=("", "_parent"))
    assert len(joined) == 4
    tl = t.timeline()
    assert tl.parent_snapshot_id.astype(object).where(tl.parent_snapshot_id.notna(), None).tolist() == ORDERS_PARENTS
    assert tl.live_rows.tolist() == [120_000, 118_743, 112_917, 94_040, 94_040]
    assert tl.deleted_rows.tolist() == [0, 1_257, 7_083, 25_960, 27_924]
    assert tl.first_row_id.tolist() == [0, 120_000, 120_000, 120_000, 120_000]
    assert t.next_row_id == 121_964


def test_snapshot_object_keeps_metadata_attributes_and_lists_changes(wh):
    t = wh.table("shop.orders")
    s = t.snapshot(ORDERS_SNAPSHOT)
    assert s.snapshot_id == ORDERS_SNAPSHOT and s.operation == "overwrite" and s.sequence_number == 5
    assert s.summary["added-dvs"] == "4" and s.first_row_id == 120_000 and s.added_rows == 1_964
    assert s.parent.snapshot_id == 4843015790835191333 and s.parent.parent.sequence_number == 3
    added, removed = s.files_added(), s.files_removed()
    assert sorted(added[added.kind == "data"].record_count.tolist()) == [472, 483, 502, 507]
    assert sorted(added[added.kind == "dv"].record_count.tolist()) == [6_889, 6_953, 6_977, 7_105]
    assert sorted(removed.record_count.tolist()) == [6_382, 6_475, 6_481, 6_622]
    assert set(removed.kind) == {"dv"}
    m = s.manifest_files()
    assert m.written_here.sum() == 3 and len(m) == 4
    text = s.to_text()
    assert f"snapshot {ORDERS_SNAPSHOT} of shop.orders: overwrite, sequence 5" in text
    html = s.to_html()
    assert "Files added and removed" in html and "+8 −4" in html


def test_a_data_file_has_no_data_file_cell_in_the_snapshot_view(wh):
    """A data file references no data file: its cell is empty, not the text of a missing value."""
    s = wh.table("shop.orders").snapshot(ORDERS_SNAPSHOT)
    changes = s.changes()
    assert changes[changes.kind == "data"].referenced_data_file.isna().all()
    html = s.to_html()
    assert ">nan<" not in html.lower() and ">none<" not in html.lower()


def test_commit_deletes_is_the_dv_difference(wh):
    t = wh.table("shop.events")
    first, second, third = [int(x) for x in t.timeline().snapshot_id[1:]]
    c = t.commit_deletes(second)
    df = c.to_pandas()
    assert df[["replaced_cardinality", "cardinality", "added_positions", "first_added", "last_added"]] \
        .iloc[0].tolist() == [3_093, 32_785, 29_692, 150_000, 180_000]
    assert c.dv_bytes_read == 6_375 + 6_258   # the two DVs compared, nothing else
    new, old = t.read_dv(t.snapshot(second).files_added().iloc[0].to_dict()), None
    pos = c.positions(df.data_file[0])
    assert len(pos) == 29_692 and np.all(np.isin(pos, new.positions()))
    assert c.total == 29_692 and c.findings == []
    first_commit = t.commit_deletes(first).to_pandas()
    assert first_commit.added_positions.tolist() == [3_093] and first_commit.replaced_file.isna().all()
    last = t.commit_deletes(third)
    assert last.total == 55_878 - 32_785
    orders = wh.table("shop.orders").commit_deletes()
    assert sorted(orders.to_pandas().added_positions.tolist()) == [472, 483, 502, 507]
    assert orders.total == 1_964 and orders.dv_bytes_read == 8 * 8_232
    html = orders.to_html()
    assert "<svg" in html and "1,964" in html and len(html.encode()) < MAX_HTML_BYTES
    assert "1,964 rows deleted in 4 data files; 65,856 DV bytes read" in orders.to_text()


def test_commit_deletes_of_a_position_delete_file(wh):
    legacy = wh.table("shop.legacy")
    c = legacy.commit_deletes()
    df = c.to_pandas()
    assert df.kind.tolist() == ["position-deletes"] and df.added_positions.tolist() == [2_000]
    assert c.positions(df.data_file[0])[:3].tolist() == [3, 13, 23] and c.dv_bytes_read == 0


def test_delete_debt(wh):
    d = wh.table("shop.orders").delete_debt(threshold=0.2)
    assert (d.records, d.deleted_rows) == (121_964, 27_924)
    part = d.per_partition()
    assert part.partition.tolist() == [f"customer_id_bucket={i}" for i in range(4)]
    assert part.deleted_rows.tolist() == [6_977, 7_105, 6_889, 6_953]
    assert part.data_files.tolist() == [2, 2, 2, 2] and part.candidates.tolist() == [1, 1, 1, 1]
    assert d.candidates().deleted_rows.tolist() == [7_105, 6_953, 6_977, 6_889]
    assert len(wh.table("shop.orders").delete_debt(threshold=0.235).candidates()) == 1
    assert d.candidate_count == 4 and d.candidates(limit=2).deleted_rows.tolist() == [7_105, 6_953]
    assert d.candidates(limit=0).empty and d.candidates(limit=9).equals(d.candidates())
    # ties on the share are broken by path, whether the rest is sorted or not (every share made equal)
    d._share[:] = 0.5
    paths = sorted(d.per_file.file_path)
    assert d.candidates().file_path.tolist() == paths
    assert [d.candidates(limit=k).file_path.tolist() for k in (1, 3)] == [paths[:1], paths[:3]]
    legacy = wh.table("shop.legacy").delete_debt()
    assert legacy.position_delete_files().record_count.tolist() == [2_000]


@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.235, 1.0])
def test_delete_debt_partitions_and_candidates_are_the_per_file_frames(wh, threshold):
    """DeleteDebt sums and ranks the per-file counts as arrays (its per-file frame made only when read): the same
    partitions, candidates and totals as grouping and sorting that frame."""
    import pandas as pd

    for name in ("shop.orders", "shop.events", "shop.legacy"):
        d = wh.table(name).delete_debt(threshold=threshold)
        pf = d.per_file
        g = pf.assign(candidate=pf.deleted_share > threshold).groupby("partition", sort=True, dropna=False).agg(
            data_files=("file_path", "size"), record_count=("record_count", "sum"),
            deleted_rows=("deleted_rows", "sum"), candidates=("candidate", "sum")).reset_index()
        g["deleted_share"] = (g.deleted_rows / g.record_count.where(g.record_count > 0)).fillna(0.0)
        expected = g[["partition", "data_files", "record_count", "deleted_rows", "deleted_share", "candidates"]]
        pd.testing.assert_frame_equal(d.per_partition(), expected)
        cand = pf[pf.deleted_share > threshold].sort_values(["deleted_share", "file_path"], ascending=[False, True])
        # (no candidate: an empty frame, its string columns of object dtype as an empty table's per-file frame has)
        pd.testing.assert_frame_equal(d.candidates(), cand.reset_index(drop=True), check_dtype=len(cand) > 0)
        assert (d.records, d.deleted_rows, d.data_files, d.candidate_count) == (
            int(pf.record_count.sum()), int(pf.deleted_rows.sum()), len(pf), len(cand))


def test_table_card(wh):
    t = wh.table("shop.orders")
    html = t.to_html()
    assert "<script" not in html and len(html.encode()) < MAX_HTML_BYTES
    for part in ("Iceberg table", "shop.orders", "next-row-id", "121,964", "Snapshot timeline", "<svg",
                 "Delete debt", "customer_id_bucket=0", "Deletion vectors", "Statistics files", "bucket[4]",
                 "iceberg.table-relocated", "overwrite"):
        assert part in html, part
    assert html.index("Findings") < html.index("Snapshot timeline")
    text = t.to_text()
    assert "121,964 records, 94,040 live, 27,924 deleted (22.9%); 8 data files, 4 DVs" in text
    assert "    5  6590999396394158857  2026-11-22 04:45:35  overwrite     94,040   27,924" in text
    schema = t.schema_fields()
    assert schema[["id", "name", "type"]].values.tolist() == [
        [1, "order_id", "long"], [2, "customer_id", "long"], [3, "status", "string"], [4, "amount", "double"],
        [5, "order_date", "date"]]
    assert t.partition_spec()[["name", "transform", "source"]].values.tolist() == [
        ["customer_id_bucket", "bucket[4]", "customer_id"]]


def test_check_is_a_finding_list(wh):
    found = wh.table("shop.orders").check()
    assert isinstance(found, FindingList) and found == []
    assert found.to_text() == "no findings"


def _damaged(tmp_path: Path) -> Path:
    root = copy_warehouse(tmp_path / "wh")
    shop = root / "shop"
    (shop / ORDERS_DELETE_MANIFEST).unlink()                                     # missing manifest
    ml = shop / "events" / "metadata"
    lists = sorted(ml.glob(f"snap-{EVENTS_SNAPSHOT}-*.avro"))
    data = lists[0].read_bytes()
    lists[0].write_bytes(data[: len(data) // 2])                                  # truncated Avro
    (shop / "legacy" / "metadata" / "v3.metadata.json").write_text('{"format-version": 2, "location": ')  # bad JSON
    (shop / "legacy" / "metadata" / "version-hint.text").write_text("3")
    return root


def test_a_damaged_warehouse_still_renders_every_card(tmp_path):
    wh = Warehouse(str(_damaged(tmp_path)))
    df = wh.summary()
    assert df.health.tolist() == ["error", "error", "error"]
    assert df.problem[0].startswith("manifest list unreadable")
    assert df.problem[2].endswith("(see the findings), so its deleted rows are not known")  # a delete manifest gone
    assert df.deleted_rows.isna().tolist() == [False, True, True] and df.records[2] == 121_964
    assert "not valid JSON table metadata" in df.problem[1] and "(at byte 34)" in df.problem[1]
    html = wh.to_html()
    assert "shop.legacy" in html and "not valid JSON" in html
    orders = wh.table("shop.orders")
    html = orders.to_html()
    assert "table.file-vanished" in html and "Iceberg table" in html and "Traceback" not in html
    assert "Snapshot timeline" in html  # from the metadata alone
    found = orders.check()
    assert any(f.code == "table.file-vanished" for f in found)
    events = wh.table("shop.events")
    assert "cannot read Avro" in events.to_html() and "Iceberg table" in events.to_text()
    assert "snapshot" in events.snapshot().to_text()


def test_models_do_not_import_display():
    code = ("import sys; import puffin_explorer.iceberg as i; w = i.Warehouse(%r); w.summary(); "
            "t = w.table('shop.orders'); t.timeline(); t.delete_debt(); t.snapshot().changes(); "
            "t.commit_deletes().to_pandas(); "
            "print(sorted(m for m in sys.modules if m.startswith('puffin_explorer.display')))" % str(WAREHOUSE))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"


DEMO = Path(os.environ.get("PUFFIN_EXPLORER_WAREHOUSE", ROOT / "demo-warehouse"))


@pytest.mark.skipif(not (DEMO / ".demo-complete.json").exists(), reason="demo warehouse not built (make demo)")
def test_demo_warehouse_cards():
    wh = Warehouse(str(DEMO))
    df = wh.summary().set_index("table")
    assert df.loc["shop.events", ["records", "deleted_rows", "live_rows", "dvs"]].tolist() == [200_000, 60_130,
                                                                                             139_870, 1]
    assert df.loc["shop.legacy", ["live_rows", "position_delete_files"]].tolist() == [18_000, 1]
    events = wh.table("shop.events")
    commits = [events.commit_deletes(int(s)).total for s in events.timeline().snapshot_id[1:]]
    assert sum(commits) == 60_130
    assert "Iceberg table" in events.to_html() and "Iceberg warehouse" in wh.to_html()


def test_browser_bundle_carries_the_cards_for_static_exports(wh):
    pytest.importorskip("ipywidgets")
    b = wh.browse().select(table="shop.orders")
    bundle = b._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    html = bundle["text/html"]
    assert "Iceberg warehouse" in html and "Iceberg table" in html and "shop.orders" in html
    assert "94,040" in html and "<script" not in html
    assert bundle["text/plain"] == f"WarehouseBrowser({str(WAREHOUSE)!r}, table='shop.orders')"


def test_the_exported_warehouse_tour_shows_the_browser_cards():
    """nbconvert has no widget state to draw the browser with, so it falls back to the bundle's HTML: the cards."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    path = ROOT / "notebooks" / "warehouse.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "wh.browse(" in c.source)
    out = next(o for o in cell.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {}))
    card = out["data"]["text/html"]
    assert "Iceberg warehouse" in card and "Iceberg table" in card and "shop.events" in card
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    start = body.index('<pre class="pe-text">Iceberg warehouse')
    snippet = card[card.index('<pre class="pe-text">Iceberg warehouse'):][:400]
    assert body.count(snippet) >= 2  # the `wh` cell and the browser cell both show the card
    assert start > 0 and "Iceberg table shop.events" in body[body.rindex(snippet):]
    assert "table_views" not in "".join(c.source for c in nb.cells)
