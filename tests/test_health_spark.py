"""The doctor's fixes fix: a table built on embedded Spark with every problem, the statements the doctor printed
run on that session, and the table reopened: the findings are gone and the predicted effect is what happened."""

from __future__ import annotations

import os
import time

import pytest

from puffin_explorer import Table

pytestmark = pytest.mark.spark

DAY_S = 86_400


def _build(spark, folder) -> None:
    """Seven small files in one partition, a third of the rows deleted (DVs), manifest merging off so every
    commit adds a manifest, statistics computed one commit ago, and an orphan file written ten days ago."""
    spark.sql("CREATE TABLE doc.ns.t (id bigint, grp int, payload string) USING iceberg TBLPROPERTIES ("
              "'format-version' = '3', 'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
              "'write.merge.mode' = 'merge-on-read', 'commit.manifest-merge.enabled' = 'false', "
              "'commit.manifest.min-count-to-merge' = '4', 'history.expire.max-snapshot-age-ms' = '1000')")
    for i in range(6):
        spark.range(i * 1000, (i + 1) * 1000).selectExpr("id", "cast(id % 7 as int) as grp",
                                                       "concat('row-', id) as payload") \
            .coalesce(1).writeTo("doc.ns.t").append()
    spark.sql("DELETE FROM doc.ns.t WHERE id % 3 = 0")
    spark.sql("CALL doc.system.compute_table_stats(table => 'ns.t')")
    spark.range(6000, 6500).selectExpr("id", "cast(id % 7 as int) as grp", "concat('row-', id) as payload") \
        .coalesce(1).writeTo("doc.ns.t").append()
    orphan = folder / "data" / "left-behind-by-a-failed-job.parquet"
    orphan.write_bytes(b"PAR1" + b"\0" * 2000)
    old = time.time() - 10 * DAY_S
    os.utime(orphan, (old, old))


def test_the_statements_the_doctor_prints_fix_what_it_found(spark, tmp_path):
    from puffin_explorer import spark as pes

    wh = tmp_path / "wh"
    pes.add_catalog(spark, "doc", str(wh))
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")  # the statements name UTC themselves
    try:
        # a TIMESTAMP literal naming UTC is the same instant whatever the session's zone
        assert spark.sql("SELECT CAST(TIMESTAMP '2026-11-23 00:00:00.000 UTC' AS BIGINT)").first()[0] == 1795392000
        folder = wh / "ns" / "t"
        _build(spark, folder)
        time.sleep(1.5)  # every snapshot but the current one is now past the table's 1 s retention
        now = time.time() * 1000
        before = Table.from_folder(str(folder)).health(now=now, catalog="doc", name="ns.t")
        assert {f.code for f in before.at_least("warning")} == {
            "health.small-files", "health.deleted-share", "health.manifest-fragmentation",
            "health.statistics-stale", "health.snapshots-past-retention", "health.orphan-files"}
        m = before.metrics
        rows = spark.table("doc.ns.t").count()
        assert (m["data_files"], m["records"], m["live_rows"], m["deleted_rows"]) == (7, 6500, rows, 6500 - rows)
        assert (m["dvs"], m["delete_files"], m["snapshots"], m["orphan_files"], m["orphan_bytes"]) == (
            6, 1, 8, 1, 2004)  # compute_table_stats adds no snapshot
        assert m["statistics_commits_behind"] == 1
        small = before.finding("health.small-files").effect
        assert (small["data_files_before"], small["data_files_after"]) == (7, 1)
        expire = before.finding("health.snapshots-past-retention").effect
        manifests = before.finding("health.manifest-fragmentation").effect
        plan = before.plan("spark")
        assert [s.split("(")[0] for s in plan] == ["CALL doc.system." + p for p in (
            "rewrite_data_files", "rewrite_data_files", "rewrite_manifests", "compute_table_stats",
            "expire_snapshots", "remove_orphan_files")]
        for statement in plan:
            spark.sql(statement).collect()

        after = Table.from_folder(str(folder)).health(now=now, catalog="doc", name="ns.t")
        assert [f.code for f in after.at_least("warning")] == []
        a = after.metrics
        assert spark.table("doc.ns.t").count() == rows == a["live_rows"]
        assert (a["data_files"], a["deleted_rows"]) == (small["data_files_after"], 0)
        # Iceberg 1.9.2 keeps the six DVs of the rewritten files (Spark's delete_files table lists them too):
        # the doctor names them dangling (info), never as deleted rows
        assert a["dvs"] == spark.sql("SELECT * FROM doc.ns.t.delete_files").count() == a["dangling_deletes"] == 6
        assert after.finding("health.dangling-deletes").severity.value == "info"
        assert a["data_manifests"] <= manifests["data_manifests_after"]
        assert (a["orphan_files"], a["statistics_commits_behind"]) == (0, 0)
        assert not (folder / "data" / "left-behind-by-a-failed-job.parquet").exists()
        # expiry removed what the doctor said only the expired snapshots held (they are gone from storage)
        assert expire["snapshots_after"] == 1 and expire["bytes_freed"] > 0
        freed = before.expired_only
        assert (len(freed), int(freed["size"].sum())) == (expire["files_freed"], expire["bytes_freed"])
        assert [loc for loc in freed.location if os.path.exists(loc)] == []
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_v2_position_deletes_read_amplification_is_counted_and_fixed(spark, tmp_path):
    """Three DELETEs on a v2 table with partition-scoped delete files: each data file merges every position-delete
    file of its partition (checked against pyarrow reading every delete file); the doctor's plan rewrites them away.
    (File-scoped deletes, Iceberg 1.9's default, are merged into one per data file at each DELETE.)"""
    import pyarrow.parquet as pq

    from puffin_explorer import spark as pes

    wh = tmp_path / "wh2"
    pes.add_catalog(spark, "doc2", str(wh))
    spark.sql("CREATE TABLE doc2.ns.v2 (id bigint, grp int) USING iceberg PARTITIONED BY (grp) TBLPROPERTIES ("
              "'format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
              "'write.delete.granularity' = 'partition')")  # one delete file per partition and DELETE
    for i in range(2):
        spark.range(i * 1000, (i + 1) * 1000).selectExpr("id", "cast(id % 2 as int) as grp") \
            .coalesce(1).writeTo("doc2.ns.v2").append()
    for k in (3, 5, 7):
        spark.sql(f"DELETE FROM doc2.ns.v2 WHERE id % {k} = 0")
    folder = wh / "ns" / "v2"
    now = time.time() * 1000
    t = Table.from_folder(str(folder))
    before = t.health(now=now, catalog="doc2", name="ns.v2")
    amp = before.amplification
    deletes = t.delete_files(decode=False)
    named = {}
    for loc in deletes.location:
        for path in set(pq.read_table(loc, columns=["file_path"]).column(0).to_pylist()):
            named[path.replace("file:", "")] = named.get(path.replace("file:", ""), 0) + 1
    expected = [named.get(p.replace("file:", ""), 0) for p in amp.file_path]
    assert amp.position_delete_files.tolist() == expected and max(expected) == 3
    from puffin_explorer.iceberg import health as health_module

    try:  # partitions compared a few pairs at a time give the same counts
        health_module.PAIR_LIMIT, limit = 3, health_module.PAIR_LIMIT
        chunked = t.health(now=now, catalog="doc2", name="ns.v2").amplification
    finally:
        health_module.PAIR_LIMIT = limit
    assert chunked.position_delete_files.tolist() == expected
    rows = spark.table("doc2.ns.v2").count()
    m = before.metrics
    assert (m["dvs"], m["position_delete_files"], m["live_rows"], m["max_delete_files_per_data_file"]) == (
        0, len(deletes), rows, 3)
    f = before.finding("health.read-amplification")
    assert f.severity.value == "warning" and f.evidence["data_files"] == sum(1 for n in expected if n > 1)
    for statement in before.plan("spark"):
        spark.sql(statement).collect()
    after = Table.from_folder(str(folder)).health(now=now, catalog="doc2", name="ns.v2")
    assert after.finding("health.read-amplification") is None and after.finding("health.deleted-share") is None
    assert after.metrics["max_delete_files_per_data_file"] <= 1
    assert (after.metrics["live_rows"], spark.table("doc2.ns.v2").count()) == (rows, rows)
