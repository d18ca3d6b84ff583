"""The Spark pipeline against real Spark + the real Iceberg runtime.

Two warehouses: the demo warehouse (built by ``puffin_explorer.demo`` in this run, so
its contents follow from its SQL) and the reference warehouse written by Spark 3.5.9 +
Iceberg 1.9.2, rewritten into a copy where Iceberg itself has to read it (its counts are in the
fixtures README and CSVs; tests/test_spark_planned.py reads it where it lies).
"""

from __future__ import annotations

import os

import pytest

from _spark import relocated_csv

pytestmark = pytest.mark.spark

# What the demo's SQL deletes (see puffin_explorer/demo.py):
# orders: 40,000 rows; every 13th (3,077), the update's old rows (order_id % 10 = 3, < 20,000,
# not a multiple of 13: 1,846) and orders 30,000..30,999 not yet deleted (923).
ORDERS_DV_POSITIONS = 3077 + 1846 + 923
ORDERS_LIVE = 36_000
# events: 200,000 rows; 50,000..99,999 (50,000), odd below 20,000 (10,000), % 1000 = 7 not yet deleted (130).
EVENTS_DV_POSITIONS = 50_000 + 10_000 + 130
EVENTS_LIVE = 200_000 - EVENTS_DV_POSITIONS


def _sum(df, column):
    from pyspark.sql import functions as F

    return df.agg(F.sum(column)).first()[0]


def test_check_demo_tables_agree_with_iceberg(spark, demo_warehouse):
    from puffin_explorer import spark as pes

    for table, total in (("demo.shop.orders", ORDERS_DV_POSITIONS), ("demo.shop.events", EVENTS_DV_POSITIONS)):
        result = pes.check(spark, table).cache()
        dvs = spark.table(f"{table}.delete_files").where("file_format = 'PUFFIN'").count()
        assert result.count() == dvs > 0
        assert result.where("NOT ok").count() == 0, result.where("NOT ok").collect()
        assert _sum(result, "cardinality") == _sum(result, "iceberg") == _sum(result, "record_count") == total
        assert _sum(result, "only_ours") == 0 and _sum(result, "only_iceberg") == 0
    # orders has one DV per original data file (4 buckets); the UPDATE's new files have none
    assert pes.check(spark, "demo.shop.orders").count() == 4


def test_check_by_metadata_location(spark, demo_warehouse):
    from puffin_explorer import spark as pes

    location = pes.current_metadata_location(spark, "demo.shop.events")
    assert location.endswith(".metadata.json") and os.path.exists(location)
    rows = pes.check(spark, location).collect()
    assert [(r.ok, r.cardinality, r.iceberg) for r in rows] == [(True, EVENTS_DV_POSITIONS, EVENTS_DV_POSITIONS)]


def test_deletion_report_demo(spark, demo_warehouse):
    from puffin_explorer import spark as pes

    for table, live in (("demo.shop.orders", ORDERS_LIVE), ("demo.shop.events", EVENTS_LIVE),
                        ("demo.shop.legacy", 18_000)):
        report = pes.deletion_report(spark, table).cache()
        assert _sum(report, "live") == live == spark.table(table).count()
    events = pes.deletion_report(spark, "demo.shop.events").collect()
    assert len(events) == 1
    row = events[0]
    assert (row.rows, row.deleted, row.dv_deleted) == (200_000, EVENTS_DV_POSITIONS, EVENTS_DV_POSITIONS)
    assert row.deleted_share == pytest.approx(EVENTS_DV_POSITIONS / 200_000)
    # runs: [1,3,...,19999] are 10,000 runs, 50,000..99,999 one, the 130 scattered ones 130
    assert row.runs == 10_000 + 1 + 130
    assert row.dv_size > 0 and row.dv_file.endswith(".puffin")
    legacy = pes.deletion_report(spark, "demo.shop.legacy").collect()
    assert [(r.rows, r.deleted, r.position_delete_file_rows, r.dv_deleted) for r in legacy] == [(20_000, 2_000, 2_000, None)]


def test_dv_positions_demo_events(spark, demo_warehouse):
    from pyspark.sql import functions as F

    from puffin_explorer import spark as pes

    positions = pes.dv_positions(spark, "demo.shop.events")
    assert positions.columns == ["data_file", "pos"]
    stats = positions.agg(F.count("pos"), F.countDistinct("pos"), F.min("pos"), F.max("pos"),
                          F.countDistinct("data_file")).first()
    assert tuple(stats) == (EVENTS_DV_POSITIONS, EVENTS_DV_POSITIONS, 1, 199_007, 1)
    # the data file was written in event_id order, so positions are event ids
    live_ids = spark.table("demo.shop.events").select(F.col("event_id").alias("pos"))
    assert positions.join(live_ids, "pos", "inner").count() == 0
    assert pes.dv_positions(spark, "demo.shop.legacy").count() == 0  # v2: no DVs


def test_deleted_rows_match_the_snapshot_before_the_deletes(spark, demo_warehouse):
    from pyspark.sql import functions as F

    from puffin_explorer import spark as pes

    for table in ("demo.shop.events", "demo.shop.orders", "demo.shop.legacy"):
        key = {"demo.shop.events": "event_id", "demo.shop.orders": "order_id", "demo.shop.legacy": "id"}[table]
        snapshots = spark.table(f"{table}.snapshots").orderBy("committed_at").collect()
        first = snapshots[0].snapshot_id  # the insert, before any delete
        data_file = spark.table(f"{table}.files").where("content = 0").orderBy("file_path").first().file_path
        name = os.path.basename(data_file)
        before = pes.read_table(spark, table, first).where(F.col("_file") == data_file).select(key)
        now = spark.table(table).where(F.col("_file") == data_file).select(key)
        expected = sorted(r[0] for r in before.subtract(now).collect())
        got = pes.deleted_rows(spark, table, name)
        assert got.columns[0] == "pos" and key in got.columns
        assert sorted(r[0] for r in got.select(key).collect()) == expected
        assert len(expected) > 0


def test_puffin_inventory_demo_events(spark, demo_warehouse):
    from puffin_explorer import spark as pes

    rows = pes.puffin_inventory(spark, "demo.shop.events").collect()
    deletes = [r for r in rows if r.file_kind == "deletes"]
    stats = [r for r in rows if r.file_kind == "statistics"]
    assert [(r.blob_type, r.cardinality, r.fields, r.findings) for r in deletes] == [
        ("deletion-vector-v1", EVENTS_DV_POSITIONS, [2147483645], [])]
    assert deletes[0].properties["cardinality"] == str(EVENTS_DV_POSITIONS)
    assert deletes[0].offset == 4 and deletes[0].file_size > deletes[0].length
    # compute_table_stats(columns => kind, event_id): field ids 2 and 1, NDV property = floor(estimate)
    assert sorted(tuple(r.fields) for r in stats) == [(1,), (2,)]
    for r in stats:
        assert r.blob_type == "apache-datasketches-theta-v1" and r.findings == [] and r.file_findings == []
        assert int(r.properties["ndv"]) == int(r.ndv_estimate)
    assert {tuple(r.fields): int(r.properties["ndv"]) for r in stats}[(2,)] == 4  # four kinds
    # every snapshot's delete files: one merged DV file per DELETE commit
    every = pes.puffin_inventory(spark, "demo.shop.events", all_snapshots=True).where("file_kind = 'deletes'")
    assert sorted(r.cardinality for r in every.collect()) == [50_000, 60_000, EVENTS_DV_POSITIONS]


def test_fixture_warehouse_check_and_counts(spark, fixture_warehouse):
    from puffin_explorer import spark as pes

    for table, csv_name, live in (("fx.shop.orders", "orders_delete_files.csv", 94_040),
                                  ("fx.shop.events", "events_delete_files.csv", 244_122)):
        expected = relocated_csv(csv_name, fixture_warehouse)
        result = pes.check(spark, table).collect()
        assert all(r.ok for r in result), [r for r in result if not r.ok]
        assert sorted((r.data_file, r.delete_file, r.content_offset, r.cardinality, r.iceberg) for r in result) == sorted(
            (e["referenced_data_file"], e["file_path"], e["content_offset"], e["record_count"], e["record_count"])
            for e in expected)
        assert _sum(pes.deletion_report(spark, table), "live") == live == spark.table(table).count()
    legacy = pes.deletion_report(spark, "fx.shop.legacy").collect()
    assert [(r.rows, r.deleted, r.live) for r in legacy] == [(20_000, 2_000, 18_000)]
    assert pes.check(spark, "fx.shop.legacy").count() == 0


def test_damaged_dv_is_reported_with_its_offset(spark, demo_warehouse, tmp_path):
    import shutil

    from puffin_explorer import Table
    from puffin_explorer import spark as pes

    shutil.copytree(demo_warehouse / "shop" / "events", tmp_path / "events")
    table = Table.from_folder(str(tmp_path / "events"))  # a copy: planned here, its root mapped automatically
    dv = table.dvs().iloc[0]
    # flip one byte of the stored CRC (the last 4 bytes of the blob)
    crc_at = int(dv.content_offset) + int(dv.content_size_in_bytes) - 2
    with open(dv.location, "r+b") as fh:
        fh.seek(crc_at)
        byte = fh.read(1)
        fh.seek(crc_at)
        fh.write(bytes([byte[0] ^ 0xFF]))
    for mode in ("driver", "executors"):
        facts = pes.dv_facts(spark, table, mode=mode).collect()
        assert len(facts) == 1 and facts[0].crc_ok is False and facts[0].findings
        with pytest.raises(Exception) as err:
            with pes.spark_errors():
                pes.dv_positions(spark, table, mode=mode).count()
        assert "is damaged" in str(err.value)
        assert str(int(dv.content_offset) + int(dv.content_size_in_bytes) - 4) in str(err.value)


def test_session_returns_the_active_session(spark):
    from puffin_explorer import spark as pes

    assert pes.session() is spark
    assert pes.session(master="local[1]") is spark  # nothing new is started


def test_unknown_data_file_is_a_clear_error(spark, demo_warehouse):
    from puffin_explorer import spark as pes

    with pytest.raises(ValueError, match="no data file of demo.shop.events matches 'nope.parquet'"):
        pes.deleted_rows(spark, "demo.shop.events", "nope.parquet")


def test_cli_check_report_and_errors(spark, demo_warehouse, fixture_warehouse, tmp_path, capsys):
    from puffin_explorer.cli import main

    assert main(["spark", "check", "demo.shop.events"]) == 0
    assert "1 deletion vector checked, 0 with differences" in capsys.readouterr().out
    assert main(["spark", "check", "shop.orders", "--warehouse", str(fixture_warehouse), "--catalog", "fx2",
                 "--limit", "1"]) == 0
    assert "4 deletion vectors checked, 0 with differences" in capsys.readouterr().out
    out = tmp_path / "report.csv"
    assert main(["spark", "report", "demo.shop.legacy", "--output", str(out)]) == 0
    import pandas as pd

    report = pd.concat(pd.read_csv(p) for p in out.glob("part-*.csv"))
    assert report[["rows", "deleted", "live"]].values.tolist() == [[20_000, 2_000, 18_000]]
    assert main(["spark", "report", "demo.shop.no_such_table"]) == 2
    err = capsys.readouterr().err
    assert "TABLE_OR_VIEW_NOT_FOUND" in err and "no_such_table" in err and "Traceback" not in err
    assert "Py4J" not in err and len(err.splitlines()) <= 2


def test_ship_package_adds_a_zip_of_the_package(spark):
    from puffin_explorer import spark as pes

    pes.ship_package(spark)
    shipped = [p for p in spark.sparkContext._python_includes if p.endswith("puffin_explorer.zip")]
    assert shipped


def test_a_used_catalog_name_is_not_silently_repointed(spark, demo_warehouse, tmp_path):
    from puffin_explorer import spark as pes

    pes.add_catalog(spark, "demo", str(demo_warehouse))  # same folder: fine
    with pytest.raises(pes.SparkSetupError, match="catalog 'demo' already points to"):
        pes.add_catalog(spark, "demo", str(tmp_path))
