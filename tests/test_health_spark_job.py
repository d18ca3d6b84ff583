"""The table doctor as a Spark job: ``pes.health(spark, t)`` is ``t.health()`` — metrics, findings, actions,
effects and the frames the view draws — on the fixture warehouse, on a copy with orphans and a broken manifest,
on a poorly clustered table and through a catalog name."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from puffin_explorer import Table, Warehouse

from _warehouse_fixtures import ORDERS_DELETE_MANIFEST, WAREHOUSE, WRITTEN_ROOT, copy_warehouse, leave_orphans

pytestmark = pytest.mark.spark

#: Three days after the fixture warehouse was written: every snapshot but the current one is past retention.
NOW = "2026-11-28T00:00:00Z"
NOW_MS = 1795824000000
DAY_MS = 86_400_000


def _same(got, expected) -> None:
    """Same JSON contract and the same frames the view draws (the driver's frames hold every file; the Spark
    job's per-file frames are bounded, so only the per-class, per-partition and per-column ones compare)."""
    assert got.to_dict() == expected.to_dict()
    assert got.thresholds == expected.thresholds
    assert got.to_text() == expected.to_text()
    for name in ("size_histogram", "partitions", "columns", "clustering", "snapshots", "manifests"):
        assert (name in got.frames) == (name in expected.frames), name
        if name in expected.frames:
            pd.testing.assert_frame_equal(got.frames[name].reset_index(drop=True),
                                          expected.frames[name].reset_index(drop=True), check_dtype=False)


@pytest.fixture(scope="module")
def wh():
    return Warehouse(str(WAREHOUSE))


@pytest.fixture(scope="module")
def spark_doctor(spark, wh):
    """``pes.health`` of a fixture table on the session, run once for every test of this module that reads it
    (a doctor job on Spark takes 15-30 s even for these small tables)."""
    from puffin_explorer import spark as pes

    done = {}

    def of(name: str):
        if name not in done:
            done[name] = pes.health(spark, wh.table(name), now=NOW, index_on="executors")
        return done[name]
    return of


@pytest.mark.parametrize("name", ["shop.orders", "shop.events", "shop.legacy"])
def test_the_spark_job_is_the_driver_doctor(spark_doctor, wh, name):
    from pyspark.sql import DataFrame

    expected = wh.table(name).health(now=NOW)
    got = spark_doctor(name)
    _same(got, expected)
    assert isinstance(got.frames["listing"], DataFrame) and got.frames["listing"].count() == len(expected.listing)
    # every data file is in the bounded amplification frame of these small tables, with the driver's counts
    amp = expected.amplification.sort_values("file_path")
    top = got.amplification.sort_values("file_path")
    assert top["file_path"].tolist() == amp["file_path"].tolist()
    assert top["delete_files"].tolist() == amp["delete_files"].tolist()
    assert top["deleted_rows"].tolist() == amp["deleted_rows"].tolist()


def test_a_table_the_driver_holds_is_read_there_without_a_spark_job(spark, wh, monkeypatch):
    """``index_on="auto"`` (the default) reads a table whose manifests list at most ``CARD_HEALTH_UP_TO`` entries
    on the driver, as ``t.health()`` does, with no Spark job: shop.orders' nine distinct manifests (over five
    snapshots) list 36 entries.  The answer is the driver doctor's, its listing a Spark DataFrame as on the
    executors; one entry fewer allowed and the table goes to the executors (what ``index_on="executors"``
    runs in the other tests here)."""
    from pyspark.sql import DataFrame

    import puffin_explorer.health as health_module
    from puffin_explorer import spark as pes
    from puffin_explorer.spark.health import driver_holds

    t = wh.table("shop.orders")
    sc = spark.sparkContext
    sc.setJobGroup("pe-auto-doctor", "the doctor of a table the driver holds")
    try:
        got = pes.health(spark, t, now=NOW)
        jobs = sc.statusTracker().getJobIdsForGroup("pe-auto-doctor")
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert jobs == []
    expected = t.health(now=NOW)
    _same(got, expected)
    assert isinstance(got.frames["listing"], DataFrame) and got.frames["listing"].count() == len(expected.listing) == 35
    monkeypatch.setattr(health_module, "CARD_HEALTH_UP_TO", 36)
    assert driver_holds(t.source)
    monkeypatch.setattr(health_module, "CARD_HEALTH_UP_TO", 35)
    assert not driver_holds(t.source)
    with pytest.raises(ValueError, match="index_on must be one of auto, driver, executors"):
        pes.health(spark, t, now=NOW, index_on="cluster")


def test_known_numbers_of_the_fixture_tables(spark_doctor):
    """Exact values of the fixture README, computed by the Spark job."""
    orders = spark_doctor("shop.orders")
    m = orders.metrics
    assert (m["dvs"], m["delete_files"], m["live_rows"]) == (4, 1, 121964 - 27924)
    assert orders.partitions.deleted_rows.sum() == 27924
    assert m["snapshots_past_retention"] == m["snapshots"] - 1 and m["bytes_only_in_expired_snapshots"] > 0
    events = spark_doctor("shop.events")
    assert events.metrics["live_rows"] == 244122
    legacy = spark_doctor("shop.legacy")
    assert legacy.metrics["position_delete_files"] > 0 and legacy.metrics["equality_delete_files"] == 0


def test_orphans_and_expired_snapshots_on_a_copy(spark, tmp_path):
    from puffin_explorer import spark as pes

    root = copy_warehouse(tmp_path)
    table = root / "shop/events"
    leave_orphans(table, NOW_MS, top_level=True)  # the top-level file, beside the folders, is listed on the driver
    t = Warehouse(str(root)).table("shop.events")
    expected = t.health(now=NOW)
    got = pes.health(spark, t, now=NOW, index_on="executors")
    _same(got, expected)
    m = got.metrics
    assert (m["orphan_files"], m["orphan_bytes"], m["in_flight_files"]) == (3, 1251, 1)
    assert sorted(os.path.basename(p) for p in got.orphans.location) == [
        "left-behind.parquet", "stray-at-the-top.txt", "stray-m0.avro"]
    assert got.finding("health.orphan-files").evidence["examples"] == \
        expected.finding("health.orphan-files").evidence["examples"]
    assert m["snapshots_past_retention"] > 0 and m["bytes_only_in_expired_snapshots"] > 0
    assert sorted(got.expired_only.location) == sorted(expected.expired_only.location)
    assert int(got.expired_only["size"].sum()) == m["bytes_only_in_expired_snapshots"]
    later = pes.health(spark, t, now=NOW, older_than=NOW, index_on="executors")  # the young file is an orphan too
    assert (later.metrics["orphan_files"], later.metrics["orphan_bytes"]) == (4, 1350)
    assert later.to_dict() == t.health(now=NOW, older_than=NOW).to_dict()


def test_a_broken_manifest_and_an_older_metadata_file(spark, tmp_path):
    from puffin_explorer import spark as pes

    root = copy_warehouse(tmp_path)
    manifest = root / "shop/events/metadata/6d3f6038-5e32-44af-984a-804a0d99305d-m0.avro"
    manifest.write_bytes(manifest.read_bytes()[:100])  # only an older snapshot uses it
    t = Warehouse(str(root)).table("shop.events")
    got = pes.health(spark, t, now=NOW, index_on="executors")
    _same(got, t.health(now=NOW))
    assert got.finding("health.snapshot-unreadable").evidence == {"snapshot_id": 3379575596702121728}
    assert got.metrics["orphan_files"] is None
    current = root / "shop" / ORDERS_DELETE_MANIFEST  # the current snapshot's delete manifest, cut short
    current.write_bytes(current.read_bytes()[:300])
    t = Warehouse(str(root)).table("shop.orders")
    got = pes.health(spark, t, now=NOW, index_on="executors")
    _same(got, t.health(now=NOW))
    assert "a manifest is unreadable" in got.finding("health.snapshot-unreadable").message
    # the DVs' manifest read in part: deleted rows unknown on the executors as on the driver, never the smaller sum
    assert (got.metrics["deleted_rows"], got.metrics["live_rows"], got.metrics["records"]) == (None, None, 121_964)
    assert got.finding("health.count-unknown").evidence["covers"] == "3 of 4 manifests read"
    meta = root / "shop/orders/metadata"
    for i, p in enumerate(sorted(meta.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))):
        os.utime(p, (NOW_MS / 1000 - 10 * DAY_MS / 1000 + i, NOW_MS / 1000 - 10 * DAY_MS / 1000 + i))
    old = Table.from_metadata(str(meta / "v3.metadata.json"))
    got = pes.health(spark, str(meta / "v3.metadata.json"), now=NOW, index_on="executors")  # a metadata location
    _same(got, old.health(now=NOW))
    assert got.finding("health.not-current-metadata").evidence["newer"] == [
        str(meta / f"v{i}.metadata.json") for i in range(4, 8)]
    empty = Table.from_metadata(str(meta / "v1.metadata.json"), relocate={WRITTEN_ROOT: str(root)})
    got = pes.health(spark, empty, now=NOW, index_on="executors")  # no snapshot: no files to sum, no snapshot sets
    _same(got, empty.health(now=NOW))
    assert (got.metrics["snapshots"], got.metrics["data_files"], got.status) == (0, 0, "ok")


def test_a_delta_table_is_sent_to_its_own_doctor(spark, fixtures):
    from puffin_explorer import spark as pes

    from puffin_explorer.errors import PuffinError, UnsupportedTableError

    with pytest.raises(UnsupportedTableError, match="is a Delta table: its doctor is DeltaTable.health()") as err:
        pes.health(spark, str(fixtures / "engines/delta/kernel-rs-table-with-dv-small"), now=NOW)
    assert isinstance(err.value, PuffinError) and isinstance(err.value, ValueError)  # either catch works


def test_clustering_is_measured_per_partition_on_executors(spark, tmp_path):
    """A partitioned, sorted table written with PyIceberg: one region's files overlap three deep."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    from puffin_explorer import spark as pes

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("ns")
    schema = Schema(NestedField(1, "zone", StringType(), required=False),
                    NestedField(2, "v", LongType(), required=False))
    t = cat.create_table("ns.t", schema=schema,
                         partition_spec=PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "zone")),
                         sort_order=SortOrder(SortField(source_id=2, transform=IdentityTransform())),
                         properties={"format-version": "2"})
    arrow = pa.schema([("zone", pa.string()), ("v", pa.int64())])
    for zone, ranges in {"n": [(0, 9), (0, 9), (0, 9)], "s": [(0, 4), (5, 9)]}.items():
        for lo, hi in ranges:
            t.append(pa.table({"zone": [zone] * (hi - lo + 1), "v": list(range(lo, hi + 1))}, schema=arrow))
    table = Warehouse(cat).table("ns.t")
    got = pes.health(spark, table, now=NOW, index_on="executors")
    _same(got, table.health(now=NOW))
    clus = got.clustering.set_index("partition")
    assert clus["average_depth"].tolist() == [3.0, 1.0] and clus["max_depth"].tolist() == [3, 1]
    assert got.finding("health.poor-clustering").evidence["poor_partitions"] == 1
    by_zone = pes.health(spark, table, now=NOW, cluster_by="zone", index_on="executors")
    _same(by_zone, table.health(now=NOW, cluster_by="zone"))


def test_a_catalog_table_name(spark, fixture_warehouse):
    from puffin_explorer import spark as pes

    got = pes.health(spark, "fx.shop.orders", now=NOW, index_on="executors")
    t = Table.from_folder(str(fixture_warehouse / "shop/orders"))
    _same(got, t.health(now=NOW, catalog="fx", name="shop.orders"))
    assert got.actions("spark")[0].startswith("CALL fx.system.")


def test_partition_scoped_position_deletes_merge_on_executors(spark, tmp_path):
    """A v2 table written by Spark whose DELETEs write one position-delete file per partition: every data file of
    a partition merges each later delete file of it (the sequence-number and partition rules as Spark joins)."""
    import time

    from puffin_explorer import spark as pes

    wh = tmp_path / "wh"
    pes.add_catalog(spark, "hj", str(wh))
    spark.sql("CREATE TABLE hj.ns.pd (id bigint, grp int) USING iceberg PARTITIONED BY (grp) TBLPROPERTIES ("
              "'format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
              "'write.delete.granularity' = 'partition')")
    spark.range(0, 900).selectExpr("id", "cast(id % 3 as int) as grp").coalesce(1).writeTo("hj.ns.pd").append()
    spark.sql("DELETE FROM hj.ns.pd WHERE id % 4 = 0")
    spark.range(900, 1200).selectExpr("id", "cast(id % 3 as int) as grp").coalesce(1).writeTo("hj.ns.pd").append()
    spark.sql("DELETE FROM hj.ns.pd WHERE id % 5 = 0")
    now = time.time() * 1000
    t = Table.from_folder(str(wh / "ns" / "pd"))
    expected = t.health(now=now, catalog="hj", name="ns.pd")
    got = pes.health(spark, t, now=now, catalog="hj", name="ns.pd", index_on="executors")
    _same(got, expected)
    m = got.metrics
    rows = spark.table("hj.ns.pd").count()
    # the first append's files merge both DELETEs' files of their partition, the second append's only the last
    assert (m["live_rows"], m["dvs"], m["position_delete_files"], m["max_delete_files_per_data_file"]) == (
        rows, 0, 6, 2)
    amp = got.amplification.sort_values("file_path")
    assert sorted(amp["position_delete_files"].tolist()) == [1, 1, 1, 2, 2, 2]
    assert got.finding("health.read-amplification").evidence["data_files"] == 3


def test_kept_frames_are_joined_at_their_real_size_not_broadcast(spark, wh):
    """Spark estimates the executors' index from the plan it came from (a row per manifest: 228 B for
    shop.orders' 16 entries of 13.5 kB), so a join of it would broadcast it, at any size; the doctor's kept
    frames are computed once when kept, and their joins are planned with the bytes they hold.  Here with a
    4 kB broadcast threshold: the index alone is broadcast, the kept index is sort-merged.  It is kept on disk."""
    from puffin_explorer.spark.health import SparkReads
    from puffin_explorer.spark.index import build_index_on_executors

    t = wh.table("shop.orders")
    entries = build_index_on_executors(spark, t.source, metrics=True, partitions="keyed").entries

    def strategy(frame) -> str:
        plan = frame.alias("a").join(frame.alias("b"), "file_path")._jdf.queryExecution().executedPlan().toString()
        return "broadcast" if "BroadcastHashJoin" in plan else "sort-merge" if "SortMergeJoin" in plan else plan

    before = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "4096")
    reads = SparkReads(spark, t.source, {})
    try:
        assert strategy(entries) == "broadcast"
        kept = reads._keep(entries)
        assert strategy(kept) == "sort-merge"
        # on disk: in memory it would hold the storage half of the memory its joins and sums need
        assert (kept.storageLevel.useDisk, kept.storageLevel.useMemory) == (True, False)
    finally:
        reads.release()
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)


def test_the_current_snapshots_manifests_are_decoded_once(spark, wh):
    """The snapshot file sets (retention, orphans) take the current snapshot's files from the rows its health
    was summed from: only the manifests no current snapshot lists are decoded again, and the sets are the
    driver's (the expired-only files and their bytes)."""
    from puffin_explorer.iceberg.health import DriverReads, doctor
    from puffin_explorer.iceberg.entry_cache import EntryCache
    from puffin_explorer.spark.health import SparkReads

    t = wh.table("shop.orders")
    src = t.source
    keys = {sid: {EntryCache.manifest_key(m) for m in src.manifest_records(sid)}
            for sid in (s.snapshot_id for s in src.metadata.snapshots)}
    only_past = set().union(*keys.values()) - keys[src.metadata.current_snapshot_id]
    assert len(keys) > 1 and only_past  # shop.orders: snapshots whose manifests the current one no longer lists
    reads = SparkReads(spark, src, {})
    try:
        got = doctor(src, reads, now=NOW, list_files=False)
        assert reads.decoded_again == len(only_past)
    finally:
        reads.release()
    want = doctor(src, DriverReads(src), now=NOW, list_files=False)
    assert got.to_dict() == want.to_dict()
    assert got.metrics["bytes_only_in_expired_snapshots"] > 0
    assert sorted(got.expired_only.location) == sorted(want.expired_only.location)


def _shuffled_scans(plan: str) -> list[str]:
    """The scans under each shuffle Spark adds to a physical plan (``ENSURE_REQUIREMENTS``: not a kept frame's own
    repartition), one string of the scan lines per shuffle; a plan's tree is read by its indentation."""
    lines = plan.splitlines()
    found = []
    for i, line in enumerate(lines):
        if "Exchange" not in line or "ENSURE_REQUIREMENTS" not in line:
            continue
        depth = len(line) - len(line.lstrip(" :|+-"))
        below = []
        for other in lines[i + 1:]:
            if len(other) - len(other.lstrip(" :|+-")) <= depth:
                break
            if "InMemoryRelation" in other or "Scan ExistingRDD" in other or "Scan" in other.split("[")[0]:
                below.append(other.strip(" :|+-"))
        found.append(" / ".join(below[:1]))
    return found


def test_the_measures_read_the_kept_files_where_they_are_partitioned(spark, monkeypatch):
    """The doctor keeps the data files and the DVs of its health rows (a DV's ``key`` is the data file it
    references) partitioned alike by the file key, so the measures' joins and sums on the key (here
    ``deleted_rows``: DVs summed per data file, joined to the data files) shuffle neither;
    the same relations given as they come are shuffled, and the answers are the same.  Joins are sort-merged
    (broadcasts off) so that the plan shows what a large table gets."""
    import importlib

    from puffin_explorer.iceberg.measures import DELETED_ROWS, RELATIONS
    from puffin_explorer.spark.measures import SparkMeasures
    from puffin_explorer.spark.health import SparkReads
    from puffin_explorer.spark.health_rows import data_relation, files_by_key

    spark_health = importlib.import_module("puffin_explorer.spark.health")  # the module, not pes.health

    files = 60
    data = spark.createDataFrame([(i, f"s3://b/t/data/f{i}.parquet", f"s3://b/t/data/f{i}.parquet", "0|{}", 1,
                                   100 + i, 1000) for i in range(files)], RELATIONS["data"])
    dvs = spark.createDataFrame([(f"s3://b/t/data/f{i}.parquet", i % 7, "s3://b/t/data/d.puffin", 500)
                                 for i in range(0, files, 2)], RELATIONS["dvs"])
    rows = data.selectExpr("rid", "'data' AS kind", "key", "raw AS file_path", "pkey", "'{}' AS partition", "seq",
                           "record_count", "file_size_in_bytes", "0 AS spec_id", "seq AS sequence_number") \
        .unionByName(dvs.selectExpr("CAST(-1 AS BIGINT) AS rid", "'dv' AS kind", "ref_key AS key", "file_path",
                                    "'0|{}' AS pkey", "'{}' AS partition", "CAST(0 AS BIGINT) AS seq",
                                    "record_count", "file_size_in_bytes", "0 AS spec_id",
                                    "CAST(0 AS BIGINT) AS sequence_number"))
    pos_counts = spark.createDataFrame([], RELATIONS["pos_counts"])
    before = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    monkeypatch.setattr(spark_health, "ROWS_PER_KEY_PARTITION", 20)  # several partitions of a small table
    reads = SparkReads(spark, None, {})
    answers, shuffled = [], []
    try:
        kept_data, kept_dvs = files_by_key(rows)
        kept_data = reads._keep_by_key(kept_data, "key", files + files // 2)
        kept_dvs = reads._keep_by_key(kept_dvs, "ref_key", files + files // 2)
        assert kept_data.rdd.getNumPartitions() == kept_dvs.rdd.getNumPartitions() > 1
        kept_data = data_relation(kept_data)
        for d, v in ((data, dvs), (kept_data, kept_dvs)):
            run = SparkMeasures(spark, {"data": d, "dvs": v, "pos_counts": pos_counts})
            try:
                frame = run.frame(DELETED_ROWS)
                shuffled.append(_shuffled_scans(frame._jdf.queryExecution().executedPlan().toString()))
                answers.append(sorted(tuple(r) for r in frame.collect()))
            finally:
                run.close()
    finally:
        reads.release()
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)
    as_given, kept = shuffled
    assert sum("ExistingRDD" in s for s in as_given) >= 2  # the data files and the DVs, each shuffled by key
    assert not any("InMemoryRelation" in s for s in kept), kept  # only the (given) position-delete rows move
    assert answers[0] == answers[1]
    assert len(answers[1]) == files and sum(r[1] for r in answers[1]) == sum(i % 7 for i in range(0, files, 2))
