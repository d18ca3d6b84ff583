"""The browser with a real SparkSession: a selected data file shows the rows its DV deletes."""

from __future__ import annotations

import pytest

from puffin_explorer.iceberg import Warehouse

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark_warehouse(tmp_path_factory):
    pytest.importorskip("pyspark")
    from puffin_explorer.spark import session

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
