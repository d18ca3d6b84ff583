"""The browser with a real SparkSession: a selected data file shows the rows its DV deletes."""

from __future__ import annotations

import pytest

from puffin_explorer.iceberg import Warehouse

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark_warehouse(tmp_path_factory):
    pytest.importorskip("pyspark")
    from _spark import skip_unless_iceberg_can_run

    from puffin_explorer.spark import session

    skip_unless_iceberg_can_run()

    root = tmp_path_factory.mktemp("spark-wh") / "wh"
    spark = session(warehouse=str(root), catalog="pewh")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS pewh.db")
    spark.sql("""CREATE TABLE pewh.db.small (id BIGINT, name STRING) USING iceberg
                 TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')""")
    spark.sql("INSERT INTO pewh.db.small SELECT /*+ COALESCE(1) */ id, concat('n', CAST(id AS STRING)) FROM range(0, 50)")
    spark.sql("DELETE FROM pewh.db.small WHERE id IN (3, 4, 5, 41)")
    yield spark, root


def test_data_file_detail_shows_deleted_rows_from_spark(spark_warehouse):
    spark, root = spark_warehouse
    wh = Warehouse(str(root))
    t = wh.table("db.small")
    assert t.findings == []
    dv = t.dvs()
    assert dv.record_count.tolist() == [4]
    b = wh.browse(spark=spark).select(table="db.small", kind="data")
    assert len(b.file.options) == 1
    b.file.value = b.file.options[0][1]
    html = b.detail.value
    assert "<p>50 rows · <b>4 deleted</b> (8.0%) · 46 live</p>" in html
    assert "deleted rows (Spark)" in html
    table_html = html[html.index("deleted rows (Spark)"):]
    for name in ("n3", "n4", "n5", "n41"):
        assert f"<td>{name}</td>" in table_html
    assert "<td>n6</td>" not in table_html
    # the same by catalog name
    b2 = wh.browse(spark=spark, spark_table=lambda name: f"pewh.{name}").select(table="db.small", kind="data")
    b2.file.value = b2.file.options[0][1]
    assert "<td>n41</td>" in b2.detail.value


def test_read_dvs_keeps_each_vector_s_positions_and_reads_its_bytes_again_only_when_asked(spark_warehouse,
                                                                                          tmp_path):
    """A table's read of many small DVs keeps their decoded positions, not their bytes (a million DVs' bytes
    are a gigabyte): the bytes come back from the Puffin file, one read per vector, only for what needs them (its
    bytes, regions, findings), equal to a single read's; ``nbytes`` and the positions need no read.  A Puffin file
    cut short since is a clear error at the vector's offset."""
    import pickle
    import shutil

    from puffin_explorer import Table
    from puffin_explorer.errors import SourceError

    _, root = spark_warehouse
    shutil.copytree(root / "db" / "small", tmp_path / "small")
    t = Table.from_folder(str(tmp_path / "small"))
    entry = t.dvs().iloc[0].to_dict()
    [dv] = t.read_dvs()
    assert dv._bytes is None  # decoded with the other small vectors, its bytes let go
    t.io.reset_counters()
    assert dv.positions().tolist() == [3, 4, 5, 41] and dv.nbytes == entry["content_size_in_bytes"]
    assert t.io.read_count == 0
    single = Table.from_folder(str(tmp_path / "small")).read_dv(entry)
    assert dv.to_bytes() == single.to_bytes() and len(dv.to_bytes()) == entry["content_size_in_bytes"]
    assert t.io.read_count == 1
    assert dv.region_tree() == single.region_tree() and list(dv.findings) == list(single.findings) == []
    assert t.io.read_count == 1
    [let_go] = t.read_dvs()
    copied = pickle.loads(pickle.dumps(let_go))  # a pickled vector carries its bytes, read again, not the reader
    assert copied._reread is None and copied.to_bytes() == single.to_bytes()
    assert copied.positions().tolist() == [3, 4, 5, 41]
    [again] = Table.from_folder(str(tmp_path / "small")).read_dvs()
    puffin = tmp_path / "small" / "data" / entry["file_path"].rsplit("/data/", 1)[1]
    offset = int(entry["content_offset"])
    puffin.write_bytes(puffin.read_bytes()[:offset + 10])
    with pytest.raises(SourceError) as err:
        again.to_bytes()
    assert err.value.offset == offset and f"{offset:,}" in str(err.value)


@pytest.fixture(scope="module")
def equality_table(spark_warehouse):
    """A v2 table with an equality-delete file written by Iceberg Java's own writer and committed as a row delta."""
    spark, root = spark_warehouse
    spark.sql("""CREATE TABLE pewh.db.eq (id BIGINT, name STRING) USING iceberg
                 TBLPROPERTIES ('format-version'='2')""")
    spark.sql("INSERT INTO pewh.db.eq SELECT /*+ COALESCE(1) */ id, concat('n', CAST(id AS STRING)) FROM range(0, 10)")
    jvm = spark._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, "pewh.db.eq")
    eq_schema = table.schema().select(["name"])  # py4j passes the list as a java.util.List
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
    ids[0] = 2
    factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(table.schema(), table.spec(), ids, eq_schema, None)
    out = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
        table.io().newOutputFile(table.location() + "/data/eq-deletes-00001.parquet"))
    writer = factory.newEqDeleteWriter(out, jvm.org.apache.iceberg.FileFormat.PARQUET, None)
    for name in ("n3", "n7"):
        record = jvm.org.apache.iceberg.data.GenericRecord.create(eq_schema)
        record.setField("name", name)
        writer.write(record)
    writer.close()
    table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()
    assert spark.sql("SELECT count(*) AS n FROM pewh.db.eq").collect()[0].n == 8
    return root


def test_equality_delete_file_listed_and_viewable(equality_table):
    t = Warehouse(str(equality_table)).table("db.eq")
    assert t.metadata.format_version == 2
    deletes = t.delete_files()
    assert deletes.kind.tolist() == ["equality-deletes"]
    assert deletes.content.tolist() == [2]
    assert [list(x) for x in deletes.equality_ids] == [[2]]
    assert deletes.record_count.tolist() == [2]
    contents = t.delete_file_contents(deletes.file_path[0])
    assert contents.to_dict("list") == {"name": ["n3", "n7"]}
    per_file = t.deleted_rows_per_file()
    assert per_file[["record_count", "deleted_rows", "equality_delete_files"]].values.tolist() == [[10, 0, 1]]
    assert t.check() == []
    b = Warehouse(str(equality_table)).browse().select(table="db.eq", kind="equality-deletes")
    b.file.value = b.file.options[0][1]
    assert "<p>2 rows · equality field ids [2]</p>" in b.detail.value
    assert "<td>n3</td>" in b.detail.value and "<td>n7</td>" in b.detail.value
