"""Deletes left dangling by a rewrite: every answer counts the live rows Spark reads.

Iceberg's ``rewrite_data_files`` on a v3 table replaces data files that have DVs and leaves the DVs
in the snapshot (unless ``remove-dangling-deletes``); the snapshot summary's
``total-position-deletes`` still counts their positions. The soak (``benchmarks/soak.py``) found the
table card, the warehouse card and ``timeline()`` showing that summary's live rows; each now counts
by the one definition in ``iceberg/deletes.py`` (a delete counts only for a live data file).
"""

from __future__ import annotations

import pytest

from puffin_explorer import Warehouse

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def rewritten(spark, tmp_path_factory):
    """A Spark-written v3 table: 2 data files, a DELETE (DVs on both), then one file rewritten."""
    from puffin_explorer import spark as pes

    folder = tmp_path_factory.mktemp("dangling") / "warehouse"
    pes.add_catalog(spark, "dangle", str(folder))
    spark.sql("CREATE TABLE dangle.db.t (id bigint, grp int) USING iceberg PARTITIONED BY (grp) "
              "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')")
    spark.range(0, 10_000).selectExpr("id", "cast(id % 2 as int) AS grp").writeTo("dangle.db.t").append()
    spark.sql("DELETE FROM dangle.db.t WHERE id % 10 = 0 OR id % 10 = 5")
    spark.sql("CALL dangle.system.rewrite_data_files(table => 'db.t', where => 'grp = 0', "
              "options => map('rewrite-all', 'true'))")
    live = spark.table("dangle.db.t").count()
    snapshots = spark.sql("SELECT operation, summary FROM dangle.db.t.snapshots ORDER BY committed_at").collect()
    return folder, live, [dict(r.summary, operation=r.operation) for r in snapshots]


def test_the_summary_counts_the_dangling_dvs(rewritten):
    """The premise: after the rewrite, the summary's live rows are not what Spark reads."""
    _folder, live, summaries = rewritten
    last = summaries[-1]
    assert last["operation"] == "replace"
    assert live == 8_000
    assert int(last["total-records"]) - int(last["total-position-deletes"]) == 7_000  # grp 0's 1,000 counted again


def test_every_answer_counts_the_rows_spark_reads(rewritten):
    folder, live, _ = rewritten
    wh = Warehouse(str(folder))
    row = wh.summary().set_index("table").loc["db.t"]
    assert (int(row.records), int(row.deleted_rows), int(row.live_rows)) == (9_000, 1_000, live)
    t = wh.table("db.t")
    card = t.summary()
    assert (card["records"], card["deleted_rows"], card["live_rows"]) == (9_000, 1_000, live)
    timeline = t.timeline()
    assert timeline.live_rows.tolist() == [10_000, 8_000, 8_000]
    assert timeline.deleted_rows.tolist() == [0, 2_000, 1_000]
    debt = t.delete_debt()
    assert (debt.records, debt.deleted_rows) == (9_000, 1_000)
    h = t.health(list_files=False)
    assert (h.metrics["records"], h.metrics["deleted_rows"], h.metrics["live_rows"]) == (9_000, 1_000, live)
    assert h.finding("health.dangling-deletes").evidence["dvs"] == 1
    assert f"{live:,}" in t.to_text()


def test_the_browser_labels_each_snapshot_with_the_same_count(rewritten):
    pytest.importorskip("ipywidgets")
    folder, _live, _ = rewritten
    b = Warehouse(str(folder)).browse()
    newest, middle, first = (label for label, _ in b.snapshot.options)
    assert " · replace · " in newest and newest.split(" · ")[-2] == "1,000 deleted rows in total"
    assert " · delete · " in middle and middle.split(" · ")[-2] == "2,000 deleted rows in total"
    assert "deleted rows in total" not in first
