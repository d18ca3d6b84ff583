"""The Spark functions on tables this package plans: the reference warehouse opened where it lies.

The warehouse under ``resources/fixtures/warehouse`` was written at ``/data/warehouse``;
nothing here copies or rewrites it.  Each test runs on every session kind the
installed PySpark offers: Spark 3.5 classic with the Iceberg runtime (the main
environment), Spark 4.0 classic without any Iceberg jar and a Spark Connect session
started locally (the ``.venv-spark4`` environment ``make test`` builds).
"""

from __future__ import annotations

import csv
import os
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from _spark import FIXTURE_ROOT, FIXTURE_WAREHOUSE, relocated_csv
from puffin_explorer.errors import UnsupportedTableError

pytestmark = pytest.mark.spark

RELOCATE = {FIXTURE_ROOT: str(FIXTURE_WAREHOUSE)}
ORDERS_META = FIXTURE_WAREHOUSE / "shop" / "orders" / "metadata" / "v7.metadata.json"
EVENTS_META = FIXTURE_WAREHOUSE / "shop" / "events" / "metadata" / "v6.metadata.json"
LIVE = {"orders": 94_040, "events": 244_122}


def _major() -> int:
    import pyspark

    return int(pyspark.__version__.split(".")[0])


@pytest.fixture(scope="module", params=["classic", "connect"])
def any_spark(request):
    """Spark 3.5 classic (with Iceberg), or on PySpark 4: classic and Spark Connect, both without Iceberg."""
    pytest.importorskip("pyspark")
    if not FIXTURE_WAREHOUSE.is_dir():
        pytest.skip(f"reference fixtures not found at {FIXTURE_WAREHOUSE}")
    if _major() < 4:
        if request.param == "connect":
            pytest.skip("no Spark Connect server for Spark 3.5 on PyPI (spark-connect_2.12 is in no wheel); "
                        "Connect runs in the Spark 4 environment")
        yield request.getfixturevalue("spark")
        return
    from pyspark.sql import SparkSession

    from puffin_explorer import spark as pes

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    conf = {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"}
    if request.param == "classic":
        s = pes.session(master="local[2]", iceberg=False, conf=conf)
        s.sparkContext.setLogLevel("ERROR")
    else:
        s = pes.session(remote="local[2]", iceberg=False, conf=conf)
    yield s
    s.stop()
    if request.param == "connect":
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        os.environ.pop("SPARK_REMOTE", None)


def _metas(spark) -> tuple:
    """The warehouse tables a test runs over: both on a classic session; on Spark Connect one (its answers come
    from the same Spark 4 engine as the classic session's in the same run: what Connect adds is how plans and
    rows travel, which one table exercises)."""
    from puffin_explorer.spark.arrow import is_connect

    return (ORDERS_META,) if is_connect(spark) else (ORDERS_META, EVENTS_META)


def _table(meta):
    from puffin_explorer import Table

    return Table.from_metadata(str(meta), relocate=RELOCATE)


def _csv(name: str) -> list[dict]:
    with open(FIXTURE_WAREHOUSE / name) as fh:
        return [{k: int(v) if v.isdigit() else v for k, v in r.items()} for r in csv.DictReader(fh)]


def _counts(df) -> dict:
    return {r["data_file"]: r["count"] for r in df.groupBy("data_file").count().collect()}


@pytest.mark.parametrize("mode", ["driver", "executors"])
def test_dv_positions_of_the_warehouse_where_it_lies(any_spark, mode):
    from puffin_explorer import spark as pes

    for meta, csv_name in ((ORDERS_META, "orders_delete_files.csv"), (EVENTS_META, "events_delete_files.csv")):
        table = _table(meta)
        expected = _csv(csv_name)
        positions = pes.dv_positions(any_spark, table, mode=mode)
        assert positions.columns == ["data_file", "pos"]
        assert _counts(positions) == {e["referenced_data_file"]: e["record_count"] for e in expected}
        # exactly the positions of each DV: compared with pyroaring's reading of the same blob bytes
        from pyroaring import BitMap64

        for e in expected:
            with open(FIXTURE_WAREHOUSE / os.path.relpath(e["file_path"], FIXTURE_ROOT), "rb") as fh:
                fh.seek(e["content_offset"])
                blob = fh.read(e["content_size_in_bytes"])
            truth = np.array(BitMap64.deserialize(blob[8:-4]).to_array(), dtype=np.int64)  # length, magic | crc
            got = sorted(r.pos for r in positions.where(positions.data_file == e["referenced_data_file"]).collect())
            assert np.array_equal(np.array(got, dtype=np.int64), truth)


def test_plain_metadata_location_and_folder_are_planned_too(any_spark):
    from puffin_explorer import spark as pes

    # moved: the metadata location alone maps the table's own root; the folder form finds vN itself
    assert pes.dv_positions(any_spark, str(EVENTS_META)).count() == 55_878
    assert pes.dv_positions(any_spark, str(EVENTS_META.parent.parent), relocate=RELOCATE).count() == 55_878
    described = pes.plan(any_spark, _table(ORDERS_META))
    assert {k: described[k] for k in ("dvs", "dv_bytes", "positions", "relocated", "decode_on", "planned_by")} == {
        "dvs": 4, "dv_bytes": 4 * 8232, "positions": 6953 + 7105 + 6889 + 6977, "relocated": True,
        "decode_on": "driver", "planned_by": "puffin_explorer"}


def test_deleted_rows_are_the_rows_at_the_dv_positions(any_spark):
    from puffin_explorer import spark as pes

    table = _table(EVENTS_META)
    data_file = _csv("events_delete_files.csv")[0]["referenced_data_file"]
    got = pes.deleted_rows(any_spark, table, os.path.basename(data_file))
    local = pq.read_table(FIXTURE_WAREHOUSE / os.path.relpath(data_file, FIXTURE_ROOT))
    assert got.columns == ["pos"] + local.column_names
    rows = got.toPandas()
    assert len(rows) == 55_878 and rows.pos.is_monotonic_increasing
    expected = local.take(rows.pos.to_numpy()).to_pandas()
    for name in local.column_names:
        assert rows[name].tolist() == expected[name].tolist(), name
    assert pes.resolve_data_file(any_spark, table, os.path.basename(data_file)) == data_file


def test_deletion_report_and_check_without_iceberg_reading_the_table(any_spark):
    from puffin_explorer import spark as pes

    for name, meta, csv_name in (("orders", ORDERS_META, "orders_delete_files.csv"),
                                 ("events", EVENTS_META, "events_delete_files.csv")):
        table = _table(meta)
        report = pes.deletion_report(any_spark, table).toPandas()
        assert int(report.live.sum()) == LIVE[name]
        result = pes.check(any_spark, table).toPandas()
        assert set(result.compared_with) == {"record_count"}  # a moved table: Iceberg could not read it
        assert result.ok.all()
        assert sorted(zip(result.data_file, result.delete_file, result.content_offset, result.cardinality,
                          result.ours)) == sorted(
            (e["referenced_data_file"], e["file_path"], e["content_offset"], e["record_count"], e["record_count"])
            for e in _csv(csv_name))  # ours: the positions decoded per data file, counted
    legacy = pes.deletion_report(any_spark, FIXTURE_WAREHOUSE / "shop" / "legacy").toPandas()
    assert legacy[["rows", "deleted", "live", "position_delete_file_rows"]].values.tolist() == [
        [20_000, 2_000, 18_000, 2_000]]
    assert pes.check(any_spark, FIXTURE_WAREHOUSE / "shop" / "legacy").count() == 0


def test_puffin_inventory_of_the_warehouse_where_it_lies(any_spark):
    from puffin_explorer import spark as pes

    for mode in ("driver", "executors"):
        rows = pes.puffin_inventory(any_spark, _table(ORDERS_META), mode=mode).collect()
        deletes = [r for r in rows if r.file_kind == "deletes"]
        assert sorted((r.puffin_file, r.offset, r.length, r.cardinality) for r in deletes) == sorted(
            (e["file_path"], e["content_offset"], e["content_size_in_bytes"], e["record_count"])
            for e in _csv("orders_delete_files.csv"))
        stats = [r for r in rows if r.file_kind == "statistics"]
        assert len(stats) >= 1 and all(r.blob_type == "apache-datasketches-theta-v1" for r in stats)
        assert all(not r.findings and not r.file_findings for r in rows)
    every = pes.puffin_inventory(any_spark, _table(EVENTS_META), all_snapshots=True)
    assert sorted(r.cardinality for r in every.where("file_kind = 'deletes'").collect()) == [3093, 32785, 55878]


@pytest.fixture(scope="module")
def s3_shop(s3_server):
    """``s3://<bucket>/spark-wh``: the reference warehouse uploaded byte for byte (paths inside still say
    ``/data/warehouse``)."""
    return s3_server.upload(FIXTURE_WAREHOUSE, "spark-wh")


@pytest.mark.s3
@pytest.mark.parametrize("mode", ["driver", "executors"])
def test_the_warehouse_over_s3_is_planned_decoded_and_its_rows_read(any_spark, s3_server, s3_shop, mode):
    """The same answers from the loopback S3 server: DVs read by range on the driver or in executors'
    Python workers, and deleted rows read through this package's Parquet reader (the session has no S3A)."""
    from puffin_explorer import Table
    from puffin_explorer import spark as pes

    options = s3_server.storage_options
    for name, csv_name in (("orders", "orders_delete_files.csv"), ("events", "events_delete_files.csv")):
        meta = (ORDERS_META if name == "orders" else EVENTS_META).relative_to(FIXTURE_WAREHOUSE).as_posix()
        table = Table.from_metadata(f"{s3_shop}/{meta}", storage_options=options,
                                    relocate={FIXTURE_ROOT: s3_shop})
        expected = _csv(csv_name)
        positions = pes.dv_positions(any_spark, table, mode=mode)
        assert _counts(positions) == {e["referenced_data_file"]: e["record_count"] for e in expected}
        assert pes.plan(any_spark, table, mode=mode)["decode_on"] == mode
        facts = pes.dv_facts(any_spark, table, mode=mode).collect()
        assert sorted((r.data_file, r.cardinality) for r in facts) == sorted(
            (e["referenced_data_file"], e["record_count"]) for e in expected)
        assert all(r.crc_ok for r in facts)
    table = Table.from_metadata(f"{s3_shop}/{EVENTS_META.relative_to(FIXTURE_WAREHOUSE).as_posix()}",
                                storage_options=options)  # the table's own root is mapped without relocate=
    data_file = _csv("events_delete_files.csv")[0]["referenced_data_file"]
    rows = pes.deleted_rows(any_spark, table, os.path.basename(data_file)).toPandas()
    local = pq.read_table(FIXTURE_WAREHOUSE / os.path.relpath(data_file, FIXTURE_ROOT))
    assert len(rows) == 55_878 and rows.pos.is_monotonic_increasing
    expected_rows = local.take(rows.pos.to_numpy()).to_pandas()
    for column in local.column_names:
        assert rows[column].tolist() == expected_rows[column].tolist(), column


def test_a_missing_puffin_file_is_one_clear_error(any_spark, tmp_path):
    from puffin_explorer import Table
    from puffin_explorer import spark as pes
    from puffin_explorer.errors import PuffinError

    shutil.copytree(FIXTURE_WAREHOUSE / "shop" / "events", tmp_path / "events")
    puffin = _csv("events_delete_files.csv")[0]["file_path"]
    os.remove(tmp_path / "events" / os.path.relpath(puffin, f"{FIXTURE_ROOT}/shop/events"))
    table = Table.from_folder(str(tmp_path / "events"))
    for mode in ("driver", "executors"):
        with pytest.raises(PuffinError) as err:
            with pes.spark_errors():
                pes.dv_positions(any_spark, table, mode=mode).count()
        message = str(err.value)
        assert "no such file" in message and os.path.basename(puffin) in message, message
        assert len(message.splitlines()) <= 2 and "Py4J" not in message and "Traceback" not in message


def test_a_catalog_without_the_namespace_is_one_clear_error(any_spark):
    from puffin_explorer import spark as pes

    with pytest.raises(pes.SparkJobError) as err:
        pes.dv_positions(any_spark, "nosuchcatalog.nosuchns.orders")
    message = str(err.value)
    assert "nosuchns" in message and len(message.splitlines()) <= 2 and "Py4J" not in message, message


def _iceberg_runtime_for_this_spark() -> bool:
    try:
        return _major() < 4
    except ImportError:
        return False


@pytest.mark.skipif(not _iceberg_runtime_for_this_spark(), reason="needs Spark 3.5 with the Iceberg runtime")
def test_check_compares_with_position_deletes_when_iceberg_reads_the_table(spark, fixture_warehouse):
    """Spark 3.5 + Iceberg: a planned table Iceberg can read is compared position by position.

    Iceberg itself must read the table here, so this uses the rewritten copy (``fx``).
    """
    from puffin_explorer import spark as pes

    meta = sorted((fixture_warehouse / "shop" / "orders" / "metadata").glob("v*.metadata.json"),
                  key=lambda p: int(p.name[1:].split(".")[0]))[-1]
    result = pes.check(spark, str(meta)).collect()
    assert {r.compared_with for r in result} == {"position_deletes"}
    assert all(r.ok for r in result) and sum(r.iceberg for r in result) == 27_924
    forced = pes.check(spark, str(meta), compare="record_count").collect()
    assert {r.compared_with for r in forced} == {"record_count"} and all(r.ok for r in forced)
    # the same positions as Iceberg's reader of the rewritten copy, data file by data file
    ours = pes.dv_positions(spark, _table(ORDERS_META))
    theirs = spark.table("fx.shop.orders.position_deletes").selectExpr("file_path AS data_file", "pos")
    expected = {r["referenced_data_file"]: r["record_count"] for r in relocated_csv("orders_delete_files.csv",
                                                                                     fixture_warehouse)}
    assert _counts(theirs) == expected
    moved = {k.replace(str(fixture_warehouse), FIXTURE_ROOT): v for k, v in expected.items()}
    assert _counts(ours) == moved
    import pyspark.sql.functions as F

    renamed = theirs.withColumn("data_file", F.regexp_replace("data_file", f"^{fixture_warehouse}", FIXTURE_ROOT))
    assert ours.subtract(renamed).count() == 0 and renamed.subtract(ours).count() == 0


DELTA_LARGE = FIXTURE_WAREHOUSE.parent / "engines" / "delta" / "delta-spark-table-with-dv-large"


@pytest.mark.parametrize("mode", ["driver", "executors"])
def test_delta_tables_are_planned_like_iceberg_tables(any_spark, mode):
    """A Delta table (a DeltaTable or its folder) through the same functions: DVs read by range from its
    deletion_vector_*.bin files, counts checked against the log's cardinalities, rows read from the data files."""
    from puffin_explorer import DeltaTable
    from puffin_explorer import spark as pes

    table = DeltaTable(str(DELTA_LARGE))
    truth = {os.path.basename(loc): dv.positions().tolist() for loc, dv in table.deletion_vectors().items()}
    assert sum(len(v) for v in truth.values()) == 11  # README: version 4, sum of DV cardinalities
    for given in (table, str(DELTA_LARGE)):
        positions = pes.dv_positions(any_spark, given, mode=mode)
        got: dict = {}
        for r in positions.collect():
            got.setdefault(os.path.basename(r.data_file), []).append(r.pos)
        assert {k: sorted(v) for k, v in got.items()} == truth
    described = pes.plan(any_spark, table, mode=mode)
    assert (described["dvs"], described["positions"], described["decode_on"]) == (len(truth), 11, mode)
    report = pes.deletion_report(any_spark, table, mode=mode).toPandas()
    assert (int(report.rows.sum()), int(report.live.sum()), len(report)) == (2004, 1993, 22)
    result = pes.check(any_spark, table, mode=mode).toPandas()
    assert len(result) == len(truth) and result.ok.all() and set(result.compared_with) == {"record_count"}
    with pytest.raises(UnsupportedTableError, match="Delta table"):  # a PuffinError and a ValueError
        pes.check(any_spark, table, compare="position_deletes")
    with pytest.raises(UnsupportedTableError, match="not Puffin files"):
        pes.puffin_inventory(any_spark, table)
    name, deleted = next((k, v) for k, v in truth.items() if len(v) > 1)
    rows = pes.deleted_rows(any_spark, table, name).toPandas()
    values = pq.read_table(DELTA_LARGE / name).column("value").to_pylist()
    assert rows.pos.tolist() == deleted and rows.value.tolist() == [values[p] for p in deleted]


@pytest.mark.parametrize("storage", ["p", "i"])
def test_delta_dvs_stored_by_path_or_inline(any_spark, tmp_path, storage):
    from delta_tables import write_delta_table

    from puffin_explorer import spark as pes

    deletes = {0: [0, 5, 99], 2: list(range(10, 60))}
    expected = write_delta_table(str(tmp_path / "t"), [100, 100, 100], deletes, storage=storage, dvs_per_file=2)
    for mode in ("driver", "executors"):
        got: dict = {}
        for r in pes.dv_positions(any_spark, str(tmp_path / "t"), mode=mode).collect():
            got.setdefault(os.path.basename(r.data_file), []).append(r.pos)
        assert {k: sorted(v) for k, v in got.items()} == {os.path.basename(k): v for k, v in expected.items()}
        facts = pes.dv_facts(any_spark, str(tmp_path / "t"), mode=mode).collect()
        assert all(r.crc_ok and not r.findings for r in facts) and len(facts) == 2


# ---- the entry index built on the executors --------------------------------------------------
def _driver_rows(ix) -> list[dict]:
    """The driver's index rows with ``partition`` as the executors spell it (JSON of the record)."""
    import pyarrow as pa

    from puffin_explorer.spark.index import partition_json

    t = ix.table
    parts = [partition_json(v) for v in ix.partition_values(t.column("partition").to_pylist())]
    return t.set_column(t.schema.get_field_index("partition"), "partition", pa.array(parts, pa.string())).to_pylist()


def _findings(found) -> list[tuple]:
    return [(f.code, f.severity.value, f.file, f.message, f.offset) for f in found]


def _assert_same_index(spark, table, content=None) -> tuple[list[dict], list[tuple]]:
    from puffin_explorer.spark.index import build_index_on_executors

    driver = table.index(content=content)
    built = build_index_on_executors(spark, table.source, content=content)
    assert built.entries.columns == driver.columns
    rows = sorted((r.asDict(recursive=True) for r in built.entries.collect()),
                  key=lambda r: (r["manifest"], r["entry"]))
    assert rows == _driver_rows(driver)
    assert _findings(built.findings()) == _findings(driver.findings)
    assert [m["manifest_path"] for m in built.manifests] == [m["manifest_path"] for m in driver.manifests]
    return rows, _findings(driver.findings)


def test_python_workers_stop_rereading_sparks_own_archives_before_each_task(any_spark):
    def _worker_archives(batches):
        import sys
        import zipimport

        import pyarrow as pa

        from puffin_explorer.spark.executors import steady_imports

        for _ in batches:
            pass
        steady_imports()
        rows = [(str(i.archive), "invalidate_caches" in vars(i)) for i in list(sys.path_importer_cache.values())
                if isinstance(i, zipimport.zipimporter)]
        yield pa.RecordBatch.from_arrays([pa.array([a for a, _ in rows], pa.string()),
                                          pa.array([k for _, k in rows], pa.bool_()),
                                          pa.array([sys.version_info[1]] * len(rows), pa.int32())],
                                         names=["archive", "kept", "version"])

    rows = any_spark.range(4).repartition(2).mapInArrow(
        _worker_archives, "archive string, kept boolean, version int").collect()
    spark_archives = [r for r in rows if "pyspark" in r["archive"]]
    if rows and rows[0]["version"] >= 12:  # Python 3.12's zip importer reads nothing again: left as it is
        assert not any(r["kept"] for r in rows)
        return
    assert spark_archives and all(r["kept"] for r in spark_archives)
    assert not any(r["kept"] for r in rows if "pyspark" not in r["archive"])


def test_manifests_spread_over_a_few_tasks_per_core_not_a_task_each(any_spark):
    from pyspark.sql import functions as F

    from puffin_explorer.spark.arrow import parallelism
    from puffin_explorer.spark.index import MANIFEST_TASKS_PER_CORE, manifest_tasks

    cap = parallelism(any_spark) * MANIFEST_TASKS_PER_CORE
    for manifests in (1, 3, cap + 37):
        frame = manifest_tasks(any_spark, any_spark.range(manifests), manifests)
        tasks = frame.select(F.spark_partition_id().alias("task")).distinct().count()
        assert tasks == min(manifests, cap)
        assert frame.count() == manifests


def test_the_index_built_on_executors_is_the_drivers(any_spark):
    for meta, entries in ((ORDERS_META, None), (EVENTS_META, None),
                          (FIXTURE_WAREHOUSE / "shop" / "legacy" / "metadata" / "v3.metadata.json", None)):
        for content in (None, "data", "deletes"):
            rows, found = _assert_same_index(any_spark, _table(meta), content)
            assert found == []
    rows, _ = _assert_same_index(any_spark, _table(ORDERS_META))
    assert len(rows) == len(_table(ORDERS_META).index())
    assert {r["kind"] for r in rows} == {"data", "dv"}


def test_the_index_built_on_executors_keeps_what_a_truncated_manifest_holds(any_spark, tmp_path):
    from puffin_explorer import Table

    shutil.copytree(FIXTURE_WAREHOUSE / "shop" / "orders", tmp_path / "shop" / "orders")
    meta = tmp_path / "shop" / "orders" / "metadata" / "v7.metadata.json"
    intact = Table.from_metadata(str(meta), relocate={FIXTURE_ROOT: str(tmp_path)})
    records = intact.source.manifest_records()
    biggest = max(records, key=lambda m: m["manifest_length"])
    path = tmp_path / os.path.relpath(biggest["manifest_path"], FIXTURE_ROOT)
    full = intact.index()
    # the same records written again one per Avro block (as a large manifest has many), then cut in the third
    import fastavro

    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema, entries = reader.writer_schema, list(reader)
        metadata = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, entries, codec="null", sync_interval=1, metadata=metadata)
    with open(path, "rb") as fh:
        third = list(fastavro.block_reader(fh))[2]
    with open(path, "r+b") as fh:
        fh.truncate(third.offset + third.size // 2)
    table = Table.from_metadata(str(meta), relocate={FIXTURE_ROOT: str(tmp_path)})
    rows, found = _assert_same_index(any_spark, table)
    damaged = [f for f in found if f[0] == "iceberg.manifest-damaged"]
    assert len(damaged) == 1 and damaged[0][4] > 0 and f"from byte {damaged[0][4]:,}" in damaged[0][3]
    position = records.index(biggest)
    kept = [r for r in rows if r["manifest"] == position]
    assert len(kept) == 2 and len([r for r in _driver_rows(full) if r["manifest"] == position]) == 4
    assert kept == [r for r in _driver_rows(full) if r["manifest"] == position][:2]


def test_the_spark_functions_agree_wherever_the_index_is_built(any_spark):
    from pyspark.sql import functions as F

    from puffin_explorer import spark as pes

    def per_file(df) -> dict:
        return {r["data_file"]: (r["n"], r["s"]) for r in
                df.groupBy("data_file").agg(F.count("pos").alias("n"), F.sum("pos").alias("s")).collect()}

    for meta in _metas(any_spark):
        table = _table(meta)
        deletes = table.entries(content="deletes")
        some = sorted(deletes[deletes.kind == "dv"].referenced_data_file)[:2]
        for mode in ("driver", "executors"):
            on = {where: per_file(pes.dv_positions(any_spark, table, mode=mode, index_on=where))
                  for where in ("driver", "executors")}
            assert on["executors"] == on["driver"] and len(on["driver"]) == len(table.dvs())
            picked = pes.dv_positions(any_spark, table, data_files=some, mode=mode, index_on="executors")
            assert per_file(picked) == {f: on["driver"][f] for f in some}
        facts = {where: sorted(tuple(r) for r in pes.dv_facts(any_spark, table, index_on=where).collect())
                 for where in ("driver", "executors")}
        assert facts["executors"] == facts["driver"]
        metadata = {where: sorted(tuple(r) for r in pes.dv_metadata(any_spark, table, index_on=where).collect())
                    for where in ("driver", "executors")}
        assert metadata["executors"] == metadata["driver"]
        reports = {where: [tuple(r) for r in pes.deletion_report(any_spark, table, index_on=where).collect()]
                   for where in ("driver", "executors")}
        assert reports["executors"] == reports["driver"]
        checks = {where: sorted(tuple(r) for r in pes.check(any_spark, table, index_on=where).collect())
                  for where in ("driver", "executors")}
        assert checks["executors"] == checks["driver"]
        assert all(r.ok for r in pes.check(any_spark, table, index_on="executors").collect())
        described = {where: pes.plan(any_spark, table, index_on=where) for where in ("driver", "executors")}
        assert [described[w]["index_on"] for w in ("driver", "executors")] == ["driver", "executors"]
        # the decoder each side runs: the driver's own, and the one an executor's worker reported
        assert [described[w]["manifest_decoder"] for w in ("driver", "executors")] == ["duckdb-avro"] * 2
        assert {k: described["executors"][k] for k in ("dvs", "dv_bytes", "positions", "relocated")} == {
            k: described["driver"][k] for k in ("dvs", "dv_bytes", "positions", "relocated")}
        # a data file named where it lies now (relocated) picks its DV too
        moved = table.locate(some[0])
        assert moved != some[0]
        assert per_file(pes.dv_positions(any_spark, table, data_files=[moved], index_on="executors")) == {
            some[0]: on["driver"][some[0]]}
    with pytest.raises(ValueError, match="index_on must be one of"):
        pes.dv_positions(any_spark, _table(ORDERS_META), index_on="nowhere")


def _physical_plan(df) -> str:
    if hasattr(df, "_jdf"):
        return df._jdf.queryExecution().executedPlan().toString()
    return df._explain_string(mode="simple")  # Spark Connect


def _broadcast(plan: str) -> list[str]:
    """The subtrees of a physical plan's text that Spark broadcasts."""
    lines, found = plan.splitlines(), []
    for i, line in enumerate(lines):
        if "BroadcastExchange" in line:
            depth = len(line) - len(line.lstrip(" :+-"))
            below = [x for x in lines[i + 1:]]
            end = next((k for k, x in enumerate(below) if len(x) - len(x.lstrip(" :+-")) <= depth), len(below))
            found.append("\n".join([line] + below[:end]))
    return found


def test_decoded_frames_are_joined_by_shuffle_whatever_spark_estimates(any_spark):
    """Spark sizes a mapInArrow output by the plan it came from (a row per Puffin stretch), so it would broadcast
    the decoded DVs into any join, whatever they hold (at 10,000,000 DVs, past the driver's heap): they are never
    broadcast as they come out of mapInArrow, in our joins or a user's.  A side that reaches its join through a
    shuffle (an aggregate) may be planned as broadcast: adaptive execution measures it at the shuffle and plans
    that join again at its real size."""
    from puffin_explorer import spark as pes

    table = _table(ORDERS_META)
    check = pes.check(any_spark, table, compare="record_count", mode="executors", index_on="executors")
    plan = _physical_plan(check)  # the decoded DVs counted per data file by a window: no join to broadcast into
    assert "Window" in plan and "Join" not in plan, plan
    frames = {"deletion_report": pes.deletion_report(any_spark, table, mode="executors", index_on="executors"),
              "a user's join": pes.dv_positions(any_spark, table, mode="executors", index_on="executors").join(
                  pes.dv_facts(any_spark, table, mode="driver").select("data_file", "cardinality"), "data_file")}
    for name, frame in frames.items():
        plan = _physical_plan(frame)
        assert "SortMergeJoin" in plan, (name, plan)
        for side in _broadcast(plan):  # a small frame may be broadcast, or a side AQE measures at a shuffle first
            lines = side.splitlines()
            arrow = next((i for i, x in enumerate(lines) if "InArrow" in x), len(lines))
            assert any("Exchange" in x for x in lines[:arrow]) or arrow == len(lines), (name, plan)
    assert sum(r.ok for r in check.collect()) == len(table.dvs())


def test_the_index_goes_to_the_executors_from_many_manifests(monkeypatch):
    from puffin_explorer.spark import planner

    table = _table(ORDERS_META)
    deletes = [m for m in table.source.manifest_records() if m.get("content") == 1]
    assert planner.plan_table(table).index_where("deletes") == "driver"
    monkeypatch.setattr(planner, "EXECUTORS_INDEX_FROM_MANIFESTS", len(deletes))
    assert planner.plan_table(table).index_where("deletes") == "executors"
    assert planner.plan_table(table, index_on="driver").index_where("deletes") == "driver"
    monkeypatch.setattr(planner, "EXECUTORS_INDEX_FROM_MANIFESTS", len(deletes) + 1)
    assert planner.plan_table(table).index_where("deletes") == "driver"
    assert planner.plan_table(table, index_on="executors").index_where("deletes") == "executors"


def test_the_doctor_on_spark_is_the_drivers_doctor(any_spark):
    """pes.health on every session kind (Spark 3.5 with Iceberg, Spark 4 classic and Connect without): the
    same model as t.health() on the warehouse where it lies, its storage listing included."""
    from puffin_explorer import spark as pes

    for meta in _metas(any_spark):
        t = _table(meta)
        expected = t.health(now="2026-11-28T00:00:00Z")
        got = pes.health(any_spark, _table(meta), now="2026-11-28T00:00:00Z", index_on="executors")
        assert got.to_dict() == expected.to_dict()
        assert got.metrics["live_rows"] == LIVE[meta.parent.parent.name]


def _spark_answers(spark, frames: dict, measures: dict) -> dict[str, list[tuple]]:
    """Every measure's answer on Spark as :func:`_measure_relations.rows` gives it, from one Spark job: the
    answers as JSON rows (nulls kept) of one union, read back by each answer's schema (a job per measure
    spent most of this test's minutes in starting jobs)."""
    import datetime
    import json
    from decimal import Decimal
    from functools import reduce

    from pyspark.sql import functions as F, types as T

    from puffin_explorer.spark.measures import SparkMeasures

    def value(v, kind):
        if v is None:
            return None
        if isinstance(kind, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            return int(v)
        if isinstance(kind, (T.DoubleType, T.FloatType)):
            return float(v)
        if isinstance(kind, T.DecimalType):
            return Decimal(v)
        if isinstance(kind, (T.StringType, T.BooleanType)):
            return v
        if isinstance(kind, T.DateType):
            return datetime.date.fromisoformat(v)
        raise AssertionError(f"a measure answers a {kind}: read it back here")

    run = SparkMeasures(spark, frames)
    try:
        schemas, parts = {}, []
        for name, measure in sorted(measures.items()):
            frame = run.frame(measure)
            schemas[name] = frame.schema
            parts.append(frame.select(F.lit(name).alias("m"), F.to_json(F.struct(*frame.columns),
                                                                         {"ignoreNullFields": "false"}).alias("j")))
        got = reduce(lambda a, b: a.unionAll(b), parts).collect()
    finally:
        run.close()
    out: dict[str, list[tuple]] = {name: [] for name in measures}
    for m, j in got:
        d = json.loads(j, parse_float=Decimal)
        out[m].append(tuple(value(d[f.name], f.dataType) for f in schemas[m].fields))
    return {name: sorted(answer) for name, answer in out.items()}


def _storage_relations(t) -> dict:
    """The storage checks' relations of a fixture table as the driver doctor makes them: every snapshot's live
    files, manifests and manifest list, the older snapshots past retention, the listing of its folder (sizes and times
    read), its metadata files."""
    import pyarrow as pa

    from puffin_explorer.health import listing_arrow
    from puffin_explorer.iceberg import measures as M
    from puffin_explorer.iceberg.index_build import build_index
    from puffin_explorer.iceberg.paths import normalize

    source = t.source
    sets = []
    for snap in source.metadata.snapshots:
        rows = build_index(source, snap.snapshot_id).rows(None, ["file_path", "file_size_in_bytes"]).to_pylist()
        sets += [(snap.snapshot_id, normalize(source.locate(r["file_path"])), r["file_size_in_bytes"]) for r in rows]
        sets += [(snap.snapshot_id, normalize(source.locate(m["manifest_path"])), m["manifest_length"])
                 for m in source.manifest_records(snap.snapshot_id)]
        sets.append((snap.snapshot_id, normalize(source.locate(snap.manifest_list)), 0))
    sids = [s.snapshot_id for s in source.metadata.snapshots]
    tracked = [normalize(source.locate(e["metadata-file"])) for e in source.metadata.raw.get("metadata-log") or []]
    current = normalize(source.metadata_location)
    return {"snapshot_files": pa.table({c: [r[i] for r in sets] for i, c in enumerate(("sid", "location", "size"))},
                                       schema=M.arrow_schema("snapshot_files")),
            "retention": M.retention(sids[-1:], sids[:-1]),
            "listing": listing_arrow(source.io, source.locate(source.metadata.location)),
            "referenced": M.locations([*tracked, current]), "metadata_log": M.metadata_log(tracked, current),
            "orphan_params": M.orphan_params(1_790_000_000_000)}


def test_every_measure_answers_the_same_on_spark(any_spark):
    """Each measure of ``iceberg/measures.py`` is one SQL text: DuckDB runs it here, Spark SQL on the session
    (3.5 with Iceberg; 4.0 classic and Connect), over the same relations — the v2 table written by hand
    (position and equality deletes across partitions, a DV superseding position deletes, with and without
    partitions) and the relations the doctors build from another writer's tables (DuckDB's v3 table, a Delta
    table with DVs) — and every answer is the same.  The Spark-written warehouse's tables are measured on Spark
    by the doctor-equality tests (every measure, through ``pes.health``, against the driver's doctor)."""
    from _measure_relations import V2_EVERYWHERE_EQUALITY, V2_EXPECTED, rows, v2_relations
    from puffin_explorer.iceberg import measures as M
    from puffin_explorer.iceberg.deletes import position_delete_pairs
    from puffin_explorer import DeltaTable
    from puffin_explorer.delta.files import measure_relations as delta_relations
    from puffin_explorer.health import listing_arrow, sum_relations
    from puffin_explorer.iceberg.relations import index_relations
    from puffin_explorer.iceberg.index_build import build_index
    from puffin_explorer.spark.arrow import to_spark

    def on_spark(relations):
        return {name: to_spark(any_spark, relations[name], M.RELATIONS[name]) for name in M.RELATIONS}

    cases = [("v2 by hand", v2_relations()), ("v2, unpartitioned equality deletes", v2_relations(everywhere=True))]
    from puffin_explorer import Table

    # the Spark-written warehouse's tables: test_the_doctor_on_spark_is_the_drivers_doctor (every session kind),
    # tests/test_health_spark_job.py (Spark 3.5, legacy's position deletes too)
    tables = [Table.from_folder(str(FIXTURE_WAREHOUSE.parent / "engines" / "duckdb" / "dv_single"))]
    sums = sum_relations(4_096, 3_072)  # the fixtures' files are KiBs: some small, some not
    for t in tables:
        relations = index_relations(t.source, build_index(t.source, metrics=True))  # what the driver doctor runs
        relations["pos_counts"] = position_delete_pairs(t.source, build_index(t.source))
        cases.append((t.name, {**relations, **sums, **_storage_relations(t)}))
    for name in ("delta-spark-table-with-dv-large",):  # Delta: a DV is its add's
        folder = FIXTURE_WAREHOUSE.parent / "engines" / "delta" / name
        delta = DeltaTable(str(folder))
        # no snapshot file sets (a Delta log has none): its listing is every file unreferenced
        storage = {n: M.empty(n) for n in ("snapshot_files", "retention", "referenced", "metadata_log")}
        cases.append((name, {**delta_relations(delta._snap), **sums, **storage,
                             "listing": listing_arrow(delta._snap.io, str(folder)),
                             "orphan_params": M.orphan_params(1_790_000_000_000)}))
    answered = {}
    for label, relations in cases:
        there = _spark_answers(any_spark, on_spark(relations), M.MEASURES)
        for name, measure in sorted(M.MEASURES.items()):
            here = rows(M.run_local(measure, **relations))
            assert there[name] == here, (label, name)
            answered[(label, name)] = here
    assert [answered[("v2 by hand", n)] for n in sorted(V2_EXPECTED)] == [V2_EXPECTED[n] for n in sorted(V2_EXPECTED)]
    assert answered[("v2, unpartitioned equality deletes", "equality_deletes_applied")] == V2_EVERYWHERE_EQUALITY
    assert len(cases) == 2 + len(tables) + 1 == 4  # the hand-written ones, DuckDB's v3 table, a Delta one
