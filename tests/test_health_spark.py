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
    # the Spark doctor runs the same measures (Spark SQL) and reads the same position-delete files (executors)
    on_spark = pes.health(spark, t, now=now, catalog="doc2", name="ns.v2", index_on="executors")
    assert on_spark.to_dict() == before.to_dict() and on_spark.to_text() == before.to_text()
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


def _commit_equality_deletes(spark, name: str, folder, deletes: list[list[int]]) -> list[str]:
    """One equality-delete file on ``id`` (field 1) per list of ids, each committed by Iceberg's Java API on the
    session (Spark SQL and PyIceberg write none); pyarrow writes the file with the field id Iceberg reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    jvm = spark._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})])
    paths = []
    for i, ids in enumerate(deletes):
        path = folder / "data" / f"equality-deletes-{i}.parquet"
        pq.write_table(pa.table({"id": ids}, schema=schema), path)
        field_ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
        field_ids[0] = 1
        delete_file = (jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(table.spec())
                       .ofEqualityDeletes(field_ids).withPath(str(path))
                       .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET)
                       .withFileSizeInBytes(path.stat().st_size).withRecordCount(len(ids)).build())
        table.newRowDelta().addDeletes(delete_file).commit()
        paths.append(str(path))
    spark.sql(f"REFRESH TABLE {name}")
    return paths


def test_equality_deletes_read_amplification_is_counted_on_spark_and_fixed(spark, tmp_path):
    """Three data files, then two equality-delete files (each applies to every data file of a lower sequence
    number): each data file merges both at scan time.  The driver's doctor and the Spark job agree, the counts
    match Spark's own entries table, and the rewrite the doctor prints leaves no data file merging any."""
    from puffin_explorer import spark as pes

    wh = tmp_path / "wh3"
    pes.add_catalog(spark, "doc3", str(wh))
    spark.sql("CREATE TABLE doc3.ns.eq (id bigint, payload string) USING iceberg "
              "TBLPROPERTIES ('format-version' = '2')")
    for i in range(3):
        spark.range(i * 1000, (i + 1) * 1000).selectExpr("id", "concat('row-', id) as payload") \
            .coalesce(1).writeTo("doc3.ns.eq").append()
    folder = wh / "ns" / "eq"
    _commit_equality_deletes(spark, "doc3.ns.eq", folder, [[5, 7, 1005, 2005], [10, 1010, 2010]])
    assert spark.table("doc3.ns.eq").count() == 3000 - 7  # Spark applies both files
    # Spark's view of the current files: data files at sequence numbers 1-3, equality deletes at 4 and 5
    entries = spark.sql("SELECT data_file.content AS content, data_file.file_path AS path, sequence_number AS seq "
                        "FROM doc3.ns.eq.entries WHERE status < 2").toPandas()
    data, eq = entries[entries.content == 0], entries[entries.content == 2]
    assert (len(data), len(eq)) == (3, 2)
    expected = {p.replace("file:", ""): int((eq.seq > s).sum()) for p, s in zip(data.path, data.seq)}
    assert sorted(expected.values()) == [2, 2, 2]

    now = time.time() * 1000
    t = Table.from_folder(str(folder))
    before = t.health(now=now, catalog="doc3", name="ns.eq")
    amp = before.amplification
    assert {p.replace("file:", ""): int(n) for p, n in zip(amp.file_path, amp.equality_delete_files)} == expected
    per = t.deleted_rows_per_file()  # the same rule per data file (iceberg/measures.py), not a table-wide count
    assert {p.replace("file:", ""): int(n) for p, n in zip(per.file_path, per.equality_delete_files)} == expected
    m = before.metrics
    assert (m["data_files"], m["equality_delete_files"], m["position_delete_files"], m["dvs"]) == (3, 2, 0, 0)
    assert (m["delete_files"], m["max_delete_files_per_data_file"]) == (2, 2)
    assert m["delete_bytes"] == sum(os.path.getsize(p.replace("file:", "")) for p in eq.path)
    f = before.finding("health.read-amplification")
    assert f.severity.value == "warning" and f.evidence["data_files"] == 3
    assert (f.effect["data_files_rewritten"], f.effect["rows_read"]) == (3, 3000)
    on_spark = pes.health(spark, t, now=now, catalog="doc3", name="ns.eq", index_on="executors")
    assert on_spark.to_dict() == before.to_dict() and on_spark.to_text() == before.to_text()

    for action in f.actions:
        if action.engine == "spark":
            spark.sql(action.statement).collect()
    after = Table.from_folder(str(folder)).health(now=now, catalog="doc3", name="ns.eq")
    assert after.finding("health.read-amplification") is None
    assert after.metrics["max_delete_files_per_data_file"] == 0
    assert spark.table("doc3.ns.eq").count() == 3000 - 7 == after.metrics["records"]
    # The rewritten file takes the sequence number the rewrite started from, so neither equality-delete file
    # applies to it (Spark's entries say so too); Iceberg 1.9.2 keeps them, and the doctor calls them dangling.
    entries = spark.sql("SELECT data_file.content AS content, sequence_number AS seq "
                        "FROM doc3.ns.eq.entries WHERE status < 2").toPandas()
    data, eq = entries[entries.content == 0], entries[entries.content == 2]
    assert len(data) == 1 and len(eq) == 2 and [int((eq.seq > s).sum()) for s in data.seq] == [0]
    assert (after.metrics["equality_delete_files"], after.metrics["dangling_deletes"]) == (2, 2)
    assert Table.from_folder(str(folder)).deleted_rows_per_file().equality_delete_files.tolist() == [0]
    assert after.finding("health.dangling-deletes").severity.value == "info"


def test_the_sort_rewrite_the_doctor_prints_clusters_the_table(spark, tmp_path):
    """Four appends whose files each span the whole id range of both partitions: a filter on id reads every file.
    The table's sort order names id; the doctor's sort rewrite, run on the session, leaves files whose id ranges
    do not overlap within a partition, as its predicted effect says."""
    from puffin_explorer import spark as pes
    from puffin_explorer.iceberg.health_clustering import overlap_depth

    wh = tmp_path / "wh4"
    pes.add_catalog(spark, "doc4", str(wh))
    spark.sql("CREATE TABLE doc4.ns.s (id bigint, grp int) USING iceberg PARTITIONED BY (grp) "
              "TBLPROPERTIES ('format-version' = '2', 'write.target-file-size-bytes' = '2048')")  # files of ~3 kB
    for i in range(4):
        spark.range(0, 8000).where(f"id % 4 = {i}").selectExpr("id", "cast(id div 4 % 2 as int) as grp") \
            .writeTo("doc4.ns.s").append()
    spark.sql("ALTER TABLE doc4.ns.s WRITE ORDERED BY id")
    folder = wh / "ns" / "s"
    now = time.time() * 1000
    t = Table.from_folder(str(folder))
    before = t.health(now=now, catalog="doc4", name="ns.s")
    clus = before.clustering.set_index("partition")
    files = spark.sql("SELECT partition.grp AS grp, readable_metrics.id.lower_bound AS lo, "
                      "readable_metrics.id.upper_bound AS hi FROM doc4.ns.s.files").toPandas()
    assert files.groupby("grp").size().to_dict() == {0: 4, 1: 4}
    for grp, bounds in files.groupby("grp"):  # the depth of the bounds Spark reports for each partition
        assert clus.loc[f"grp={grp}", "average_depth"] == overlap_depth(list(bounds.lo), list(bounds.hi))[0]
    f = before.finding("health.poor-clustering")
    assert f is not None and f.evidence["column"] == "id" and f.evidence["column_source"].startswith("sort order")
    assert (f.evidence["poor_partitions"], f.evidence["worst_average_depth"], f.evidence["worst_max_depth"]) == (2, 2.5, 4)
    assert clus["files"].tolist() == [4, 4]
    statement = next(a.statement for a in f.actions if a.engine == "spark")
    assert "strategy => 'sort'" in statement and "id ASC NULLS FIRST" in statement
    rows = spark.table("doc4.ns.s").count()
    spark.sql(statement).collect()

    after = Table.from_folder(str(folder)).health(now=now, catalog="doc4", name="ns.s")
    assert after.finding("health.poor-clustering") is None
    assert spark.table("doc4.ns.s").count() == rows == after.metrics["records"]
    assert f.effect["data_files_rewritten"] == 8  # every data file, as the statement's rewrite-all says
    # the rewrite wrote several files per partition (the table's small target size) whose id ranges are
    # disjoint: the depth the effect predicted, here and in the bounds Spark reports
    files = spark.sql("SELECT partition.grp AS grp, readable_metrics.id.lower_bound AS lo, "
                      "readable_metrics.id.upper_bound AS hi FROM doc4.ns.s.files").toPandas()
    assert (files.groupby("grp").size() >= 2).all() and after.metrics["data_files"] == len(files)
    for grp, bounds in files.groupby("grp"):
        assert overlap_depth(list(bounds.lo), list(bounds.hi))[0] == f.effect["average_depth_after"] == 1.0
    assert after.clustering["average_depth"].tolist() == [1.0, 1.0]
    assert after.metrics["clustering_depth"] == 1.0
